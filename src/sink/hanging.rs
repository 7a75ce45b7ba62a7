//! The hanging-transaction look: partitions this pipeline writes to where records of an
//! unfinished transaction wait, reported after fencing.
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
//! Which way such records must go depends on the transaction they belong to, which the
//! partition alone does not tell: if its offset record was committed, they were committed in
//! the coordinator's view and the next transaction's marker commits them rightly (aborting them
//! loses them — the chaos run saw exactly that after an operator's `kafka-transactions.sh
//! abort`); if it was aborted, that marker duplicates them. Telling the two apart needs the
//! records' producer id and source positions against the committed offset (not yet done).
//!
//! What this guard does today: after `init_transactions` has fenced older producers, one look
//! at every partition the pipeline writes to; a partition whose last stable offset (LSO) is
//! below its high watermark is reported with a warning naming the partition, the offset and
//! the Kafka commands that show the producer holding it — it is not blocked, and nothing is
//! aborted. Another producer's transaction on a shared topic shows up here too and is harmless
//! (only the same producer id's next transaction takes unmarked records in).

use std::time::Duration;

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
    /// Where the held records are and the commands that show (and, when that is right, end)
    /// their transaction.
    pub fn advice(&self, bootstrap: &str) -> String {
        format!(
            "`{t}` partition {p}: records from offset {lso} (its last stable offset) to {high} \
             belong to a transaction that is still open; find it with `kafka-transactions.sh \
             --bootstrap-server {bootstrap} find-hanging --topic {t} --partition {p}` (or \
             `describe-producers --topic {t} --partition {p}`); only if it is not this \
             pipeline's or its offset record was aborted, end it with `kafka-transactions.sh \
             --bootstrap-server {bootstrap} abort --topic {t} --partition {p} --start-offset \
             {lso}`",
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

/// One look; a warning per partition held back. Blocking: call it from the sink's thread.
pub fn warn_held(scope: &Scope, bootstrap: &str) -> Result<()> {
    let held = held_partitions(scope)?;
    if !held.is_empty() {
        tracing::warn!(partitions = held.len(), "{}", warning(&held, bootstrap));
    }
    Ok(())
}

/// The warning for held partitions.
pub fn warning(held: &[Held], bootstrap: &str) -> String {
    let list: Vec<String> = held.iter().map(|h| h.advice(bootstrap)).collect();
    format!(
        "{} partition(s) this pipeline writes to are held back by an open transaction after \
         fencing: {}. Another producer's transaction on a shared topic is harmless; records of \
         this pipeline's own producer id left without a marker by Kafka (after a broker \
         shutdown during a commit) are committed by its next transaction there, which is right \
         when their offset record was committed and repeats them when it was aborted. Do not \
         abort them without checking which: compare their `source` positions with `sluice \
         offsets show`",
        held.len(),
        list.join("; ")
    )
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
    fn the_advice_names_the_partition_the_offset_and_the_commands() {
        let text = warning(&[h("shop.orders", 2, 1210)], "k:9092");
        assert!(text.contains("`shop.orders` partition 2: records from offset 1210"));
        assert!(text.contains("abort --topic shop.orders --partition 2 --start-offset 1210"));
        assert!(text.contains("find-hanging --topic shop.orders --partition 2"));
        assert!(text.contains("Do not abort them without checking"));
    }
}
