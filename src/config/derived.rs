//! What the settings imply: the routes in force (the default route when the file has none),
//! the compiled [`Router`], the Kafka `transactional.id`, the names of the pipeline's own
//! topics (the setting, or the default derived from `name`) and the redacted JSON view of the
//! whole configuration.
//!
//! Invariant: each derived value is computed here only, so every caller sees the same
//! default; the JSON view writes every secret as `***`.

use super::topics;
use super::{Config, ConfigError, Format, OnSchemaChange, RouteConfig, Router};

impl Config {
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
            json_schemas: false,
            key_change_headers: true,
            bigint_unsigned: Default::default(),
            skipped_operations: Vec::new(),
            column_exclude: Vec::new(),
            column_mask: Vec::new(),
            column_hash: Vec::new(),
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

    /// The transaction metadata topic: `transaction_metadata.topic` or `<name>.transaction`.
    pub fn transaction_topic(&self) -> String {
        self.transaction_metadata.topic_for(&self.name)
    }

    /// The heartbeat topic: `heartbeat.topic` or `__debezium-heartbeat.<name>`.
    pub fn heartbeat_topic(&self) -> String {
        self.heartbeat.topic_for(&self.name)
    }

    /// The first setting besides the routes that writes Avro (and so needs the schema
    /// registry): `transaction_metadata` or `heartbeat`, when enabled.
    pub fn avro_topic_setting(&self) -> Option<&'static str> {
        let tm = &self.transaction_metadata;
        let hb = &self.heartbeat;
        if tm.enabled && tm.format == Format::Avro {
            Some("transaction_metadata")
        } else if hb.enabled() && hb.format == Format::Avro {
            Some("heartbeat")
        } else {
            None
        }
    }

    /// Whether anything writes Avro and so needs the schema registry: a route, the
    /// transaction metadata topic or the heartbeat topic.
    pub fn needs_registry(&self) -> bool {
        self.routes_use_avro() || self.avro_topic_setting().is_some()
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
}
