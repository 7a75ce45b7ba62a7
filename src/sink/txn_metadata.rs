//! Debezium's transaction metadata topic (`provide.transaction.metadata`): per source
//! transaction with rows, a `BEGIN` record before its first row and an `END` record after its
//! last, keyed by the transaction id, on `<name>.transaction`.
//!
//! ```text
//!  key   {"id": "<txn id>"}
//!  BEGIN {"status":"BEGIN","id":…,"event_count":null,"data_collections":null,"ts_ms":…}
//!  END   {"status":"END","id":…,"event_count":3,
//!         "data_collections":[{"data_collection":"shop.orders","event_count":2},…],"ts_ms":…}
//! ```
//!
//! Invariants:
//! * Both records go into the Kafka transaction of the rows they describe (the sink commits
//!   only at source boundaries), so a `read_committed` consumer sees a transaction's `BEGIN`,
//!   rows and `END` together or not at all, once each, through any crash. Debezium writes
//!   them at least once, apart from its rows.
//! * `event_count` counts data change events as the envelopes number them
//!   (`transaction.total_order`): a key change is two (its delete and its create), a
//!   tombstone none. Rows sent to the dead-letter topic count too: they are events of the
//!   transaction, written elsewhere.
//! * Snapshot reads and transactions without rows (DDL only) get no records, as in Debezium.
//! * Memory: one entry per table the open source transaction touched, as the envelope's
//!   `data_collection_order` already needs.

use std::io::Write;

use crate::config::Format;
use crate::encode::avro::{put_header, put_long, put_str, SchemaIds};
use crate::encode::connect_schema::with_schema;
use crate::encode::json::Record;
use crate::encode::json_value::write_json_string;

/// The key schema (Debezium's `io.debezium.connector.common.TransactionMetadataKey`, as
/// Confluent's `AvroConverter` writes it).
pub const KEY_SCHEMA: &str = concat!(
    r#"{"type":"record","name":"TransactionMetadataKey","namespace":"io.debezium.connector.common","fields":["#,
    r#"{"name":"id","type":"string"}"#,
    r#"],"connect.version":1,"connect.name":"io.debezium.connector.common.TransactionMetadataKey"}"#
);

/// The value schema (Debezium's `io.debezium.connector.common.TransactionMetadataValue`).
pub const VALUE_SCHEMA: &str = concat!(
    r#"{"type":"record","name":"TransactionMetadataValue","namespace":"io.debezium.connector.common","fields":["#,
    r#"{"name":"status","type":"string"},"#,
    r#"{"name":"id","type":"string"},"#,
    r#"{"name":"event_count","type":["null","long"],"default":null},"#,
    r#"{"name":"data_collections","type":["null",{"type":"array","items":["null","#,
    r#"{"type":"record","name":"collection","namespace":"event","fields":["#,
    r#"{"name":"data_collection","type":"string"},"#,
    r#"{"name":"event_count","type":"long"}"#,
    r#"],"connect.version":1,"connect.name":"event.collection"}]}],"default":null},"#,
    r#"{"name":"ts_ms","type":"long"}"#,
    r#"],"connect.version":1,"connect.name":"io.debezium.connector.common.TransactionMetadataValue"}"#
);

/// Full names of the key and value records (for the subject name strategies).
pub const KEY_NAME: &str = "io.debezium.connector.common.TransactionMetadataKey";
/// See [`KEY_NAME`].
pub const VALUE_NAME: &str = "io.debezium.connector.common.TransactionMetadataValue";

/// The key's Kafka Connect schema as `JsonConverter` (`schemas.enable=true`) writes Debezium's
/// `SchemaFactory.transactionKeySchema`: the prefix of a `json_schemas` key.
pub const CONNECT_KEY_PREFIX: &str = concat!(
    r#"{"schema":{"type":"struct","fields":["#,
    r#"{"type":"string","optional":false,"field":"id"}"#,
    r#"],"optional":false,"name":"io.debezium.connector.common.TransactionMetadataKey","version":1},"#,
    r#""payload":"#
);

