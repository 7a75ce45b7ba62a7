//! Bounded shutdown: after SIGTERM/SIGINT, `sluice run` exits within `shutdown_timeout_ms`
//! whatever Kafka does.
//!
//! A shutdown stops the source at once; the sink then commits what ends at a source
//! boundary (or aborts a half-written source transaction). That commit is the one step that
//! can wait on the broker: a flush whose acknowledgements do not come, an EndTxn that is
//! never answered. librdkafka's calls cannot be interrupted, so the bound is kept in three
//! layers, each a backstop for the one before:
//!
//! 1. **The sink watches the clock.** Every wait of the sink thread on Kafka (queue space,
//!    acknowledgements, `commit_transaction` in short resumable slices, `abort_transaction`)
//!    is cut at the [`Budget`]'s phases: the commit may take until [`Budget::finish_by`];
//!    then the sink gives up with [`ErrorKind::Unfinished`](crate::error::ErrorKind::Unfinished), aborts best-effort until
//!    [`Budget::abort_by`] and returns.
//! 2. **The run loop stops waiting for the sink** at [`Budget::abort_by`] (a call that
//!    outlives its slice, e.g. `init_transactions` of an attempt that was starting) and
//!    returns [`ErrorKind::Unfinished`](crate::error::ErrorKind::Unfinished) itself; the sink thread is left behind and dies with the
//!    process.
//! 3. **A watchdog** in `main` ends the process at [`Budget::exit_at`] with exit code
//!    [`EXIT_UNFINISHED`] if it is still running then.
//!
//! Why giving up is exactly-once-safe: a transaction whose commit was given up on is never
//! reported as committed (no metrics, no log line, exit 4 instead of 0). Its outcome is
//! either: committed (the EndTxn reached the coordinator; data and offset record became
//! visible together) or aborted (by the best-effort abort, by the coordinator's transaction
//! timeout, or by the next instance's `init_transactions`). The next run fences first —
//! `init_transactions` returns only once the coordinator has completed or aborted that
//! transaction — and only then reads the committed offset, so it resumes right after the
//! last transaction that did commit, whichever it was. Nothing the data path needs lives in
//! the process: the binlog is read again from that offset.

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::error::{Error, Result};

/// The exit code of a shutdown that gave up on an unfinished Kafka transaction.
pub const EXIT_UNFINISHED: u8 = 4;

/// At most this much of the shutdown budget goes to the best-effort abort of a transaction
/// whose commit was given up on.
pub const ABORT_SHARE_MAX: Duration = Duration::from_secs(3);

/// At most this much of the shutdown budget is kept back for returning, logging and exiting.
pub const EXIT_MARGIN_MAX: Duration = Duration::from_millis(500);

/// The phases of a shutdown's time, counted from the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// The open Kafka transaction may be flushed and committed until then.
    pub finish_by: Instant,
    /// A transaction given up on may be aborted until then; the pipeline returns by then.
    pub abort_by: Instant,
    /// The process exits then, whatever is still waiting.
    pub exit_at: Instant,
}

impl Budget {
    /// The budget of a shutdown requested at `requested` with `shutdown_timeout_ms` =
    /// `timeout`: the last tenth (at most [`EXIT_MARGIN_MAX`]) is kept for exiting, the
    /// quarter before it (at most [`ABORT_SHARE_MAX`]) for an abort, the rest for the commit.
    pub fn new(requested: Instant, timeout: Duration) -> Budget {
        let margin = (timeout / 10).min(EXIT_MARGIN_MAX);
        let abort = (timeout / 4).min(ABORT_SHARE_MAX);
        let exit_at = requested + timeout;
        let abort_by = exit_at - margin;
        Budget {
            finish_by: abort_by - abort,
            abort_by,
            exit_at,
        }
    }
}

/// When shutdown was requested, shared by the run loop, the sink thread and its producer.
/// Cloning shares it. The default clock has a 30 s timeout and is never requested unless
/// [`ShutdownClock::request`] is called (e.g. `sluice offsets set` never is).
#[derive(Clone)]
pub struct ShutdownClock {
    timeout: Duration,
    budget: Arc<OnceLock<Budget>>,
    /// Set when the stop must commit nothing (cluster mode: the assignment was lost, another
    /// member may run the pipeline already): the sink aborts instead of committing.
    no_commit: Arc<std::sync::atomic::AtomicBool>,
}

