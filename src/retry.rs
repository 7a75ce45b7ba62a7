//! When `sluice run` retries: the delay before the next attempt and the count of consecutive
//! failed attempts.
//!
//! An attempt that ended with a transient error — at start-up (source unreachable, broker not
//! up yet) or later (a dropped connection) — is retried after a delay that starts at
//! `source.reconnect_backoff_min_ms` and doubles up to `source.reconnect_backoff_max_ms`.
//! `source.max_reconnect_attempts` bounds *consecutive* failures: an attempt that was healthy
//! — it committed at least one Kafka transaction and ran for at least
//! `source.reconnect_backoff_max_ms` — resets the delay and the count before its own failure is
//! counted. A pipeline that runs for weeks with the odd dropped connection therefore never
//! gives up, while one that keeps failing (at start, or soon after every restart) gives up
//! after the limit.
//!
//! The *delay* starts over sooner than the count: an attempt that committed at least one
//! Kafka transaction ([`AttemptHealth::made_progress`]) shows that the source and Kafka were
//! reachable when it ran, so the fault that ended it is a new one, and the next attempt waits
//! only `reconnect_backoff_min_ms`. The doubling is for an attempt that fails before it gets
//! anything done (a service that is still down). Without this, faults that come closer
//! together than `reconnect_backoff_max_ms` carried the grown delay of the previous one: the
//! chaos suite saw sluice sleep several seconds after a Kafka link came back, because
//! earlier faults had doubled the delay and no attempt in between had run long enough to be
//! healthy. The count is not reset by progress alone, so a pipeline that commits a little and
//! fails again and again still gives up after `max_reconnect_attempts`.
//!
//! Pure code: the caller measures an attempt ([`AttemptHealth`]) and sleeps the delay.

use std::time::Duration;

/// How an attempt went, as far as the retry policy cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptHealth {
    /// How long the attempt ran, from its start to its failure.
    pub ran_for: Duration,
    /// Kafka transactions it committed.
    pub commits: u64,
}

impl AttemptHealth {
    /// Healthy: it committed at least one transaction and ran for at least `threshold`
    /// (`source.reconnect_backoff_max_ms`).
    pub fn healthy(&self, threshold: Duration) -> bool {
        self.made_progress() && self.ran_for >= threshold
    }

    /// It committed at least one Kafka transaction: the delay starts over from the minimum.
    pub fn made_progress(&self) -> bool {
        self.commits > 0
    }
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Wait `delay`, then start the next attempt; `failures` consecutive failures so far.
    Retry {
        /// The backoff before the next attempt.
        delay: Duration,
        /// Consecutive failures, this one included.
        failures: u32,
    },
    /// `source.max_reconnect_attempts` consecutive failures were retried already: stop.
    GiveUp {
        /// Consecutive failures, this one included.
        failures: u32,
    },
}

/// Capped exponential backoff with a limit on consecutive failures.
#[derive(Debug, Clone)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    limit: u32,
    next: Duration,
    failures: u32,
}

impl Backoff {
    /// Delays from `min` doubling up to `max`; `limit` consecutive failures are retried
    /// (0: every failure is).
    pub fn new(min: Duration, max: Duration, limit: u32) -> Backoff {
        let max = max.max(min);
        Backoff {
            min,
            max,
            limit,
            next: min,
            failures: 0,
        }
    }

    /// The policy of `[source]`: `reconnect_backoff_min_ms`, `reconnect_backoff_max_ms`,
    /// `max_reconnect_attempts`.
    pub fn from_config(source: &crate::config::SourceConfig) -> Backoff {
        Backoff::new(
            source.reconnect_backoff_min(),
            source.reconnect_backoff_max(),
            source.max_reconnect_attempts,
        )
    }

    /// Back to the first delay and no failures (a healthy attempt, or a resume after a pause).
    pub fn reset(&mut self) {
        self.next = self.min;
        self.failures = 0;
    }

