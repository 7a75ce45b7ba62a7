//! Ending a Kafka transaction within bounds: `commit_transaction` in short resumable slices,
//! `abort_transaction` with a short bounded wait, and retiring a producer whose abort did not
//! finish.
//!
//! **Commit.** librdkafka's `commit_transaction` blocks until the flush and the EndTxn are
//! done or its timeout passes; a timeout is retriable and *resumable* (calling it again goes on
//! with the commit already progressing in the background). It is called in slices of
//! [`COMMIT_SLICE`], so the sink thread notices a shutdown within a slice; the whole commit may
//! take `kafka.transaction_timeout_ms` (then it is a transient error: the attempt ends and the
//! next one fences), or, once shutdown was requested, until the shutdown budget's
//! `finish_by` (then [`crate::error::ErrorKind::Unfinished`]). A commit given up on is never
//! counted as committed: its outcome is settled by the next `init_transactions`.
//!
//! **Abort.** After a failure the open transaction is aborted, waiting at most
//! [`abort_wait`]: `kafka.transaction_timeout_ms`, but no more than [`ABORT_WAIT_MAX`]. A
//! longer wait buys nothing. An abort that does not finish within seconds is waiting on a link
//! that is down (a produce or EndTxn request without an answer), and the coordinator ends that
//! transaction anyway: by its timeout, or when the next attempt's producer runs
//! `init_transactions`, which aborts whatever the old epoch left open before it returns. That
//! is also the exactly-once-safe path: the old producer is fenced, the committed offset is read
//! after, so the rewind starts from what really committed. The chaos suite measured the old
//! 30 s wait: after a 5–10 s Kafka blackhole about one recovery in three waited ~27 s for the
//! abort to time out. A producer whose abort timed out or failed is *retired*: the attempt ends
//! and the producer is dropped on a thread of its own ([`retire`]), so neither a hanging purge
//! nor `rd_kafka_destroy` holds up the next attempt.

use std::time::{Duration, Instant};

use rdkafka::error::{KafkaError, RDKafkaError, RDKafkaErrorCode};
use rdkafka::producer::Producer;

use crate::error::{Error, Result};
use crate::shutdown::ShutdownClock;
use crate::sink::producer::SinkProducer;

/// `commit_transaction` is called with at most this timeout per call, so a shutdown is
/// noticed while a commit waits.
pub const COMMIT_SLICE: Duration = Duration::from_millis(200);

/// The longest wait for `abort_transaction` after a failure (see the module documentation).
pub const ABORT_WAIT_MAX: Duration = Duration::from_secs(3);

/// In how many attempts in a row one source transaction may outlive 90% of the transaction
/// timeout before that counts as too long for one Kafka transaction (a definite error).
pub const TOO_LONG_ATTEMPTS: u32 = 3;

/// The attempts in a row in which source transaction `id` outlived the limit, this one
/// included, given the last one that did (`last`: its id and count).
pub fn too_long(last: Option<&(String, u32)>, id: &str) -> u32 {
    match last {
        Some((prev, n)) if prev == id => n.saturating_add(1),
        _ => 1,
    }
}

/// How long a failed attempt waits for its abort: `kafka.transaction_timeout_ms`, at most
/// [`ABORT_WAIT_MAX`].
pub fn abort_wait(transaction_timeout_ms: u64) -> Duration {
    Duration::from_millis(transaction_timeout_ms).min(ABORT_WAIT_MAX)
}

/// The properties librdkafka reports on a transactional error, as far as [`step`] cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnErr {
    /// The call's own timeout (`_TIMED_OUT`): calling again resumes the operation.
    pub call_timeout: bool,
    /// The call may be retried.
    pub retriable: bool,
    /// The transaction must be aborted.
    pub requires_abort: bool,
}

impl TxnErr {
    /// The properties of a transactional error; `None` for any other kind of error.
    pub fn of(e: &KafkaError) -> Option<TxnErr> {
        match e {
            KafkaError::Transaction(rde) => Some(TxnErr::of_rd(rde)),
            _ => None,
        }
    }

