//! `[cluster]` of a process file: instances started with the same `group` and the same
//! pipeline files share the pipelines through a Kafka consumer group (`crate::cluster`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Problem;

/// Cluster mode (`[cluster]` in a process file). Without the section a process runs every
/// pipeline it lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    /// The Kafka consumer group the instances join, required; 1–100 characters from
    /// `[A-Za-z0-9._-]`. Each pipeline's assignment topic is `_sluice_cluster.<group>.<name>`.
    pub group: String,
    /// How long the group waits for a silent member before its pipelines move
    /// (`session.timeout.ms`), 6000 to 300000 within the broker's
    /// `group.min/max.session.timeout.ms`. Default: 10000.
    #[serde(default = "default_session_timeout_ms")]
    pub session_timeout_ms: u64,
    /// How often a member tells the group it is alive (`heartbeat.interval.ms`), below a
    /// third of `session_timeout_ms`. Default: 2000.
    #[serde(default = "default_heartbeat_interval_ms")]
    pub heartbeat_interval_ms: u64,
    /// How long a pipeline taken away by a rebalance may take to stop at a transaction
    /// boundary before the member lets it go anyway (fencing keeps that safe), below
    /// `max_poll_interval_ms`. Default: 30000.
    #[serde(default = "default_revoke_timeout_ms")]
    pub revoke_timeout_ms: u64,
    /// `max.poll.interval.ms` of the group consumer (polled by its own thread, so only a
    /// stop of the whole process exceeds it). Default: 300000.
    #[serde(default = "default_max_poll_interval_ms")]
    pub max_poll_interval_ms: u64,
}

fn default_session_timeout_ms() -> u64 {
    10_000
}
fn default_heartbeat_interval_ms() -> u64 {
    2_000
}
fn default_revoke_timeout_ms() -> u64 {
    30_000
}
fn default_max_poll_interval_ms() -> u64 {
    300_000
}

impl ClusterConfig {
    /// `revoke_timeout_ms` as a duration.
    pub fn revoke_timeout(&self) -> Duration {
        Duration::from_millis(self.revoke_timeout_ms)
    }
}

/// Checks `[cluster]`.
pub(super) fn validate(c: &ClusterConfig, problems: &mut Vec<Problem>) {
    if !super::is_valid_pipeline_name(&c.group) {
        problems.push(Problem::new(
            "cluster.group",
            format!("{:?}", c.group),
            "1–100 characters from [A-Za-z0-9._-]",
            "set cluster.group to the same name on every instance that shares these pipelines",
        ));
    }
    if !(6_000..=300_000).contains(&c.session_timeout_ms) {
        problems.push(Problem::new(
            "cluster.session_timeout_ms",
            c.session_timeout_ms.to_string(),
            "6000 to 300000 (and within the broker's group.min.session.timeout.ms and \
             group.max.session.timeout.ms)",
            "set cluster.session_timeout_ms, e.g. 10000 (the default)",
        ));
    }
    if c.heartbeat_interval_ms == 0 || c.heartbeat_interval_ms * 3 > c.session_timeout_ms {
        problems.push(Problem::new(
            "cluster.heartbeat_interval_ms",
            c.heartbeat_interval_ms.to_string(),
            format!(
                "at least 1 and at most a third of cluster.session_timeout_ms ({})",
                c.session_timeout_ms
            ),
            "set cluster.heartbeat_interval_ms, e.g. 2000 (the default)",
        ));
    }
    if c.max_poll_interval_ms < c.session_timeout_ms {
        problems.push(Problem::new(
            "cluster.max_poll_interval_ms",
            c.max_poll_interval_ms.to_string(),
            "at least cluster.session_timeout_ms",
            "set cluster.max_poll_interval_ms, e.g. 300000 (the default)",
        ));
    }
    if c.revoke_timeout_ms == 0 || c.revoke_timeout_ms >= c.max_poll_interval_ms {
        problems.push(Problem::new(
            "cluster.revoke_timeout_ms",
            c.revoke_timeout_ms.to_string(),
            format!(
                "at least 1 and below cluster.max_poll_interval_ms ({})",
                c.max_poll_interval_ms
            ),
            "set cluster.revoke_timeout_ms, e.g. 30000 (the default)",
        ));
    }
}
