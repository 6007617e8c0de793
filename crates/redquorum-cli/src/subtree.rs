//! A process's descendants, as Linux's `/proc` lists them, and signalling them all.
//!
//! `/proc/<pid>/task/<tid>/children` names the children of one thread (a
//! child belongs to the thread that forked it, so every thread is read).
//! Walking those files recursively finds the whole subtree below a process,
//! including the orphans that a child subreaper adopted. A process counts as
//! long as any of its threads can run: one whose main thread exited
//! (`pthread_exit`) shows as a zombie (`Zl`) while its other threads run on,
//! so each thread's state is read. Processes whose every thread has exited
//! are left out: they only wait to be reaped.
//!
//! The list is a snapshot: a process may fork after it was read, or exit.
//! Callers that must leave nothing alive signal in rounds until a walk finds
//! nothing. A pid read here could in theory be reused before it is signalled,
//! but Linux hands out pids cyclically, so that needs the whole pid space to
//! wrap around in the microseconds between the read and the signal.

use std::fs;

use nix::sys::signal::{self, Signal};
use nix::unistd::Pid;

/// Bound on one walk, so a fork bomb or odd `/proc` data cannot make it endless.
const MAX_PROCESSES: usize = 100_000;

/// The live descendants of `root` (a thread of each still able to run),
/// parents before their children.
pub(crate) fn live_descendants(root: Pid) -> Vec<Pid> {
    let mut found = Vec::new();
    let mut next = 0;
    let mut parents = vec![root];
    // Bounded by MAX_PROCESSES: each round reads the children of one process.
    while let Some(parent) = parents.get(next).copied() {
        next += 1;
        for child in children(parent) {
            if found.len() >= MAX_PROCESSES {
                return found;
            }
            if has_exited(child) {
                continue;
            }
            found.push(child);
            parents.push(child);
        }
    }
    found
}

/// Sends `sig` to every live descendant of `root` (not to `root`); returns how many were sent.
pub(crate) fn signal_descendants(root: Pid, sig: Signal) -> usize {
    live_descendants(root)
        .into_iter()
        // A process that exited since the walk is simply not there any more.
        .filter(|&pid| signal::kill(pid, sig).is_ok())
        .count()
}

/// The children of every thread of `pid` (none if it has exited).
fn children(pid: Pid) -> Vec<Pid> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .map(Pid::from_raw)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// True when no thread of `pid` can run any more: each one has exited and
/// the process waits to be reaped, or it is gone. The process's own state is
/// its main thread's, which may have exited while others run (`Zl`).
fn has_exited(pid: Pid) -> bool {
    let Ok(threads) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return true;
    };
    // A thread that ended between the listing and the read is not running.
    !threads.flatten().any(|thread| {
        fs::read_to_string(thread.path().join("stat")).is_ok_and(|stat| !is_exited_state(&stat))
    })
}

/// True when a `/proc/.../stat` line says its thread has exited (`Z`, `X`)
/// or cannot be read.
fn is_exited_state(stat: &str) -> bool {
    // The state follows the command name, which is in parentheses and may hold anything.
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    matches!(state, Some('Z' | 'X') | None)
}

#[cfg(test)]
#[path = "../tests/fixtures/main_thread_exits.rs"]
mod main_thread_exits;

#[cfg(test)]
mod tests {
    use super::main_thread_exits::build_main_thread_exits;
    use super::*;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    fn me() -> Pid {
        Pid::from_raw(i32::try_from(std::process::id()).unwrap())
    }

    #[test]
    fn a_grandchild_is_found_and_killed_with_its_parent() {
        // sh starts a background sleep (our grandchild), prints its pid, then waits.
        let mut sh = Command::new("sh")
            .args(["-c", "sleep 60 & echo $!; wait"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(sh.stdout.as_mut().unwrap()),
            &mut line,
        )
        .unwrap();
        let grandchild = Pid::from_raw(line.trim().parse().unwrap());
        let sh_pid = Pid::from_raw(i32::try_from(sh.id()).unwrap());

        let below_me = live_descendants(me());
        assert!(below_me.contains(&sh_pid), "{below_me:?}");
        assert!(below_me.contains(&grandchild), "{below_me:?}");
        let below_sh = live_descendants(sh_pid);
        assert_eq!(below_sh, vec![grandchild]);

        assert_eq!(signal_descendants(sh_pid, Signal::SIGKILL), 1);
        let start = Instant::now();
        // Bounded: the sleep dies at once on SIGKILL; sh then reaps it and exits.
        let status = loop {
            if let Some(status) = sh.try_wait().unwrap() {
                break status;
            }
            assert!(start.elapsed() < Duration::from_secs(10), "sh never ended");
            std::thread::sleep(Duration::from_millis(5));
        };
        assert!(status.success(), "{status}");
        assert!(!live_descendants(me()).contains(&grandchild));
    }

    struct KillOnDrop(Pid);

    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = signal::kill(self.0, Signal::SIGKILL);
        }
    }

    /// The state letters of `pid`'s threads (empty once it is gone).
    fn thread_states(pid: Pid) -> Vec<char> {
        let Ok(threads) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return Vec::new();
        };
        threads
            .flatten()
            .filter_map(|t| std::fs::read_to_string(t.path().join("stat")).ok())
            .filter_map(|stat| stat.rsplit_once(')')?.1.trim_start().chars().next())
            .collect()
    }

    #[test]
    fn a_process_whose_main_thread_exited_counts_while_another_thread_runs() {
        let dir = tempfile::tempdir().unwrap();
        let program = build_main_thread_exits(dir.path());
        let mut child = Command::new(&program)
            .arg(dir.path().join("log"))
            .spawn()
            .unwrap();
        let pid = Pid::from_raw(i32::try_from(child.id()).unwrap());
        // Killed however the test ends: its thread would otherwise write on.
        let _kill = KillOnDrop(pid);
        let start = Instant::now();
        // Bounded: the main thread exits right after starting the writer.
        while thread_states(pid).first().is_none_or(|&main| main != 'Z') {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the main thread never exited: {:?}",
                thread_states(pid)
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let states = thread_states(pid);
        assert!(
            states.iter().any(|&s| s != 'Z'),
            "no thread runs: {states:?}"
        );

        assert!(live_descendants(me()).contains(&pid), "{states:?}");
        // Only this test's child: other tests' children are below this process too.
        signal::kill(pid, Signal::SIGKILL).unwrap();
        // SIGKILL ends every thread: the process can then be reaped.
        let status = child.wait().unwrap();
        assert!(!status.success(), "{status}");
        assert!(!live_descendants(me()).contains(&pid));
    }
}
