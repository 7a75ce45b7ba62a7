//! Kafka Connect schemas of a table, as Kafka Connect's `JsonConverter` writes them with
//! `schemas.enable=true` for Debezium's records (route option `json_schemas = true`): each
//! record becomes `{"schema": <Connect schema>, "payload": <the JSON sluice writes anyway>}`.
//!
//! The schema describes the payload the JSON encoder writes (Debezium's types with
//! `decimal.handling.mode=string`, `time.precision.mode=adaptive_time_microseconds`,
//! `binary.handling.mode=bytes`):
//!
//! | column | Connect schema |
//! |---|---|
//! | TINYINT, SMALLINT | `int16` (SMALLINT UNSIGNED `int32`) |
//! | MEDIUMINT, INT | `int32` (INT UNSIGNED `int64`) |
//! | BIGINT | `int64` |
//! | FLOAT / DOUBLE | `float` / `double` |
//! | DECIMAL | `string` |
//! | DATE | `int32` `io.debezium.time.Date` |
//! | TIME | `int64` `io.debezium.time.MicroTime` |
//! | DATETIME(0–3) / (4–6) | `int64` `io.debezium.time.Timestamp` / `io.debezium.time.MicroTimestamp` |
//! | TIMESTAMP | `string` `io.debezium.time.ZonedTimestamp` |
//! | YEAR | `int32` `io.debezium.time.Year` |
//! | text / binary strings | `string` / `bytes` |
//! | ENUM, SET | `string` `io.debezium.data.Enum` / `io.debezium.data.EnumSet`, `allowed` |
//! | JSON | `string` `io.debezium.data.Json` |
//! | MariaDB UUID | `string` `io.debezium.data.Uuid` |
//! | MariaDB INET6 / INET4 | `string` (the server's text; Debezium cannot read these types) |
//! | BIT(1) / BIT(n) | `boolean` / `bytes` `io.debezium.data.Bits`, `length` |
//! | GEOMETRY | struct `io.debezium.data.geometry.Geometry` (`wkb`, `srid`) |
//! | POINT | struct `io.debezium.data.geometry.Point` (`x`, `y`, `wkb`, `srid`) |
//! | VECTOR | `array` of `float`, `io.debezium.data.FloatVector` |
//!
//! Attribute order is `JsonConverter`'s: `type`, `fields`/`items`, `optional`, `name`,
//! `version`, `doc`, `parameters`, `default`, then `field` for a struct's field. The text is
//! computed once per table version; the same table shape always gives the same bytes.

use std::fmt::Write;

use crate::schema::{charset_kind, CharsetKind, Column, ColumnKind, TableSchema};

/// The schemas of one table version: the key's (`None` for tables without key columns) and
/// the envelope's, each as the `{"schema":…,"payload":` prefix a record starts with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectSchemas {
    /// `{"schema":<key struct>,"payload":` (the record adds the key and `}`).
    pub key_prefix: Option<String>,
    /// `{"schema":<envelope struct>,"payload":` (the record adds the envelope and `}`).
    pub value_prefix: String,
}

