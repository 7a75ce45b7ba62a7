//! The rows in flight of `sluice bench-latency`: for every id written and not yet received,
//! when its COMMIT returned; the latencies of the rows received; the counts of records that
//! were not such a row. Shared by the writers (which claim transactions and note their
//! commits) and the consumer (which notes what it receives) behind one mutex, on one clock.
//!
//! Ids are handed out in order, a transaction of consecutive ids at a time, so the rows in
//! flight are a window of ids from the oldest not yet received to the newest claimed. Its
//! length is capped ([`Plan::max_in_flight`]): a claim past the cap is an error, so memory
//! never grows with the run's length, only with the rows the pipeline has not delivered yet.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use hdrhistogram::Histogram;

use super::plan::Plan;
use super::stats::latency_histogram;

/// Where one id of the window stands, with times in microseconds from [`Tracker`]'s origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// Claimed by a writer; its COMMIT has not returned.
    Sent,
    /// COMMIT returned at this time; not received yet.
    Committed(u64),
    /// Received at this time before the writer noted its COMMIT returning.
    Early(u64),
    /// Received (and measured when it belongs to the measured window).
    Done,
}

/// One source transaction handed to a writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    /// Its first id.
    pub first: u64,
    /// Its last id.
    pub last: u64,
    /// When it is due, in microseconds from the origin (open loop); `None` for `max`.
    pub due_us: Option<u64>,
    /// Whether it belongs to the measured window (due, or claimed, after the warm-up).
    pub measured: bool,
}

/// What a received record was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Receipt {
    /// A row of this run, received for the first time.
    Row,
    /// An id at or below the run's first: written before the run.
    Older,
    /// An id of this run received again.
    Duplicate,
    /// An id above every id this run handed out.
    Beyond,
}

/// Counts of the records that were no row of this run, or no row at all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Unexpected {
    /// Ids written before the run.
    pub older: u64,
    /// Ids of this run received more than once.
    pub duplicate: u64,
    /// Ids above every id of this run.
    pub beyond: u64,
    /// Keys without an id ([`super::stats::KeyId::Unparsed`]).
    pub unparsed: u64,
    /// Records without a value (tombstones), whatever their key.
    pub tombstones: u64,
}

impl Unexpected {
    /// All of them.
    pub fn total(&self) -> u64 {
        self.older + self.duplicate + self.beyond + self.unparsed + self.tombstones
    }
}

/// The rows in flight and what was measured; see the module's documentation.
#[derive(Debug)]
pub struct Tracker {
    origin: Instant,
    /// Ids of this run are above it.
    base: u64,
    plan: Plan,
    /// When the schedule starts, in microseconds from the origin (set by [`Tracker::begin`]).
    t0_us: u64,
    /// Transactions claimed so far.
    claimed: u64,
    /// The id of `window[0]`.
    lo: u64,
    window: VecDeque<Slot>,
    /// The first id of the measured window, once a measured transaction was claimed.
    measure_from: Option<u64>,
    hist: Histogram<u64>,
    /// Rows whose COMMIT returned: all, and those of the measured window.
    committed: u64,
    committed_measured: u64,
    /// Rows of this run received (first receipts), and those of the measured window.
    received: u64,
    received_measured: u64,
    /// Rows received before their COMMIT was noted (measured as 0).
    early: u64,
    /// The latest COMMIT return of a measured row, from the origin.
    last_commit_us: u64,
    /// The most a measured transaction was sent behind its due time.
    behind_max_us: u64,
    /// What was not a row of this run.
    pub unexpected: Unexpected,
}

impl Tracker {
    /// An empty tracker for ids above `base`, times from `origin`.
    pub fn new(plan: Plan, base: u64, origin: Instant) -> Tracker {
        Tracker {
            origin,
            base,
            plan,
            t0_us: 0,
            claimed: 0,
            lo: base + 1,
            window: VecDeque::new(),
            measure_from: None,
            hist: latency_histogram(),
            committed: 0,
            committed_measured: 0,
            received: 0,
            received_measured: 0,
            early: 0,
            last_commit_us: 0,
            behind_max_us: 0,
            unexpected: Unexpected::default(),
        }
    }

