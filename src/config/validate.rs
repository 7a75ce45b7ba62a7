//! [`Config::validate`]: every check of settings that parsed, reporting all problems at once,
//! each a [`Problem`] naming the setting, what was found, what is expected and how to fix it.
//! The top level, `[source]` (TLS included), `[kafka]`, `[commit]`, `[snapshot]` and
//! `[[route]]` are checked here; the sections with files of their own (`schema_registry`,
//! `api`, `limits`, `shutdown`, `topics`) are checked there and called from here, and the
//! route patterns and topic templates are checked by compiling them.
//!
//! Invariant: no problem quotes a secret value, and a mistake is reported once (the default
//! route's problems are dropped when the name it derives from is itself wrong).

use super::commit::{default_commit_max_events, default_commit_max_ms, default_idle_offset_ms};
use super::error::{push_if_zero, push_unless_pem_file};
use super::snapshot::{default_chunk_size, default_max_window_changes};
use super::{api, heartbeat, limits, route, schema_registry, shutdown, topics};
use super::{
    is_valid_pipeline_name, reserved_property, Config, ConfigError, Format, Problem, Router,
    SslMode,
};

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

/// Largest heartbeat period MySQL accepts (`MASTER_HEARTBEAT_PERIOD` ≤ 4294967 s), in ms.
const MAX_HEARTBEAT_MS: u64 = 4_294_967_000;
/// librdkafka's upper bound for `transaction.timeout.ms` and `queue.buffering.max.kbytes`.
const LIBRDKAFKA_INT_MAX: u64 = i32::MAX as u64;

impl Config {
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
        let avro_user = self
            .effective_routes()
            .iter()
            .position(|route| route.format == Format::Avro)
            .map(|i| format!("route[{i}]"))
            .or_else(|| self.avro_topic_setting().map(str::to_string));
        schema_registry::validate(&self.schema_registry, avro_user.as_deref(), &mut problems);
        api::validate(&self.api, &mut problems);
        heartbeat::validate(&self.heartbeat, &mut problems);
        json_schemas_needs_json(
            "transaction_metadata",
            self.transaction_metadata.json_schemas,
            self.transaction_metadata.format,
            &mut problems,
        );
        json_schemas_needs_json(
            "heartbeat",
            self.heartbeat.json_schemas,
            self.heartbeat.format,
            &mut problems,
        );
        let limits = limits::Limits {
            max_event_bytes: self.source.max_event_bytes,
            channel_max_bytes: self.source.channel_max_bytes,
            query_timeout_ms: self.source.query_timeout_ms,
            chunk_max_bytes: self.snapshot.chunk_max_bytes,
        };
        limits::validate(&limits, &mut problems);
        shutdown::validate(self.shutdown_timeout_ms, &mut problems);
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
        push_if_zero(
            problems,
            s.server_id,
            "source.server_id",
            "a non-zero replica server id, unique among the server's replicas",
            "set source.server_id to an unused id, e.g. 5401",
        );
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
        push_if_zero(
            problems,
            s.connect_timeout_ms,
            "source.connect_timeout_ms",
            "a timeout of at least 1 millisecond",
            "set source.connect_timeout_ms, e.g. 10000 (the default)",
        );
        push_if_zero(
            problems,
            s.reconnect_backoff_max_ms,
            "source.reconnect_backoff_max_ms",
            "at least 1 millisecond",
            "set source.reconnect_backoff_max_ms, e.g. 30000 (the default)",
        );
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
                push_unless_pem_file(problems, path, file);
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
            (
                "transaction_metadata.topic",
                self.transaction_metadata.topic.clone(),
            ),
            ("heartbeat.topic", self.heartbeat.topic.clone()),
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
        if let Some(security) = &k.security {
            security.validate(&k.properties, problems);
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
        push_if_zero(
            problems,
            s.chunk_size,
            "snapshot.chunk_size",
            "at least 1",
            format!(
                "set snapshot.chunk_size to 1 or more, e.g. {}",
                default_chunk_size()
            ),
        );
        if !(1..=64).contains(&s.parallelism) {
            problems.push(Problem::new(
                "snapshot.parallelism",
                s.parallelism.to_string(),
                "1 to 64",
                "set snapshot.parallelism to the number of chunk readers, e.g. the source's \
                 spare cores",
            ));
        }
        push_if_zero(
            problems,
            s.max_window_changes,
            "snapshot.max_window_changes",
            "at least 1",
            format!(
                "set snapshot.max_window_changes to 1 or more, e.g. {}",
                default_max_window_changes()
            ),
        );
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
            push_if_zero(
                problems,
                value,
                path,
                "at least 1",
                format!("set {path} to 1 or more, e.g. {default} (the default)"),
            );
        }
    }

    fn validate_routes(&self, problems: &mut Vec<Problem>) {
        for (i, route) in self.routes.iter().enumerate() {
            json_schemas_needs_json(
                &format!("route[{i}]"),
                route.json_schemas,
                route.format,
                problems,
            );
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

/// `<section>.json_schemas = true` wraps JSON records in Kafka Connect schemas: it needs
/// `<section>.format = "json"` (Avro records carry their schemas in the registry).
fn json_schemas_needs_json(
    section: &str,
    json_schemas: bool,
    format: Format,
    problems: &mut Vec<Problem>,
) {
    if json_schemas && format != Format::Json {
        problems.push(Problem::new(
            format!("{section}.json_schemas"),
            format!("json_schemas = true with format = \"{format}\""),
            "json_schemas = true only with format = \"json\" (it writes JSON records with \
             their Kafka Connect schemas; Avro records have theirs in the schema registry)",
            format!("set {section}.format = \"json\", or remove {section}.json_schemas"),
        ));
    }
}