    fn of_rd(e: &RDKafkaError) -> TxnErr {
        TxnErr {
            call_timeout: e.code() == RDKafkaErrorCode::OperationTimedOut,
            retriable: e.is_retriable(),
            requires_abort: e.txn_requires_abort(),
        }
    }
}

/// What one `commit_transaction` call's result means for the loop in [`commit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Committed.
    Done,
    /// The call's own timeout: call again, the commit goes on in the background.
    Resume,
    /// A retriable error (e.g. a coordinator moving): call again after a pause.
    RetryAfterPause,
    /// Give up with this error (abortable, fatal, fenced, not transactional, or retried too
    /// often).
    Fail,
}

/// Classifies a commit call's result (`Err(None)`: an error that is not transactional);
/// `retries` retriable errors were retried already.
pub fn step(result: std::result::Result<(), Option<TxnErr>>, retries: u32) -> Step {
    match result {
        Ok(()) => Step::Done,
        Err(Some(e)) if e.requires_abort => Step::Fail,
        Err(Some(e)) if e.call_timeout && e.retriable => Step::Resume,
        Err(Some(e)) if e.retriable && retries < MAX_COMMIT_RETRIES => Step::RetryAfterPause,
        Err(_) => Step::Fail,
    }
}

/// Retriable commit errors other than the call's timeout are retried this often.
pub const MAX_COMMIT_RETRIES: u32 = 9;

/// Commits the open transaction (see the module documentation for the bounds).
pub fn commit(producer: &SinkProducer, clock: &ShutdownClock) -> Result<()> {
    let limit = Instant::now() + producer.wait_limit;
    let mut pause = Duration::from_millis(50);
    let mut retries = 0;
    loop {
        let until = clock.finish_limit(limit);
        let now = Instant::now();
        if now >= until {
            clock.check("commit_transaction")?;
            return Err(Error::transient(format!(
                "commit_transaction did not complete within {:?} (`kafka.transaction_timeout_ms`); \
                 the next attempt fences the transaction and resumes from the committed offset",
                producer.wait_limit
            )));
        }
        let result = producer
            .inner
            .commit_transaction((until - now).min(COMMIT_SLICE));
        let facts = result.as_ref().map(|_| ()).map_err(TxnErr::of);
        match step(facts, retries) {
            Step::Done => return Ok(()),
            Step::Resume => {}
            Step::RetryAfterPause => {
                retries += 1;
                if let Err(e) = &result {
                    tracing::warn!(error = %e, attempt = retries, "commit_transaction failed; retrying");
                }
                std::thread::sleep(pause.min(until.saturating_duration_since(Instant::now())));
                pause = (pause * 2).min(Duration::from_secs(2));
            }
            Step::Fail => {
                return Err(match result {
                    Err(e) => producer.classify("commit_transaction", &e),
                    Ok(()) => Error::definite("internal: a commit step failed without an error"),
                })
            }
        }
    }
}

/// What a bounded abort came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Aborted {
    /// The coordinator aborted the transaction.
    Done,
    /// It did not finish within the wait (or no time was left): the producer must be retired.
    TimedOut(Duration),
    /// librdkafka refused or failed it (e.g. a commit given up on is still in progress): the
    /// producer must be retired.
    Failed(String),
}

impl Aborted {
    /// Whether the producer's transactional state is unknown, so it must not be used again.
    pub fn must_retire(&self) -> bool {
        !matches!(self, Aborted::Done)
    }
}

/// Aborts the open transaction, waiting at most `wait`.
pub fn abort(producer: &SinkProducer, wait: Duration) -> Aborted {
    if wait.is_zero() {
        return Aborted::TimedOut(wait);
    }
    match producer.inner.abort_transaction(wait) {
        Ok(()) => Aborted::Done,
        Err(KafkaError::Transaction(rde)) if rde.code() == RDKafkaErrorCode::OperationTimedOut => {
            Aborted::TimedOut(wait)
        }
        Err(e) => Aborted::Failed(e.to_string()),
    }
}

