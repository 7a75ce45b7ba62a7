//! JSON encoding of row changes as Debezium's `JsonConverter` (`schemas.enable=false`) writes
//! them, so consumers written for Debezium read sluice's topics unchanged.
//!
//! Key: `{"<key column>": value, ...}` (null key for tables without a key). Value: the envelope
//! `{before, after, source{...}, transaction{id, total_order, data_collection_order}, op,
//! ts_ms, ts_us, ts_ns}`, fields in Debezium 3.5's order ([`crate::encode::envelope`]). A delete is followed by a tombstone (null value) when the route
//! asks for it; an update that changes the key becomes delete + tombstone + create, as in
//! Debezium, so compacted topics keep only live keys (decided in [`crate::encode::change`],
//! shared with the Avro encoder).
//!
//! With the route's `json_schemas`, every key and envelope is written as
//! `{"schema":<Kafka Connect schema>,"payload":<the document above>}`, as `JsonConverter` with
//! `schemas.enable=true` writes Debezium's records: the prefix is computed once per table
//! version ([`crate::encode::connect_schema`], held by the [`TableCtx`]), so a row costs a copy
//! of it. Tombstones and the keys of tables without key stay null.
//!
//! The encoder is pure: the same input always gives the same bytes apart from the top-level
//! `ts_ms`/`ts_us`/`ts_ns` (processing time), which is why tests compare parsed documents
//! without them.

use std::convert::Infallible;
use std::io::Write;

use crate::encode::change::{encode_change, EnvelopeWriter};
pub use crate::encode::change::{Envelope, Op, Record, RowChange, RowPos};
use crate::encode::envelope::EventTime;
use crate::encode::json_value::write_json_string;
use crate::encode::table_ctx::TableCtx;
use crate::value::Value;

/// Encodes row changes to Debezium-compatible JSON.
pub struct JsonEncoder {
    name_json: Vec<u8>,
    version: &'static str,
}

impl JsonEncoder {
    /// An encoder for the pipeline `name` (written as `source.name`).
    pub fn new(name: &str) -> Self {
        let mut name_json = Vec::new();
        write_json_string(&mut name_json, name);
        JsonEncoder {
            name_json,
            version: env!("CARGO_PKG_VERSION"),
        }
    }

    /// Encodes one row change into its records, appended to `out`.
    pub fn encode(&self, change: &RowChange<'_>, out: &mut Vec<Record>) {
        match encode_change(self, change, out) {
            Ok(()) => {}
            Err(never) => match never {},
        }
    }

    /// The key document, or `None` for tables without key columns.
    pub fn key(&self, table: &TableCtx, row: Option<&[Value]>) -> Option<Vec<u8>> {
        let key = crate::encode::key_header::json_key(table, row?)?;
        Some(match table.connect.as_ref().and_then(|c| c.key()) {
            Some(prefix) => crate::encode::connect_schema::with_schema(prefix, &key),
            None => key,
        })
    }

    fn row_doc(&self, out: &mut Vec<u8>, table: &TableCtx, row: Option<&[Value]>) {
        let Some(row) = row else {
            out.extend_from_slice(b"null");
            return;
        };
        out.push(b'{');
        for i in 0..table.out.schema.columns.len() {
            if i > 0 {
                out.push(b',');
            }
            crate::encode::key_header::write_field(out, table, row, i);
        }
        out.push(b'}');
    }

