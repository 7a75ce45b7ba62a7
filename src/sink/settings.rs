//! Everything the sink needs from the configuration ([`SinkSettings`]), and the scope of the
//! look for records left without a transaction marker that follows from it.

use std::time::Duration;

use rdkafka::config::ClientConfig;

use super::topics::TopicSettings;
use super::unmarked;
use crate::config::Delivery;

/// Everything the sink needs from the configuration.
#[derive(Debug, Clone)]
pub struct SinkSettings {
    /// Pipeline name: offset record key.
    pub name: String,
    /// `transactional.id`.
    pub transactional_id: String,
    /// Exactly-once or at-least-once.
    pub delivery: Delivery,
    /// Compacted single-partition offsets topic.
    pub offsets_topic: String,
    /// The shared offsets topic to move this pipeline's committed offset from, once, when its
    /// own topic holds none (`None` when `kafka.offsets_topic` is set).
    pub shared_offsets_topic: Option<String>,
    /// The shared schema-history topic moved from with it (`None` when
    /// `kafka.schema_history_topic` is set).
    pub shared_history_topic: Option<String>,
    /// How long reading the committed state may wait for a foreign open transaction.
    pub read_timeout: Duration,
    /// One record per DDL on an included table (single partition, in binlog order).
    pub schema_changes_topic: String,
    /// Compacted single-partition topic of each included table's latest shape.
    pub schema_history_topic: String,
    /// Commit at most this long after a Kafka transaction's first record.
    pub commit_max_ms: u64,
    /// Commit once a Kafka transaction holds this many records (at a source boundary).
    pub commit_max_events: usize,
    /// `commit.mode = "eager"`: also commit at a source boundary after which nothing more is
    /// buffered.
    pub commit_eager: bool,
    /// At most this often an offset-only transaction records progress through idle binlog.
    pub idle_offset_ms: u64,
    /// `transaction.timeout.ms`.
    pub transaction_timeout_ms: u64,
    /// `queue.buffering.max.kbytes`.
    pub max_buffer_kbytes: u64,
    /// `kafka.context_headers`: Debezium's `__debezium.context.*` headers on its records.
    pub context_headers: bool,
    /// librdkafka client config (bootstrap servers and passthrough properties).
    pub client: ClientConfig,
    /// For topics sluice creates.
    pub topics: TopicSettings,
    /// The Schema Registry of Avro routes (`None` when no route uses Avro).
    pub registry: Option<crate::config::SchemaRegistryConfig>,
    /// Debezium's transaction metadata topic, the format of its records and whether JSON
    /// records carry their Connect schemas (`json_schemas`), when `[transaction_metadata]` is
    /// enabled.
    pub transaction_metadata: Option<(String, crate::config::Format, bool)>,
    /// Debezium's heartbeat topic, interval, record format and whether JSON records carry
    /// their Connect schemas (`json_schemas`), when `[heartbeat]` is enabled.
    pub heartbeat: Option<(String, Duration, crate::config::Format, bool)>,
    /// Dead-letter topic of routes with `on_schema_change = "dlq"`.
    pub dlq_topic: String,
    /// Names the routes can expand to (the data topics), for [`super::unmarked`] (the partitions it looks at).
    pub data_topic_patterns: regex::RegexSet,
    /// `kafka.bootstrap_servers`, for the commands an error advises.
    pub bootstrap: String,
    /// When shutdown was requested: bounds the sink's waits on Kafka once it was (see
    /// [`crate::shutdown`]).
    pub shutdown: crate::shutdown::ShutdownClock,
    /// The attempt's start-up steps, timed ([`crate::startup`]).
    pub startup: crate::startup::Timeline,
}

/// Where [`super::unmarked`] looks for held partitions: the data topics and the pipeline's further
/// topics, not its offsets and history topics (those have their own readers).
pub(crate) fn unmarked_scope(s: &SinkSettings) -> unmarked::Scope {
    unmarked::Scope {
        client: s.client.clone(),
        patterns: s.data_topic_patterns.clone(),
        own_topics: [s.schema_changes_topic.clone(), s.dlq_topic.clone()]
            .into_iter()
            .chain(s.transaction_metadata.iter().map(|(t, ..)| t.clone()))
            .chain(s.heartbeat.iter().map(|(t, ..)| t.clone()))
            .collect(),
        skip: vec![s.offsets_topic.clone(), s.schema_history_topic.clone()],
    }
}
