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
//! `MySerialize`) by a bounds-checked parser in this module, which is shared with
//! the row decoder (`crate::source::rows`) so both agree on types and metadata.

pub mod column;
pub mod ddl;
pub mod information_schema;
pub mod tracked;

pub use column::{charset_kind, decode_text, CharsetKind, Column, ColumnKind, BINARY_CHARSET};

use mysql_common::binlog::events::TableMapEvent;
use mysql_common::proto::MySerialize;
use tracked::{ColumnDef, TableDef, TableName};

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

/// Why a `TABLE_MAP` could not be turned into a [`TableSchema`].
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

/// Why a `TABLE_MAP` and a tracked [`TableDef`] do not give a schema.
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

    /// Column indexes of the primary key, in key order (empty: no primary key).
    pub fn key_columns(&self) -> &[usize] {
        &self.primary_key
    }

    /// Index of the column called `name`, if any (exact, case-sensitive match).
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
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
                // information_schema gives them no octet length.
                "uuid" | "inet6" => ColumnKind::String {
                    charset: BINARY_CHARSET,
                    binary: true,
                    fixed: true,
                    max_bytes: 16,
                },
                "inet4" => ColumnKind::String {
                    charset: BINARY_CHARSET,
                    binary: true,
                    fixed: true,
                    max_bytes: 4,
                },
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
                "geometry" | "point" | "linestring" | "polygon" | "multipoint"
                | "multilinestring" | "multipolygon" | "geometrycollection" => ColumnKind::Geometry,
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

    /// The schema from the table map's column types plus per-column facts (one per column).
    fn assemble(
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

/// What a column needs beyond its binlog type and type metadata.
#[derive(Debug, Clone, Default)]
struct ColumnFacts {
    name: String,
    unsigned: bool,
    /// Collation id of a character column (0: unknown).
    charset: u16,
    /// Collation id of an ENUM/SET column's member strings (0: unknown).
    es_charset: u16,
    /// ENUM/SET member strings.
    members: Vec<String>,
    /// VECTOR dimensions, if known.
    dimensions: Option<u32>,
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
        RealType::VarChar { max_bytes } => ColumnKind::String {
            charset,
            binary: charset == BINARY_CHARSET,
            fixed: false,
            max_bytes,
        },
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
        RealType::Geometry { .. } => ColumnKind::Geometry,
        RealType::Vector { .. } => ColumnKind::Vector {
            dimensions: f.dimensions,
        },
        RealType::Unsupported(_) => return None,
    })
}

/// A table map's optional metadata expanded to one entry per column; `None` for a field the
/// table map does not log.
#[derive(Debug, Default)]
struct MapMetadata {
    unsigned: Option<Vec<bool>>,
    charsets: Option<Vec<Option<u16>>>,
    es_charsets: Option<Vec<Option<u16>>>,
    members: Option<Vec<Vec<String>>>,
    dims: Vec<Option<u32>>,
    primary_key: Option<Vec<usize>>,
}

impl MapMetadata {
    /// Rejects columns of unsupported types (named by `name_of`), then expands the metadata.
    fn read(
        raw: &RawTableMap,
        opt: OptionalMetadata,
        flavor: ServerFlavor,
        name_of: impl Fn(usize) -> Option<String>,
    ) -> Result<Self, SchemaError> {
        for (index, col) in raw.columns.iter().enumerate() {
            if let RealType::Unsupported(detail) = col.real {
                return Err(SchemaError::UnsupportedType {
                    db: raw.db.clone(),
                    table: raw.table.clone(),
                    index,
                    column: name_of(index).unwrap_or_else(|| format!("@{}", index + 1)),
                    type_code: col.type_code,
                    detail,
                });
            }
        }
        let malformed = |d: String| raw.malformed(d);
        let unsigned = match opt.signedness.as_deref() {
            Some(bits) => Some(signedness(raw, Some(bits)).map_err(malformed)?),
            None => None,
        };
        let charsets = if opt.default_charset.is_some() || opt.column_charset.is_some() {
            Some(char_charsets(raw, &opt, flavor).map_err(malformed)?)
        } else {
            None
        };
        let es_charsets =
            if opt.enum_set_default_charset.is_some() || opt.enum_set_column_charset.is_some() {
                Some(enum_set_charsets(raw, &opt).map_err(malformed)?)
            } else {
                None
            };
        let members = if opt.enum_values.is_some()
            || opt.set_values.is_some()
            || opt.column_names.is_some()
        {
            let mut enum_values = opt.enum_values.unwrap_or_default().into_iter();
            let mut set_values = opt.set_values.unwrap_or_default().into_iter();
            let es = es_charsets.as_deref();
            Some(
                raw.columns
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let cs = es.and_then(|e| e.get(i).copied().flatten()).unwrap_or(0);
                        match c.real {
                            RealType::Enum { .. } => member_strings(enum_values.next(), cs),
                            RealType::Set { .. } => member_strings(set_values.next(), cs),
                            _ => Vec::new(),
                        }
                    })
                    .collect(),
            )
        } else {
            None
        };
        let mut dims_it = opt.vector_dims.unwrap_or_default().into_iter();
        let dims = raw
            .columns
            .iter()
            .map(|c| match c.real {
                RealType::Vector { .. } => dims_it.next().and_then(|d| u32::try_from(d).ok()),
                _ => None,
            })
            .collect();
        let primary_key = opt.simple_pk.or(opt.pk_with_prefix);
        Ok(MapMetadata {
            unsigned,
            charsets,
            es_charsets,
            members,
            dims,
            primary_key,
        })
    }

    /// The facts of column `i` as the table map logs them (defaults where it does not).
    fn facts(&self, i: usize, name: String) -> ColumnFacts {
        let at = |v: &Option<Vec<Option<u16>>>| {
            v.as_ref()
                .and_then(|v| v.get(i).copied().flatten())
                .unwrap_or(0)
        };
        ColumnFacts {
            name,
            unsigned: self
                .unsigned
                .as_ref()
                .and_then(|u| u.get(i).copied())
                .unwrap_or(false),
            charset: at(&self.charsets),
            es_charset: at(&self.es_charsets),
            members: self
                .members
                .as_ref()
                .and_then(|m| m.get(i).cloned())
                .unwrap_or_default(),
            dimensions: self.dims.get(i).copied().flatten(),
        }
    }
}

