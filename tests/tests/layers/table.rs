//! The table of layer rules (`layers.txt`): for each crate, what each folder
//! or root file may import.

use std::collections::BTreeMap;

/// One crate's rules: for each unit (a top module: `kinds`, `redlock`) or
/// single file (`quorum/tally.rs`), what it may import.
#[derive(Debug, Default)]
pub(crate) struct Rules {
    pub(crate) allowed: BTreeMap<String, Vec<String>>,
}

/// The table's crates, by their `src` folder from the workspace root. A key
/// `@name` names a group of items that `@name` stands for in later rules.
pub(crate) fn parse(text: &str) -> BTreeMap<String, Rules> {
    let mut crates = parse_lines(text);
    for rules in crates.values_mut() {
        let groups: BTreeMap<String, Vec<String>> = rules
            .allowed
            .iter()
            .filter(|(k, _)| k.starts_with('@'))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        rules.allowed.retain(|k, _| !k.starts_with('@'));
        for items in rules.allowed.values_mut() {
            *items = expand(items, &groups, 8);
        }
    }
    crates
}

/// `items` with each `@group` replaced by its items (groups may name groups).
fn expand(items: &[String], groups: &BTreeMap<String, Vec<String>>, depth: usize) -> Vec<String> {
    assert!(depth > 0, "layers.txt: groups name each other in a circle");
    let one = |item: &String| match groups.get(item) {
        Some(group) => expand(group, groups, depth - 1),
        None if item.starts_with('@') => panic!("layers.txt: no group {item}"),
        None => vec![item.clone()],
    };
    items.iter().flat_map(one).collect()
}

fn parse_lines(text: &str) -> BTreeMap<String, Rules> {
    let mut crates: BTreeMap<String, Rules> = BTreeMap::new();
    let mut section: Option<String> = None;
    let mut keys: Vec<String> = Vec::new();
    for (number, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("");
        if line.trim().is_empty() {
            continue;
        }
        if let Some(name) = line
            .trim()
            .strip_prefix('[')
            .and_then(|l| l.strip_suffix(']'))
        {
            section = Some(name.to_owned());
            crates.entry(name.to_owned()).or_default();
            keys.clear();
            continue;
        }
        let rules = crates
            .get_mut(section.as_deref().expect("a [crate] line before the rules"))
            .expect("the section's rules");
        // A line that starts with a space continues the rule above it.
        let (new_keys, items) = match line.split_once(':') {
            Some((k, items)) if !raw.starts_with(char::is_whitespace) => (
                Some(k.split_whitespace().map(str::to_owned).collect()),
                items,
            ),
            _ if raw.starts_with(char::is_whitespace) && !keys.is_empty() => (None, line),
            _ => panic!("layers.txt line {}: `unit: what it may import`", number + 1),
        };
        if let Some(new_keys) = new_keys {
            keys = new_keys;
            for key in &keys {
                let fresh = rules.allowed.insert(key.clone(), Vec::new()).is_none();
                assert!(fresh, "layers.txt line {}: {key} has two rules", number + 1);
            }
        }
        for key in &keys {
            let list = rules.allowed.get_mut(key).expect("inserted above");
            list.extend(items.split_whitespace().map(str::to_owned));
        }
    }
    crates
}
