//! Planted bugs (mutants), for proving that the torture checker can fail.
//!
//! Built only with the compiler flag `--cfg redquorum_mutants` (for example
//! `RUSTFLAGS="--cfg redquorum_mutants"`), which no build sets by default and
//! none must set for a release. It is a cfg, not a cargo feature, so that no
//! crate depending on redquorum can turn the planted bugs on for the whole
//! dependency graph. With it, one mutant at a time is selected for the whole
//! process by [`activate`], and `redquorum mutants` runs the torture checker
//! against each one: a mutant the checker does not catch is a hole in the
//! test bed.
//!
//! The library's sources carry no planted bug. Each is a patch,
//! `crates/redquorum/mutants/NAME.patch`, which `tests/mutants.sh` applies
//! (with every other one, in the order of `mutants/series`) to a copy of the
//! workspace before building it with the cfg (docs/torture.md, "How planted
//! bugs are built"). Each guards its change with [`is_active`], so one build
//! serves every mutant, and with none active the library is the real one.
//! Where they act:
//! - `quorum/validity.rs` (`validity`): validity-unreduced, long-lease,
//!   validity-no-drift;
//! - `quorum/tally.rs` (`quorum`): minority-quorum;
//! - `quorum/vote.rs` (`vote`): timed-out-acquire-votes;
//! - `quorum/coordinator.rs` (`acquire`: the unwind and its drop guard;
//!   `commit`: the write-back): no-unwind, unwind-disarmed-early,
//!   fence-without-write-back;
//! - `quorum/settle.rs` (`settle`): validity-from-replies, extend-below-quorum;
//! - `protocol/claim.rs` (`extend`: sent as an acquire) and `lease/state.rs`
//!   (`check_expired`, `extended`: expiry is not final): reviving-extend;
//! - `node/batch/batcher_call.rs` (`again`): noscript-after-unwind,
//!   noscript-answers-shifted;
//! - `node/batch/queue.rs` (`Queued::wanted`): queued-release-dropped;
//! - `kinds/semaphore.rs` (`try_acquire`): permit-without-slot;
//! - `kinds/election.rs` (`try_campaign`): shared-leadership;
//! - `redlock/mod.rs` (`claim_with`): lock-delay-ignored;
//! - `kinds/multi_lock.rs` (`try_lock_all`): all-of-last-only;
//! - `health/clock_watch.rs` (`record`): clock-monitor-blind;
//! - `admin/inspect.rs` (`Inspection::holders`): inspect-any-node;
//! - `admin/operator.rs` (`force_release`): stale-force-fence;
//! - `node/cluster/map.rs` (`refresh`, `taint_takers`; the second without
//!   `max_ttl` only): new-primary-votes-at-once, new-primary-default-votes;
//! - `protocol/alone.rs` (the forms alone on a connection: `set_answer`,
//!   and `form` with `protocol/scripts/plain_release.lua`):
//!   alone-acquire-misreads-get, alone-release-unchecked;
//! - the lock script, its parts in `protocol/scripts/ops/`: `protocol/op.rs`
//!   (`planted_wire`, added by the first of these patches) sends an
//!   upper-case code while the mutant is active, and the patch's Lua at the
//!   end of `ops/prelude.lua` (the top of the script) does the harm and
//!   turns it into the ordinary code: `R`/`E` no-owner-check, `X` release-drops-sharers,
//!   `A` reader-beside-any-kind, `K` extend-keeps-expiry (its keys' expiry
//!   put back in `publish`, `ops/answer.lua`), `F`/`P` fence-without-floor
//!   (`peek` without the clock floor), `L` plain-acquire-overwrites, `U`
//!   plain-release-unchecked, `N` plain-extend-revives, `J`
//!   plain-extend-keeps-expiry, `W` adopt-unchecked, `Y`
//!   move-back-unchecked, and `B` with
//!   `quorum/force_release.rs` (no first round) force-release-blind; the
//!   five planted in the full
//!   operations also send the plain lock's operations to them
//!   (`protocol/claim.rs`, `plain`), so that they reach the plain lock;
//! - `quorum/fan_out.rs` (`gather_among`): move-skips-a-node;
//! - `lease/watchdog.rs` (`run`: the loss notices it listens to):
//!   loss-notice-deaf; `quorum/listen.rs` (`ask_heard`): ask-unheard;
//! - `redlock/mod.rs` (`release_ticket_hold`): ticket-unlock-by-name;
//! - in the CLI, `redquorum exec` (`exec/guarded.rs`, `left_behind`, read
//!   through [`active`]; the torture passes it to the `exec` it starts):
//!   exec-releases-orphans; `redquorum serve` (`serve/locks.rs`, `release`;
//!   passed to the service the torture starts): serve-release-by-name.
//!
//! `redquorum mutants` runs every one against the default torture run
//! (every kind on the same names, majority faults and lost fence counters
//! within the assumptions, fast clocks within the drift budget), with the
//! one feature a mutant's bug lives in turned on (a lock-delay, a fast
//! node, an operator, cluster masters). The last twenty-six ([`Mutant::CLASSES`]) are the bug
//! classes that have no focused recipe of their own (`mutants --recipes`).

