//! Which calls [`ProxyMode::FlushScripts`](super::ProxyMode::FlushScripts)
//! aims its flushes at, on one connection: one call by digest in three
//! (the calls between find the script a resend reloaded, so NOSCRIPT
//! answers race calls that run), and every call that carries at least
//! twice the keys and arguments of the smallest call by digest seen on the
//! connection: a batch of several operations from a client that groups
//! them into one call (group commit), or a call on many keys. Such a call's
//! NOSCRIPT answer is the one the client must split back into an answer
//! per operation, often with its next call already sent behind it (the
//! resend path that rarely runs otherwise). Read from the request bytes
//! (`*N` then `EVALSHA`), so it holds for any client library.

/// The argument count of a call by digest follows its array header: `*N`
/// then this (`EVALSHA`, the digest and the key count are 3 of the `N`).
const CALL_BY_DIGEST: &[u8] = b"\r\n$7\r\nEVALSHA\r\n";

/// Why a chunk's flush is aimed, if it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Aimed {
    /// The connection's call by digest in three.
    OneInThree,
    /// A call of twice the smallest call's keys and arguments or more.
    Wide,
}

/// One connection's aim (its requests direction).
#[derive(Debug, Default)]
pub(super) struct Aim {
    /// Chunks that carried (the end of) a call by digest.
    calls: u64,
    /// The fewest keys and arguments of a call by digest seen so far.
    smallest: Option<u64>,
}

impl Aim {
    /// Whether the flush mode aims at the call(s) by digest in `chunk`
    /// (`by_digest`: the tally saw one end in it), and why.
    pub(super) fn aimed(&mut self, chunk: &[u8], by_digest: bool) -> Option<Aimed> {
        let mut wide = false;
        for size in call_sizes(chunk) {
            // Strictly larger too: calls of no keys or arguments are not wide.
            wide |= self
                .smallest
                .is_some_and(|least| size > least && size >= 2 * least);
            self.smallest = Some(self.smallest.map_or(size, |least| least.min(size)));
        }
        if !by_digest {
            return None;
        }
        self.calls += 1;
        if wide {
            Some(Aimed::Wide)
        } else {
            (self.calls % 3 == 1).then_some(Aimed::OneInThree)
        }
    }
}

/// The keys and arguments of each call by digest whose header starts in
/// `chunk` (a header cut off by the chunk's start is not sized: such a
/// call counts as small).
pub(super) fn call_sizes(chunk: &[u8]) -> impl Iterator<Item = u64> + '_ {
    let width = CALL_BY_DIGEST.len();
    (0..chunk.len().saturating_sub(width - 1))
        .filter(move |&at| chunk[at..at + width].eq_ignore_ascii_case(CALL_BY_DIGEST))
        .filter_map(move |at| {
            let head = &chunk[..at];
            let digits = head.iter().rev().take_while(|b| b.is_ascii_digit()).count();
            let star = head.len().checked_sub(digits + 1)?;
            if digits == 0 || head[star] != b'*' {
                return None;
            }
            let count: u64 = std::str::from_utf8(&head[star + 1..]).ok()?.parse().ok()?;
            count.checked_sub(3)
        })
}

#[cfg(test)]
#[path = "aim_tests.rs"]
mod tests;
