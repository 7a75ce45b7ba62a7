//! [`TableDef::from_schema`]: the definition a `TABLE_MAP` with full metadata describes, for
//! tables sluice has not tracked by DDL yet (so that a later DDL has a `before`).
//!
//! Invariant: the definition has the schema's columns in table order, their nullability and the
//! primary key; what the binlog does not log is approximated as [`TableDef::from_schema`] says.

use super::def::{ColumnDef, TableDef};
use super::type_text::quote_members;

impl TableDef {
    /// The definition a `TABLE_MAP` with full metadata describes, for tables sluice has not
    /// tracked by DDL yet (so a later DDL has a `before`). What the binlog does not log is
    /// approximated: CHAR/VARCHAR lengths in characters assume the charset's widest character
    /// (4 bytes for the UTF-8 family and UTF-16/32, 1 for latin1), TEXT/BLOB columns are named
    /// `text`/`blob` whatever their size class, and no charset name is recorded.
    pub fn from_schema(schema: &crate::schema::TableSchema) -> TableDef {
        let mut def = TableDef::new(schema.db.clone(), schema.table.clone());
        def.columns = schema
            .columns
            .iter()
            .map(|c| {
                let mut col = ColumnDef::new(c.name.clone(), sql_type_of(&c.kind));
                col.nullable = c.nullable;
                col
            })
            .collect();
        def.primary_key = schema
            .primary_key
            .iter()
            .filter_map(|&i| schema.columns.get(i).map(|c| c.name.clone()))
            .collect();
        def
    }
}

/// The normalized SQL type of a column kind (see [`TableDef::from_schema`] for what is
/// approximated).
fn sql_type_of(kind: &crate::schema::ColumnKind) -> String {
    use crate::schema::{charset_kind, CharsetKind, ColumnKind as K};
    let int = |base: &str, unsigned: bool| {
        if unsigned {
            format!("{base} unsigned")
        } else {
            base.to_owned()
        }
    };
    let fsp = |base: &str, fsp: u8| {
        if fsp == 0 {
            base.to_owned()
        } else {
            format!("{base}({fsp})")
        }
    };
    match kind {
        K::TinyInt { unsigned } => int("tinyint", *unsigned),
        K::SmallInt { unsigned } => int("smallint", *unsigned),
        K::MediumInt { unsigned } => int("mediumint", *unsigned),
        K::Int { unsigned } => int("int", *unsigned),
        K::BigInt { unsigned } => int("bigint", *unsigned),
        K::Float => "float".into(),
        K::Double => "double".into(),
        K::Decimal { precision, scale } => format!("decimal({precision},{scale})"),
        K::Date => "date".into(),
        K::Time { fsp: f } => fsp("time", *f),
        K::DateTime { fsp: f } => fsp("datetime", *f),
        K::Timestamp { fsp: f } => fsp("timestamp", *f),
        K::Year => "year".into(),
        K::String {
            charset,
            binary,
            fixed,
            max_bytes,
        } => {
            if *binary {
                format!(
                    "{}({max_bytes})",
                    if *fixed { "binary" } else { "varbinary" }
                )
            } else {
                let width = match charset_kind(*charset) {
                    CharsetKind::Latin1 | CharsetKind::Binary => 1,
                    _ => 4,
                };
                let chars = u32::from(*max_bytes) / width;
                format!("{}({chars})", if *fixed { "char" } else { "varchar" })
            }
        }
        K::Blob { binary, .. } => if *binary { "blob" } else { "text" }.into(),
        K::Enum { values } => format!("enum({})", quote_members(values)),
        K::Set { values } => format!("set({})", quote_members(values)),
        K::Bit { bits } => format!("bit({bits})"),
        K::Json => "json".into(),
        K::Geometry => "geometry".into(),
        K::Point => "point".into(),
        K::Uuid => "uuid".into(),
        K::Inet6 => "inet6".into(),
        K::Inet4 => "inet4".into(),
        K::Vector { dimensions } => match dimensions {
            Some(d) => format!("vector({d})"),
            None => "vector".into(),
        },
    }
}
