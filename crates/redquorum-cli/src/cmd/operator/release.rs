//! `redquorum release --force`: an operator's way out when a holder is stuck
//! or gone. Removes every hold a first read finds on a resource, from every
//! node (a hold taken after that read is left alone), and raises its
//! fence counter (`Redlock::force_release`), so the ousted holder's token is
//! below every later one.

use std::process::ExitCode;

use redquorum::Error;

use crate::arg_values;
use crate::cmd::common;
use crate::exit;
use crate::nodes_arg::NodesArg;

/// Options of `redquorum release`.
#[derive(Debug, clap::Args)]
pub(crate) struct ReleaseArgs {
    /// Release whoever holds RESOURCE (one of --force and --ask is required).
    #[arg(long)]
    force: bool,
    /// Ask the holder to let go (`exec --on-ask` forwards it to its command)
    /// instead: exit 0 once RESOURCE is free, 75 if still held after --wait.
    #[arg(long, conflicts_with = "force")]
    ask: bool,
    /// With --ask: how long to wait for the holder to let go.
    #[arg(long, default_value = "0s", value_parser = arg_values::duration, requires = "ask")]
    wait: std::time::Duration,
    #[command(flatten)]
    nodes: common::AdminArgs,
    /// The resource to release.
    #[arg(value_parser = arg_values::non_empty)]
    resource: String,
}

pub(crate) async fn run(nodes: &NodesArg, args: ReleaseArgs) -> ExitCode {
    if args.ask {
        return ask(nodes, args).await;
    }
    // Only the holder may release; an operator overriding that says so.
    if !args.force {
        stderr_line!(
            "redquorum release: refusing without --force or --ask. `redquorum release --ask {resource:?}` \
             asks its holder to let go; `redquorum release --force {resource:?}` \
             would remove every hold on {resource:?} from every node, whoever holds it (a running \
             holder loses it: `redquorum exec` stops its command at its next extension), and \
             raise its fence counter so that the ousted holder's fencing token is refused",
            resource = args.resource
        );
        return exit::USAGE.into();
    }
    let redlock = match common::admin_redlock(nodes, "release", &args.nodes, None) {
        Ok(redlock) => redlock,
        Err(code) => return code,
    };
    let code = match redlock.force_release(&args.resource).await {
        Ok(fence) => {
            stderr_line!(
                "redquorum release: force-released {:?}; its fence counter is now {fence}, \
                 above every token issued before",
                args.resource
            );
            // stdout is the token alone, for scripts; the sentence is for people.
            if let Err(code) = common::print_line("release", &fence.to_string()) {
                return code;
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            stderr_line!(
                "redquorum release: {:?} may still be held: {error}",
                args.resource
            );
            failure(&error)
        }
    };
    redlock.shutdown().await;
    code
}

/// `redquorum release --ask`: asks the holders to let go, waits `--wait`.
async fn ask(nodes: &NodesArg, args: ReleaseArgs) -> ExitCode {
    let redlock = match common::admin_redlock(nodes, "release", &args.nodes, None) {
        Ok(redlock) => redlock,
        Err(code) => return code,
    };
    let resource = &args.resource;
    let code = match redlock.ask_release(resource, args.wait).await {
        Ok(true) => {
            stderr_line!("redquorum release: {resource:?} is free");
            ExitCode::SUCCESS
        }
        Ok(false) => {
            stderr_line!(
                "redquorum release: asked; {resource:?} is still held after {} \
                 (`release --force` takes it away)",
                humantime::format_duration(args.wait)
            );
            exit::TEMPFAIL.into()
        }
        Err(error) => {
            stderr_line!("redquorum release: cannot ask for {resource:?}: {error}");
            failure(&error)
        }
    };
    redlock.shutdown().await;
    code
}

/// The exit status of a failed force-release or ask (docs/cli.md).
fn failure(error: &Error) -> ExitCode {
    ExitCode::from(match error {
        Error::Unavailable { .. } => exit::UNAVAILABLE,
        Error::EmptyResource => exit::USAGE,
        _ => exit::SOFTWARE,
    })
}
