//! Sending one change to the sink over the bounded channel, its bytes counted against the
//! channel's budget.
//!
//! Invariant: this is not for a `select!` branch — dropping the future drops the change.
//! Where a wait may be cancelled (shutdown), the callers reserve room first instead, which
//! takes no message.

use crate::pipeline::{Change, ChangeSender};

/// Sends one change, its bytes counted against the channel's budget (not for a `select!`
/// branch: dropping this future drops the change).
pub(super) async fn send(
    tx: &ChangeSender,
    change: Change,
) -> std::result::Result<(), crate::channel::Closed> {
    let bytes = change.approx_bytes();
    tx.send(change, bytes).await
}
