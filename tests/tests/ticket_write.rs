//! A write lock's lease ticket on real nodes: handed to another client (a
//! `Redlock` of its own, as another process) with its fencing token, still
//! excluding readers, the old handle's release removing nothing; and a
//! ticket taken over as the wrong kind, refused with nothing sent.

mod common;

use std::time::Duration;

use common::{cluster, eventually, held_on, redlock};
use redquorum::Error;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_lock_handed_over_keeps_its_fence_and_still_excludes_readers() {
    let nodes = cluster(3);
    let holder = redlock(&nodes, Duration::from_secs(30));
    let adopter = redlock(&nodes, Duration::from_secs(30));
    let reader = redlock(&nodes, Duration::from_secs(30));
    let write = holder.write_lock("ledger").await.unwrap();
    let token = write.fence().await.unwrap();
    let key = write.key().to_owned();
    let old = write.owner().to_string();
    let ticket = write.ticket();
    assert_eq!(ticket.kind(), "write");
    // As another process would get it: the string form.
    let ticket: redquorum::Ticket = ticket.to_string().parse().unwrap();
    let adopted = adopter.adopt_write(&ticket).await.expect("adopted");
    assert_eq!(
        adopted.fence().await.unwrap(),
        token,
        "the fence carried over"
    );
    let new = adopted.owner().to_string();
    let moved = eventually(common::LANDS_WITHIN, || async {
        held_on(&nodes, &key, &new) == 3 && held_on(&nodes, &key, &old) == 0
    })
    .await;
    assert!(moved, "{:?}", common::values(&nodes, &key));
    // Still a writer's: no reader gets in.
    let refused = reader.try_read_lock("ledger").await;
    assert!(
        matches!(refused, Err(Error::Contended { .. })),
        "{refused:?}"
    );
    // The old handle's release is owner-checked: it removes nothing.
    assert!(matches!(write.release().await, Err(Error::NotHeld { .. })));
    assert_eq!(held_on(&nodes, &key, &new), 3);
    adopted.release().await.unwrap();
    let read = reader.try_read_lock("ledger").await.expect("free again");
    read.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ticket_taken_over_as_another_kind_is_refused_with_nothing_sent() {
    let nodes = cluster(3);
    let holder = redlock(&nodes, Duration::from_secs(30));
    let adopter = redlock(&nodes, Duration::from_secs(30));
    let write = holder.write_lock("kinds").await.unwrap();
    let (key, old) = (write.key().to_owned(), write.owner().to_string());
    let everywhere = eventually(common::LANDS_WITHIN, || async {
        held_on(&nodes, &key, &old) == 3
    })
    .await;
    assert!(everywhere, "{:?}", common::values(&nodes, &key));
    let write_ticket = write.ticket();
    for refused in [
        adopter.adopt(&write_ticket).await.err(),
        adopter.resume(&write_ticket).await.err(),
    ] {
        let refused = refused.expect("a write ticket taken as a plain lock");
        assert!(
            matches!(
                refused,
                Error::TicketKind {
                    ticket: "write",
                    asked: "lock",
                    ..
                }
            ),
            "{refused}"
        );
    }
    assert_eq!(
        held_on(&nodes, &key, &old),
        3,
        "the refusal changed something"
    );
    write.release().await.unwrap();

    let lock = holder.lock("kinds").await.unwrap();
    let (key, old) = (lock.key().to_owned(), lock.owner().to_string());
    common::assert_held_on(&nodes, &lock, 3).await;
    let refused = adopter.adopt_write(&lock.ticket()).await.err();
    assert!(
        matches!(
            refused,
            Some(Error::TicketKind {
                ticket: "lock",
                asked: "write",
                ..
            })
        ),
        "{refused:?}"
    );
    assert_eq!(held_on(&nodes, &key, &old), 3);
    lock.release().await.unwrap();
}
