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

pub mod api;
pub mod env;
mod limits;
mod props;
pub mod route;
pub mod schema_registry;
pub mod secret;
mod shutdown;
pub mod topics;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use api::ApiConfig;
pub use limits::{
    DEFAULT_CHANNEL_MAX_BYTES, DEFAULT_CHUNK_MAX_BYTES, DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_QUERY_TIMEOUT_MS,
};
pub use props::{reserved_property, ReservedProperty, RESERVED_PROPERTIES};
pub use route::{RouteTarget, Router};
pub use schema_registry::{SchemaRegistryConfig, SubjectNameStrategy};
pub use secret::{is_secret_key, redact_text, Secret, SourceUrl, UrlError};
pub use shutdown::DEFAULT_SHUTDOWN_TIMEOUT_MS;

/// One thing wrong with a setting: where, what was found, what is expected and how to
/// fix it. Never contains a secret value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Setting path, e.g. `source.server_id`, `route[1].match`, `source.include[0]`.
    pub path: String,
    /// What was found.
    pub found: String,
    /// What is expected.
    pub expected: String,
    /// How to fix it.
    pub fix: String,
}

impl Problem {
    /// Builds a problem report.
    pub fn new(
        path: impl Into<String>,
        found: impl Into<String>,
        expected: impl Into<String>,
        fix: impl Into<String>,
    ) -> Problem {
        Problem {
            path: path.into(),
            found: found.into(),
            expected: expected.into(),
            fix: fix.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: found {}; expected {}; fix: {}",
            self.path, self.found, self.expected, self.fix
        )
    }
}

fn format_problems(problems: &[Problem]) -> String {
    match problems {
        [one] => format!("invalid configuration: {one}"),
        many => {
            let mut out = format!("invalid configuration ({} problems):", many.len());
            for p in many {
                out.push_str("\n  - ");
                out.push_str(&p.to_string());
            }
            out
        }
    }
}

/// Why a configuration could not be loaded. No variant's text contains a secret.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The configuration file does not exist.
    #[error(
        "configuration file `{}` not found; fix: check the path (start from \
         examples/quickstart.toml or examples/full.toml)",
        path.display()
    )]
    NotFound {
        /// The path that was tried.
        path: PathBuf,
    },
    /// The configuration file exists but could not be read.
    #[error("cannot read configuration file `{}`: {source}", path.display())]
    Read {
        /// The path that was tried.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// TOML syntax error, unknown key, missing required key or wrong type. The message
    /// is the TOML parser's (with line and column where known, and the key), redacted.
    #[error("{message}")]
    Toml {
        /// The (redacted) message.
        message: String,
    },
    /// A `SLUICE_*` environment variable is unknown or has an unusable value.
    #[error("environment variable {var}: {message}")]
    Env {
        /// The variable's name.
        var: String,
        /// What is wrong and how to fix it (never the value of a secret).
        message: String,
    },
    /// Settings that parsed but are not acceptable (see [`Problem`]).
    #[error("{}", format_problems(.0))]
    Invalid(Vec<Problem>),
    /// An error in the named configuration file.
    #[error("in configuration file `{}`: {inner}", path.display())]
    InFile {
        /// The configuration file.
        path: PathBuf,
        /// The error.
        inner: Box<ConfigError>,
    },
}

impl ConfigError {
    /// The validation problems this error reports (looking inside
    /// [`ConfigError::InFile`]); empty for other kinds of error.
    pub fn problems(&self) -> &[Problem] {
        match self {
            ConfigError::Invalid(p) => p,
            ConfigError::InFile { inner, .. } => inner.problems(),
            _ => &[],
        }
    }
}

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

/// Encoding of message values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// `"json"`: one JSON document per change. The default.
    #[default]
    Json,
    /// `"avro"`: Avro binary in the Confluent wire format (magic byte 0, 4-byte schema id),
    /// schemas registered in `[schema_registry]` (whose `url` it requires).
    Avro,
}

impl Format {
    /// The TOML spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Avro => "avro",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What happens when an included table's shape changes (DDL), per route.
///
/// The names follow Flink CDC's `schema.change.behavior` and Debezium's practice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnSchemaChange {
    /// `"evolve"` (default): the schema-change record is written and the new shape is
    /// registered (Avro) before the first record of that shape commits; a change the
    /// registry refuses (incompatible under its compatibility rule) stops the pipeline with
    /// the registry's answer, with nothing of the new shape committed.
    #[default]
    Evolve,
    /// `"fail"`: any DDL that changes the shape of a table on this route stops the pipeline
    /// before it is committed, naming the table, the statement and (Avro) the registry's
    /// compatibility verdict. For operators who approve every change: set the route to
    /// `"evolve"` and restart to let it through.
    Fail,
    /// `"dlq"`: like `"evolve"`, but rows whose new schema the registry refuses go to the
    /// dead-letter topic (`kafka.dlq_topic`, JSON, headers naming the error) instead of
    /// stopping the pipeline.
    Dlq,
}

