//! A torture run, composed: nodes (with the clocks asked for), per-group
//! fault proxies (or cluster masters, `masters.rs`), the lock prepared, the
//! key audit, the nemesis, an operator if asked, the workload in client
//! groups, then the faults healed, the leak wait, the checker and what the
//! run exercised. The plan is in `plan.rs`, the lock the caller's
//! (`torture_lock.rs`), the result in `torture_run.rs`.

use std::collections::HashMap;
use std::future::Future;
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::history_file::HistoryFile;
use super::masters::Masters;
use super::operator::operate;
use super::plan::TorturePlan;
use super::store::ProtectedStore;
use super::torture_lock::TortureLock;
use super::torture_run::{
    TortureRun, TortureStopped, hand_overs_untested, host_clock_notes, lag_note,
    lock_delay_untested, operator_untested, void_by_host_clock,
};
use super::workload::run_workload_groups;
use crate::check::Exercised;
use crate::evidence::{
    AuditConfig, History, Holder, KeyLife, LockKeys, OPERATOR_GROUP, OperatorLog, Session,
};
use crate::faults::{ClientPauser, FaultKind, FaultLog};
use crate::nodes::Cluster;

/// Distinct key prefixes for the runs of one process (a mutant sweep runs many).
static RUNS: AtomicU64 = AtomicU64::new(0);

impl<L: TortureLock> TorturePlan<L> {
    /// Runs the plan to its verdict. Unless `quiet`, a banner, progress
    /// lines every 5 s (on a terminal) and the leak wait are said on
    /// stderr.
    ///
    /// # Errors
    ///
    /// [`TortureStopped::Setup`]: nodes, proxies, the store or the lock
    /// could not be set up.
    ///
    /// # Cancel safety
    ///
    /// Dropping it stops the run: the nemesis heals and the local nodes
    /// are killed as they are dropped.
    pub async fn execute(&self) -> Result<TortureRun, TortureStopped> {
        self.execute_until(std::future::pending::<()>()).await
    }

