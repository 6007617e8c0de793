//! What the proxies see of scripts and NOSCRIPT: the replies that say
//! NOSCRIPT, what clients send after them (a call again as `EVAL`, or a
//! `SCRIPT LOAD` alone), the flushes the proxies aimed at calls in
//! flight ([`ProxyMode::FlushScripts`](super::ProxyMode::FlushScripts)),
//! and the script bodies clients sent, which a proxy loads back itself.
//! Read from the bytes, so it holds for any client library.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use super::script_body::BodyCatcher;

/// Distinct script bodies a proxy keeps (one per client library, at most).
const BODIES_KEPT: usize = 4;

/// A reply that says the script is not cached.
const NOSCRIPT: &[u8] = b"-NOSCRIPT";
/// A call by digest, as a RESP bulk string.
pub(super) const EVALSHA: &[u8] = b"$7\r\nEVALSHA\r\n";
/// A call with the script's body (the usual answer to NOSCRIPT).
const EVAL: &[u8] = b"$4\r\nEVAL\r\n";
/// A script loaded without calling it.
const LOAD: &[u8] = b"$6\r\nSCRIPT\r\n$4\r\nLOAD\r\n";

/// Counts of one run's script traffic through the proxies.
///
/// # Examples
///
/// ```
/// let counts = redquorum_harness::ScriptCounts::default();
/// assert!(counts.to_string().starts_with("0 NOSCRIPT answers"));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScriptCounts {
    /// Replies that said NOSCRIPT.
    pub noscript: u64,
    /// Calls sent with the script's body (`EVAL`): after a NOSCRIPT, the
    /// call's operations sent again, all of them or those nothing overtook.
    pub evals: u64,
    /// `SCRIPT LOAD`s: after a NOSCRIPT, the script reloaded with nothing
    /// sent again.
    pub loads: u64,
    /// `SCRIPT FLUSH`es a proxy sent right before forwarding a call by digest.
    pub flushes: u64,
    /// Of those, the flushes aimed at calls of twice the connection's
    /// smallest call or more (a batch of operations: `aim.rs`).
    pub wide: u64,
    /// NOSCRIPT answers held back until the proxy had loaded the scripts
    /// back (`SCRIPT LOAD` of the bodies clients sent before): the client's
    /// next calls, an unwind sent after an acquire that said NOSCRIPT among
    /// them, find the script and run, ahead of any late resend.
    pub reloads: u64,
    /// NOSCRIPT answers to a batch a flush struck, held until the
    /// client's next call had gone out behind it (`overtake.rs`): the
    /// client must split the batch, resending only what cannot create a hold.
    pub overtaken: u64,
    /// The longest the proxy held a NOSCRIPT answer back while it loaded
    /// the scripts back, in microseconds (every answer behind it waited too).
    pub longest_hold_us: u64,
}

impl ScriptCounts {
    /// The sum of two counts.
    #[must_use]
    pub fn plus(self, other: ScriptCounts) -> ScriptCounts {
        ScriptCounts {
            noscript: self.noscript + other.noscript,
            evals: self.evals + other.evals,
            loads: self.loads + other.loads,
            flushes: self.flushes + other.flushes,
            wide: self.wide + other.wide,
            reloads: self.reloads + other.reloads,
            overtaken: self.overtaken + other.overtaken,
            longest_hold_us: self.longest_hold_us.max(other.longest_hold_us),
        }
    }
}

impl fmt::Display for ScriptCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} NOSCRIPT answers ({} after the proxy loaded the script back); {} calls sent again as EVAL, {} script loads with nothing sent again; {} flushes aimed at calls in flight ({} at calls carrying several calls' worth, {} of whose answers reached the client after its next call); answers held back {:.1} ms at most",
            self.noscript,
            self.reloads,
            self.evals,
            self.loads,
            self.flushes,
            self.wide,
            self.overtaken,
            self.longest_hold_us as f64 / 1000.0
        )
    }
}

/// An answer held back by the proxy (see [`ScriptTally::hold`]): measured
/// and counted as under way until dropped.
pub(super) struct Hold<'a> {
    tally: &'a ScriptTally,
    since: std::time::Instant,
}

