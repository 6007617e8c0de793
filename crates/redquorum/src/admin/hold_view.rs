//! [`HoldView`]: one live hold of a lock record, as one node's inspection
//! shows it.

use std::time::Duration;

use crate::protocol::fence::FenceToken;
use crate::protocol::owner_info::OwnerInfo;

/// One live hold, as one node sees it.
///
/// # Examples
///
/// ```no_run
/// # fn demo(hold: &redquorum::HoldView) {
/// println!("{} for {:?} more, by {:?}", hold.token(), hold.left(), hold.owner_info());
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HoldView {
    // Set by the inspection that parses a node's answer (inspect.rs).
    pub(super) token: String,
    pub(super) left: Duration,
    pub(super) info: Option<OwnerInfo>,
    pub(super) fence: Option<FenceToken>,
}

impl HoldView {
    /// The hold's token (`Lock::owner`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(hold: &redquorum::HoldView) {
    /// println!("{}", hold.token());
    /// # }
    /// ```
    #[must_use]
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Time left before it expires, by the node's clock.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(hold: &redquorum::HoldView) {
    /// println!("{:?}", hold.left());
    /// # }
    /// ```
    #[must_use]
    pub fn left(&self) -> Duration {
        self.left
    }

    /// Who took it, when the holder attached its information
    /// (`Redlock::with_owner_info`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(hold: &redquorum::HoldView) {
    /// if let Some(info) = hold.owner_info() { println!("{info}"); }
    /// # }
    /// ```
    #[must_use]
    pub fn owner_info(&self) -> Option<&OwnerInfo> {
        self.info.as_ref()
    }

    /// The hold's fencing token, once its holder took it (`Lock::fence`,
    /// `Leadership::epoch`): the token its writes carry. A plain lock's
    /// hold shows none: its record, a string, keeps only its owner token,
    /// and its fencing token is where the write-back put it, in the
    /// resource's fence counter ([`NodeView::fence`](crate::NodeView::fence)).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(hold: &redquorum::HoldView) {
    /// if let Some(token) = hold.fence() { println!("writes carry {token}"); }
    /// # }
    /// ```
    #[must_use]
    pub fn fence(&self) -> Option<FenceToken> {
        self.fence
    }
}
