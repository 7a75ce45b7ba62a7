//! The per-table decoding plan: a [`RowDecoder`], built once per `TABLE_MAP`, holds for each
//! column how it is stored ([`Cell`]: storage format, length-prefix widths, decimal sizes,
//! fsp byte counts, signedness ...).
//!
//! Invariant: a decoder is built only when the schema describes the table map column for
//! column (same count, each column's real type matching its kind); anything else is a
//! [`RowsError::SchemaMismatch`].

use std::sync::Arc;

use mysql_common::binlog::events::TableMapEvent;

use super::cell::Cell;
use super::decimal::decimal_bin_size;
use super::error::RowsError;
use crate::binlog::table_map::{RawTableMap, RealType};
use crate::schema::{ColumnKind, TableSchema, BINARY_CHARSET};

/// Per-table row decoder: a precomputed plan over the table map's columns.
#[derive(Debug, Clone)]
pub struct RowDecoder {
    pub(super) schema: Arc<TableSchema>,
    pub(super) table_id: u64,
    pub(super) plan: Vec<Cell>,
    pub(super) json_columns: usize,
}

impl RowDecoder {
    /// Builds the decoder for the table described by `tme`; `schema` must be the
    /// schema built from the same event ([`TableSchema::from_table_map`]).
    pub fn new(schema: Arc<TableSchema>, tme: &TableMapEvent<'_>) -> Result<Self, RowsError> {
        let raw = RawTableMap::from_event(tme)?;
        Self::from_raw(schema, &raw)
    }

    pub(crate) fn from_raw(schema: Arc<TableSchema>, raw: &RawTableMap) -> Result<Self, RowsError> {
        let mismatch = |detail: String| RowsError::SchemaMismatch {
            db: schema.db.clone(),
            table: schema.table.clone(),
            detail,
        };
        if schema.columns.len() != raw.columns.len() {
            return Err(mismatch(format!(
                "schema has {} columns, table map {}",
                schema.columns.len(),
                raw.columns.len()
            )));
        }
        let mut plan = Vec::with_capacity(raw.columns.len());
        for (col, rc) in schema.columns.iter().zip(&raw.columns) {
            let unsigned = col.kind.is_unsigned();
            let cell = match (rc.real, &col.kind) {
                (RealType::Tiny, ColumnKind::TinyInt { .. }) => pick(unsigned, Cell::U8, Cell::I8),
                (RealType::Short, ColumnKind::SmallInt { .. }) => {
                    pick(unsigned, Cell::U16, Cell::I16)
                }
                (RealType::Int24, ColumnKind::MediumInt { .. }) => {
                    pick(unsigned, Cell::U24, Cell::I24)
                }
                (RealType::Long, ColumnKind::Int { .. }) => pick(unsigned, Cell::U32, Cell::I32),
                (RealType::LongLong, ColumnKind::BigInt { .. }) => {
                    pick(unsigned, Cell::U64, Cell::I64)
                }
                (RealType::Float, ColumnKind::Float) => Cell::Float,
                (RealType::Double, ColumnKind::Double) => Cell::Double,
                (RealType::NewDecimal { precision, scale }, ColumnKind::Decimal { .. }) => {
                    let size = decimal_bin_size(precision, scale);
                    Cell::Decimal {
                        precision,
                        scale,
                        size: u8::try_from(size)
                            .map_err(|_| mismatch(format!("decimal size {size}")))?,
                    }
                }
                (RealType::Date, ColumnKind::Date) => Cell::Date,
                (RealType::Time, ColumnKind::Time { .. }) => Cell::TimeOld,
                (RealType::Time2 { fsp }, ColumnKind::Time { .. }) => Cell::Time2 { fsp },
                (RealType::DateTime, ColumnKind::DateTime { .. }) => Cell::DateTimeOld,
                (RealType::DateTime2 { fsp }, ColumnKind::DateTime { .. }) => {
                    Cell::DateTime2 { fsp }
                }
                (RealType::Timestamp, ColumnKind::Timestamp { .. }) => Cell::TimestampOld,
                (RealType::Timestamp2 { fsp }, ColumnKind::Timestamp { .. }) => {
                    Cell::Timestamp2 { fsp }
                }
                (RealType::Year, ColumnKind::Year) => Cell::Year,
                (RealType::VarChar { max_bytes }, ColumnKind::String { .. }) => Cell::Str {
                    prefix: if max_bytes < 256 { 1 } else { 2 },
                },
                (RealType::Char { max_bytes }, ColumnKind::String { charset, .. }) => {
                    let prefix = if max_bytes < 256 { 1 } else { 2 };
                    if *charset == BINARY_CHARSET {
                        Cell::FixedBinary {
                            prefix,
                            pad_to: max_bytes,
                        }
                    } else {
                        Cell::Str { prefix }
                    }
                }
                (RealType::Char { max_bytes: 16 }, ColumnKind::Uuid | ColumnKind::Inet6) => {
                    Cell::FixedBinary {
                        prefix: 1,
                        pad_to: 16,
                    }
                }
                (RealType::Char { max_bytes: 4 }, ColumnKind::Inet4) => Cell::FixedBinary {
                    prefix: 1,
                    pad_to: 4,
                },
                (RealType::Blob { prefix }, ColumnKind::Blob { .. }) => Cell::Blob { prefix },
                (RealType::Json { prefix }, ColumnKind::Json) => Cell::Json { prefix },
                (RealType::Geometry { prefix }, ColumnKind::Geometry | ColumnKind::Point) => {
                    Cell::Geometry { prefix }
                }
                (RealType::Vector { prefix }, ColumnKind::Vector { .. }) => Cell::Vector { prefix },
                // MariaDB 11.7+: VECTOR(n) logged as VARBINARY(4n).
                (RealType::VarChar { max_bytes }, ColumnKind::Vector { .. }) => Cell::Vector {
                    prefix: if max_bytes < 256 { 1 } else { 2 },
                },
                (RealType::Enum { size }, ColumnKind::Enum { .. }) => Cell::Enum { size },
                (RealType::Set { size }, ColumnKind::Set { .. }) => Cell::Set { size },
                (RealType::Bit { bits }, ColumnKind::Bit { .. }) => Cell::Bit { bits },
                (real, kind) => {
                    return Err(mismatch(format!(
                        "column `{}` is {} in the schema but {:?} in the table map",
                        col.name,
                        kind.type_name(),
                        real
                    )))
                }
            };
            plan.push(cell);
        }
        let json_columns = raw.columns.iter().filter(|c| c.type_code == 245).count();
        Ok(RowDecoder {
            schema,
            table_id: raw.table_id,
            plan,
            json_columns,
        })
    }

    /// The schema rows are decoded against.
    pub fn schema(&self) -> &Arc<TableSchema> {
        &self.schema
    }

    /// The table id of the table map this decoder was built from.
    pub fn table_id(&self) -> u64 {
        self.table_id
    }
}

#[inline]
fn pick(unsigned: bool, u: Cell, s: Cell) -> Cell {
    if unsigned {
        u
    } else {
        s
    }
}