/// The value's Kafka Connect schema (Debezium's `SchemaFactory.transactionValueSchema`, the
/// array's items its `transactionEventCountPerDataCollectionSchema`): the prefix of a
/// `json_schemas` value.
pub const CONNECT_VALUE_PREFIX: &str = concat!(
    r#"{"schema":{"type":"struct","fields":["#,
    r#"{"type":"string","optional":false,"field":"status"},"#,
    r#"{"type":"string","optional":false,"field":"id"},"#,
    r#"{"type":"int64","optional":true,"field":"event_count"},"#,
    r#"{"type":"array","items":{"type":"struct","fields":["#,
    r#"{"type":"string","optional":false,"field":"data_collection"},"#,
    r#"{"type":"int64","optional":false,"field":"event_count"}"#,
    r#"],"optional":true,"name":"event.collection","version":1},"optional":true,"field":"data_collections"},"#,
    r#"{"type":"int64","optional":false,"field":"ts_ms"}"#,
    r#"],"optional":false,"name":"io.debezium.connector.common.TransactionMetadataValue","version":1},"#,
    r#""payload":"#
);

/// The counts of the open source transaction, once its first event was written.
#[derive(Debug, Default)]
struct Open {
    id: String,
    events: u64,
    /// `db.table` → events, in the order the tables first appeared.
    collections: Vec<(String, u64)>,
}

/// The records of one pipeline's transaction metadata topic.
#[derive(Debug)]
pub(crate) struct TxnMetadata {
    /// The topic.
    pub topic: String,
    format: Format,
    /// JSON records carry their Connect schemas (`json_schemas`).
    json_schemas: bool,
    /// The registered key and value schema ids (Avro), once registered.
    ids: Option<SchemaIds>,
    open: Option<Open>,
}

impl TxnMetadata {
    /// Records for `topic` in `format`.
    pub(crate) fn new(topic: String, format: Format) -> TxnMetadata {
        TxnMetadata {
            topic,
            format,
            json_schemas: false,
            ids: None,
            open: None,
        }
    }

    /// With `on`, JSON records are written with their Kafka Connect schemas
    /// ([`CONNECT_KEY_PREFIX`], [`CONNECT_VALUE_PREFIX`]).
    pub(crate) fn with_json_schemas(mut self, on: bool) -> TxnMetadata {
        self.json_schemas = on;
        self
    }

    /// Whether the records need schema ids not registered yet (Avro).
    pub(crate) fn needs_ids(&self) -> bool {
        self.format == Format::Avro && self.ids.is_none()
    }

    /// The registered key and value schema ids of the Avro records.
    pub(crate) fn set_ids(&mut self, ids: SchemaIds) {
        self.ids = Some(ids);
    }

    /// A source transaction starts: nothing is open until its first event.
    pub(crate) fn reset(&mut self) {
        self.open = None;
    }

    /// Whether the open source transaction has had an event yet.
    pub(crate) fn started(&self) -> bool {
        self.open.is_some()
    }

    /// The `BEGIN` record of transaction `id`, before its first event; opens the counts.
    pub(crate) fn begin(&mut self, id: String, ts_ms: u64) -> Record {
        let rec = self.record(&id, None, ts_ms);
        self.open = Some(Open {
            id,
            ..Open::default()
        });
        rec
    }

    /// Counts `events` data change events of table `label` (`db.table`).
    pub(crate) fn count(&mut self, label: &str, events: u64) {
        let Some(open) = self.open.as_mut() else {
            return;
        };
        open.events += events;
        match open.collections.iter_mut().find(|(t, _)| t == label) {
            Some((_, n)) => *n += events,
            None => open.collections.push((label.to_string(), events)),
        }
    }

    /// The `END` record of the open transaction, if it had events; closes it.
    pub(crate) fn end(&mut self, ts_ms: u64) -> Option<Record> {
        let open = self.open.take()?;
        Some(self.record(&open.id, Some(&open), ts_ms))
    }

    /// Avro once the ids are registered ([`TxnMetadata::needs_ids`] first), JSON otherwise.
    fn record(&self, id: &str, end: Option<&Open>, ts_ms: u64) -> Record {
        match (self.format, self.ids) {
            (Format::Avro, Some(ids)) => avro_record(id, end, ts_ms, ids),
            _ if self.json_schemas => {
                let rec = json_record(id, end, ts_ms);
                Record::new(
                    rec.key.map(|k| with_schema(CONNECT_KEY_PREFIX, &k)),
                    rec.value.map(|v| with_schema(CONNECT_VALUE_PREFIX, &v)),
                )
            }
            _ => json_record(id, end, ts_ms),
        }
    }
}

