//! Table schemas reconstructed from binlog `TABLE_MAP` events.
//!
//! A [`TableSchema`] is built once per `TABLE_MAP` from the event's column types,
//! per-column metadata and the *optional metadata* block that MySQL ≥ 8.0.1 and
//! MariaDB ≥ 10.5 log with `binlog_row_metadata=FULL` (column names, signedness,
//! charsets, ENUM/SET member strings, primary key, vector dimensions).
//!
//! Servers that log less (MINIMAL metadata: no names, ENUM/SET strings or primary key; or no
//! optional metadata at all) are read with a tracked definition of the table ([`tracked`]): the
//! first one from `information_schema` ([`information_schema`]) or a schema history, kept
//! current by the DDL in the binlog ([`ddl`]).
//! [`TableSchema::from_table_map_with_def`] takes what the table map lacks from it and checks
//! that both agree.
//!
//! Invariants of a successfully built schema:
//!
//! * `columns.len()` equals the table map's column count and columns are in table
//!   order (the order of values in row images);
//! * every index in `primary_key` is `< columns.len()`;
//! * every column's [`ColumnKind`] is one the row decoder can decode
//!   (unsupported binlog types are rejected here with [`SchemaError::UnsupportedType`]).
//!
//! The table map is read from its serialized bytes (via mysql_common's
//! `MySerialize`) by the bounds-checked parser in `crate::binlog::table_map`, which is shared
//! with the row decoder (`crate::binlog::rows`) so both agree on types and metadata.

pub(crate) mod column;
pub mod ddl;
pub mod information_schema;
pub mod tracked;

mod error;
mod from_def;
mod from_map;
pub(crate) mod map_metadata;
mod table;
#[cfg(test)]
mod tests;
mod with_def;

pub use self::error::{ColumnTypeMismatch, SchemaError, SchemaMismatch};
pub use self::table::{ServerFlavor, TableSchema};
pub use column::{charset_kind, decode_text, CharsetKind, Column, ColumnKind, BINARY_CHARSET};
