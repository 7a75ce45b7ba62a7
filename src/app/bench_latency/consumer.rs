//! The Kafka side of `sluice bench-latency`: a `read_committed` consumer on a thread of its
//! own (librdkafka's calls block), assigned every partition of the topic at its end before
//! the first row is written, that notes every record it receives in the [`Tracker`].
//!
//! The end is each partition's high watermark, read before the assignment and given as an
//! explicit offset: every row of the run is produced after it, so none is skipped, however
//! late the consumer's first fetch starts (an assignment at `OFFSET_END` is resolved only when
//! the fetch starts, which could be after the first rows).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use tokio::sync::oneshot;

use super::plan::LatencyBench;
use super::stats::{key_id, KeyId};
use super::tracker::{lock, Tracker};
use crate::error::{Error, Result};
use crate::sink::topics::{TopicSettings, Topics};

/// How long one poll waits for a record; also how soon the thread sees that it must stop.
const POLL: Duration = Duration::from_millis(20);

/// The consumer's librdkafka settings: the bootstrap servers, a group id of its own (it
/// commits nothing and joins no group: partitions are assigned), `read_committed`, the short
/// `fetch.wait.max.ms`, then the `-X` properties.
pub fn consumer_config(bench: &LatencyBench) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", &bench.bootstrap)
        .set("reconnect.backoff.ms", "10")
        .set(
            "group.id",
            format!("sluice-bench-latency-{:016x}", rand::random::<u64>()),
        )
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("enable.partition.eof", "false")
        .set("isolation.level", "read_committed")
        .set("fetch.wait.max.ms", bench.fetch_wait_ms.to_string());
    for (k, v) in &bench.properties {
        c.set(k, v);
    }
    c
}

/// The topic's partition count, `None` when it does not exist. Blocking.
pub fn partitions(base: &ClientConfig, topic: &str) -> Result<Option<usize>> {
    let mut cfg = base.clone();
    cfg.set("allow.auto.create.topics", "false");
    let settings = TopicSettings {
        partitions: 1,
        replication_factor: -1,
        config: Default::default(),
    };
    Topics::new(&cfg, settings)?.partition_count(topic)
}

/// What the consumer thread saw besides records.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ConsumerEnd {
    /// Errors a poll returned (other than a broker connection going down, which librdkafka
    /// retries by itself).
    pub errors: u64,
    /// The last of them.
    pub last_error: Option<String>,
}

/// What the consumer thread is given.
pub struct ConsumerJob {
    /// Its settings ([`consumer_config`]).
    pub config: ClientConfig,
    /// The topic.
    pub topic: String,
    /// Its partitions.
    pub partitions: usize,
    /// The key field of the id.
    pub key_field: String,
    /// How long the partitions' watermarks may take to read (a topic just created may have
    /// no leader yet).
    pub ready_timeout: Duration,
}

/// Starts the consumer thread. `ready` answers once the partitions are assigned (or with the
/// error that kept them from it); the thread then notes records until `stop` is set.
pub fn spawn(
    job: ConsumerJob,
    tracker: Arc<Mutex<Tracker>>,
    stop: Arc<AtomicBool>,
) -> Result<(
    std::thread::JoinHandle<ConsumerEnd>,
    oneshot::Receiver<Result<()>>,
)> {
    let (tx, rx) = oneshot::channel();
    let handle = std::thread::Builder::new()
        .name("bench-latency-consumer".into())
        .spawn(move || match assign(&job) {
            Ok(consumer) => {
                let _ = tx.send(Ok(()));
                consume(&consumer, &job.key_field, &tracker, &stop)
            }
            Err(e) => {
                let _ = tx.send(Err(e));
                ConsumerEnd::default()
            }
        })
        .map_err(|e| Error::definite(format!("cannot start the consumer thread: {e}")))?;
    Ok((handle, rx))
}