use std::fmt;
use std::str::FromStr;

/// One planted bug.
///
/// # Examples
///
/// ```
/// # #[cfg(redquorum_mutants)] {
/// use redquorum::mutants::Mutant;
/// let mutant: Mutant = "no-unwind".parse().unwrap();
/// assert_eq!(mutant.to_string(), "no-unwind");
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Mutant {
    /// The validity is the whole TTL: not reduced by the time the acquire
    /// took nor by the clock-drift allowance.
    ValidityUnreduced,
    /// The validity is three times the TTL.
    LongLease,
    /// A failed acquisition is not unwound: its keys stay for their TTL.
    NoUnwind,
    /// Release and extend (and the unwind) act on the lock's hold whoever
    /// owns it.
    NoOwnerCheck,
    /// A quorum of `N/2` nodes instead of `N/2 + 1`.
    MinorityQuorum,
    /// The fencing token is the highest proposal, never written back to a quorum.
    FenceWithoutWriteBack,
    /// A lease whose deadline passed is not lost: its extension is still
    /// sent, and takes the lock again on nodes where the hold expired
    /// (revives a lost lease).
    RevivingExtend,
    /// After a NOSCRIPT reply, the script is reloaded and the fallback EVAL
    /// sent late, after the caller may have unwound or released on that
    /// node (the previous engine's order).
    NoscriptAfterUnwind,
    /// A semaphore permit joins the name's shared `permit` record without
    /// taking one of the K slot locks (the naive count): permits are then
    /// capped by nothing.
    PermitWithoutSlot,
    /// A campaign joins the election's lock as a reader would, so
    /// campaigners share it: several leaders at once.
    SharedLeadership,
    /// The lock-delay option is not sent: a hold that expires unreleased
    /// frees the resource at once.
    LockDelayIgnored,
    /// A multi-resource lock takes only the last resource of its (sorted)
    /// set, and reports the whole set held.
    AllOfLastOnly,
    /// Node clock monitoring sees nothing: a node whose clock runs fast
    /// keeps its vote.
    ClockMonitorBlind,
    /// An inspection names as holders the holds seen on any one node, not
    /// on a quorum: a hold a release missed on one node is reported held.
    InspectAnyNode,
    /// A force-release returns the fence counter the resource had before
    /// it (read first), not the raised one: the ousted holder's token is
    /// not below it, so storage given it does not refuse the ousted holder.
    StaleForceFence,
    /// A cluster master's shard primary that took over its slots (a
    /// failover) votes at once, though it may lack holds its predecessor
    /// granted.
    NewPrimaryVotesAtOnce,
    /// A force-release deletes the lock whoever holds it when its call
    /// lands on a node (the earlier design), not what its first round read:
    /// a call that lands late, on a node that was away, ousts a holder that
    /// came after it.
    ForceReleaseBlind,
    /// The validity leaves out the clock-drift allowance: `ttl - elapsed`.
    ValidityNoDrift,
    /// The validity is counted from when the quorum's replies came, not
    /// from before the first send (`ttl - drift` from then): the time the
    /// acquire took is not taken off, though the nodes' keys started to
    /// expire when they acted.
    ValidityFromReplies,
    /// An extension is accepted when any node renewed the hold, not a quorum.
    ExtendBelowQuorum,
    /// A release removes every hold of the lock record, not only its own:
    /// the other readers (or permits, or the owner's other holds) are freed
    /// with it.
    ReleaseDropsSharers,
    /// A reader is admitted beside any kind but a writer (a plain lock, a
    /// permit, a leader...), not only beside other readers.
    ReaderBesideAnyKind,
    /// An acquire's unwind-on-drop guard is disarmed before the acquire is
    /// sent: a caller that drops the acquire part-way leaves its holds to
    /// their TTL.
    UnwindDisarmedEarly,
    /// An extension renews the hold's expiry in the lock record but not the
    /// key's: the key still expires when the hold would have without the
    /// extension, and with it every hold in it, while the holder counts on
    /// the extended lease.
    ExtendKeepsExpiry,
    /// A fence proposal is the counter plus one, without the node-clock
    /// floor: a node that lost its counter (expired after a day idle, or a
    /// restart without persistence) proposes from zero, below the tokens
    /// already issued.
    FenceWithoutFloor,
    /// The plain lock's acquire overwrites the lock's record whoever holds
    /// it (SET without NX): a second holder ousts the first.
    PlainAcquireOverwrites,
    /// The plain lock's release deletes the lock's string record whoever
    /// holds it (no owner check).
    PlainReleaseUnchecked,
    /// The plain lock's extend takes the lock again where its record is
    /// gone (SET NX before the owner check): a lapsed lease is revived.
    PlainExtendRevives,
    /// A release queued behind a node's calls in flight is dropped unsent
    /// once its caller stopped waiting (the release returned on a quorum),
    /// as an abandoned acquire is: the slow node keeps the key to its TTL.
    QueuedReleaseDropped,
    /// After a NOSCRIPT reply to a call something overtook, the operations
    /// sent again get their answers in the first slots of the batch, not in
    /// their own: an acquire held back takes a release's or an extend's
    /// answer as a grant.
    NoscriptAnswersShifted,
    /// The plain lock's extend answers "renewed" on its string record
    /// without pushing the key's expiry: the key expires as if never
    /// extended while the holder counts on the extension.
    PlainExtendKeepsExpiry,
    /// With `max_ttl` unset (the library's default), a cluster master's
    /// shard primary that took over its slots votes at once: the new-primary
    /// refusal is applied only to a handle built with `max_ttl`.
    NewPrimaryDefaultVotes,
    /// `redquorum exec` takes its guard's death by a signal for the
    /// command's (the guard mirrors the command's status) and releases at
    /// once: what ran below the killed guard is not killed first, and may
    /// still write after the next holder got the lock. Planted in the CLI
    /// (`exec/guarded.rs`, `left_behind`).
    ExecReleasesOrphans,
    /// An acquire that timed out on a node counts as that node's vote (its
    /// call may still land, the reasoning goes): a vote the node never cast.
    TimedOutAcquireVotes,
    /// The native acquire (`SET key token NX PX ttl GET`, the default
    /// acquire alone on a connection) reads its answer as `SET ... GET`
    /// without `NX` gives it: an old value means the record was replaced,
    /// so a grant, though `NX` left the other holder's record in place.
    AloneAcquireMisreadsGet,
    /// The plain release alone on a connection (its own script) deletes the
    /// string record whoever holds it: it checks that one exists, not
    /// whose it is.
    AloneReleaseUnchecked,
    /// Adopting a lease ticket moves the lock's hold to the adopter
    /// whoever holds it (no check that the ticket's owner still does): of
    /// two adopters of one ticket, both are granted.
    AdoptUnchecked,
    /// An adoption's move is never sent to the last node: the old holder's
    /// hold stays there to its TTL, though the ticket's hold moved.
    MoveSkipsANode,
    /// A failed adoption's move back (its unwind) moves the lock's hold to
    /// the ticket's old owner whoever holds it (no check that the adopter
    /// does): the loser of two racing adopters takes the winner's hold away.
    MoveBackUnchecked,
    /// `redquorum serve`'s release route releases the lock of the route's
    /// name whoever holds it (a force-release), not the lease's hold: a
    /// release that lands late takes the next holder's lock away. Planted
    /// in the CLI (`serve/locks.rs`, `release`).
    ServeReleaseByName,
    /// The watchdog ignores the lock's loss notices (a force-release or a
    /// move announced on the lock's channel): a holder whose hold an
    /// operator took learns of it only at its next renewal, and works on
    /// meanwhile.
    LossNoticeDeaf,
    /// A holder never hears that it is asked to let go: the lock's ask
    /// signal never resolves, and an ask waits while the holder works on.
    AskUnheard,
    /// `Redlock::release_ticket` (`redquorum unlock TICKET`) releases the
    /// lock of the ticket's resource whoever holds it (a force-release),
    /// not the ticket's hold: an unlock that comes after the hold expired
    /// takes the next holder's lock away.
    TicketUnlockByName,
}

