//! Redis Cluster's key space: 16384 hash slots, a key's slot ([`slot_of`]:
//! CRC16-XMODEM of its hash tag, as Redis computes it), the even split of
//! the slots among a cluster's shards, and reading who owns each slot out
//! of a `CLUSTER SLOTS` reply.

use crate::nodes::resp::Reply;

/// How many hash slots a Redis Cluster has.
///
/// # Examples
///
/// ```
/// assert_eq!(redquorum_harness::SLOT_COUNT, 16384);
/// ```
pub const SLOT_COUNT: u16 = 16384;

/// The hash slot of `key`, as Redis Cluster computes it: CRC16-XMODEM of
/// the key's hash tag (the text between the first `{` and the first `}`
/// after it, when not empty), else of the whole key, modulo 16384.
///
/// # Examples
///
/// ```
/// use redquorum_harness::slot_of;
/// assert_eq!(slot_of("foo"), 12182);
/// // keys sharing a {tag} share a slot
/// assert_eq!(slot_of("{user1000}.following"), slot_of("{user1000}.followers"));
/// // an empty tag does not count: the whole key is hashed
/// assert_ne!(slot_of("foo{}{bar}"), slot_of("bar"));
/// ```
#[must_use]
pub fn slot_of(key: impl AsRef<[u8]>) -> u16 {
    crc16_xmodem(hash_tag(key.as_ref())) % SLOT_COUNT
}

/// The part of a key Redis hashes: its tag, or all of it.
fn hash_tag(key: &[u8]) -> &[u8] {
    let Some(open) = key.iter().position(|&b| b == b'{') else {
        return key;
    };
    let rest = &key[open + 1..];
    match rest.iter().position(|&b| b == b'}') {
        Some(len) if len > 0 => &rest[..len],
        _ => key,
    }
}

/// CRC16 with polynomial 0x1021, initial value 0, no reflection (XMODEM):
/// the checksum Redis Cluster's key slots use (`crc16.c` in Redis).
fn crc16_xmodem(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in bytes {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 == 0 {
                crc << 1
            } else {
                (crc << 1) ^ 0x1021
            };
        }
    }
    crc
}

/// The first and last slot of shard `shard` of `shards` when the slots are
/// split evenly (contiguous ranges, shard 0 first).
pub(super) fn even_range(shard: usize, shards: usize) -> (u16, u16) {
    let total = usize::from(SLOT_COUNT);
    let start = shard * total / shards;
    let end = (shard + 1) * total / shards - 1;
    // Both below SLOT_COUNT, since shard < shards.
    (
        u16::try_from(start).unwrap_or(SLOT_COUNT - 1),
        u16::try_from(end).unwrap_or(SLOT_COUNT - 1),
    )
}

/// Slot → shard for the even split among `shards` shards.
pub(super) fn even_owners(shards: usize) -> Vec<u16> {
    let mut owners = vec![0; usize::from(SLOT_COUNT)];
    for shard in 0..shards {
        let (start, end) = even_range(shard, shards);
        let shard = u16::try_from(shard).unwrap_or(u16::MAX);
        owners[usize::from(start)..=usize::from(end)].fill(shard);
    }
    owners
}

