//! The release tokens a line of waiters saw last: every node announces a
//! release, and a line counts each release once (wait/waiters.rs).

/// How many recent release tokens a line remembers, to count each release
/// once although every node sends its own copy.
const RECENT: usize = 4;

/// The last [`RECENT`] release tokens seen, oldest overwritten first.
#[derive(Default)]
pub(crate) struct Recent {
    tokens: [Option<Box<[u8]>>; RECENT],
    next: usize,
}

impl Recent {
    /// Records `token`; false when it was seen recently (another node's copy).
    pub(crate) fn is_new(&mut self, token: &[u8]) -> bool {
        if self.tokens.iter().flatten().any(|t| &t[..] == token) {
            return false;
        }
        self.tokens[self.next] = Some(token.into());
        self.next = (self.next + 1) % RECENT;
        true
    }
}
