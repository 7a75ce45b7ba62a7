//! `[transaction_metadata]`: Debezium's transaction metadata topic
//! (`provide.transaction.metadata`): per source transaction a `BEGIN` and an `END` record
//! on `<name>.transaction`, written in the same Kafka transaction as the rows they describe
//! ([`TransactionMetadataConfig`]).
//!
//! Invariant: `Default` and the defaults serde uses for a missing key are the same, so a
//! section left out equals an empty one (off).

use serde::{Deserialize, Serialize};

use super::Format;

/// `[transaction_metadata]`: the transaction metadata topic.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransactionMetadataConfig {
    /// Write a `BEGIN` and an `END` record per source transaction with rows (Debezium's
    /// `provide.transaction.metadata`), in the same Kafka transaction as those rows.
    /// Default: false.
    #[serde(default)]
    pub enabled: bool,
    /// The topic of the records. Default: `"<name>.transaction"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    /// `"json"` (Debezium's JsonConverter with `schemas.enable=false`) or `"avro"` (Confluent
    /// wire format; needs `[schema_registry]`). Default: `"json"`.
    #[serde(default)]
    pub format: Format,
    /// With `format = "json"`: write each key and value as `{"schema": <Kafka Connect
    /// schema>, "payload": <the record>}` (Debezium's `TransactionMetadataKey` /
    /// `TransactionMetadataValue` schemas, as `JsonConverter` with `schemas.enable=true`
    /// writes them), like a route's `json_schemas`. Default: false.
    #[serde(default)]
    pub json_schemas: bool,
}

impl TransactionMetadataConfig {
    /// The topic: `topic`, or `<name>.transaction`.
    pub fn topic_for(&self, name: &str) -> String {
        self.topic
            .clone()
            .unwrap_or_else(|| format!("{name}.transaction"))
    }
}