    /// As [`execute`](Self::execute), stopped with
    /// [`TortureStopped::Interrupted`] if `interrupt` completes before the
    /// workload ends (a command line passes Ctrl-C).
    ///
    /// # Errors
    ///
    /// As [`execute`](Self::execute), and the interrupt.
    ///
    /// # Cancel safety
    ///
    /// As [`execute`](Self::execute).
    pub async fn execute_until(
        &self,
        interrupt: impl Future,
    ) -> Result<TortureRun, TortureStopped> {
        let mut notes = Vec::new();
        let masters = Masters::start(self, &mut notes).map_err(TortureStopped::Setup)?;
        let local_store = match &self.store {
            Some(_) => None,
            None => Some(
                Cluster::start(1)
                    .map_err(|e| TortureStopped::Setup(format!("protected store: {e}")))?,
            ),
        };
        let store_addr = self
            .store
            .clone()
            .or_else(|| local_store.as_ref().map(|c| c.host_port(0)))
            .unwrap_or_default();
        let run = RUNS.fetch_add(1, Ordering::SeqCst);
        let prefix = format!("redquorum-torture:{}:{run}:", std::process::id());
        let keys = LockKeys::prefixed(&prefix);
        // Built once here so a bad configuration is an error, not a panic in a group.
        L::prepare(self, masters.urls_for(0), &prefix)
            .await
            .map_err(TortureStopped::Setup)?;
        let workload = self.workload();
        let store = ProtectedStore::new(&store_addr);
        for resource in &workload.names() {
            store
                .reset_blocking(resource)
                .map_err(|e| TortureStopped::Setup(format!("protected store: {e}")))?;
        }
        if !self.quiet {
            self.banner(&masters);
        }
        let history = History::new();
        let started = Instant::now();
        let pauser = ClientPauser::default();
        let mut audit_config = AuditConfig::new(self.ttl);
        audit_config.keys = keys.clone();
        // Remember every hold seen, so that hold-removed and hold-came-back
        // follow a brief holder's hold too, not only those seen older than
        // a TTL / 4 (the lives are a few thousand a minute).
        audit_config.min_age = Duration::ZERO;
        audit_config.epoch = history.epoch();
        audit_config.nudge = history.audit_nudge().clone();
        let audit = masters.audit(audit_config);
        let nemesis = (!self.kinds.is_empty())
            .then(|| masters.nemesis(self.nemesis(&keys, &prefix, &pauser, history.epoch())));
        let urls: Vec<Vec<String>> = (0..masters.groups()).map(|g| masters.urls_for(g)).collect();
        // The operator goes through one group's proxies (single
        // servers): its faults hit it too.
        let operator = if self.operator.is_idle() {
            None
        } else {
            Some(
                L::operator(self, urls[OPERATOR_GROUP].clone(), &prefix)
                    .map_err(TortureStopped::Setup)?,
            )
        };
        let plan = self.clone();
        let make = move |group: usize| L::locker(&plan, group, urls[group].clone(), &prefix);
        let finished = Arc::new(AtomicBool::new(false));
        let quiet = self.quiet || !std::io::stderr().is_terminal();
        let progress = tokio::spawn(progress(
            history.clone(),
            started,
            self.duration,
            finished.clone(),
            quiet,
        ));
        let operator_log = OperatorLog::default();
        let operator = operator.map(|operator| {
            tokio::spawn(operate(
                operator,
                workload.resources.clone(),
                self.operator,
                history.clone(),
                operator_log.clone(),
                finished.clone(),
            ))
        });
        let recorded = history.clone();
        let history = tokio::select! {
            history = run_workload_groups(history, self.groups, make, store.clone(), &workload, &pauser) => history,
            _ = interrupt => {
                // Dropping the nemesis resumes any paused node; dropping the
                // cluster kills its nodes: nothing is left behind.
                return Err(TortureStopped::Interrupted {
                    sessions: recorded.len(),
                });
            }
        };
        finished.store(true, Ordering::SeqCst);
        let _ = progress.await;
        if let Some(operator) = operator {
            let _ = operator.await;
        }
        let faults: FaultLog = match nemesis {
            Some(nemesis) => tokio::task::spawn_blocking(move || nemesis.stop())
                .await
                .unwrap_or_default(),
            None => FaultLog::default(),
        };
        masters.heal();
        if !self.quiet {
            eprintln!("torture: faults healed; waiting for the lock keys to expire");
        }
        // The TTL, plus 3 s for commands still in flight (a chunk the proxy was
        // delaying when healed lands up to its max latency later).
        let within = self.ttl + Duration::from_secs(3);
        let (leaked, masters, restarted) = tokio::task::spawn_blocking(move || {
            // A node a fault left down (a failed restart) is started again,
            // so the leak check can read it.
            let restarted = masters.restart_down();
            (masters.lock_keys_after(&keys, within), masters, restarted)
        })
        .await
        .map_err(|e| TortureStopped::Setup(e.to_string()))?;
        notes.extend(restarted);
        let mut unchecked = None;
        let leaked = leaked.unwrap_or_else(|e| {
            unchecked = Some(format!("the leak check could not read every node: {e}"));
            Vec::new()
        });
        let (mut keys_seen, backing) =
            tokio::task::spawn_blocking(move || audit.stop_with_backing())
                .await
                .unwrap_or_default();
        let sessions = history.sessions();
        let group_ttls: Vec<Duration> = (0..self.groups).map(|g| L::group_ttl(self, g)).collect();
        date_keys(&mut keys_seen, &sessions, &group_ttls);
        let protected = store
            .values(&workload.names())
            .map_err(|e| TortureStopped::Setup(format!("protected store: {e}")))?;
        let mut info = self.info(masters.len(), self.lock.name());
        info.configurations = (0..self.groups)
            .map(|group| L::configuration(self, group))
            .collect();
        if info.configurations.iter().all(String::is_empty) {
            info.configurations.clear();
        }
        if group_ttls.iter().any(|ttl| *ttl != self.ttl) {
            info.group_ttls_ms = group_ttls.iter().map(|t| t.as_millis() as u64).collect();
        }
        let file = HistoryFile {
            info,
            sessions,
            faults: faults.events.clone(),
            keys: keys_seen,
            operator: operator_log.calls(),
            backing,
            leaked,
            protected,
            lags: {
                let mut lags = history.lags();
                lags.extend(masters.proxy_lags(history.epoch()));
                lags.sort_by_key(|lag| lag.at);
                lags
            },
            // Taken after the leak check: a step during it counts too.
            host_steps: history.host_steps(),
        };
        let verdict = file.check();
        let exercised = Exercised::measure(&file.sessions, &file.faults);
        let struck: Vec<FaultKind> = self
            .kinds
            .iter()
            .copied()
            .filter(|k| {
                !faults
                    .errors
                    .iter()
                    .any(|e| e.starts_with(&format!("{} skipped", k.name())))
            })
            .collect();
        let holders: Vec<Holder> = self
            .holders
            .iter()
            .filter(|(_, w)| *w > 0)
            .map(|(h, _)| *h)
            .collect();
        let mut vacuous = exercised.vacuous(self.duration, &struck, &holders);
        vacuous.extend(unchecked);
        vacuous.extend(lock_delay_untested(&file));
        vacuous.extend(operator_untested(&file));
        vacuous.extend(hand_overs_untested(&file, &exercised));
        let mut fault_errors = notes;
        fault_errors.extend(faults.errors);
        fault_errors.extend(faults.notes);
        fault_errors.extend(lag_note(&file.lags));
        fault_errors.extend(host_clock_notes(&file));
        Ok(TortureRun {
            void: void_by_host_clock(&file, &verdict),
            file,
            verdict,
            exercised,
            vacuous,
            fault_errors,
            elapsed: started.elapsed(),
        })
    }

