//! Avro schemas derived from a table, and the per-column plan the binary writer follows.
//!
//! Built once per table version ([`AvroTable::new`]); the schema text and the plan come from
//! the same `Enc` per column, so what is registered and what is written cannot disagree.
//!
//! Names: `<ns>` is the route's topic made into an Avro namespace (each `.`-separated part
//! with characters outside `[A-Za-z0-9_]` replaced by `_`, `_` put before a leading digit,
//! an empty part becoming `_`). Records: `<ns>.Key` (key columns), `<ns>.Value` (all
//! columns), `<ns>.Envelope` (`before`, `after`, `source`, `transaction`, `op`, `ts_ms`,
//! `ts_us`, `ts_ns`: Debezium 3.5's order, [`crate::encode::envelope`]; the fields sluice added
//! after its first release are nullable with a `null` default, so a registry in BACKWARD mode
//! accepts the new version of an existing subject),
//! `io.debezium.connector.mysql.Source`, `event.block`, `io.debezium.data.geometry.Geometry`,
//! and with [`AvroOptions::enum_as_avro_enum`] one enum `<ns>.<field>_enum` per ENUM column.
//! Field names are column names made into Avro names the same way; two columns whose names
//! become the same field name are an error.
//!
//! The schema text is compact JSON with a fixed attribute order, the same bytes for the same
//! table shape (so a registry sees one schema, not a new one per restart).

use std::collections::HashSet;

use crate::error::{Error, Result};
use crate::schema::{charset_kind, CharsetKind, Column, ColumnKind, TableSchema};

/// Avro encoding options of a route.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AvroOptions {
    /// Write ENUM columns as Avro `enum`s instead of strings. Every member must then be a
    /// valid Avro symbol (`[A-Za-z_][A-Za-z0-9_]*`), and a row holding MySQL's invalid-value
    /// empty string (index 0) cannot be written.
    pub enum_as_avro_enum: bool,
}

/// One schema document: its JSON text (to register) and its record's full name (for
/// `RecordNameStrategy` subjects).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AvroDoc {
    /// The schema as compact JSON text.
    pub schema_json: String,
    /// Full name of the top-level record, e.g. `shop.customers.Envelope`.
    pub full_name: String,
}

/// Everything the Avro encoder needs for one table version.
#[derive(Debug)]
pub struct AvroTable {
    /// Key schema (`<ns>.Key`); `None` for tables without key columns (null Kafka key).
    pub key: Option<AvroDoc>,
    /// Value schema (`<ns>.Envelope`).
    pub value: AvroDoc,
    /// The namespace derived from the topic.
    pub namespace: String,
    /// Per table column: how its values are written.
    pub(crate) columns: Vec<ColPlan>,
    /// Key column indexes (into `columns`), in key order.
    pub(crate) key_idx: Vec<usize>,
    /// `source.db` as an encoded Avro string.
    pub(crate) db: Vec<u8>,
    /// `source.table` as an encoded Avro string.
    pub(crate) table: Vec<u8>,
    /// `db.table`, for error messages.
    pub(crate) qualified: String,
}

/// How one column is written.
#[derive(Debug, Clone)]
pub(crate) struct ColPlan {
    /// Column name as in the table (for messages).
    pub name: String,
    /// The Avro field name.
    pub field: String,
    /// Written as `["null", T]` (the column is nullable, or it is a DATE/DATETIME whose zero
    /// value is written as null).
    pub nullable: bool,
    /// The non-null type.
    pub enc: Enc,
}

