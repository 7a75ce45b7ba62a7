//! The lost-offsets guard: a pipeline with no committed offset but with a visible past.
//!
//! Without a committed offset a pipeline starts at `source.start`: right for a new pipeline,
//! wrong for one whose offsets topic was deleted or emptied — `initial` would snapshot again,
//! `latest` would skip what happened since, `earliest` would replay the binlog. So before such
//! a start, sluice looks (after fencing, so its own transactions are all decided) for signs that
//! the pipeline ran before:
//!
//! * entries of the pipeline in its schema-history topic (written in the same transactions as
//!   the offsets, so they survive only when the offsets topic alone was lost);
//! * committed records in the topics it writes: those its routes can expand to, its
//!   schema-change and dead-letter topics. Read under `read_committed`, so the aborted records
//!   of a first attempt that crashed before its first commit are no evidence.
//!
//! Any of them stops the run with a definite error, before anything is written, that says what
//! was found and how to go on: `sluice offsets set` to resume at a known position, or
//! `sluice run --start-over` to begin again from `source.start` on purpose.

use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::Consumer;
use regex::RegexSet;

use super::{patient, reader};
use crate::error::{Error, Result};

/// At most this many non-empty topics are read to confirm committed records.
const MAX_TOPICS_READ: usize = 20;

/// What the guard looks at.
pub struct Look {
    /// librdkafka client config.
    pub client: ClientConfig,
    /// The schema-history topic and how many entries of the pipeline it holds.
    pub history: (String, usize),
    /// Names the routes can expand to.
    pub patterns: RegexSet,
    /// Further topics of the pipeline's own (schema changes, dead letters).
    pub own_topics: Vec<String>,
    /// The pipeline's own offsets and history topics, never data topics.
    pub skip: Vec<String>,
    /// Bound on the whole look.
    pub timeout: Duration,
}

/// What was found: one line per piece of evidence, empty when the pipeline looks new.
/// Blocking: call it from a blocking thread.
pub fn evidence(look: &Look) -> Result<Vec<String>> {
    let mut found = Vec::new();
    let (history_topic, entries) = (&look.history.0, look.history.1);
    if entries > 0 {
        found.push(format!(
            "the schema-history topic `{history_topic}` holds {entries} committed entries of \
             this pipeline"
        ));
    }
    let probe = reader::consumer(&look.client, "sluice-past-reader", "read_uncommitted", "")?;
    let md = patient::retrying(patient::DEADLINE, |t| probe.fetch_metadata(None, t), || {})
        .map_err(|e| Error::transient(format!("Kafka metadata request failed: {e}")))?;
    let mut candidates: Vec<(String, Vec<i32>)> = md
        .topics()
        .iter()
        .filter(|t| t.error().is_none())
        .filter(|t| !look.skip.iter().any(|s| s == t.name()))
        .filter(|t| {
            look.patterns.is_match(t.name()) || look.own_topics.iter().any(|o| o == t.name())
        })
        .map(|t| {
            (
                t.name().to_string(),
                t.partitions().iter().map(|p| p.id()).collect(),
            )
        })
        .collect();
    candidates.sort();
    let deadline = Instant::now() + look.timeout;
    let mut read = 0usize;
    for (topic, partitions) in candidates {
        let mut marks = Vec::new();
        let mut total = 0i64;
        for p in partitions {
            if let Some((low, high)) = reader::watermarks(&probe, &topic, p)? {
                if high > low {
                    marks.push((p, high));
                    total += high - low;
                }
            }
        }
        if marks.is_empty() {
            continue;
        }
        read += 1;
        if read > MAX_TOPICS_READ {
            break;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if reader::holds_committed_records(&look.client, &topic, &marks, left)? {
            found.push(format!(
                "the topic `{topic}`, which this pipeline's routes write to, holds committed \
                 records ({total} offsets in {} partition(s))",
                marks.len()
            ));
            break;
        }
    }
    Ok(found)
}

/// The definite error of a run that found a past but no committed offset.
pub fn refusal(name: &str, offsets_topic: &str, start: &str, found: &[String]) -> Error {
    let effect = match start {
        "initial" => "take a new snapshot and write every row again",
        "snapshot_only" => "take a new snapshot and write every row again",
        "latest" => "skip every change made since the pipeline stopped",
        "earliest" => "replay the whole binlog and write its changes again",
        _ => "resume from that configured position, not where the pipeline stopped",
    };
    Error::definite(format!(
        "pipeline `{name}` has no committed offset in `{offsets_topic}`, but it ran before: {}. \
         Starting at source.start = \"{start}\" would {effect}, so sluice does not start and \
         has written nothing. Was the offsets topic deleted or emptied? To resume at a known \
         position, commit it with `sluice offsets set --config <file> --position \
         <gtid:...|file:<name>:<pos>>` (the records' `source` block names the binlog file, \
         position and GTID each came from) and run again; to begin again from source.start \
         on purpose, run `sluice run --config <file> --start-over`",
        found.join("; ")
    ))
}