impl OnSchemaChange {
    /// The TOML spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            OnSchemaChange::Evolve => "evolve",
            OnSchemaChange::Fail => "fail",
            OnSchemaChange::Dlq => "dlq",
        }
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
}

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
            signal_table: None,
        }
    }
}

fn default_chunk_size() -> usize {
    8192
}
fn default_parallelism() -> usize {
    1
}
fn default_max_window_changes() -> usize {
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

/// `[source]`: the MySQL/MariaDB server sluice replicates from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceConfig {
    /// Server URL, required: `mysql://user:password@host[:port][/database][?params]`
    /// (port default 3306; also for MariaDB). The password is secret: it is never printed.
    pub url: SourceUrl,
    /// Replica server id sluice presents to the server, required, non-zero, unique among
    /// the server's replicas.
    pub server_id: u32,
    /// Regexes on `db.table` (whole-name match) selecting the tables to capture.
    /// Default: empty, meaning every table outside the system schemas.
    #[serde(default)]
    pub include: Vec<String>,
    /// Regexes on `db.table` (whole-name match) of tables not to capture, applied after
    /// `include`. Default: empty.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Whether tables of the system schemas (`mysql`, `information_schema`,
    /// `performance_schema`, `sys`) may be captured at all (they still have to pass
    /// `include`/`exclude`). Default: false.
    #[serde(default)]
    pub include_system_schemas: bool,
    /// Where to start when the pipeline has no stored position (ignored once it has one):
    /// `"initial"` (snapshot the included tables, streaming from the snapshot's start
    /// meanwhile), `"snapshot_only"` (snapshot, then stop), or stream without a snapshot from
    /// `"earliest"`, `"latest"`, `"gtid:<gtid set>"` or `"file:<binlog file>:<position>"`.
    /// Default: `"initial"`.
    #[serde(default = "default_start")]
    pub start: String,
    /// Heartbeat period requested from the server, in milliseconds, so that a dead
    /// connection is noticed. Default: 5000.
    #[serde(default = "default_heartbeat_ms")]
    pub heartbeat_ms: u64,
    /// Timeout for connecting to the server, in milliseconds. Default: 10000.
    #[serde(default = "default_connect_timeout_ms")]
    pub connect_timeout_ms: u64,
    /// First delay before reconnecting after a lost connection, in milliseconds; doubled
    /// on each failed attempt up to `reconnect_backoff_max_ms`. Default: 200.
    #[serde(default = "default_reconnect_backoff_min_ms")]
    pub reconnect_backoff_min_ms: u64,
    /// Largest delay between reconnection attempts, in milliseconds. Default: 30000.
    #[serde(default = "default_reconnect_backoff_max_ms")]
    pub reconnect_backoff_max_ms: u64,
    /// Consecutive failed attempts (start-up included) before giving up; 0 = never give up.
    /// A healthy attempt (one commit, and `reconnect_backoff_max_ms` of running) resets the
    /// count. Default: 0.
    #[serde(default)]
    pub max_reconnect_attempts: u32,
    /// TLS to the server, as the MySQL client's `--ssl-mode`: `"disabled"`, `"preferred"`
    /// (TLS when the server offers it, certificate not checked), `"required"` (TLS,
    /// certificate not checked), `"verify_ca"` (TLS, certificate signed by `ssl_ca`) or
    /// `"verify_identity"` (as `verify_ca`, and the certificate names the URL's host).
    /// Applies to every connection sluice opens to the server. Default: `"preferred"`.
    #[serde(default)]
    pub ssl_mode: SslMode,
    /// PEM file of the CA certificate(s) the server's certificate must be signed by;
    /// required by (and only allowed with) `verify_ca` and `verify_identity`. Default: empty
    /// (none).
    #[serde(default)]
    pub ssl_ca: PathBuf,
    /// PEM file of a client certificate (chain) presented to the server, for users created
    /// `REQUIRE X509` / `REQUIRE SUBJECT`; needs `ssl_key` and a TLS `ssl_mode`. Default:
    /// empty (none).
    #[serde(default)]
    pub ssl_cert: PathBuf,
    /// PEM file of the private key of `ssl_cert` (unencrypted). Default: empty (none).
    #[serde(default)]
    pub ssl_key: PathBuf,
    /// Largest binlog event read, in bytes, and the largest decompressed statement (MariaDB
    /// `log_bin_compress`) or inner event of a compressed transaction (MySQL
    /// `binlog_transaction_compression`); a larger one is a definite error naming the
    /// position. Default: 1073741824 (1 GiB, the server's own `max_allowed_packet` ceiling).
    #[serde(default = "limits::default_max_event_bytes")]
    pub max_event_bytes: u64,
    /// Bytes the source → sink channel holds (about the decoded size of its messages), besides
    /// its 256 messages; a message larger than the whole budget is let through alone. Default:
    /// 67108864 (64 MiB).
    #[serde(default = "limits::default_channel_max_bytes")]
    pub channel_max_bytes: u64,
    /// How long a query connection (preflight, schema reads, snapshot chunks; not the binlog
    /// stream) may wait for one answer, in milliseconds: a query's first reply, then each row
    /// of its result. Longer is a transient error naming the query. 0 = no timeout. Default:
    /// 60000.
    #[serde(default = "limits::default_query_timeout_ms")]
    pub query_timeout_ms: u64,
}

