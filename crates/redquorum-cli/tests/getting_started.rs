//! `docs/getting-started.md` as a newcomer follows it: `redquorum nodes up
//! --durable` on a fresh set of nodes, the guide's `Cargo.toml` dependencies
//! resolved from a project next to the clone, and the guide's program run
//! against the nodes it printed. The guide's program is the library's
//! `getting_started` example, byte for byte (checked here), so CI builds it.
//!
//! Not run here: `git clone` and `tests/ensure-redis.sh` (CI itself is a
//! fresh clone with redis-server installed by the same script). `cargo
//! install` is run by `tests/run.sh`, which points `REDQUORUM_GUIDE_BIN` at
//! the installed command so these steps run it; without that variable they
//! run the binary cargo built for this test.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{BIN, NodesDownOnDrop, free_base_port};

/// The `redquorum` the guide's steps run: the one `cargo install` put in
/// place when `REDQUORUM_GUIDE_BIN` names it (tests/run.sh), else this
/// build's.
fn redquorum() -> Command {
    match std::env::var_os("REDQUORUM_GUIDE_BIN") {
        Some(installed) => Command::new(installed),
        None => Command::new(BIN),
    }
}

const GUIDE: &str = include_str!("../../../docs/getting-started.md");
const EXAMPLE: &str = include_str!("../../redquorum/examples/getting_started.rs");

/// The body of the guide's fenced blocks of `language`, in order.
fn blocks<'a>(language: &str) -> Vec<&'a str> {
    let fence = format!("```{language}\n");
    let mut found = Vec::new();
    let mut rest = GUIDE;
    while let Some(start) = rest.find(&fence) {
        let body = &rest[start + fence.len()..];
        let end = body.find("```").expect("a closed block");
        found.push(&body[..end]);
        rest = &body[end..][3..];
    }
    found
}

/// The workspace root (the clone of step 1).
fn clone_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/redquorum-cli is two levels down")
        .to_path_buf()
}

/// The library's example, built fresh (also under `cargo test -p redquorum-cli`).
fn built_example(name: &str) -> PathBuf {
    redquorum_harness::example_binary("redquorum", name).unwrap_or_else(|e| panic!("{e}"))
}

/// `redquorum nodes up ...` as the guide writes it, on free ports and a
/// state dir of the test's own; the `REDQUORUM_NODES` value it exports.
fn nodes_up(guide_args: &[&str], state: &Path) -> String {
    let base = free_base_port(5);
    let up = redquorum()
        .args(guide_args)
        .args(["--base-port", &base.to_string()])
        .arg("--dir")
        .arg(state)
        .output()
        .expect("redquorum runs");
    assert!(up.status.success(), "{up:?}");
    let stdout = String::from_utf8(up.stdout).expect("UTF-8");
    stdout
        .trim()
        .strip_prefix("export REDQUORUM_NODES=")
        .unwrap_or_else(|| panic!("no export line: {stdout:?}"))
        .to_owned()
}

fn run_example(program: &Path, nodes: &str) -> Output {
    Command::new(program)
        .env("REDQUORUM_NODES", nodes)
        .output()
        .expect("the example runs")
}

/// `cargo tree` in the guide's project, seeded with the clone's
/// `Cargo.lock`, resolves its dependencies, and they are all in that lock
/// file: the project needs no package, and no version, that the clone
/// lacks. That is checked by name and version, not by an offline
/// resolution, which passes or fails with whatever this machine's cargo
/// cache happens to hold (a fresh machine's is empty).
fn resolves_from_the_clones_packages(project: &Path) {
    let clone_lock = std::fs::read_to_string(clone_dir().join("Cargo.lock")).unwrap();
    std::fs::write(project.join("Cargo.lock"), &clone_lock).unwrap();
    // `cargo tree` loads the packages of the host platform only, as a build does.
    let tree = Command::new(env!("CARGO"))
        .current_dir(project)
        .args(["tree", "--prefix", "none"])
        .output()
        .expect("cargo runs");
    let stdout = String::from_utf8_lossy(&tree.stdout);
    assert!(
        tree.status.success(),
        "the guide's [dependencies] do not resolve: {}",
        String::from_utf8_lossy(&tree.stderr)
    );
    assert!(stdout.contains("redquorum v"), "{stdout}");
    let known = locked_packages(&clone_lock);
    let project_lock = std::fs::read_to_string(project.join("Cargo.lock")).unwrap();
    let missing: Vec<_> = locked_packages(&project_lock)
        .into_iter()
        .filter(|p| p.0 != "myapp" && !known.contains(p))
        .collect();
    assert!(
        missing.is_empty(),
        "the guide's project needs packages a fresh clone's build never downloads: {missing:?}"
    );
}