/// The non-null Avro type of a column and how a value becomes it.
#[derive(Debug, Clone)]
pub(crate) enum Enc {
    /// `int` from a signed or unsigned integer that fits (TINYINT..INT, unsigned up to
    /// MEDIUMINT).
    Int,
    /// `long` (BIGINT, INT UNSIGNED).
    Long,
    /// `bytes`/`decimal(20,0)` (BIGINT UNSIGNED).
    U64Decimal,
    /// `bytes`/`decimal(p,s)` from the decimal text.
    Decimal { precision: u8, scale: u8 },
    /// `float`.
    Float,
    /// `double`.
    Double,
    /// `int`/`date`: days since 1970-01-01; zero dates are null.
    Date,
    /// `long` microseconds (`io.debezium.time.MicroTime`), negative allowed.
    Time,
    /// `long`/`local-timestamp-micros`; zero dates are null.
    DateTime,
    /// `long`/`timestamp-micros`.
    Timestamp,
    /// `int`.
    Year,
    /// `string` decoded from the column charset.
    Text { charset: u16 },
    /// `bytes` as stored.
    Bytes,
    /// `string`: the member (empty for MySQL's invalid-value index 0).
    EnumString { values: Vec<String> },
    /// Avro `enum`: the member's position.
    EnumSymbol { values: Vec<String> },
    /// `array` of `string`: members present, in definition order.
    Set { values: Vec<String> },
    /// `string` holding JSON text (`io.debezium.data.Json`).
    Json,
    /// `string`: MariaDB's UUID as its text (`io.debezium.data.Uuid`).
    Uuid,
    /// `string`: MariaDB's INET6 as the text the server prints.
    Inet6,
    /// `string`: MariaDB's INET4 as `a.b.c.d`.
    Inet4,
    /// `boolean` (BIT(1)).
    Bool,
    /// `bytes`: the ⌈n/8⌉ bytes of a BIT(n), least significant first (`io.debezium.data.Bits`).
    Bits { bits: u16 },
    /// `io.debezium.data.geometry.Geometry` record: `wkb` bytes, `srid` nullable int.
    Geometry,
    /// `io.debezium.data.geometry.Point` record: `x`, `y` doubles, `wkb` nullable bytes,
    /// `srid` nullable int.
    Point,
    /// `array` of `float` (`io.debezium.data.FloatVector`).
    Vector,
}

/// Full name of the geometry record.
pub const GEOMETRY_NAME: &str = "io.debezium.data.geometry.Geometry";

/// Full name of the point record.
pub const POINT_NAME: &str = "io.debezium.data.geometry.Point";

/// The `source` block record (same fields and order as the JSON envelope's `source`).
pub const SOURCE_SCHEMA: &str = concat!(
    r#"{"type":"record","name":"Source","namespace":"io.debezium.connector.mysql","fields":["#,
    r#"{"name":"version","type":"string"},"#,
    r#"{"name":"connector","type":"string"},"#,
    r#"{"name":"name","type":"string"},"#,
    r#"{"name":"ts_ms","type":"long"},"#,
    r#"{"name":"snapshot","type":{"type":"string","connect.version":1,"#,
    r#""connect.parameters":{"allowed":"true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"},"#,
    r#""connect.default":"false","connect.name":"io.debezium.data.Enum"},"default":"false"},"#,
    r#"{"name":"db","type":"string"},"#,
    r#"{"name":"sequence","type":["null","string"],"default":null},"#,
    r#"{"name":"ts_us","type":["null","long"],"default":null},"#,
    r#"{"name":"ts_ns","type":["null","long"],"default":null},"#,
    r#"{"name":"table","type":"string"},"#,
    r#"{"name":"server_id","type":"long"},"#,
    r#"{"name":"gtid","type":["null","string"],"default":null},"#,
    r#"{"name":"file","type":"string"},"#,
    r#"{"name":"pos","type":"long"},"#,
    r#"{"name":"row","type":"int"},"#,
    r#"{"name":"thread","type":["null","long"],"default":null},"#,
    r#"{"name":"query","type":["null","string"],"default":null}"#,
    r#"],"connect.name":"io.debezium.connector.mysql.Source"}"#
);

/// The envelope's `transaction` block record.
pub const TRANSACTION_SCHEMA: &str = concat!(
    r#"{"type":"record","name":"block","namespace":"event","fields":["#,
    r#"{"name":"id","type":"string"},"#,
    r#"{"name":"total_order","type":"long"},"#,
    r#"{"name":"data_collection_order","type":"long"}"#,
    r#"],"connect.version":1,"connect.name":"event.block"}"#
);

const GEOMETRY_SCHEMA: &str = concat!(
    r#"{"type":"record","name":"Geometry","namespace":"io.debezium.data.geometry","fields":["#,
    r#"{"name":"wkb","type":"bytes"},"#,
    r#"{"name":"srid","type":["null","int"],"default":null}"#,
    r#"],"connect.version":1,"connect.name":"io.debezium.data.geometry.Geometry"}"#
);