/// `source.ssl_mode`: whether and how the connections to the source use TLS (the MySQL
/// client's `--ssl-mode`, in lower case).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SslMode {
    /// `"disabled"`: plaintext.
    Disabled,
    /// `"preferred"`: TLS when the server supports it, else plaintext; the certificate is
    /// not checked. The default (as for the MySQL client).
    #[default]
    Preferred,
    /// `"required"`: TLS or fail; the certificate is not checked.
    Required,
    /// `"verify_ca"`: TLS, the certificate must be signed by `source.ssl_ca` (any host name).
    VerifyCa,
    /// `"verify_identity"`: as `verify_ca`, and the certificate must name the host of
    /// `source.url` (DNS name or IP address).
    VerifyIdentity,
}

impl SslMode {
    /// Every mode, in order of strictness.
    pub const ALL: [SslMode; 5] = [
        SslMode::Disabled,
        SslMode::Preferred,
        SslMode::Required,
        SslMode::VerifyCa,
        SslMode::VerifyIdentity,
    ];

    /// The TOML spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disabled => "disabled",
            SslMode::Preferred => "preferred",
            SslMode::Required => "required",
            SslMode::VerifyCa => "verify_ca",
            SslMode::VerifyIdentity => "verify_identity",
        }
    }

    /// Whether the server certificate is checked against `source.ssl_ca`.
    pub fn verifies(self) -> bool {
        matches!(self, SslMode::VerifyCa | SslMode::VerifyIdentity)
    }
}

impl fmt::Display for SslMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// URL query parameters other clients read for TLS; sluice takes TLS settings from
/// `source.ssl_*` only, so one of these in `source.url` is refused rather than ignored.
fn is_tls_url_param(name: &str) -> bool {
    let n = name.to_ascii_lowercase().replace('-', "_");
    n.starts_with("ssl")
        || n.starts_with("tls")
        || [
            "require_ssl",
            "verify_ca",
            "verify_identity",
            "built_in_roots",
        ]
        .contains(&n.as_str())
}

impl SourceConfig {
    /// `heartbeat_ms` as a duration.
    pub fn heartbeat(&self) -> Duration {
        Duration::from_millis(self.heartbeat_ms)
    }

    /// `connect_timeout_ms` as a duration.
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms)
    }

    /// `reconnect_backoff_min_ms` as a duration.
    pub fn reconnect_backoff_min(&self) -> Duration {
        Duration::from_millis(self.reconnect_backoff_min_ms)
    }

    /// `reconnect_backoff_max_ms` as a duration.
    pub fn reconnect_backoff_max(&self) -> Duration {
        Duration::from_millis(self.reconnect_backoff_max_ms)
    }

    /// `query_timeout_ms` as a duration; `None` when 0 (no timeout).
    pub fn query_timeout(&self) -> Option<Duration> {
        (self.query_timeout_ms > 0).then(|| Duration::from_millis(self.query_timeout_ms))
    }

    /// `ssl_ca`, when set.
    pub fn ssl_ca(&self) -> Option<&Path> {
        non_empty(&self.ssl_ca)
    }

    /// `ssl_cert`, when set.
    pub fn ssl_cert(&self) -> Option<&Path> {
        non_empty(&self.ssl_cert)
    }

    /// `ssl_key`, when set.
    pub fn ssl_key(&self) -> Option<&Path> {
        non_empty(&self.ssl_key)
    }
}

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
    /// [`Config::offsets_topic`]).
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
    /// `"_sluice_schema_history.<name>"` (see [`Config::schema_history_topic`]).
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
    /// Further librdkafka properties passed through unchanged (e.g. `security.protocol`,
    /// `sasl.password`); values whose key contains `password`, `secret`,
    /// `sasl.oauthbearer.config` or `ssl.key.pem` are secrets. Properties sluice sets
    /// itself are refused (see [`RESERVED_PROPERTIES`]). Default: empty.
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
            .field("properties", &props::RedactedMap(properties))
            .finish()
    }
}

/// `[commit]`: when a transaction (events + binlog position) is committed: after
/// `max_ms` or `max_events`, whichever comes first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommitConfig {
    /// Upper bound on the time between the first event of a transaction and its commit,
    /// in milliseconds, at least 1. Default: 100.
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
}

