//! Kafka requests that outlast a node outage: watermarks, metadata, topic configs and topic
//! creation, tried in short tries until a deadline instead of in one long one.
//!
//! A request librdkafka sends to a node that has just died waits on that node until its
//! timeout: the cluster keeps naming the dead node as a partition's leader (or as the
//! controller) until the controller fences it, `broker.session.timeout.ms` (9 s by default)
//! after its last heartbeat. One try with the whole timeout then fails the pipeline's attempt
//! (seen in the chaos run on the three-node cluster: "reading the end of `….offsets`: Meta data
//! fetch error: OperationTimedOut" after 10 s, "describing topic: Admin operation error:
//! OperationTimedOut" after 30 s, each followed by a full restart). Short tries, each after a
//! fresh metadata request, reach the new leader as soon as the cluster has elected one.
//!
//! Only requests whose repetition changes nothing go through here: reads, and topic creation
//! (a try whose answer was lost leaves the topic there, and the next try's TopicAlreadyExists
//! counts as done). An error the client will not get past by itself (authorization, an unknown
//! topic, …) ends the retries at once.

use std::time::{Duration, Instant};

use rdkafka::client::{Client, ClientContext};
use rdkafka::error::{KafkaError, KafkaResult};

use crate::sink::classify::consumer_recovers;

/// The first try's timeout; each further try doubles it, up to what is left of the deadline.
pub const FIRST_TRY: Duration = Duration::from_secs(2);

/// The pause between two tries.
pub const PAUSE: Duration = Duration::from_millis(200);

/// The whole deadline of a read that has no deadline of its own: long enough for a dead
/// node to be fenced and its partitions to get a new leader (9 s by default, plus the
/// election and a coordinator's load), as long as librdkafka's default request timeout.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// Runs `call` with a per-try timeout until it succeeds, fails with an error a client does
/// not recover from, or `deadline` has passed (then the last error). `between` runs after
/// each failed try (e.g. a fresh metadata request, so the next try finds a new leader).
pub fn retrying<T>(
    deadline: Duration,
    mut call: impl FnMut(Duration) -> KafkaResult<T>,
    mut between: impl FnMut(),
) -> KafkaResult<T> {
    let started = Instant::now();
    let mut per_try = FIRST_TRY;
    loop {
        let left = deadline.saturating_sub(started.elapsed());
        let this_try = per_try.min(left).max(PAUSE);
        let err: KafkaError = match call(this_try) {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        if !consumer_recovers(&err) || started.elapsed() + PAUSE >= deadline {
            return Err(err);
        }
        tracing::info!(error = %err, per_try = ?this_try, "a Kafka read failed (a node down or a leader moving?); trying again");
        between();
        std::thread::sleep(PAUSE);
        per_try = per_try.saturating_mul(2).min(deadline);
    }
}

/// `(low, high)` watermarks of `topic`'s `partition` (under `read_committed` the high one is
/// the last stable offset), retried past a leader that just died. Blocking.
pub fn watermarks<C: ClientContext>(
    client: &Client<C>,
    topic: &str,
    partition: i32,
    deadline: Duration,
) -> KafkaResult<(i64, i64)> {
    retrying(
        deadline,
        |t| client.fetch_watermarks(topic, partition, t),
        || refresh_metadata(client, topic),
    )
}

/// A fresh metadata request for `topic`: it updates librdkafka's view of the partition
/// leaders and of the controller that admin requests go to. Its own errors are those of the
/// next try, so they are not returned.
pub fn refresh_metadata<C: ClientContext>(client: &Client<C>, topic: &str) {
    let _ = client.fetch_metadata(Some(topic), FIRST_TRY);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rdkafka::error::RDKafkaErrorCode;
    use std::cell::RefCell;

    fn timed_out() -> KafkaError {
        KafkaError::MetadataFetch(RDKafkaErrorCode::OperationTimedOut)
    }

    #[test]
    fn a_read_is_tried_again_past_a_dead_leader_with_growing_timeouts() {
        let tries = RefCell::new(Vec::new());
        let refreshed = RefCell::new(0);
        let got = retrying(
            Duration::from_secs(30),
            |t| {
                tries.borrow_mut().push(t);
                match tries.borrow().len() {
                    1 => Err(timed_out()),
                    2 => Err(KafkaError::MetadataFetch(RDKafkaErrorCode::DestroyBroker)),
                    3 => Err(KafkaError::MetadataFetch(
                        RDKafkaErrorCode::NotLeaderForPartition,
                    )),
                    _ => Ok(7),
                }
            },
            || *refreshed.borrow_mut() += 1,
        );
        assert_eq!(got.unwrap(), 7);
        assert_eq!(
            *tries.borrow(),
            [2, 4, 8, 16].map(Duration::from_secs),
            "each try doubles the timeout"
        );
        assert_eq!(
            *refreshed.borrow(),
            3,
            "metadata refreshed after each failed try"
        );
    }

    #[test]
    fn an_admin_request_that_timed_out_is_tried_again() {
        let mut tries = 0;
        let got = retrying(
            Duration::from_secs(30),
            |_| {
                tries += 1;
                if tries == 1 {
                    Err(KafkaError::AdminOp(RDKafkaErrorCode::OperationTimedOut))
                } else {
                    Ok(())
                }
            },
            || {},
        );
        assert!(got.is_ok());
        assert_eq!(tries, 2);
    }

    #[test]
    fn a_refusal_ends_the_retries_at_once() {
        let mut tries = 0;
        let got: KafkaResult<()> = retrying(
            Duration::from_secs(30),
            |_| {
                tries += 1;
                Err(KafkaError::MetadataFetch(
                    RDKafkaErrorCode::TopicAuthorizationFailed,
                ))
            },
            || {},
        );
        assert!(matches!(
            got,
            Err(KafkaError::MetadataFetch(
                RDKafkaErrorCode::TopicAuthorizationFailed
            ))
        ));
        assert_eq!(tries, 1);
    }

    #[test]
    fn the_deadline_bounds_the_tries_and_the_last_error_is_returned() {
        let started = Instant::now();
        let mut timeouts = Vec::new();
        let got: KafkaResult<()> = retrying(
            Duration::from_millis(900),
            |t| {
                timeouts.push(t);
                std::thread::sleep(t.min(Duration::from_millis(300)));
                Err(timed_out())
            },
            || {},
        );
        assert!(
            matches!(got, Err(e) if e.rdkafka_error_code() == Some(RDKafkaErrorCode::OperationTimedOut))
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert!(
            timeouts.iter().all(|t| *t <= Duration::from_millis(900)),
            "no try outlasts the deadline: {timeouts:?}"
        );
        assert!(timeouts.len() >= 2, "tried again: {timeouts:?}");
    }
}