/// Slot → the port of the primary a node's `CLUSTER SLOTS` reply names for
/// it (0: no owner). Each entry is `[start, end, [ip, port, id, ...], replicas...]`.
pub(super) fn owner_ports(reply: &Reply) -> Result<Vec<u16>, String> {
    let Reply::Array(Some(ranges)) = reply else {
        return Err(format!("CLUSTER SLOTS answered {reply:?}"));
    };
    let mut ports = vec![0; usize::from(SLOT_COUNT)];
    for range in ranges {
        let bad = || format!("CLUSTER SLOTS entry {range:?}");
        let Reply::Array(Some(parts)) = range else {
            return Err(bad());
        };
        let number = |i: usize| parts.get(i).and_then(Reply::as_int);
        let (Some(start), Some(end)) = (number(0), number(1)) else {
            return Err(bad());
        };
        let port = match parts.get(2) {
            Some(Reply::Array(Some(node))) => node.get(1).and_then(Reply::as_int),
            _ => None,
        };
        let (Ok(start), Ok(end), Some(Ok(port))) = (
            usize::try_from(start),
            usize::try_from(end),
            port.map(u16::try_from),
        ) else {
            return Err(bad());
        };
        if start > end || end >= ports.len() {
            return Err(bad());
        }
        ports[start..=end].fill(port);
    }
    Ok(ports)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::nodes::ShardedCluster;

    #[test]
    fn the_checksum_is_xmodem() {
        // The check value of CRC-16/XMODEM, and Redis's own example keys.
        assert_eq!(crc16_xmodem(b"123456789"), 0x31C3);
        assert_eq!(slot_of("foo"), 12182);
        assert_eq!(slot_of("bar"), 5061);
    }

    #[test]
    fn the_hash_tag_is_the_first_non_empty_braces() {
        assert_eq!(hash_tag(b"{user1000}.following"), b"user1000");
        assert_eq!(hash_tag(b"foo{}{bar}"), b"foo{}{bar}");
        assert_eq!(hash_tag(b"foo{{bar}}zap"), b"{bar");
        assert_eq!(hash_tag(b"foo{bar}{zap}"), b"bar");
        assert_eq!(hash_tag(b"no{close"), b"no{close");
    }

    #[test]
    fn the_even_split_covers_every_slot_once() {
        for shards in [1, 2, 3, 7, 16] {
            let owners = even_owners(shards);
            assert_eq!(even_range(0, shards).0, 0);
            assert_eq!(even_range(shards - 1, shards).1, SLOT_COUNT - 1);
            for shard in 1..shards {
                assert_eq!(
                    even_range(shard, shards).0,
                    even_range(shard - 1, shards).1 + 1
                );
            }
            assert!(owners.windows(2).all(|w| w[0] <= w[1]));
            assert_eq!(usize::from(owners[usize::from(SLOT_COUNT) - 1]), shards - 1);
        }
    }

    /// Keys of every shape, including tags, empty tags and unbalanced braces,
    /// get the slot the server computes.
    #[test]
    fn slots_match_cluster_keyslot_on_a_real_node() {
        let cluster = ShardedCluster::start(1, 1, 0).expect("a one-shard cluster");
        let node = cluster.master(0);
        let mut keys: Vec<String> = [
            "",
            "a",
            "foo",
            "lock:{orders}",
            "{}",
            "{a}{b}",
            "x{}y{z}",
            "{{}}",
            "}{",
            "ü{ß}",
        ]
        .iter()
        .map(|k| (*k).to_owned())
        .collect();
        keys.extend((0..200).map(|i| format!("lock:{{res{i}}}:token{}", i * 7)));
        keys.extend((0..200).map(|i| format!("k{i}")));
        for key in &keys {
            let reply = node.command(0, &["CLUSTER", "KEYSLOT", key]).unwrap();
            assert_eq!(reply.as_int(), Some(i64::from(slot_of(key))), "key {key:?}");
        }
    }

    proptest! {
        #[test]
        fn keys_sharing_a_tag_share_a_slot(
            tag in "[^{}]{1,12}",
            before in "[^{]{0,8}",
            after in ".{0,12}",
            other_before in "[^{]{0,8}",
            other_after in ".{0,12}",
        ) {
            let one = format!("{before}{{{tag}}}{after}");
            let two = format!("{other_before}{{{tag}}}{other_after}");
            prop_assert_eq!(slot_of(&one), slot_of(&two));
            prop_assert_eq!(slot_of(&one), slot_of(&tag));
        }

        #[test]
        fn every_slot_is_in_range(key in proptest::collection::vec(any::<u8>(), 0..40)) {
            prop_assert!(slot_of(&key) < SLOT_COUNT);
        }
    }
}
