//! The docs say what the binary does: every JSON sample in `docs/` parses,
//! the `status --json` and `bench --json` samples have the fields the real
//! commands print,
//! and every `--flag` that `docs/cli.md` gives a command is in that
//! command's `--help` (or among the global options).

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use common::{BIN, cluster, plant_holder, redquorum};

const DOCS: [(&str, &str); 4] = [
    ("docs/cli.md", include_str!("../../../docs/cli.md")),
    (
        "docs/getting-started.md",
        include_str!("../../../docs/getting-started.md"),
    ),
    (
        "docs/observability.md",
        include_str!("../../../docs/observability.md"),
    ),
    (
        "docs/operations.md",
        include_str!("../../../docs/operations.md"),
    ),
];
const CLI_MD: &str = DOCS[0].1;

/// The bodies of the ```json blocks in `text`.
fn json_blocks(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("```json\n") {
        let body = &rest[start + 8..];
        let end = body.find("```").expect("a closed block");
        found.push(&body[..end]);
        rest = &body[end + 3..];
    }
    found
}

#[test]
fn every_json_sample_in_the_docs_parses() {
    let mut samples = 0;
    for (name, text) in DOCS {
        for block in json_blocks(text) {
            samples += 1;
            if let Err(e) = serde_json::from_str::<serde_json::Value>(block) {
                panic!("{name}: a JSON sample does not parse ({e}):\n{block}");
            }
        }
    }
    assert!(
        samples >= 1,
        "no JSON sample found: the check checks nothing"
    );
}

