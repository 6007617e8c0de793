//! The torture's options as a plan: what the default run turns on.

use super::*;

fn plan_of(flags: &[&str]) -> Result<Plan, String> {
    #[derive(clap::Parser)]
    struct Command {
        #[command(flatten)]
        torture: TortureArgs,
    }
    let mut args = vec!["torture", "--duration", "1s"];
    args.extend_from_slice(flags);
    let parsed = <Command as clap::Parser>::try_parse_from(args).map_err(|e| e.to_string())?;
    plan(&NodesArg::default(), &parsed.torture)
}

#[test]
fn the_default_run_hands_holds_over_unless_told_not_to() {
    let chance = |flags: &[&str]| plan_of(flags).map(|plan| plan.hand_over_chance);
    assert_eq!(chance(&[]), Ok(0.3));
    assert_eq!(chance(&["--hand-overs"]), Ok(0.3));
    assert_eq!(chance(&["--no-hand-overs"]), Ok(0.0));
    // The last of the two wins, as with any pair of flags.
    assert_eq!(chance(&["--no-hand-overs", "--hand-overs"]), Ok(0.3));
    assert_eq!(chance(&["--hand-overs", "--no-hand-overs"]), Ok(0.0));
    // One kind: no plain holds beside the others to hand over.
    assert_eq!(chance(&["--kind", "plain"]), Ok(0.0));
    assert!(chance(&["--kind", "plain", "--hand-overs"]).is_err());
}
