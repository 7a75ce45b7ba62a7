//! [`TableSchema`] from a tracked definition alone, as the table map of one of the table's rows
//! would give it with full metadata; used where no table map is at hand (snapshots).
//!
//! Invariant: given the columns' storage facts, the schema is the one such a table map gives
//! (the same kinds, charsets, lengths and key); a type sluice cannot read, storage facts of the
//! wrong length or a key column that is not a column is a [`SchemaError::Malformed`].

use super::column::{Column, ColumnKind, BINARY_CHARSET};
use super::error::SchemaError;
use super::table::{ServerFlavor, TableSchema};
use super::tracked::{self, TableDef};

impl TableSchema {
    /// The schema of a table from its tracked definition alone, as the table map of one of its
    /// rows would give it with full metadata. `storage[i]` is column `i`'s collation id and
    /// maximum length in bytes (`information_schema.COLUMNS`: the `ID` of `COLLATION_NAME` in
    /// `COLLATIONS`, [`BINARY_CHARSET`] for binary types; `CHARACTER_OCTET_LENGTH`), which the
    /// definition does not keep. Used where no table map is at hand (snapshots).
    pub fn from_def(
        def: &TableDef,
        storage: &[(u16, u64)],
        flavor: ServerFlavor,
    ) -> Result<Self, SchemaError> {
        let bad = |detail: String| SchemaError::Malformed {
            db: def.db.clone(),
            table: def.table.clone(),
            detail,
        };
        if storage.len() != def.columns.len() {
            return Err(bad(format!(
                "{} storage facts for {} columns",
                storage.len(),
                def.columns.len()
            )));
        }
        let mut columns = Vec::with_capacity(def.columns.len());
        for (c, &(charset, octets)) in def.columns.iter().zip(storage) {
            let args = tracked::type_args(&c.sql_type);
            let arg = |i: usize, default: u64| args.get(i).copied().unwrap_or(default);
            let fsp = u8::try_from(arg(0, 0)).unwrap_or(0);
            let max_bytes = u16::try_from(octets).unwrap_or(u16::MAX);
            let unsigned = c.unsigned;
            let string = |fixed: bool, charset: u16| ColumnKind::String {
                charset,
                binary: charset == BINARY_CHARSET,
                fixed,
                max_bytes,
            };
            let kind = match c.base_type() {
                "tinyint" => ColumnKind::TinyInt { unsigned },
                "smallint" => ColumnKind::SmallInt { unsigned },
                "mediumint" => ColumnKind::MediumInt { unsigned },
                "int" => ColumnKind::Int { unsigned },
                "bigint" => ColumnKind::BigInt { unsigned },
                "float" => ColumnKind::Float,
                "double" => ColumnKind::Double,
                "decimal" => ColumnKind::Decimal {
                    precision: u8::try_from(arg(0, 10)).unwrap_or(65),
                    scale: u8::try_from(arg(1, 0)).unwrap_or(30),
                },
                "date" => ColumnKind::Date,
                "time" => ColumnKind::Time { fsp },
                "datetime" => ColumnKind::DateTime { fsp },
                "timestamp" => ColumnKind::Timestamp { fsp },
                "year" => ColumnKind::Year,
                "char" => string(true, charset),
                "varchar" => string(false, charset),
                "binary" => string(true, BINARY_CHARSET),
                // MariaDB's UUID / INET6 / INET4: stored (and logged) as BINARY(16) / BINARY(4);
                // information_schema gives them no octet length. Each is written as its text.
                "uuid" => ColumnKind::Uuid,
                "inet6" => ColumnKind::Inet6,
                "inet4" => ColumnKind::Inet4,
                "varbinary" => string(false, BINARY_CHARSET),
                "tinytext" | "text" | "mediumtext" | "longtext" => ColumnKind::Blob {
                    charset,
                    binary: charset == BINARY_CHARSET,
                },
                "tinyblob" | "blob" | "mediumblob" | "longblob" => ColumnKind::Blob {
                    charset: BINARY_CHARSET,
                    binary: true,
                },
                // MariaDB's JSON is a LONGTEXT (utf8mb4_bin) in its table maps.
                "json" if flavor == ServerFlavor::MariaDb => ColumnKind::Blob {
                    charset,
                    binary: false,
                },
                "json" => ColumnKind::Json,
                "enum" => ColumnKind::Enum {
                    values: c.members.clone(),
                },
                "set" => ColumnKind::Set {
                    values: c.members.clone(),
                },
                "bit" => ColumnKind::Bit {
                    bits: u16::try_from(arg(0, 1)).unwrap_or(64),
                },
                "point" => ColumnKind::Point,
                "geometry" | "linestring" | "polygon" | "multipoint" | "multilinestring"
                | "multipolygon" | "geometrycollection" => ColumnKind::Geometry,
                // MariaDB 11.7+ logs VECTOR(n) as VARBINARY(4n): the same packed floats.
                "vector" => ColumnKind::Vector {
                    dimensions: args.first().and_then(|&d| u32::try_from(d).ok()),
                },
                other => {
                    return Err(bad(format!(
                        "column `{}` has type `{other}` ({}), which sluice cannot read",
                        c.name, c.sql_type
                    )))
                }
            };
            columns.push(Column {
                name: c.name.clone(),
                kind,
                nullable: c.nullable,
            });
        }
        let primary_key = def
            .primary_key
            .iter()
            .map(|k| {
                def.column_index(k)
                    .ok_or_else(|| bad(format!("primary key column `{k}` is not a column")))
            })
            .collect::<Result<_, _>>()?;
        Ok(TableSchema {
            db: def.db.clone(),
            table: def.table.clone(),
            columns,
            primary_key,
        })
    }
}
