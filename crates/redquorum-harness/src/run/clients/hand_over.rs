//! A hold handed over as a lease ticket ([`Locker::hand_over`]) instead of
//! released: two tasks of the client adopt the ticket at once
//! ([`Locker::adopt`]), as two workers racing for a job's lock would. The
//! one granted reads and writes the protected counter with the hold's
//! fencing token and releases it; the other is refused. Each adopter is a
//! session of its own ([`Session::adopted_from`]): the checker judges the
//! winner as any other holder (a grant that overlaps the old holder's use,
//! or both adopters granted, is an overlap), and the old holder's keys must
//! be gone once the hold moved.

use std::sync::Arc;
use std::time::Duration;

use super::attempts::{recording, taken};
use super::client::Client;
use crate::evidence::{Holder, Session};
use crate::run::locker::Locker;

impl<L: Locker> Client<L> {
    /// Two adopters of `ticket` (the hold of owner `from` on `resource`)
    /// at once, each holding `hold` when granted; when neither was (the
    /// nodes failed them), a third tries, so the hold does not wait out
    /// its TTL when the nodes come back.
    pub(super) async fn adopters(&self, resource: &str, ticket: &str, from: &str, hold: Duration) {
        let (first, second) = tokio::join!(
            self.adopter(resource, ticket, from, hold),
            self.adopter(resource, ticket, from, hold)
        );
        if !first && !second {
            self.adopter(resource, ticket, from, hold).await;
        }
    }

    /// One adopter's session, recorded; whether it was granted.
    async fn adopter(&self, resource: &str, ticket: &str, from: &str, hold: Duration) -> bool {
        let history = self.history();
        let start = history.now();
        let tried = Arc::default();
        let adopted = recording(&tried, self.locker().adopt(ticket)).await;
        let tried = taken(&tried);
        let mut session = match adopted {
            Err(refusal) => {
                let mut session = Session::refused(self.client(), resource, start, refusal.kind);
                session.ended = Some(history.now());
                session.group = self.group();
                session
            }
            Ok(grant) => {
                let (mut session, held) = self
                    .critical_section(resource, start, grant, Holder::Brief, hold)
                    .await;
                session.release = Some(history.now());
                if self.locker().release(held).await.is_ok() {
                    session.released = Some(history.now());
                }
                session
            }
        };
        let granted = session.grant.is_some();
        session.tried = tried;
        session.adopted_from = Some(from.to_owned());
        history.record(session);
        granted
    }
}
