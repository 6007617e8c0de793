//! The planted bugs are patches (`crates/redquorum/mutants/`, applied by
//! `tests/mutants.sh` to a copy of the sources): these checks keep them from
//! rotting silently while the code they patch changes, and keep the hooks out
//! of the library's sources (docs/torture.md, "How planted bugs are built").

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace's root (this crate is `crates/redquorum`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn patches_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("mutants")
}

/// The patches in the order `tests/mutants.sh` applies them.
fn series() -> Vec<String> {
    fs::read_to_string(patches_dir().join("series"))
        .expect("crates/redquorum/mutants/series")
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

/// The files a patch changes (its `--- a/` and `+++ b/` lines).
fn touched(patch: &str) -> BTreeSet<String> {
    patch
        .lines()
        .filter_map(|l| l.strip_prefix("--- a/").or(l.strip_prefix("+++ b/")))
        .map(str::to_owned)
        .collect()
}

/// `validity-no-drift` → `ValidityNoDrift`, as the `Mutant` variant is named.
fn variant(name: &str) -> String {
    name.split('-')
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}

#[test]
fn the_series_lists_every_patch_once() {
    let listed = series();
    let unique: BTreeSet<&String> = listed.iter().collect();
    assert_eq!(
        unique.len(),
        listed.len(),
        "a patch listed twice: {listed:?}"
    );
    let on_disk: BTreeSet<String> = fs::read_dir(patches_dir())
        .expect("crates/redquorum/mutants")
        .map(|entry| entry.expect("a directory entry").file_name())
        .filter_map(|name| name.to_str().map(str::to_owned))
        .filter(|name| name.ends_with(".patch"))
        .collect();
    assert_eq!(on_disk, listed.into_iter().collect::<BTreeSet<_>>());
}

/// A patch that changed code without asking for its own mutant would plant
/// its bug in every other mutant's run and in the controls.
#[test]
fn every_patch_guards_its_change_with_its_own_mutant() {
    for name in series() {
        let patch = fs::read_to_string(patches_dir().join(&name)).expect("a patch");
        let guard = format!("Mutant::{}", variant(name.trim_end_matches(".patch")));
        let added: Vec<&str> = patch
            .lines()
            .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
            .collect();
        assert!(
            added.iter().any(|l| l.contains(&guard)),
            "{name}: no added line asks for {guard}"
        );
    }
}

/// Every patch applies, in the series' order, to the sources as they are now
/// (on a copy of the files they change: the worktree is left alone).
#[test]
fn every_patch_applies_to_the_sources_in_the_series_order() {
    let scratch =
        std::env::temp_dir().join(format!("redquorum-mutant-patches-{}", std::process::id()));
    let _ = fs::remove_dir_all(&scratch);
    for name in series() {
        let path = patches_dir().join(&name);
        for file in touched(&fs::read_to_string(&path).expect("a patch")) {
            let (from, to) = (root().join(&file), scratch.join(&file));
            if from.exists() && !to.exists() {
                fs::create_dir_all(to.parent().expect("a parent")).expect("the scratch folder");
                fs::copy(&from, &to).expect("a copy of a patched file");
            }
        }
        fs::create_dir_all(&scratch).expect("the scratch folder");
        // The ceiling keeps git apply from taking a repository around the
        // scratch folder for the one the paths are relative to.
        let applied = Command::new("git")
            .arg("apply")
            .arg(&path)
            .current_dir(&scratch)
            .env(
                "GIT_CEILING_DIRECTORIES",
                scratch.parent().expect("a parent"),
            )
            .output()
            .expect("git runs");
        assert!(
            applied.status.success(),
            "{name} does not apply: {}",
            String::from_utf8_lossy(&applied.stderr)
        );
    }
    fs::remove_dir_all(&scratch).expect("the scratch folder is removed");
}

/// The library's sources read as production code: no planted-bug hook
/// outside the `mutants` module.
#[test]
fn no_hook_outside_the_mutants_module() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut hooked = Vec::new();
    let mut folders = vec![src.clone()];
    while let Some(folder) = folders.pop() {
        for entry in fs::read_dir(&folder).expect("a source folder") {
            let path = entry.expect("a directory entry").path();
            let relative = path.strip_prefix(&src).expect("under src");
            let relative = relative.to_string_lossy().replace('\\', "/");
            if relative == "mutants"
                || relative.starts_with("mutants.")
                || relative.starts_with("mutants_")
            {
                continue;
            }
            if path.is_dir() {
                folders.push(path);
            } else if fs::read_to_string(&path).is_ok_and(|text| text.contains("mutants::")) {
                hooked.push(relative);
            }
        }
    }
    assert!(hooked.is_empty(), "planted-bug hooks in {hooked:?}");
}