    /// The envelope document, fields in Debezium 3.5's order
    /// ([`crate::encode::envelope::ENVELOPE_FIELDS`], [`crate::encode::envelope::SOURCE_FIELDS`]).
    pub fn envelope(&self, e: &Envelope<'_>) -> Vec<u8> {
        let Envelope {
            table,
            meta,
            op,
            before,
            after,
            row_pos: rp,
            ts,
        } = *e;
        let source_ts = EventTime::from_us(rp.source_ts_us);
        let prefix = table.connect.as_ref().map(|c| c.value(meta.connector));
        let mut out = Vec::with_capacity(
            320 + 64 * table.out.schema.columns.len() + prefix.map_or(0, str::len),
        );
        if let Some(p) = prefix {
            out.extend_from_slice(p.as_bytes());
        }
        out.extend_from_slice(b"{\"before\":");
        self.row_doc(&mut out, table, before);
        out.extend_from_slice(b",\"after\":");
        self.row_doc(&mut out, table, after);
        // Writing into a Vec cannot fail.
        let _ = write!(
            out,
            ",\"source\":{{\"version\":\"{}\",\"connector\":\"{}\",\"name\":",
            self.version, meta.connector
        );
        out.extend_from_slice(&self.name_json);
        let _ = write!(
            out,
            ",\"ts_ms\":{},\"snapshot\":\"{}\",\"db\":",
            source_ts.ms(),
            rp.snapshot.text()
        );
        write_json_string(&mut out, &table.schema.db);
        let _ = write!(
            out,
            ",\"sequence\":null,\"ts_us\":{},\"ts_ns\":{},\"table\":",
            source_ts.us(),
            source_ts.ns
        );
        write_json_string(&mut out, &table.schema.table);
        let _ = write!(out, ",\"server_id\":{},\"gtid\":", meta.server_id);
        match &meta.gtid {
            Some(g) => write_json_string(&mut out, g),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"file\":");
        write_json_string(&mut out, &meta.file);
        let _ = write!(out, ",\"pos\":{},\"row\":{},\"thread\":", rp.pos, rp.row);
        match meta.thread {
            Some(t) => {
                let _ = write!(out, "{t}");
            }
            None => out.extend_from_slice(b"null"),
        }
        if op == Op::Read {
            // A snapshot read belongs to no source transaction (as Debezium writes it).
            out.extend_from_slice(b",\"query\":null},\"transaction\":null");
        } else {
            out.extend_from_slice(b",\"query\":null},\"transaction\":{\"id\":");
            write_json_string(&mut out, &meta.id());
            let _ = write!(
                out,
                ",\"total_order\":{},\"data_collection_order\":{}}}",
                rp.total_order, rp.data_collection_order,
            );
        }
        let _ = write!(
            out,
            ",\"op\":\"{}\",\"ts_ms\":{},\"ts_us\":{},\"ts_ns\":{}}}",
            op.code(),
            ts.ms(),
            ts.us(),
            ts.ns
        );
        if prefix.is_some() {
            out.push(b'}');
        }
        out
    }
}

impl EnvelopeWriter for JsonEncoder {
    type Error = Infallible;

    fn key(&self, table: &TableCtx, row: Option<&[Value]>) -> Result<Option<Vec<u8>>, Infallible> {
        Ok(JsonEncoder::key(self, table, row))
    }