impl Drop for Hold<'_> {
    fn drop(&mut self) {
        let held = self.since.elapsed();
        let us = u64::try_from(held.as_micros()).unwrap_or(u64::MAX);
        let tally = self.tally;
        tally.longest_hold_us.fetch_max(us, Ordering::SeqCst);
        tally.recent_hold_us.fetch_max(us, Ordering::SeqCst);
        tally.holding.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One proxy's counters, shared by its connections.
#[derive(Debug, Default)]
pub(super) struct ScriptTally {
    noscript: AtomicU64,
    evals: AtomicU64,
    loads: AtomicU64,
    flushes: AtomicU64,
    wide: AtomicU64,
    reloads: AtomicU64,
    overtaken: AtomicU64,
    longest_hold_us: AtomicU64,
    /// The longest hold since the last [`ScriptTally::take_hold`].
    recent_hold_us: AtomicU64,
    /// Holds under way.
    holding: AtomicU64,
    /// The script bodies clients sent, newest last.
    bodies: Mutex<Vec<Vec<u8>>>,
}

impl ScriptTally {
    /// The counts so far.
    pub(super) fn counts(&self) -> ScriptCounts {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ScriptCounts {
            noscript: get(&self.noscript),
            evals: get(&self.evals),
            loads: get(&self.loads),
            flushes: get(&self.flushes),
            wide: get(&self.wide),
            reloads: get(&self.reloads),
            overtaken: get(&self.overtaken),
            longest_hold_us: get(&self.longest_hold_us),
        }
    }

    /// An answer is held back from now until the guard drops (also when
    /// its connection's task is dropped mid-hold).
    pub(super) fn hold(&self) -> Hold<'_> {
        self.holding.fetch_add(1, Ordering::SeqCst);
        Hold {
            tally: self,
            since: std::time::Instant::now(),
        }
    }

    /// The longest hold since the last call, once no hold is under way
    /// (waiting for one at most `within`; `None` if one still is).
    pub(super) fn take_hold(&self, within: Duration) -> Option<Duration> {
        let until = std::time::Instant::now() + within;
        while self.holding.load(Ordering::SeqCst) > 0 {
            if std::time::Instant::now() >= until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let us = self.recent_hold_us.swap(0, Ordering::SeqCst);
        Some(Duration::from_micros(us))
    }

    /// One NOSCRIPT answer held back until the scripts were loaded back.
    pub(super) fn reloaded(&self) {
        self.reloads.fetch_add(1, Ordering::Relaxed);
    }

    /// A batch's NOSCRIPT answer held for the client's next call
    /// (`passed`: it went out before the answer did).
    pub(super) fn batch_answer_held(&self, passed: bool) {
        self.overtaken
            .fetch_add(u64::from(passed), Ordering::Relaxed);
    }

    /// The script bodies clients sent (at most [`BODIES_KEPT`]).
    pub(super) fn bodies(&self) -> Vec<Vec<u8>> {
        self.bodies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn keep(&self, body: Vec<u8>) {
        let mut bodies = self.bodies.lock().unwrap_or_else(PoisonError::into_inner);
        if !bodies.contains(&body) {
            if bodies.len() == BODIES_KEPT {
                bodies.remove(0);
            }
            bodies.push(body);
        }
    }

    /// One flush sent (`wide`: aimed at a call of several calls' worth).
    pub(super) fn flushed(&self, wide: bool) {
        self.flushes.fetch_add(1, Ordering::Relaxed);
        self.wide.fetch_add(u64::from(wide), Ordering::Relaxed);
    }
}

/// One direction of one connection, read for the tally.
#[derive(Debug)]
pub(super) struct Watch {
    replies: bool,
    counters: Vec<(&'static [u8], StreamCount)>,
    bodies: BodyCatcher,
}

/// What one chunk carried, of what a proxy acts on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Seen {
    /// (The end of) a call by digest (requests).
    pub(super) by_digest: bool,
    /// A NOSCRIPT answer (replies).
    pub(super) noscript: bool,
}

impl Watch {
    /// For the replies (node to client), or the requests.
    pub(super) fn new(replies: bool) -> Self {
        let needles: &[&'static [u8]] = if replies {
            &[NOSCRIPT]
        } else {
            &[EVAL, LOAD, EVALSHA]
        };
        Self {
            replies,
            counters: needles.iter().map(|n| (*n, StreamCount::new(n))).collect(),
            bodies: BodyCatcher::default(),
        }
    }

    /// Counts `chunk` into `tally` and keeps the script bodies it ends.
    pub(super) fn see(&mut self, chunk: &[u8], tally: &ScriptTally) -> Seen {
        let mut seen = Seen::default();
        for (needle, counter) in &mut self.counters {
            let n = counter.feed(chunk);
            let into = match *needle {
                _ if self.replies => {
                    seen.noscript = n > 0;
                    &tally.noscript
                }
                EVAL => &tally.evals,
                LOAD => &tally.loads,
                _ => {
                    seen.by_digest = n > 0;
                    continue;
                }
            };
            into.fetch_add(n, Ordering::Relaxed);
        }
        if !self.replies {
            for body in self.bodies.feed(chunk) {
                tally.keep(body);
            }
        }
        seen
    }
}

/// Occurrences of a needle (ASCII case ignored) in a stream fed chunk by
/// chunk, counted once each even when a chunk boundary splits one.
#[derive(Debug)]
pub(super) struct StreamCount {
    needle: &'static [u8],
    /// The end of what was fed, shorter than the needle: a match may start in it.
    tail: Vec<u8>,
}

impl StreamCount {
    pub(super) fn new(needle: &'static [u8]) -> Self {
        Self {
            needle,
            tail: Vec::new(),
        }
    }

    /// The matches that end in `chunk`.
    pub(super) fn feed(&mut self, chunk: &[u8]) -> u64 {
        let width = self.needle.len();
        let mut seen = std::mem::take(&mut self.tail);
        seen.extend_from_slice(chunk);
        let found = seen
            .windows(width)
            .filter(|w| w.eq_ignore_ascii_case(self.needle))
            .count() as u64;
        let keep = seen.len().min(width - 1);
        self.tail = seen.split_off(seen.len() - keep);
        found
    }
}

#[cfg(test)]
#[path = "script_tally_tests.rs"]
mod tests;
