//! `[kafka]`: the Kafka cluster sluice writes to ([`KafkaConfig`]): brokers, the pipeline's
//! own topics, topic creation, the transaction timeout, the producer buffer and librdkafka
//! properties passed through, with the defaults of its settings.
//!
//! Invariant: `Debug` never shows a secret property value (it is written by hand, destructuring
//! every field, so a new field cannot be forgotten there).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::kafka_security::KafkaSecurity;
use super::props;

/// `[kafka]`: the Kafka cluster sluice writes to.
///
/// `Debug` shows secret `properties` values as `***`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KafkaConfig {
    /// Comma-separated `host:port` list of brokers to bootstrap from, required.
    pub bootstrap_servers: String,
    /// Compacted topic where sluice stores the pipeline's binlog position (key: the
    /// pipeline name), written in the same transaction as the events.
    /// Default: `"_sluice_offsets.<name>"`, a topic of the pipeline's own (see
    /// [`Config::offsets_topic`](super::Config::offsets_topic)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offsets_topic: Option<String>,
    /// Topic receiving one record per DDL statement on an included table (statement, table,
    /// shape before and after), written in the same Kafka transaction as the offset past it.
    /// Default: `"<name>.schema-changes"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_changes_topic: Option<String>,
    /// Compacted topic holding each included table's latest known shape (key
    /// `<name>/<db>.<table>`), written in the same Kafka transaction as the data and offset,
    /// so the history never disagrees with the committed position. Default:
    /// `"_sluice_schema_history.<name>"` (see [`Config::schema_history_topic`](super::Config::schema_history_topic)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_history_topic: Option<String>,
    /// Dead-letter topic for rows that cannot be written to their own topic under
    /// `on_schema_change = "dlq"`. Default: `"<name>.dlq"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dlq_topic: Option<String>,
    /// Number of partitions of data topics that sluice creates. Default: 1.
    #[serde(default = "default_partitions")]
    pub partitions: i32,
    /// Replication factor of topics that sluice creates; -1 = the broker's default.
    /// Default: -1.
    #[serde(default = "default_replication_factor")]
    pub replication_factor: i32,
    /// Topic configs for data topics sluice creates, e.g. `"cleanup.policy" = "compact"`.
    /// Default: empty.
    #[serde(default, deserialize_with = "props::deserialize_flat")]
    pub topic_config: BTreeMap<String, String>,
    /// Transaction timeout in milliseconds (librdkafka `transaction.timeout.ms`): a
    /// transaction not committed within it is aborted by the broker. Must exceed
    /// `commit.max_ms`. Default: 60000.
    #[serde(default = "default_transaction_timeout_ms")]
    pub transaction_timeout_ms: u64,
    /// Producer buffer bound in KiB (librdkafka `queue.buffering.max.kbytes`): bounds
    /// memory use. Default: 32768.
    #[serde(default = "default_max_buffer_kbytes")]
    pub max_buffer_kbytes: u64,
    /// Whether every record of Debezium's shape (data, tombstones, transaction metadata,
    /// heartbeats, schema changes) carries Debezium 3's context headers
    /// `__debezium.context.connectorLogicalName` (the pipeline's `name`), `connectorName`
    /// (`mysql` / `mariadb`), `taskId` (`0`) and `runId` (random per process start), as
    /// plain UTF-8 text. Default: false (Debezium's `extended.headers.enabled` defaults to
    /// true; sluice leaves the roughly 150 bytes per record out unless asked).
    #[serde(default)]
    pub context_headers: bool,
    /// How sluice authenticates to the brokers and protects its connections (SASL, TLS,
    /// mutual TLS), mapped onto librdkafka's `security.protocol`, `sasl.*` and `ssl.*`
    /// properties. Default: none (PLAINTEXT, or what `properties` sets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security: Option<KafkaSecurity>,
    /// Further librdkafka properties passed through unchanged (e.g. `security.protocol`,
    /// `sasl.password` when `[kafka.security]` is not used); values whose key contains `password`, `secret`,
    /// `sasl.oauthbearer.config` or `ssl.key.pem` are secrets. Properties sluice sets
    /// itself are refused (see [`RESERVED_PROPERTIES`](super::RESERVED_PROPERTIES)). Default: empty.
    #[serde(
        default,
        deserialize_with = "props::deserialize_flat",
        serialize_with = "props::serialize_redacted"
    )]
    pub properties: BTreeMap<String, String>,
}

impl fmt::Debug for KafkaConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Destructured without `..` so that a new field cannot be forgotten here.
        let KafkaConfig {
            bootstrap_servers,
            offsets_topic,
            schema_changes_topic,
            schema_history_topic,
            dlq_topic,
            partitions,
            replication_factor,
            topic_config,
            transaction_timeout_ms,
            max_buffer_kbytes,
            context_headers,
            security,
            properties,
        } = self;
        f.debug_struct("KafkaConfig")
            .field("bootstrap_servers", bootstrap_servers)
            .field("offsets_topic", offsets_topic)
            .field("schema_changes_topic", schema_changes_topic)
            .field("schema_history_topic", schema_history_topic)
            .field("dlq_topic", dlq_topic)
            .field("partitions", partitions)
            .field("replication_factor", replication_factor)
            .field("topic_config", topic_config)
            .field("transaction_timeout_ms", transaction_timeout_ms)
            .field("max_buffer_kbytes", max_buffer_kbytes)
            .field("context_headers", context_headers)
            .field("security", security)
            .field("properties", &props::RedactedMap(properties))
            .finish()
    }
}

fn default_partitions() -> i32 {
    1
}
fn default_replication_factor() -> i32 {
    -1
}
fn default_transaction_timeout_ms() -> u64 {
    60_000
}
fn default_max_buffer_kbytes() -> u64 {
    32_768
}