/// The collation id a tracked column's bytes are in (binary types: `binary`).
fn def_charset_id(c: &ColumnDef) -> u16 {
    match c.base_type() {
        "binary" | "varbinary" | "tinyblob" | "blob" | "mediumblob" | "longblob" | "uuid"
        | "inet6" | "inet4" => BINARY_CHARSET,
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

fn member_strings(values: Option<Vec<Vec<u8>>>, charset: u16) -> Vec<String> {
    values
        .unwrap_or_default()
        .into_iter()
        .map(|v| decode_text(charset, &v).into_owned())
        .collect()
}

/// The column types that get a SIGNEDNESS bit, YEAR (13) aside; see [`signedness`].
fn is_numeric_type(t: u8) -> bool {
    matches!(t, 0 | 1 | 2 | 3 | 4 | 5 | 8 | 9 | 246)
}

/// Per-column UNSIGNED flags from the SIGNEDNESS field (MSB-first bits, one per
/// numeric column).  YEAR columns have a bit too (MariaDB 10.11 and MySQL 9.7 both log
/// the bits 1, 0, 1 for a table `(y YEAR, a INT, b INT UNSIGNED)`; mysql_common assumes
/// the same); a field whose length only fits without them is read without them.
fn signedness(raw: &RawTableMap, bits: Option<&[u8]>) -> Result<Vec<bool>, String> {
    let n = raw.columns.len();
    let Some(bits) = bits else {
        return Ok(vec![false; n]);
    };
    let numeric = |with_year: bool| {
        raw.columns
            .iter()
            .filter(|c| is_numeric_type(c.type_code) || (with_year && c.type_code == 13))
            .count()
    };
    let without_year = numeric(false);
    let with_year = numeric(true);
    let include_year = if bits.len() == with_year.div_ceil(8) {
        true
    } else if bits.len() == without_year.div_ceil(8) {
        false
    } else {
        return Err(format!(
            "SIGNEDNESS has {} bytes for {} numeric columns",
            bits.len(),
            without_year
        ));
    };
    let mut out = vec![false; n];
    let mut k = 0usize;
    for (i, c) in raw.columns.iter().enumerate() {
        if is_numeric_type(c.type_code) || (include_year && c.type_code == 13) {
            let byte = bits.get(k / 8).copied().unwrap_or(0);
            if let Some(slot) = out.get_mut(i) {
                *slot = byte & (0x80 >> (k % 8)) != 0;
            }
            k += 1;
        }
    }
    Ok(out)
}

/// Expands a charset field (default+exceptions or one per column) to `count` ids.
fn expand_charsets(
    default: Option<&(u16, Vec<(usize, u16)>)>,
    per_column: Option<&Vec<u16>>,
    count: usize,
) -> Result<Option<Vec<u16>>, String> {
    if let Some(list) = per_column {
        if list.len() != count {
            return Err(format!(
                "COLUMN_CHARSET lists {} charsets for {} columns",
                list.len(),
                count
            ));
        }
        return Ok(Some(list.clone()));
    }
    if let Some((def, exceptions)) = default {
        let mut out = vec![*def; count];
        for &(idx, cs) in exceptions {
            match out.get_mut(idx) {
                Some(slot) => *slot = cs,
                None => {
                    return Err(format!(
                        "DEFAULT_CHARSET exception for column {idx} of {count}"
                    ))
                }
            }
        }
        return Ok(Some(out));
    }
    Ok(None)
}

/// Charset of every character column (None for other columns).
fn char_charsets(
    raw: &RawTableMap,
    opt: &OptionalMetadata,
    flavor: ServerFlavor,
) -> Result<Vec<Option<u16>>, String> {
    // MariaDB counts GEOMETRY columns as character columns; MySQL counts VECTOR columns
    // (MySQL 9: a table `(a VARCHAR(3), v VECTOR(3), b VARCHAR(3))` logs three charsets).
    let is_char = |c: &RawColumn, mariadb: bool| {
        matches!(
            c.real,
            RealType::VarChar { .. } | RealType::Char { .. } | RealType::Blob { .. }
        ) || (mariadb && matches!(c.real, RealType::Geometry { .. }))
            || (!mariadb && matches!(c.real, RealType::Vector { .. }))
    };
    let has_vector = raw
        .columns
        .iter()
        .any(|c| matches!(c.real, RealType::Vector { .. }));
    let geometry_is_char = match flavor {
        ServerFlavor::MySql => false,
        ServerFlavor::MariaDb => true,
        ServerFlavor::Auto => {
            let mysql_count = raw.columns.iter().filter(|c| is_char(c, false)).count();
            let maria_count = raw.columns.iter().filter(|c| is_char(c, true)).count();
            if mysql_count == maria_count || opt.column_visibility || has_vector {
                // No GEOMETRY (or VECTOR) columns, COLUMN_VISIBILITY (only MySQL >= 8.0.23
                // logs it) or a VECTOR column (only MySQL has the type).
                false
            } else if let Some(list) = &opt.column_charset {
                list.len() == maria_count
            } else if let Some(default) = &opt.default_charset {
                // An exception index beyond MySQL's count proves MariaDB; otherwise pick
                // MariaDB when its reading gives every GEOMETRY column the `binary`
                // charset, as MariaDB always does.
                default.1.iter().any(|&(idx, _)| idx >= mysql_count)
                    || expand_charsets(Some(default), None, maria_count)
                        .ok()
                        .flatten()
                        .is_some_and(|list| {
                            raw.columns
                                .iter()
                                .filter(|c| is_char(c, true))
                                .zip(list)
                                .filter(|(c, _)| matches!(c.real, RealType::Geometry { .. }))
                                .all(|(_, cs)| cs == BINARY_CHARSET)
                        })
            } else {
                false
            }
        }
    };
    let count = raw
        .columns
        .iter()
        .filter(|c| is_char(c, geometry_is_char))
        .count();
    let Some(list) = expand_charsets(
        opt.default_charset.as_ref(),
        opt.column_charset.as_ref(),
        count,
    )?
    else {
        return Ok(vec![None; raw.columns.len()]);
    };
    let mut it = list.into_iter();
    Ok(raw
        .columns
        .iter()
        .map(|c| {
            if is_char(c, geometry_is_char) {
                it.next()
            } else {
                None
            }
        })
        .collect())
}

/// Charset of every ENUM/SET column (None for other columns).
fn enum_set_charsets(
    raw: &RawTableMap,
    opt: &OptionalMetadata,
) -> Result<Vec<Option<u16>>, String> {
    let is_es = |c: &RawColumn| matches!(c.real, RealType::Enum { .. } | RealType::Set { .. });
    let count = raw.columns.iter().filter(|c| is_es(c)).count();
    let Some(list) = expand_charsets(
        opt.enum_set_default_charset.as_ref(),
        opt.enum_set_column_charset.as_ref(),
        count,
    )?
    else {
        return Ok(vec![None; raw.columns.len()]);
    };
    let mut it = list.into_iter();
    Ok(raw
        .columns
        .iter()
        .map(|c| if is_es(c) { it.next() } else { None })
        .collect())
}

// ---------------------------------------------------------------------------
// Raw table map parsing (shared with the row decoder).
// ---------------------------------------------------------------------------

/// A column's binlog type resolved to what is physically stored in row images.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RealType {
    /// MYSQL_TYPE_TINY (1 byte).
    Tiny,
    /// MYSQL_TYPE_SHORT (2 bytes).
    Short,
    /// MYSQL_TYPE_INT24 (3 bytes).
    Int24,
    /// MYSQL_TYPE_LONG (4 bytes).
    Long,
    /// MYSQL_TYPE_LONGLONG (8 bytes).
    LongLong,
    /// MYSQL_TYPE_FLOAT (4 bytes).
    Float,
    /// MYSQL_TYPE_DOUBLE (8 bytes).
    Double,
    /// MYSQL_TYPE_NEWDECIMAL (binary decimal).
    NewDecimal {
        /// Precision (metadata byte 0).
        precision: u8,
        /// Scale (metadata byte 1).
        scale: u8,
    },
    /// MYSQL_TYPE_DATE / NEWDATE (3 bytes).
    Date,
    /// Old MYSQL_TYPE_TIME (3 bytes, signed HHMMSS integer).
    Time,
    /// MYSQL_TYPE_TIME2 (3 + fsp bytes).
    Time2 {
        /// Fractional-second precision.
        fsp: u8,
    },
    /// Old MYSQL_TYPE_DATETIME (8 bytes, YYYYMMDDhhmmss integer).
    DateTime,
    /// MYSQL_TYPE_DATETIME2 (5 + fsp bytes).
    DateTime2 {
        /// Fractional-second precision.
        fsp: u8,
    },
    /// Old MYSQL_TYPE_TIMESTAMP (4 bytes LE seconds).
    Timestamp,
    /// MYSQL_TYPE_TIMESTAMP2 (4 bytes BE seconds + fsp bytes).
    Timestamp2 {
        /// Fractional-second precision.
        fsp: u8,
    },
    /// MYSQL_TYPE_YEAR (1 byte).
    Year,
    /// MYSQL_TYPE_VARCHAR: 1- or 2-byte length prefix.
    VarChar {
        /// Maximum byte length (prefix is 1 byte if < 256).
        max_bytes: u16,
    },
    /// MYSQL_TYPE_STRING (CHAR/BINARY): 1- or 2-byte length prefix.
    Char {
        /// Maximum byte length (prefix is 1 byte if < 256).
        max_bytes: u16,
    },
    /// MYSQL_TYPE_BLOB family: little-endian length prefix of `prefix` bytes.
    Blob {
        /// Length-prefix width, 1..=4.
        prefix: u8,
    },
    /// ENUM (real type inside MYSQL_TYPE_STRING): 1 or 2 bytes LE.
    Enum {
        /// Packed size, 1 or 2.
        size: u8,
    },
    /// SET (real type inside MYSQL_TYPE_STRING): 1..=8 bytes LE.
    Set {
        /// Packed size, 1..=8.
        size: u8,
    },
    /// MYSQL_TYPE_BIT: big-endian, `(bits + 7) / 8` bytes.
    Bit {
        /// Width in bits, 1..=64.
        bits: u16,
    },
    /// MYSQL_TYPE_JSON: length prefix of `prefix` bytes, then binary JSON.
    Json {
        /// Length-prefix width, 1..=4.
        prefix: u8,
    },
    /// MYSQL_TYPE_GEOMETRY: length prefix of `prefix` bytes, then SRID + WKB.
    Geometry {
        /// Length-prefix width, 1..=4.
        prefix: u8,
    },
    /// MYSQL_TYPE_VECTOR: length prefix of `prefix` bytes, then f32 LE values.
    Vector {
        /// Length-prefix width, 1..=4.
        prefix: u8,
    },
    /// A type this crate does not decode, with the reason.
    Unsupported(&'static str),
}

/// One column of a parsed table map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawColumn {
    /// The type byte as logged.
    pub(crate) type_code: u8,
    /// The metadata bytes as logged (unused bytes are 0).
    pub(crate) meta: [u8; 2],
    /// Physical storage format.
    pub(crate) real: RealType,
}

impl RawColumn {
    fn fsp(&self) -> u8 {
        match self.real {
            RealType::Time2 { fsp }
            | RealType::DateTime2 { fsp }
            | RealType::Timestamp2 { fsp } => fsp,
            _ => 0,
        }
    }
}

/// A `TABLE_MAP` event body parsed into owned parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawTableMap {
    /// Table id the following rows events refer to.
    pub(crate) table_id: u64,
    /// Database name (lossy UTF-8).
    pub(crate) db: String,
    /// Table name (lossy UTF-8).
    pub(crate) table: String,
    /// Columns in table order.
    pub(crate) columns: Vec<RawColumn>,
    /// Nullability bitmap (LSB first).
    pub(crate) null_bits: Vec<u8>,
    /// Optional metadata TLV block.
    pub(crate) optional: Vec<u8>,
}

