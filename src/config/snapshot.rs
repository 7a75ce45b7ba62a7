//! `[snapshot]`: how the rows tables already hold are read ([`SnapshotConfig`]) and what
//! happens when the committed position is gone from the server ([`OnPurged`]), with the
//! defaults of its settings.
//!
//! Invariant: `Default` and the defaults serde uses for a missing key are the same
//! functions, so a section left out equals an empty one.

use serde::{Deserialize, Serialize};

use super::limits;

/// `[snapshot]`: reading the rows tables already hold (`source.start = "initial"` or
/// `"snapshot_only"`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotConfig {
    /// Rows per chunk, at least 1: each chunk is one key-range `SELECT` and one Kafka
    /// transaction; memory holds at most `parallelism + 1` chunks. Default: 8192.
    #[serde(default = "default_chunk_size")]
    pub chunk_size: usize,
    /// Chunk readers (separate connections), 1..=64. Default: 1.
    #[serde(default = "default_parallelism")]
    pub parallelism: usize,
    /// What to do when the committed position is no longer on the server: `"fail"` (stop
    /// with a message) or `"resnapshot"`. Default: `"fail"`.
    #[serde(default)]
    pub on_purged: OnPurged,
    /// At most this many row changes of a table are remembered while one of its chunks is
    /// read; a busier table has the chunk read again. Default: 100000.
    #[serde(default = "default_max_window_changes")]
    pub max_window_changes: usize,
    /// A chunk ends early once its rows hold this many bytes (about their decoded size); a
    /// single larger row is a chunk of its own. Default: 33554432 (32 MiB).
    #[serde(default = "limits::default_chunk_max_bytes")]
    pub chunk_max_bytes: u64,
    /// The server-side time limit of each chunk and chunk-planning query, in milliseconds
    /// (MySQL's `MAX_EXECUTION_TIME` hint, MariaDB's `SET STATEMENT max_statement_time`),
    /// so no query (a slow ad-hoc filter, say) holds a snapshot transaction open for long. A
    /// chunk that hits it skips a filtered request's table with the reason, and otherwise is a
    /// definite error naming this setting. Not applied to the whole-table scan of a table
    /// without a key. 0 = no limit. Default: 300000 (5 minutes).
    #[serde(default = "default_statement_timeout_ms")]
    pub statement_timeout_ms: u64,
    /// Signal table as `db.table`: a row inserted into it (Debezium's shape: `id`, `type`,
    /// `data`) asks for an ad-hoc snapshot (`execute-snapshot`) or stops one
    /// (`stop-snapshot`); see `crate::snapshot::signal`. Default: none (no signal table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal_table: Option<String>,
}

impl Default for SnapshotConfig {
    fn default() -> Self {
        SnapshotConfig {
            chunk_size: default_chunk_size(),
            parallelism: default_parallelism(),
            on_purged: OnPurged::default(),
            max_window_changes: default_max_window_changes(),
            chunk_max_bytes: limits::default_chunk_max_bytes(),
            statement_timeout_ms: default_statement_timeout_ms(),
            signal_table: None,
        }
    }
}

fn default_statement_timeout_ms() -> u64 {
    300_000
}

impl SnapshotConfig {
    /// `statement_timeout_ms` as a duration; `None` when 0 (no limit).
    pub fn statement_timeout(&self) -> Option<std::time::Duration> {
        (self.statement_timeout_ms > 0)
            .then(|| std::time::Duration::from_millis(self.statement_timeout_ms))
    }
}

pub(super) fn default_chunk_size() -> usize {
    8192
}
fn default_parallelism() -> usize {
    1
}
pub(super) fn default_max_window_changes() -> usize {
    100_000
}

/// `snapshot.on_purged`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnPurged {
    /// Stop with a message naming the purged position and the fixes.
    #[default]
    Fail,
    /// Take a new snapshot of the included tables and stream from there.
    Resnapshot,
}
