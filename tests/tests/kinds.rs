//! One resource name is one lock: every lock kind on a name excludes the
//! kinds it conflicts with (only readers share), and they share one fence
//! counter. Real nodes.

mod common;

use std::time::Duration;

use common::{cluster, redlock};
use redquorum::{Error, Redlock};

/// Holds `resource` with `kind` (kept alive by the returned guard).
async fn hold(redlock: &Redlock, kind: &str, resource: &str) -> Box<dyn std::any::Any + Send> {
    match kind {
        "plain" => Box::new(redlock.try_lock(resource).await.expect("plain lock")),
        "write" => Box::new(redlock.try_write_lock(resource).await.expect("write lock")),
        "read" => Box::new(redlock.try_read_lock(resource).await.expect("read lock")),
        "reentrant" => Box::new(
            redlock
                .reentrant_owner()
                .try_lock(resource)
                .await
                .expect("reentrant lock"),
        ),
        _ => unreachable!("{kind}"),
    }
}

/// One attempt of `kind` on `resource`: `Ok` if granted (then released).
async fn attempt(redlock: &Redlock, kind: &str, resource: &str) -> Result<(), Error> {
    match kind {
        "plain" => redlock.try_lock(resource).await?.release().await.map(drop),
        "write" => redlock
            .try_write_lock(resource)
            .await?
            .release()
            .await
            .map(drop),
        "read" => redlock
            .try_read_lock(resource)
            .await?
            .release()
            .await
            .map(drop),
        "reentrant" => {
            let owner = redlock.reentrant_owner();
            owner.try_lock(resource).await?.release().await.map(drop)
        }
        _ => unreachable!("{kind}"),
    }
}

const KINDS: [&str; 4] = ["plain", "write", "read", "reentrant"];

/// Every pair of kinds on one name: only read + read may share; anything
/// else is refused as contended (exit 75 for `exec`), not as a node failure.
#[tokio::test]
async fn every_pair_of_kinds_on_one_name_excludes_unless_both_read() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    for held_kind in KINDS {
        for asked_kind in KINDS {
            let resource = format!("kinds-{held_kind}-{asked_kind}");
            let guard = hold(&redlock, held_kind, &resource).await;
            let result = attempt(&redlock, asked_kind, &resource).await;
            let may_share = held_kind == "read" && asked_kind == "read";
            if may_share {
                assert!(result.is_ok(), "{asked_kind} over {held_kind}: {result:?}");
            } else {
                assert!(
                    matches!(result, Err(Error::Contended { .. })),
                    "{asked_kind} over {held_kind} must be contended: {result:?}"
                );
            }
            drop(guard);
        }
    }
}

/// A second owner's reentrant lock is refused; the same owner re-enters.
#[tokio::test]
async fn reentrant_holds_of_one_owner_share_and_other_owners_are_contended() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let owner = redlock.reentrant_owner();
    let first = owner.try_lock("re").await.unwrap();
    let nested = owner.try_lock("re").await.unwrap();
    let other = redlock.reentrant_owner().try_lock("re").await;
    assert!(matches!(other, Err(Error::Contended { .. })), "{other:?}");
    nested.release().await.unwrap();
    first.release().await.unwrap();
    redlock
        .try_lock("re")
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
}