    /// Consecutive failures counted so far.
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// An attempt failed with a transient error after going as `attempt` says.
    pub fn on_failure(&mut self, attempt: AttemptHealth) -> Decision {
        if attempt.healthy(self.max) {
            self.reset();
        } else if attempt.made_progress() {
            // A new fault, not one still going on: retry soon, but keep counting.
            self.next = self.min;
        }
        self.failures = self.failures.saturating_add(1);
        if self.limit > 0 && self.failures > self.limit {
            return Decision::GiveUp {
                failures: self.failures,
            };
        }
        let delay = self.next;
        self.next = self.next.saturating_mul(2).min(self.max);
        Decision::Retry {
            delay,
            failures: self.failures,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Duration = Duration::from_millis(200);
    const MAX: Duration = Duration::from_millis(1600);

    fn quick() -> AttemptHealth {
        AttemptHealth {
            ran_for: Duration::from_millis(10),
            commits: 0,
        }
    }

    fn healthy() -> AttemptHealth {
        AttemptHealth {
            ran_for: MAX,
            commits: 1,
        }
    }

    fn delay(d: Decision) -> Duration {
        match d {
            Decision::Retry { delay, .. } => delay,
            Decision::GiveUp { failures } => panic!("gave up after {failures} failures"),
        }
    }

    #[test]
    fn delays_double_up_to_the_maximum() {
        let mut b = Backoff::new(MIN, MAX, 0);
        let got: Vec<u64> = (0..7)
            .map(|_| delay(b.on_failure(quick())).as_millis() as u64)
            .collect();
        assert_eq!(got, [200, 400, 800, 1600, 1600, 1600, 1600]);
        assert_eq!(b.failures(), 7);
    }

    #[test]
    fn no_limit_never_gives_up() {
        let mut b = Backoff::new(MIN, MAX, 0);
        for _ in 0..10_000 {
            assert!(matches!(b.on_failure(quick()), Decision::Retry { .. }));
        }
    }

    #[test]
    fn the_limit_counts_consecutive_failures() {
        let mut b = Backoff::new(MIN, MAX, 2);
        assert_eq!(
            b.on_failure(quick()),
            Decision::Retry {
                delay: MIN,
                failures: 1
            }
        );
        assert_eq!(
            b.on_failure(quick()),
            Decision::Retry {
                delay: MIN * 2,
                failures: 2
            }
        );
        assert_eq!(b.on_failure(quick()), Decision::GiveUp { failures: 3 });
    }

    #[test]
    fn a_healthy_attempt_resets_delay_and_count() {
        let mut b = Backoff::new(MIN, MAX, 2);
        // Far more failures than the limit, each after a healthy attempt: never gives up, and
        // every delay is the first one again.
        for _ in 0..50 {
            assert_eq!(
                b.on_failure(healthy()),
                Decision::Retry {
                    delay: MIN,
                    failures: 1
                }
            );
        }
        // Failures in a row after the healthy one count from there.
        assert_eq!(delay(b.on_failure(quick())), MIN * 2);
        assert_eq!(b.on_failure(quick()), Decision::GiveUp { failures: 3 });
    }

    #[test]
    fn healthy_needs_both_a_commit_and_the_time() {
        // Ran long without committing (e.g. Kafka refused every commit): not healthy.
        let long_idle = AttemptHealth {
            ran_for: MAX * 10,
            commits: 0,
        };
        // Committed, but failed again at once (a flapping connection): not healthy.
        let short_busy = AttemptHealth {
            ran_for: MAX - Duration::from_millis(1),
            commits: 1000,
        };
        assert!(!long_idle.healthy(MAX));
        assert!(!short_busy.healthy(MAX));
        assert!(healthy().healthy(MAX));
        let mut b = Backoff::new(MIN, MAX, 2);
        b.on_failure(long_idle);
        b.on_failure(short_busy);
        assert_eq!(b.on_failure(long_idle), Decision::GiveUp { failures: 3 });
    }

    #[test]
    fn an_attempt_that_committed_restarts_the_delay_but_not_the_count() {
        let mut b = Backoff::new(MIN, MAX, 5);
        // Failures that got nothing done grow the delay ...
        assert_eq!(delay(b.on_failure(quick())), MIN);
        assert_eq!(delay(b.on_failure(quick())), MIN * 2);
        assert_eq!(delay(b.on_failure(quick())), MIN * 4);
        // ... a short attempt that committed brings it back to the minimum ...
        let short_busy = AttemptHealth {
            ran_for: Duration::from_millis(300),
            commits: 3,
        };
        assert_eq!(
            b.on_failure(short_busy),
            Decision::Retry {
                delay: MIN,
                failures: 4
            }
        );
        // ... and the doubling goes on from there for failures without progress.
        assert_eq!(delay(b.on_failure(quick())), MIN * 2);
        b.reset();
        // Committing a little before every failure still gives up after the limit.
        for n in 1..=5 {
            assert_eq!(
                b.on_failure(short_busy),
                Decision::Retry {
                    delay: MIN,
                    failures: n
                }
            );
        }
        assert_eq!(b.on_failure(short_busy), Decision::GiveUp { failures: 6 });
    }

    #[test]
    fn a_fault_right_after_an_earlier_one_gets_the_minimum_delay() {
        // The chaos suite's case: a Kafka reset fails a few attempts in a row, the pipeline
        // recovers and commits for a second or two (not long enough to be healthy), then a
        // blackhole ends that attempt. Its retry waits the minimum, not the grown delay.
        let mut b = Backoff::new(MIN, MAX, 0);
        for _ in 0..4 {
            b.on_failure(quick());
        }
        let recovered = AttemptHealth {
            ran_for: Duration::from_millis(1500),
            commits: 20,
        };
        assert!(!recovered.healthy(MAX));
        assert_eq!(delay(b.on_failure(recovered)), MIN);
    }

    #[test]
    fn reset_starts_over() {
        let mut b = Backoff::new(MIN, MAX, 1);
        b.on_failure(quick());
        b.reset();
        assert_eq!(b.failures(), 0);
        assert_eq!(
            b.on_failure(quick()),
            Decision::Retry {
                delay: MIN,
                failures: 1
            }
        );
    }

    #[test]
    fn a_minimum_above_the_maximum_is_capped() {
        // The configuration refuses min > max; the type stays sane anyway.
        let mut b = Backoff::new(MAX, MIN, 0);
        assert_eq!(delay(b.on_failure(quick())), MAX);
        assert_eq!(delay(b.on_failure(quick())), MAX);
    }
}
