//! The holds whose leases their locks keep alive (a watchdog), while they
//! run: the operator ousts one of them (the oldest renewed lately: a lock
//! that learns of a loss only at its next renewal is then late by most of
//! a renewal period) and asks the newest, of two or more, to let go
//! (`run/operator/`), the cases where a holder must hear of it from its
//! lock (`check/notices.rs`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// The kept holds running now, by client. Cheap to clone.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let ms = Duration::from_millis;
/// let holds = redquorum_harness::KeptHolds::default();
/// let first = holds.began(3, "r1", ms(1000));
/// assert_eq!(holds.to_oust(ms(2000), ms(1900)).as_deref(), Some("r1"));
/// assert_eq!(holds.to_oust(ms(500), ms(400)), None, "none settled");
/// assert_eq!(holds.newest_of_two(ms(2000)), None);
/// let second = holds.began(4, "r2", ms(1500));
/// assert_eq!(holds.newest_of_two(ms(2000)).as_deref(), Some("r2"));
/// // The newest of two is the ask's; of the others, one renewed lately
/// // goes first.
/// assert_eq!(holds.to_oust(ms(2000), ms(1900)).as_deref(), Some("r1"));
/// let third = holds.began(5, "r3", ms(1700));
/// second.renewed(ms(1950));
/// assert_eq!(holds.to_oust(ms(2000), ms(1900)).as_deref(), Some("r2"));
/// drop((first, second, third));
/// assert_eq!(holds.to_oust(ms(2000), ms(1900)), None);
/// ```
#[derive(Debug, Clone, Default)]
pub struct KeptHolds(Arc<Mutex<BTreeMap<usize, Kept>>>);

/// What the operator knows of one kept hold.
#[derive(Debug, Clone)]
struct Kept {
    resource: String,
    /// When it began to be kept (its holder listens from then).
    since: Duration,
    /// When its holder last saw its lock renew it.
    renewed: Duration,
}

/// One kept hold while it runs: dropped, it is over.
#[derive(Debug)]
#[must_use = "the hold is over when this is dropped"]
pub struct KeptHold {
    holds: KeptHolds,
    client: usize,
}

impl KeptHolds {
    /// `client`'s kept hold of `resource` began at `since`: it runs until
    /// the returned value is dropped.
    pub fn began(&self, client: usize, resource: &str, since: Duration) -> KeptHold {
        let kept = Kept {
            resource: resource.to_owned(),
            since,
            renewed: since,
        };
        self.map().insert(client, kept);
        KeptHold {
            holds: self.clone(),
            client,
        }
    }

    /// The resource of the hold to oust, among those kept since before
    /// `settled` but the newest of two or more (the ask's): the oldest
    /// renewed at or after `lately`, else the oldest; `None` when none was
    /// kept that long.
    #[must_use]
    pub fn to_oust(&self, settled: Duration, lately: Duration) -> Option<String> {
        let map = self.map();
        let kept = Self::settled(&map, settled);
        let others = match kept.as_slice() {
            [only] => std::slice::from_ref(only),
            [others @ .., _newest] => others,
            [] => &[],
        };
        (others.iter())
            .min_by_key(|kept| (kept.renewed < lately, kept.since))
            .map(|kept| kept.resource.clone())
    }

    /// The resource of the hold kept last, among those kept since before
    /// `settled`, unless it is the only one (the ousting's); `None` when
    /// fewer than two were.
    #[must_use]
    pub fn newest_of_two(&self, settled: Duration) -> Option<String> {
        let map = self.map();
        match Self::settled(&map, settled).as_slice() {
            [_, .., newest] => Some(newest.resource.clone()),
            _ => None,
        }
    }

    /// The holds kept since before `settled`, oldest first.
    fn settled(map: &BTreeMap<usize, Kept>, settled: Duration) -> Vec<&Kept> {
        let mut kept: Vec<&Kept> = (map.values()).filter(|k| k.since < settled).collect();
        kept.sort_by_key(|k| (k.since, k.resource.clone()));
        kept
    }

    fn map(&self) -> std::sync::MutexGuard<'_, BTreeMap<usize, Kept>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl KeptHold {
    /// Its holder saw its lock renew it at `at`.
    pub fn renewed(&self, at: Duration) {
        if let Some(kept) = self.holds.map().get_mut(&self.client) {
            kept.renewed = at;
        }
    }
}

impl Drop for KeptHold {
    fn drop(&mut self) {
        self.holds.map().remove(&self.client);
    }
}