    fn envelope(&self, e: &Envelope<'_>) -> Result<Vec<u8>, Infallible> {
        Ok(JsonEncoder::envelope(self, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::route::RouteTarget;
    use crate::config::Format;
    use crate::model::{RowImage, RowsKind, TxnMeta};
    use crate::schema::{Column, ColumnKind, TableSchema};
    use serde_json::{json, Value as J};
    use std::sync::Arc;

    fn table(key: Vec<usize>, tombstones: bool) -> TableCtx {
        table_with(key, tombstones, false)
    }

    fn table_with(key: Vec<usize>, tombstones: bool, json_schemas: bool) -> TableCtx {
        let schema = TableSchema {
            db: "shop".into(),
            table: "t".into(),
            columns: vec![
                Column {
                    name: "id".into(),
                    kind: ColumnKind::Int { unsigned: false },
                    nullable: false,
                },
                Column {
                    name: "name".into(),
                    kind: ColumnKind::String {
                        charset: 255,
                        binary: false,
                        fixed: false,
                        max_bytes: 40,
                    },
                    nullable: true,
                },
            ],
            primary_key: key.clone(),
        };
        let route = RouteTarget {
            on_schema_change: Default::default(),
            topic: "shop.t".into(),
            format: Format::Json,
            key_columns: vec![],
            tombstones,
            avro: Default::default(),
            json_schemas,
            rules: Default::default(),
        };
        TableCtx::new(Arc::new(schema), route, key).unwrap()
    }

    fn meta() -> TxnMeta {
        TxnMeta {
            gtid: Some("0-1-42".into()),
            file: "mysql-bin.000003".into(),
            pos: 100,
            ts_us: 1_709_288_430_123_456,
            server_id: 1,
            thread: Some(17),
            connector: "mariadb",
        }
    }

    fn row(id: i64, name: &str) -> Vec<Value> {
        vec![Value::Int(id), Value::Bytes(name.as_bytes().to_vec())]
    }

    /// (key, value without the processing times `ts_ms`/`ts_us`/`ts_ns`, checked to be one
    /// reading) of each record.
    fn run(t: &TableCtx, kind: RowsKind, image: RowImage) -> Vec<(J, J)> {
        let mut out = Vec::new();
        let change = RowChange {
            table: t,
            meta: &meta(),
            kind,
            row: &image,
            row_pos: RowPos {
                source_ts_us: meta().ts_us,
                pos: 1234,
                row: 2,
                total_order: 3,
                data_collection_order: 1,
                // A read carries its place in the snapshot through to `source.snapshot`.
                snapshot: if kind == RowsKind::Read {
                    crate::model::SnapshotMark::LastInDataCollection
                } else {
                    crate::model::SnapshotMark::False
                },
            },
        };
        JsonEncoder::new("shop").encode(&change, &mut out);
        out.into_iter()
            .map(|r| {
                let key = r
                    .key
                    .map_or(J::Null, |k| serde_json::from_slice(&k).unwrap());
                let mut value = r
                    .value
                    .map_or(J::Null, |v| serde_json::from_slice(&v).unwrap());
                if let Some(o) = value.as_object_mut() {
                    let ms = o.remove("ts_ms").unwrap().as_u64().unwrap();
                    let us = o.remove("ts_us").unwrap().as_u64().unwrap();
                    let ns = o.remove("ts_ns").unwrap().as_u64().unwrap();
                    assert_eq!((ms, us), (ns / 1_000_000, ns / 1000));
                }
                (key, value)
            })
            .collect()
    }

    fn doc(op: &str, before: J, after: J) -> J {
        json!({
            "before": before, "after": after,
            "source": {"version": env!("CARGO_PKG_VERSION"), "connector": "mariadb", "name": "shop",
                       "ts_ms": 1_709_288_430_123u64, "snapshot": "false", "db": "shop",
                       "sequence": null, "ts_us": 1_709_288_430_123_456u64,
                       "ts_ns": 1_709_288_430_123_456_000u64, "table": "t", "server_id": 1, "gtid": "0-1-42",
                       "file": "mysql-bin.000003", "pos": 1234, "row": 2, "thread": 17,
                       "query": null},
            "op": op,
            "transaction": {"id": "0-1-42", "total_order": 3, "data_collection_order": 1}
        })
    }

    #[test]
    fn snapshot_read_has_no_transaction_block() {
        let got = run(
            &table(vec![0], true),
            RowsKind::Read,
            RowImage {
                before: None,
                after: Some(row(1, "Ann")),
            },
        );
        let mut want = doc("r", J::Null, json!({"id": 1, "name": "Ann"}));
        want["source"]["snapshot"] = json!("last_in_data_collection");
        want["transaction"] = J::Null;
        assert_eq!(got, vec![(json!({"id": 1}), want)]);
    }

    #[test]
    fn insert_is_one_create() {
        let got = run(
            &table(vec![0], true),
            RowsKind::Insert,
            RowImage {
                before: None,
                after: Some(row(1, "Ann")),
            },
        );
        assert_eq!(
            got,
            vec![(
                json!({"id": 1}),
                doc("c", J::Null, json!({"id": 1, "name": "Ann"}))
            )]
        );
    }

    #[test]
    fn delete_is_followed_by_a_tombstone_when_asked() {
        let image = RowImage {
            before: Some(row(1, "Ann")),
            after: None,
        };
        let d = doc("d", json!({"id": 1, "name": "Ann"}), J::Null);
        assert_eq!(
            run(&table(vec![0], true), RowsKind::Delete, image.clone()),
            vec![(json!({"id": 1}), d.clone()), (json!({"id": 1}), J::Null)]
        );
        assert_eq!(
            run(&table(vec![0], false), RowsKind::Delete, image),
            vec![(json!({"id": 1}), d)]
        );
    }

    #[test]
    fn update_keeping_the_key_is_one_update() {
        let got = run(
            &table(vec![0], true),
            RowsKind::Update,
            RowImage {
                before: Some(row(1, "Ann")),
                after: Some(row(1, "Bob")),
            },
        );
        assert_eq!(
            got,
            vec![(
                json!({"id": 1}),
                doc(
                    "u",
                    json!({"id": 1, "name": "Ann"}),
                    json!({"id": 1, "name": "Bob"})
                )
            )]
        );
    }

    #[test]
    fn key_change_is_delete_tombstone_create() {
        let image = RowImage {
            before: Some(row(1, "Ann")),
            after: Some(row(2, "Ann")),
        };
        let d = doc("d", json!({"id": 1, "name": "Ann"}), J::Null);
        // The create is the next event of the transaction and of the table.
        let mut c = doc("c", J::Null, json!({"id": 2, "name": "Ann"}));
        c["transaction"] = json!({"id": "0-1-42", "total_order": 4, "data_collection_order": 2});
        assert_eq!(
            run(&table(vec![0], true), RowsKind::Update, image.clone()),
            vec![
                (json!({"id": 1}), d.clone()),
                (json!({"id": 1}), J::Null),
                (json!({"id": 2}), c.clone())
            ]
        );
        assert_eq!(
            run(&table(vec![0], false), RowsKind::Update, image),
            vec![(json!({"id": 1}), d), (json!({"id": 2}), c)]
        );
    }

    #[test]
    fn keyless_tables_get_null_keys_and_plain_updates() {
        let t = table(vec![], true);
        let got = run(
            &t,
            RowsKind::Update,
            RowImage {
                before: Some(row(1, "Ann")),
                after: Some(row(2, "Bob")),
            },
        );
        assert_eq!(
            got,
            vec![(
                J::Null,
                doc(
                    "u",
                    json!({"id": 1, "name": "Ann"}),
                    json!({"id": 2, "name": "Bob"})
                )
            )]
        );
        let got = run(
            &t,
            RowsKind::Delete,
            RowImage {
                before: Some(row(1, "Ann")),
                after: None,
            },
        );
        assert_eq!(got.len(), 2);
        assert_eq!(got[1], (J::Null, J::Null));
    }

    #[test]
    fn without_gtid_the_transaction_id_is_file_and_pos() {
        let t = table(vec![0], true);
        let m = TxnMeta {
            gtid: None,
            thread: None,
            ..meta()
        };
        let enc = JsonEncoder::new("a\"b");
        let rp = RowPos {
            source_ts_us: m.ts_us,
            pos: 9,
            row: 0,
            total_order: 1,
            data_collection_order: 1,
            snapshot: crate::model::SnapshotMark::False,
        };
        let v = enc.envelope(&Envelope {
            table: &t,
            meta: &m,
            op: Op::Create,
            before: None,
            after: Some(&row(1, "x")),
            row_pos: rp,
            ts: EventTime { ns: 5_123_456_789 },
        });
        let v: J = serde_json::from_slice(&v).unwrap();
        assert_eq!(v["transaction"]["id"], json!("mysql-bin.000003:100"));
        assert_eq!(v["source"]["gtid"], J::Null);
        assert_eq!(v["source"]["thread"], J::Null);
        assert_eq!(v["source"]["name"], json!("a\"b"));
        assert_eq!(v["ts_ms"], json!(5123));
        assert_eq!(v["ts_us"], json!(5_123_456));
        assert_eq!(v["ts_ns"], json!(5_123_456_789u64));
    }

    /// The records of each kind of change, encoded with `encode`.
    fn every_change(t: &TableCtx) -> Vec<Record> {
        let images = [
            (RowsKind::Insert, None, Some(row(1, "Ann"))),
            (RowsKind::Update, Some(row(1, "Ann")), Some(row(1, "Bob"))),
            (RowsKind::Update, Some(row(1, "Bob")), Some(row(2, "Bob"))),
            (RowsKind::Delete, Some(row(2, "Bob")), None),
            (RowsKind::Read, None, Some(row(3, "Cy"))),
        ];
        let mut out = Vec::new();
        for (kind, before, after) in images {
            let image = RowImage { before, after };
            let change = RowChange {
                table: t,
                meta: &meta(),
                kind,
                row: &image,
                row_pos: RowPos {
                    source_ts_us: meta().ts_us,
                    pos: 1234,
                    row: 0,
                    total_order: 1,
                    data_collection_order: 1,
                    snapshot: crate::model::SnapshotMark::False,
                },
            };
            JsonEncoder::new("shop").encode(&change, &mut out);
        }
        out
    }

    /// A document without the processing times (they differ between two encodings).
    fn without_times(mut v: J) -> J {
        if let Some(o) = v.as_object_mut() {
            for k in ["ts_ms", "ts_us", "ts_ns"] {
                o.remove(k);
            }
        }
        v
    }

    #[test]
    fn json_schemas_wrap_each_key_and_envelope_in_its_connect_schema() {
        for key in [vec![0], vec![]] {
            let plain = every_change(&table(key.clone(), true));
            let wrapped_table = table_with(key.clone(), true, true);
            let wrapped = every_change(&wrapped_table);
            assert_eq!(plain.len(), wrapped.len(), "same records");
            let schemas = crate::encode::connect_schema::ConnectSchemas::new(
                &wrapped_table.schema,
                &key,
                "shop.t",
                "mariadb",
            );
            let schema_of = |prefix: &str| -> J {
                serde_json::from_str::<J>(&format!("{prefix}null}}")).unwrap()["schema"].clone()
            };
            for (p, w) in plain.iter().zip(&wrapped) {
                match (&p.key, &w.key) {
                    (None, None) => assert!(key.is_empty(), "only keyless tables have null keys"),
                    (Some(p), Some(w)) => {
                        let w: J = serde_json::from_slice(w).unwrap();
                        assert_eq!(w["payload"], serde_json::from_slice::<J>(p).unwrap());
                        assert_eq!(
                            w["schema"],
                            schema_of(schemas.key_prefix.as_deref().unwrap())
                        );
                        assert_eq!(w.as_object().unwrap().len(), 2);
                    }
                    other => panic!("key {other:?}"),
                }
                match (&p.value, &w.value) {
                    (None, None) => {}
                    (Some(p), Some(w)) => {
                        let w: J = serde_json::from_slice(w).unwrap();
                        assert_eq!(
                            without_times(w["payload"].clone()),
                            without_times(serde_json::from_slice::<J>(p).unwrap())
                        );
                        assert_eq!(w["schema"], schema_of(&schemas.value_prefix));
                        assert_eq!(w.as_object().unwrap().len(), 2);
                    }
                    other => panic!("value {other:?}"),
                }
            }
            assert!(
                wrapped.iter().any(|r| r.value.is_none()),
                "tombstones stay null"
            );
        }
    }

    #[test]
    fn json_schemas_name_the_source_struct_by_the_connector() {
        let t = table_with(vec![0], true, true);
        let m = TxnMeta {
            connector: "mysql",
            ..meta()
        };
        let v = JsonEncoder::new("shop").envelope(&Envelope {
            table: &t,
            meta: &m,
            op: Op::Create,
            before: None,
            after: Some(&row(1, "x")),
            row_pos: RowPos {
                source_ts_us: meta().ts_us,
                pos: 9,
                row: 0,
                total_order: 1,
                data_collection_order: 1,
                snapshot: crate::model::SnapshotMark::False,
            },
            ts: EventTime { ns: 1 },
        });
        let v: J = serde_json::from_slice(&v).unwrap();
        let source = v["schema"]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["field"] == "source")
            .unwrap();
        assert_eq!(source["name"], "io.debezium.connector.mysql.Source");
        assert_eq!(v["payload"]["source"]["connector"], "mysql");
    }

    /// The keys of a JSON object in the order they are written, with the keys of each
    /// object-valued field.
    struct Keys(Vec<(String, Option<Keys>)>);

    impl<'de> serde::Deserialize<'de> for Keys {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Keys, D::Error> {
            struct V;
            impl<'de> serde::de::Visitor<'de> for V {
                type Value = Option<Keys>;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("any JSON value")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut m: A,
                ) -> Result<Option<Keys>, A::Error> {
                    let mut keys = Vec::new();
                    while let Some(k) = m.next_key::<String>()? {
                        keys.push((k, m.next_value::<MaybeKeys>()?.0));
                    }
                    Ok(Some(Keys(keys)))
                }
                fn visit_unit<E>(self) -> Result<Option<Keys>, E> {
                    Ok(None)
                }
                fn visit_str<E>(self, _: &str) -> Result<Option<Keys>, E> {
                    Ok(None)
                }
                fn visit_u64<E>(self, _: u64) -> Result<Option<Keys>, E> {
                    Ok(None)
                }
                fn visit_i64<E>(self, _: i64) -> Result<Option<Keys>, E> {
                    Ok(None)
                }
                fn visit_f64<E>(self, _: f64) -> Result<Option<Keys>, E> {
                    Ok(None)
                }
                fn visit_bool<E>(self, _: bool) -> Result<Option<Keys>, E> {
                    Ok(None)
                }
            }
            struct MaybeKeys(Option<Keys>);
            impl<'de> serde::Deserialize<'de> for MaybeKeys {
                fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<MaybeKeys, D::Error> {
                    d.deserialize_any(V).map(MaybeKeys)
                }
            }
            d.deserialize_any(V)?
                .ok_or_else(|| serde::de::Error::custom("not an object"))
        }
    }

    #[test]
    fn fields_are_written_in_debezium_3_5s_order() {
        use crate::encode::envelope::{ENVELOPE_FIELDS, SOURCE_FIELDS};
        let t = table(vec![0], true);
        let v = JsonEncoder::new("shop").envelope(&Envelope {
            table: &t,
            meta: &meta(),
            op: Op::Update,
            before: Some(&row(1, "x")),
            after: Some(&row(1, "y")),
            row_pos: RowPos {
                source_ts_us: meta().ts_us,
                pos: 9,
                row: 0,
                total_order: 1,
                data_collection_order: 1,
                snapshot: crate::model::SnapshotMark::False,
            },
            ts: EventTime { ns: 1 },
        });
        let Keys(top) = serde_json::from_slice(&v).unwrap();
        let names: Vec<&str> = top.iter().map(|(k, _)| k.as_str()).collect();
        let want: Vec<&str> = ENVELOPE_FIELDS.iter().map(|f| f.name()).collect();
        assert_eq!(names, want);
        let source = top.iter().find(|(k, _)| k == "source").unwrap();
        let Some(Keys(source)) = &source.1 else {
            panic!("source is not an object")
        };
        let names: Vec<&str> = source.iter().map(|(k, _)| k.as_str()).collect();
        let want: Vec<&str> = SOURCE_FIELDS.iter().map(|f| f.name()).collect();
        assert_eq!(names, want);
    }

    /// The object keys of `name` inside `keys`, in the order written.
    fn child<'a>(keys: &'a Keys, name: &str) -> &'a Keys {
        keys.0
            .iter()
            .find(|(k, _)| k == name)
            .and_then(|(_, v)| v.as_ref())
            .unwrap_or_else(|| panic!("no object {name}"))
    }

    fn names(keys: &Keys) -> Vec<String> {
        keys.0.iter().map(|(k, _)| k.clone()).collect()
    }

    /// A struct schema's field names, in order.
    fn schema_fields(s: &J) -> Vec<String> {
        s["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["field"].as_str().unwrap().to_string())
            .collect()
    }

    fn arb_columns() -> impl proptest::strategy::Strategy<Value = Vec<Column>> {
        use proptest::prelude::*;
        let kind = prop_oneof![
            Just(ColumnKind::Int { unsigned: true }),
            Just(ColumnKind::BigInt { unsigned: false }),
            Just(ColumnKind::Double),
            Just(ColumnKind::Date),
            (0u8..=6).prop_map(|fsp| ColumnKind::DateTime { fsp }),
            (0u8..=6).prop_map(|fsp| ColumnKind::Timestamp { fsp }),
            (1u16..=64).prop_map(|bits| ColumnKind::Bit { bits }),
            Just(ColumnKind::Set {
                values: vec!["a".into(), "\"\\".into()]
            }),
            Just(ColumnKind::Json),
            Just(ColumnKind::Geometry),
            Just(ColumnKind::Vector { dimensions: None }),
        ];
        proptest::collection::vec((kind, any::<bool>()), 1..10).prop_map(|cols| {
            cols.into_iter()
                .enumerate()
                .map(|(i, (kind, nullable))| Column {
                    name: format!("c{i} \"é\""),
                    kind,
                    nullable,
                })
                .collect()
        })
    }

    proptest::proptest! {
        /// The Connect schema names exactly the fields the payload writes, in the same order
        /// (key and both row structs), whatever the table's shape.
        #[test]
        fn json_schemas_describe_exactly_the_fields_written(
            columns in arb_columns(),
            key_len in 0usize..3,
        ) {
            let key: Vec<usize> = (0..key_len.min(columns.len())).collect();
            let n = columns.len();
            let schema = TableSchema {
                db: "shop".into(),
                table: "t".into(),
                columns,
                primary_key: key.clone(),
            };
            let route = RouteTarget {
                on_schema_change: Default::default(),
                topic: "shop.t".into(),
                format: Format::Json,
                key_columns: vec![],
                tombstones: true,
                avro: Default::default(),
                json_schemas: true,
                rules: Default::default(),
            };
            let t = TableCtx::new(Arc::new(schema), route, key.clone()).unwrap();
            let image = RowImage {
                before: Some(vec![Value::Null; n]),
                after: Some(vec![Value::Null; n]),
            };
            let mut out = Vec::new();
            let change = RowChange {
                table: &t,
                meta: &meta(),
                kind: RowsKind::Update,
                row: &image,
                row_pos: RowPos { source_ts_us: 0, pos: 1, row: 0, total_order: 1, data_collection_order: 1, snapshot: crate::model::SnapshotMark::False },
            };
            JsonEncoder::new("shop").encode(&change, &mut out);
            let value = out[0].value.as_deref().unwrap();
            let doc: J = serde_json::from_slice(value).unwrap();
            // The payload's own text (the prefix, then the payload, then `}`): `Keys` keeps
            // the order written.
            let prefixes = t.connect.as_deref().unwrap();
            let from = prefixes.value(meta().connector).len();
            let payload: Keys = serde_json::from_slice(&value[from..value.len() - 1]).unwrap();
            let payload = &payload;
            for field in ["before", "after"] {
                let schema = doc["schema"]["fields"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|f| f["field"] == field)
                    .unwrap();
                proptest::prop_assert_eq!(names(child(payload, field)), schema_fields(schema));
            }
            proptest::prop_assert_eq!(
                names(payload),
                schema_fields(&doc["schema"])
            );
            match out[0].key.as_deref() {
                None => proptest::prop_assert!(key.is_empty()),
                Some(k) => {
                    let doc: J = serde_json::from_slice(k).unwrap();
                    let from = prefixes.key().unwrap().len();
                    let keys: Keys = serde_json::from_slice(&k[from..k.len() - 1]).unwrap();
                    proptest::prop_assert_eq!(names(&keys), schema_fields(&doc["schema"]));
                }
            }
        }
    }
}
