//! Debezium's heartbeat topic (`heartbeat.interval.ms`): at most every interval, a record
//! `{"ts_ms": <now>}` keyed by `{"serverName": "<name>"}` on `__debezium-heartbeat.<name>`.
//!
//! Invariants:
//! * A heartbeat is written only inside a Kafka transaction that also carries an offset
//!   record (every Kafka transaction of the sink does), so it never commits apart from a
//!   source boundary and the pipeline-transaction tags stay one per offset record.
//! * On an idle source (no new boundary), the heartbeat's transaction carries the last
//!   committed checkpoint again: the committed position does not move, and a restart resumes
//!   where it would have.

use std::io::Write;
use std::time::{Duration, Instant};

use crate::config::Format;
use crate::encode::avro::{put_header, put_long, put_str, SchemaIds};
use crate::encode::connect_schema::with_schema;
use crate::encode::json::Record;
use crate::encode::json_value::write_json_string;

/// The key schema (Debezium's `io.debezium.connector.common.ServerNameKey`, as Confluent's
/// `AvroConverter` writes it).
pub const KEY_SCHEMA: &str = concat!(
    r#"{"type":"record","name":"ServerNameKey","namespace":"io.debezium.connector.common","fields":["#,
    r#"{"name":"serverName","type":"string"}"#,
    r#"],"connect.version":1,"connect.name":"io.debezium.connector.common.ServerNameKey"}"#
);

/// The value schema (Debezium's `io.debezium.connector.common.Heartbeat`).
pub const VALUE_SCHEMA: &str = concat!(
    r#"{"type":"record","name":"Heartbeat","namespace":"io.debezium.connector.common","fields":["#,
    r#"{"name":"ts_ms","type":"long"}"#,
    r#"],"connect.version":1,"connect.name":"io.debezium.connector.common.Heartbeat"}"#
);

/// Full name of the key record.
pub const KEY_NAME: &str = "io.debezium.connector.common.ServerNameKey";
/// Full name of the value record.
pub const VALUE_NAME: &str = "io.debezium.connector.common.Heartbeat";

/// The key's Kafka Connect schema as `JsonConverter` (`schemas.enable=true`) writes Debezium's
/// `SchemaFactory.heartbeatKeySchema`: the prefix of a `json_schemas` key.
pub const CONNECT_KEY_PREFIX: &str = concat!(
    r#"{"schema":{"type":"struct","fields":["#,
    r#"{"type":"string","optional":false,"field":"serverName"}"#,
    r#"],"optional":false,"name":"io.debezium.connector.common.ServerNameKey","version":1},"#,
    r#""payload":"#
);

/// The value's Kafka Connect schema (Debezium's `SchemaFactory.heartbeatValueSchema`): the
/// prefix of a `json_schemas` value.
pub const CONNECT_VALUE_PREFIX: &str = concat!(
    r#"{"schema":{"type":"struct","fields":["#,
    r#"{"type":"int64","optional":false,"field":"ts_ms"}"#,
    r#"],"optional":false,"name":"io.debezium.connector.common.Heartbeat","version":1},"#,
    r#""payload":"#
);

/// The heartbeat of one pipeline: its topic, interval, format and when it last beat.
#[derive(Debug)]
pub(crate) struct Heartbeat {
    /// The topic.
    pub topic: String,
    interval: Duration,
    format: Format,
    /// JSON records carry their Connect schemas (`json_schemas`).
    json_schemas: bool,
    /// The pipeline name (the key's `serverName`).
    server_name: String,
    ids: Option<SchemaIds>,
    last: Option<Instant>,
}

impl Heartbeat {
    /// A heartbeat of pipeline `server_name` on `topic` every `interval`.
    pub(crate) fn new(
        topic: String,
        interval: Duration,
        format: Format,
        server_name: &str,
    ) -> Self {
        Heartbeat {
            topic,
            interval,
            format,
            json_schemas: false,
            server_name: server_name.to_string(),
            ids: None,
            last: None,
        }
    }

    /// With `on`, JSON records are written with their Kafka Connect schemas
    /// ([`CONNECT_KEY_PREFIX`], [`CONNECT_VALUE_PREFIX`]).
    pub(crate) fn with_json_schemas(mut self, on: bool) -> Heartbeat {
        self.json_schemas = on;
        self
    }

    /// How long until the next heartbeat is due (zero: due now).
    pub(crate) fn due_in(&self) -> Duration {
        self.last.map_or(Duration::ZERO, |t| {
            self.interval.saturating_sub(t.elapsed())
        })
    }

    /// Whether a heartbeat is due.
    pub(crate) fn due(&self) -> bool {
        self.due_in().is_zero()
    }