fn json_record(id: &str, end: Option<&Open>, ts_ms: u64) -> Record {
    let mut key = Vec::with_capacity(id.len() + 10);
    key.extend_from_slice(b"{\"id\":");
    write_json_string(&mut key, id);
    key.push(b'}');
    let mut value = Vec::with_capacity(96);
    value.extend_from_slice(b"{\"status\":");
    value.extend_from_slice(if end.is_some() {
        b"\"END\""
    } else {
        b"\"BEGIN\""
    });
    value.extend_from_slice(b",\"id\":");
    write_json_string(&mut value, id);
    match end {
        None => value.extend_from_slice(b",\"event_count\":null,\"data_collections\":null"),
        Some(open) => {
            // Writing into a Vec cannot fail.
            let _ = write!(
                value,
                ",\"event_count\":{},\"data_collections\":[",
                open.events
            );
            for (n, (table, events)) in open.collections.iter().enumerate() {
                if n > 0 {
                    value.push(b',');
                }
                value.extend_from_slice(b"{\"data_collection\":");
                write_json_string(&mut value, table);
                let _ = write!(value, ",\"event_count\":{events}}}");
            }
            value.push(b']');
        }
    }
    let _ = write!(value, ",\"ts_ms\":{ts_ms}}}");
    Record::new(Some(key), Some(value))
}

