//! Durations as whole microseconds in JSON (`#[serde(with = "micros")]`,
//! `micros::option` and `micros::vec`): short lines, exact round trips of everything a
//! run records on its clock (read in microseconds' detail): the sessions,
//! the faults, the key audit, the operator's calls.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serializer};

pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    u64::deserialize(d).map(Duration::from_micros)
}

pub(crate) mod option {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => super::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        Option::<u64>::deserialize(d).map(|m| m.map(Duration::from_micros))
    }
}

pub(crate) mod vec {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(d: &[Duration], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(
            d.iter()
                .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX)),
        )
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Duration>, D::Error> {
        Vec::<u64>::deserialize(d).map(|v| v.into_iter().map(Duration::from_micros).collect())
    }
}