/// Debezium's `io.debezium.data.geometry.Point` (version 1), fields in its order.
const POINT_SCHEMA: &str = concat!(
    r#"{"type":"record","name":"Point","namespace":"io.debezium.data.geometry","fields":["#,
    r#"{"name":"x","type":"double"},"#,
    r#"{"name":"y","type":"double"},"#,
    r#"{"name":"wkb","type":["null","bytes"],"default":null},"#,
    r#"{"name":"srid","type":["null","int"],"default":null}"#,
    r#"],"connect.version":1,"connect.name":"io.debezium.data.geometry.Point"}"#
);

/// One Avro name: characters outside `[A-Za-z0-9_]` become `_`, a leading digit gets a `_`
/// before it, the empty string becomes `_`.
pub fn avro_name(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 1);
    if s.chars().next().is_none_or(|c| c.is_ascii_digit()) {
        out.push('_');
    }
    out.extend(s.chars().map(|c| {
        if c.is_ascii_alphanumeric() || c == '_' {
            c
        } else {
            '_'
        }
    }));
    out
}

/// An Avro namespace from a topic name: each `.`-separated part made an [`avro_name`].
pub fn avro_namespace(topic: &str) -> String {
    topic
        .split('.')
        .map(avro_name)
        .collect::<Vec<_>>()
        .join(".")
}

/// Whether `s` is a valid Avro name / enum symbol.
pub fn is_avro_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Appends `s` as a JSON string.
fn push_str(out: &mut String, s: &str) {
    // Serializing a str cannot fail.
    out.push_str(&serde_json::to_string(s).unwrap_or_default());
}

