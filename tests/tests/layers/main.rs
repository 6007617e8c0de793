//! The import rules each folder's `mod.rs` states ("May import", "Must never
//! import"), kept as one table (`layers.txt`) and checked against the real
//! imports with plain std: every path of a `use`, and every `crate::`,
//! `super::` or `self::` path in the code, outside comments and unit tests,
//! is resolved to the file it leads to and must be allowed for its file's
//! layer; no path names an item through `lib.rs`'s re-exports
//! (`crate::Name`); and no files import each other in a circle.

mod check;
mod resolve;
mod scan;
mod table;

use std::path::Path;

use resolve::Source;
use table::Rules;

const TABLE: &str = include_str!("layers.txt");

/// The rules and the source of the crate whose `src` is `src` (from the
/// workspace root).
fn crate_at(src: &str) -> (Source, Rules) {
    let mut rules = table::parse(TABLE);
    let rules = rules
        .remove(src)
        .unwrap_or_else(|| panic!("layers.txt has no [{src}]"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(src);
    (Source::read(&root), rules)
}

/// How many of the paths `source` names lead to one of its files.
fn imports(source: &Source) -> usize {
    let resolved = source
        .files
        .iter()
        .flat_map(|(file, named)| named.iter().filter_map(move |n| source.target(file, n)));
    resolved.count()
}

fn assert_keeps_its_layers(src: &str) {
    let (source, rules) = crate_at(src);
    let violations = check::violations(&source, &rules);
    let circles = check::circles(&source);
    eprintln!(
        "{src}: {} files, {} rules, {} imports checked",
        source.files.len(),
        rules.allowed.len(),
        imports(&source)
    );
    let circles = circles
        .iter()
        .map(|c| format!("files importing each other: {}", c.join(" -> ")));
    let broken: Vec<String> = violations.into_iter().chain(circles).collect();
    assert!(
        broken.is_empty(),
        "{src} breaks its layer rules:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_library_keeps_its_layers() {
    assert_keeps_its_layers("crates/redquorum/src");
}

#[test]
fn the_harness_keeps_its_layers() {
    assert_keeps_its_layers("crates/redquorum-harness/src");
}

/// A small crate: `low.rs` below `high/` (whose `mod.rs` re-exports `run.rs`).
fn toy(files: &[(&str, &str)], table: &str) -> Vec<String> {
    let source = Source::from_texts(files.iter().map(|(p, t)| (p.to_string(), t.to_string())));
    let rules = table::parse(&format!("[toy]\n{table}"))
        .remove("toy")
        .expect("parsed");
    let mut found = check::violations(&source, &rules);
    found.extend(check::circles(&source).into_iter().map(|c| c.join(" <-> ")));
    found
}

const LIB: (&str, &str) = ("lib.rs", "mod high; mod low; pub use high::Run;");
const HIGH: (&str, &str) = ("high/mod.rs", "mod run; pub use run::Run;");
const RULES: &str = "high: low\nlow:\n";

#[test]
fn a_crate_that_keeps_its_layers_passes() {
    let run = (
        "high/run.rs",
        "use crate::low::Floor;\npub struct Run(Floor);",
    );
    let low = ("low.rs", "pub struct Floor;");
    assert_eq!(toy(&[LIB, HIGH, run, low], RULES), Vec::<String>::new());
}

#[test]
fn an_import_from_a_layer_above_is_found() {
    let run = ("high/run.rs", "pub struct Run;");
    let low = (
        "low.rs",
        "pub fn f() -> crate::high::Run { crate::high::Run }",
    );
    let found = toy(&[LIB, HIGH, run, low], RULES);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].starts_with("low.rs: crate::high::Run (high/run.rs) is not allowed"));
}

#[test]
fn a_path_through_the_crate_root_is_found() {
    let run = ("high/run.rs", "pub struct Run;");
    let low = ("low.rs", "use crate::Run;");
    let found = toy(&[LIB, HIGH, run, low], "high: low\nlow: high\n");
    assert_eq!(
        found,
        ["low.rs: crate::Run goes through lib.rs: name the defining module"]
    );
}

#[test]
fn a_file_without_a_rule_and_a_rule_without_a_file_are_found() {
    let run = ("high/run.rs", "pub struct Run;");
    let found = toy(&[LIB, HIGH, run], "low:\n");
    assert_eq!(found.len(), 3, "{found:?}"); // high/mod.rs, high/run.rs, `low`
    assert_eq!(found[0], "the rule for low names no file");
}

#[test]
fn a_file_rule_narrows_its_folder() {
    let run = ("high/run.rs", "pub struct Run;");
    let pure = ("high/pure.rs", "use super::run::Run;");
    let table = "high: low\nhigh/pure.rs: low\nlow:\n";
    let found = toy(&[LIB, HIGH, run, pure, ("low.rs", "")], table);
    assert_eq!(
        found,
        ["high/pure.rs: super::run::Run (high/run.rs) is not allowed for its layer"]
    );
}

#[test]
fn a_circle_of_files_is_found() {
    let a = ("high/a.rs", "use super::b::B; pub struct A;");
    let b = ("high/b.rs", "use crate::high::a::A; pub struct B;");
    let found = toy(&[LIB, ("high/mod.rs", "mod a; mod b;"), a, b], "high:\n");
    assert_eq!(found, ["high/a.rs <-> high/b.rs"]);
}

#[test]
fn comments_literals_and_unit_tests_are_not_imports() {
    let text = r##"
        //! [`Up`](crate::up::Up) in a doc link
        /* crate::up::Block */ fn f() -> &'static str { "crate::up::Str" }
        const C: char = '\''; const R: &str = r#"crate::up::Raw"#;
        #[cfg(test)]
        mod tests { use crate::up::Test; fn g() { let _ = "}"; } }
        fn h<'a>(x: &'a str) -> impl Sized + use<'a> { crate::down::g(x) }
    "##;
    let named: Vec<String> = scan::named_paths(text)
        .iter()
        .map(|n| n.path.join("::"))
        .collect();
    assert_eq!(named, ["crate::down::g"]);
}

#[test]
fn use_trees_flatten_to_their_paths() {
    let named = scan::named_paths("pub(crate) use crate::a::{self, b::{C, D as E}, f};");
    let paths: Vec<String> = named.iter().map(|n| n.path.join("::")).collect();
    assert_eq!(
        paths,
        [
            "crate::a",
            "crate::a::b::C",
            "crate::a::b::D",
            "crate::a::f"
        ]
    );
    assert!(named.iter().all(|n| n.reexport));
}