impl Default for CommitConfig {
    fn default() -> Self {
        CommitConfig {
            max_ms: default_commit_max_ms(),
            max_events: default_commit_max_events(),
            idle_offset_ms: default_idle_offset_ms(),
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

/// `[[route]]`: where the changes of the tables matching `match` go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteConfig {
    /// `match`: regex on `db.table` (whole-name match), required. Capture groups can be
    /// used in `topic`.
    #[serde(rename = "match")]
    pub pattern: String,
    /// Topic name template, required: legal topic characters `[a-zA-Z0-9._-]` plus
    /// `$1`..`$9` / `${N}` (capture groups of `match`), `${db}` and `${table}`.
    pub topic: String,
    /// Value encoding: `"json"` or `"avro"` (needs `[schema_registry]`). Default: `"json"`.
    #[serde(default)]
    pub format: Format,
    /// Columns forming the message key. Default: empty, meaning the primary key.
    #[serde(default)]
    pub key_columns: Vec<String>,
    /// Whether each delete is followed by a tombstone (a null-value message with the same
    /// key, so compaction can drop the row). Default: true.
    #[serde(default = "default_true")]
    pub tombstones: bool,
    /// What a DDL changing the shape of a table on this route does: `"evolve"` (default),
    /// `"fail"` or `"dlq"`; see [`OnSchemaChange`].
    #[serde(default)]
    pub on_schema_change: OnSchemaChange,
    /// With `format = "avro"`: write ENUM columns as Avro `enum`s instead of strings (every
    /// member must then be a valid Avro symbol). Default: false.
    #[serde(default)]
    pub avro_enums: bool,
}

fn non_empty(p: &Path) -> Option<&Path> {
    (!p.as_os_str().is_empty()).then_some(p)
}

fn default_start() -> String {
    "initial".to_string()
}
fn default_heartbeat_ms() -> u64 {
    5000
}
fn default_connect_timeout_ms() -> u64 {
    10_000
}
fn default_reconnect_backoff_min_ms() -> u64 {
    200
}
fn default_reconnect_backoff_max_ms() -> u64 {
    30_000
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
fn default_commit_max_ms() -> u64 {
    100
}
fn default_commit_max_events() -> usize {
    10_000
}
fn default_idle_offset_ms() -> u64 {
    10_000
}
fn default_true() -> bool {
    true
}

/// Largest heartbeat period MySQL accepts (`MASTER_HEARTBEAT_PERIOD` ≤ 4294967 s), in ms.
const MAX_HEARTBEAT_MS: u64 = 4_294_967_000;
/// librdkafka's upper bound for `transaction.timeout.ms` and `queue.buffering.max.kbytes`.
const LIBRDKAFKA_INT_MAX: u64 = i32::MAX as u64;

/// Whether `name` is a valid pipeline name: 1–100 characters from `[A-Za-z0-9._-]`.
pub fn is_valid_pipeline_name(name: &str) -> bool {
    (1..=100).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Parses, applies `env` and validates: the same as [`Config::from_str_with_env`].
pub fn load_from_str(
    text: &str,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<Config, ConfigError> {
    Config::from_str_with_env(text, env)
}

impl Config {
    /// Reads the file at `path`, applies the process's `SLUICE_*` environment variables
    /// and validates. Errors about the file's content are wrapped in
    /// [`ConfigError::InFile`].
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                ConfigError::NotFound {
                    path: path.to_path_buf(),
                }
            } else {
                ConfigError::Read {
                    path: path.to_path_buf(),
                    source: e,
                }
            }
        })?;
        let env = env::process_env()?;
        Config::from_str_with_env(&text, env).map_err(|e| match e {
            e @ ConfigError::Env { .. } => e,
            other => ConfigError::InFile {
                path: path.to_path_buf(),
                inner: Box::new(other),
            },
        })
    }

    /// Parses TOML `text`, applies the `SLUICE_*` variables of `env` (other variables are
    /// ignored) and validates.
    pub fn from_str_with_env(
        text: &str,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Config, ConfigError> {
        let config = Config::parse_with_env(text, env)?;
        config.validate()?;
        Ok(config)
    }

    /// Like [`Config::from_str_with_env`] but without [`Config::validate`]: only syntax,
    /// unknown keys and types are checked. Fills in the default route.
    pub fn parse_with_env(
        text: &str,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Config, ConfigError> {
        let mut tree: toml::Table =
            text.parse()
                .map_err(|e: toml::de::Error| ConfigError::Toml {
                    message: redact_text(e.to_string().trim_end()),
                })?;
        let applied = env::apply(&mut tree, env)?;
        let mut config: Config = match tree.try_into() {
            Ok(c) => c,
            Err(err) => return Err(deserialize_error(text, &err, &applied)),
        };
        if config.routes.is_empty() {
            config.routes.push(Config::default_route(&config.name));
        }
        Ok(config)
    }

    /// The route used when the file has none: `match = "(.*)\\.(.*)"`,
    /// `topic = "<name>.$1.$2"`, JSON, primary key, tombstones.
    pub fn default_route(name: &str) -> RouteConfig {
        RouteConfig {
            pattern: r"(.*)\.(.*)".to_string(),
            topic: format!("{name}.$1.$2"),
            format: Format::Json,
            key_columns: Vec::new(),
            tombstones: true,
            on_schema_change: OnSchemaChange::Evolve,
            avro_enums: false,
        }
    }

    /// The routes in force: `routes`, or the default route when it is empty.
    pub fn effective_routes(&self) -> Vec<RouteConfig> {
        if self.routes.is_empty() {
            vec![Config::default_route(&self.name)]
        } else {
            self.routes.clone()
        }
    }

    /// Compiles the table filter and routes.
    pub fn router(&self) -> Result<Router, ConfigError> {
        Router::new(self)
    }

    /// Kafka `transactional.id` of this pipeline: `sluice-<name>`.
    pub fn transactional_id(&self) -> String {
        format!("sluice-{}", self.name)
    }

    /// The schema-change topic: `kafka.schema_changes_topic` or `<name>.schema-changes`.
    pub fn schema_changes_topic(&self) -> String {
        self.kafka
            .schema_changes_topic
            .clone()
            .unwrap_or_else(|| format!("{}.schema-changes", self.name))
    }

    /// Whether any route writes Avro (and so needs the schema registry).
    pub fn routes_use_avro(&self) -> bool {
        self.effective_routes()
            .iter()
            .any(|r| r.format == Format::Avro)
    }

    /// The dead-letter topic: `kafka.dlq_topic` or `<name>.dlq`.
    pub fn dlq_topic(&self) -> String {
        self.kafka
            .dlq_topic
            .clone()
            .unwrap_or_else(|| format!("{}.dlq", self.name))
    }

    /// The offsets topic: `kafka.offsets_topic`, or `_sluice_offsets.<name>`, the pipeline's
    /// own (after fencing nobody else writes there, so no other producer's open transaction
    /// can hold back its reading).
    pub fn offsets_topic(&self) -> String {
        self.kafka
            .offsets_topic
            .clone()
            .unwrap_or_else(|| topics::default_offsets_topic(&self.name))
    }

    /// The schema-history topic: `kafka.schema_history_topic`, or
    /// `_sluice_schema_history.<name>`.
    pub fn schema_history_topic(&self) -> String {
        self.kafka
            .schema_history_topic
            .clone()
            .unwrap_or_else(|| topics::default_schema_history_topic(&self.name))
    }

    /// Key of this pipeline's records in `kafka.offsets_topic`: the name.
    pub fn offset_key(&self) -> &str {
        &self.name
    }

    /// The effective configuration (default route filled in) as JSON, with every secret
    /// (URL password, secret Kafka properties) written as `***`. For logs and APIs.
    pub fn redacted_json(&self) -> serde_json::Value {
        let mut effective = self.clone();
        effective.routes = self.effective_routes();
        effective.kafka.offsets_topic = Some(self.offsets_topic());
        effective.kafka.schema_history_topic = Some(self.schema_history_topic());
        serde_json::to_value(&effective).unwrap_or_else(
            |e| serde_json::json!({ "error": format!("cannot serialize configuration: {e}") }),
        )
    }

    /// Checks every setting and reports all problems at once, each naming the setting,
    /// what was found, what is expected and how to fix it.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut problems = Vec::new();
        self.validate_top(&mut problems);
        self.validate_source(&mut problems);
        self.validate_kafka(&mut problems);
        self.validate_commit(&mut problems);
        self.validate_snapshot(&mut problems);
        self.validate_routes(&mut problems);
        schema_registry::validate(self, &mut problems);
        api::validate(self, &mut problems);
        limits::validate(self, &mut problems);
        shutdown::validate(self, &mut problems);
        // Compiles every regex and topic template (pushes their problems). When the name
        // is invalid, the default route's template (derived from it) is too: not reported
        // twice.
        let mut route_problems = Vec::new();
        let _ = Router::build(self, &mut route_problems);
        let default_route_only = self.effective_routes() == [Config::default_route(&self.name)];
        if !is_valid_pipeline_name(&self.name) && default_route_only {
            route_problems.retain(|p| !p.path.starts_with("route["));
        }
        problems.extend(route_problems);
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigError::Invalid(problems))
        }
    }

