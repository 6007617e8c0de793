//! The metrics through a real Prometheus exporter (`metrics-exporter-prometheus`)
//! after real lock operations on real nodes: every documented metric is there
//! with its description, histograms have buckets, the held and waiting gauges
//! count, and every metric the alerting rules in `docs/observability.md` read
//! is in the exporter's output.
//!
//! One test in this binary: the exporter is the process-wide recorder.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use redquorum::{Error, LockOptions};

const OBSERVABILITY: &str = include_str!("../../docs/observability.md");

/// The buckets `docs/observability.md` suggests.
const BUCKETS: [f64; 17] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0, 300.0,
];

fn install() -> PrometheusHandle {
    let recorder = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Prefix("redquorum_".into()), &BUCKETS)
        .expect("buckets")
        .build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder).expect("the only recorder in this binary");
    handle
}

/// The metric names in the first column of the doc's metrics table.
fn documented_metrics() -> Vec<String> {
    OBSERVABILITY
        .lines()
        .filter_map(|l| l.strip_prefix("| `redquorum_"))
        .filter_map(|l| l.split_once('`'))
        .map(|(name, _)| format!("redquorum_{name}"))
        .collect()
}

/// Every `expr:` of the doc's alerting rules (the YAML block).
fn alert_expressions() -> Vec<String> {
    let start = OBSERVABILITY.find("```yaml\n").expect("a yaml block") + 8;
    let len = OBSERVABILITY[start..].find("```").expect("closed");
    let rules: serde_norway::Value =
        serde_norway::from_str(&OBSERVABILITY[start..start + len]).expect("the rules are YAML");
    rules["groups"]
        .as_sequence()
        .expect("groups")
        .iter()
        .flat_map(|group| group["rules"].as_sequence().expect("rules").iter())
        .map(|rule| rule["expr"].as_str().expect("an expr").to_owned())
        .collect()
}

/// The metric names (`redquorum_...`) an expression reads.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = expr;
    while let Some(at) = rest.find("redquorum_") {
        let name: String = rest[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        rest = &rest[at + name.len()..];
        names.insert(name);
    }
    names
}

/// The series names in the exporter's text (before `{` or the value).
fn series(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(str::to_owned)
        .collect()
}

/// The value of the one sample `series{labels}` (labels as rendered).
fn sample(text: &str, series_with_labels: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series_with_labels)?.trim().parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_exporter_shows_every_documented_metric_and_what_the_alerts_read() {
    let handle = install();
    let cluster = common::cluster(3);
    let redlock = common::redlock(&cluster, Duration::from_secs(5));
    let resource = format!("prom:{}", std::process::id());

    // Acquire, extend, release; a waiter that times out behind a holder.
    let mut lock = redlock.lock(&resource).await.expect("acquired");
    let held = handle.render();
    assert_eq!(
        sample(&held, "redquorum_held_locks{kind=\"lock\"}"),
        Some(1.0),
        "one lock held:\n{held}"
    );
    lock.extend().await.expect("extended");
    let impatient = redlock
        .with_options(&LockOptions {
            wait: Duration::from_millis(300),
            ..*redlock.options()
        })
        .unwrap();
    let waiter = tokio::spawn({
        let resource = resource.clone();
        async move { impatient.lock(&resource).await.map(drop) }
    });
    let rendered_while_waiting = common::eventually(Duration::from_secs(5), || {
        let text = handle.render();
        async move { sample(&text, "redquorum_waiting_locks") == Some(1.0) }
    })
    .await;
    assert!(rendered_while_waiting, "the waiter was never counted");
    let waited = waiter.await.unwrap();
    assert!(
        matches!(waited, Err(Error::WaitTimeout { .. })),
        "{waited:?}"
    );
    lock.release().await.expect("released");

    // A node's health gauge is set by its first probe, right after connecting.
    let probed = common::eventually(Duration::from_secs(10), || {
        let text = handle.render();
        async move { series(&text).contains("redquorum_node_eligible") }
    })
    .await;
    assert!(probed, "no health probe was recorded");

    let text = handle.render();
    let present = series(&text);
    assert_eq!(
        sample(&text, "redquorum_held_locks{kind=\"lock\"}"),
        Some(0.0)
    );
    assert_eq!(sample(&text, "redquorum_waiting_locks"), Some(0.0));
    assert_eq!(
        sample(
            &text,
            "redquorum_acquire_wait_seconds_count{result=\"timeout\"}"
        ),
        Some(1.0),
        "{text}"
    );

    // Every documented metric this run exercised, with its HELP line; the
    // histograms as real histograms (buckets), not summaries.
    let documented = documented_metrics();
    assert!(documented.len() >= 12, "{documented:?}");
    let not_exercised = ["redquorum_vote_refused_total", "redquorum_lease_lost_total"];
    for name in documented
        .iter()
        .filter(|n| !not_exercised.contains(&n.as_str()))
    {
        assert!(
            text.contains(&format!("# HELP {name} ")),
            "no description for {name}:\n{text}"
        );
        if name.ends_with("_seconds") {
            assert!(
                present.contains(&format!("{name}_bucket")),
                "{name} has no buckets:\n{text}"
            );
        } else {
            assert!(present.contains(name), "{name} missing:\n{text}");
        }
    }

    // The alerting rules read only metrics the exporter writes. A counter
    // with no increment yet is absent from the output, so the lease-lost
    // counter is checked against the documented list instead.
    let expressions = alert_expressions();
    assert!(expressions.len() >= 4, "{expressions:?}");
    for expr in &expressions {
        for name in metric_names(expr) {
            let known = present.contains(&name) || not_exercised.contains(&name.as_str());
            assert!(
                known,
                "the alert {expr:?} reads {name}, which the exporter does not write"
            );
            if expr.contains("histogram_quantile") {
                assert!(
                    name.ends_with("_bucket"),
                    "{expr:?}: quantiles need _bucket series"
                );
            }
        }
        assert!(
            !expr.contains("histogram_quantile") || expr.contains("rate("),
            "{expr:?}: histogram_quantile over raw counters"
        );
    }
    assert!(documented.iter().any(|n| n == "redquorum_lease_lost_total"));
}