impl Default for ShutdownClock {
    fn default() -> Self {
        ShutdownClock::new(Duration::from_millis(
            crate::config::DEFAULT_SHUTDOWN_TIMEOUT_MS,
        ))
    }
}

impl fmt::Debug for ShutdownClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShutdownClock")
            .field("timeout", &self.timeout)
            .field("requested", &self.budget.get().is_some())
            .finish()
    }
}

impl ShutdownClock {
    /// A clock for `shutdown_timeout_ms` = `timeout`, not requested yet.
    pub fn new(timeout: Duration) -> ShutdownClock {
        ShutdownClock {
            timeout,
            budget: Arc::new(OnceLock::new()),
            no_commit: Arc::default(),
        }
    }

    /// This clock, whose stop commits nothing once `no_commit` is set.
    pub fn with_no_commit(mut self, no_commit: Arc<std::sync::atomic::AtomicBool>) -> Self {
        self.no_commit = no_commit;
        self
    }

    /// Whether commits are refused (see [`ShutdownClock::with_no_commit`]).
    pub fn commits_refused(&self) -> bool {
        self.no_commit.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// `shutdown_timeout_ms`.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Shutdown is requested now (the first call fixes the budget; later ones return it).
    pub fn request(&self) -> Budget {
        *self
            .budget
            .get_or_init(|| Budget::new(Instant::now(), self.timeout))
    }

    /// The budget, once shutdown was requested.
    pub fn budget(&self) -> Option<Budget> {
        self.budget.get().copied()
    }

    /// The earlier of `limit` and the time the open transaction must be finished by.
    pub fn finish_limit(&self, limit: Instant) -> Instant {
        match self.budget() {
            Some(b) => limit.min(b.finish_by),
            None => limit,
        }
    }

    /// `wait`, cut so that it ends by [`Budget::abort_by`] (e.g. the abort after a failure).
    pub fn cut(&self, wait: Duration) -> Duration {
        match self.budget() {
            Some(b) => wait.min(b.abort_by.saturating_duration_since(Instant::now())),
            None => wait,
        }
    }

    /// [`ErrorKind::Unfinished`](crate::error::ErrorKind::Unfinished) when shutdown was requested and the time to finish the open
    /// transaction has passed; `doing` says what was still waiting.
    pub fn check(&self, doing: &str) -> Result<()> {
        match self.budget() {
            Some(b) if Instant::now() >= b.finish_by => Err(self.gave_up(doing)),
            _ => Ok(()),
        }
    }

    /// The error of a shutdown that gave up while `doing` was still waiting.
    pub fn gave_up(&self, doing: &str) -> Error {
        Error::unfinished(format!(
            "shut down with an unfinished Kafka transaction: {doing} did not finish within \
             `shutdown_timeout_ms` ({} ms). It was not reported as committed; its outcome \
             (committed or aborted) is settled by the next run's fencing, which resumes right \
             after the last committed offset, so nothing is lost or duplicated",
            self.timeout.as_millis()
        ))
    }

    /// Resolves at [`Budget::abort_by`] once `shutdown` turned true (requesting the clock
    /// then, so it does not depend on who saw the signal first); never without a shutdown.
    pub async fn past_abort_by(&self, mut shutdown: watch::Receiver<bool>) {
        if shutdown.wait_for(|s| *s).await.is_err() {
            return std::future::pending().await;
        }
        let b = self.request();
        tokio::time::sleep_until(b.abort_by.into()).await;
    }
}

/// `fut`, or [`ErrorKind::Unfinished`](crate::error::ErrorKind::Unfinished) (naming `doing`) once a shutdown's [`Budget::abort_by`]
/// passed first. Dropping `fut` then must be safe: what it waited for is left to die with
/// the process (a sink thread, a blocking librdkafka call).
pub async fn bounded<T>(
    clock: &ShutdownClock,
    shutdown: &watch::Receiver<bool>,
    doing: &str,
    fut: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    tokio::select! {
        biased;
        r = fut => r,
        _ = clock.past_abort_by(shutdown.clone()) => Err(clock.gave_up(doing)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_default_budget_leaves_most_time_to_the_commit() {
        let t0 = Instant::now();
        let b = Budget::new(t0, ms(30_000));
        assert_eq!(b.exit_at - t0, ms(30_000));
        assert_eq!(b.abort_by - t0, ms(29_500));
        assert_eq!(b.finish_by - t0, ms(26_500));
    }

    #[test]
    fn short_timeouts_keep_the_phases_in_order_and_proportional() {
        for timeout in [1, 10, 1000, 2000, 5000, 12_000, 3_600_000] {
            let t0 = Instant::now();
            let b = Budget::new(t0, ms(timeout));
            assert!(t0 <= b.finish_by, "{timeout}");
            assert!(
                b.finish_by <= b.abort_by && b.abort_by <= b.exit_at,
                "{timeout}"
            );
            assert_eq!(b.exit_at - t0, ms(timeout));
            // The commit always keeps at least 65 % of the time.
            assert!((b.finish_by - t0) * 100 >= ms(timeout) * 65, "{timeout}");
        }
        let t0 = Instant::now();
        let b = Budget::new(t0, ms(2000));
        assert_eq!((b.finish_by - t0, b.abort_by - t0), (ms(1300), ms(1800)));
    }

    #[test]
    fn a_clock_not_requested_cuts_nothing() {
        let c = ShutdownClock::new(ms(1000));
        let limit = Instant::now() + ms(60_000);
        assert_eq!(c.finish_limit(limit), limit);
        assert_eq!(c.cut(ms(5000)), ms(5000));
        assert!(c.check("the commit").is_ok());
        assert!(c.budget().is_none());
    }

    #[test]
    fn a_requested_clock_cuts_waits_and_keeps_its_first_budget() {
        let c = ShutdownClock::new(ms(2000));
        let b = c.request();
        let shared = c.clone();
        std::thread::sleep(ms(5));
        assert_eq!(shared.request(), b, "the first request fixes the budget");
        let far = Instant::now() + ms(60_000);
        assert_eq!(c.finish_limit(far), b.finish_by);
        assert!(c.cut(ms(60_000)) <= ms(1800));
        assert!(c.check("the commit").is_ok());
    }

    #[test]
    fn an_expired_clock_gives_up_with_an_unfinished_error_naming_the_setting() {
        let c = ShutdownClock::new(ms(0));
        c.request();
        let e = c.check("commit_transaction").unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Unfinished);
        let text = e.to_string();
        assert!(text.contains("commit_transaction") && text.contains("shutdown_timeout_ms"));
        assert_eq!(c.cut(ms(3000)), Duration::ZERO);
    }

    #[tokio::test]
    async fn past_abort_by_waits_for_the_signal_then_the_budget() {
        let (tx, rx) = watch::channel(false);
        let c = ShutdownClock::new(ms(200));
        let waiter = tokio::spawn({
            let c = c.clone();
            async move { c.past_abort_by(rx).await }
        });
        tokio::time::sleep(ms(300)).await;
        assert!(!waiter.is_finished(), "no shutdown: never resolves");
        assert!(c.budget().is_none());
        let sent = Instant::now();
        tx.send(true).unwrap();
        tokio::time::timeout(ms(5000), waiter)
            .await
            .expect("resolves after the signal")
            .unwrap();
        // abort_by is 180 ms after the request (a tenth of 200 ms kept for exiting).
        assert!(sent.elapsed() >= ms(170), "{:?}", sent.elapsed());
        assert!(c.budget().is_some(), "the waiter requests the clock");
    }

    #[tokio::test]
    async fn bounded_gives_up_on_what_outlives_the_budget_and_keeps_what_ends() {
        let (tx, rx) = watch::channel(false);
        let c = ShutdownClock::new(ms(1000));
        assert_eq!(bounded(&c, &rx, "x", async { Ok(7) }).await.unwrap(), 7);
        tx.send(true).unwrap();
        let started = Instant::now();
        let stuck = bounded(&c, &rx, "the commit", std::future::pending::<Result<()>>());
        let e = stuck.await.unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Unfinished);
        assert!(e.to_string().contains("the commit"));
        // abort_by: 1000 ms minus the exit margin (100 ms).
        let took = started.elapsed();
        assert!(took >= ms(850) && took < ms(1000), "{took:?}");
        // A future that is ready wins even when the budget is spent.
        assert_eq!(bounded(&c, &rx, "x", async { Ok(1) }).await.unwrap(), 1);
    }
}