/// The `(name, version)` of every package in a `Cargo.lock`.
fn locked_packages(lock: &str) -> Vec<(String, String)> {
    lock.split("[[package]]")
        .skip(1)
        .filter_map(|entry| {
            let field = |key: &str| {
                entry.lines().find_map(|line| {
                    let value = line.strip_prefix(key)?.trim().strip_prefix('=')?;
                    Some(value.trim().trim_matches('"').to_owned())
                })
            };
            Some((field("name")?, field("version")?))
        })
        .collect()
}

#[test]
fn the_guides_program_is_the_getting_started_example() {
    let rust = blocks("rust,no_run");
    assert_eq!(
        rust.first().copied(),
        Some(EXAMPLE),
        "the guide's step 3 differs from the example"
    );
}

#[test]
fn the_guides_steps_lock_on_fresh_durable_nodes() {
    // Step 1: the `nodes up` line of the guide's first shell block.
    let steps = blocks("sh")[0];
    let up_line = steps
        .lines()
        .find_map(|l| l.trim().strip_prefix("eval \"$(redquorum "))
        .and_then(|l| l.split(")\"").next())
        .expect("an eval \"$(redquorum nodes up ...)\" step");
    let guide_args: Vec<&str> = up_line.split_whitespace().collect();
    assert_eq!(guide_args[..2], ["nodes", "up"], "{up_line}");
    assert!(guide_args.contains(&"--durable"), "{up_line}");
    let program = built_example("getting_started");
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("nodes");
    let _down = NodesDownOnDrop(state.clone());
    let nodes = nodes_up(&guide_args, &state);

    // Step 2: the guide's dependencies resolve from a project next to the clone.
    let project = dir.path().join("myapp");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::os::unix::fs::symlink(clone_dir(), dir.path().join("redquorum")).unwrap();
    let manifest = format!(
        "[package]\nname = \"myapp\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[dependencies]\n{}",
        blocks("toml")[0]
    );
    std::fs::write(project.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(project.join("src/main.rs"), EXAMPLE).unwrap();
    resolves_from_the_clones_packages(&project);

    // Step 3: the program, with the guide's max_ttl, locks at once.
    let run = run_example(&program, &nodes);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        stdout.starts_with("locked orders:user-42 (quorum 3 of 5)\n"),
        "{stdout}"
    );
    assert!(stdout.ends_with("released\n"), "{stdout}");

    // Step 7.
    let down = redquorum()
        .args(["nodes", "down", "--dir"])
        .arg(&state)
        .output()
        .unwrap();
    assert!(down.status.success(), "{down:?}");
}

#[test]
fn without_durable_the_same_program_waits_out_and_fails_as_the_guide_says() {
    // "Without --durable, freshly started nodes ... would wait its 10 s and
    // fail with WaitTimeout": the delayed-restart rule, as documented.
    // Built before the nodes start: their 60 s of refused votes (max_ttl)
    // must outlast the program's 10 s wait, however long a build takes.
    let program = built_example("getting_started");
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("nodes");
    let _down = NodesDownOnDrop(state.clone());
    let nodes = nodes_up(&["nodes", "up"], &state);
    let run = run_example(&program, &nodes);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success(), "non-durable fresh nodes voted");
    // The program prints the error's Display text, as the guide shows it.
    assert!(
        stderr.starts_with("error: gave up on \"orders:user-42\" after waiting "),
        "{stderr}"
    );
    assert!(
        stderr.contains("vote refused: not durable and up for"),
        "not refused as recent restarts: {stderr}"
    );
    assert!(!stderr.contains("WaitTimeout {"), "a Debug dump: {stderr}");
}

#[test]
fn the_guides_program_in_another_shell_says_what_is_missing() {
    let run = Command::new(built_example("getting_started"))
        .env_remove("REDQUORUM_NODES")
        .output()
        .expect("the example runs");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success(), "{stderr}");
    assert!(
        stderr.contains("REDQUORUM_NODES is not set"),
        "not named: {stderr}"
    );
}
