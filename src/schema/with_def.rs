//! [`TableSchema`] from a `TABLE_MAP` and the tracked definition of its table, for servers that
//! log less than full metadata: the table map gives the column types, the definition what the
//! table map does not log.
//!
//! Invariant: a schema is only built when both describe the same table (the column count, every
//! column's type and, where the table map logs them, the names agree); otherwise a
//! [`SchemaMismatch`] says where they differ.

use mysql_common::binlog::events::TableMapEvent;

use super::column::BINARY_CHARSET;
use super::error::{ColumnTypeMismatch, SchemaMismatch};
use super::map_metadata::MapMetadata;
use super::table::{ServerFlavor, TableSchema};
use super::tracked::{self, ColumnDef, TableDef};
use crate::binlog::table_map::{OptionalMetadata, RawColumn, RawTableMap, RealType};

impl TableSchema {
    /// Builds the schema from a `TABLE_MAP` event and the tracked definition of its table
    /// (see [`tracked`]): the column types and type metadata come from the table map; names,
    /// signedness, ENUM/SET members, charsets, vector dimensions and the primary key come from
    /// the table map where it logs them (`binlog_row_metadata=FULL`, or the signedness and
    /// charsets of MINIMAL) and from `def` where it does not.
    ///
    /// Both must describe the same table: the column count, every column's logged type against
    /// the tracked SQL type (integer width and signedness, DECIMAL precision and scale,
    /// fractional seconds, BIT width, ENUM/SET size, type family for the rest) and, where the
    /// table map logs them, the column names (case-insensitively) are checked.
    pub fn from_table_map_with_def(
        tme: &TableMapEvent<'_>,
        flavor: ServerFlavor,
        def: &TableDef,
    ) -> Result<Self, SchemaMismatch> {
        let raw = RawTableMap::from_event(tme)?;
        Self::from_raw_with_def(&raw, flavor, def)
    }

    /// [`TableSchema::from_table_map_with_def`] on an already parsed table map.
    pub(crate) fn from_raw_with_def(
        raw: &RawTableMap,
        flavor: ServerFlavor,
        def: &TableDef,
    ) -> Result<Self, SchemaMismatch> {
        let n = raw.columns.len();
        if raw.db != def.db || raw.table != def.table {
            return Err(SchemaMismatch::Table {
                db: raw.db.clone(),
                table: raw.table.clone(),
                tracked: def.name(),
            });
        }
        if n != def.columns.len() {
            return Err(SchemaMismatch::ColumnCount {
                db: raw.db.clone(),
                table: raw.table.clone(),
                logged: n,
                tracked: def.columns.len(),
            });
        }
        let opt = OptionalMetadata::parse(&raw.optional, n).map_err(|d| raw.malformed(d))?;
        let full = opt.column_names.is_some();
        let names: Vec<String> = match &opt.column_names {
            Some(logged) => {
                for (index, (l, c)) in logged.iter().zip(&def.columns).enumerate() {
                    if !l.eq_ignore_ascii_case(&c.name) {
                        return Err(SchemaMismatch::ColumnName {
                            db: raw.db.clone(),
                            table: raw.table.clone(),
                            index,
                            logged: l.clone(),
                            tracked: c.name.clone(),
                        });
                    }
                }
                logged.clone()
            }
            None => def.columns.iter().map(|c| c.name.clone()).collect(),
        };
        let meta = MapMetadata::read(raw, opt, flavor, |i| names.get(i).cloned())?;
        for (index, (col, c)) in raw.columns.iter().zip(&def.columns).enumerate() {
            let unsigned = meta.unsigned.as_ref().and_then(|u| u.get(index).copied());
            if !type_agrees(c, col, unsigned) {
                return Err(SchemaMismatch::ColumnType(Box::new(ColumnTypeMismatch {
                    db: raw.db.clone(),
                    table: raw.table.clone(),
                    index,
                    column: c.name.clone(),
                    tracked: c.sql_type.clone(),
                    logged: describe_logged(col, unsigned),
                })));
            }
        }
        let facts = names
            .into_iter()
            .zip(&def.columns)
            .enumerate()
            .map(|(i, (name, c))| {
                let mut f = meta.facts(i, name);
                if meta.unsigned.is_none() {
                    f.unsigned = c.unsigned;
                }
                if meta.charsets.is_none() || meta.es_charsets.is_none() {
                    let cs = def_charset_id(c);
                    if meta.charsets.is_none() {
                        f.charset = cs;
                    }
                    if meta.es_charsets.is_none() {
                        f.es_charset = cs;
                    }
                }
                if meta.members.is_none() {
                    f.members = c.members.clone();
                }
                if f.point.is_none() && matches!(raw.columns.get(i), Some(c) if matches!(c.real, RealType::Geometry { .. })) {
                    f.point = Some(c.base_type() == "point");
                }
                f.uuid = c.base_type() == "uuid";
                f.inet = matches!(c.base_type(), "inet6" | "inet4");
                f.vector = c.base_type() == "vector";
                if f.dimensions.is_none() && c.base_type() == "vector" {
                    f.dimensions = tracked::type_args(&c.sql_type)
                        .first()
                        .and_then(|&d| u32::try_from(d).ok());
                }
                f
            })
            .collect();
        let primary_key = match meta.primary_key {
            Some(pk) => pk,
            None if full => Vec::new(),
            None => def
                .primary_key
                .iter()
                .map(|k| {
                    def.column_index(k)
                        .ok_or_else(|| SchemaMismatch::PrimaryKey {
                            db: raw.db.clone(),
                            table: raw.table.clone(),
                            column: k.clone(),
                        })
                })
                .collect::<Result<_, _>>()?,
        };
        Ok(Self::assemble(raw, facts, primary_key)?)
    }
}

