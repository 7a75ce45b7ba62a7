//! The source → sink channel, bounded by message count *and* by bytes; [`BatchReceiver`]
//! gives out a channel of batches one item at a time.
//!
//! Invariant: the messages in the channel hold at most `max_bytes` (as their senders sized
//! them) and at most `capacity` messages, except that a message larger than the whole byte
//! budget is let through alone: it waits until the channel is empty of bytes, then takes the
//! whole budget, so nothing deadlocks and nothing else is queued beside it. The bytes of a
//! message are given back when the receiver takes it off (or when the channel is dropped with
//! it inside); a message taken off early to look at ([`BatchReceiver::look_further`]) keeps
//! them until its turn comes.
//!
//! Cancel safety: [`Sender::reserve`] takes no message. It first acquires the bytes, then a
//! slot; a dropped `reserve` gives both back, and the caller still holds its message.
//! [`Permit::send`] is synchronous and cannot fail, so a message is either in the channel or
//! still the caller's, never lost in between. [`Receiver::recv`] is cancel-safe as
//! `tokio::sync::mpsc::Receiver::recv` is: a message is only taken when it completes.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

/// The receiver is gone: the message cannot be delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed;

/// A message in the channel with the bytes it holds of the budget.
struct Slot<T> {
    msg: T,
    _bytes: OwnedSemaphorePermit,
}

/// The sending half.
pub struct Sender<T> {
    tx: mpsc::Sender<Slot<T>>,
    budget: Arc<Semaphore>,
    max: u32,
}

/// The receiving half.
pub struct Receiver<T> {
    rx: mpsc::Receiver<Slot<T>>,
    budget: Arc<Semaphore>,
}

/// Room for one message of a given size, reserved by [`Sender::reserve`].
pub struct Permit<'a, T> {
    slot: mpsc::Permit<'a, Slot<T>>,
    bytes: OwnedSemaphorePermit,
}

/// A channel of at most `capacity` messages (at least 1) and `max_bytes` bytes (clamped to
/// `1..=u32::MAX`).
pub fn channel<T>(capacity: usize, max_bytes: u64) -> (Sender<T>, Receiver<T>) {
    let max = u32::try_from(max_bytes.max(1)).unwrap_or(u32::MAX);
    let budget = Arc::new(Semaphore::new(max as usize));
    let (tx, rx) = mpsc::channel(capacity.max(1));
    (
        Sender {
            tx,
            budget: budget.clone(),
            max,
        },
        Receiver { rx, budget },
    )
}

impl<T> Sender<T> {
    /// The share of the budget a message of `bytes` takes: at least 1, at most all of it.
    fn permits(&self, bytes: usize) -> u32 {
        u32::try_from(bytes).unwrap_or(u32::MAX).clamp(1, self.max)
    }

    /// Waits until a message of `bytes` fits, and reserves its room. Cancel-safe: dropping
    /// the future gives back whatever it had acquired.
    pub async fn reserve(&self, bytes: usize) -> Result<Permit<'_, T>, Closed> {
        let bytes = self
            .budget
            .clone()
            .acquire_many_owned(self.permits(bytes))
            .await
            .map_err(|_| Closed)?;
        let slot = self.tx.reserve().await.map_err(|_| Closed)?;
        Ok(Permit { slot, bytes })
    }

    /// Sends `msg` of `bytes` once it fits. Dropping the future drops `msg` with it: in a
    /// `select!` that must keep the message, use [`Sender::reserve`] and [`Permit::send`].
    pub async fn send(&self, msg: T, bytes: usize) -> Result<(), Closed> {
        self.reserve(bytes).await?.send(msg);
        Ok(())
    }

    /// Bytes of the budget free now.
    pub fn free_bytes(&self) -> usize {
        self.budget.available_permits()
    }

    /// The whole byte budget.
    pub fn max_bytes(&self) -> usize {
        self.max as usize
    }
}

impl<T> Permit<'_, T> {
    /// Puts `msg` into the reserved room (synchronous, cannot fail).
    pub fn send(self, msg: T) {
        self.slot.send(Slot {
            msg,
            _bytes: self.bytes,
        });
    }
}

