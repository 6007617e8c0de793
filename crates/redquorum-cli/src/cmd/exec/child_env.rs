//! The command's environment: the resource, the owner token, the fencing
//! token for commands that write to a resource checking it, and what the
//! kind of hold adds. The fencing token is asked of a quorum when the
//! command starts; a round too few nodes took (a node timeout under load)
//! leaves the lock held (`Error::FenceUnavailable`), so it is asked again,
//! a retry delay apart, while the lease is not at risk, for at most one TTL
//! (`fence_retry.rs`).

use redquorum::Error;

use super::hold::Hold;
use crate::fence_retry::{FenceRetry, ask_again};

/// The environment of the command run under `hold`.
pub(super) async fn child_env<H: Hold>(
    hold: &H,
    retry: FenceRetry,
) -> Result<Vec<(&'static str, String)>, Error> {
    let mut env = vec![
        ("REDQUORUM_RESOURCE", hold.resource().to_owned()),
        // Names this hold in `status` and `list`, and in a history's audit.
        ("REDQUORUM_OWNER", hold.owner()),
    ];
    let lease = hold.lease();
    let no_quorum = |e: &Error| matches!(e, Error::FenceUnavailable { .. });
    let token = ask_again(|| hold.fence(), no_quorum, || lease.is_at_risk(), retry).await;
    match token {
        Ok(fence) => env.push(("REDQUORUM_FENCE", fence.to_string())),
        Err(Error::FencingOff { .. }) => {}
        Err(error) => return Err(error),
    }
    env.extend(hold.extra_env());
    Ok(env)
}
