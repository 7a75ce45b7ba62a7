//! The hanging-transaction guard: no transaction of this pipeline may start on a partition
//! where records of an unfinished transaction wait.
//!
//! Kafka can leave a transaction's records on a partition without its end marker. Seen on the
//! test bed: a broker shut down (SIGTERM, controlled shutdown) while the coordinator was
//! sending a commit's markers; with no leader left for the partitions it alone held, the
//! coordinator logged "Couldn't find leader endpoint for partitions ... these partitions are
//! likely deleted already and hence can be skipped" and completed the transaction without
//! them. The records stay open on the partition, holding its last stable offset (LSO) back,
//! and — the partition's producer state still counting them as this producer id's open
//! transaction — the *next* transaction of the same transactional id that writes there
//! commits them with its own marker. If the coordinator's view was an abort (the offset record
//! of that transaction never became visible), the pipeline resumes before those changes and
//! writes them again: they are then committed twice.
//!
//! Invariant: after `init_transactions` has fenced older producers (so every transaction the
//! coordinator knows of for this pipeline is decided and its markers written), every
//! partition this pipeline writes to has its LSO at its high watermark before the first
//! transaction starts. A partition whose LSO stays below the high watermark for the whole wait
//! holds records of a transaction nobody will end: the attempt fails (transient, so it is
//! retried) with the partition, the offset and the `kafka-transactions.sh` commands that
//! abort it, and nothing is written. Another producer's transaction on a shared topic that
//! ends within the wait is no problem.

use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::Consumer;
use regex::RegexSet;

use super::reader;
use crate::error::{Error, Result};

/// Where the guard looks.
pub struct Scope {
    /// librdkafka client config.
    pub client: ClientConfig,
    /// Names the routes can expand to.
    pub patterns: RegexSet,
    /// The pipeline's own further topics (schema changes, dead letters).
    pub own_topics: Vec<String>,
    /// Topics left to the committed-state reader (offsets, schema history), even when a
    /// route's pattern matches their names.
    pub skip: Vec<String>,
    /// How long a partition may stay held back before it counts as hanging.
    pub wait: Duration,
}

/// A partition whose last stable offset is below its high watermark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// The last stable offset: the first record of the open transaction.
    pub lso: i64,
    /// The high watermark.
    pub high: i64,
}

impl Held {
    /// The commands that find and abort the transaction.
    pub fn advice(&self, bootstrap: &str) -> String {
        format!(
            "`{t}` partition {p}: records from offset {lso} (its last stable offset) to {high} \
             belong to a transaction that is still open; find it with `kafka-transactions.sh \
             --bootstrap-server {bootstrap} find-hanging --topic {t} --partition {p}` (or \
             `describe-producers --topic {t} --partition {p}`) and abort it with \
             `kafka-transactions.sh --bootstrap-server {bootstrap} abort --topic {t} \
             --partition {p} --start-offset {lso}`",
            t = self.topic,
            p = self.partition,
            lso = self.lso,
            high = self.high
        )
    }
}

/// The partitions held back now: one look, no waiting. Blocking.
pub fn held_partitions(scope: &Scope) -> Result<Vec<Held>> {
    let uncommitted = reader::consumer(
        &scope.client,
        "sluice-hanging-probe",
        "read_uncommitted",
        "",
    )?;
    let committed = reader::consumer(&scope.client, "sluice-hanging-probe", "read_committed", "")?;
    let md = uncommitted
        .fetch_metadata(None, Duration::from_secs(30))
        .map_err(|e| Error::transient(format!("Kafka metadata request failed: {e}")))?;
    let mut held = Vec::new();
    for t in md.topics().iter().filter(|t| t.error().is_none()) {
        let name = t.name();
        if scope.skip.iter().any(|s| s == name) {
            continue;
        }
        if !(scope.patterns.is_match(name) || scope.own_topics.iter().any(|o| o == name)) {
            continue;
        }
        for p in t.partitions() {
            let Some((_, high)) = reader::watermarks(&uncommitted, name, p.id())? else {
                continue;
            };
            let Some((_, lso)) = reader::watermarks(&committed, name, p.id())? else {
                continue;
            };
            if lso < high {
                held.push(Held {
                    topic: name.to_string(),
                    partition: p.id(),
                    lso,
                    high,
                });
            }
        }
    }
    held.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    Ok(held)
}

/// The partitions of `first` still held at the same LSO in `now`.
pub fn still_held(first: &[Held], now: &[Held]) -> Vec<Held> {
    first
        .iter()
        .filter(|h| {
            now.iter()
                .any(|n| n.topic == h.topic && n.partition == h.partition && n.lso == h.lso)
        })
        .cloned()
        .collect()
}

/// Waits (up to `scope.wait`) for every held partition to move on; the error of an attempt
/// that must not write. Blocking: call it from the sink's thread.
pub fn check(scope: &Scope, bootstrap: &str) -> Result<()> {
    let first = held_partitions(scope)?;
    if first.is_empty() {
        return Ok(());
    }
    let started = Instant::now();
    let mut held = first;
    while !held.is_empty() && started.elapsed() < scope.wait {
        std::thread::sleep(Duration::from_millis(250));
        held = still_held(&held, &held_partitions(scope)?);
    }
    if held.is_empty() {
        return Ok(());
    }
    Err(refusal(&held, started.elapsed(), bootstrap))
}

/// The transient error for partitions held past the wait.
pub fn refusal(held: &[Held], waited: Duration, bootstrap: &str) -> Error {
    let list: Vec<String> = held.iter().map(|h| h.advice(bootstrap)).collect();
    Error::transient(format!(
        "{} partition(s) this pipeline writes to are held back by an open transaction {} s \
         after fencing: {}. Writing there now would commit those records with this \
         pipeline's next transaction, so nothing is written and the attempt is retried. A \
         transaction that stays open like this was left without its end marker by Kafka (e.g. \
         a broker that shut down while the commit's markers were due to partitions it alone \
         held); abort it with the command above",
        held.len(),
        waited.as_secs(),
        list.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(topic: &str, partition: i32, lso: i64) -> Held {
        Held {
            topic: topic.into(),
            partition,
            lso,
            high: lso + 3,
        }
    }

    #[test]
    fn only_partitions_held_at_the_same_offset_remain() {
        let first = vec![h("a", 0, 10), h("a", 1, 5), h("b", 0, 7)];
        // a/0 moved on (a later transaction of someone else holds it now: a new wait), a/1
        // is free, b/0 is held where it was.
        let now = vec![h("a", 0, 12), h("b", 0, 7)];
        assert_eq!(still_held(&first, &now), vec![h("b", 0, 7)]);
        assert!(still_held(&first, &[]).is_empty());
    }

    #[test]
    fn the_advice_names_the_partition_the_offset_and_the_commands() {
        let e = refusal(
            &[h("shop.orders", 2, 1210)],
            Duration::from_secs(11),
            "k:9092",
        );
        let text = e.to_string();
        assert!(text.contains("`shop.orders` partition 2: records from offset 1210"));
        assert!(text.contains("abort --topic shop.orders --partition 2 --start-offset 1210"));
        assert!(text.contains("find-hanging --topic shop.orders --partition 2"));
        assert!(text.contains("11 s after fencing"));
        assert_eq!(e.kind(), crate::error::ErrorKind::Transient);
    }
}
