//! `[commit]`: when a transaction (events and binlog position) commits ([`CommitConfig`]):
//! after `max_ms` or `max_events`, whichever comes first, and how often an idle pipeline
//! records its progress; with the defaults of its settings.
//!
//! Invariant: `Default` and the defaults serde uses for a missing key are the same
//! functions, so a section left out equals an empty one.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// `[commit]`: when a transaction (events + binlog position) is committed: after
/// `max_ms` or `max_events`, whichever comes first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommitConfig {
    /// Upper bound on the time between the first event of a transaction and the start of
    /// its commit, in milliseconds, at least 1; for events that arrived while the previous
    /// commit ran, counted from that commit's start. Default: 100.
    #[serde(default = "default_commit_max_ms")]
    pub max_ms: u64,
    /// Upper bound on the number of events in one transaction, at least 1.
    /// Default: 10000.
    #[serde(default = "default_commit_max_events")]
    pub max_events: usize,
    /// While the binlog brings no emitted events (idle server or filtered tables), an
    /// offset-only transaction records progress at most this often, in milliseconds,
    /// at least 1. Default: 10000.
    #[serde(default = "default_idle_offset_ms")]
    pub idle_offset_ms: u64,
    /// When an open transaction commits at a source transaction's end: `"interval"` (after
    /// `max_ms` or `max_events`; the most throughput) or `"eager"` (also as soon as the source
    /// has nothing more buffered: the least latency, more and smaller transactions while the
    /// source is slow). Default: `"interval"`.
    #[serde(default)]
    pub mode: CommitMode,
}

/// `commit.mode`: whether a transaction also commits as soon as the source has nothing more
/// buffered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CommitMode {
    /// After `commit.max_ms` or `commit.max_events`, whichever comes first.
    #[default]
    Interval,
    /// Also at the end of any source transaction after which nothing more is buffered.
    Eager,
}

impl Default for CommitConfig {
    fn default() -> Self {
        CommitConfig {
            max_ms: default_commit_max_ms(),
            max_events: default_commit_max_events(),
            idle_offset_ms: default_idle_offset_ms(),
            mode: CommitMode::default(),
        }
    }
}

impl CommitConfig {
    /// `max_ms` as a duration.
    pub fn max_interval(&self) -> Duration {
        Duration::from_millis(self.max_ms)
    }

    /// `idle_offset_ms` as a duration.
    pub fn idle_offset_interval(&self) -> Duration {
        Duration::from_millis(self.idle_offset_ms)
    }
}

pub(super) fn default_commit_max_ms() -> u64 {
    100
}
pub(super) fn default_commit_max_events() -> usize {
    10_000
}
pub(super) fn default_idle_offset_ms() -> u64 {
    10_000
}
