//! Why a table schema cannot be built: a [`SchemaError`] when a `TABLE_MAP` is unusable on its
//! own, a [`SchemaMismatch`] (or its [`ColumnTypeMismatch`]) when a table map and the tracked
//! definition of its table disagree.
//!
//! Tests and users match on these messages: each names the table as `` `db`.`table` ``, and each
//! one that finds the tracked schema out of step ends with the same advice (`OUT_OF_STEP`).

use super::tracked::TableName;

/// Why a `TABLE_MAP` could not be turned into a [`TableSchema`](super::TableSchema).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// The table map has no column names: the server does not log full metadata.
    #[error(
        "TABLE_MAP for `{db}`.`{table}` has no column names: set binlog_row_metadata=FULL \
         on the source server (MySQL >= 8.0.1, MariaDB >= 10.5) so that table maps carry \
         column names, charsets, ENUM/SET values and the primary key"
    )]
    NoFullMetadata {
        /// Database name.
        db: String,
        /// Table name.
        table: String,
    },
    /// The event bytes are inconsistent or truncated.
    #[error("TABLE_MAP for `{db}`.`{table}` is malformed: {detail}")]
    Malformed {
        /// Database name (may be empty if the event was too short to contain it).
        db: String,
        /// Table name (may be empty if the event was too short to contain it).
        table: String,
        /// What was wrong.
        detail: String,
    },
    /// A column has a binlog type this crate cannot decode.
    #[error(
        "TABLE_MAP for `{db}`.`{table}`: column #{index} `{column}` has unsupported binlog \
         type {type_code} ({detail})"
    )]
    UnsupportedType {
        /// Database name.
        db: String,
        /// Table name.
        table: String,
        /// Column index (0-based).
        index: usize,
        /// Column name (`@<index+1>` if names were not logged).
        column: String,
        /// Binlog column type byte.
        type_code: u8,
        /// Explanation.
        detail: &'static str,
    },
}

/// What to do when a table map and the tracked schema disagree.
const OUT_OF_STEP: &str = "the tracked schema is out of step with the binlog (a DDL statement \
     sluice did not see or could not apply, such as one run with sql_log_bin=0, or a schema \
     history from another server); rebuild the schema history from the server's current \
     definitions, or set binlog_row_metadata=FULL (MySQL >= 8.0.1, MariaDB >= 10.5) so that \
     table maps carry column names";

/// Why a `TABLE_MAP` and a tracked [`TableDef`](super::tracked::TableDef) do not give a schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaMismatch {
    /// The table map itself is unusable.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// The definition is of another table.
    #[error("TABLE_MAP for `{db}`.`{table}` was checked against the tracked schema of {tracked}")]
    Table {
        /// Database name of the table map.
        db: String,
        /// Table name of the table map.
        table: String,
        /// The definition's table.
        tracked: TableName,
    },
    /// Different column counts.
    #[error(
        "TABLE_MAP for `{db}`.`{table}` has {logged} columns but the tracked schema has \
         {tracked}: {}",
        OUT_OF_STEP
    )]
    ColumnCount {
        /// Database name.
        db: String,
        /// Table name.
        table: String,
        /// Columns in the table map.
        logged: usize,
        /// Columns in the tracked definition.
        tracked: usize,
    },
    /// A column name differs (the table map logs names).
    #[error(
        "TABLE_MAP for `{db}`.`{table}`: column #{index} is `{logged}` in the binlog but \
         `{tracked}` in the tracked schema: {}",
        OUT_OF_STEP
    )]
    ColumnName {
        /// Database name.
        db: String,
        /// Table name.
        table: String,
        /// Column index (0-based).
        index: usize,
        /// Name in the table map.
        logged: String,
        /// Name in the tracked definition.
        tracked: String,
    },
    /// A column's logged type cannot be its tracked type.
    #[error("{0}")]
    ColumnType(Box<ColumnTypeMismatch>),
    /// A tracked primary key column is not a column.
    #[error(
        "the tracked schema of `{db}`.`{table}` has primary key column `{column}`, which is not \
         one of its columns: {}",
        OUT_OF_STEP
    )]
    PrimaryKey {
        /// Database name.
        db: String,
        /// Table name.
        table: String,
        /// The key column.
        column: String,
    },
}

/// A column whose logged type cannot be its tracked type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "TABLE_MAP for `{db}`.`{table}`: column #{index} `{column}` is tracked as `{tracked}` but \
     logged as {logged}: {}",
    OUT_OF_STEP
)]
pub struct ColumnTypeMismatch {
    /// Database name.
    pub db: String,
    /// Table name.
    pub table: String,
    /// Column index (0-based).
    pub index: usize,
    /// Column name.
    pub column: String,
    /// Tracked SQL type.
    pub tracked: String,
    /// Logged type in words.
    pub logged: String,
}
