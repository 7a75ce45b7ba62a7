//! [`TableSchema`] from a `TABLE_MAP` alone (`binlog_row_metadata=FULL`), and the assembly that
//! every schema built from a table map goes through.
//!
//! Invariant: the schema has one column per table-map column, in table order, each of a kind the
//! row decoder can decode, and every primary key index is in range; anything else is a
//! [`SchemaError`].

use mysql_common::binlog::events::TableMapEvent;

use super::column::{Column, ColumnKind, BINARY_CHARSET};
use super::error::SchemaError;
use super::map_metadata::{ColumnFacts, MapMetadata};
use super::table::{ServerFlavor, TableSchema};
use crate::binlog::table_map::{OptionalMetadata, RawColumn, RawTableMap, RealType};

impl TableSchema {
    /// Builds the schema from a `TABLE_MAP` event, inferring the server flavor.
    ///
    /// Requires `binlog_row_metadata=FULL` (column names); see [`SchemaError`].
    pub fn from_table_map(tme: &TableMapEvent<'_>) -> Result<Self, SchemaError> {
        Self::from_table_map_with_flavor(tme, ServerFlavor::Auto)
    }

    /// Like [`TableSchema::from_table_map`] with the server flavor given explicitly.
    pub fn from_table_map_with_flavor(
        tme: &TableMapEvent<'_>,
        flavor: ServerFlavor,
    ) -> Result<Self, SchemaError> {
        let raw = RawTableMap::from_event(tme)?;
        Self::from_raw(&raw, flavor)
    }

    /// Builds the schema from an already parsed table map.
    pub(crate) fn from_raw(raw: &RawTableMap, flavor: ServerFlavor) -> Result<Self, SchemaError> {
        let n = raw.columns.len();
        let opt = OptionalMetadata::parse(&raw.optional, n).map_err(|d| raw.malformed(d))?;
        let names = match &opt.column_names {
            Some(names) => names.clone(),
            None if n == 0 => Vec::new(),
            None => {
                return Err(SchemaError::NoFullMetadata {
                    db: raw.db.clone(),
                    table: raw.table.clone(),
                })
            }
        };
        let meta = MapMetadata::read(raw, opt, flavor, |i| names.get(i).cloned())?;
        let facts = names
            .into_iter()
            .enumerate()
            .map(|(i, name)| meta.facts(i, name))
            .collect();
        Self::assemble(raw, facts, meta.primary_key.unwrap_or_default())
    }

    /// The schema from the table map's column types plus per-column facts (one per column).
    pub(super) fn assemble(
        raw: &RawTableMap,
        facts: Vec<ColumnFacts>,
        primary_key: Vec<usize>,
    ) -> Result<Self, SchemaError> {
        let n = raw.columns.len();
        if facts.len() != n {
            return Err(raw.malformed(format!("{} column names for {} columns", facts.len(), n)));
        }
        let mut columns = Vec::with_capacity(n);
        for (i, (col, f)) in raw.columns.iter().zip(facts).enumerate() {
            let Some(kind) = column_kind(col, &f) else {
                // Rejected by MapMetadata::read; keep this path an error, not a panic.
                return Err(raw.malformed(format!("column #{i} has an unsupported type")));
            };
            columns.push(Column {
                name: f.name,
                kind,
                nullable: raw.nullable(i),
            });
        }
        if let Some(bad) = primary_key.iter().find(|&&i| i >= n) {
            return Err(raw.malformed(format!(
                "primary key column index {bad} out of range ({n} columns)"
            )));
        }
        Ok(TableSchema {
            db: raw.db.clone(),
            table: raw.table.clone(),
            columns,
            primary_key,
        })
    }
}

/// The column kind of one table-map column (None for a type this crate cannot decode).
fn column_kind(col: &RawColumn, f: &ColumnFacts) -> Option<ColumnKind> {
    let unsigned = f.unsigned;
    let charset = f.charset;
    Some(match col.real {
        RealType::Tiny => ColumnKind::TinyInt { unsigned },
        RealType::Short => ColumnKind::SmallInt { unsigned },
        RealType::Int24 => ColumnKind::MediumInt { unsigned },
        RealType::Long => ColumnKind::Int { unsigned },
        RealType::LongLong => ColumnKind::BigInt { unsigned },
        RealType::Float => ColumnKind::Float,
        RealType::Double => ColumnKind::Double,
        RealType::NewDecimal { precision, scale } => ColumnKind::Decimal { precision, scale },
        RealType::Date => ColumnKind::Date,
        RealType::Time | RealType::Time2 { .. } => ColumnKind::Time { fsp: col.fsp() },
        RealType::DateTime | RealType::DateTime2 { .. } => ColumnKind::DateTime { fsp: col.fsp() },
        RealType::Timestamp | RealType::Timestamp2 { .. } => {
            ColumnKind::Timestamp { fsp: col.fsp() }
        }
        RealType::Year => ColumnKind::Year,
        RealType::VarChar { max_bytes } if f.vector && max_bytes % 4 == 0 => ColumnKind::Vector {
            dimensions: f.dimensions.or(Some(u32::from(max_bytes / 4))),
        },
        RealType::VarChar { max_bytes } => ColumnKind::String {
            charset,
            binary: charset == BINARY_CHARSET,
            fixed: false,
            max_bytes,
        },
        RealType::Char { max_bytes: 16 } if f.uuid => ColumnKind::Uuid,
        RealType::Char { max_bytes: 16 } if f.inet => ColumnKind::Inet6,
        RealType::Char { max_bytes: 4 } if f.inet => ColumnKind::Inet4,
        RealType::Char { max_bytes } => ColumnKind::String {
            charset,
            binary: charset == BINARY_CHARSET,
            fixed: true,
            max_bytes,
        },
        RealType::Blob { .. } => ColumnKind::Blob {
            charset,
            binary: charset == BINARY_CHARSET,
        },
        RealType::Enum { .. } => ColumnKind::Enum {
            values: f.members.clone(),
        },
        RealType::Set { .. } => ColumnKind::Set {
            values: f.members.clone(),
        },
        RealType::Bit { bits, .. } => ColumnKind::Bit { bits },
        RealType::Json { .. } => ColumnKind::Json,
        RealType::Geometry { .. } if f.point == Some(true) => ColumnKind::Point,
        RealType::Geometry { .. } => ColumnKind::Geometry,
        RealType::Vector { .. } => ColumnKind::Vector {
            dimensions: f.dimensions,
        },
        RealType::Unsupported(_) => return None,
    })
}
