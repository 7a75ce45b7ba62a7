//! What `GET /status` shows of a pipeline ([`Status`]), and what its metrics keep of it.

use serde::Serialize;

use crate::position::SourcePosition;
use crate::snapshot::progress::SnapshotProgress;

/// The figures of [`Status`] that are not series.
#[derive(Debug, Clone)]
pub(super) struct StatusInner {
    pub(super) state: &'static str,
    pub(super) read: Option<SourcePosition>,
    pub(super) committed: Option<SourcePosition>,
    pub(super) committed_at_ms: u64,
    pub(super) committed_source_ts_ms: u64,
    pub(super) snapshot: Option<SnapshotProgress>,
    pub(super) last_error: Option<LastError>,
}

impl Default for StatusInner {
    fn default() -> Self {
        StatusInner {
            state: "starting",
            read: None,
            committed: None,
            committed_at_ms: 0,
            committed_source_ts_ms: 0,
            snapshot: None,
            last_error: None,
        }
    }
}

/// The last error that ended an attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LastError {
    /// `transient`, `definite` or `fenced`.
    pub kind: String,
    /// What happened and what to do.
    pub message: String,
    /// When, ms since the epoch.
    pub at_ms: u64,
}

/// The pipeline's status (`GET /status`).
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// One of [`STATES`](super::STATES).
    pub state: &'static str,
    /// The last transaction boundary the source handed to the sink (`gtid:…` / `file:…`).
    pub read_position: Option<String>,
    /// The committed offset: where a restart resumes.
    pub committed_position: Option<String>,
    /// When this instance last committed, ms since the epoch.
    pub committed_at_ms: Option<u64>,
    /// Source commit time of the committed offset, ms since the epoch.
    pub committed_source_ts_ms: Option<u64>,
    /// `sluice_lag_seconds`.
    pub lag_seconds: f64,
    /// `sluice_binlog_retention_headroom_seconds` (absent when the server never expires
    /// binlogs or it is not known yet).
    pub binlog_retention_headroom_seconds: Option<f64>,
    /// The snapshot progress last committed.
    pub snapshot: Option<SnapshotProgress>,
    /// The last error that ended an attempt.
    pub last_error: Option<LastError>,
}
