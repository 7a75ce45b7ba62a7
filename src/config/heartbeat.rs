//! `[heartbeat]`: Debezium's heartbeat topic (`heartbeat.interval.ms`): a record on
//! `__debezium-heartbeat.<name>` at most every `interval_ms`, in a Kafka transaction with the
//! offset record, so consumers and monitors see the pipeline alive even when the captured
//! tables are idle ([`HeartbeatConfig`]). Not the replication heartbeat of
//! `source.heartbeat_ms`.
//!
//! Invariant: `Default` and the defaults serde uses for a missing key are the same, so a
//! section left out equals an empty one (off).

use serde::{Deserialize, Serialize};

use super::{Format, Problem};

/// The smallest `interval_ms` other than 0: every heartbeat is a Kafka transaction.
pub const MIN_INTERVAL_MS: u64 = 100;

/// `[heartbeat]`: Debezium's heartbeat topic.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeartbeatConfig {
    /// At most this often, in milliseconds, a record `{"ts_ms": <now>}` keyed by
    /// `{"serverName": "<name>"}` is written with the offset record (Debezium's
    /// `heartbeat.interval.ms`); 0 turns it off, otherwise at least 100. Default: 0.
    #[serde(default)]
    pub interval_ms: u64,
    /// The topic. Default: `"__debezium-heartbeat.<name>"` (Debezium's
    /// `topic.heartbeat.prefix` and topic prefix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    /// `"json"` or `"avro"` (Debezium's `ServerNameKey` / `Heartbeat` schemas, registered in
    /// `[schema_registry]`). Default: `"json"`.
    #[serde(default)]
    pub format: Format,
    /// With `format = "json"`: write each key and value as `{"schema": <Kafka Connect
    /// schema>, "payload": <the record>}` (Debezium's `ServerNameKey` / `Heartbeat` schemas,
    /// as `JsonConverter` with `schemas.enable=true` writes them), like a route's
    /// `json_schemas`. Default: false.
    #[serde(default)]
    pub json_schemas: bool,
}

impl HeartbeatConfig {
    /// Whether heartbeats are written.
    pub fn enabled(&self) -> bool {
        self.interval_ms > 0
    }

    /// The topic: `topic`, or `__debezium-heartbeat.<name>`.
    pub fn topic_for(&self, name: &str) -> String {
        self.topic
            .clone()
            .unwrap_or_else(|| format!("__debezium-heartbeat.{name}"))
    }
}

/// Checks `interval_ms`.
pub(super) fn validate(h: &HeartbeatConfig, problems: &mut Vec<Problem>) {
    if h.interval_ms > 0 && h.interval_ms < MIN_INTERVAL_MS {
        problems.push(Problem::new(
            "heartbeat.interval_ms",
            h.interval_ms.to_string(),
            format!(
                "0 (off) or at least {MIN_INTERVAL_MS}: every heartbeat is a Kafka transaction"
            ),
            format!("set heartbeat.interval_ms to 0 or to {MIN_INTERVAL_MS} or more"),
        ));
    }
}