    /// The line on stderr that says what is about to run.
    fn banner(&self, masters: &Masters) {
        eprintln!(
            "torture: {}, {} clients in {} groups × {} resources{}, ttl {:?}, nemesis {}, for {:?}{}",
            masters.describe(),
            self.clients,
            self.groups,
            self.resources,
            if self.own_name_chance > 0.0 {
                format!(
                    " (and a name of each client's own, {:.0}% of sessions)",
                    self.own_name_chance * 100.0
                )
            } else {
                String::new()
            },
            self.ttl,
            if self.kinds.is_empty() {
                "none".to_owned()
            } else {
                self.kinds
                    .iter()
                    .map(|k| k.name())
                    .collect::<Vec<_>>()
                    .join(",")
            },
            self.duration,
            self.mutant
                .as_ref()
                .map_or(String::new(), |m| format!(", mutant {m}")),
        );
    }
}

/// A line on stderr every few seconds, so a long run shows it is alive.
async fn progress(
    history: History,
    started: Instant,
    duration: Duration,
    finished: Arc<AtomicBool>,
    quiet: bool,
) {
    let every = Duration::from_secs(5);
    let mut next = started + every;
    while !finished.load(Ordering::SeqCst) {
        if !quiet && Instant::now() >= next {
            let elapsed = started.elapsed().min(duration).as_secs();
            eprintln!(
                "torture: {elapsed}s / {}s, {} sessions",
                duration.as_secs(),
                history.len()
            );
            next += every;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Dates each key the audit saw by its owner's client group's TTL (the
/// audit read only PTTLs, and dated them by the run's): a key of a group
/// with a longer TTL would look younger than it is. Keys of owners no
/// session names keep the run's dating.
fn date_keys(keys: &mut [KeyLife], sessions: &[Session], group_ttls: &[Duration]) {
    let mut group_of: HashMap<&str, usize> = HashMap::new();
    for session in sessions {
        for token in session.tried.iter().chain(std::iter::once(&session.owner)) {
            group_of.insert(token.as_str(), session.group);
        }
    }
    for key in keys {
        if let Some(ttl) = group_of
            .get(key.owner.as_str())
            .and_then(|&g| group_ttls.get(g))
        {
            key.date_by(*ttl);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_is_dated_by_its_owners_group_ttl() {
        let ms = Duration::from_millis;
        let key = |owner: &str| KeyLife {
            node: 0,
            key: "p:{r}".into(),
            owner: owner.into(),
            first_seen: ms(0),
            last_seen: ms(900),
            last_sent: None,
            // As the audit dated it, by the run's TTL of 2000 ms.
            age: ms(0),
            left: Some(ms(2100)),
            gone: None,
            back_after: None,
        };
        let mut held = Session::refused(0, "r", ms(0), "contended");
        held.owner = "held".into();
        let mut refused = Session::refused(1, "r", ms(0), "contended");
        refused.group = 1;
        refused.tried = vec!["tried".into()];
        let mut keys = vec![key("held"), key("tried"), key("nobody")];
        date_keys(&mut keys, &[held, refused], &[ms(2500), ms(2000)]);
        let ages: Vec<Duration> = keys.iter().map(|k| k.age).collect();
        // Group 0's 2500 ms TTL; group 1's 2000 ms (the PTTL is above it,
        // so no younger than new); an owner no session names: as read.
        assert_eq!(ages, [ms(400), ms(0), ms(0)]);
    }
}