impl RawTableMap {
    /// Parses a table map event by serializing it back to its wire form.
    pub(crate) fn from_event(tme: &TableMapEvent<'_>) -> Result<Self, SchemaError> {
        let mut body = Vec::with_capacity(64);
        tme.serialize(&mut body);
        Self::parse(&body, 6)
    }

    /// Parses a table map event body (after the common header, without checksum);
    /// `table_id_len` is 6 (or 4 for post-header length 6).
    pub(crate) fn parse(body: &[u8], table_id_len: usize) -> Result<Self, SchemaError> {
        let mut r = Reader::new(body);
        let err = |db: &str, table: &str, detail: String| SchemaError::Malformed {
            db: db.to_owned(),
            table: table.to_owned(),
            detail,
        };
        let head = (|| -> Result<_, String> {
            let table_id = r.uint_le(table_id_len)?;
            r.skip(2)?; // flags
            let db_len = usize::from(r.u8()?);
            let db = String::from_utf8_lossy(r.take(db_len)?).into_owned();
            r.skip(1)?;
            let table_len = usize::from(r.u8()?);
            let table = String::from_utf8_lossy(r.take(table_len)?).into_owned();
            r.skip(1)?;
            Ok((table_id, db, table))
        })();
        let (table_id, db, table) = head.map_err(|d| err("", "", d))?;
        let rest = (|| -> Result<_, String> {
            let n = r.lenenc_usize()?;
            if n > body.len() {
                return Err(format!("column count {n} exceeds event size"));
            }
            let types = r.take(n)?;
            let meta_len = r.lenenc_usize()?;
            let meta = r.take(meta_len)?;
            let null_bits = r.take(n.div_ceil(8))?.to_vec();
            let optional = r.rest().to_vec();
            let columns = parse_columns(types, meta)?;
            Ok((columns, null_bits, optional))
        })();
        let (columns, null_bits, optional) = rest.map_err(|d| err(&db, &table, d))?;
        Ok(RawTableMap {
            table_id,
            db,
            table,
            columns,
            null_bits,
            optional,
        })
    }

    /// A [`SchemaError::Malformed`] for this table.
    fn malformed(&self, detail: String) -> SchemaError {
        SchemaError::Malformed {
            db: self.db.clone(),
            table: self.table.clone(),
            detail,
        }
    }

    /// Whether column `i` is nullable.
    pub(crate) fn nullable(&self, i: usize) -> bool {
        self.null_bits
            .get(i / 8)
            .is_some_and(|b| b & (1 << (i % 8)) != 0)
    }
}

/// Resolves every column's storage format from its type byte and metadata.
fn parse_columns(types: &[u8], meta: &[u8]) -> Result<Vec<RawColumn>, String> {
    let mut m = Reader::new(meta);
    let mut out = Vec::with_capacity(types.len());
    for (i, &t) in types.iter().enumerate() {
        let meta_len = match t {
            249..=252 | 4 | 5 | 255 | 245 | 17..=19 | 242 => 1,
            15 | 16 | 246..=248 | 254 => 2,
            _ => 0,
        };
        let bytes = m
            .take(meta_len)
            .map_err(|e| format!("metadata of column #{i}: {e}"))?;
        let b0 = bytes.first().copied().unwrap_or(0);
        let b1 = bytes.get(1).copied().unwrap_or(0);
        let real = real_type(t, b0, b1);
        out.push(RawColumn {
            type_code: t,
            meta: [b0, b1],
            real,
        });
    }
    if !m.rest().is_empty() {
        return Err(format!(
            "{} unused bytes of column metadata (column types and metadata disagree)",
            m.rest().len()
        ));
    }
    Ok(out)
}