    fn validate_top(&self, problems: &mut Vec<Problem>) {
        if !is_valid_pipeline_name(&self.name) {
            problems.push(Problem::new(
                "name",
                format!("{:?} ({} bytes)", self.name, self.name.len()),
                "1 to 100 characters from [A-Za-z0-9._-]",
                "rename the pipeline, e.g. name = \"shop\" (note: the name keys the stored \
                 position, so renaming starts afresh)",
            ));
        }
    }

    fn validate_source(&self, problems: &mut Vec<Problem>) {
        let s = &self.source;
        if s.server_id == 0 {
            problems.push(Problem::new(
                "source.server_id",
                "0",
                "a non-zero replica server id, unique among the server's replicas",
                "set source.server_id to an unused id, e.g. 5401",
            ));
        }
        if s.start.trim().is_empty() {
            problems.push(Problem::new(
                "source.start",
                "an empty string",
                "\"initial\", \"snapshot_only\", \"earliest\", \"latest\", \"gtid:<gtid set>\" or \
                 \"file:<binlog file>:<position>\"",
                "set source.start, e.g. start = \"initial\"",
            ));
        }
        if !(1..=MAX_HEARTBEAT_MS).contains(&s.heartbeat_ms) {
            problems.push(Problem::new(
                "source.heartbeat_ms",
                s.heartbeat_ms.to_string(),
                format!("milliseconds between 1 and {MAX_HEARTBEAT_MS}"),
                "set source.heartbeat_ms, e.g. 5000 (the default)",
            ));
        }
        if s.connect_timeout_ms == 0 {
            problems.push(Problem::new(
                "source.connect_timeout_ms",
                "0",
                "a timeout of at least 1 millisecond",
                "set source.connect_timeout_ms, e.g. 10000 (the default)",
            ));
        }
        if s.reconnect_backoff_max_ms == 0 {
            problems.push(Problem::new(
                "source.reconnect_backoff_max_ms",
                "0",
                "at least 1 millisecond",
                "set source.reconnect_backoff_max_ms, e.g. 30000 (the default)",
            ));
        }
        self.validate_tls(problems);
        if s.reconnect_backoff_min_ms > s.reconnect_backoff_max_ms {
            problems.push(Problem::new(
                "source.reconnect_backoff_min_ms",
                format!(
                    "{} ms, more than source.reconnect_backoff_max_ms ({} ms)",
                    s.reconnect_backoff_min_ms, s.reconnect_backoff_max_ms
                ),
                "a first delay no larger than the largest delay",
                "lower source.reconnect_backoff_min_ms or raise source.reconnect_backoff_max_ms",
            ));
        }
    }