impl Mutant {
    /// Every mutant, in the order `redquorum mutants` runs them.
    pub const ALL: [Mutant; 43] = [
        Mutant::ValidityUnreduced,
        Mutant::LongLease,
        Mutant::NoUnwind,
        Mutant::NoOwnerCheck,
        Mutant::MinorityQuorum,
        Mutant::FenceWithoutWriteBack,
        Mutant::RevivingExtend,
        Mutant::NoscriptAfterUnwind,
        Mutant::PermitWithoutSlot,
        Mutant::SharedLeadership,
        Mutant::LockDelayIgnored,
        Mutant::AllOfLastOnly,
        Mutant::ClockMonitorBlind,
        Mutant::InspectAnyNode,
        Mutant::StaleForceFence,
        Mutant::NewPrimaryVotesAtOnce,
        Mutant::ForceReleaseBlind,
        Mutant::ValidityNoDrift,
        Mutant::ValidityFromReplies,
        Mutant::ExtendBelowQuorum,
        Mutant::ReleaseDropsSharers,
        Mutant::ReaderBesideAnyKind,
        Mutant::UnwindDisarmedEarly,
        Mutant::ExtendKeepsExpiry,
        Mutant::FenceWithoutFloor,
        Mutant::PlainAcquireOverwrites,
        Mutant::PlainReleaseUnchecked,
        Mutant::PlainExtendRevives,
        Mutant::QueuedReleaseDropped,
        Mutant::NoscriptAnswersShifted,
        Mutant::PlainExtendKeepsExpiry,
        Mutant::NewPrimaryDefaultVotes,
        Mutant::ExecReleasesOrphans,
        Mutant::TimedOutAcquireVotes,
        Mutant::AloneAcquireMisreadsGet,
        Mutant::AloneReleaseUnchecked,
        Mutant::AdoptUnchecked,
        Mutant::MoveSkipsANode,
        Mutant::MoveBackUnchecked,
        Mutant::ServeReleaseByName,
        Mutant::LossNoticeDeaf,
        Mutant::AskUnheard,
        Mutant::TicketUnlockByName,
    ];

