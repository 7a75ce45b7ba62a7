//! Schema-change records: [`SchemaChangeRecord`] (one table's change as written to Kafka), its
//! [`ChangeKind`] and the binlog position it was read at ([`ChangeSource`]).
//!
//! Invariant: the serde form is exactly what `schemas/schema_change.avsc` describes (the tests
//! check both the JSON and the Avro binary form).

use serde::{Deserialize, Serialize};

use super::def::TableDef;

/// What a schema-change record reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum ChangeKind {
    /// A table was created (`before` is null).
    Create,
    /// A table's definition changed.
    Alter,
    /// A table was dropped (`after` is null).
    Drop,
    /// A table was renamed (`before` has the old name, `after` the new one).
    Rename,
    /// A table was emptied (`before` and `after` are equal).
    Truncate,
}

/// Where in the binlog a DDL statement was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeSource {
    /// Binlog file of the statement.
    pub file: String,
    /// Position of the statement's event in that file.
    pub pos: u64,
    /// The statement's GTID, if the server logs GTIDs.
    pub gtid: Option<String>,
    /// Server id of the server that wrote the statement.
    pub server_id: u32,
    /// Event time (milliseconds since the epoch).
    pub ts_ms: u64,
}

/// A schema change of one table, as written to Kafka (described by
/// `schemas/schema_change.avsc`). For a `RENAME`, `db`/`table` name the new table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaChangeRecord {
    /// Binlog position of the DDL.
    pub source: ChangeSource,
    /// Database of the changed table.
    pub db: String,
    /// The changed table.
    pub table: String,
    /// The DDL statement as logged.
    pub ddl: String,
    /// What happened.
    pub kind: ChangeKind,
    /// Definition before the change (null for CREATE).
    pub before: Option<TableDef>,
    /// Definition after the change (null for DROP).
    pub after: Option<TableDef>,
}
