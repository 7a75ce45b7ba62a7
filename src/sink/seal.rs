//! After a commit, before the next transaction writes: has Kafka written the commit markers
//! of every partition the committed transaction wrote to?
//!
//! **Why.** The coordinator answers `EndTxn` once the commit is decided, then writes the
//! markers; for a partition it finds no leader for it skips the marker (see
//! [`super::unmarked`]) and the records stay open there. The partition still counts them as
//! the open transaction of this producer id, so the *next* marker of the pipeline there
//! decides them too. If the next transaction writes to that partition and is aborted (the
//! broker that was shutting down is gone, the attempt fails, the next `init_transactions`
//! aborts it), the abort marker ends the committed records as aborted: they are lost while
//! the offset record says they were written (seen in a chaos run: one change of a committed
//! transaction missing). So no transaction may write before the markers of the previous one
//! are known to be there.
//!
//! **How.** The delivery reports give the last offset the transaction wrote on each
//! partition ([`super::written::Written`]). After the commit, each partition's last stable offset (LSO, what
//! a `read_committed` consumer's end is) must pass it; markers follow the `EndTxn` answer
//! within milliseconds, so the LSO is polled every millisecond at first, then with a backoff. If it does not pass within
//! [`deadline`], the attempt ends with a transient error: the next attempt fences, and
//! [`super::unmarked`] finds the records still open and settles them (a committed
//! transaction's are aborted and written again, [`super::repair`]). When the record at the
//! LSO is not one of this transaction's (another producer's transaction is open there and
//! holds the LSO below it), the LSO says nothing about this pipeline's marker: that partition
//! is counted as unverified and the pipeline goes on; while the LSO stays at that offset,
//! later commits count the partition unverified at once instead of waiting again (a hanging
//! foreign transaction on a shared offsets topic must not slow every commit).

use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::Consumer;
use rdkafka::{Offset, TopicPartitionList};

use super::reader;
use super::unmarked::{self, Tag};
use crate::error::{Error, Result};
use crate::shutdown::ShutdownClock;

/// The longest wait for the markers of one commit.
pub const DEADLINE_MAX: Duration = Duration::from_secs(10);

/// How long the LSO may stay below this transaction's records before the record there is
/// looked at (is it this transaction's, or another producer's?).
const LOOK_AFTER: Duration = Duration::from_millis(500);

/// The LSO is looked at every millisecond for this long after a commit (the markers follow
/// the `EndTxn` answer within a few milliseconds: the check took 4 ms at the median and 9 ms
/// at the 90th percentile at 5,400 one-row commits a second on 2 cores), then with a backoff
/// doubling up to [`POLL_MAX`]. A backoff from the first look (1, 2, 4, 8 ms) finds markers
/// written at 4 ms only at 7 ms, at 9 ms only at 15 ms, and the next transaction waits for
/// the check.
const POLL_FAST_FOR: Duration = Duration::from_millis(20);

/// The longest wait for one answer of the LSOs.
const LSO_TIMEOUT: Duration = Duration::from_secs(2);

/// The longest pause between two looks at the LSO.
const POLL_MAX: Duration = Duration::from_millis(50);

/// The pause before the next look at the LSO, `elapsed` after the commit, `previous` the
/// last pause.
fn next_pause(elapsed: Duration, previous: Duration) -> Duration {
    if elapsed < POLL_FAST_FOR {
        Duration::from_millis(1)
    } else {
        (previous * 2).clamp(Duration::from_millis(2), POLL_MAX)
    }
}

/// The wait for the markers of one commit: `kafka.transaction_timeout_ms`, at most
/// [`DEADLINE_MAX`].
pub fn deadline(transaction_timeout_ms: u64) -> Duration {
    Duration::from_millis(transaction_timeout_ms).min(DEADLINE_MAX)
}

/// What [`Sealer::verify`] found.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Sealed {
    /// Partitions whose LSO passed the transaction's records.
    pub verified: usize,
    /// Partitions another producer's open transaction held below them: not verifiable.
    pub unverified: usize,
}

/// Checks the markers of committed transactions.
pub struct Sealer {
    committed: reader::Reader,
    uncommitted: reader::Reader,
    /// Partitions found held by another producer's open transaction, with the LSO it holds
    /// them at: while the LSO stays there, later commits do not wait for it again.
    foreign: std::sync::Mutex<std::collections::HashMap<(String, i32), i64>>,
}

impl Sealer {
    /// The consumers it reads with, their connections brought up with the metadata of
    /// `topic` (the offsets topic: every commit writes it).
    pub fn new(client: &ClientConfig, topic: &str) -> Result<Self> {
        Ok(Self::of_pair(reader::consumer_pair(
            client,
            "sluice-seal",
            topic,
        )?))
    }

    /// The checker reading with `pair` (`read_uncommitted`, `read_committed`: a
    /// [`reader::consumer_pair`] whose connections are up).
    pub fn of_pair(pair: (reader::Reader, reader::Reader)) -> Self {
        Sealer {
            uncommitted: pair.0,
            committed: pair.1,
            foreign: Default::default(),
        }
    }

