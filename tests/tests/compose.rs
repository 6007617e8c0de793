//! `docker/compose.yml` is valid and safe for Redlock (parsed here, since CI has no Docker),
//! its `redquorum serve` service names every master and carries no token of its own, and the
//! compose nodes lock correctly when `REDQUORUM_NODES` points at them.

mod common;

use std::collections::BTreeSet;

use redquorum::{Durability, Redlock};
use redquorum_harness::{Cluster, Persistence};
use serde_norway::Value;

const COMPOSE: &str = include_str!("../../docker/compose.yml");

fn parse(text: &str) -> Value {
    let mut doc: Value = serde_norway::from_str(text).expect("valid YAML");
    doc.apply_merge().expect("merge keys resolve");
    doc
}

/// The `REDQUORUM_NODES=...` value a compose file tells users to export.
fn documented_nodes(text: &str) -> Vec<String> {
    let line = text
        .lines()
        .find_map(|l| l.split_once("export REDQUORUM_NODES="))
        .map_or("", |(_, nodes)| nodes);
    line.trim().split(',').map(str::to_owned).collect()
}

/// What is wrong with a compose file for Redlock: one line per problem.
fn problems(text: &str) -> Vec<String> {
    let doc = parse(text);
    let mut problems = Vec::new();
    let Some(all) = doc["services"].as_mapping() else {
        return vec!["no services".into()];
    };
    // The service built from docker/Dockerfile is `redquorum serve`; the rest are masters.
    let (serve, services): (Vec<_>, Vec<_>) =
        all.iter().partition(|(_, s)| s.get("build").is_some());
    if services.len() != 5 {
        problems.push(format!(
            "{} services, expected five masters",
            services.len()
        ));
    }
    let mut host_ports = BTreeSet::new();
    for &(name, service) in &services {
        let name = name.as_str().unwrap_or("?");
        if !service["image"]
            .as_str()
            .is_some_and(|i| i.starts_with("redis:"))
        {
            problems.push(format!("{name}: not a redis image"));
        }
        let command: Vec<&str> = service["command"]
            .as_sequence()
            .map(|c| c.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let after = |flag: &str| {
            command
                .iter()
                .position(|c| *c == flag)
                .and_then(|i| command.get(i + 1).copied())
        };
        for (flag, wanted) in [
            ("--appendonly", "yes"),
            ("--appendfsync", "always"),
            ("--maxmemory-policy", "noeviction"),
        ] {
            if after(flag) != Some(wanted) {
                problems.push(format!(
                    "{name}: {flag} is {:?}, expected {wanted}",
                    after(flag)
                ));
            }
        }
        // The AOF must outlive the container: a `down` + `up` that empties a
        // node still reporting `appendfsync always` is a durable node that forgot.
        let data_dir = after("--dir").unwrap_or("/data");
        let volume = service["volumes"].as_sequence().and_then(|volumes| {
            volumes
                .iter()
                .filter_map(Value::as_str)
                .find_map(|v| v.split_once(':').filter(|(_, target)| *target == data_dir))
        });
        match volume {
            Some((source, _)) if doc["volumes"].get(source).is_some() => {}
            Some((source, _)) => {
                problems.push(format!("{name}: volume {source:?} is not a named volume"))
            }
            None => problems.push(format!("{name}: no volume on its data dir {data_dir}")),
        }
        if command.iter().any(|c| c.contains("replicaof")) {
            problems.push(format!("{name}: a replica, not an independent master"));
        }
        let ports: Vec<&str> = service["ports"]
            .as_sequence()
            .map(|p| p.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        match ports.as_slice() {
            [port] if port.starts_with("127.0.0.1:") && port.ends_with(":6379") => {
                host_ports.insert(port.split(':').nth(1).unwrap_or_default().to_owned());
            }
            other => problems.push(format!(
                "{name}: ports {other:?}, expected one loopback port"
            )),
        }
    }
    let documented: BTreeSet<String> = documented_nodes(text)
        .iter()
        .filter_map(|url| url.rsplit(':').next().map(str::to_owned))
        .collect();
    if documented != host_ports {
        problems.push(format!(
            "REDQUORUM_NODES ports {documented:?} differ from the published ports {host_ports:?}"
        ));
    }
    let masters: BTreeSet<String> = (services.iter())
        .filter_map(|(name, _)| Some(format!("redis://{}:6379", name.as_str()?)))
        .collect();
    for (_, service) in serve {
        problems.extend(serve_problems(service, &masters));
    }
    problems
}

/// What is wrong with the `redquorum serve` service: it must lock on every
/// master, take its token from the user's environment (never one written in
/// the file), publish on loopback only, and start only when asked (a profile).
fn serve_problems(service: &Value, masters: &BTreeSet<String>) -> Vec<String> {
    let mut problems = Vec::new();
    let env = &service["environment"];
    let nodes: BTreeSet<String> = (env["REDQUORUM_NODES"].as_str().unwrap_or_default())
        .split(',')
        .map(str::to_owned)
        .collect();
    if &nodes != masters {
        problems.push(format!(
            "serve: REDQUORUM_NODES {nodes:?}, expected the masters {masters:?}"
        ));
    }
    if !env["REDQUORUM_SERVE_TOKEN"]
        .as_str()
        .is_some_and(|t| t.starts_with("${"))
    {
        problems.push("serve: a token written in the file".into());
    }
    let ports: Vec<&str> = (service["ports"].as_sequence())
        .map(|p| p.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !ports.iter().all(|p| p.starts_with("127.0.0.1:")) {
        problems.push(format!("serve: ports {ports:?} not on loopback"));
    }
    if service["profiles"].as_sequence().is_none_or(Vec::is_empty) {
        problems.push("serve: no profile, so `up` alone builds it".into());
    }
    problems
}

#[test]
fn compose_defines_five_durable_non_evicting_masters() {
    assert_eq!(problems(COMPOSE), Vec::<String>::new());
}

#[test]
fn weakened_compose_files_are_caught() {
    let everysec = COMPOSE.replace("\"always\"", "\"everysec\"");
    assert!(!problems(&everysec).is_empty(), "fsync everysec passed");
    let evicting = COMPOSE.replace("\"noeviction\"", "\"allkeys-lru\"");
    assert!(!problems(&evicting).is_empty(), "allkeys-lru passed");
    let wrong_nodes = COMPOSE
        .replace("127.0.0.1:7005,", "127.0.0.1:7006,")
        .replace("redis://127.0.0.1:7005", "redis://127.0.0.1:7006");
    assert!(
        !problems(&wrong_nodes).is_empty(),
        "a wrong REDQUORUM_NODES passed"
    );
    let redis5 = "  redis5: { <<: *redis, ports: [\"127.0.0.1:7005:6379\"], volumes: [\"redis5-data:/data\"] }\n";
    assert!(
        COMPOSE.contains(redis5),
        "the mutant below would change nothing"
    );
    let four = COMPOSE.replace(redis5, "");
    assert!(!problems(&four).is_empty(), "four nodes passed");
    let ephemeral = COMPOSE.replace(", volumes: [\"redis3-data:/data\"]", "");
    assert_ne!(ephemeral, COMPOSE);
    assert!(
        !problems(&ephemeral).is_empty(),
        "a node without a volume passed"
    );
    let serve_short = COMPOSE.replace(",redis://redis5:6379", "");
    assert_ne!(serve_short, COMPOSE);
    assert!(
        !problems(&serve_short).is_empty(),
        "serve on four masters passed"
    );
    let token = COMPOSE.replace("${REDQUORUM_SERVE_TOKEN:-}", "s3cret");
    assert_ne!(token, COMPOSE);
    assert!(!problems(&token).is_empty(), "a token in the file passed");
    let bind_elsewhere = COMPOSE.replace("redis2-data:/data", "redis2-data:/tmp");
    assert!(
        !problems(&bind_elsewhere).is_empty(),
        "a volume off the data dir passed"
    );
}

#[test]
fn the_documented_node_list_builds() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _guard = runtime.enter();
    let redlock = Redlock::builder()
        .nodes(documented_nodes(COMPOSE))
        .build()
        .unwrap();
    assert_eq!(redlock.quorum(), 3);
}

#[tokio::test]
async fn compose_or_local_durable_nodes_lock_and_report_fsync() {
    // REDQUORUM_NODES set (the compose nodes): run against them; else 5 local nodes
    // configured like the compose file.
    let cluster = if std::env::var("REDQUORUM_NODES").is_ok_and(|v| !v.trim().is_empty()) {
        Cluster::from_env_or_start(5).unwrap()
    } else {
        let cluster = Cluster::start_with(5, Persistence::AofAlways).unwrap();
        for i in 0..5 {
            cluster
                .command(i, &["CONFIG", "SET", "maxmemory-policy", "noeviction"])
                .unwrap();
        }
        cluster
    };
    let redlock = Redlock::builder()
        .nodes(cluster.urls())
        .max_ttl(std::time::Duration::from_secs(60))
        .build()
        .unwrap();
    for (node, health) in redlock.health().await {
        assert_eq!(health.durability(), Durability::Fsync, "{node}: {health}");
        assert_eq!(health.evicts_lock_keys(), Some(false), "{node}: {health}");
    }
    let lock = redlock
        .lock(&format!("compose:{}", std::process::id()))
        .await
        .unwrap();
    common::assert_held_on(&cluster, &lock, cluster.len()).await;
    lock.release().await.unwrap();
}
