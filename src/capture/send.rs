//! Sending changes to the sink: the [`Outbox`] gathers consecutive changes into one channel
//! message (the source → sink channel carries batches), so the sink's thread is woken once per
//! batch rather than once per change (with one-row source transactions, waking it per change
//! cost a sixth of the source's time).
//!
//! Invariants: changes reach the sink in the order they were handed over; a batch holds at
//! most [`BATCH_MAX_CHANGES`] changes and [`batch_max_bytes`] bytes (a single larger change
//! goes alone), and its bytes count against the channel's budget once it is sent; nothing is
//! held back: the stream loop sends the batch before it waits for anything
//! ([`Outbox::flush_or_stop`]), and every change of the stream passes the snapshot in progress
//! (if any) as it is handed over, before the sink can get it.
//!
//! Cancel safety: [`Outbox::flush`] reserves room first, which takes nothing, and sends the
//! batch synchronously once the room is there: dropped while waiting, the batch stays here.
//! [`Outbox::send`] may wait in a flush *before* it takes the change: dropped then, the change
//! is lost, so only [`Outbox::send_or_stop`] is for a `select!`-driven stop.

use tokio::sync::watch;

use crate::channel::Closed;
use crate::pipeline::{batch_max_bytes, Change, ChangeSender, BATCH_MAX_CHANGES};
use crate::snapshot::coordinator::Snapshotter;

/// The changes not yet sent to the sink, and the way there.
pub(super) struct Outbox {
    tx: ChangeSender,
    /// Changes handed over, in order, not sent yet.
    batch: Vec<Change>,
    /// Their bytes ([`Change::approx_bytes`]).
    bytes: usize,
    /// Most bytes in one batch.
    max_bytes: usize,
}

impl Outbox {
    pub(super) fn new(tx: ChangeSender) -> Self {
        let max_bytes = batch_max_bytes(tx.max_bytes());
        Self {
            tx,
            batch: Vec::new(),
            bytes: 0,
            max_bytes,
        }
    }

    /// Nothing is waiting to be sent.
    pub(super) fn is_empty(&self) -> bool {
        self.batch.is_empty()
    }

    /// Whether `bytes` more would overfill the batch at hand (an empty one takes anything).
    fn full_for(&self, bytes: usize) -> bool {
        !self.batch.is_empty()
            && (self.batch.len() >= BATCH_MAX_CHANGES || self.bytes + bytes > self.max_bytes)
    }

    /// Takes `change` into the batch, after sending the batch at hand if the change would
    /// overfill it (not for a `select!` branch: dropping this future drops the change).
    pub(super) async fn send(&mut self, change: Change) -> Result<(), Closed> {
        let bytes = change.approx_bytes();
        if self.full_for(bytes) {
            self.flush().await?;
        }
        self.batch.push(change);
        self.bytes += bytes;
        Ok(())
    }

    /// [`Outbox::send`], after the snapshot in progress (if any) has observed the change:
    /// every change of the stream passes the snapshot before the sink gets it.
    pub(super) async fn observed_send(
        &mut self,
        snap: &mut Option<Snapshotter>,
        mut change: Change,
    ) -> Result<(), Closed> {
        if let Some(s) = snap.as_mut() {
            s.observe(&mut change);
        }
        self.send(change).await
    }

    /// [`Outbox::send`] unless the pipeline stops first; false when it stopped (or the sink is
    /// gone), and then the change is dropped with the pipeline's other unsent changes.
    pub(super) async fn send_or_stop(
        &mut self,
        shutdown: &mut watch::Receiver<bool>,
        change: Change,
    ) -> bool {
        let bytes = change.approx_bytes();
        if self.full_for(bytes) && !self.flush_or_stop(shutdown).await {
            return false;
        }
        self.batch.push(change);
        self.bytes += bytes;
        true
    }

    /// Sends the batch at hand, if any, as one message once the channel has room for it.
    /// Cancel-safe: dropped while waiting for room, the batch stays here whole.
    pub(super) async fn flush(&mut self) -> Result<(), Closed> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let permit = self.tx.reserve(self.bytes).await?;
        permit.send(std::mem::take(&mut self.batch));
        self.bytes = 0;
        Ok(())
    }

    /// [`Outbox::flush`] unless the pipeline stops first; false when it stopped (or the sink
    /// is gone). Cancel-safe (`changed` is; [`Outbox::flush`] is).
    pub(super) async fn flush_or_stop(&mut self, shutdown: &mut watch::Receiver<bool>) -> bool {
        tokio::select! {
            biased;
            _ = shutdown.changed() => false,
            r = self.flush() => r.is_ok(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TxnMeta;
    use futures_util::FutureExt;

    fn begin() -> Change {
        Change::Begin(TxnMeta::default())
    }

    #[tokio::test]
    async fn changes_go_in_batches_bounded_by_count_and_in_order() {
        let (tx, mut rx) = crate::pipeline::change_channel(64 << 20);
        let mut out = Outbox::new(tx);
        for _ in 0..BATCH_MAX_CHANGES + 3 {
            out.send(begin()).await.unwrap();
        }
        // The full batch went when the next change would have overfilled it; 3 wait here.
        assert_eq!(out.batch.len(), 3);
        out.flush().await.unwrap();
        assert!(out.is_empty());
        let mut n = 0;
        while rx.try_recv().is_some() {
            n += 1;
        }
        assert_eq!(n, BATCH_MAX_CHANGES + 3);
    }

    #[tokio::test]
    async fn a_batch_is_bounded_by_bytes_and_a_large_change_goes_alone() {
        // The smallest budget accepted: batches of at most 8 KiB.
        let (tx, mut rx) = crate::pipeline::change_channel(64 << 10);
        let mut out = Outbox::new(tx);
        assert_eq!(out.max_bytes, 8 << 10);
        let each = begin().approx_bytes();
        let fit = (8 << 10) / each;
        for _ in 0..fit {
            out.send(begin()).await.unwrap();
        }
        assert_eq!(out.batch.len(), fit, "still one batch");
        out.send(begin()).await.unwrap();
        assert_eq!(out.batch.len(), 1, "the full one went");
        out.flush().await.unwrap();
        let mut n = 0;
        while rx.try_recv().is_some() {
            n += 1;
        }
        assert_eq!(n, fit + 1);
    }

    #[tokio::test]
    async fn a_dropped_flush_keeps_the_batch_and_a_stop_is_seen_while_waiting() {
        let (tx, mut rx) = crate::pipeline::change_channel(64 << 10);
        let mut out = Outbox::new(tx);
        // One change per batch until the byte budget has no room for another: the flush
        // that has to wait is dropped (as a `select!` drops a losing branch).
        let mut sent = 0;
        loop {
            out.send(begin()).await.unwrap();
            match out.flush().now_or_never() {
                Some(r) => r.unwrap(),
                None => break,
            }
            sent += 1;
        }
        assert!(sent > 0);
        assert_eq!(out.batch.len(), 1, "the dropped flush kept the batch");
        let (stop_tx, mut stop_rx) = watch::channel(false);
        stop_tx.send(true).unwrap();
        assert!(!out.flush_or_stop(&mut stop_rx).await, "the stop wins");
        assert_eq!(out.batch.len(), 1);
        // Room again: the kept batch goes whole, after the others.
        let mut received = 0;
        while rx.try_recv().is_some() {
            received += 1;
        }
        assert_eq!(received, sent);
        out.flush().await.unwrap();
        assert!(rx.try_recv().is_some());
        assert!(rx.is_empty());
    }
}