/// The share of the byte budget of a message taken off the channel early
/// ([`Receiver::try_recv_holding`]): given back when dropped.
pub struct Held {
    _bytes: OwnedSemaphorePermit,
}

impl<T> Receiver<T> {
    /// The next message if one is waiting now (`None`: none, or every sender is gone; the
    /// bytes go back as with [`Receiver::recv`]).
    pub fn try_recv(&mut self) -> Option<T> {
        self.rx.try_recv().ok().map(|s| s.msg)
    }

    /// [`Receiver::try_recv`], the message keeping its bytes of the budget until the
    /// [`Held`] is dropped (its slot is free at once): for a receiver that takes messages
    /// ahead of using them, so the budget still bounds what both sides hold.
    pub fn try_recv_holding(&mut self) -> Option<(T, Held)> {
        self.rx
            .try_recv()
            .ok()
            .map(|s| (s.msg, Held { _bytes: s._bytes }))
    }

    /// No message is waiting now.
    pub fn is_empty(&self) -> bool {
        self.rx.is_empty()
    }

    /// The next message, `None` once every sender is gone and the channel is empty. Its bytes
    /// go back to the budget as it is taken off. Cancel-safe.
    pub async fn recv(&mut self) -> Option<T> {
        self.rx.recv().await.map(|s| s.msg)
    }
}

/// The receiving half of a channel of batches (`Vec<T>`), giving out one item at a time: the
/// sender puts what it has at hand into one message, so the receiver is woken once per batch
/// instead of once per item. Items come out in the order they were put in.
///
/// Cancel safety: [`BatchReceiver::recv`] only awaits [`Receiver::recv`] (cancel-safe); the
/// batch it takes is stored before the first item is handed out, synchronously.
pub struct BatchReceiver<T> {
    rx: Receiver<Vec<T>>,
    /// What is left of the batch taken last.
    batch: std::vec::IntoIter<T>,
    /// Batches taken off the channel to look at ([`BatchReceiver::look_further`]), in order,
    /// each holding its bytes of the budget until it comes up.
    further: VecDeque<(Vec<T>, Held)>,
}

impl<T> BatchReceiver<T> {
    /// Gives out the items of `rx`'s batches one at a time.
    pub fn new(rx: Receiver<Vec<T>>) -> Self {
        Self {
            rx,
            batch: Vec::new().into_iter(),
            further: VecDeque::new(),
        }
    }

    /// The next batch taken ahead, if any (its bytes go back to the budget now).
    fn next_further(&mut self) -> Option<Vec<T>> {
        self.further.pop_front().map(|(batch, _held)| batch)
    }

    /// The next item if one is at hand now (the rest of a batch, or a batch waiting).
    pub fn try_recv(&mut self) -> Option<T> {
        loop {
            if let Some(item) = self.batch.next() {
                return Some(item);
            }
            self.batch = match self.next_further() {
                Some(batch) => batch,
                None => self.rx.try_recv()?,
            }
            .into_iter();
        }
    }

    /// No item is at hand now.
    pub fn is_empty(&self) -> bool {
        self.batch.len() == 0
            && self.further.iter().all(|(b, _)| b.is_empty())
            && self.rx.is_empty()
    }

    /// The items that come next, to look at: the rest of the batch taken last, then the
    /// batches taken by [`BatchReceiver::look_further`].
    pub fn ahead(&self) -> impl Iterator<Item = &T> {
        self.batch
            .as_slice()
            .iter()
            .chain(self.further.iter().flat_map(|(b, _)| b.iter()))
    }

    /// Takes the batches waiting in the channel now, up to `max_batches` taken ahead in all,
    /// so that [`BatchReceiver::ahead`] shows them too. They keep their bytes of the budget
    /// until they come up: the sender cannot fill the room they left with more than the
    /// budget allows. Synchronous.
    pub fn look_further(&mut self, max_batches: usize) {
        while self.further.len() < max_batches {
            match self.rx.try_recv_holding() {
                Some(taken) => self.further.push_back(taken),
                None => return,
            }
        }
    }