impl AvroTable {
    /// Derives the schemas and the writing plan of a table routed to `topic`.
    ///
    /// Errors (definite, naming the table): two columns whose field names collide, a key
    /// index out of range, an ENUM member that is not an Avro symbol when
    /// `enum_as_avro_enum` is set.
    pub fn new(
        schema: &TableSchema,
        key_idx: &[usize],
        topic: &str,
        opts: AvroOptions,
    ) -> Result<AvroTable> {
        let qualified = format!("{}.{}", schema.db, schema.table);
        let ns = avro_namespace(topic);
        let mut columns: Vec<ColPlan> = Vec::with_capacity(schema.columns.len());
        for col in &schema.columns {
            let field = avro_name(&col.name);
            if let Some(other) = columns.iter().find(|p| p.field == field) {
                return Err(Error::definite(format!(
                    "table {qualified}: columns `{}` and `{}` both become the Avro field name \
                     `{field}` (names are reduced to [A-Za-z0-9_]); rename one of them or use \
                     format = \"json\" for this table",
                    other.name, col.name
                )));
            }
            let enc = plan_column(col, opts).map_err(|e| {
                Error::definite(format!("table {qualified}, column `{}`: {e}", col.name))
            })?;
            let nullable = col.nullable || matches!(enc, Enc::Date | Enc::DateTime);
            columns.push(ColPlan {
                name: col.name.clone(),
                field,
                nullable,
                enc,
            });
        }
        if let Some(&bad) = key_idx.iter().find(|&&i| i >= columns.len()) {
            return Err(Error::definite(format!(
                "table {qualified}: key column index {bad} is out of range ({} columns)",
                columns.len()
            )));
        }

        let key = if key_idx.is_empty() {
            None
        } else {
            let full_name = format!("{ns}.Key");
            let mut s = String::with_capacity(64 + 48 * key_idx.len());
            let mut defined = HashSet::new();
            record_json(
                &mut s,
                "Key",
                &ns,
                key_idx.iter().filter_map(|&i| columns.get(i)),
                &mut defined,
            );
            Some(AvroDoc {
                schema_json: s,
                full_name,
            })
        };

        let mut s = String::with_capacity(1024 + 48 * columns.len());
        let mut defined = HashSet::new();
        s.push_str(r#"{"type":"record","name":"Envelope","namespace":"#);
        push_str(&mut s, &ns);
        s.push_str(r#","fields":[{"name":"before","type":["null","#);
        record_json(&mut s, "Value", &ns, columns.iter(), &mut defined);
        s.push_str(r#"],"default":null},{"name":"after","type":["null","#);
        push_str(&mut s, &format!("{ns}.Value"));
        s.push_str(r#"],"default":null},{"name":"source","type":"#);
        s.push_str(SOURCE_SCHEMA);
        s.push_str(r#"},{"name":"transaction","type":["null","#);
        s.push_str(TRANSACTION_SCHEMA);
        s.push_str(r#"],"default":null},{"name":"op","type":"string"},"#);
        s.push_str(r#"{"name":"ts_ms","type":["null","long"],"default":null},"#);
        s.push_str(r#"{"name":"ts_us","type":["null","long"],"default":null},"#);
        s.push_str(r#"{"name":"ts_ns","type":["null","long"],"default":null}],"connect.name":"#);
        push_str(&mut s, &format!("{ns}.Envelope"));
        s.push('}');
        let value = AvroDoc {
            schema_json: s,
            full_name: format!("{ns}.Envelope"),
        };

        let mut db = Vec::new();
        super::wire::put_str(&mut db, &schema.db);
        let mut table = Vec::new();
        super::wire::put_str(&mut table, &schema.table);
        Ok(AvroTable {
            key,
            value,
            namespace: ns,
            columns,
            key_idx: key_idx.to_vec(),
            db,
            table,
            qualified,
        })
    }
}

/// The plan of one column.
fn plan_column(col: &Column, opts: AvroOptions) -> std::result::Result<Enc, String> {
    Ok(match &col.kind {
        ColumnKind::TinyInt { .. }
        | ColumnKind::SmallInt { .. }
        | ColumnKind::MediumInt { .. }
        | ColumnKind::Int { unsigned: false } => Enc::Int,
        ColumnKind::Int { unsigned: true } | ColumnKind::BigInt { unsigned: false } => Enc::Long,
        ColumnKind::BigInt { unsigned: true } => Enc::U64Decimal,
        ColumnKind::Decimal { precision, scale } => {
            if *precision == 0 || scale > precision {
                return Err(format!(
                    "DECIMAL({precision},{scale}) is not a valid decimal type"
                ));
            }
            Enc::Decimal {
                precision: *precision,
                scale: *scale,
            }
        }
        ColumnKind::Float => Enc::Float,
        ColumnKind::Double => Enc::Double,
        ColumnKind::Date => Enc::Date,
        ColumnKind::Time { .. } => Enc::Time,
        ColumnKind::DateTime { .. } => Enc::DateTime,
        ColumnKind::Timestamp { .. } => Enc::Timestamp,
        ColumnKind::Year => Enc::Year,
        ColumnKind::String { charset, .. } | ColumnKind::Blob { charset, .. } => {
            if charset_kind(*charset) == CharsetKind::Binary {
                Enc::Bytes
            } else {
                Enc::Text { charset: *charset }
            }
        }
        ColumnKind::Enum { values } => {
            if opts.enum_as_avro_enum {
                let mut seen = HashSet::new();
                for v in values {
                    if !is_avro_name(v) {
                        return Err(format!(
                            "ENUM member {v:?} is not a valid Avro enum symbol \
                             ([A-Za-z_][A-Za-z0-9_]*); turn `enum_as_avro_enum` off to write \
                             ENUMs as strings"
                        ));
                    }
                    if !seen.insert(v.as_str()) {
                        return Err(format!("ENUM member {v:?} appears twice"));
                    }
                }
                Enc::EnumSymbol {
                    values: values.clone(),
                }
            } else {
                Enc::EnumString {
                    values: values.clone(),
                }
            }
        }
        ColumnKind::Set { values } => Enc::Set {
            values: values.clone(),
        },
        ColumnKind::Json => Enc::Json,
        ColumnKind::Uuid => Enc::Uuid,
        ColumnKind::Inet6 => Enc::Inet6,
        ColumnKind::Inet4 => Enc::Inet4,
        ColumnKind::Bit { bits: 1 } => Enc::Bool,
        ColumnKind::Bit { bits } => Enc::Bits { bits: *bits },
        ColumnKind::Geometry => Enc::Geometry,
        ColumnKind::Point => Enc::Point,
        ColumnKind::Vector { .. } => Enc::Vector,
    })
}

/// Appends a record schema with one field per column plan.
fn record_json<'a>(
    s: &mut String,
    name: &str,
    ns: &str,
    cols: impl Iterator<Item = &'a ColPlan>,
    defined: &mut HashSet<String>,
) {
    s.push_str(r#"{"type":"record","name":"#);
    push_str(s, name);
    s.push_str(r#","namespace":"#);
    push_str(s, ns);
    s.push_str(r#","fields":["#);
    for (n, col) in cols.enumerate() {
        if n > 0 {
            s.push(',');
        }
        s.push_str(r#"{"name":"#);
        push_str(s, &col.field);
        s.push_str(r#","type":"#);
        if col.nullable {
            s.push_str(r#"["null","#);
        }
        type_json(s, col, ns, defined);
        if col.nullable {
            s.push_str(r#"],"default":null"#);
        }
        s.push('}');
    }
    s.push_str(r#"],"connect.name":"#);
    push_str(s, &format!("{ns}.{name}"));
    s.push('}');
}

/// Appends the non-null type of a column; named types are defined at their first use in a
/// document and referenced by full name after that.
fn type_json(s: &mut String, col: &ColPlan, ns: &str, defined: &mut HashSet<String>) {
    match &col.enc {
        Enc::Int | Enc::Year => s.push_str(r#""int""#),
        Enc::Long => s.push_str(r#""long""#),
        Enc::U64Decimal => {
            s.push_str(r#"{"type":"bytes","logicalType":"decimal","precision":20,"scale":0}"#)
        }
        Enc::Decimal { precision, scale } => {
            s.push_str(&format!(
                r#"{{"type":"bytes","logicalType":"decimal","precision":{precision},"scale":{scale}}}"#
            ));
        }
        Enc::Float => s.push_str(r#""float""#),
        Enc::Double => s.push_str(r#""double""#),
        Enc::Date => s.push_str(r#"{"type":"int","logicalType":"date"}"#),
        Enc::Time => s.push_str(
            r#"{"type":"long","connect.version":1,"connect.name":"io.debezium.time.MicroTime"}"#,
        ),
        Enc::DateTime => s.push_str(r#"{"type":"long","logicalType":"local-timestamp-micros"}"#),
        Enc::Timestamp => s.push_str(r#"{"type":"long","logicalType":"timestamp-micros"}"#),
        Enc::Text { .. } | Enc::EnumString { .. } => s.push_str(r#""string""#),
        Enc::Bytes => s.push_str(r#""bytes""#),
        Enc::EnumSymbol { values } => {
            let name = format!("{}_enum", col.field);
            let full = format!("{ns}.{name}");
            if defined.insert(full.clone()) {
                s.push_str(r#"{"type":"enum","name":"#);
                push_str(s, &name);
                s.push_str(r#","namespace":"#);
                push_str(s, ns);
                s.push_str(r#","symbols":["#);
                for (i, v) in values.iter().enumerate() {
                    if i > 0 {
                        s.push(',');
                    }
                    push_str(s, v);
                }
                s.push_str("]}");
            } else {
                push_str(s, &full);
            }
        }
        Enc::Set { .. } => s.push_str(r#"{"type":"array","items":"string"}"#),
        Enc::Json => s.push_str(
            r#"{"type":"string","connect.version":1,"connect.name":"io.debezium.data.Json"}"#,
        ),
        Enc::Uuid => s.push_str(
            r#"{"type":"string","connect.version":1,"connect.name":"io.debezium.data.Uuid"}"#,
        ),
        Enc::Inet6 | Enc::Inet4 => s.push_str(r#""string""#),
        Enc::Bool => s.push_str(r#""boolean""#),
        Enc::Bits { bits } => {
            s.push_str(&format!(
                r#"{{"type":"bytes","connect.version":1,"connect.parameters":{{"length":"{bits}"}},"connect.name":"io.debezium.data.Bits"}}"#
            ));
        }
        Enc::Geometry => {
            if defined.insert(GEOMETRY_NAME.to_string()) {
                s.push_str(GEOMETRY_SCHEMA);
            } else {
                push_str(s, GEOMETRY_NAME);
            }
        }
        Enc::Point => {
            if defined.insert(POINT_NAME.to_string()) {
                s.push_str(POINT_SCHEMA);
            } else {
                push_str(s, POINT_NAME);
            }
        }
        Enc::Vector => s.push_str(
            r#"{"type":"array","items":"float","connect.version":1,"connect.name":"io.debezium.data.FloatVector"}"#,
        ),
    }
}

#[cfg(test)]
impl AvroTable {
    /// A table version with these schemas and no columns, for tests of what caches them.
    pub fn for_tests(key: Option<AvroDoc>, value: AvroDoc) -> AvroTable {
        AvroTable {
            key,
            value,
            namespace: "t".into(),
            columns: Vec::new(),
            key_idx: Vec::new(),
            db: Vec::new(),
            table: Vec::new(),
            qualified: "db.t".into(),
        }
    }
}
