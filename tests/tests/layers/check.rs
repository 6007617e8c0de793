//! The two checks of one crate's source against its rules: every import
//! allowed for its layer, and no circle of files importing each other.

use std::collections::{BTreeMap, BTreeSet};

use crate::resolve::{Source, module_of};
use crate::table::Rules;

/// Each import of `source` that its file's rule does not allow, each file
/// without a rule, each rule naming no file, and each `crate::Name` path
/// (through `lib.rs`): one line each, empty when the source keeps the rules.
pub(crate) fn violations(source: &Source, rules: &Rules) -> Vec<String> {
    let mut found = Vec::new();
    for key in rules.allowed.keys() {
        let exists = source
            .files
            .keys()
            .any(|f| f == key || module_of(f).first() == Some(key));
        if !exists {
            found.push(format!("the rule for {key} names no file"));
        }
    }
    for (file, named) in checked_files(source) {
        let unit = module_of(file).remove(0);
        let own = rules.allowed.get(file);
        let Some(allowed) = own.or_else(|| rules.allowed.get(&unit)) else {
            found.push(format!(
                "{file}: no rule (add its folder or file to layers.txt)"
            ));
            continue;
        };
        for name in named {
            let Some(target) = source.target(file, name) else {
                continue;
            };
            let shown = name.path.join("::");
            if target.through_root {
                found.push(format!(
                    "{file}: {shown} goes through lib.rs: name the defining module"
                ));
                continue;
            }
            let target_unit = module_of(&target.file).first().cloned().unwrap_or_default();
            let ok = target.file == *file
                || (target_unit == unit && own.is_none())
                || allowed.contains(&target_unit)
                || allowed.contains(&target.file);
            if !ok {
                found.push(format!(
                    "{file}: {shown} ({}) is not allowed for its layer",
                    target.file
                ));
            }
        }
    }
    found
}

/// The circles of files importing each other (a module's own children,
/// which it declares and re-exports, do not count), each as its files.
pub(crate) fn circles(source: &Source) -> Vec<Vec<String>> {
    let mut edges: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (file, named) in checked_files(source) {
        let module = module_of(file);
        let targets = named
            .iter()
            .filter_map(|n| source.target(file, n))
            .map(|t| t.file)
            .filter(|t| t != file && t != "lib.rs" && !module_of(t).starts_with(&module));
        edges.entry(file).or_default().extend(targets);
    }
    strongly_connected(&edges)
}

/// The files the rules apply to: all but `lib.rs` (the re-exports) and the
/// unit tests kept in `*_tests.rs` files.
fn checked_files(source: &Source) -> impl Iterator<Item = (&String, &Vec<crate::scan::Named>)> {
    source
        .files
        .iter()
        .filter(|(f, _)| *f != "lib.rs" && !f.ends_with("_tests.rs"))
}

/// Tarjan's strongly connected components of more than one file.
fn strongly_connected(edges: &BTreeMap<&str, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<&'a str, BTreeSet<String>>,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        found: Vec<Vec<String>>,
    }
    fn visit(s: &mut State<'_>, node: &str) {
        let i = s.index.len();
        s.index.insert(node.to_owned(), i);
        s.low.insert(node.to_owned(), i);
        s.stack.push(node.to_owned());
        for next in s.edges.get(node).into_iter().flatten() {
            if !s.index.contains_key(next) {
                visit(s, next);
                let low = s.low[node].min(s.low[next]);
                s.low.insert(node.to_owned(), low);
            } else if s.stack.contains(next) {
                let low = s.low[node].min(s.index[next]);
                s.low.insert(node.to_owned(), low);
            }
        }
        if s.low[node] == s.index[node] {
            let at = s
                .stack
                .iter()
                .rposition(|n| n == node)
                .expect("on the stack");
            let component = s.stack.split_off(at);
            if component.len() > 1 {
                s.found.push(component);
            }
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for node in edges.keys() {
        if !state.index.contains_key(*node) {
            visit(&mut state, node);
        }
    }
    state.found
}
