//! The pipeline configuration: a strict TOML file (unknown keys are errors) plus
//! `SLUICE_*` environment overrides, deserialized into [`Config`] and checked by
//! [`Config::validate`].
//!
//! The TOML layout is a contract: fields may be added, never renamed.
//! `examples/quickstart.toml` is the demo pipeline and `examples/full.toml` documents
//! every field with its default.
//!
//! ```toml
//! name = "shop"
//! delivery = "exactly-once"
//!
//! [source]
//! url = "mysql://sluice:sluice@127.0.0.1:3306"
//! server_id = 5401
//! include = ["shop\\..*"]
//! start = "earliest"
//!
//! [kafka]
//! bootstrap_servers = "127.0.0.1:9092"
//!
//! [[route]]
//! match = "shop\\.(.*)"
//! topic = "shop.$1"
//! ```
//!
//! Submodules: [`secret`] (redaction, [`SourceUrl`]), [`mod@env`] (environment overrides),
//! [`route`] ([`Router`]: table filter and topic routing), [`schema_registry`]
//! ([`SchemaRegistryConfig`], for Avro routes), [`api`] ([`ApiConfig`], the HTTP API);
//! [`topics`] (the per-pipeline offsets and schema-history topic names); `props` holds the
//! handling of `kafka.properties` / `kafka.topic_config`.
//!
//! The settings themselves: `pipeline` (the top level, [`Config`]) and one file per section,
//! `source`, `kafka`, `commit`, `snapshot` and `route_config`; `error` holds [`Problem`] and
//! [`ConfigError`]. Built on them, and used by none of them: `load` (file and environment to
//! a [`Config`]), `derived` (the routes in force, the topic names) and `validate`
//! ([`Config::validate`]).

pub(crate) mod api;
pub mod cluster;
mod commit;
mod derived;
pub mod env;
mod error;
mod heartbeat;
mod kafka;
pub mod kafka_security;
mod limits;
mod load;
pub mod logging;
mod pipeline;
pub mod process;
mod props;
pub mod route;
mod route_config;
pub mod route_rules;
pub(crate) mod schema_registry;
pub(crate) mod secret;
mod shutdown;
mod snapshot;
mod source;
pub mod topics;
mod transaction_metadata;
mod validate;

#[cfg(test)]
mod process_tests;
#[cfg(test)]
mod route_rules_tests;
#[cfg(test)]
mod tests;

pub use api::ApiConfig;
pub use commit::{CommitConfig, CommitMode};
pub use error::{ConfigError, Problem};
pub use heartbeat::HeartbeatConfig;
pub use kafka::KafkaConfig;
pub use limits::{
    DEFAULT_CHANNEL_MAX_BYTES, DEFAULT_CHUNK_MAX_BYTES, DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_QUERY_TIMEOUT_MS,
};
pub use load::load_from_str;
pub use pipeline::{is_valid_pipeline_name, Config, Delivery};
pub use props::{reserved_property, ReservedProperty, RESERVED_PROPERTIES};
pub use route::{RouteTarget, Router};
pub use route_config::{Format, OnSchemaChange, RouteConfig};
pub use schema_registry::{SchemaRegistryConfig, SubjectNameStrategy};
pub use secret::{is_secret_key, redact_text, Secret, SourceUrl, UrlError};
pub use shutdown::DEFAULT_SHUTDOWN_TIMEOUT_MS;
pub use snapshot::{OnPurged, SnapshotConfig};
use source::non_empty;
pub use source::{replay_server_id, SourceConfig, SslMode};
pub use transaction_metadata::TransactionMetadataConfig;