    /// Microseconds from the origin to `at` (0 before it).
    pub fn us(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.origin).as_micros()).unwrap_or(u64::MAX)
    }

    /// The instant `us` microseconds after the origin.
    pub fn instant(&self, us: u64) -> Instant {
        self.origin + std::time::Duration::from_micros(us)
    }

    /// Starts the schedule at `at`: transaction 0 is due then.
    pub fn begin(&mut self, at: Instant) {
        self.t0_us = self.us(at);
    }

    /// When the warm-up ends, from the origin.
    pub fn warmup_end_us(&self) -> u64 {
        self.t0_us + self.plan.warmup_us
    }

    /// When the writing ends, from the origin.
    pub fn end_us(&self) -> u64 {
        self.t0_us + self.plan.end_us
    }

    /// Hands the next transaction to a writer at `now_us`, its ids added to the window as
    /// sent; `Ok(None)` once the run's transactions are all handed out (open loop) or its
    /// time is over (`max`). An error when the window would pass the in-flight cap.
    pub fn claim(&mut self, now_us: u64) -> Result<Option<Claim>, String> {
        let k = self.claimed;
        let due_us = self.plan.due_us(k).map(|d| self.t0_us.saturating_add(d));
        let over = match self.plan.txns {
            Some(txns) => k >= txns,
            None => now_us >= self.end_us(),
        };
        if over {
            return Ok(None);
        }
        let rows = self.plan.txn_rows as usize;
        if self.window.len() + rows > self.plan.max_in_flight {
            let age = self.oldest_committed_us().map(|c| now_us.saturating_sub(c));
            return Err(format!(
                "{} rows are in flight (written and not yet received), the cap \
                 --max-in-flight {} is reached; the oldest not received is id {}{}: the \
                 pipeline does not keep up with the rate, or lost rows. Lower --rate, or \
                 raise --max-in-flight (16 bytes a row)",
                self.window.len(),
                self.plan.max_in_flight,
                self.lo,
                age.map(|a| format!(", committed {:.1} s ago", a as f64 / 1e6))
                    .unwrap_or_default(),
            ));
        }
        let ids = self.plan.ids(self.base, k);
        let measured = due_us.unwrap_or(now_us) >= self.warmup_end_us();
        if measured && self.measure_from.is_none() {
            self.measure_from = Some(*ids.start());
        }
        self.claimed += 1;
        self.window.extend(std::iter::repeat_n(Slot::Sent, rows));
        Ok(Some(Claim {
            first: *ids.start(),
            last: *ids.end(),
            due_us,
            measured,
        }))
    }

    /// Notes that the COMMIT of `claim`, sent at `sent_us`, returned at `at_us`. A row already
    /// received (before this note) is measured with latency 0.
    pub fn committed(&mut self, claim: &Claim, sent_us: u64, at_us: u64) {
        let rows = claim.last - claim.first + 1;
        self.committed += rows;
        if claim.measured {
            self.committed_measured += rows;
            self.last_commit_us = self.last_commit_us.max(at_us);
            if let Some(due) = claim.due_us {
                self.behind_max_us = self.behind_max_us.max(sent_us.saturating_sub(due));
            }
        }
        for id in claim.first..=claim.last {
            let Some(slot) = self.slot(id) else { continue };
            match *slot {
                Slot::Sent => *slot = Slot::Committed(at_us),
                Slot::Early(_) => {
                    *slot = Slot::Done;
                    self.early += 1;
                    if self.is_measured(id) {
                        self.hist.saturating_record(0);
                    }
                }
                Slot::Committed(_) | Slot::Done => {}
            }
        }
        self.advance();
    }

    /// Notes a record with id `id` received at `at_us`; measures it when it is a row of the
    /// measured window whose COMMIT was noted.
    pub fn received(&mut self, id: u64, at_us: u64) -> Receipt {
        let receipt = self.receive(id, at_us);
        match receipt {
            Receipt::Row => {}
            Receipt::Older => self.unexpected.older += 1,
            Receipt::Duplicate => self.unexpected.duplicate += 1,
            Receipt::Beyond => self.unexpected.beyond += 1,
        }
        receipt
    }

    fn receive(&mut self, id: u64, at_us: u64) -> Receipt {
        if id <= self.base {
            return Receipt::Older;
        }
        if id >= self.lo + self.window.len() as u64 {
            return Receipt::Beyond;
        }
        if id < self.lo {
            return Receipt::Duplicate;
        }
        let measured = self.is_measured(id);
        let Some(slot) = self.slot(id) else {
            return Receipt::Beyond;
        };
        match *slot {
            Slot::Committed(c) => {
                *slot = Slot::Done;
                if measured {
                    self.hist.saturating_record(at_us.saturating_sub(c));
                }
            }
            Slot::Sent => *slot = Slot::Early(at_us),
            Slot::Early(_) | Slot::Done => return Receipt::Duplicate,
        }
        self.received += 1;
        if measured {
            self.received_measured += 1;
        }
        self.advance();
        Receipt::Row
    }

    fn is_measured(&self, id: u64) -> bool {
        self.measure_from.is_some_and(|m| id >= m)
    }

    fn slot(&mut self, id: u64) -> Option<&mut Slot> {
        let i = usize::try_from(id.checked_sub(self.lo)?).ok()?;
        self.window.get_mut(i)
    }

    /// Drops the received rows at the window's start.
    fn advance(&mut self) {
        while self.window.front() == Some(&Slot::Done) {
            self.window.pop_front();
            self.lo += 1;
        }
    }

    fn oldest_committed_us(&self) -> Option<u64> {
        self.window.iter().find_map(|s| match s {
            Slot::Committed(c) => Some(*c),
            _ => None,
        })
    }

    /// Rows committed and not received yet: the lag.
    pub fn lag(&self) -> i64 {
        self.committed as i64 - self.received as i64
    }

    /// Rows whose COMMIT returned and which were not received (yet), and the first `n` of
    /// their ids.
    pub fn missing(&self, n: usize) -> (u64, Vec<u64>) {
        let mut first = Vec::new();
        let mut count = 0;
        for (i, s) in self.window.iter().enumerate() {
            if let Slot::Committed(_) = s {
                count += 1;
                if first.len() < n {
                    first.push(self.lo + i as u64);
                }
            }
        }
        (count, first)
    }

    /// Rows in flight (the window's length).
    pub fn in_flight(&self) -> usize {
        self.window.len()
    }

    /// The latency histogram (microseconds) of the measured rows received.
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }

    /// What was counted: see [`Counts`].
    pub fn counts(&self) -> Counts {
        Counts {
            committed: self.committed,
            committed_measured: self.committed_measured,
            received: self.received,
            received_measured: self.received_measured,
            early: self.early,
            last_commit_us: self.last_commit_us,
            behind_max_us: self.behind_max_us,
        }
    }
}

