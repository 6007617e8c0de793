//! A cluster master's slot map, as pure data: which primary serves each of
//! the 16384 hash slots (read from `CLUSTER SLOTS`), the slot of a key, and
//! what a redirection error says. node/cluster.rs acts on it.

use fred::types::{Key, Value};

/// A server's address: host and port.
pub(crate) type Address = (String, u16);

/// Hash slots in a Redis Cluster.
pub(crate) const SLOTS: usize = 16384;

/// The slot of `key`, as the server computes it (the `{hash tag}` if any).
pub(crate) fn slot_of(key: &Key) -> u16 {
    fred::util::redis_keyslot(key.as_bytes())
}

/// Which primary serves each slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SlotTable {
    /// The primaries, each once, in the order `CLUSTER SLOTS` named them.
    primaries: Vec<Address>,
    /// Per slot, an index into `primaries`, or [`NONE`] for a slot no
    /// primary serves.
    owner: Vec<u16>,
    /// The replicas the answer named: where to ask for the next map when
    /// every primary we knew is gone (a failover promoted one of them).
    replicas: Vec<Address>,
}

const NONE: u16 = u16::MAX;

impl SlotTable {
    fn empty() -> Self {
        Self {
            primaries: Vec::new(),
            owner: vec![NONE; SLOTS],
            replicas: Vec::new(),
        }
    }

    /// Reads a `CLUSTER SLOTS` answer; `asked` is the server that gave it
    /// (an empty host in the answer means that server's host).
    pub(crate) fn parse(answer: Value, asked: &Address) -> Result<Self, String> {
        let Value::Array(ranges) = answer else {
            return Err(format!("CLUSTER SLOTS answered {answer:?}"));
        };
        let mut table = Self::empty();
        for range in ranges {
            let Value::Array(fields) = range else {
                return Err("CLUSTER SLOTS: a range is not an array".into());
            };
            let slot = |index: usize| match fields.get(index) {
                Some(Value::Integer(n)) if (0..SLOTS as i64).contains(n) => Ok(*n as usize),
                other => Err(format!("CLUSTER SLOTS: bad slot bound {other:?}")),
            };
            let (first, last) = (slot(0)?, slot(1)?);
            let mut servers = fields.iter().skip(2);
            let primary = servers
                .next()
                .ok_or("CLUSTER SLOTS: a range without a primary")?;
            table.assign(first, last, address(primary, asked)?);
            for replica in servers {
                let replica = address(replica, asked)?;
                if !table.replicas.contains(&replica) {
                    table.replicas.push(replica);
                }
            }
        }
        Ok(table)
    }

    /// The replicas the map named.
    pub(crate) fn replicas(&self) -> &[Address] {
        &self.replicas
    }

    /// A table from `(first slot, last slot, primary)` ranges (tests).
    #[cfg(test)]
    pub(crate) fn from_ranges(ranges: &[(usize, usize, Address)]) -> Self {
        let mut table = Self::empty();
        for (first, last, primary) in ranges {
            table.assign(*first, *last, primary.clone());
        }
        table
    }

    /// Slots `first..=last` are served by `primary`.
    fn assign(&mut self, first: usize, last: usize, primary: Address) {
        let index = match self.primaries.iter().position(|p| *p == primary) {
            Some(index) => index,
            None => {
                self.primaries.push(primary);
                self.primaries.len() - 1
            }
        };
        if let Some(owners) = self.owner.get_mut(first..=last) {
            owners.fill(index as u16);
        }
    }

    /// The primaries, each once.
    pub(crate) fn primaries(&self) -> &[Address] {
        &self.primaries
    }

    /// The primary serving `slot`, if any.
    pub(crate) fn owner(&self, slot: u16) -> Option<&Address> {
        let index = *self.owner.get(usize::from(slot))?;
        self.primaries.get(usize::from(index))
    }

    /// Every (earlier owner, new owner) pair of the slots whose primary
    /// changed from `earlier` to this table, each pair once.
    pub(crate) fn moves_from<'a>(
        &'a self,
        earlier: &'a SlotTable,
    ) -> Vec<(&'a Address, &'a Address)> {
        let mut moves: Vec<(&Address, &Address)> = Vec::new();
        for slot in 0..SLOTS as u16 {
            if let (Some(from), Some(to)) = (earlier.owner(slot), self.owner(slot))
                && from != to
                && !moves.contains(&(from, to))
            {
                moves.push((from, to));
            }
        }
        moves
    }

    /// How many slots no primary serves.
    pub(crate) fn uncovered(&self) -> usize {
        self.owner.iter().filter(|&&index| index == NONE).count()
    }
}

/// A server's address in a `CLUSTER SLOTS` range (an empty host is the
/// host of the server `asked`).
fn address(server: &Value, asked: &Address) -> Result<Address, String> {
    let Value::Array(fields) = server else {
        return Err(format!("CLUSTER SLOTS: a server is {server:?}"));
    };
    let host = fields
        .first()
        .and_then(Value::as_string)
        .filter(|host| !host.is_empty() && host != "?")
        .unwrap_or_else(|| asked.0.clone());
    match fields.get(1) {
        Some(Value::Integer(port)) => Ok((host, u16::try_from(*port).map_err(|e| e.to_string())?)),
        other => Err(format!("CLUSTER SLOTS: bad port {other:?}")),
    }
}

