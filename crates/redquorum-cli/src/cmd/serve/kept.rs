//! What a session keeps (`sessions.rs`): a plain, write or read lock, a
//! leadership or a semaphore's permit, each a hold its watchdog extends, released when the
//! session ends.

use std::time::{Duration, Instant};

use redquorum::{
    Error, FenceToken, Leadership, LeaseWatch, Lock, Permit, ReadLock, Ticket, WriteLock,
};

use super::problem::Problem;
use crate::fence_retry::{FenceRetry, ask_again};

/// How soon a fencing token's write-back is asked again when a round could
/// not issue it.
const FENCE_RETRY_DELAY: Duration = Duration::from_millis(50);

/// A hold a session keeps.
#[derive(Debug)]
pub(crate) enum Kept {
    Lock(Lock),
    Write(WriteLock),
    Read(ReadLock),
    Leadership(Leadership),
    Permit(Permit),
}

/// `$body` with `$held` bound to the hold, whatever its kind (they share
/// these methods by name, not by a trait).
macro_rules! each {
    ($kept:expr, $held:ident => $body:expr) => {
        match $kept {
            Kept::Lock($held) => $body,
            Kept::Write($held) => $body,
            Kept::Read($held) => $body,
            Kept::Leadership($held) => $body,
            Kept::Permit($held) => $body,
        }
    };
}

impl Kept {
    /// Its kind as the routes name it.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Lock(_) => "lock",
            Self::Write(_) => "write",
            Self::Read(_) => "read",
            Self::Leadership(_) => "leader",
            Self::Permit(_) => "permit",
        }
    }

    pub(crate) fn resource(&self) -> &str {
        each!(self, held => held.resource())
    }

    /// Its owner token, as text (the sessions' index).
    pub(crate) fn owner(&self) -> String {
        each!(self, held => held.owner().to_string())
    }

    /// A lease, for the kinds that have one (the others' session releases
    /// them).
    pub(crate) fn lease(&self) -> Option<String> {
        match self {
            Self::Lock(held) => Some(held.ticket().to_string()),
            Self::Write(held) => Some(held.ticket().to_string()),
            Self::Read(_) | Self::Leadership(_) | Self::Permit(_) => None,
        }
    }

    /// A permit's id (its owner token) and slot.
    pub(crate) fn permit(&self) -> Option<(String, usize)> {
        match self {
            Self::Permit(held) => Some((held.owner().to_string(), held.slot())),
            _ => None,
        }
    }

    /// How long it is valid for from now; `None` once lost.
    pub(crate) fn valid_for(&self) -> Option<Duration> {
        each!(self, held => held.is_valid().then(|| held.validity()))
    }

    /// Its watchdog extends it from now on.
    pub(crate) fn auto_extend(&mut self) {
        each!(self, held => held.auto_extend());
    }

    /// Released (a leadership resigns); on how many nodes.
    pub(crate) async fn release(self) -> Result<usize, Error> {
        match self {
            Self::Leadership(held) => held.resign().await,
            Self::Lock(held) => held.release().await,
            Self::Write(held) => held.release().await,
            Self::Read(held) => held.release().await,
            Self::Permit(held) => held.release().await,
        }
    }

    /// Left to expire, no longer extended.
    pub(crate) fn forget(self) {
        each!(self, held => held.forget());
    }
}

/// A hold just granted that a route fences before it answers.
pub(crate) trait Fenced: Sized {
    fn fence(&self) -> impl Future<Output = Result<FenceToken, Error>> + Send;
    fn lease(&self) -> LeaseWatch;
    fn release(self) -> impl Future<Output = Result<usize, Error>> + Send;
}

macro_rules! fenced {
    ($($ty:ty),*) => {$(
        impl Fenced for $ty {
            fn fence(&self) -> impl Future<Output = Result<FenceToken, Error>> + Send {
                <$ty>::fence(self)
            }
            fn lease(&self) -> LeaseWatch {
                <$ty>::lease(self)
            }
            fn release(self) -> impl Future<Output = Result<usize, Error>> + Send {
                <$ty>::release(self)
            }
        }
    )*};
}
fenced!(Lock, WriteLock, ReadLock, Leadership, Permit);

/// A hold handed out as a lease (plain and write locks).
pub(crate) trait Leased: Fenced {
    fn ticket(&self) -> Ticket;
    fn into_ticket(self) -> Ticket;
    fn into_kept(self) -> Kept;
}

impl Leased for Lock {
    fn ticket(&self) -> Ticket {
        Lock::ticket(self)
    }
    fn into_ticket(self) -> Ticket {
        Lock::into_ticket(self)
    }
    fn into_kept(self) -> Kept {
        Kept::Lock(self)
    }
}

impl Leased for WriteLock {
    fn ticket(&self) -> Ticket {
        WriteLock::ticket(self)
    }
    fn into_ticket(self) -> Ticket {
        WriteLock::into_ticket(self)
    }
    fn into_kept(self) -> Kept {
        Kept::Write(self)
    }
}

/// `held`'s fencing token, asked again while a round could not issue it
/// (for half `ttl` at most, while the lease is not at risk). A hold nobody
/// could fence with is given back, and the error answered.
pub(crate) async fn fenced<H: Fenced>(held: H, ttl: Duration) -> Result<(H, FenceToken), Problem> {
    let retry = FenceRetry {
        delay: FENCE_RETRY_DELAY,
        until: Instant::now() + ttl / 2,
    };
    let lease = held.lease();
    let no_quorum = |e: &Error| matches!(e, Error::FenceUnavailable { .. });
    match ask_again(|| held.fence(), no_quorum, || lease.is_at_risk(), retry).await {
        Ok(fence) => Ok((held, fence)),
        Err(error) => {
            let _ = held.release().await;
            Err(Problem::of(&error))
        }
    }
}
