//! The committed state a sink reads after fencing: the offset record and the schema history
//! committed with it, and the one-time move of both out of the topics that all pipelines
//! shared before each got its own (`_sluice_offsets`, `_sluice_schema_history`).
//!
//! The move happens when the pipeline's own offsets topic (the default, not one set with
//! `kafka.offsets_topic`) holds no record of it while the shared topic does. In one Kafka
//! transaction — so it happens wholly or not at all — the offset record and the pipeline's
//! history entries are written to the pipeline's own topics and tombstones for them to the
//! shared ones. A later run finds its own record; and should its own topics ever be lost, the
//! shared topic no longer offers the old position to resume from (the lost-offsets guard,
//! [`super::past`], stops the run instead).

use std::collections::BTreeMap;

use rdkafka::producer::Producer;

use super::offsets::{self, OffsetRecord};
use super::producer::SinkProducer;
use super::reader::{self, Until};
use super::start_readers::Pair;
use super::topics::Topics;
use super::{classify, SinkSettings};
use crate::config::Delivery;
use crate::error::Result;

/// What the sink read after fencing: the committed offset and the schema history that was
/// committed with it (same transactions, so they agree).
#[derive(Debug, Default)]
pub struct Committed {
    /// The committed offset record, if the pipeline ever committed one.
    pub offset: Option<OffsetRecord>,
    /// Each included table's latest committed shape: `(db, table)` → the JSON written by
    /// the source (a tracked table definition).
    pub history: Vec<HistoryEntry>,
}

/// One table's committed shape: `(db, table)` and the JSON the source wrote.
pub type HistoryEntry = ((String, String), Vec<u8>);

/// Reads the committed offset and history of the pipeline (after `init_transactions`), moving
/// them out of the shared topics first when that is due.
pub(super) fn read(
    s: &SinkSettings,
    topics: &Topics,
    producer: &SinkProducer,
    pairs: (&Pair, &Pair),
) -> Result<Committed> {
    let (offsets_pair, history_pair) = pairs;
    // The two reads wait on their own round trips: at the same time, each with its pair of
    // consumers connected ahead.
    let span = tracing::Span::current();
    let (offset, history) = std::thread::scope(|scope| {
        let history = scope.spawn(|| {
            span.in_scope(|| read_history(s, &s.schema_history_topic, Some(history_pair)))
        });
        let offset = offsets::read_own_committed_on(s, offsets_pair);
        let history = history.join().unwrap_or_else(|_| {
            Err(crate::error::Error::definite(
                "reading the schema history panicked",
            ))
        });
        (offset, history)
    });
    let offset = offset?;
    let history = history?;
    if offset.is_none() {
        if let Some(found) = find_shared(s, topics)? {
            move_over(s, producer, &found)?;
            tracing::info!(
                pipeline = %s.name,
                position = %found.offset.position,
                history_entries = found.history.len(),
                "migrated the committed offset of pipeline {} from {} to {}",
                s.name,
                found.offsets_topic,
                s.offsets_topic
            );
            return Ok(Committed {
                offset: Some(found.offset),
                history: entries(&s.name, found.history),
            });
        }
    }
    Ok(Committed {
        offset,
        history: entries(&s.name, history),
    })
}

/// This pipeline's latest committed history records (key → value) in `topic`.
/// `pair`: consumers connected ahead ([`Pair`]), else it makes its own.
fn read_history(
    s: &SinkSettings,
    topic: &str,
    pair: Option<&Pair>,
) -> Result<BTreeMap<Vec<u8>, Vec<u8>>> {
    let prefix = format!("{}/", s.name);
    let accept = |k: &[u8]| k.starts_with(prefix.as_bytes());
    match pair {
        Some(pair) => reader::read_committed_latest_on(
            pair,
            &s.client,
            topic,
            accept,
            Until::CapturedHigh,
            s.read_timeout,
        ),
        None => reader::read_committed_latest(
            &s.client,
            topic,
            &format!("sluice-history-reader-{}", s.name),
            accept,
            Until::CapturedHigh,
            s.read_timeout,
        ),
    }
}

/// History records as entries. The key's `<db>.<table>` part is split at the first dot:
/// database names cannot contain one unquoted, and the JSON value names both parts exactly
/// anyway.
fn entries(name: &str, records: BTreeMap<Vec<u8>, Vec<u8>>) -> Vec<HistoryEntry> {
    let prefix_len = name.len() + 1;
    records
        .into_iter()
        .map(|(key, value)| {
            let key = String::from_utf8_lossy(&key[prefix_len.min(key.len())..]).into_owned();
            let (db, table) = key.split_once('.').unwrap_or((key.as_str(), ""));
            ((db.to_string(), table.to_string()), value)
        })
        .collect()
}

/// The pipeline's committed state in the shared topics.
struct Shared {
    offsets_topic: String,
    offset: OffsetRecord,
    history_topic: Option<String>,
    history: BTreeMap<Vec<u8>, Vec<u8>>,
}

/// The committed offset of this pipeline in the shared offsets topic (read as safely as its
/// own), with its history from the shared history topic; `None` when there is nothing to move.
fn find_shared(s: &SinkSettings, topics: &Topics) -> Result<Option<Shared>> {
    let Some(old) = &s.shared_offsets_topic else {
        return Ok(None);
    };
    if old == &s.offsets_topic || topics.partition_count(old)?.is_none() {
        return Ok(None);
    }
    let latest = reader::read_committed_latest(
        &s.client,
        old,
        &format!("sluice-offsets-reader-{}", s.name),
        |key| key == s.name.as_bytes(),
        Until::CapturedHigh,
        s.read_timeout,
    )?;
    let Some(bytes) = latest.get(s.name.as_bytes()) else {
        return Ok(None);
    };
    let mut offset = OffsetRecord::from_bytes(bytes)?;
    // Written now by this instance (a claim check must not take it for another writer's).
    offset.written_by = "migration".into();
    offset.instance = super::claim::instance_id().to_string();
    offset.committed_at_ms = crate::model::clock::now_ms();
    let history_topic = s
        .shared_history_topic
        .clone()
        .filter(|t| t != &s.schema_history_topic);
    let history = match &history_topic {
        Some(t) if topics.partition_count(t)?.is_some() => read_history(s, t, None)?,
        _ => BTreeMap::new(),
    };
    Ok(Some(Shared {
        offsets_topic: old.clone(),
        offset,
        history_topic,
        history,
    }))
}

/// Writes the shared state into the pipeline's own topics and tombstones it in the shared
/// ones: one transaction (exactly-once), or own records first, then the tombstones.
fn move_over(s: &SinkSettings, producer: &SinkProducer, found: &Shared) -> Result<()> {
    let eo = s.delivery == Delivery::ExactlyOnce;
    if eo {
        producer
            .inner
            .begin_transaction()
            .map_err(|e| classify::classify("begin_transaction (migration)", &e))?;
    }
    let name = s.name.as_bytes();
    for (key, value) in &found.history {
        producer.send(&s.schema_history_topic, Some(key), Some(value))?;
    }
    producer.send(&s.offsets_topic, Some(name), Some(&found.offset.to_bytes()))?;
    if !eo {
        producer.wait_delivered()?;
    }
    if let Some(old_history) = &found.history_topic {
        for key in found.history.keys() {
            producer.send(old_history, Some(key), None)?;
        }
    }
    producer.send(&found.offsets_topic, Some(name), None)?;
    producer.wait_delivered()?;
    if eo {
        producer
            .inner
            .commit_transaction(producer.wait_limit)
            .map_err(|e| classify::classify("commit_transaction (migration)", &e))?;
    }
    Ok(())
}
