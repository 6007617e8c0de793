//! Which file a path leads to: a module path resolved against the folders of
//! one crate's `src`, then through the re-exports of the module it stops in.

use std::collections::BTreeMap;
use std::path::Path;

use crate::scan::{self, Named};

/// One crate's source: each `.rs` file by its path under `src`
/// (`quorum/tally.rs`), with the paths it names.
#[derive(Debug, Default)]
pub(crate) struct Source {
    pub(crate) files: BTreeMap<String, Vec<Named>>,
}

/// Where a path led.
#[derive(Debug, PartialEq)]
pub(crate) struct Target {
    /// The file that defines (or last re-exports) what the path names.
    pub(crate) file: String,
    /// The path named an item at the crate root (`crate::Name`): through
    /// `lib.rs`'s re-exports rather than the module that defines it.
    pub(crate) through_root: bool,
}

impl Source {
    /// Every `.rs` file under `src`.
    pub(crate) fn read(src: &Path) -> Self {
        let mut texts = Vec::new();
        walk(src, src, &mut texts);
        Self::from_texts(texts)
    }

    /// A source of the given `(path under src, text)` files.
    pub(crate) fn from_texts(texts: impl IntoIterator<Item = (String, String)>) -> Self {
        let files = texts
            .into_iter()
            .map(|(path, text)| (path, scan::named_paths(&text)))
            .collect();
        Self { files }
    }

    /// The file of a module: `[]` is `lib.rs`, `[a, b]` is `a/b.rs` or `a/b/mod.rs`.
    fn file_of(&self, module: &[String]) -> Option<String> {
        if module.is_empty() {
            return Some("lib.rs".to_owned()).filter(|f| self.files.contains_key(f));
        }
        let base = module.join("/");
        [format!("{base}.rs"), format!("{base}/mod.rs")]
            .into_iter()
            .find(|f| self.files.contains_key(f))
    }

    /// Where `named`, in `file`, leads; `None` for another crate's path.
    pub(crate) fn target(&self, file: &str, named: &Named) -> Option<Target> {
        let mut here = module_of(file);
        here.extend(named.inline.iter().cloned());
        self.resolve(&here, &named.path, 8)
    }

    fn resolve(&self, here: &[String], path: &[String], depth: usize) -> Option<Target> {
        let (mut module, mut rest) = match path.first()?.as_str() {
            "crate" => (Vec::new(), &path[1..]),
            "self" => (here.to_vec(), &path[1..]),
            "super" => (here[..here.len().saturating_sub(1)].to_vec(), &path[1..]),
            child => {
                let mut child_path = here.to_vec();
                child_path.push(child.to_owned());
                self.file_of(&child_path)?; // else another crate's path
                (here.to_vec(), path)
            }
        };
        // `super::super::x`: each further `super` goes up one more.
        while rest.first().is_some_and(|s| s == "super") {
            module.pop();
            rest = &rest[1..];
        }
        while let Some(segment) = rest.first() {
            let mut deeper = module.clone();
            deeper.push(segment.clone());
            if self.file_of(&deeper).is_none() {
                break;
            }
            module = deeper;
            rest = &rest[1..];
        }
        let file = self.file_of(&module)?;
        let Some(item) = rest.first().filter(|i| *i != "*") else {
            return Some(Target {
                file,
                through_root: false,
            });
        };
        // An item re-exported here: follow it to the module that defines it.
        let reexport = self.files[&file]
            .iter()
            .find(|n| n.reexport && n.path.last() == Some(item));
        if let Some(named) = reexport.filter(|_| depth > 0) {
            if let Some(target) = self.resolve(&module, &named.path, depth - 1) {
                return Some(Target {
                    through_root: module.is_empty(),
                    ..target
                });
            }
        }
        Some(Target {
            file,
            through_root: module.is_empty(),
        })
    }
}

/// The module path of a file under `src`: `quorum/tally.rs` is
/// `[quorum, tally]`, `node/mod.rs` is `[node]`, `lib.rs` is `[]`.
pub(crate) fn module_of(file: &str) -> Vec<String> {
    let stem = file.strip_suffix(".rs").unwrap_or(file);
    let mut parts: Vec<String> = stem.split('/').map(str::to_owned).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

fn walk(src: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(src, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(src).expect("under src");
            let name = relative.to_string_lossy().replace('\\', "/");
            let text = std::fs::read_to_string(&path).expect("a source file reads");
            out.push((name, text));
        }
    }
}