/// Creates the consumer and assigns every partition at its high watermark.
fn assign(job: &ConsumerJob) -> Result<BaseConsumer> {
    let consumer: BaseConsumer = job.config.create().map_err(|e| {
        Error::definite(format!(
            "cannot create the Kafka consumer of {}: {e}",
            job.topic
        ))
    })?;
    let deadline = Instant::now() + job.ready_timeout;
    let mut tpl = TopicPartitionList::new();
    for p in 0..job.partitions {
        let p = i32::try_from(p).unwrap_or(i32::MAX);
        let high = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match consumer.fetch_watermarks(&job.topic, p, left.max(Duration::from_secs(1))) {
                Ok((_, high)) => break high,
                Err(e) if Instant::now() < deadline => {
                    tracing::debug!(topic = %job.topic, partition = p, error = %e, "watermarks not read yet");
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(e) => {
                    return Err(Error::definite(format!(
                        "cannot read the end of {} partition {p} within {:?}: {e}",
                        job.topic, job.ready_timeout
                    )))
                }
            }
        };
        tpl.add_partition_offset(&job.topic, p, Offset::Offset(high))
            .map_err(|e| Error::definite(format!("{} partition {p}: {e}", job.topic)))?;
    }
    consumer.assign(&tpl).map_err(|e| {
        Error::definite(format!(
            "cannot assign the partitions of {}: {e}",
            job.topic
        ))
    })?;
    Ok(consumer)
}

/// Polls until `stop`, noting each record: its id's receipt, or why it is none.
fn consume(
    consumer: &BaseConsumer,
    key_field: &str,
    tracker: &Mutex<Tracker>,
    stop: &AtomicBool,
) -> ConsumerEnd {
    let mut end = ConsumerEnd::default();
    while !stop.load(Ordering::Acquire) {
        match consumer.poll(POLL) {
            None => {}
            Some(Ok(m)) => {
                let at = Instant::now();
                let id = key_id(m.key(), key_field);
                let mut t = lock(tracker);
                if m.payload().is_none() {
                    t.unexpected.tombstones += 1;
                    continue;
                }
                match id {
                    KeyId::Id(id) => {
                        let us = t.us(at);
                        t.received(id, us);
                    }
                    KeyId::Unparsed => t.unexpected.unparsed += 1,
                }
            }
            Some(Err(KafkaError::MessageConsumption(
                RDKafkaErrorCode::BrokerTransportFailure | RDKafkaErrorCode::AllBrokersDown,
            ))) => {}
            Some(Err(e)) => {
                tracing::warn!(error = %e, "the latency consumer's poll failed");
                end.errors += 1;
                end.last_error = Some(e.to_string());
            }
        }
    }
    end
}

#[cfg(test)]
mod tests {
    use super::super::plan::Rate;
    use super::*;

    #[test]
    fn the_consumer_reads_committed_with_a_short_fetch_wait() {
        let bench = LatencyBench {
            source: "mysql://root@127.0.0.1:3306".into(),
            table: "lat.t".into(),
            bootstrap: "127.0.0.1:9092".into(),
            topic: "lat.t".into(),
            rate: Rate::Fixed(10),
            txn_rows: 1,
            connections: None,
            warmup_s: 1,
            seconds: 1,
            drain_timeout_s: 1,
            topic_wait_s: 1,
            payload_bytes: 10,
            fetch_wait_ms: 5,
            key_field: "id".into(),
            max_in_flight: 1000,
            behind_limit_ms: 100,
            properties: vec![("fetch.wait.max.ms".into(), "7".into())],
        };
        let c = consumer_config(&bench);
        assert_eq!(c.get("isolation.level"), Some("read_committed"));
        assert_eq!(c.get("enable.auto.commit"), Some("false"));
        assert_eq!(c.get("bootstrap.servers"), Some("127.0.0.1:9092"));
        // -X goes over the option.
        assert_eq!(c.get("fetch.wait.max.ms"), Some("7"));
        let c = consumer_config(&LatencyBench {
            properties: Vec::new(),
            ..bench
        });
        assert_eq!(c.get("fetch.wait.max.ms"), Some("5"));
        assert!(c
            .get("group.id")
            .is_some_and(|g| g.starts_with("sluice-bench-latency-")));
    }
}
