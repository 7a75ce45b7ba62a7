//! Sending changes to the sink over the bounded channel, their bytes counted against the
//! channel's budget: [`send`] and [`observed_send`] wait for room as long as it takes;
//! [`send_or_stop`] gives up when the pipeline stops.
//!
//! Invariant: only [`send_or_stop`] is for a `select!` — dropping the future of the others
//! drops the change. It reserves room first, which takes no message, and sends only once the
//! room is there.

use tokio::sync::watch;

use crate::pipeline::{Change, ChangeSender};
use crate::snapshot::coordinator::Snapshotter;

/// Sends one change, its bytes counted against the channel's budget (not for a `select!`
/// branch: dropping this future drops the change).
pub(super) async fn send(
    tx: &ChangeSender,
    change: Change,
) -> std::result::Result<(), crate::channel::Closed> {
    let bytes = change.approx_bytes();
    tx.send(change, bytes).await
}

/// [`send`], after the snapshot in progress (if any) has observed the change: every change
/// of the stream passes the snapshot before the sink gets it.
pub(super) async fn observed_send(
    tx: &ChangeSender,
    snap: &mut Option<Snapshotter>,
    mut change: Change,
) -> std::result::Result<(), crate::channel::Closed> {
    if let Some(s) = snap.as_mut() {
        s.observe(&mut change);
    }
    send(tx, change).await
}

/// Sends one change unless the pipeline stops first; false when it stopped (or the sink is
/// gone). Cancel safety: `reserve` takes no message (the change stays here until its room is
/// reserved, then goes in synchronously), and `changed` is cancel-safe.
pub(super) async fn send_or_stop(
    tx: &ChangeSender,
    shutdown: &mut watch::Receiver<bool>,
    change: Change,
) -> bool {
    let bytes = change.approx_bytes();
    tokio::select! {
        biased;
        _ = shutdown.changed() => false,
        p = tx.reserve(bytes) => match p {
            Ok(p) => {
                p.send(change);
                true
            }
            Err(_) => false,
        },
    }
}