/// The counts of a [`Tracker`] at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Rows whose COMMIT returned.
    pub committed: u64,
    /// Of those, the rows of the measured window.
    pub committed_measured: u64,
    /// Rows of this run received.
    pub received: u64,
    /// Of those, the rows of the measured window.
    pub received_measured: u64,
    /// Rows received before their COMMIT was noted.
    pub early: u64,
    /// The latest COMMIT return of a measured row, in microseconds from the origin.
    pub last_commit_us: u64,
    /// The most a measured transaction was sent behind its due time, in microseconds.
    pub behind_max_us: u64,
}

/// Locks the tracker. A writer or the consumer that panicked while holding it left counts
/// that are still counts: the lock is taken over.
pub fn lock(tracker: &Mutex<Tracker>) -> MutexGuard<'_, Tracker> {
    tracker.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::super::plan::{LatencyBench, Rate};
    use super::*;

    fn plan(rate: Rate, txn_rows: u64, max_in_flight: usize) -> Plan {
        let bench = LatencyBench {
            source: "mysql://root@127.0.0.1:3306".into(),
            table: "lat.t".into(),
            bootstrap: "127.0.0.1:9092".into(),
            topic: "lat.t".into(),
            rate,
            txn_rows,
            connections: None,
            warmup_s: 1,
            seconds: 2,
            drain_timeout_s: 5,
            topic_wait_s: 5,
            payload_bytes: 10,
            fetch_wait_ms: 5,
            key_field: "id".into(),
            max_in_flight,
            behind_limit_ms: 100,
            properties: Vec::new(),
        };
        Plan::new(&bench, None).unwrap()
    }

    fn tracker(rate: u64, txn_rows: u64) -> Tracker {
        let mut t = Tracker::new(plan(Rate::Fixed(rate), txn_rows, 1000), 100, Instant::now());
        t.begin(t.origin);
        t
    }

    #[test]
    fn rows_are_measured_from_commit_to_receipt_after_the_warm_up() {
        // 10 rows/s, 1 s warm-up, 2 s measured: 30 transactions, 10 of them warm-up.
        let mut t = tracker(10, 1);
        let mut claims = Vec::new();
        while let Some(c) = t.claim(0).unwrap() {
            claims.push(c);
        }
        assert_eq!(claims.len(), 30);
        assert_eq!((claims[0].first, claims[0].last), (101, 101));
        assert_eq!(claims[10].due_us, Some(1_000_000));
        assert!(!claims[9].measured && claims[10].measured);
        for c in &claims {
            let due = c.due_us.unwrap();
            t.committed(c, due + 500, due + 1000);
        }
        assert_eq!(t.lag(), 30);
        for c in &claims {
            let due = c.due_us.unwrap();
            assert_eq!(t.received(c.first, due + 1000 + 2500), Receipt::Row);
        }
        assert_eq!(t.in_flight(), 0);
        assert_eq!(t.lag(), 0);
        let n = t.counts();
        assert_eq!((n.committed, n.committed_measured), (30, 20));
        assert_eq!((n.received, n.received_measured), (30, 20));
        assert_eq!(n.behind_max_us, 500);
        assert_eq!(n.last_commit_us, 2_900_000 + 1000);
        assert_eq!(t.histogram().len(), 20);
        assert_eq!(t.histogram().max(), t.histogram().highest_equivalent(2500));
        assert_eq!(t.missing(5), (0, vec![]));
    }

    #[test]
    fn other_records_are_counted_not_measured() {
        let mut t = tracker(1000, 10);
        let c = t.claim(0).unwrap().unwrap();
        assert_eq!((c.first, c.last), (101, 110));
        assert_eq!(t.received(100, 5), Receipt::Older);
        assert_eq!(t.received(1, 5), Receipt::Older);
        assert_eq!(t.received(111, 5), Receipt::Beyond);
        assert_eq!(t.received(u64::MAX, 5), Receipt::Beyond);
        t.committed(&c, 0, 10);
        for id in 101..=110 {
            assert_eq!(t.received(id, 20), Receipt::Row);
        }
        assert_eq!(t.received(101, 30), Receipt::Duplicate);
        assert_eq!(t.received(110, 30), Receipt::Duplicate);
        let u = t.unexpected;
        assert_eq!((u.older, u.beyond, u.duplicate), (2, 2, 2));
        assert_eq!(u.total(), 6);
        // Warm-up rows are received but not measured.
        assert_eq!(t.histogram().len(), 0);
        assert_eq!(t.counts().received, 10);
    }

    #[test]
    fn a_row_received_before_its_commit_was_noted_counts_as_zero() {
        let mut t = Tracker::new(plan(Rate::Max, 2, 1000), 0, Instant::now());
        t.begin(t.origin);
        let c = t.claim(2_000_000).unwrap().unwrap();
        assert!(c.measured && c.due_us.is_none());
        assert_eq!(t.received(1, 2_000_100), Receipt::Row);
        assert_eq!(t.received(1, 2_000_200), Receipt::Duplicate);
        assert_eq!(t.lag(), -1);
        t.committed(&c, 2_000_000, 2_000_300);
        assert_eq!(t.counts().early, 1);
        assert_eq!(t.histogram().len(), 1);
        assert_eq!(t.missing(10), (1, vec![2]));
        assert_eq!(t.received(2, 2_000_400), Receipt::Row);
        assert_eq!(t.histogram().len(), 2);
        assert_eq!(t.in_flight(), 0);
        // Closed loop: claims end with the time.
        assert!(t.claim(3_000_000).unwrap().is_none());
    }

    #[test]
    fn a_lost_row_holds_the_window_until_the_cap() {
        let mut t = Tracker::new(plan(Rate::Fixed(1_000_000), 10, 1000), 0, Instant::now());
        t.begin(t.origin);
        let mut got = 0;
        let err = loop {
            match t.claim(0) {
                Ok(Some(c)) => {
                    t.committed(&c, 0, 1);
                    for id in c.first..=c.last {
                        // Id 5 is lost; every other row arrives.
                        if id != 5 {
                            t.received(id, 2);
                        }
                    }
                    got += 1;
                }
                Ok(None) => panic!("the cap was never reached"),
                Err(e) => break e,
            }
        };
        assert_eq!(got, 100);
        assert_eq!(t.in_flight(), 996);
        assert_eq!(t.missing(3), (1, vec![5]));
        assert!(
            err.contains("--max-in-flight 1000") && err.contains("id 5"),
            "{err}"
        );
    }
}