impl ConnectSchemas {
    /// The schemas of `schema` routed to `topic` (it names the structs, as Debezium's topic
    /// does), written by connector `connector` (`mysql` or `mariadb`).
    pub fn new(
        schema: &TableSchema,
        key_idx: &[usize],
        topic: &str,
        connector: &str,
    ) -> ConnectSchemas {
        let key_prefix = (!key_idx.is_empty()).then(|| {
            let mut s = String::from(r#"{"schema":"#);
            let cols = key_idx.iter().filter_map(|&i| schema.columns.get(i));
            row_struct(&mut s, cols, false, &format!("{topic}.Key"));
            s.push_str(r#","payload":"#);
            s
        });
        let mut s = String::with_capacity(2048 + 160 * schema.columns.len());
        s.push_str(r#"{"schema":{"type":"struct","fields":["#);
        let value_name = format!("{topic}.Value");
        for (n, field) in ["before", "after"].iter().enumerate() {
            if n > 0 {
                s.push(',');
            }
            row_struct(&mut s, schema.columns.iter(), true, &value_name);
            s.pop();
            push_field_name(&mut s, field);
        }
        s.push(',');
        source_struct(&mut s, connector);
        s.push_str(concat!(
            // Debezium 3.5's connectors define `transaction` right after `source`.
            r#",{"type":"struct","fields":["#,
            r#"{"type":"string","optional":false,"field":"id"},"#,
            r#"{"type":"int64","optional":false,"field":"total_order"},"#,
            r#"{"type":"int64","optional":false,"field":"data_collection_order"}"#,
            r#"],"optional":true,"name":"event.block","version":1,"field":"transaction"}"#,
            r#",{"type":"string","optional":false,"field":"op"}"#,
            r#",{"type":"int64","optional":true,"field":"ts_ms"}"#,
            r#",{"type":"int64","optional":true,"field":"ts_us"}"#,
            r#",{"type":"int64","optional":true,"field":"ts_ns"}"#,
            r#"],"optional":false,"name":"#
        ));
        push_json_str(&mut s, &format!("{topic}.Envelope"));
        s.push_str(r#","version":2},"payload":"#);
        ConnectSchemas {
            key_prefix,
            value_prefix: s,
        }
    }
}

/// A record with its schema: `prefix` (a `{"schema":…,"payload":` text), then `payload`, then
/// the closing `}`.
pub fn with_schema(prefix: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(prefix.len() + payload.len() + 1);
    out.extend_from_slice(prefix.as_bytes());
    out.extend_from_slice(payload);
    out.push(b'}');
    out
}

/// Appends `,"field":<name>}` (closing a field's schema object).
fn push_field_name(s: &mut String, name: &str) {
    s.push_str(r#","field":"#);
    push_json_str(s, name);
    s.push('}');
}

fn push_json_str(s: &mut String, v: &str) {
    // Serializing a str cannot fail.
    s.push_str(&serde_json::to_string(v).unwrap_or_default());
}

/// A struct of one field per column, named `name`.
fn row_struct<'a>(
    s: &mut String,
    cols: impl Iterator<Item = &'a Column>,
    optional: bool,
    name: &str,
) {
    s.push_str(r#"{"type":"struct","fields":["#);
    for (n, col) in cols.enumerate() {
        if n > 0 {
            s.push(',');
        }
        column_schema(s, col);
        s.pop();
        push_field_name(s, &col.name);
    }
    let _ = write!(s, r#"],"optional":{optional},"name":"#);
    push_json_str(s, name);
    s.push('}');
}

/// One column's schema object (closed; the caller reopens it for the field name).
fn column_schema(s: &mut String, col: &Column) {
    let optional = col.nullable;
    let plain = |s: &mut String, ty: &str| {
        let _ = write!(s, r#"{{"type":"{ty}","optional":{optional}}}"#);
    };
    let named = |s: &mut String, ty: &str, name: &str| {
        let _ = write!(
            s,
            r#"{{"type":"{ty}","optional":{optional},"name":"{name}","version":1}}"#
        );
    };
    let with_param = |s: &mut String, ty: &str, name: &str, param: &str, value: &str| {
        let _ = write!(
            s,
            r#"{{"type":"{ty}","optional":{optional},"name":"{name}","version":1,"parameters":{{"{param}":"#
        );
        push_json_str(s, value);
        s.push_str("}}");
    };
    match &col.kind {
        ColumnKind::TinyInt { .. } | ColumnKind::SmallInt { unsigned: false } => plain(s, "int16"),
        ColumnKind::SmallInt { unsigned: true }
        | ColumnKind::MediumInt { .. }
        | ColumnKind::Int { unsigned: false } => plain(s, "int32"),
        ColumnKind::Int { unsigned: true } | ColumnKind::BigInt { .. } => plain(s, "int64"),
        ColumnKind::Float => plain(s, "float"),
        ColumnKind::Double => plain(s, "double"),
        ColumnKind::Decimal { .. } => plain(s, "string"),
        ColumnKind::Date => named(s, "int32", "io.debezium.time.Date"),
        ColumnKind::Time { .. } => named(s, "int64", "io.debezium.time.MicroTime"),
        ColumnKind::DateTime { fsp } if *fsp <= 3 => {
            named(s, "int64", "io.debezium.time.Timestamp")
        }
        ColumnKind::DateTime { .. } => named(s, "int64", "io.debezium.time.MicroTimestamp"),
        ColumnKind::Timestamp { .. } => named(s, "string", "io.debezium.time.ZonedTimestamp"),
        ColumnKind::Year => named(s, "int32", "io.debezium.time.Year"),
        ColumnKind::String { charset, .. } | ColumnKind::Blob { charset, .. } => {
            if charset_kind(*charset) == CharsetKind::Binary {
                plain(s, "bytes")
            } else {
                plain(s, "string")
            }
        }
        ColumnKind::Enum { values } => with_param(
            s,
            "string",
            "io.debezium.data.Enum",
            "allowed",
            &values.join(","),
        ),
        ColumnKind::Set { values } => with_param(
            s,
            "string",
            "io.debezium.data.EnumSet",
            "allowed",
            &values.join(","),
        ),
        ColumnKind::Json => named(s, "string", "io.debezium.data.Json"),
        ColumnKind::Uuid => named(s, "string", "io.debezium.data.Uuid"),
        ColumnKind::Inet6 | ColumnKind::Inet4 => plain(s, "string"),
        ColumnKind::Bit { bits: 1 } => plain(s, "boolean"),
        ColumnKind::Bit { bits } => with_param(
            s,
            "bytes",
            "io.debezium.data.Bits",
            "length",
            &bits.to_string(),
        ),
        ColumnKind::Geometry => {
            let _ = write!(
                s,
                concat!(
                    r#"{{"type":"struct","fields":["#,
                    r#"{{"type":"bytes","optional":false,"field":"wkb"}},"#,
                    r#"{{"type":"int32","optional":true,"field":"srid"}}"#,
                    r#"],"optional":{},"name":"io.debezium.data.geometry.Geometry","version":1,"doc":"Geometry"}}"#
                ),
                optional
            );
        }
        ColumnKind::Point => {
            let _ = write!(
                s,
                concat!(
                    r#"{{"type":"struct","fields":["#,
                    r#"{{"type":"double","optional":false,"field":"x"}},"#,
                    r#"{{"type":"double","optional":false,"field":"y"}},"#,
                    r#"{{"type":"bytes","optional":true,"field":"wkb"}},"#,
                    r#"{{"type":"int32","optional":true,"field":"srid"}}"#,
                    r#"],"optional":{},"name":"io.debezium.data.geometry.Point","version":1,"doc":"Geometry (POINT)"}}"#
                ),
                optional
            );
        }
        ColumnKind::Vector { .. } => {
            let _ = write!(
                s,
                r#"{{"type":"array","items":{{"type":"float","optional":false}},"optional":{optional},"name":"io.debezium.data.FloatVector","version":1}}"#
            );
        }
    }
}

/// The `source` block's struct (Debezium 3.5's `io.debezium.connector.<connector>.Source`).
fn source_struct(s: &mut String, connector: &str) {
    s.push_str(concat!(
        r#"{"type":"struct","fields":["#,
        r#"{"type":"string","optional":false,"field":"version"},"#,
        r#"{"type":"string","optional":false,"field":"connector"},"#,
        r#"{"type":"string","optional":false,"field":"name"},"#,
        r#"{"type":"int64","optional":false,"field":"ts_ms"},"#,
        r#"{"type":"string","optional":true,"name":"io.debezium.data.Enum","version":1,"#,
        r#""parameters":{"allowed":"true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"},"#,
        r#""default":"false","field":"snapshot"},"#,
        r#"{"type":"string","optional":false,"field":"db"},"#,
        r#"{"type":"string","optional":true,"field":"sequence"},"#,
        r#"{"type":"int64","optional":true,"field":"ts_us"},"#,
        r#"{"type":"int64","optional":true,"field":"ts_ns"},"#,
        r#"{"type":"string","optional":true,"field":"table"},"#,
        r#"{"type":"int64","optional":false,"field":"server_id"},"#,
        r#"{"type":"string","optional":true,"field":"gtid"},"#,
        r#"{"type":"string","optional":false,"field":"file"},"#,
        r#"{"type":"int64","optional":false,"field":"pos"},"#,
        r#"{"type":"int32","optional":false,"field":"row"},"#,
        r#"{"type":"int64","optional":true,"field":"thread"},"#,
        r#"{"type":"string","optional":true,"field":"query"}"#,
        r#"],"optional":false,"name":"#
    ));
    push_json_str(s, &format!("io.debezium.connector.{connector}.Source"));
    s.push_str(r#","version":1,"field":"source"}"#);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value as J};

    fn col(name: &str, kind: ColumnKind, nullable: bool) -> Column {
        Column {
            name: name.into(),
            kind,
            nullable,
        }
    }

    fn table() -> TableSchema {
        TableSchema {
            db: "shop".into(),
            table: "t".into(),
            columns: vec![
                col("id", ColumnKind::Int { unsigned: false }, false),
                col(
                    "kind",
                    ColumnKind::Enum {
                        values: vec!["a".into(), "b,c".into()],
                    },
                    true,
                ),
                col("d", ColumnKind::DateTime { fsp: 6 }, true),
                col("g", ColumnKind::Geometry, true),
                col("bits", ColumnKind::Bit { bits: 9 }, false),
                col("u", ColumnKind::Uuid, true),
                col("ip", ColumnKind::Inet6, true),
            ],
            primary_key: vec![0],
        }
    }

    fn schema_of(prefix: &str) -> J {
        let doc: J = serde_json::from_str(&format!("{prefix}null}}")).expect("valid JSON");
        assert_eq!(doc["payload"], J::Null);
        doc["schema"].clone()
    }

    fn field<'a>(s: &'a J, name: &str) -> &'a J {
        s["fields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["field"] == name)
            .unwrap_or_else(|| panic!("no field {name} in {s}"))
    }

    #[test]
    fn key_and_envelope_are_debeziums_structs() {
        let c = ConnectSchemas::new(&table(), &[0], "shop.t", "mariadb");
        let key = schema_of(c.key_prefix.as_deref().unwrap());
        assert_eq!(
            key,
            json!({"type": "struct", "fields": [
                {"type": "int32", "optional": false, "field": "id"}],
                "optional": false, "name": "shop.t.Key"})
        );
        let env = schema_of(&c.value_prefix);
        assert_eq!(env["name"], "shop.t.Envelope");
        assert_eq!(env["version"], 2);
        let names: Vec<&str> = env["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["field"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            crate::encode::envelope::ENVELOPE_FIELDS.map(|f| f.name())
        );
        let before = field(&env, "before");
        assert_eq!(before["optional"], true);
        assert_eq!(before["name"], "shop.t.Value");
        assert_eq!(field(&env, "after"), &{
            let mut a = before.clone();
            a["field"] = json!("after");
            a
        });
        assert_eq!(
            field(before, "kind"),
            &json!({"type": "string", "optional": true, "name": "io.debezium.data.Enum",
                    "version": 1, "parameters": {"allowed": "a,b,c"}, "field": "kind"})
        );
        assert_eq!(
            field(before, "d")["name"],
            "io.debezium.time.MicroTimestamp"
        );
        assert_eq!(field(before, "g")["fields"][0]["field"], "wkb");
        assert_eq!(field(before, "bits")["parameters"], json!({"length": "9"}));
        assert_eq!(
            field(before, "u"),
            &json!({"type": "string", "optional": true, "name": "io.debezium.data.Uuid",
                    "version": 1, "field": "u"})
        );
        assert_eq!(
            field(before, "ip"),
            &json!({"type": "string", "optional": true, "field": "ip"})
        );
        let source = field(&env, "source");
        assert_eq!(source["name"], "io.debezium.connector.mariadb.Source");
        let names: Vec<&str> = source["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["field"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            crate::encode::envelope::SOURCE_FIELDS.map(|f| f.name())
        );
        assert_eq!(field(source, "snapshot")["default"], "false");
        assert_eq!(field(&env, "transaction")["name"], "event.block");
    }

    #[test]
    fn attribute_order_is_json_converters() {
        let c = ConnectSchemas::new(&table(), &[0], "shop.t", "mysql");
        let text = &c.value_prefix;
        let at = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("{needle}"));
        // type, parameters... then the field name last within a field.
        let kind = at(r#""name":"io.debezium.data.Enum","version":1,"parameters""#);
        assert!(kind < at(r#""field":"kind""#));
        assert!(text.starts_with(r#"{"schema":{"type":"struct","fields":[{"type":"struct""#));
        assert!(text.ends_with(r#""name":"shop.t.Envelope","version":2},"payload":"#));
    }

    #[test]
    fn a_table_without_key_columns_has_no_key_schema() {
        let c = ConnectSchemas::new(&table(), &[], "shop.t", "mysql");
        assert!(c.key_prefix.is_none());
    }
}