    fn validate_tls(&self, problems: &mut Vec<Problem>) {
        let s = &self.source;
        let modes = SslMode::ALL
            .iter()
            .map(|m| format!("\"{m}\""))
            .collect::<Vec<_>>()
            .join(", ");
        if s.ssl_mode.verifies() && s.ssl_ca().is_none() {
            problems.push(Problem::new(
                "source.ssl_ca",
                format!("no ssl_ca with source.ssl_mode = \"{}\"", s.ssl_mode),
                "the path of a PEM file with the CA certificate(s) that signed the server's \
                 certificate",
                format!(
                    "set source.ssl_ca (or SLUICE_SOURCE_SSL_CA), or choose another \
                     source.ssl_mode (one of {modes}; \"required\" encrypts without checking \
                     the certificate)"
                ),
            ));
        }
        if !s.ssl_mode.verifies() && s.ssl_ca().is_some() {
            problems.push(Problem::new(
                "source.ssl_ca",
                format!("ssl_ca with source.ssl_mode = \"{}\"", s.ssl_mode),
                "ssl_ca only with ssl_mode \"verify_ca\" or \"verify_identity\" (the other \
                 modes do not check the certificate)",
                "set source.ssl_mode = \"verify_ca\" or \"verify_identity\" to check the \
                 server's certificate against it, or remove source.ssl_ca",
            ));
        }
        match (s.ssl_cert(), s.ssl_key()) {
            (Some(_), None) | (None, Some(_)) => problems.push(Problem::new(
                if s.ssl_cert().is_some() {
                    "source.ssl_key"
                } else {
                    "source.ssl_cert"
                },
                "only one of ssl_cert and ssl_key",
                "both (a client certificate and its private key) or neither",
                "set both source.ssl_cert and source.ssl_key, or remove the one given",
            )),
            (Some(_), Some(_)) if s.ssl_mode == SslMode::Disabled => problems.push(Problem::new(
                "source.ssl_cert",
                "a client certificate with source.ssl_mode = \"disabled\"",
                "a client certificate only with TLS",
                "set source.ssl_mode to \"required\", \"verify_ca\" or \
                     \"verify_identity\", or remove source.ssl_cert and source.ssl_key",
            )),
            _ => {}
        }
        for (path, value) in [
            ("source.ssl_ca", s.ssl_ca()),
            ("source.ssl_cert", s.ssl_cert()),
            ("source.ssl_key", s.ssl_key()),
        ] {
            if let Some(file) = value {
                if !file.is_file() {
                    problems.push(Problem::new(
                        path,
                        format!("`{}`, which is not a readable file", file.display()),
                        "the path of an existing PEM file",
                        format!("correct {path} (relative paths start at the working directory)"),
                    ));
                }
            }
        }
        for (name, _) in s.url.params() {
            if is_tls_url_param(name) {
                problems.push(Problem::new(
                    "source.url",
                    format!("the TLS parameter `{name}` in the URL"),
                    "TLS settings in source.ssl_mode, source.ssl_ca, source.ssl_cert and \
                     source.ssl_key",
                    format!(
                        "remove `{name}` from source.url and set source.ssl_mode (one of {modes}) \
                         and the other source.ssl_* settings instead"
                    ),
                ));
            }
        }
    }