    /// Whether the records need schema ids not registered yet (Avro).
    pub(crate) fn needs_ids(&self) -> bool {
        self.format == Format::Avro && self.ids.is_none()
    }

    /// The registered key and value schema ids of the Avro records.
    pub(crate) fn set_ids(&mut self, ids: SchemaIds) {
        self.ids = Some(ids);
    }

    /// The record of a heartbeat at `ts_ms`; the next is due an interval from now.
    pub(crate) fn beat(&mut self, ts_ms: u64) -> Record {
        self.last = Some(Instant::now());
        match (self.format, self.ids) {
            (Format::Avro, Some(ids)) => {
                let mut key = Vec::with_capacity(self.server_name.len() + 8);
                put_header(&mut key, ids.key.unwrap_or_default());
                put_str(&mut key, &self.server_name);
                let mut value = Vec::with_capacity(16);
                put_header(&mut value, ids.value);
                put_long(&mut value, ts_ms as i64);
                Record::new(Some(key), Some(value))
            }
            _ => {
                let mut key = Vec::with_capacity(self.server_name.len() + 16);
                key.extend_from_slice(b"{\"serverName\":");
                write_json_string(&mut key, &self.server_name);
                key.push(b'}');
                let mut value = Vec::with_capacity(32);
                // Writing into a Vec cannot fail.
                let _ = write!(value, "{{\"ts_ms\":{ts_ms}}}");
                if self.json_schemas {
                    key = with_schema(CONNECT_KEY_PREFIX, &key);
                    value = with_schema(CONNECT_VALUE_PREFIX, &value);
                }
                Record::new(Some(key), Some(value))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value as J};

    #[test]
    fn json_heartbeats_are_debeziums_and_paced() {
        let mut hb = Heartbeat::new(
            "__debezium-heartbeat.shop".into(),
            Duration::from_secs(3600),
            Format::Json,
            "shop\"1",
        );
        assert!(hb.due(), "the first beat is due at once");
        assert!(!hb.needs_ids());
        let rec = hb.beat(1234);
        let key: J = serde_json::from_slice(rec.key.as_deref().unwrap()).unwrap();
        let value: J = serde_json::from_slice(rec.value.as_deref().unwrap()).unwrap();
        assert_eq!(key, json!({"serverName": "shop\"1"}));
        assert_eq!(value, json!({"ts_ms": 1234}));
        assert!(!hb.due(), "the next is an interval away");
        assert!(hb.due_in() > Duration::from_secs(3500));
    }

    #[test]
    fn json_schemas_wrap_the_same_documents_in_debeziums_connect_schemas() {
        let mut hb = Heartbeat::new("t".into(), Duration::ZERO, Format::Json, "shop")
            .with_json_schemas(true);
        let rec = hb.beat(1234);
        let key: J = serde_json::from_slice(rec.key.as_deref().unwrap()).unwrap();
        let value: J = serde_json::from_slice(rec.value.as_deref().unwrap()).unwrap();
        assert_eq!(key["payload"], json!({"serverName": "shop"}));
        assert_eq!(value["payload"], json!({"ts_ms": 1234}));
        assert_eq!(
            key["schema"],
            json!({"type": "struct", "fields": [
                {"type": "string", "optional": false, "field": "serverName"}],
                "optional": false, "name": "io.debezium.connector.common.ServerNameKey",
                "version": 1})
        );
        assert_eq!(
            value["schema"],
            json!({"type": "struct", "fields": [
                {"type": "int64", "optional": false, "field": "ts_ms"}],
                "optional": false, "name": "io.debezium.connector.common.Heartbeat",
                "version": 1})
        );
    }

    #[test]
    fn avro_heartbeats_decode_with_their_schemas() {
        let mut hb = Heartbeat::new("t".into(), Duration::ZERO, Format::Avro, "shop");
        assert!(hb.needs_ids());
        hb.set_ids(SchemaIds {
            key: Some(3),
            value: 4,
        });
        let rec = hb.beat(99);
        assert!(hb.due(), "a zero interval is always due");
        let decode = |schema: &str, bytes: &[u8], id: u32| {
            crate::encode::avro::tests::decode(schema, id, bytes)
        };
        use apache_avro::types::Value as A;
        assert_eq!(
            decode(KEY_SCHEMA, rec.key.as_deref().unwrap(), 3),
            A::Record(vec![("serverName".into(), A::String("shop".into()))])
        );
        assert_eq!(
            decode(VALUE_SCHEMA, rec.value.as_deref().unwrap(), 4),
            A::Record(vec![("ts_ms".into(), A::Long(99))])
        );
    }
}