    /// The mutants of the bug classes only the mixed default run reaches
    /// (docs/torture.md): `redquorum mutants` runs them with the default
    /// `redquorum torture`, no recipe of their own.
    /// They are the last twenty-six of [`Mutant::ALL`].
    pub const CLASSES: &[Mutant] = Mutant::ALL.split_at(Mutant::ALL.len() - 26).1;

    /// The kebab-case name.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(redquorum_mutants)]
    /// assert_eq!(redquorum::mutants::Mutant::LongLease.name(), "long-lease");
    /// ```
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Mutant::ValidityUnreduced => "validity-unreduced",
            Mutant::LongLease => "long-lease",
            Mutant::NoUnwind => "no-unwind",
            Mutant::NoOwnerCheck => "no-owner-check",
            Mutant::MinorityQuorum => "minority-quorum",
            Mutant::FenceWithoutWriteBack => "fence-without-write-back",
            Mutant::RevivingExtend => "reviving-extend",
            Mutant::NoscriptAfterUnwind => "noscript-after-unwind",
            Mutant::PermitWithoutSlot => "permit-without-slot",
            Mutant::SharedLeadership => "shared-leadership",
            Mutant::LockDelayIgnored => "lock-delay-ignored",
            Mutant::AllOfLastOnly => "all-of-last-only",
            Mutant::ClockMonitorBlind => "clock-monitor-blind",
            Mutant::InspectAnyNode => "inspect-any-node",
            Mutant::StaleForceFence => "stale-force-fence",
            Mutant::NewPrimaryVotesAtOnce => "new-primary-votes-at-once",
            Mutant::ForceReleaseBlind => "force-release-blind",
            Mutant::ValidityNoDrift => "validity-no-drift",
            Mutant::ValidityFromReplies => "validity-from-replies",
            Mutant::ExtendBelowQuorum => "extend-below-quorum",
            Mutant::ReleaseDropsSharers => "release-drops-sharers",
            Mutant::ReaderBesideAnyKind => "reader-beside-any-kind",
            Mutant::UnwindDisarmedEarly => "unwind-disarmed-early",
            Mutant::ExtendKeepsExpiry => "extend-keeps-expiry",
            Mutant::FenceWithoutFloor => "fence-without-floor",
            Mutant::PlainAcquireOverwrites => "plain-acquire-overwrites",
            Mutant::PlainReleaseUnchecked => "plain-release-unchecked",
            Mutant::PlainExtendRevives => "plain-extend-revives",
            Mutant::QueuedReleaseDropped => "queued-release-dropped",
            Mutant::NoscriptAnswersShifted => "noscript-answers-shifted",
            Mutant::PlainExtendKeepsExpiry => "plain-extend-keeps-expiry",
            Mutant::NewPrimaryDefaultVotes => "new-primary-default-votes",
            Mutant::ExecReleasesOrphans => "exec-releases-orphans",
            Mutant::TimedOutAcquireVotes => "timed-out-acquire-votes",
            Mutant::AloneAcquireMisreadsGet => "alone-acquire-misreads-get",
            Mutant::AloneReleaseUnchecked => "alone-release-unchecked",
            Mutant::AdoptUnchecked => "adopt-unchecked",
            Mutant::MoveSkipsANode => "move-skips-a-node",
            Mutant::MoveBackUnchecked => "move-back-unchecked",
            Mutant::ServeReleaseByName => "serve-release-by-name",
            Mutant::LossNoticeDeaf => "loss-notice-deaf",
            Mutant::AskUnheard => "ask-unheard",
            Mutant::TicketUnlockByName => "ticket-unlock-by-name",
        }
    }
}

impl fmt::Display for Mutant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Mutant {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|m| m.name()).collect();
                format!("unknown mutant {s:?} (mutants: {})", names.join(", "))
            })
    }
}

mod select;
#[cfg(redquorum_mutants)]
pub use select::{PATCHED, activate, active};
// Called only by the patches' hooks: unused in the library's own sources.
#[allow(unused_imports)]
pub(crate) use select::is_active;

#[cfg(test)]
mod tests;