/// Drops a producer whose transactional state is unknown on a thread of its own: its purge
/// and `rd_kafka_destroy` may wait on the same dead link, and nothing needs them to finish.
/// Safe for exactly-once: the next producer's `init_transactions` fences this one's epoch, so
/// nothing it still has in flight can commit after the committed offset is read.
pub fn retire(producer: SinkProducer) {
    let spawned = std::thread::Builder::new()
        .name("sluice-retire".into())
        .spawn(move || drop(producer));
    if let Err(e) = spawned {
        // Only when the OS is out of threads; then the caller's thread drops it.
        tracing::warn!(error = %e, "cannot start a thread to drop the retired producer");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_same_source_transaction_in_a_row_counts_as_too_long() {
        assert_eq!(too_long(None, "0-1-7"), 1);
        let once = ("0-1-7".to_string(), 1);
        assert_eq!(too_long(Some(&once), "0-1-7"), 2);
        let twice = ("0-1-7".to_string(), 2);
        assert_eq!(too_long(Some(&twice), "0-1-7"), TOO_LONG_ATTEMPTS);
        // Another transaction (the stall moved on): counting starts again.
        assert_eq!(too_long(Some(&twice), "0-1-8"), 1);
        let many = ("x".to_string(), u32::MAX);
        assert_eq!(too_long(Some(&many), "x"), u32::MAX);
    }

    const TIMEOUT: TxnErr = TxnErr {
        call_timeout: true,
        retriable: true,
        requires_abort: false,
    };
    const RETRIABLE: TxnErr = TxnErr {
        call_timeout: false,
        retriable: true,
        requires_abort: false,
    };
    const ABORTABLE: TxnErr = TxnErr {
        call_timeout: false,
        retriable: false,
        requires_abort: true,
    };
    const FATAL: TxnErr = TxnErr {
        call_timeout: false,
        retriable: false,
        requires_abort: false,
    };

    #[test]
    fn the_abort_wait_is_a_few_seconds_at_most() {
        assert_eq!(abort_wait(60_000), ABORT_WAIT_MAX);
        assert_eq!(abort_wait(5_000), Duration::from_secs(3));
        assert_eq!(abort_wait(1_000), Duration::from_secs(1));
    }

    #[test]
    fn a_call_timeout_resumes_however_often() {
        assert_eq!(step(Ok(()), 0), Step::Done);
        assert_eq!(step(Err(Some(TIMEOUT)), 0), Step::Resume);
        assert_eq!(step(Err(Some(TIMEOUT)), 1000), Step::Resume);
    }

    #[test]
    fn other_retriable_errors_are_retried_up_to_the_limit() {
        assert_eq!(step(Err(Some(RETRIABLE)), 0), Step::RetryAfterPause);
        assert_eq!(
            step(Err(Some(RETRIABLE)), MAX_COMMIT_RETRIES - 1),
            Step::RetryAfterPause
        );
        assert_eq!(step(Err(Some(RETRIABLE)), MAX_COMMIT_RETRIES), Step::Fail);
    }

    #[test]
    fn abortable_fatal_and_other_errors_fail_at_once() {
        assert_eq!(step(Err(Some(ABORTABLE)), 0), Step::Fail);
        // A timeout that needs an abort is not resumable.
        let abortable_timeout = TxnErr {
            requires_abort: true,
            ..TIMEOUT
        };
        assert_eq!(step(Err(Some(abortable_timeout)), 0), Step::Fail);
        assert_eq!(step(Err(Some(FATAL)), 0), Step::Fail);
        assert_eq!(step(Err(None), 0), Step::Fail);
        let e = KafkaError::MessageProduction(RDKafkaErrorCode::MessageTimedOut);
        assert_eq!(TxnErr::of(&e), None);
    }

    #[test]
    fn must_retire_unless_aborted() {
        assert!(!Aborted::Done.must_retire());
        assert!(Aborted::TimedOut(Duration::from_secs(3)).must_retire());
        assert!(Aborted::Failed("conflict".into()).must_retire());
    }
}
