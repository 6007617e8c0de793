//! How a [`Violation`] reads in a report: what broke, the sessions (or
//! keys, or operator call) involved, and the times on the history's clock.

use std::fmt;
use std::time::Duration;

use super::Violation;

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Overlap { first, second } => write!(
                f,
                "overlap on {:?}:\n  first:  {first}\n  second: {second}",
                first.resource
            ),
            Violation::StaleWrite { session, by: None } => write!(
                f,
                "write after the deadline on {:?}:\n  {session}",
                session.resource
            ),
            Violation::StaleWrite {
                session,
                by: Some(by),
            } => write!(
                f,
                "stale write accepted on {:?} (its fencing token is below one accepted before it):\n  stale:  {session}\n  after:  {by}",
                session.resource
            ),
            Violation::LostUpdate { lost, by } => write!(
                f,
                "lost update on {:?}: both read {}, the second write overwrote the first:\n  lost: {lost}\n  by:   {by}",
                lost.resource,
                lost.read.unwrap_or_default()
            ),
            Violation::CounterMismatch {
                resource,
                completed,
                indeterminate,
                value,
            } => write!(
                f,
                "counter on {resource:?}: value {value}, but {completed} writes were accepted \
                 (+{indeterminate} indeterminate)"
            ),
            Violation::Leaked(leak) => write!(f, "leaked key {leak}"),
            Violation::FenceNotIncreasing { earlier, later } => write!(
                f,
                "fencing token did not increase on {:?}:\n  earlier: {earlier}\n  later:   {later}",
                earlier.resource
            ),
            Violation::OrphanKey {
                key,
                owner,
                attempt,
            } => {
                write!(f, "orphan key {key}")?;
                match (owner, attempt) {
                    (Some(owner), _) => write!(f, "\n  owner released: {owner}"),
                    (None, Some(attempt)) => {
                        write!(f, "\n  set by an unwound attempt of: {attempt}")
                    }
                    (None, None) => f.write_str("\n  owner never granted (an unwound attempt)"),
                }
            }
            Violation::EarlyGrant {
                vanished,
                early,
                blocked_until,
            } => write!(
                f,
                "granted within the lock-delay on {:?} (not before {:.3} s):\n  vanished: {vanished}\n  early:    {early}",
                early.resource,
                blocked_until.as_secs_f64()
            ),
            Violation::Operator {
                call,
                session,
                fault,
            } => write!(f, "{call}\n  {fault}:\n  {session}"),
            Violation::LossUnheard { session, call, due } => write!(
                f,
                "loss not noticed on {:?}: {call}, yet the holder believed in its lease until {:.3} s, past {:.3} s:\n  {session}",
                session.resource,
                session
                    .release
                    .or(session.ended)
                    .unwrap_or_default()
                    .as_secs_f64(),
                due.as_secs_f64()
            ),
            Violation::AskUnheard { session, call, due } => write!(
                f,
                "ask not heard on {:?}: {call}, yet the holder had not heard it by {:.3} s{}:\n  {session}",
                session.resource,
                due.as_secs_f64(),
                session.asked.map_or(String::new(), |heard| format!(
                    " (heard at {:.3} s)",
                    heard.as_secs_f64()
                ))
            ),
            Violation::Revived {
                session,
                extension,
                expired,
            } => write!(
                f,
                "lease renewed after it ended on {:?}: extension sent at {:.3} s, the deadline was {:.3} s:\n  {session}",
                session.resource,
                extension.at.as_secs_f64(),
                expired.as_secs_f64()
            ),
            Violation::HoldRemoved { key, owner } => write!(
                f,
                "hold removed by another on {:?}: {key}, before its owner's release and its ttl:\n  owner: {owner}",
                owner.resource
            ),
            Violation::HoldCameBack { key, owner } => write!(
                f,
                "hold came back on {:?} after it had gone: {key}:\n  owner: {owner}",
                owner.resource
            ),
            Violation::Unbacked {
                session,
                at,
                deadline,
                extended,
                nodes,
            } => {
                let ms = |d: Duration| d.as_secs_f64() * 1e3;
                write!(
                    f,
                    "unbacked on {:?} at {:.1} ms: a majority did not hold it to its {} deadline {:.1} ms:",
                    session.resource,
                    ms(*at),
                    if *extended { "extended" } else { "granted" },
                    ms(*deadline)
                )?;
                for n in nodes {
                    match n.expires {
                        Some(e) => write!(f, " node {} expires by {:.1} ms;", n.node, ms(e))?,
                        None => write!(f, " node {} missing;", n.node)?,
                    }
                }
                write!(f, "\n  holder: {session}")
            }
            Violation::UnbackedVote { session, at, node } => {
                let ms = |d: Duration| d.as_secs_f64() * 1e3;
                write!(
                    f,
                    "unbacked vote on {:?} at {:.1} ms: node {} was counted for the grant but ",
                    session.resource,
                    ms(*at),
                    node.node
                )?;
                match node.expires {
                    Some(e) => write!(f, "its hold expires by {:.1} ms", ms(e))?,
                    None => write!(f, "does not hold it")?,
                }
                write!(
                    f,
                    ", before the granted deadline {:.1} ms\n  holder: {session}",
                    ms(session.validity_end.unwrap_or_default())
                )
            }
            Violation::UnbackedToken { session, nodes } => {
                write!(
                    f,
                    "unbacked token on {:?}: token {} not in a quorum's fence counters:",
                    session.resource,
                    session.fence.unwrap_or_default()
                )?;
                for n in nodes {
                    write!(
                        f,
                        " node {} counter {} at {:.1} ms;",
                        n.node,
                        n.value,
                        n.at.as_secs_f64() * 1e3
                    )?;
                }
                write!(f, "\n  holder: {session}")
            }
        }
    }
}
