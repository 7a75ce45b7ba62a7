//! The table schema types: a [`TableSchema`] (a table's columns in table order and its primary
//! key, what the row decoder and the encoders work from) and the [`ServerFlavor`] a table map is
//! read as.
//!
//! The builders live next to this file (`from_map`, `with_def`, `from_def`); each keeps the
//! invariants the `schema` module documents: one column per table-map column, in table order,
//! and every primary key index `< columns.len()`.

use super::column::Column;

/// A table's columns and primary key as described by a `TABLE_MAP` event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSchema {
    /// Database (schema) name.
    pub db: String,
    /// Table name.
    pub table: String,
    /// Columns in table order.
    pub columns: Vec<Column>,
    /// Column indexes of the primary key in key order (empty if the table has none),
    /// from the `SIMPLE_PRIMARY_KEY` or `PRIMARY_KEY_WITH_PREFIX` optional metadata.
    pub primary_key: Vec<usize>,
}

/// Which server wrote the binlog; matters for one detail of the charset metadata
/// (MariaDB counts GEOMETRY columns as character columns, MySQL does not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ServerFlavor {
    /// Infer from the metadata itself.  Exact for tables without GEOMETRY columns,
    /// for MySQL >= 8.0.23 (which logs COLUMN_VISIBILITY) and whenever the charset
    /// list length or an exception index decides it; otherwise MariaDB is assumed
    /// iff reading the charsets MariaDB's way gives every GEOMETRY column the
    /// `binary` charset.  Pass the flavor explicitly when it is known.
    #[default]
    Auto,
    /// Oracle MySQL (and Percona Server).
    MySql,
    /// MariaDB.
    MariaDb,
}

impl From<crate::model::Flavor> for ServerFlavor {
    fn from(flavor: crate::model::Flavor) -> Self {
        match flavor {
            crate::model::Flavor::MySql => ServerFlavor::MySql,
            crate::model::Flavor::MariaDb => ServerFlavor::MariaDb,
        }
    }
}

impl TableSchema {
    /// The column names in table order, joined by ", " (for messages).
    pub fn column_list(&self) -> String {
        self.columns
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Column indexes of the primary key, in key order (empty: no primary key).
    pub fn key_columns(&self) -> &[usize] {
        &self.primary_key
    }

    /// Index of the column called `name`, if any (exact, case-sensitive match).
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }
}
