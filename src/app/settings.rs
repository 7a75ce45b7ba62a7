//! What the stages are given, derived from the configuration: the librdkafka client config,
//! the sink's settings, the committed-state read timeout and the parsed `source.start`.

use crate::config::route::Router;
use crate::config::topics::{SHARED_OFFSETS_TOPIC, SHARED_SCHEMA_HISTORY_TOPIC};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::position::StartSpec;
use crate::shutdown::ShutdownClock;
use crate::sink::topics::TopicSettings;
use crate::sink::SinkSettings;
use rdkafka::config::ClientConfig;
use std::time::Duration;

/// The librdkafka client config shared by producer, consumer and admin client.
pub fn client_config(cfg: &Config) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", &cfg.kafka.bootstrap_servers);
    // librdkafka spaces a client's connections by half of `reconnect.backoff.ms` (100 ms by
    // default), also the first one to the broker behind the bootstrap address: 50 ms of
    // every client's start, and a start creates about ten. The backoff still doubles on each
    // failure up to `reconnect.backoff.max.ms` (10 s). `[kafka.properties]` may set it.
    c.set("reconnect.backoff.ms", "10");
    // Validation refuses a property both here and in `[kafka.properties]`.
    if let Some(security) = &cfg.kafka.security {
        for (k, v) in security.librdkafka_properties() {
            c.set(k, v);
        }
    }
    for (k, v) in &cfg.kafka.properties {
        c.set(k, v);
    }
    c
}

/// The sink settings derived from the configuration.
pub fn sink_settings(cfg: &Config) -> SinkSettings {
    SinkSettings {
        name: cfg.name.clone(),
        transactional_id: cfg.transactional_id(),
        delivery: cfg.delivery,
        offsets_topic: cfg.offsets_topic(),
        shared_offsets_topic: cfg
            .kafka
            .offsets_topic
            .is_none()
            .then(|| SHARED_OFFSETS_TOPIC.to_string()),
        shared_history_topic: (cfg.kafka.offsets_topic.is_none()
            && cfg.kafka.schema_history_topic.is_none())
        .then(|| SHARED_SCHEMA_HISTORY_TOPIC.to_string()),
        read_timeout: committed_read_timeout(cfg),
        schema_changes_topic: cfg.schema_changes_topic(),
        schema_history_topic: cfg.schema_history_topic(),
        commit_max_ms: cfg.commit.max_ms,
        commit_max_events: cfg.commit.max_events,
        commit_eager: cfg.commit.mode == crate::config::CommitMode::Eager,
        idle_offset_ms: cfg.commit.idle_offset_ms,
        transaction_timeout_ms: cfg.kafka.transaction_timeout_ms,
        max_buffer_kbytes: cfg.kafka.max_buffer_kbytes,
        context_headers: cfg.kafka.context_headers,
        client: client_config(cfg),
        registry: cfg.needs_registry().then(|| cfg.schema_registry.clone()),
        dlq_topic: cfg.dlq_topic(),
        transaction_metadata: cfg.transaction_metadata.enabled.then(|| {
            (
                cfg.transaction_topic(),
                cfg.transaction_metadata.format,
                cfg.transaction_metadata.json_schemas,
            )
        }),
        heartbeat: cfg.heartbeat.enabled().then(|| {
            (
                cfg.heartbeat_topic(),
                Duration::from_millis(cfg.heartbeat.interval_ms),
                cfg.heartbeat.format,
                cfg.heartbeat.json_schemas,
            )
        }),
        data_topic_patterns: Router::new(cfg)
            .map(|r| r.topic_patterns())
            .unwrap_or_else(|_| regex::RegexSet::empty()),
        bootstrap: cfg.kafka.bootstrap_servers.clone(),
        topics: TopicSettings {
            partitions: cfg.kafka.partitions,
            replication_factor: cfg.kafka.replication_factor,
            config: cfg.kafka.topic_config.clone(),
        },
        shutdown: ShutdownClock::new(cfg.shutdown_timeout()),
        startup: crate::startup::Timeline::new(),
    }
}

/// How long reading the committed state after fencing waits for a foreign transaction that
/// holds the offsets topic's last stable offset back: `kafka.transaction_timeout_ms`, within
/// 10 to 60 s (a transaction of another sluice with the same setting ends within it), before
/// the attempt fails as transient and is retried.
pub fn committed_read_timeout(cfg: &Config) -> Duration {
    Duration::from_millis(cfg.kafka.transaction_timeout_ms.clamp(10_000, 60_000))
}

/// Parses `source.start`.
pub fn start_spec(cfg: &Config) -> Result<StartSpec> {
    cfg.source
        .start
        .parse()
        .map_err(|e| Error::definite(format!("`source.start`: {e}")))
}

/// How `sluice run` was asked to start.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunOptions {
    /// `--start-over`: with no committed offset, start at `source.start` even though the
    /// pipeline's past is visible (its schema history or records in its topics).
    pub start_over: bool,
}
