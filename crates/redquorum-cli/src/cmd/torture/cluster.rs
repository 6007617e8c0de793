//! `torture --cluster S`: the masters are local Redis Clusters, so the
//! nemesis moves slots and fails shards over (`migrate`, `failover`,
//! `lagging-failover`); the faults that address one server (kill, pause,
//! the proxies' network faults, clocks) and the options that shape single
//! servers stay single-server and are refused with it, as usage errors.

use redquorum_harness::FaultKind;

/// The fault kinds of `--nemesis list`, on cluster masters of `shards`
/// shards, or on single servers (`None`); a usage error otherwise.
pub(super) fn kinds(list: &str, shards: Option<usize>) -> Result<Vec<FaultKind>, String> {
    let Some(shards) = shards else {
        let kinds = FaultKind::parse_list(list).map_err(|e| format!("--nemesis: {e}"))?;
        if let Some(kind) = kinds.iter().find(|k| k.needs_cluster()) {
            return Err(format!(
                "--nemesis {}: a fault of cluster masters, it needs --cluster S",
                kind.name()
            ));
        }
        return Ok(kinds);
    };
    // With one shard there is no other shard to move a slot to.
    let all: Vec<FaultKind> = FaultKind::CLUSTER
        .into_iter()
        .filter(|k| shards > 1 || *k != FaultKind::Migrate)
        .collect();
    let kinds = FaultKind::parse_list_with(list, &all).map_err(|e| format!("--nemesis: {e}"))?;
    if let Some(kind) = kinds.iter().find(|k| !k.needs_cluster()) {
        return Err(format!(
            "--nemesis {}: it addresses one server; with --cluster the nemesis takes migrate, failover and lagging-failover (or all, or none)",
            kind.name()
        ));
    }
    if shards == 1 && kinds.contains(&FaultKind::Migrate) {
        return Err(
            "--nemesis migrate needs --cluster 2 or more (a slot moves to another shard)".into(),
        );
    }
    Ok(kinds)
}

/// Refuses, with `--cluster`, the first option of `given` (set, name) that
/// is set: each shapes single servers.
pub(super) fn refuse_with_cluster(given: &[(bool, &str)]) -> Result<(), String> {
    match given.iter().find(|(set, _)| *set) {
        Some((_, name)) => Err(format!(
            "--cluster starts its own local cluster masters; {name} shapes single servers and is not taken with it"
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_on_cluster_masters_is_their_faults_and_single_server_faults_are_refused() {
        assert_eq!(kinds("all", Some(2)).unwrap(), FaultKind::CLUSTER);
        assert_eq!(
            kinds("all", Some(1)).unwrap(),
            [FaultKind::Failover, FaultKind::LaggingFailover]
        );
        assert!(kinds("none", Some(3)).unwrap().is_empty());
        let refused = kinds("migrate,kill", Some(2)).unwrap_err();
        assert!(
            refused.contains("kill") && refused.contains("one server"),
            "{refused}"
        );
        assert!(
            kinds("migrate", Some(1))
                .unwrap_err()
                .contains("--cluster 2")
        );
    }

    #[test]
    fn cluster_faults_need_cluster() {
        assert_eq!(kinds("all", None).unwrap(), FaultKind::SAFE);
        let refused = kinds("stall,lagging-failover", None).unwrap_err();
        assert!(refused.contains("needs --cluster"), "{refused}");
        assert!(
            kinds("flood", Some(2))
                .unwrap_err()
                .contains("unknown fault")
        );
    }

    #[test]
    fn single_server_options_are_named_when_refused() {
        assert!(refuse_with_cluster(&[(false, "--nodes")]).is_ok());
        let refused =
            refuse_with_cluster(&[(false, "--nodes"), (true, "--fast-clocks")]).unwrap_err();
        assert!(refused.contains("--fast-clocks"), "{refused}");
    }
}
