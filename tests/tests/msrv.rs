//! The declared minimum supported Rust version is true of the dependencies:
//! no package in `Cargo.lock` (for this platform) declares a `rust-version` above the
//! workspace's, every member declares the workspace's, and the README and
//! the getting-started guide state the same version.
//!
//! What this cannot see is the code's own use of newer language or library
//! features: `tests/extended.sh` compiles every target with a 1.88 toolchain for that.

use std::process::Command;

use serde_json::Value;

const README: &str = include_str!("../../README.md");
const GUIDE: &str = include_str!("../../docs/getting-started.md");

/// `1.88`, `1.88.0` -> (1, 88, 0).
fn version(text: &str) -> (u64, u64, u64) {
    let mut parts = text.split('.').map(|p| p.parse::<u64>().unwrap_or(0));
    (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    )
}

/// This machine's target triple (`rustc -vV`): the dependencies of other
/// platforms (wasm, Windows) are neither downloaded here nor built.
fn host() -> String {
    let output = Command::new("rustc")
        .arg("-vV")
        .output()
        .expect("rustc runs");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .to_owned()
}

fn metadata() -> Value {
    let output = Command::new(env!("CARGO"))
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        // Online: a fresh machine may not have every package yet.
        .args(["metadata", "--format-version", "1", "--locked"])
        .args(["--filter-platform", &host()])
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("cargo metadata is JSON")
}

#[test]
fn no_dependency_needs_a_newer_rust_than_the_workspace_declares() {
    let metadata = metadata();
    let packages = metadata["packages"].as_array().expect("packages");
    let members: Vec<&str> = metadata["workspace_members"]
        .as_array()
        .expect("members")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let resolved: Vec<&str> = metadata["resolve"]["nodes"]
        .as_array()
        .expect("a resolve graph")
        .iter()
        .filter_map(|n| n["id"].as_str())
        .collect();
    let rust_version = |p: &Value| p["rust_version"].as_str().map(version);
    let declared: Vec<_> = packages
        .iter()
        .filter(|p| members.contains(&p["id"].as_str().unwrap_or_default()))
        .map(|p| (p["name"].as_str().unwrap_or("?"), rust_version(p)))
        .collect();
    assert_eq!(declared.len(), members.len());
    let msrv = declared[0]
        .1
        .expect("the workspace declares a rust-version");
    for (name, declared) in &declared {
        assert_eq!(
            *declared,
            Some(msrv),
            "{name} does not declare the workspace's rust-version"
        );
    }
    let too_new: Vec<String> = packages
        .iter()
        .filter(|p| resolved.contains(&p["id"].as_str().unwrap_or_default()))
        .filter_map(|p| {
            let needs = rust_version(p)?;
            (needs > msrv).then(|| {
                format!(
                    "{} {} needs {}",
                    p["name"].as_str().unwrap_or("?"),
                    p["version"].as_str().unwrap_or("?"),
                    p["rust_version"].as_str().unwrap_or("?")
                )
            })
        })
        .collect();
    assert!(
        too_new.is_empty(),
        "rust-version {msrv:?} is below what these need: {too_new:?} (raise it, or `cargo update -p NAME --precise OLDER`)"
    );

    // The docs say the same.
    let stated = format!("{}.{}", msrv.0, msrv.1);
    assert!(
        README.contains(&format!("Rust {stated} or later")),
        "the README does not state Rust {stated}"
    );
    assert!(
        GUIDE.contains(&format!("Rust ({stated} or later)")),
        "docs/getting-started.md does not state Rust {stated}"
    );
}