/// What a cluster's redirection (or refusal) error says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Redirect {
    /// `MOVED <slot> <host:port>`: the slot is served elsewhere for good;
    /// or a key a call reached without declaring it is not served here
    /// (no address then).
    Moved(Option<Address>),
    /// `ASK <slot> <host:port>`: the slot is migrating and the key is
    /// already at the target; ask there, once, after `ASKING`.
    Ask(Address),
    /// `TRYAGAIN`: a call's keys are split by a migration in progress.
    TryAgain,
    /// `CLUSTERDOWN`: the cluster is not serving the slot now.
    Down,
}

impl Redirect {
    /// The redirection an error's text says, if it is one.
    pub(crate) fn parse(details: &str) -> Option<Self> {
        // A key of a later operation of a call that the server does not
        // serve (node/script.rs): the map we routed by is stale.
        if details.contains("non local key") {
            return Some(Redirect::Moved(None));
        }
        if details.contains("cluster is down") {
            return Some(Redirect::Down);
        }
        // fred may prefix the server's text; the reply starts at the keyword.
        let text = ["MOVED ", "ASK ", "TRYAGAIN", "CLUSTERDOWN"]
            .iter()
            .filter_map(|word| details.find(word).map(|at| &details[at..]))
            .next()?;
        let mut words = text.split_whitespace();
        let address = |words: &mut std::str::SplitWhitespace<'_>| -> Option<Address> {
            let _slot = words.next()?;
            let (host, port) = words.next()?.rsplit_once(':')?;
            Some((host.to_owned(), port.parse().ok()?))
        };
        match words.next()? {
            "MOVED" => Some(Redirect::Moved(address(&mut words))),
            "ASK" => address(&mut words).map(Redirect::Ask),
            "TRYAGAIN" => Some(Redirect::TryAgain),
            "CLUSTERDOWN" => Some(Redirect::Down),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn at(port: u16) -> Address {
        ("127.0.0.1".into(), port)
    }

    #[test]
    fn a_cluster_slots_answer_maps_every_slot_to_its_primary() {
        let range = |first: i64, last: i64, host: &str, port: i64| {
            Value::Array(vec![
                first.into(),
                last.into(),
                Value::Array(vec![host.into(), port.into(), "id".into()]),
                Value::Array(vec!["127.0.0.1".into(), 9999.into(), "replica".into()]),
            ])
        };
        let answer = Value::Array(vec![
            range(0, 8191, "127.0.0.1", 7001),
            range(8192, 16383, "", 7002),
        ]);
        let table = SlotTable::parse(answer, &("10.0.0.9".into(), 7001)).unwrap();
        assert_eq!(table.primaries(), [at(7001), ("10.0.0.9".into(), 7002)]);
        assert_eq!(table.owner(0), Some(&at(7001)));
        assert_eq!(table.owner(8192), Some(&("10.0.0.9".into(), 7002)));
        assert_eq!(table.uncovered(), 0);
        assert_eq!(table.replicas(), [at(9999)]);
        assert!(SlotTable::parse(Value::Null, &at(1)).is_err());
    }

    #[test]
    fn slots_no_range_names_are_uncovered() {
        let table = SlotTable::from_ranges(&[(0, 99, at(7001))]);
        assert_eq!(table.uncovered(), SLOTS - 100);
        assert_eq!(table.owner(100), None);
    }

    #[test]
    fn moved_slots_name_their_earlier_and_new_owners_once() {
        let before = SlotTable::from_ranges(&[(0, 8191, at(1)), (8192, 16383, at(2))]);
        let after =
            SlotTable::from_ranges(&[(0, 99, at(2)), (100, 8191, at(1)), (8192, 16383, at(3))]);
        assert_eq!(
            after.moves_from(&before),
            [(&at(1), &at(2)), (&at(2), &at(3))]
        );
        assert!(before.moves_from(&before).is_empty());
    }

    #[test]
    fn redirections_are_read_from_the_error_text() {
        assert_eq!(
            Redirect::parse("MOVED 3999 127.0.0.1:6381"),
            Some(Redirect::Moved(Some(at(6381))))
        );
        assert_eq!(
            Redirect::parse(
                "ERR Script attempted to access a non local key in a cluster node script: x"
            ),
            Some(Redirect::Moved(None))
        );
        assert_eq!(
            Redirect::parse("shard 127.0.0.1:1: ASK 3999 127.0.0.1:6382"),
            Some(Redirect::Ask(at(6382)))
        );
        assert_eq!(
            Redirect::parse("TRYAGAIN Multiple keys request during rehashing of slot"),
            Some(Redirect::TryAgain)
        );
        assert_eq!(
            Redirect::parse("CLUSTERDOWN Hash slot not served"),
            Some(Redirect::Down)
        );
        assert_eq!(Redirect::parse("WRONGTYPE Operation"), None);
    }

    proptest! {
        #[test]
        fn keys_sharing_a_hash_tag_share_a_slot(tag in "[a-z0-9:%]{1,12}", a in ".{0,12}", b in ".{0,12}") {
            let one = Key::from(format!("p{{{tag}}}{a}"));
            let two = Key::from(format!("q{{{tag}}}:fence{b}"));
            prop_assert_eq!(slot_of(&one), slot_of(&two));
        }
    }
}
