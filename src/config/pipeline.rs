//! The top level of the file: [`Config`], the whole pipeline configuration (one file, one
//! pipeline) holding every section, with the pipeline's `name` (the rule:
//! [`is_valid_pipeline_name`]) and its [`Delivery`] guarantee.
//!
//! Invariant: the struct is strict (`deny_unknown_fields`), so a misspelt key is an error and
//! never silently ignored; a section left out is its `Default`. Loading, the values derived
//! from the settings and validation are in `load`, `derived` and `validate`, which use this
//! file; it uses none of them.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::shutdown;
use super::{
    ApiConfig, CommitConfig, HeartbeatConfig, KafkaConfig, RouteConfig, SchemaRegistryConfig,
    SnapshotConfig, SourceConfig, TransactionMetadataConfig,
};

/// Delivery guarantee towards Kafka.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Delivery {
    /// `"exactly-once"`: transactional producer; events and the binlog position commit
    /// atomically. The default.
    #[default]
    ExactlyOnce,
    /// `"at-least-once"`: idempotent producer without transactions; after a crash some
    /// events may be written again.
    AtLeastOnce,
}

impl Delivery {
    /// Whether Kafka transactions are used.
    pub fn is_transactional(self) -> bool {
        self == Delivery::ExactlyOnce
    }

    /// The TOML spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Delivery::ExactlyOnce => "exactly-once",
            Delivery::AtLeastOnce => "at-least-once",
        }
    }
}

impl fmt::Display for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The whole pipeline configuration (one file, one pipeline).
///
/// `Serialize` writes secrets as `***` (see [`Config::redacted_json`]); it is for display,
/// not for writing a usable file back.
// No `Eq`: `api.ready_max_lag_seconds` is a float.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Pipeline name, required; 1–100 characters from `[A-Za-z0-9._-]`. The Kafka
    /// `transactional.id` is `sluice-<name>` and the pipeline's progress is stored in
    /// `kafka.offsets_topic` under the key `<name>`: renaming a pipeline starts it afresh.
    pub name: String,
    /// Delivery guarantee: `"exactly-once"` (transactions) or `"at-least-once"`
    /// (idempotent producer, no transactions). Default: `"exactly-once"`.
    #[serde(default)]
    pub delivery: Delivery,
    /// How long `sluice run` may take to stop after SIGTERM/SIGINT, in milliseconds, 1000 to
    /// 3600000: a commit still waiting on Kafka then is given up on (best-effort abort) and
    /// the process exits 4. Default: 30000.
    #[serde(default = "shutdown::default_shutdown_timeout_ms")]
    pub shutdown_timeout_ms: u64,
    /// The MySQL/MariaDB server to read the binlog from (`[source]`), required.
    pub source: SourceConfig,
    /// The Kafka cluster to write to (`[kafka]`), required.
    pub kafka: KafkaConfig,
    /// When transactions commit (`[commit]`). Default: all defaults.
    #[serde(default)]
    pub commit: CommitConfig,
    /// Routes from tables to topics (`[[route]]`), first match wins; tables matching no
    /// route are not emitted. Default (when none is given): one route
    /// `match = "(.*)\\.(.*)"`, `topic = "<name>.$1.$2"` (see [`Config::default_route`]);
    /// loading fills it in.
    #[serde(default, rename = "route")]
    pub routes: Vec<RouteConfig>,
    /// The Schema Registry of Avro routes (`[schema_registry]`). Default: none (its `url`
    /// is required when a route has `format = "avro"`).
    #[serde(default)]
    pub schema_registry: SchemaRegistryConfig,
    /// How tables are snapshotted (`[snapshot]`). Default: all defaults.
    #[serde(default)]
    pub snapshot: SnapshotConfig,
    /// The HTTP API of `sluice run` (`[api]`). Default: all defaults (enabled on
    /// 127.0.0.1:8089, no token, ready up to 60 s of lag).
    #[serde(default)]
    pub api: ApiConfig,
    /// Debezium's transaction metadata topic (`[transaction_metadata]`). Default: off.
    #[serde(default)]
    pub transaction_metadata: TransactionMetadataConfig,
    /// Debezium's heartbeat topic (`[heartbeat]`). Default: off.
    #[serde(default)]
    pub heartbeat: HeartbeatConfig,
}

impl Config {
    /// `shutdown_timeout_ms` as a duration.
    pub fn shutdown_timeout(&self) -> Duration {
        Duration::from_millis(self.shutdown_timeout_ms)
    }
}

/// Whether `name` is a valid pipeline name: 1–100 characters from `[A-Za-z0-9._-]`.
pub fn is_valid_pipeline_name(name: &str) -> bool {
    (1..=100).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}
