//! The key layout: where a resource's lock lives on every node.
//!
//! A resource name is user input, so no name may reach a key of another
//! resource or of the library. Every key of a resource is
//! `<prefix>{<escaped name>}<suffix>`: the name, with `%`, `{` and `}`
//! percent-encoded, sits in a hash tag that nothing else can close, and the
//! suffix after it is the library's (none for the lock itself, `:fence` for
//! the fence counter, `:slot:<i>` for a semaphore's slots). Two different names therefore never share a key,
//! whatever they contain (`x:fence`, braces, newlines, a megabyte). The
//! prefix is configuration and may not contain braces.

use fred::types::Key;

/// The suffix of a resource's fence counter key.
const FENCE_SUFFIX: &str = ":fence";
const SLOT_SUFFIX: &str = ":slot:";

/// Prefix of the release notification channels (followed by the lock key).
pub(crate) const CHANNEL_PREFIX: &str = "redquorum:released:";

/// `name` with `%`, `{` and `}` percent-encoded: it contains no `}`, so it
/// cannot end the hash tag it is put in, and decoding is unambiguous.
pub(crate) fn escape(name: &str) -> String {
    let mut escaped = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '%' => escaped.push_str("%25"),
            '{' => escaped.push_str("%7B"),
            '}' => escaped.push_str("%7D"),
            c => escaped.push(c),
        }
    }
    escaped
}

/// The keys of one resource on every node.
/// The name back from its escaped form.
pub(crate) fn unescape(escaped: &str) -> String {
    escaped
        .replace("%7D", "}")
        .replace("%7B", "{")
        .replace("%25", "%")
}

/// A SCAN pattern matching the lock key of every name that starts with
/// `name_prefix` (and, with the same start, its fence and slot keys).
pub(crate) fn scan_pattern(prefix: &str, name_prefix: &str) -> String {
    let mut pattern = String::new();
    for c in format!("{prefix}{{{}", escape(name_prefix)).chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('*');
    pattern
}

/// The resource name of `key` if it is a lock key (not a fence or slot key).
pub(crate) fn resource_of(prefix: &str, key: &str) -> Option<String> {
    let escaped = key
        .strip_prefix(prefix)?
        .strip_prefix('{')?
        .strip_suffix('}')?;
    (!escaped.contains('}')).then(|| unescape(escaped))
}

#[derive(Debug, Clone)]
pub(crate) struct ResourceKeys {
    /// The lock itself: one hash for every lock kind.
    pub(crate) lock: Key,
    /// The fence counter, shared by every kind.
    pub(crate) fence: Key,
}

impl ResourceKeys {
    pub(crate) fn new(prefix: &str, resource: &str) -> Self {
        let lock = lock_key(prefix, resource);
        let fence = format!("{lock}{FENCE_SUFFIX}");
        Self {
            lock: Key::from(lock),
            fence: Key::from(fence),
        }
    }

    /// The lock key as text (names are UTF-8, so keys are too).
    /// The lock of a semaphore's slot `index` (kinds/semaphore.rs).
    pub(crate) fn slot(&self, index: usize) -> Key {
        Key::from(format!("{}{SLOT_SUFFIX}{index}", self.lock_str()))
    }

    pub(crate) fn lock_str(&self) -> &str {
        self.lock.as_str().unwrap_or_default()
    }
}

/// The lock key of `resource`.
pub(crate) fn lock_key(prefix: &str, resource: &str) -> String {
    format!("{prefix}{{{}}}", escape(resource))
}

/// Whether `prefix` keeps the layout unambiguous (no braces).
pub(crate) fn is_valid_prefix(prefix: &str) -> bool {
    !prefix.contains(['{', '}'])
}

/// The release notification channel of a lock key.
pub(crate) fn channel(lock_key: &str) -> String {
    format!("{CHANNEL_PREFIX}{lock_key}")
}

/// The line (and, by [`channel`], the channel) on which a lock's holders
/// hear that someone asks them to let go (`Redlock::ask_release`).
pub(crate) fn ask(lock_key: &str) -> String {
    format!("{lock_key}{ASK}")
}