    /// The next item, `None` once every sender is gone and everything was taken. Cancel-safe.
    pub async fn recv(&mut self) -> Option<T> {
        loop {
            if let Some(item) = self.batch.next() {
                return Some(item);
            }
            if let Some(batch) = self.next_further() {
                self.batch = batch.into_iter();
                continue;
            }
            self.batch = self.rx.recv().await?.into_iter();
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        // A sender waiting for bytes learns at once that nobody will take its message.
        self.budget.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    #[tokio::test]
    async fn the_budget_blocks_at_the_byte_limit_and_receiving_frees_it() {
        let (tx, mut rx) = channel::<u32>(16, 100);
        tx.send(1, 60).await.unwrap();
        tx.send(2, 40).await.unwrap();
        assert_eq!(tx.free_bytes(), 0);
        // A third message does not fit, however small.
        assert!(tx.reserve(1).now_or_never().is_none());
        assert_eq!(rx.recv().await, Some(1));
        assert_eq!(tx.free_bytes(), 60);
        assert!(tx.reserve(61).now_or_never().is_none());
        let p = tx.reserve(60).now_or_never().unwrap().unwrap();
        p.send(3);
        assert_eq!(rx.recv().await, Some(2));
        assert_eq!(rx.recv().await, Some(3));
        assert_eq!(
            tx.free_bytes(),
            100,
            "every byte is back once all is received"
        );
    }

    #[tokio::test]
    async fn the_message_count_still_bounds() {
        let (tx, mut rx) = channel::<u32>(2, 1 << 20);
        assert!(rx.is_empty());
        tx.send(1, 1).await.unwrap();
        tx.send(2, 1).await.unwrap();
        assert!(!rx.is_empty());
        assert!(tx.reserve(1).now_or_never().is_none());
        assert_eq!(rx.recv().await, Some(1));
        assert!(tx.reserve(1).now_or_never().is_some());
        assert_eq!(rx.try_recv(), Some(2));
        assert!(rx.is_empty());
        assert_eq!(rx.try_recv(), None);
        assert!(
            tx.reserve(2).now_or_never().is_some(),
            "its slot is free again"
        );
    }

    #[tokio::test]
    async fn an_oversized_message_is_admitted_alone() {
        let (tx, mut rx) = channel::<u32>(16, 100);
        tx.send(1, 10).await.unwrap();
        // Larger than the whole budget: waits until the channel holds no bytes...
        assert!(tx.reserve(500).now_or_never().is_none());
        assert_eq!(rx.recv().await, Some(1));
        let p = tx.reserve(500).now_or_never().unwrap().unwrap();
        p.send(2);
        // ... and nothing goes beside it.
        assert_eq!(tx.free_bytes(), 0);
        assert!(tx.reserve(1).now_or_never().is_none());
        assert_eq!(rx.recv().await, Some(2));
        tx.send(3, 1).await.unwrap();
        assert_eq!(rx.recv().await, Some(3));
    }

    #[tokio::test]
    async fn a_dropped_reserve_loses_nothing() {
        let (tx, mut rx) = channel::<String>(16, 100);
        tx.send("a".into(), 80).await.unwrap();
        let msg = String::from("kept");
        {
            // Pending, then dropped (as a `select!` drops a branch that lost).
            let mut pending = Box::pin(tx.reserve(50));
            assert!((&mut pending).now_or_never().is_none());
        }
        assert_eq!(tx.free_bytes(), 20, "the dropped reservation took no bytes");
        assert_eq!(rx.recv().await.as_deref(), Some("a"));
        tx.reserve(50).await.unwrap().send(msg);
        assert_eq!(rx.recv().await.as_deref(), Some("kept"));
        assert_eq!(tx.free_bytes(), 100);
    }

    #[tokio::test]
    async fn a_gone_receiver_is_reported_also_to_a_waiting_sender() {
        let (tx, rx) = channel::<u32>(16, 100);
        tx.send(1, 100).await.unwrap();
        let waiting = tx.reserve(10);
        drop(rx);
        assert!(matches!(waiting.await, Err(Closed)));
        assert_eq!(tx.send(2, 1).await, Err(Closed));
    }

    #[tokio::test]
    async fn batches_come_out_one_item_at_a_time_in_order() {
        let (tx, rx) = channel::<Vec<u32>>(4, 1 << 10);
        let mut rx = BatchReceiver::new(rx);
        assert!(rx.is_empty());
        assert_eq!(rx.try_recv(), None);
        tx.send(vec![1, 2], 2).await.unwrap();
        tx.send(Vec::new(), 1).await.unwrap();
        tx.send(vec![3], 1).await.unwrap();
        assert!(!rx.is_empty());
        assert_eq!(rx.try_recv(), Some(1));
        assert!(!rx.is_empty(), "the rest of the batch is at hand");
        assert_eq!(rx.ahead().collect::<Vec<_>>(), [&2]);
        assert_eq!(
            tx.free_bytes(),
            1024 - 2,
            "the batch taken gave its bytes back"
        );
        assert_eq!(rx.recv().await, Some(2));
        assert_eq!(rx.try_recv(), Some(3), "an empty batch is passed over");
        assert!(rx.is_empty());
        drop(tx);
        assert_eq!(rx.recv().await, None);
    }

    #[tokio::test]
    async fn batches_looked_at_ahead_keep_their_bytes_and_their_order() {
        let (tx, rx) = channel::<Vec<u32>>(2, 100);
        let mut rx = BatchReceiver::new(rx);
        tx.send(vec![1, 2], 10).await.unwrap();
        tx.send(vec![3], 20).await.unwrap();
        assert_eq!(rx.try_recv(), Some(1));
        assert_eq!(tx.free_bytes(), 80);
        rx.look_further(8);
        assert_eq!(rx.ahead().collect::<Vec<_>>(), [&2, &3]);
        // The slot is free, the bytes are not: the channel's byte bound still holds.
        assert_eq!(tx.free_bytes(), 80);
        tx.send(vec![4], 30).await.unwrap();
        tx.send(vec![5], 30).await.unwrap();
        assert!(
            tx.reserve(21).now_or_never().is_none(),
            "only 20 bytes left"
        );
        // At most `max_batches` are taken ahead.
        rx.look_further(2);
        assert_eq!(rx.ahead().collect::<Vec<_>>(), [&2, &3, &4]);
        assert!(!rx.is_empty());
        assert_eq!(rx.try_recv(), Some(2));
        assert_eq!(rx.recv().await, Some(3));
        assert_eq!(
            tx.free_bytes(),
            20 + 20,
            "the batch of 3 came up and gave its bytes back"
        );
        assert_eq!(rx.try_recv(), Some(4));
        assert_eq!(rx.recv().await, Some(5));
        assert!(rx.is_empty());
        assert_eq!(tx.free_bytes(), 100);
        drop(tx);
        assert_eq!(rx.recv().await, None);
    }

    #[tokio::test]
    async fn a_dropped_batch_recv_loses_nothing() {
        let (tx, rx) = channel::<Vec<u32>>(4, 1 << 10);
        let mut rx = BatchReceiver::new(rx);
        {
            // Pending (nothing sent yet), then dropped as a `select!` drops a losing branch.
            let mut pending = Box::pin(rx.recv());
            assert!((&mut pending).now_or_never().is_none());
        }
        tx.send(vec![7, 8], 2).await.unwrap();
        assert_eq!(rx.recv().await, Some(7));
        assert_eq!(rx.recv().await, Some(8));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_sizes_arrive_complete_and_in_order() {
        const N: u64 = 5000;
        let (tx, mut rx) = channel::<(u64, usize)>(8, 4096);
        let producer = tokio::spawn(async move {
            let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
            for i in 0..N {
                // xorshift: sizes from 0 to twice the budget, oversized ones included.
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let size = (x % 8192) as usize;
                tx.reserve(size).await.unwrap().send((i, size));
            }
        });
        let mut next = 0;
        while let Some((i, _)) = rx.recv().await {
            assert_eq!(i, next);
            next += 1;
        }
        producer.await.unwrap();
        assert_eq!(next, N);
    }
}
