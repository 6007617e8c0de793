//! The binary of a workspace example, built fresh for a test that runs it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::HarnessError;

/// Builds `package`'s example `name` with the profile of the running test
/// and returns the path of its binary.
///
/// `cargo test --all-targets` builds examples only as test harnesses, so the
/// plain binary a test wants to run may be missing or stale; this runs
/// `cargo build --example` (a no-op when it is fresh). Call it from an
/// integration test: the path is found from the test binary's
/// `target/<profile>/deps` directory.
///
/// ```no_run
/// let bin = redquorum_harness::example_binary("redquorum", "cron_guard")?;
/// let status = std::process::Command::new(bin).status()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn example_binary(package: &str, name: &str) -> Result<PathBuf, HarnessError> {
    let failed = |reason: String| HarnessError::Example {
        package: package.to_owned(),
        example: name.to_owned(),
        reason,
    };
    let test_binary = std::env::current_exe().map_err(|e| failed(e.to_string()))?;
    let (profile_dir, target_dir) = test_binary
        .parent()
        .and_then(Path::parent)
        .and_then(|profile| Some((profile, profile.parent()?)))
        .ok_or_else(|| {
            failed(format!(
                "{} is not in target/<profile>/deps",
                test_binary.display()
            ))
        })?;
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev",
        Some(other) => other,
    };
    // cargo sets CARGO for the tests it runs; fall back to the one on PATH.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "build",
            // Online: on a fresh machine the example may need a package
            // that no earlier build downloaded.
            "--locked",
            "-q",
            "--profile",
            profile,
            "-p",
            package,
            "--example",
            name,
        ])
        .arg("--target-dir")
        .arg(target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .map_err(|e| failed(format!("cargo did not run: {e}")))?;
    if !output.status.success() {
        return Err(failed(format!(
            "cargo build failed: {}",
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    Ok(profile_dir.join("examples").join(name))
}
