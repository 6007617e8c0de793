//! Which owner tokens the recent calls on a connection created holds for:
//! what a release sent again after a NOSCRIPT answer must not overtake.
//!
//! A waiting writer tries again with the same token (its intent is stored
//! under it), so its next attempt's acquire can go out while the last
//! attempt's unwind still waits for its NOSCRIPT answer. Sent again then,
//! the unwind would land after that acquire and remove the new hold, which
//! its holder believes it has on a quorum. Such a release is not sent again:
//! the later acquire has taken over whatever the earlier attempt left.

use std::collections::VecDeque;

use fred::types::Value;

/// Calls with holds remembered; a call older than those is treated as
/// followed by a hold of every token (the release then stays unsent: at
/// worst a key lives to its TTL, never a hold removed).
const REMEMBERED: usize = 256;

/// The tokens that calls made holds for, by call number (oldest first).
#[derive(Debug, Default)]
pub(crate) struct HoldsSent {
    calls: VecDeque<(u64, Vec<Value>)>,
    /// The highest call number forgotten (0: none).
    forgotten_through: u64,
}

impl HoldsSent {
    /// Call `seq` made holds for `tokens` (nothing is kept when none).
    pub(crate) fn record(&mut self, seq: u64, tokens: Vec<Value>) {
        if tokens.is_empty() {
            return;
        }
        if self.calls.len() == REMEMBERED
            && let Some((forgotten, _)) = self.calls.pop_front()
        {
            self.forgotten_through = forgotten;
        }
        self.calls.push_back((seq, tokens));
    }

    /// Whether a call after call `seq` may have made a hold for `token`.
    pub(crate) fn after(&self, seq: u64, token: &Value) -> bool {
        self.forgotten_through > seq
            || (self.calls.iter().rev())
                .take_while(|(number, _)| *number > seq)
                .any(|(_, tokens)| tokens.contains(token))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(name: &'static str) -> Value {
        Value::from_static_str(name)
    }

    #[test]
    fn only_a_later_call_holding_the_same_token_counts() {
        let mut sent = HoldsSent::default();
        sent.record(3, vec![token("a")]);
        sent.record(5, vec![token("b"), token("c")]);
        sent.record(6, Vec::new());
        assert!(sent.after(4, &token("c")));
        assert!(sent.after(2, &token("a")));
        assert!(!sent.after(3, &token("a")), "its own call, not a later one");
        assert!(!sent.after(4, &token("a")));
        assert!(!sent.after(1, &token("d")));
    }

    #[test]
    fn a_call_older_than_the_memory_counts_as_followed_by_every_token() {
        let mut sent = HoldsSent::default();
        for seq in 1..=(REMEMBERED as u64 + 1) {
            sent.record(seq, vec![token("a")]);
        }
        assert!(sent.after(0, &token("z")), "forgotten: assume the worst");
        assert!(!sent.after(REMEMBERED as u64 + 1, &token("z")));
    }
}
