//! `[[route]]` as written in the file: one route's settings ([`RouteConfig`]), its value
//! encoding ([`Format`]) and what a change of a table's shape does on it ([`OnSchemaChange`]).
//! `route` compiles the routes into a [`Router`](super::Router).
//!
//! Invariant: the TOML spellings (`as_str`) are the ones serde reads and writes; a setting
//! left out takes the default documented on its field.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::route_rules::{BigintUnsigned, ColumnHashConfig, ColumnMaskConfig};

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
    /// With `format = "json"`: write every key and value as
    /// `{"schema": <Kafka Connect schema>, "payload": <the record>}`, as Kafka Connect's
    /// `JsonConverter` with `schemas.enable=true` writes Debezium's records (tombstones and the
    /// keys of tables without key stay null). Default: false.
    #[serde(default)]
    pub json_schemas: bool,
    /// Whether the records of an update that changes the key carry Debezium's headers: the
    /// delete and its tombstone `__debezium.newkey`, the create `__debezium.oldkey` (the key
    /// as Kafka Connect's `SimpleHeaderConverter` writes it, e.g. `{"id":5}`). Default: true.
    #[serde(default = "default_true")]
    pub key_change_headers: bool,
    /// How `BIGINT UNSIGNED` columns are written: `"exact"` (default; the exact number) or
    /// `"long"` (a signed long that wraps above 2^63−1, Debezium's default).
    #[serde(default)]
    pub bigint_unsigned: BigintUnsigned,
    /// Operations whose changes produce no records (their offsets still advance): any of
    /// `"c"`, `"u"`, `"d"`, `"t"`, or `["none"]`, as Debezium's `skipped.operations`.
    /// Default: empty (nothing skipped; sluice writes no truncate events).
    #[serde(default)]
    pub skipped_operations: Vec<String>,
    /// Regexes on `db.table.column` (whole-name match): matching columns are left out of
    /// the `before`/`after` images and their schemas (Debezium's `column.exclude.list`). Key
    /// columns cannot be excluded. Default: empty.
    #[serde(default)]
    pub column_exclude: Vec<String>,
    /// String columns written as `chars` asterisks (Debezium's
    /// `column.mask.with.N.chars`), e.g. `[{ columns = ['shop\.users\.email'], chars = 8 }]`.
    /// Default: empty.
    #[serde(default)]
    pub column_mask: Vec<ColumnMaskConfig>,
    /// String columns written as the hex digest of salt + value (Debezium's
    /// `column.mask.hash.v2.<algorithm>.with.salt.<salt>`), e.g.
    /// `[{ columns = ['shop\.users\.phone'], algorithm = "SHA-256", salt = "..." }]`
    /// (or `salt_file = "path"`; the salt is a secret). Default: empty.
    #[serde(default)]
    pub column_hash: Vec<ColumnHashConfig>,
}

fn default_true() -> bool {
    true
}