const ASK: &str = ":ask";
const LOST: &str = ":lost";

/// Whether `line` is one whose announcements wake it at every node's copy
/// (a loss, an ask: see `wait/notify.rs`), not once per token (a release).
pub(crate) fn wakes_at_every_copy(line: &str) -> bool {
    line.ends_with(LOST) || line.ends_with(ASK)
}

/// The line (and, by [`channel`], the channel) on which a lock's holders
/// hear that holds were taken from their holders (a force-release, a move):
/// their watchdogs then extend at once (lease/watchdog.rs).
pub(crate) fn lost(lock_key: &str) -> String {
    format!("{lock_key}{LOST}")
}

/// The line (and, by [`channel`], the channel) of a lock's news: a new
/// leader or a leader's new value (`protocol/scripts/ops/`), which free nothing,
/// so only an election's observers wait on it. Lock keys end with `}`, so
/// this is never a lock key.
pub(crate) fn news(lock_key: &str) -> String {
    format!("{lock_key}:news")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_layout_puts_the_escaped_name_in_a_hash_tag() {
        let keys = ResourceKeys::new("lock:", "orders:42");
        assert_eq!(keys.lock_str(), "lock:{orders:42}");
        assert_eq!(keys.fence.as_str(), Some("lock:{orders:42}:fence"));
        assert_eq!(keys.slot(3).as_str(), Some("lock:{orders:42}:slot:3"));
        assert_eq!(lock_key("lock:", "a}b{c%"), "lock:{a%7Db%7Bc%25}");
        assert_eq!(channel("lock:{x}"), "redquorum:released:lock:{x}");
        assert_eq!(
            channel(&news("lock:{x}")),
            "redquorum:released:lock:{x}:news"
        );
    }

    #[test]
    fn names_that_look_like_library_keys_get_their_own_keys() {
        let orders = ResourceKeys::new("lock:", "orders");
        let fence_named = ResourceKeys::new("lock:", "orders:fence");
        let brace_named = ResourceKeys::new("lock:", "orders}:fence");
        for other in [&fence_named, &brace_named] {
            assert_ne!(other.lock, orders.fence);
            assert_ne!(other.lock, orders.lock);
        }
    }

    #[test]
    fn only_prefixes_without_braces_are_valid() {
        assert!(is_valid_prefix("lock:"));
        assert!(is_valid_prefix(""));
        assert!(!is_valid_prefix("a{b"));
        assert!(!is_valid_prefix("}"));
    }

    /// Decodes an escaped name (the inverse of `escape`), for the property below.
    #[test]
    fn a_listing_matches_names_by_prefix_and_reads_back_only_lock_keys() {
        assert_eq!(scan_pattern("lock:", "jobs*"), "lock:{jobs\\**");
        assert_eq!(scan_pattern("lock:", "a}"), "lock:{a%7D*");
        assert_eq!(resource_of("lock:", "lock:{a%7Db}"), Some("a}b".to_owned()));
        assert_eq!(resource_of("lock:", "lock:{a}:fence"), None);
        assert_eq!(resource_of("lock:", "lock:{a}:slot:0"), None);
        assert_eq!(resource_of("lock:", "other:{a}"), None);
    }

    proptest! {
        #[test]
        fn distinct_names_never_share_a_key(a in ".{0,12}", b in ".{0,12}") {
            prop_assume!(a != b);
            let (ka, kb) = (ResourceKeys::new("p:", &a), ResourceKeys::new("p:", &b));
            prop_assert_ne!(&ka.lock, &kb.lock);
            prop_assert_ne!(&ka.fence, &kb.fence);
            prop_assert_ne!(&ka.lock, &kb.fence);
            prop_assert_ne!(&ka.fence, &kb.lock);
        }

        #[test]
        fn escaping_is_reversible_and_leaves_no_closing_brace(name in ".{0,24}") {
            let escaped = escape(&name);
            let closes = escaped.contains('}');
            prop_assert!(!closes, "escaped name {:?} has a closing brace", escaped);
            prop_assert_eq!(unescape(&escaped), name);
        }
    }
}