/// The identifiers of `expr` that PromQL reads as metric names: not a
/// function (followed by `(`), not a keyword, not a label (inside `{...}`
/// or a `by (...)` list), not a range or number. A threshold written as a
/// name (`> ttl / 10`, which PromQL reads as a metric called `ttl`) shows up
/// here.
fn selectors(expr: &str) -> Vec<String> {
    // Operators, and the aggregations (`sum by (le) (...)` puts no `(` right after `sum`).
    const KEYWORDS: &[&str] = &[
        "by",
        "without",
        "on",
        "ignoring",
        "and",
        "or",
        "unless",
        "bool",
        "offset",
        "sum",
        "min",
        "max",
        "avg",
        "count",
        "group",
        "stddev",
        "stdvar",
        "topk",
        "bottomk",
        "quantile",
        "count_values",
    ];
    // Drop label matchers and ranges.
    let mut plain = String::new();
    let mut depth = 0;
    for c in expr.chars() {
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            c if depth == 0 => plain.push(c),
            _ => {}
        }
    }
    let chars: Vec<char> = plain.chars().collect();
    let mut found = Vec::new();
    let mut label_list = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':')
            {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let next = chars[i..].iter().find(|c| !c.is_whitespace());
            if ["by", "without", "on", "ignoring"].contains(&word.as_str()) {
                label_list = true;
            } else if label_list || next == Some(&'(') || KEYWORDS.contains(&word.as_str()) {
                // a label of a by (...) list, or a function
            } else {
                found.push(word);
            }
            continue;
        }
        if c == ')' {
            label_list = false;
        }
        if c.is_ascii_digit() || c == '.' {
            // a number (possibly 1e3): skip it whole
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
            continue;
        }
        i += 1;
    }
    found
}

#[test]
fn every_name_an_alert_reads_is_a_redquorum_metric() {
    let expressions = alert_expressions();
    assert!(expressions.len() >= 4, "{expressions:?}");
    for expr in &expressions {
        let names = selectors(expr);
        assert!(!names.is_empty(), "{expr:?} reads no metric");
        for name in names {
            assert!(
                name.starts_with("redquorum_"),
                "{expr:?} reads {name:?}, which is not a metric (a threshold written as a name?)"
            );
        }
    }
}

#[test]
fn the_selector_reader_finds_names_that_are_not_metrics() {
    assert_eq!(
        selectors("histogram_quantile(0.99, redquorum_acquire_seconds) > ttl / 10"),
        ["redquorum_acquire_seconds", "ttl"]
    );
    assert_eq!(
        selectors(
            "histogram_quantile(0.99, sum by (le) (rate(redquorum_a_bucket{result=\"x\"}[5m]))) > 1e3"
        ),
        ["redquorum_a_bucket"]
    );
}

#[test]
fn metric_names_are_read_from_expressions() {
    let names = metric_names(
        "histogram_quantile(0.99, sum by (le) (rate(redquorum_acquire_seconds_bucket[5m]))) > redquorum_x",
    );
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        ["redquorum_acquire_seconds_bucket", "redquorum_x"]
    );
}
