//! A lease ticket: a held lock as a value that another task or process can
//! take over ([`Redlock::adopt`](crate::Redlock::adopt),
//! [`Redlock::adopt_write`](crate::Redlock::adopt_write)), in one line for
//! shells.
//!
//! A ticket is a capability: whoever has it can take the lock over (and
//! then release it). Its `Debug` form leaves the owner token out; only its
//! `Display` form (and its serde form, the same string) carries it.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use percent_encoding::{AsciiSet, CONTROLS, percent_decode_str, utf8_percent_encode};

use crate::protocol::claim::Kind;
use crate::protocol::fence::FenceToken;
use crate::protocol::token::OwnerToken;

/// The string form's first field: its version.
const VERSION: &str = "rq1";

/// The kinds of hold a ticket names: the exclusive locks of one name, whose
/// hold is the lock's only one. (A reader or a permit shares its lock with
/// others, a permit holds a slot too, a reentrant hold is its owner
/// group's, a leader's carries the election's value: not yet.)
const KINDS: [Kind; 2] = [Kind::Lock, Kind::Write];

/// What the string form escapes in the resource name, so that the ticket
/// stays one shell word on one line (and `%` itself).
const ESCAPED: &AsciiSet = &CONTROLS.add(b' ').add(b'%').add(b'\'').add(b'"');

/// A held lock, handed over: its resource and kind, its owner token (the
/// capability), the fencing token it was issued if any, and until when its
/// lease ran when the ticket was made.
///
/// Made by [`Lock::ticket`](crate::Lock::ticket) or
/// [`Lock::into_ticket`](crate::Lock::into_ticket); its string form is
/// `rq1:<kind>:<owner>:<fence or ->:<valid until, Unix ms>:<resource>`,
/// the kind `lock` or `write`.
///
/// # Examples
///
/// ```
/// let ticket: redquorum::Ticket =
///     "rq1:lock:0123456789abcdef0123456789abcdef:42:1800000000000:deploy".parse()?;
/// assert_eq!(ticket.resource(), "deploy");
/// assert_eq!(ticket.fence().map(|t| t.get()), Some(42));
/// assert_eq!(ticket.to_string().parse::<redquorum::Ticket>()?, ticket);
/// // The owner token (the capability) never shows in `Debug`.
/// assert!(!format!("{ticket:?}").contains("0123456789abcdef"));
/// # Ok::<(), redquorum::TicketError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Ticket {
    /// The kind of hold: [`Kind::Lock`] or [`Kind::Write`] ([`KINDS`]).
    pub(crate) kind: Kind,
    pub(crate) resource: String,
    pub(crate) owner: OwnerToken,
    pub(crate) fence: Option<FenceToken>,
    /// Unix time in ms.
    valid_until: u64,
}

impl Ticket {
    /// The ticket of a hold of `kind` (one of [`KINDS`]) on `resource`
    /// held by `owner`, valid for `validity` from now.
    pub(crate) fn new(
        kind: Kind,
        resource: &str,
        owner: OwnerToken,
        fence: Option<FenceToken>,
        validity: Duration,
    ) -> Self {
        let until = SystemTime::now() + validity;
        let ms = until.duration_since(UNIX_EPOCH).unwrap_or_default();
        Self {
            kind,
            resource: resource.to_owned(),
            owner,
            fence,
            valid_until: u64::try_from(ms.as_millis()).unwrap_or(u64::MAX),
        }
    }

    /// The locked resource.
    #[must_use]
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The kind of hold: `lock` (a [`Lock`](crate::Lock), adopted by
    /// [`Redlock::adopt`](crate::Redlock::adopt)) or `write` (a
    /// [`WriteLock`](crate::WriteLock), adopted by
    /// [`Redlock::adopt_write`](crate::Redlock::adopt_write)).
    #[must_use]
    pub fn kind(&self) -> &'static str {
        self.kind.name()
    }

    /// The hold's owner token, the same as its holder's
    /// [`Lock::owner`](crate::Lock::owner): part of the capability, so
    /// never log it.
    ///
    /// # Examples
    ///
    /// ```
    /// let ticket: redquorum::Ticket =
    ///     "rq1:lock:0123456789abcdef0123456789abcdef:-:1800000000000:deploy".parse()?;
    /// assert_eq!(ticket.owner().to_string(), "0123456789abcdef0123456789abcdef");
    /// # Ok::<(), redquorum::TicketError>(())
    /// ```
    #[must_use]
    pub fn owner(&self) -> OwnerToken {
        self.owner
    }

    /// The fencing token the hold was issued, if it asked for one; the
    /// adopter keeps it.
    #[must_use]
    pub fn fence(&self) -> Option<FenceToken> {
        self.fence
    }

    /// When the lease ran out as the ticket was made (the holder's clock;
    /// extensions since then, by the holder or the adopter, move it on).
    #[must_use]
    pub fn valid_until(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.valid_until)
    }
}

impl fmt::Display for Ticket {
    /// The one-line form: the capability itself.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fence = self.fence.map_or("-".to_owned(), |t| t.get().to_string());
        let resource = utf8_percent_encode(&self.resource, ESCAPED);
        write!(
            f,
            "{VERSION}:{}:{}:{fence}:{}:{resource}",
            self.kind(),
            self.owner,
            self.valid_until
        )
    }
}