/// The collation id a tracked column's bytes are in (binary types: `binary`).
fn def_charset_id(c: &ColumnDef) -> u16 {
    match c.base_type() {
        "binary" | "varbinary" | "tinyblob" | "blob" | "mediumblob" | "longblob" | "uuid"
        | "inet6" | "inet4" | "vector" => BINARY_CHARSET,
        "json" => tracked::charset_id("utf8mb4"),
        _ => c
            .charset
            .as_deref()
            .or_else(|| {
                c.collation
                    .as_deref()
                    .and_then(tracked::charset_of_collation)
            })
            .map_or(0, tracked::charset_id),
    }
}

/// Whether a logged column can be the tracked column (see
/// [`TableSchema::from_table_map_with_def`]); `unsigned` is the logged signedness, if logged.
fn type_agrees(c: &ColumnDef, col: &RawColumn, unsigned: Option<bool>) -> bool {
    let args = tracked::type_args(&c.sql_type);
    let arg0 = args.first().copied();
    let fsp_is = |fsp: u8| arg0.unwrap_or(0) == u64::from(fsp);
    let int_ok = unsigned.is_none_or(|u| u == c.unsigned);
    let enum_size = if c.members.len() > 255 { 2 } else { 1 };
    let set_size = match c.members.len().div_ceil(8) {
        n @ 0..=4 => n.max(1),
        _ => 8,
    };
    match (c.base_type(), col.real) {
        ("tinyint", RealType::Tiny)
        | ("smallint", RealType::Short)
        | ("mediumint", RealType::Int24)
        | ("int", RealType::Long)
        | ("bigint", RealType::LongLong) => int_ok,
        ("float", RealType::Float) | ("double", RealType::Double) => true,
        ("decimal", RealType::NewDecimal { precision, scale }) => {
            args == [u64::from(precision), u64::from(scale)]
        }
        ("date", RealType::Date)
        | ("time", RealType::Time)
        | ("datetime", RealType::DateTime)
        | ("timestamp", RealType::Timestamp)
        | ("year", RealType::Year) => true,
        ("time", RealType::Time2 { fsp })
        | ("datetime", RealType::DateTime2 { fsp })
        | ("timestamp", RealType::Timestamp2 { fsp }) => fsp_is(fsp),
        ("char" | "binary", RealType::Char { .. })
        | ("varchar" | "varbinary", RealType::VarChar { .. }) => true,
        (
            "tinytext" | "text" | "mediumtext" | "longtext" | "tinyblob" | "blob" | "mediumblob"
            | "longblob",
            RealType::Blob { .. },
        ) => true,
        ("enum", RealType::Enum { size }) => usize::from(size) == enum_size,
        ("set", RealType::Set { size }) => usize::from(size) == set_size,
        ("bit", RealType::Bit { bits }) => arg0.unwrap_or(1) == u64::from(bits),
        // MariaDB's JSON is a LONGTEXT.
        ("json", RealType::Json { .. } | RealType::Blob { .. }) => true,
        (
            "geometry" | "point" | "linestring" | "polygon" | "multipoint" | "multilinestring"
            | "multipolygon" | "geometrycollection",
            RealType::Geometry { .. },
        ) => true,
        ("vector", RealType::Vector { .. }) => true,
        // MariaDB 11.7+ logs VECTOR(n) as VARBINARY(4n).
        ("vector", RealType::VarChar { max_bytes }) => {
            arg0.is_some_and(|n| u64::from(max_bytes) == 4 * n)
        }
        ("uuid" | "inet6", RealType::Char { max_bytes }) => max_bytes == 16,
        ("inet4", RealType::Char { max_bytes }) => max_bytes == 4,
        _ => false,
    }
}