    fn validate_kafka(&self, problems: &mut Vec<Problem>) {
        let k = &self.kafka;
        if k.bootstrap_servers.trim().is_empty()
            || k.bootstrap_servers.split(',').any(|s| s.trim().is_empty())
        {
            problems.push(Problem::new(
                "kafka.bootstrap_servers",
                format!("{:?}", k.bootstrap_servers),
                "a comma-separated list of host:port without empty entries",
                "set kafka.bootstrap_servers, e.g. \"127.0.0.1:9092\"",
            ));
        }
        if let Some(t) = k
            .offsets_topic
            .as_ref()
            .filter(|t| !route::is_valid_topic_name(t))
        {
            problems.push(Problem::new(
                "kafka.offsets_topic",
                format!("{t:?}"),
                "a legal Kafka topic name: 1 to 249 characters from [a-zA-Z0-9._-], not `.` or `..`",
                format!(
                    "set kafka.offsets_topic to a legal topic name or remove it for the \
                     default \"{}\"",
                    topics::default_offsets_topic(&self.name)
                ),
            ));
        }
        topics::validate_derived(self, problems);
        let offsets_topic = self.offsets_topic();
        // The other defaults derive from `name`, which is checked on its own.
        let own_topics = [
            ("kafka.schema_changes_topic", k.schema_changes_topic.clone()),
            ("kafka.schema_history_topic", k.schema_history_topic.clone()),
            ("kafka.dlq_topic", k.dlq_topic.clone()),
        ];
        let own_topics = own_topics
            .into_iter()
            .filter_map(|(path, topic)| topic.map(|t| (path, t)));
        for (path, topic) in own_topics {
            if !route::is_valid_topic_name(&topic) {
                problems.push(Problem::new(
                    path,
                    format!("{topic:?}"),
                    "a legal Kafka topic name: 1 to 249 characters from [a-zA-Z0-9._-], not `.` or `..`",
                    format!("set {path} to a legal topic name or remove it for the default"),
                ));
            } else if topic == offsets_topic {
                problems.push(Problem::new(
                    path,
                    format!("{topic:?}, which is also kafka.offsets_topic"),
                    "a topic of its own",
                    format!("give {path} another name"),
                ));
            }
        }
        if k.partitions < 1 {
            problems.push(Problem::new(
                "kafka.partitions",
                k.partitions.to_string(),
                "at least 1",
                "set kafka.partitions to 1 (the default) or more",
            ));
        }
        if k.replication_factor != -1 && !(1..=i32::from(i16::MAX)).contains(&k.replication_factor)
        {
            problems.push(Problem::new(
                "kafka.replication_factor",
                k.replication_factor.to_string(),
                "-1 (the broker's default) or 1 to 32767",
                "set kafka.replication_factor to -1 or a positive number of replicas",
            ));
        }
        for key in k.topic_config.keys() {
            if key.trim().is_empty() {
                problems.push(Problem::new(
                    "kafka.topic_config",
                    "an empty key",
                    "topic config names such as \"cleanup.policy\"",
                    "remove the empty key",
                ));
            }
        }
        if !(1000..=LIBRDKAFKA_INT_MAX).contains(&k.transaction_timeout_ms) {
            problems.push(Problem::new(
                "kafka.transaction_timeout_ms",
                k.transaction_timeout_ms.to_string(),
                format!("milliseconds between 1000 and {LIBRDKAFKA_INT_MAX}"),
                "set kafka.transaction_timeout_ms, e.g. 60000 (the default); it must not exceed \
                 the broker's transaction.max.timeout.ms",
            ));
        } else if self.delivery.is_transactional() && k.transaction_timeout_ms <= self.commit.max_ms
        {
            problems.push(Problem::new(
                "kafka.transaction_timeout_ms",
                format!(
                    "{} ms, not more than commit.max_ms ({} ms)",
                    k.transaction_timeout_ms, self.commit.max_ms
                ),
                "a transaction timeout well above the commit interval",
                "raise kafka.transaction_timeout_ms or lower commit.max_ms",
            ));
        }
        if !(1..=LIBRDKAFKA_INT_MAX).contains(&k.max_buffer_kbytes) {
            problems.push(Problem::new(
                "kafka.max_buffer_kbytes",
                k.max_buffer_kbytes.to_string(),
                format!("KiB between 1 and {LIBRDKAFKA_INT_MAX}"),
                "set kafka.max_buffer_kbytes, e.g. 32768 (the default)",
            ));
        }
        for (key, value) in &k.properties {
            let path = format!("kafka.properties.{key:?}");
            if key.trim().is_empty() {
                problems.push(Problem::new(
                    "kafka.properties",
                    "an empty property name",
                    "librdkafka property names such as \"security.protocol\"",
                    "remove the empty key",
                ));
            } else if let Some(reserved) = reserved_property(key) {
                problems.push(Problem::new(
                    path,
                    format!("`{key}` = {value:?}"),
                    format!("no `{key}` in kafka.properties: {}", reserved.reason),
                    reserved.fix,
                ));
            }
        }
    }