/// Where `sample` and `real` differ in shape: an object's keys, and within
/// both, each value that is an object or a non-empty array in both (nulls
/// and scalars may differ: they are the run's values).
fn shape_differences(
    path: &str,
    sample: &serde_json::Value,
    real: &serde_json::Value,
) -> Vec<String> {
    use serde_json::Value;
    match (sample, real) {
        (Value::Object(s), Value::Object(r)) => {
            let keys =
                |o: &serde_json::Map<String, Value>| o.keys().cloned().collect::<BTreeSet<_>>();
            let (sk, rk) = (keys(s), keys(r));
            let mut differences: Vec<String> = sk
                .symmetric_difference(&rk)
                .map(|k| {
                    let side = if sk.contains(k) {
                        "only in the sample"
                    } else {
                        "missing from the sample"
                    };
                    format!("{path}.{k}: {side}")
                })
                .collect();
            for key in sk.intersection(&rk) {
                differences.extend(shape_differences(
                    &format!("{path}.{key}"),
                    &s[key],
                    &r[key],
                ));
            }
            differences
        }
        (Value::Array(s), Value::Array(r)) => match (s.first(), r.first()) {
            (Some(s), Some(r)) => shape_differences(&format!("{path}[0]"), s, r),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

#[test]
fn the_status_json_sample_has_the_fields_status_prints() {
    let sample = json_blocks(CLI_MD)
        .into_iter()
        .find(|block| block.contains("\"fence_key\""))
        .expect("docs/cli.md has a status --json sample");
    let sample: serde_json::Value = serde_json::from_str(sample).expect("the sample parses");
    let nodes = cluster(3);
    for node in 0..3 {
        plant_holder(
            &nodes,
            node,
            "reports:nightly",
            "a125138db4ff2adfc278a4be2795c700",
            std::time::Duration::from_secs(30),
        );
    }
    let output = redquorum(&nodes)
        .args(["status", "--json", "reports:nightly"])
        .output()
        .expect("redquorum runs");
    assert!(output.status.success(), "{output:?}");
    let real: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("status --json is JSON");
    let differences = shape_differences("", &sample, &real);
    assert!(
        differences.is_empty(),
        "docs/cli.md's status --json sample differs from the real output: {differences:#?}\nreal: {real:#}"
    );
}

#[test]
fn the_bench_json_sample_has_the_fields_bench_prints() {
    let sample = json_blocks(CLI_MD)
        .into_iter()
        .find(|block| block.contains("\"cycles_per_sec\""))
        .expect("docs/cli.md has a bench --json sample");
    let sample: serde_json::Value = serde_json::from_str(sample).expect("the sample parses");
    let output = Command::new(BIN)
        .env_remove("REDQUORUM_NODES")
        .args(["bench", "--duration", "300ms", "-n", "3", "--json"])
        .output()
        .expect("redquorum runs");
    assert!(output.status.success(), "{output:?}");
    let real: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("bench --json is JSON");
    let differences = shape_differences("", &sample, &real);
    assert!(
        differences.is_empty(),
        "docs/cli.md's bench --json sample differs from the real output: {differences:#?}\nreal: {real:#}"
    );
}

/// The subcommands whose flags cli.md documents.
const COMMANDS: [&str; 10] = [
    "exec", "status", "nodes", "demo", "bench", "torture", "release", "lock", "extend", "unlock",
];

/// `(command, --flag)` pairs of one `## \`redquorum SUB...\`` section: flags
/// in backticks and on `redquorum ...` command lines, each given to the
/// subcommand named before it in the same span (`nodes up --durable` in the
/// status section is a `nodes` flag), else to the section's. The flags of
/// other programs in the examples (`manage.py migrate --noinput`) are skipped.
fn documented_flags(section_command: &str, section: &str) -> BTreeSet<(String, String)> {
    let mut flags = BTreeSet::new();
    for line in section.lines() {
        let command_line = line.trim_start().starts_with("redquorum ")
            || line.contains(" redquorum ")
            || line.starts_with('|');
        let spans: Vec<&str> = if command_line {
            vec![line]
        } else {
            line.split('`').skip(1).step_by(2).collect()
        };
        for span in spans {
            let span = span.split(" -- ").next().unwrap_or_default();
            let mut command = section_command.to_owned();
            for word in span.split_whitespace() {
                if COMMANDS.contains(&word) {
                    command = word.to_owned();
                }
                let Some(flag) = word.strip_prefix("--") else {
                    continue;
                };
                let flag: String = flag
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                if flag.len() > 1 {
                    flags.insert((command.clone(), format!("--{flag}")));
                }
            }
        }
    }
    flags
}

/// The cli.md sections per subcommand: ("exec", text), ("nodes", text), ...
fn sections() -> Vec<(String, &'static str)> {
    let mut found = Vec::new();
    let starts: Vec<usize> = CLI_MD.match_indices("\n## ").map(|(i, _)| i + 1).collect();
    for (i, &start) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(CLI_MD.len());
        let text = &CLI_MD[start..end];
        let heading = text.lines().next().unwrap_or_default();
        if let Some(rest) = heading.strip_prefix("## `redquorum ") {
            let command: String = rest.chars().take_while(char::is_ascii_alphabetic).collect();
            found.push((command, text));
        }
    }
    found
}

fn help(args: &[&str]) -> String {
    let output = Command::new(BIN).args(args).arg("--help").output().unwrap();
    assert!(output.status.success(), "{args:?} --help: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn every_flag_cli_md_documents_exists_in_the_commands_help() {
    let global = help(&[]);
    let sections = sections();
    let commands: Vec<&str> = sections.iter().map(|(c, _)| c.as_str()).collect();
    for wanted in ["exec", "status", "nodes", "demo", "bench"] {
        assert!(
            commands.contains(&wanted),
            "cli.md has no section for {wanted}"
        );
    }
    let helps_of = |command: &str| {
        let mut helps = vec![global.clone(), help(&[command])];
        if command == "nodes" {
            helps.push(help(&["nodes", "up"]));
            helps.push(help(&["nodes", "down"]));
        }
        helps
    };
    let mut checked = 0;
    for (section, text) in &sections {
        for (command, flag) in documented_flags(section, text) {
            checked += 1;
            let listed = helps_of(&command).iter().any(|h| {
                [" ", "\n", ",", "="]
                    .iter()
                    .any(|end| h.contains(&format!("{flag}{end}")))
            });
            assert!(
                listed,
                "docs/cli.md ({section} section) documents {flag} for `redquorum {command}`, which its --help does not have"
            );
        }
    }
    assert!(
        checked >= 20,
        "only {checked} flags found: the check checks little"
    );
}

#[test]
fn the_flag_reader_skips_other_programs_flags() {
    let flags = documented_flags(
        "exec",
        "redquorum exec --wait 10m deploy -- ./manage.py migrate --noinput\n`--ttl D` and `--no-such` in prose, `nodes up --durable`\n",
    );
    let pairs: Vec<String> = flags.into_iter().map(|(c, f)| format!("{c} {f}")).collect();
    assert_eq!(
        pairs,
        [
            "exec --no-such",
            "exec --ttl",
            "exec --wait",
            "nodes --durable"
        ]
    );
}