/// A logged column type in words, for mismatch messages.
fn describe_logged(col: &RawColumn, unsigned: Option<bool>) -> String {
    let int = |name: &str| match unsigned {
        Some(true) => format!("{name} UNSIGNED"),
        _ => name.to_owned(),
    };
    let with_fsp = |name: &str, fsp: u8| {
        if fsp == 0 {
            name.to_owned()
        } else {
            format!("{name}({fsp})")
        }
    };
    match col.real {
        RealType::Tiny => int("TINYINT"),
        RealType::Short => int("SMALLINT"),
        RealType::Int24 => int("MEDIUMINT"),
        RealType::Long => int("INT"),
        RealType::LongLong => int("BIGINT"),
        RealType::Float => "FLOAT".into(),
        RealType::Double => "DOUBLE".into(),
        RealType::NewDecimal { precision, scale } => format!("DECIMAL({precision},{scale})"),
        RealType::Date => "DATE".into(),
        RealType::Time | RealType::Time2 { .. } => with_fsp("TIME", col.fsp()),
        RealType::DateTime | RealType::DateTime2 { .. } => with_fsp("DATETIME", col.fsp()),
        RealType::Timestamp | RealType::Timestamp2 { .. } => with_fsp("TIMESTAMP", col.fsp()),
        RealType::Year => "YEAR".into(),
        RealType::VarChar { max_bytes } => format!("VARCHAR/VARBINARY of {max_bytes} bytes"),
        RealType::Char { max_bytes } => format!("CHAR/BINARY of {max_bytes} bytes"),
        RealType::Blob { prefix } => format!("BLOB/TEXT ({prefix}-byte length)"),
        RealType::Enum { size } => format!("ENUM ({size}-byte index)"),
        RealType::Set { size } => format!("SET ({size}-byte bitmap)"),
        RealType::Bit { bits } => format!("BIT({bits})"),
        RealType::Json { .. } => "JSON".into(),
        RealType::Geometry { .. } => "GEOMETRY".into(),
        RealType::Vector { .. } => "VECTOR".into(),
        RealType::Unsupported(d) => format!("type {} ({d})", col.type_code),
    }
}