    /// Waits until the LSO of every partition in `written` passes the offset noted there.
    /// `own`: the tag of the committed transaction's records. Blocking.
    ///
    /// Each look asks for the LSOs of every partition still waited for at once
    /// ([`Sealer::lsos`]: one ListOffsets request per broker), not one partition after the
    /// other: a transaction over ten partitions waits one round trip per look, not ten.
    pub fn verify(
        &self,
        written: &[(String, i32, i64)],
        own: &Tag,
        wait: Duration,
        stop: &ShutdownClock,
    ) -> Result<Sealed> {
        let started = Instant::now();
        let mut sealed = Sealed::default();
        // The partitions still waited for: their index in `written`, and whether the record
        // at their LSO was looked at.
        let mut pending: Vec<(usize, bool)> = (0..written.len()).map(|i| (i, false)).collect();
        let mut pause = Duration::from_millis(1);
        while !pending.is_empty() {
            let lsos = self.lsos(written, &pending);
            let mut still = Vec::with_capacity(pending.len());
            for ((i, mut looked), lso) in pending.into_iter().zip(lsos) {
                let (topic, partition, last) = &written[i];
                let key = (topic.clone(), *partition);
                if matches!(lso, Ok(l) if l > *last) {
                    self.foreign_held(key, None);
                    sealed.verified += 1;
                    continue;
                }
                if matches!(lso, Ok(l) if self.foreign_at(&key) == Some(l)) {
                    sealed.unverified += 1;
                    continue;
                }
                if let (Ok(l), false) = (&lso, looked) {
                    let l = *l;
                    if started.elapsed() >= LOOK_AFTER {
                        looked = true;
                        let at = unmarked::tag_at(&self.uncommitted, topic, *partition, l)?;
                        if at.as_ref() != Some(own) {
                            self.foreign_held(key, Some(l));
                            tracing::debug!(
                                topic,
                                partition,
                                lso = l,
                                last,
                                "another transaction holds the partition's last stable offset \
                                 below this commit's records: its markers are not verifiable"
                            );
                            sealed.unverified += 1;
                            continue;
                        }
                    }
                }
                if started.elapsed() >= wait {
                    let seen = match lso {
                        Ok(l) => format!("its last stable offset is {l}"),
                        Err(e) => format!("its last stable offset could not be read: {e}"),
                    };
                    return Err(Error::transient(format!(
                        "the commit markers of pipeline transaction {txn} did not reach `{topic}` \
                         partition {partition} within {wait:?} (the transaction's records end at \
                         offset {last}; {seen}): Kafka may have ended the transaction without \
                         writing them (a partition without a leader); the next attempt fences and \
                         settles those records before anything is written",
                        txn = own.txn.unwrap_or_default(),
                    )));
                }
                still.push((i, looked));
            }
            pending = still;
            if pending.is_empty() {
                break;
            }
            stop.check("waiting for the commit markers")?;
            pause = next_pause(started.elapsed(), pause);
            std::thread::sleep(pause);
        }
        Ok(sealed)
    }

    /// The LSO of each partition of `written` that `pending` lists, in its order: one
    /// ListOffsets request per broker for all of them (the `read_committed` reader's "latest"
    /// is the LSO). A partition the answer has no offset for gives its error; a failed request
    /// gives its error to every partition.
    fn lsos(
        &self,
        written: &[(String, i32, i64)],
        pending: &[(usize, bool)],
    ) -> Vec<std::result::Result<i64, String>> {
        let mut tpl = TopicPartitionList::with_capacity(pending.len());
        for (i, _) in pending {
            let (topic, partition, _) = &written[*i];
            if let Err(e) = tpl.add_partition_offset(topic, *partition, Offset::End) {
                return vec![Err(e.to_string()); pending.len()];
            }
        }
        let answer = match self.committed.offsets_for_times(tpl, LSO_TIMEOUT) {
            Ok(answer) => answer,
            Err(e) => return vec![Err(e.to_string()); pending.len()],
        };
        pending
            .iter()
            .map(|(i, _)| {
                let (topic, partition, _) = &written[*i];
                let elem = answer
                    .find_partition(topic, *partition)
                    .ok_or_else(|| "not in the answer".to_string())?;
                elem.error().map_err(|e| e.to_string())?;
                match elem.offset() {
                    Offset::Offset(l) => Ok(l),
                    other => Err(format!("no offset in the answer ({other:?})")),
                }
            })
            .collect()
    }

    /// The LSO another producer's open transaction was found holding `key` at.
    fn foreign_at(&self, key: &(String, i32)) -> Option<i64> {
        let map = self.foreign.lock().unwrap_or_else(|e| e.into_inner());
        map.get(key).copied()
    }

    /// Notes (`Some`) or forgets (`None`) that another producer's transaction holds `key`.
    fn foreign_held(&self, key: (String, i32), at: Option<i64>) {
        let mut map = self.foreign.lock().unwrap_or_else(|e| e.into_inner());
        match at {
            Some(l) if map.len() < 4096 => {
                map.insert(key, l);
            }
            Some(_) => {}
            None => {
                map.remove(&key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lso_is_looked_at_every_millisecond_first_then_less_often() {
        let one = Duration::from_millis(1);
        assert_eq!(next_pause(Duration::ZERO, one), one);
        assert_eq!(next_pause(Duration::from_millis(19), one), one);
        let mut pause = one;
        let mut pauses = vec![];
        for _ in 0..8 {
            pause = next_pause(Duration::from_millis(25), pause);
            pauses.push(pause.as_millis());
        }
        assert_eq!(pauses, [2, 4, 8, 16, 32, 50, 50, 50]);
    }

    #[test]
    fn the_wait_is_the_transaction_timeout_capped() {
        assert_eq!(deadline(5000), Duration::from_secs(5));
        assert_eq!(deadline(60_000), DEADLINE_MAX);
    }
}