fn real_type(t: u8, b0: u8, b1: u8) -> RealType {
    let prefix = |p: u8, what: &'static str| {
        if (1..=4).contains(&p) {
            Ok(p)
        } else {
            Err(what)
        }
    };
    let fsp = |f: u8| {
        if f <= 6 {
            Ok(f)
        } else {
            Err("fractional-second precision > 6")
        }
    };
    let r = match t {
        1 => Ok(RealType::Tiny),
        2 => Ok(RealType::Short),
        3 => Ok(RealType::Long),
        4 => Ok(RealType::Float),
        5 => Ok(RealType::Double),
        7 => Ok(RealType::Timestamp),
        8 => Ok(RealType::LongLong),
        9 => Ok(RealType::Int24),
        10 | 14 => Ok(RealType::Date),
        11 => Ok(RealType::Time),
        12 => Ok(RealType::DateTime),
        13 => Ok(RealType::Year),
        15 => Ok(RealType::VarChar {
            max_bytes: u16::from_le_bytes([b0, b1]),
        }),
        16 => {
            let bits = u16::from(b1) * 8 + u16::from(b0);
            if (1..=64).contains(&bits) && b0 < 8 {
                Ok(RealType::Bit { bits })
            } else {
                Err("BIT width outside 1..=64")
            }
        }
        17 => fsp(b0).map(|fsp| RealType::Timestamp2 { fsp }),
        18 => fsp(b0).map(|fsp| RealType::DateTime2 { fsp }),
        19 => fsp(b0).map(|fsp| RealType::Time2 { fsp }),
        242 => prefix(b0, "VECTOR length-prefix size not in 1..=4")
            .map(|prefix| RealType::Vector { prefix }),
        245 => prefix(b0, "JSON length-prefix size not in 1..=4")
            .map(|prefix| RealType::Json { prefix }),
        246 => {
            if (1..=65).contains(&b0) && b1 <= 30 && b1 <= b0 {
                Ok(RealType::NewDecimal {
                    precision: b0,
                    scale: b1,
                })
            } else {
                Err("DECIMAL precision/scale out of range")
            }
        }
        247 => enum_or_set(247, b1),
        248 => enum_or_set(248, b1),
        249..=252 => prefix(b0, "BLOB length-prefix size not in 1..=4")
            .map(|prefix| RealType::Blob { prefix }),
        254 => match b0 {
            247 | 248 => enum_or_set(b0, b1),
            _ if b0 | 0x30 == 254 => {
                let max_bytes = u16::from(b1) | ((u16::from(b0 & 0x30) ^ 0x30) << 4);
                Ok(RealType::Char { max_bytes })
            }
            _ => Err("MYSQL_TYPE_STRING with unexpected real type in its metadata"),
        },
        255 => prefix(b0, "GEOMETRY length-prefix size not in 1..=4")
            .map(|prefix| RealType::Geometry { prefix }),
        0 => Err("pre-5.0 DECIMAL is not supported"),
        6 => Err("MYSQL_TYPE_NULL column"),
        20 => Err("typed arrays are not supported"),
        253 => Err("pre-5.0 VAR_STRING is not supported"),
        _ => Err("unknown column type"),
    };
    r.unwrap_or_else(RealType::Unsupported)
}

fn enum_or_set(real: u8, size: u8) -> Result<RealType, &'static str> {
    if real == 247 {
        if size == 1 || size == 2 {
            Ok(RealType::Enum { size })
        } else {
            Err("ENUM pack length not 1 or 2")
        }
    } else if (1..=8).contains(&size) {
        Ok(RealType::Set { size })
    } else {
        Err("SET pack length not in 1..=8")
    }
}

/// The optional-metadata fields this crate uses.
#[derive(Debug, Default)]
struct OptionalMetadata {
    signedness: Option<Vec<u8>>,
    default_charset: Option<(u16, Vec<(usize, u16)>)>,
    column_charset: Option<Vec<u16>>,
    column_names: Option<Vec<String>>,
    set_values: Option<Vec<Vec<Vec<u8>>>>,
    enum_values: Option<Vec<Vec<Vec<u8>>>>,
    simple_pk: Option<Vec<usize>>,
    pk_with_prefix: Option<Vec<usize>>,
    enum_set_default_charset: Option<(u16, Vec<(usize, u16)>)>,
    enum_set_column_charset: Option<Vec<u16>>,
    vector_dims: Option<Vec<u64>>,
    column_visibility: bool,
}

impl OptionalMetadata {
    fn parse(data: &[u8], columns: usize) -> Result<Self, String> {
        let mut out = OptionalMetadata::default();
        let mut r = Reader::new(data);
        while !r.is_empty() {
            let field = r.u8()?;
            let len = r.lenenc_usize()?;
            let value = r
                .take(len)
                .map_err(|e| format!("optional metadata field {field}: {e}"))?;
            let mut v = Reader::new(value);
            let ctx = |e: String| format!("optional metadata field {field}: {e}");
            match field {
                1 => out.signedness = Some(value.to_vec()),
                2 => out.default_charset = Some(parse_default_charset(&mut v).map_err(ctx)?),
                3 => out.column_charset = Some(parse_lenenc_list_u16(&mut v).map_err(ctx)?),
                4 => {
                    let mut names = Vec::with_capacity(columns);
                    while !v.is_empty() {
                        let l = v.lenenc_usize().map_err(ctx)?;
                        let s = v.take(l).map_err(ctx)?;
                        names.push(String::from_utf8_lossy(s).into_owned());
                    }
                    out.column_names = Some(names);
                }
                5 => out.set_values = Some(parse_str_values(&mut v).map_err(ctx)?),
                6 => out.enum_values = Some(parse_str_values(&mut v).map_err(ctx)?),
                7 => {} // GEOMETRY_TYPE: not needed for decoding or encoding
                8 => {
                    let mut pk = Vec::new();
                    while !v.is_empty() {
                        pk.push(v.lenenc_usize().map_err(ctx)?);
                    }
                    out.simple_pk = Some(pk);
                }
                9 => {
                    let mut pk = Vec::new();
                    while !v.is_empty() {
                        pk.push(v.lenenc_usize().map_err(ctx)?);
                        v.lenenc().map_err(ctx)?; // prefix length
                    }
                    out.pk_with_prefix = Some(pk);
                }
                10 => {
                    out.enum_set_default_charset = Some(parse_default_charset(&mut v).map_err(ctx)?)
                }
                11 => {
                    out.enum_set_column_charset = Some(parse_lenenc_list_u16(&mut v).map_err(ctx)?)
                }
                13 => {
                    let mut dims = Vec::new();
                    while !v.is_empty() {
                        dims.push(v.lenenc().map_err(ctx)?);
                    }
                    out.vector_dims = Some(dims);
                }
                12 => out.column_visibility = true,
                // Future fields: not needed.
                _ => {}
            }
        }
        Ok(out)
    }
}

fn to_u16(x: u64) -> Result<u16, String> {
    u16::try_from(x).map_err(|_| format!("collation id {x} out of range"))
}

fn parse_default_charset(v: &mut Reader<'_>) -> Result<(u16, Vec<(usize, u16)>), String> {
    let def = to_u16(v.lenenc()?)?;
    let mut exceptions = Vec::new();
    while !v.is_empty() {
        let idx = v.lenenc_usize()?;
        let cs = to_u16(v.lenenc()?)?;
        exceptions.push((idx, cs));
    }
    Ok((def, exceptions))
}