impl fmt::Debug for Ticket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ticket")
            .field("resource", &self.resource)
            .field("kind", &self.kind())
            .field("owner", &"<redacted>")
            .field("fence", &self.fence.map(FenceToken::get))
            .field("valid_until_ms", &self.valid_until)
            .finish()
    }
}

/// Why a string is not a ticket. The message never repeats the owner token.
///
/// # Examples
///
/// ```
/// let err = "rq1:lock:not-hex:-:0:deploy".parse::<redquorum::Ticket>().unwrap_err();
/// assert_eq!(err.to_string(), "not a lease ticket: the owner is not 32 hex digits");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TicketError {
    /// A field is missing or not what it should be.
    #[error("not a lease ticket: {0}")]
    Malformed(&'static str),
    /// Another version of the ticket format (a newer redquorum's).
    #[error("a lease ticket of version {version:?}, this redquorum reads {VERSION:?}")]
    Version {
        /// The version the ticket names.
        version: String,
    },
    /// A lock kind this redquorum cannot hand over.
    #[error(
        "a lease ticket of a {kind:?} lock: only \"lock\" and \"write\" tickets can be adopted"
    )]
    Kind {
        /// The kind the ticket names.
        kind: String,
    },
}

impl FromStr for Ticket {
    type Err = TicketError;

    fn from_str(text: &str) -> Result<Self, TicketError> {
        let mut fields = text.trim().splitn(6, ':');
        let mut next = |what| fields.next().ok_or(TicketError::Malformed(what));
        let version = next("no version")?;
        if version != VERSION {
            return Err(TicketError::Version {
                version: version.chars().take(16).collect(),
            });
        }
        let kind = next("no kind")?;
        let Some(&kind) = KINDS.iter().find(|k| k.name() == kind) else {
            return Err(TicketError::Kind {
                kind: kind.chars().take(32).collect(),
            });
        };
        let owner = next("no owner")?;
        let owner = (owner.len() == 32)
            .then(|| u128::from_str_radix(owner, 16).ok())
            .flatten()
            .filter(|_| owner.bytes().all(|b| b.is_ascii_hexdigit()))
            .map(OwnerToken::from_u128)
            .ok_or(TicketError::Malformed("the owner is not 32 hex digits"))?;
        let fence = match next("no fencing token")? {
            "-" => None,
            digits => Some(FenceToken::new(digits.parse().map_err(|_| {
                TicketError::Malformed("the fencing token is neither a number nor -")
            })?)),
        };
        let valid_until = (next("no validity")?.parse())
            .map_err(|_| TicketError::Malformed("the validity is not a Unix time in ms"))?;
        let resource = percent_decode_str(next("no resource")?)
            .decode_utf8()
            .map_err(|_| TicketError::Malformed("the resource is not UTF-8"))?;
        if resource.is_empty() {
            return Err(TicketError::Malformed("the resource is empty"));
        }
        Ok(Self {
            kind,
            resource: resource.into_owned(),
            owner,
            fence,
            valid_until,
        })
    }
}

/// The serde form is the string form (one field, the capability).
#[cfg(feature = "serde")]
impl serde::Serialize for Ticket {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Ticket {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn each_malformed_field_is_named() {
        let cases = [
            (
                "",
                TicketError::Version {
                    version: String::new(),
                },
            ),
            ("rq1", TicketError::Malformed("no kind")),
            (
                "rq1:read:x",
                TicketError::Kind {
                    kind: "read".into(),
                },
            ),
            (
                "rq1:lock:abc:-:0:r",
                TicketError::Malformed("the owner is not 32 hex digits"),
            ),
            (
                "rq1:lock:+123456789abcdef0123456789abcdef:-:0:r",
                TicketError::Malformed("the owner is not 32 hex digits"),
            ),
            (
                "rq1:lock:0123456789abcdef0123456789abcdef:x:0:r",
                TicketError::Malformed("the fencing token is neither a number nor -"),
            ),
            (
                "rq1:lock:0123456789abcdef0123456789abcdef:-:soon:r",
                TicketError::Malformed("the validity is not a Unix time in ms"),
            ),
            (
                "rq1:lock:0123456789abcdef0123456789abcdef:-:0",
                TicketError::Malformed("no resource"),
            ),
            (
                "rq1:lock:0123456789abcdef0123456789abcdef:-:0:",
                TicketError::Malformed("the resource is empty"),
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(text.parse::<Ticket>(), Err(expected), "{text:?}");
        }
    }

    proptest! {
        /// Any resource name (colons, spaces, newlines, percent signs), any
        /// fence and either kind survive the one-line form, which stays one
        /// line.
        #[test]
        fn the_string_form_reads_back(
            resource in "\\PC{1,40}|[ :%\n\t'\"]{1,8}",
            owner in any::<u128>(),
            fence in proptest::option::of(any::<u64>()),
            valid_until in any::<u64>(),
            kind in proptest::sample::select(KINDS.to_vec()),
        ) {
            let ticket = Ticket {
                kind,
                resource,
                owner: OwnerToken::from_u128(owner),
                fence: fence.map(FenceToken::new),
                valid_until,
            };
            let text = ticket.to_string();
            prop_assert!(!text.contains(char::is_whitespace), "{text:?}");
            prop_assert_eq!(text.parse::<Ticket>(), Ok(ticket));
        }
    }
}
