//! Which lock looks stuck to the operator: what its inspections saw, per
//! resource, and since when each named holder has been named without a
//! break. An operator force-releases a lock that has been held for long
//! (a holder that looks hung), not one picked blindly: so the run's
//! force-releases oust the long holds (renewing holders, long `exec`
//! commands, leaders), whose holders go on working and extending after
//! they are ousted, the case a force-release must be safe against.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// One resource's last inspection: when, and each holder it named with
/// the start of its unbroken run of sightings.
#[derive(Debug, Clone, Default)]
struct Seen {
    at: Duration,
    holders: Vec<(String, Duration)>,
}

/// The operator's inspections, per resource.
#[derive(Debug, Default)]
pub(super) struct Sightings(Mutex<HashMap<String, Seen>>);

impl Sightings {
    /// An inspection of `resource` made at `at` named `holders`: a holder
    /// named again keeps its start, a new one starts at `at`.
    pub(super) fn saw(&self, resource: &str, holders: &[String], at: Duration) {
        let mut map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let seen = map.entry(resource.to_owned()).or_default();
        let since = |token: &String| {
            seen.holders
                .iter()
                .find(|(t, _)| t == token)
                .map_or(at, |(_, since)| *since)
        };
        let holders = holders.iter().map(|t| (t.clone(), since(t))).collect();
        *seen = Seen { at, holders };
    }

    /// The resource whose holder has been named longest, over two
    /// inspections at least (a lock that looks stuck), forgotten here (the
    /// force-release about to be made ousts it); `None` when no holder was
    /// named twice in a row.
    pub(super) fn take_stuck(&self) -> Option<String> {
        let mut map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (resource, _) = map
            .iter()
            .filter_map(|(resource, seen)| {
                let oldest = seen.holders.iter().map(|(_, since)| *since).min()?;
                (oldest < seen.at).then_some((resource, oldest))
            })
            .min_by_key(|(resource, oldest)| (*oldest, (*resource).clone()))?;
        let resource = resource.clone();
        map.remove(&resource);
        Some(resource)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_holder_seen_once_is_not_stuck() {
        let seen = Sightings::default();
        seen.saw("r0", &names(&["a"]), ms(100));
        assert_eq!(seen.take_stuck(), None);
        // Another holder the next time: a new run of sightings.
        seen.saw("r0", &names(&["b"]), ms(200));
        assert_eq!(seen.take_stuck(), None);
    }

    #[test]
    fn the_longest_named_holder_is_taken_once() {
        let seen = Sightings::default();
        seen.saw("r0", &names(&["a"]), ms(100));
        seen.saw("r1", &names(&["b"]), ms(150));
        seen.saw("r0", &names(&["a", "c"]), ms(300));
        seen.saw("r1", &names(&["b"]), ms(350));
        assert_eq!(seen.take_stuck().as_deref(), Some("r0"));
        assert_eq!(seen.take_stuck().as_deref(), Some("r1"));
        assert_eq!(seen.take_stuck(), None);
    }

    #[test]
    fn a_free_resource_is_not_stuck() {
        let seen = Sightings::default();
        seen.saw("r0", &names(&["a"]), ms(100));
        seen.saw("r0", &[], ms(200));
        assert_eq!(seen.take_stuck(), None);
    }
}