fn parse_lenenc_list_u16(v: &mut Reader<'_>) -> Result<Vec<u16>, String> {
    let mut out = Vec::new();
    while !v.is_empty() {
        out.push(to_u16(v.lenenc()?)?);
    }
    Ok(out)
}

fn parse_str_values(v: &mut Reader<'_>) -> Result<Vec<Vec<Vec<u8>>>, String> {
    let mut cols = Vec::new();
    while !v.is_empty() {
        let count = v.lenenc_usize()?;
        if count > v.remaining() {
            return Err(format!("{count} member strings cannot fit"));
        }
        let mut vals = Vec::with_capacity(count);
        for _ in 0..count {
            let l = v.lenenc_usize()?;
            vals.push(v.take(l)?.to_vec());
        }
        cols.push(vals);
    }
    Ok(cols)
}

/// A bounds-checked little-endian byte reader; every method returns `Err` instead
/// of panicking on short input.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// Reads from the start of `data`.
    pub(crate) fn new(data: &'a [u8]) -> Self {
        Reader { data, pos: 0 }
    }

    /// Current offset from the start.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes left.
    pub(crate) fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    /// True when nothing is left.
    pub(crate) fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The unread rest.
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.data.get(self.pos..).unwrap_or(&[])
    }

    /// Takes `n` bytes.
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| {
                format!(
                    "needs {n} bytes at offset {}, only {} left",
                    self.pos,
                    self.remaining()
                )
            })?;
        let s = self.data.get(self.pos..end).unwrap_or(&[]);
        self.pos = end;
        Ok(s)
    }

    /// Skips `n` bytes.
    pub(crate) fn skip(&mut self, n: usize) -> Result<(), String> {
        self.take(n).map(|_| ())
    }

    /// Reads one byte.
    pub(crate) fn u8(&mut self) -> Result<u8, String> {
        self.take(1).map(|s| s.first().copied().unwrap_or(0))
    }

    /// Reads an unsigned little-endian integer of `n` (≤ 8) bytes.
    pub(crate) fn uint_le(&mut self, n: usize) -> Result<u64, String> {
        let s = self.take(n.min(8))?;
        Ok(s.iter()
            .rev()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    /// Reads a length-encoded integer (MySQL `net_field_length`).
    pub(crate) fn lenenc(&mut self) -> Result<u64, String> {
        match self.u8()? {
            x @ 0..=250 => Ok(u64::from(x)),
            0xfc => self.uint_le(2),
            0xfd => self.uint_le(3),
            0xfe => self.uint_le(8),
            x => Err(format!("invalid length-encoded integer prefix {x:#04x}")),
        }
    }

    /// Reads a length-encoded integer that must fit in `usize`.
    pub(crate) fn lenenc_usize(&mut self) -> Result<usize, String> {
        let x = self.lenenc()?;
        usize::try_from(x).map_err(|_| format!("length {x} too large"))
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Builders for hand-made TABLE_MAP events (test-only).

    use mysql_common::binlog::consts::BinlogVersion;
    use mysql_common::binlog::events::{FormatDescriptionEvent, TableMapEvent};
    use mysql_common::binlog::BinlogCtx;
    use mysql_common::io::ParseBuf;

    /// Appends a length-encoded integer.
    pub fn put_lenenc(out: &mut Vec<u8>, x: u64) {
        if x < 251 {
            out.push(x as u8);
        } else if x < 1 << 16 {
            out.push(0xfc);
            out.extend_from_slice(&(x as u16).to_le_bytes());
        } else if x < 1 << 24 {
            out.push(0xfd);
            out.extend_from_slice(&(x as u32).to_le_bytes()[..3]);
        } else {
            out.push(0xfe);
            out.extend_from_slice(&x.to_le_bytes());
        }
    }

    /// One column for [`TableMapBuilder`].
    #[derive(Clone, Debug)]
    pub struct ColSpec {
        pub name: String,
        pub type_code: u8,
        pub meta: Vec<u8>,
        pub nullable: bool,
        pub unsigned: bool,
        pub charset: Option<u16>,
        pub members: Option<Vec<String>>,
    }

    impl ColSpec {
        pub fn new(name: &str, type_code: u8, meta: &[u8]) -> Self {
            ColSpec {
                name: name.to_owned(),
                type_code,
                meta: meta.to_vec(),
                nullable: true,
                unsigned: false,
                charset: None,
                members: None,
            }
        }
        pub fn unsigned(mut self) -> Self {
            self.unsigned = true;
            self
        }
        pub fn not_null(mut self) -> Self {
            self.nullable = false;
            self
        }
        pub fn charset(mut self, cs: u16) -> Self {
            self.charset = Some(cs);
            self
        }
        pub fn members(mut self, m: &[&str]) -> Self {
            self.members = Some(m.iter().map(|s| s.to_string()).collect());
            self
        }
    }

    /// Builds TABLE_MAP bodies with FULL optional metadata, the way MySQL 8 does.
    #[derive(Clone, Debug)]
    pub struct TableMapBuilder {
        pub table_id: u64,
        pub db: String,
        pub table: String,
        pub cols: Vec<ColSpec>,
        pub pk: Vec<usize>,
        pub with_names: bool,
        /// Use the DEFAULT_CHARSET form (true) or COLUMN_CHARSET (false).
        pub default_charset_form: bool,
        /// MariaDB's layout: GEOMETRY is a character column (MySQL's: VECTOR is).
        pub mariadb: bool,
        /// Log no optional metadata at all (MySQL < 8.0.1, MariaDB < 10.5).
        pub no_optional: bool,
    }

    impl TableMapBuilder {
        pub fn new(db: &str, table: &str, cols: Vec<ColSpec>) -> Self {
            TableMapBuilder {
                table_id: 42,
                db: db.into(),
                table: table.into(),
                cols,
                pk: vec![],
                with_names: true,
                default_charset_form: true,
                mariadb: false,
                no_optional: false,
            }
        }

        fn is_enum_set(c: &ColSpec) -> bool {
            c.type_code == 254 && matches!(c.meta.first(), Some(247 | 248))
        }

        fn is_char(&self, c: &ColSpec) -> bool {
            (matches!(c.type_code, 15 | 249..=252 | 254) && !Self::is_enum_set(c))
                || (self.mariadb && c.type_code == 255)
                || (!self.mariadb && c.type_code == 242)
        }

        fn tlv(out: &mut Vec<u8>, t: u8, v: &[u8]) {
            out.push(t);
            put_lenenc(out, v.len() as u64);
            out.extend_from_slice(v);
        }

        fn charset_field(out: &mut Vec<u8>, default_form: bool, t_def: u8, t_col: u8, cs: &[u16]) {
            if cs.is_empty() {
                return;
            }
            let mut v = Vec::new();
            if default_form {
                let def = cs[0];
                put_lenenc(&mut v, u64::from(def));
                for (i, &c) in cs.iter().enumerate() {
                    if c != def {
                        put_lenenc(&mut v, i as u64);
                        put_lenenc(&mut v, u64::from(c));
                    }
                }
                Self::tlv(out, t_def, &v);
            } else {
                for &c in cs {
                    put_lenenc(&mut v, u64::from(c));
                }
                Self::tlv(out, t_col, &v);
            }
        }

        /// The serialized event body (post-header + payload).
        pub fn body(&self) -> Vec<u8> {
            let mut b = Vec::new();
            b.extend_from_slice(&self.table_id.to_le_bytes()[..6]);
            b.extend_from_slice(&[1, 0]);
            b.push(self.db.len() as u8);
            b.extend_from_slice(self.db.as_bytes());
            b.push(0);
            b.push(self.table.len() as u8);
            b.extend_from_slice(self.table.as_bytes());
            b.push(0);
            put_lenenc(&mut b, self.cols.len() as u64);
            for c in &self.cols {
                b.push(c.type_code);
            }
            let meta: Vec<u8> = self.cols.iter().flat_map(|c| c.meta.clone()).collect();
            put_lenenc(&mut b, meta.len() as u64);
            b.extend_from_slice(&meta);
            let mut nulls = vec![0u8; self.cols.len().div_ceil(8)];
            for (i, c) in self.cols.iter().enumerate() {
                if c.nullable {
                    nulls[i / 8] |= 1 << (i % 8);
                }
            }
            b.extend_from_slice(&nulls);
            if self.no_optional {
                return b;
            }
            // optional metadata
            let numeric: Vec<bool> = self
                .cols
                .iter()
                .filter(|c| super::is_numeric_type(c.type_code) || c.type_code == 13)
                .map(|c| c.unsigned)
                .collect();
            if !numeric.is_empty() {
                let mut v = vec![0u8; numeric.len().div_ceil(8)];
                for (k, &u) in numeric.iter().enumerate() {
                    if u {
                        v[k / 8] |= 0x80 >> (k % 8);
                    }
                }
                Self::tlv(&mut b, 1, &v);
            }
            let cs: Vec<u16> = self
                .cols
                .iter()
                .filter(|c| self.is_char(c))
                .map(|c| c.charset.unwrap_or(255))
                .collect();
            Self::charset_field(&mut b, self.default_charset_form, 2, 3, &cs);
            if self.with_names {
                let mut v = Vec::new();
                for c in &self.cols {
                    put_lenenc(&mut v, c.name.len() as u64);
                    v.extend_from_slice(c.name.as_bytes());
                }
                Self::tlv(&mut b, 4, &v);
                for (t, real) in [(5u8, 248u8), (6, 247)] {
                    let mut v = Vec::new();
                    for c in &self.cols {
                        if c.type_code == 254 && c.meta.first() == Some(&real) {
                            let m = c.members.clone().unwrap_or_default();
                            put_lenenc(&mut v, m.len() as u64);
                            for s in m {
                                put_lenenc(&mut v, s.len() as u64);
                                v.extend_from_slice(s.as_bytes());
                            }
                        }
                    }
                    if !v.is_empty() {
                        Self::tlv(&mut b, t, &v);
                    }
                }
                if !self.pk.is_empty() {
                    let mut v = Vec::new();
                    for &i in &self.pk {
                        put_lenenc(&mut v, i as u64);
                    }
                    Self::tlv(&mut b, 8, &v);
                }
                let es: Vec<u16> = self
                    .cols
                    .iter()
                    .filter(|c| Self::is_enum_set(c))
                    .map(|c| c.charset.unwrap_or(255))
                    .collect();
                Self::charset_field(&mut b, self.default_charset_form, 10, 11, &es);
            }
            b
        }

        /// A parsed mysql_common `TableMapEvent` for [`TableMapBuilder::body`].
        pub fn event(&self) -> TableMapEvent<'static> {
            let body = self.body();
            let fde = FormatDescriptionEvent::new(BinlogVersion::Version4);
            let ctx = BinlogCtx::new(body.len() + 19, &fde, 19);
            let mut buf = ParseBuf(&body);
            let ev: TableMapEvent<'_> = buf.parse(ctx).expect("valid table map");
            ev.into_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;

    fn sample() -> TableMapBuilder {
        let cols = vec![
            ColSpec::new("id", 8, &[]).unsigned().not_null(),
            ColSpec::new("name", 15, &[0x90, 0x01]).charset(255),
            ColSpec::new("price", 246, &[10, 2]),
            ColSpec::new("created", 18, &[6]),
            ColSpec::new("mood", 254, &[247, 1]).members(&["happy", "sad"]),
            ColSpec::new("tags", 254, &[248, 1]).members(&["a", "b", "c"]),
            ColSpec::new("bin", 254, &[254, 16]).charset(63),
            ColSpec::new("body", 252, &[2]).charset(8),
            ColSpec::new("doc", 245, &[4]),
            ColSpec::new("flags", 16, &[2, 1]),
            ColSpec::new("y", 13, &[]),
            ColSpec::new("small", 2, &[]),
            ColSpec::new("shape", 255, &[4]),
        ];
        let mut b = TableMapBuilder::new("shop", "orders", cols);
        b.pk = vec![0];
        b
    }

    #[test]
    fn full_metadata_schema() {
        let b = sample();
        let s = TableSchema::from_table_map(&b.event()).unwrap();
        assert_eq!(s.db, "shop");
        assert_eq!(s.table, "orders");
        assert_eq!(s.key_columns(), &[0]);
        let kinds: Vec<_> = s.columns.iter().map(|c| c.kind.clone()).collect();
        assert_eq!(kinds[0], ColumnKind::BigInt { unsigned: true });
        assert_eq!(
            kinds[1],
            ColumnKind::String {
                charset: 255,
                binary: false,
                fixed: false,
                max_bytes: 400
            }
        );
        assert_eq!(
            kinds[2],
            ColumnKind::Decimal {
                precision: 10,
                scale: 2
            }
        );
        assert_eq!(kinds[3], ColumnKind::DateTime { fsp: 6 });
        assert_eq!(
            kinds[4],
            ColumnKind::Enum {
                values: vec!["happy".into(), "sad".into()]
            }
        );
        assert_eq!(
            kinds[5],
            ColumnKind::Set {
                values: vec!["a".into(), "b".into(), "c".into()]
            }
        );
        assert_eq!(
            kinds[6],
            ColumnKind::String {
                charset: 63,
                binary: true,
                fixed: true,
                max_bytes: 16
            }
        );
        assert_eq!(
            kinds[7],
            ColumnKind::Blob {
                charset: 8,
                binary: false
            }
        );
        assert_eq!(kinds[8], ColumnKind::Json);
        assert_eq!(kinds[9], ColumnKind::Bit { bits: 10 });
        assert_eq!(kinds[10], ColumnKind::Year);
        assert_eq!(kinds[11], ColumnKind::SmallInt { unsigned: false });
        assert_eq!(kinds[12], ColumnKind::Geometry);
        assert!(!s.columns[0].nullable);
        assert!(s.columns[1].nullable);
        assert_eq!(s.column_index("doc"), Some(8));
    }

    #[test]
    fn column_charset_form_and_mariadb_geometry() {
        let cols = vec![
            ColSpec::new("g", 255, &[4]).charset(63),
            ColSpec::new("a", 15, &[40, 0]).charset(8),
            ColSpec::new("b", 15, &[40, 0]).charset(33),
        ];
        for default_form in [true, false] {
            let mut b = TableMapBuilder::new("d", "t", cols.clone());
            b.mariadb = true;
            b.default_charset_form = default_form;
            let s = TableSchema::from_table_map(&b.event()).unwrap();
            assert_eq!(s.columns[1].kind.charset(), Some(8), "form {default_form}");
            assert_eq!(s.columns[2].kind.charset(), Some(33), "form {default_form}");
            let s =
                TableSchema::from_table_map_with_flavor(&b.event(), ServerFlavor::MariaDb).unwrap();
            assert_eq!(s.columns[1].kind.charset(), Some(8));
            b.mariadb = false;
            let s = TableSchema::from_table_map(&b.event()).unwrap();
            assert_eq!(s.columns[1].kind.charset(), Some(8));
            assert_eq!(s.columns[2].kind.charset(), Some(33));
        }
    }

    #[test]
    fn geometry_between_text_columns_auto_flavor() {
        let cols = vec![
            ColSpec::new("a", 15, &[40, 0]).charset(33),
            ColSpec::new("g", 255, &[4]).charset(63),
            ColSpec::new("b", 15, &[40, 0]).charset(33),
        ];
        for mariadb in [true, false] {
            let mut b = TableMapBuilder::new("d", "t", cols.clone());
            b.mariadb = mariadb;
            let s = TableSchema::from_table_map(&b.event()).unwrap();
            assert_eq!(s.columns[0].kind.charset(), Some(33), "mariadb {mariadb}");
            assert_eq!(s.columns[2].kind.charset(), Some(33), "mariadb {mariadb}");
        }
        // COLUMN_VISIBILITY (MySQL >= 8.0.23) forces the MySQL reading
        let mut b = TableMapBuilder::new("d", "t", cols);
        let mut body = b.body();
        body.extend_from_slice(&[12, 1, 0xe0]);
        let raw = RawTableMap::parse(&body, 6).unwrap();
        let s = TableSchema::from_raw(&raw, ServerFlavor::Auto).unwrap();
        assert_eq!(s.columns[2].kind.charset(), Some(33));
        b.mariadb = true;
        let raw = RawTableMap::parse(&b.body(), 6).unwrap();
        let s = TableSchema::from_raw(&raw, ServerFlavor::MySql).unwrap();
        // explicit (wrong) flavor is obeyed
        assert_eq!(s.columns[2].kind.charset(), Some(63));
    }

    #[test]
    fn year_has_a_signedness_bit() {
        let cols = vec![
            ColSpec::new("y", 13, &[]).unsigned(),
            ColSpec::new("a", 3, &[]),
            ColSpec::new("b", 3, &[]).unsigned(),
        ];
        let b = TableMapBuilder::new("d", "t", cols);
        // What both servers log (see `signedness`).
        assert!(b.body().windows(3).any(|w| w == [1, 1, 0xa0]));
        for flavor in [
            ServerFlavor::MySql,
            ServerFlavor::MariaDb,
            ServerFlavor::Auto,
        ] {
            let s = TableSchema::from_table_map_with_flavor(&b.event(), flavor).unwrap();
            assert!(!s.columns[1].kind.is_unsigned(), "{flavor:?}");
            assert!(s.columns[2].kind.is_unsigned(), "{flavor:?}");
        }
        // A field that only fits without YEAR is read without it.
        let cols: Vec<_> = (0..8)
            .map(|i| ColSpec::new(&format!("c{i}"), 3, &[]))
            .chain([ColSpec::new("y", 13, &[])])
            .collect();
        let raw = RawTableMap::parse(&TableMapBuilder::new("d", "t", cols).body(), 6).unwrap();
        let u = signedness(&raw, Some(&[0x01])).unwrap();
        assert_eq!(u.iter().filter(|&&x| x).count(), 1);
        assert!(u[7]);
        let e = signedness(&raw, Some(&[0, 0, 0])).unwrap_err();
        assert!(e.contains("SIGNEDNESS"), "{e}");
    }

    #[test]
    fn mysql_counts_vector_as_a_character_column() {
        let cols = vec![
            ColSpec::new("a", 15, &[12, 0]).charset(255),
            ColSpec::new("v", 242, &[4]).charset(63),
            ColSpec::new("b", 15, &[3, 0]).charset(8),
        ];
        for default_form in [true, false] {
            let mut b = TableMapBuilder::new("d", "t", cols.clone());
            b.default_charset_form = default_form;
            for flavor in [ServerFlavor::MySql, ServerFlavor::Auto] {
                let s = TableSchema::from_table_map_with_flavor(&b.event(), flavor).unwrap();
                assert_eq!(s.columns[0].kind.charset(), Some(255));
                assert_eq!(
                    s.columns[2].kind.charset(),
                    Some(8),
                    "{flavor:?} {default_form}"
                );
            }
        }
    }

    #[test]
    fn long_char_metadata() {
        // CHAR(255) utf8mb4 = 1020 bytes: byte0 = 0xfe ^ ((1020 >> 4) & 0x30)
        let len: u16 = 1020;
        let b0 = 0xfe ^ (((len >> 4) & 0x30) as u8);
        let b1 = (len & 0xff) as u8;
        let b = TableMapBuilder::new("d", "t", vec![ColSpec::new("c", 254, &[b0, b1])]);
        let s = TableSchema::from_table_map(&b.event()).unwrap();
        assert_eq!(
            s.columns[0].kind,
            ColumnKind::String {
                charset: 255,
                binary: false,
                fixed: true,
                max_bytes: 1020
            }
        );
    }

    #[test]
    fn no_full_metadata_error_mentions_setting() {
        let mut b = sample();
        b.with_names = false;
        let e = TableSchema::from_table_map(&b.event()).unwrap_err();
        assert!(matches!(e, SchemaError::NoFullMetadata { .. }));
        let msg = e.to_string();
        assert!(msg.contains("binlog_row_metadata=FULL"), "{msg}");
        assert!(msg.contains("`shop`.`orders`"), "{msg}");
    }

    #[test]
    fn unsupported_type_is_named() {
        let b = TableMapBuilder::new("d", "t", vec![ColSpec::new("old", 0, &[])]);
        let e = TableSchema::from_table_map(&b.event()).unwrap_err();
        assert!(e.to_string().contains("`old`"), "{e}");
    }

    #[test]
    fn signedness_is_per_numeric_column_msb_first() {
        let cols: Vec<_> = (0..10)
            .map(|i| {
                let c = ColSpec::new(&format!("c{i}"), 3, &[]);
                if i % 3 == 0 {
                    c.unsigned()
                } else {
                    c
                }
            })
            .chain([
                ColSpec::new("y", 13, &[]),
                ColSpec::new("z", 3, &[]).unsigned(),
            ])
            .collect();
        let b = TableMapBuilder::new("d", "t", cols);
        let s = TableSchema::from_table_map(&b.event()).unwrap();
        for (i, c) in s.columns.iter().enumerate().take(10) {
            assert_eq!(c.kind.is_unsigned(), i % 3 == 0, "column {i}");
        }
        assert!(s.columns[11].kind.is_unsigned());
    }

    #[test]
    fn malformed_inputs_error_not_panic() {
        let body = sample().body();
        for cut in 0..body.len() {
            let _ = RawTableMap::parse(&body[..cut], 6)
                .and_then(|raw| TableSchema::from_raw(&raw, ServerFlavor::Auto));
        }
        // flipping bytes never panics
        for i in 0..body.len() {
            let mut b = body.clone();
            b[i] ^= 0xff;
            let _ = RawTableMap::parse(&b, 6)
                .and_then(|raw| TableSchema::from_raw(&raw, ServerFlavor::Auto));
        }
    }

    /// The tracked definition of [`sample`]'s table.
    fn sample_def() -> TableDef {
        let d = ddl::parse_ddl(
            Some("shop"),
            "CREATE TABLE orders (id BIGINT UNSIGNED NOT NULL, name VARCHAR(100) CHARACTER SET \
             latin1, price DECIMAL(10,2), created DATETIME(6), mood ENUM('happy','sad'), tags \
             SET('a','b','c'), `bin` BINARY(16), body TEXT CHARACTER SET utf8mb4, doc JSON, \
             flags BIT(10), y YEAR, small SMALLINT, shape GEOMETRY, PRIMARY KEY (id))",
        );
        match d {
            ddl::DdlParse::Changes(mut c) => match c.remove(0) {
                ddl::DdlChange::CreateTable { def, .. } => def,
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn tracked_def_supplies_what_the_map_lacks() {
        let def = sample_def();
        let full = TableSchema::from_table_map(&sample().event()).unwrap();
        // MINIMAL: types, signedness and charsets logged; names, members, key from the def.
        let mut b = sample();
        b.with_names = false;
        let s =
            TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::MySql, &def).unwrap();
        let mut want = full.clone();
        // The sample map logs utf8mb4 (255) for `name`; the def's latin1 is not used.
        assert_eq!(s, want, "MINIMAL + def gives the FULL schema");
        // No optional metadata at all: signedness and charsets come from the def too.
        b.no_optional = true;
        let s =
            TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::MySql, &def).unwrap();
        want.columns[1].kind = ColumnKind::String {
            charset: 8,
            binary: false,
            fixed: false,
            max_bytes: 400,
        };
        want.columns[7].kind = ColumnKind::Blob {
            charset: 45,
            binary: false,
        };
        want.columns[4].kind = ColumnKind::Enum {
            values: vec!["happy".into(), "sad".into()],
        };
        assert_eq!(s, want);
        assert!(
            s.columns[0].kind.is_unsigned(),
            "BIGINT UNSIGNED from the def"
        );
        assert_eq!(s.key_columns(), &[0]);
        // FULL: the map wins, and still agrees with the def.
        let s = TableSchema::from_table_map_with_def(&sample().event(), ServerFlavor::MySql, &def)
            .unwrap();
        assert_eq!(s, full);
    }

    #[test]
    fn tracked_def_mismatches_are_explained() {
        let def = sample_def();
        let mut b = sample();
        b.with_names = false;
        // A type the map does not have.
        let mut d = def.clone();
        d.columns[1] = tracked::ColumnDef::new("name", "int");
        let e =
            TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::Auto, &d).unwrap_err();
        assert!(
            matches!(&e, SchemaMismatch::ColumnType(m) if m.index == 1),
            "{e:?}"
        );
        let msg = e.to_string();
        for part in [
            "`shop`.`orders`",
            "#1 `name`",
            "tracked as `int`",
            "VARCHAR",
            "binlog_row_metadata=FULL",
        ] {
            assert!(msg.contains(part), "{part}: {msg}");
        }
        // Signedness logged (MINIMAL) and different.
        let mut d = def.clone();
        d.columns[0] = tracked::ColumnDef::new("id", "bigint");
        let e =
            TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::Auto, &d).unwrap_err();
        assert!(e.to_string().contains("BIGINT UNSIGNED"), "{e}");
        // Without signedness in the map the def decides.
        b.no_optional = true;
        let s = TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::Auto, &d).unwrap();
        assert!(!s.columns[0].kind.is_unsigned());
        // DECIMAL precision, DATETIME precision, BIT width, ENUM/SET size.
        for (i, ty) in [
            (2, "decimal(12,2)"),
            (3, "datetime(3)"),
            (9, "bit(9)"),
            (5, "set('a','b','c','d','e','f','g','h','i')"),
        ] {
            let mut d = def.clone();
            d.columns[i] = tracked::ColumnDef::new(def.columns[i].name.clone(), ty);
            let e = TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::Auto, &d)
                .unwrap_err();
            assert!(
                matches!(e, SchemaMismatch::ColumnType { .. }),
                "{ty}: {e:?}"
            );
        }
        let mut d = def.clone();
        let many: Vec<String> = (0..300).map(|i| format!("m{i}")).collect();
        d.columns[4] =
            tracked::ColumnDef::new("mood", format!("enum({})", tracked::quote_members(&many)));
        assert!(TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::Auto, &d).is_err());
        // Column count.
        let mut d = def.clone();
        d.columns.pop();
        let e =
            TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::Auto, &d).unwrap_err();
        assert!(
            matches!(
                e,
                SchemaMismatch::ColumnCount {
                    logged: 13,
                    tracked: 12,
                    ..
                }
            ),
            "{e:?}"
        );
        // Names are checked when logged (case-insensitively).
        let mut d = def.clone();
        d.columns[1].name = "NAME".into();
        assert!(
            TableSchema::from_table_map_with_def(&sample().event(), ServerFlavor::Auto, &d).is_ok()
        );
        d.columns[1].name = "title".into();
        let e = TableSchema::from_table_map_with_def(&sample().event(), ServerFlavor::Auto, &d)
            .unwrap_err();
        assert!(
            e.to_string().contains("`name` in the binlog but `title`"),
            "{e}"
        );
        // Another table's definition.
        let mut d = def.clone();
        d.table = "other".into();
        assert!(matches!(
            TableSchema::from_table_map_with_def(&sample().event(), ServerFlavor::Auto, &d),
            Err(SchemaMismatch::Table { .. })
        ));
        // A key column that does not exist.
        let mut d = def;
        d.primary_key = vec!["ghost".into()];
        let e =
            TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::Auto, &d).unwrap_err();
        assert!(e.to_string().contains("`ghost`"), "{e}");
    }

    #[test]
    fn tracked_def_special_types() {
        // MariaDB UUID/INET6/INET4 are fixed binary strings; its JSON is a LONGTEXT.
        let cols = vec![
            ColSpec::new("u", 254, &[254, 16]),
            ColSpec::new("i4", 254, &[254, 4]),
            ColSpec::new("j", 252, &[4]),
            ColSpec::new("v", 242, &[4]),
        ];
        let mut b = TableMapBuilder::new("d", "t", cols);
        b.no_optional = true;
        let mut def = TableDef::new("d", "t");
        def.columns = vec![
            tracked::ColumnDef::new("u", "uuid"),
            tracked::ColumnDef::new("i4", "inet4"),
            tracked::ColumnDef::new("j", "json"),
            tracked::ColumnDef::new("v", "vector(3)"),
        ];
        let s =
            TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::MariaDb, &def).unwrap();
        assert!(matches!(
            s.columns[0].kind,
            ColumnKind::String { binary: true, .. }
        ));
        assert!(matches!(
            s.columns[2].kind,
            ColumnKind::Blob { binary: false, .. }
        ));
        assert_eq!(
            s.columns[3].kind,
            ColumnKind::Vector {
                dimensions: Some(3)
            }
        );
        def.columns[0] = tracked::ColumnDef::new("u", "inet4");
        assert!(
            TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::MariaDb, &def).is_err()
        );
    }

    #[test]
    fn reader_lenenc() {
        let mut v = Vec::new();
        for x in [0u64, 250, 251, 65535, 65536, 1 << 24, u64::MAX] {
            put_lenenc(&mut v, x);
        }
        let mut r = Reader::new(&v);
        for x in [0u64, 250, 251, 65535, 65536, 1 << 24, u64::MAX] {
            assert_eq!(r.lenenc().unwrap(), x);
        }
        assert!(r.lenenc().is_err());
        assert!(Reader::new(&[0xfb]).lenenc().is_err());
    }
}