fn avro_record(id: &str, end: Option<&Open>, ts_ms: u64, ids: SchemaIds) -> Record {
    let mut key = Vec::with_capacity(id.len() + 8);
    put_header(&mut key, ids.key.unwrap_or_default());
    put_str(&mut key, id);
    let mut value = Vec::with_capacity(64);
    put_header(&mut value, ids.value);
    put_str(&mut value, if end.is_some() { "END" } else { "BEGIN" });
    put_str(&mut value, id);
    match end {
        None => {
            put_long(&mut value, 0); // event_count: null
            put_long(&mut value, 0); // data_collections: null
        }
        Some(open) => {
            put_long(&mut value, 1);
            put_long(&mut value, open.events as i64);
            put_long(&mut value, 1);
            if !open.collections.is_empty() {
                // One block holding every item, then the empty block that ends the array.
                put_long(&mut value, open.collections.len() as i64);
                for (table, events) in &open.collections {
                    put_long(&mut value, 1); // the item's union branch: the record
                    put_str(&mut value, table);
                    put_long(&mut value, *events as i64);
                }
            }
            put_long(&mut value, 0);
        }
    }
    put_long(&mut value, ts_ms as i64);
    Record::new(Some(key), Some(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use apache_avro::types::Value as A;
    use serde_json::{json, Value as J};

    fn parse(bytes: &[u8]) -> J {
        serde_json::from_slice(bytes).expect("valid JSON")
    }

    fn one_txn(format: Format, ids: Option<SchemaIds>) -> (Record, Record) {
        let mut m = TxnMetadata::new("shop.transaction".into(), format);
        assert_eq!(m.needs_ids(), format == Format::Avro);
        if let Some(ids) = ids {
            m.set_ids(ids);
        }
        assert!(!m.needs_ids());
        m.reset();
        assert!(!m.started());
        let begin = m.begin("0-1-7".into(), 1_000);
        assert!(m.started());
        m.count("shop.orders", 1);
        m.count("shop.lines", 3);
        m.count("shop.orders", 2);
        let end = m.end(2_000).expect("an END after events");
        assert!(!m.started());
        assert!(m.end(3_000).is_none(), "a closed transaction ends once");
        (begin, end)
    }

    #[test]
    fn json_begin_and_end_are_debeziums_documents() {
        let (begin, end) = one_txn(Format::Json, None);
        assert_eq!(parse(begin.key.as_deref().unwrap()), json!({"id": "0-1-7"}));
        assert_eq!(end.key, begin.key);
        assert_eq!(
            parse(begin.value.as_deref().unwrap()),
            json!({"status": "BEGIN", "id": "0-1-7", "event_count": null,
                   "data_collections": null, "ts_ms": 1000})
        );
        assert_eq!(
            parse(end.value.as_deref().unwrap()),
            json!({"status": "END", "id": "0-1-7", "event_count": 6,
                   "data_collections": [
                       {"data_collection": "shop.orders", "event_count": 3},
                       {"data_collection": "shop.lines", "event_count": 3}],
                   "ts_ms": 2000})
        );
    }

    #[test]
    fn json_schemas_wrap_the_same_documents_in_debeziums_connect_schemas() {
        let (plain_begin, plain_end) = one_txn(Format::Json, None);
        let mut m = TxnMetadata::new("t".into(), Format::Json).with_json_schemas(true);
        let begin = m.begin("0-1-7".into(), 1_000);
        m.count("shop.orders", 1);
        m.count("shop.lines", 3);
        m.count("shop.orders", 2);
        let end = m.end(2_000).unwrap();
        let schema = |prefix: &str| parse(format!("{prefix}null}}").as_bytes())["schema"].clone();
        for (plain, wrapped) in [(plain_begin, begin), (plain_end, end)] {
            let key = parse(wrapped.key.as_deref().unwrap());
            assert_eq!(key["payload"], parse(plain.key.as_deref().unwrap()));
            assert_eq!(key["schema"], schema(CONNECT_KEY_PREFIX));
            let value = parse(wrapped.value.as_deref().unwrap());
            assert_eq!(value["payload"], parse(plain.value.as_deref().unwrap()));
            assert_eq!(value["schema"], schema(CONNECT_VALUE_PREFIX));
        }
        // Debezium's field order and names (SchemaFactory.transactionValueSchema).
        let s = schema(CONNECT_VALUE_PREFIX);
        let names: Vec<&str> = s["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["field"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["status", "id", "event_count", "data_collections", "ts_ms"]
        );
        assert_eq!(s["fields"][3]["items"]["name"], "event.collection");
    }

    #[test]
    fn ids_are_escaped_in_json() {
        let mut m = TxnMetadata::new("t".into(), Format::Json);
        let rec = m.begin("binlog.000001:\"4\"\\".into(), 1);
        assert_eq!(
            parse(rec.key.as_deref().unwrap()),
            json!({"id": "binlog.000001:\"4\"\\"})
        );
    }

    #[test]
    fn a_transaction_without_events_writes_no_end() {
        let mut m = TxnMetadata::new("t".into(), Format::Json);
        m.count("shop.orders", 1); // nothing open: ignored
        assert!(m.end(1).is_none());
    }

    fn decode(schema: &str, bytes: &[u8], id: u32) -> A {
        crate::encode::avro::tests::decode(schema, id, bytes)
    }

    fn field<'a>(v: &'a A, name: &str) -> &'a A {
        match v {
            A::Record(fields) => &fields.iter().find(|(n, _)| n == name).unwrap().1,
            other => panic!("not a record: {other:?}"),
        }
    }

    #[test]
    fn avro_records_decode_with_their_schemas() {
        let ids = SchemaIds {
            key: Some(11),
            value: 12,
        };
        let (begin, end) = one_txn(Format::Avro, Some(ids));
        let key = decode(KEY_SCHEMA, begin.key.as_deref().unwrap(), 11);
        assert_eq!(field(&key, "id"), &A::String("0-1-7".into()));
        let b = decode(VALUE_SCHEMA, begin.value.as_deref().unwrap(), 12);
        assert_eq!(field(&b, "status"), &A::String("BEGIN".into()));
        assert_eq!(field(&b, "event_count"), &A::Union(0, Box::new(A::Null)));
        assert_eq!(
            field(&b, "data_collections"),
            &A::Union(0, Box::new(A::Null))
        );
        assert_eq!(field(&b, "ts_ms"), &A::Long(1000));
        let e = decode(VALUE_SCHEMA, end.value.as_deref().unwrap(), 12);
        assert_eq!(field(&e, "status"), &A::String("END".into()));
        assert_eq!(field(&e, "event_count"), &A::Union(1, Box::new(A::Long(6))));
        let A::Union(1, items) = field(&e, "data_collections") else {
            panic!("data_collections is not the array branch");
        };
        let A::Array(items) = items.as_ref() else {
            panic!("not an array");
        };
        let got: Vec<(String, i64)> = items
            .iter()
            .map(|item| {
                let A::Union(1, rec) = item else {
                    panic!("an item is not the record branch: {item:?}")
                };
                let A::String(t) = field(rec, "data_collection") else {
                    panic!()
                };
                let A::Long(n) = field(rec, "event_count") else {
                    panic!()
                };
                (t.clone(), *n)
            })
            .collect();
        assert_eq!(
            got,
            [
                ("shop.orders".to_string(), 3),
                ("shop.lines".to_string(), 3)
            ]
        );
        assert_eq!(field(&e, "ts_ms"), &A::Long(2000));
    }

    #[test]
    fn the_schemas_are_valid_avro_with_debeziums_names() {
        for (schema, name) in [(KEY_SCHEMA, KEY_NAME), (VALUE_SCHEMA, VALUE_NAME)] {
            let parsed = apache_avro::Schema::parse_str(schema).expect("parses");
            let apache_avro::Schema::Record(r) = parsed else {
                panic!("not a record")
            };
            assert_eq!(r.name.fullname(None), name);
        }
    }
}