    fn validate_snapshot(&self, problems: &mut Vec<Problem>) {
        let s = &self.snapshot;
        if s.chunk_size == 0 {
            problems.push(Problem::new(
                "snapshot.chunk_size",
                "0",
                "at least 1",
                format!(
                    "set snapshot.chunk_size to 1 or more, e.g. {}",
                    default_chunk_size()
                ),
            ));
        }
        if !(1..=64).contains(&s.parallelism) {
            problems.push(Problem::new(
                "snapshot.parallelism",
                s.parallelism.to_string(),
                "1 to 64",
                "set snapshot.parallelism to the number of chunk readers, e.g. the source's \
                 spare cores",
            ));
        }
        if s.max_window_changes == 0 {
            problems.push(Problem::new(
                "snapshot.max_window_changes",
                "0",
                "at least 1",
                format!(
                    "set snapshot.max_window_changes to 1 or more, e.g. {}",
                    default_max_window_changes()
                ),
            ));
        }
        if let Some(table) = &s.signal_table {
            if let Err(e) = crate::snapshot::adhoc::parse_table_name(table) {
                // The message reads `table "x": <why>; expected ...`: the expectation is
                // spelled out below.
                let found = e.split("; expected").next().unwrap_or(&e).to_string();
                problems.push(Problem::new(
                    "snapshot.signal_table",
                    found,
                    "the signal table as `db.table` (in backquotes where a name has a dot: \
                     `my.db`.`signals`)",
                    "set snapshot.signal_table to the table's database and name, e.g. \
                     signal_table = \"ops.sluice_signal\", or remove it",
                ));
            }
        }
    }

    fn validate_commit(&self, problems: &mut Vec<Problem>) {
        let c = &self.commit;
        let checks: [(&str, u64, u64); 3] = [
            ("commit.max_ms", c.max_ms, default_commit_max_ms()),
            (
                "commit.max_events",
                u64::try_from(c.max_events).unwrap_or(u64::MAX),
                u64::try_from(default_commit_max_events()).unwrap_or(u64::MAX),
            ),
            (
                "commit.idle_offset_ms",
                c.idle_offset_ms,
                default_idle_offset_ms(),
            ),
        ];
        for (path, value, default) in checks {
            if value == 0 {
                problems.push(Problem::new(
                    path,
                    "0",
                    "at least 1",
                    format!("set {path} to 1 or more, e.g. {default} (the default)"),
                ));
            }
        }
    }

    fn validate_routes(&self, problems: &mut Vec<Problem>) {
        for (i, route) in self.routes.iter().enumerate() {
            let mut seen = std::collections::BTreeSet::new();
            for (j, column) in route.key_columns.iter().enumerate() {
                let path = format!("route[{i}].key_columns[{j}]");
                if column.trim().is_empty() {
                    problems.push(Problem::new(
                        path,
                        "an empty column name",
                        "column names of the routed tables",
                        "remove it (an empty key_columns list means the primary key)",
                    ));
                } else if !seen.insert(column.as_str()) {
                    problems.push(Problem::new(
                        path,
                        format!("column `{column}` a second time"),
                        "each key column once",
                        "remove the duplicate",
                    ));
                }
            }
        }
    }
}

impl FromStr for Config {
    type Err = ConfigError;

    /// Parses and validates `text` without environment overrides.
    fn from_str(text: &str) -> Result<Config, ConfigError> {
        Config::from_str_with_env(text, std::iter::empty())
    }
}

/// Turns a deserialization error of the merged tree into a [`ConfigError::Toml`]. The
/// merged tree has no positions, so when the file alone fails the same way its error
/// (with line, column and source line) is used instead, except for missing keys. Always
/// redacted.
fn deserialize_error(text: &str, err: &toml::de::Error, applied: &[String]) -> ConfigError {
    let missing = err.message().starts_with("missing field");
    // A missing key has no useful position (the parser points at the enclosing table's
    // first line); the tree error names the section instead.
    let mut message = match toml::from_str::<Config>(text) {
        Err(file_err) if !missing && file_err.message() == err.message() => file_err.to_string(),
        _ => err.to_string(),
    };
    let trimmed = message.trim_end().len();
    message.truncate(trimmed);
    if missing {
        message.push_str(
            "\nfix: add the setting to the file (see examples/full.toml) or set it with its \
             SLUICE_<SECTION>_<FIELD> environment variable",
        );
    }
    if !applied.is_empty() {
        message.push_str(&format!(
            "\n(environment overrides applied: {})",
            applied.join(", ")
        ));
    }
    ConfigError::Toml {
        message: format!("invalid configuration: {}", redact_text(&message)),
    }
}
