//! What the key audit (`audit.rs`) found: one [`KeyLife`] per (node, key,
//! owner) life it saw.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::micros;

/// One (node, key, owner) the audit saw, first and last.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let life = redquorum_harness::KeyLife {
///     node: 1, key: "lock:r".into(), owner: "ab".into(),
///     first_seen: Duration::from_millis(10), last_seen: Duration::from_millis(900),
///     last_sent: None, age: Duration::from_millis(1500),
///     left: None, gone: None, back_after: None,
/// };
/// assert!(life.to_string().contains("lock:r"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyLife {
    /// The node's index.
    pub node: usize,
    /// The key.
    pub key: String,
    /// The owner token it held.
    pub owner: String,
    /// When first seen (history clock).
    #[serde(with = "micros")]
    pub first_seen: Duration,
    /// When last seen.
    #[serde(with = "micros")]
    pub last_seen: Duration,
    /// When the read that saw it last was sent: the key was there at some
    /// instant between this and `last_seen` (when the answer came; a slow
    /// node, proxy or audit may make that much later). `None` in histories
    /// from before the field.
    #[serde(
        with = "micros::option",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub last_sent: Option<Duration>,
    /// How long ago, at `last_seen`, its expiry was last set: its lock's
    /// TTL minus its PTTL (the run's TTL, or its owner's client group's
    /// when the run knew it: `left` is then kept too).
    #[serde(with = "micros")]
    pub age: Duration,
    /// Its PTTL at `last_seen`; `None` without an expiry, or in histories
    /// from before the field.
    #[serde(
        with = "micros::option",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub left: Option<Duration>,
    /// The first read of its node after `last_seen` that did not show it
    /// (the hold was gone by then); `None`: seen until the audit stopped or
    /// its node was not read again.
    #[serde(
        with = "micros::option",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub gone: Option<Duration>,
    /// For a hold seen again on its node after an earlier life of it there
    /// had gone: the last read of the node before `first_seen`, which did
    /// not show it (the hold came back after that); `None` for a first life.
    #[serde(
        with = "micros::option",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub back_after: Option<Duration>,
}

impl KeyLife {
    /// Dates the key by its own lock's `ttl` (its owner's client group's):
    /// its age is that TTL minus its PTTL, when the audit read one.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let ms = Duration::from_millis;
    /// let mut life = redquorum_harness::KeyLife {
    ///     node: 1, key: "lock:r".into(), owner: "ab".into(),
    ///     first_seen: ms(10), last_seen: ms(900), last_sent: None,
    ///     age: ms(0), left: Some(ms(2100)), gone: None, back_after: None,
    /// };
    /// life.date_by(ms(2500));
    /// assert_eq!(life.age, ms(400));
    /// ```
    pub fn date_by(&mut self, ttl: Duration) {
        if let Some(left) = self.left {
            self.age = ttl.saturating_sub(left);
        }
    }

    /// The latest time the key was surely there: when the read that saw it
    /// last was sent (its answer may have come much later), else
    /// `last_seen`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let life = redquorum_harness::KeyLife {
    ///     node: 0, key: "lock:r".into(), owner: "ab".into(),
    ///     first_seen: Duration::from_millis(10), last_seen: Duration::from_millis(900),
    ///     last_sent: Some(Duration::from_millis(400)),
    ///     age: Duration::from_millis(100), left: None, gone: None, back_after: None,
    /// };
    /// assert_eq!(life.surely_there_at(), Duration::from_millis(400));
    /// ```
    #[must_use]
    pub fn surely_there_at(&self) -> Duration {
        self.last_sent.unwrap_or(self.last_seen)
    }

    /// When the key was set: its last sighting less its age then.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let life = redquorum_harness::KeyLife {
    ///     node: 0, key: "lock:r".into(), owner: "ab".into(),
    ///     first_seen: Duration::from_millis(10), last_seen: Duration::from_millis(900),
    ///     last_sent: None,
    ///     age: Duration::from_millis(100), left: None, gone: None, back_after: None,
    /// };
    /// assert_eq!(life.set_at(), Duration::from_millis(800));
    /// ```
    #[must_use]
    pub fn set_at(&self) -> Duration {
        self.last_seen.saturating_sub(self.age)
    }
}

impl fmt::Display for KeyLife {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        write!(
            f,
            "{} owner {} on node {}: seen {:.1}..{:.1} ms, set {:.1} ms before the last sighting",
            self.key,
            self.owner,
            self.node,
            ms(self.first_seen),
            ms(self.last_seen),
            ms(self.age)
        )?;
        if let Some(back_after) = self.back_after {
            write!(
                f,
                ", back after a read at {:.1} ms missed it",
                ms(back_after)
            )?;
        }
        if let Some(gone) = self.gone {
            write!(f, ", gone by {:.1} ms", ms(gone))?;
        }
        Ok(())
    }
}
