//! The sink's schema work inside the open Kafka transaction: registering Avro schemas before
//! the first record citing them, and writing a DDL's schema-change and schema-history records.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::OnSchemaChange;
use crate::encode::avro::SchemaIds;
use crate::error::{Error, Result};
use crate::pipeline::TableCtx;

use super::shape::{describe_shape_change, history_key};
use super::Sink;

impl Sink {
    /// Registers the fixed Avro key and value schemas (`(schema, full name)`) of one of the
    /// pipeline's further topics (`setting` names it in errors), inside the open Kafka
    /// transaction, so no record citing an id commits before the registry accepted it.
    pub(super) fn register_fixed(
        &self,
        setting: &str,
        topic: &str,
        key: (&str, &str),
        value: (&str, &str),
    ) -> Result<SchemaIds> {
        let Some(registry) = &self.registry else {
            return Err(Error::definite(format!(
                "{setting}.format = \"avro\" but no [schema_registry] is configured; set \
                 schema_registry.url"
            )));
        };
        let deadline = Instant::now() + Duration::from_millis(self.s.transaction_timeout_ms / 3);
        let register = |is_key: bool, (schema, name): (&str, &str)| {
            let subject = registry.registry().subject_for(topic, is_key, name);
            registry
                .register_retrying(&subject, schema, deadline)
                .map_err(|e| {
                    e.context(format!(
                        "registering the Avro schema of {setting} (subject `{subject}`)"
                    ))
                })
        };
        Ok(SchemaIds {
            key: Some(register(true, key)?),
            value: register(false, value)?,
        })
    }

    /// The registered schema ids of an Avro table version, registering its key and value
    /// schemas on first use — inside the open Kafka transaction, so no record citing an id
    /// commits before the registry accepted the schema. `Err(reason)`: the registry refused
    /// the value schema and the route sends such rows to the dead-letter topic.
    pub(super) fn schema_ids(
        &mut self,
        table: &Arc<TableCtx>,
    ) -> Result<std::result::Result<SchemaIds, String>> {
        let Some(avro) = table.avro.clone() else {
            return Err(Error::definite(format!(
                "internal: Avro route for {}.{} without Avro schemas",
                table.schema.db, table.schema.table
            )));
        };
        if let Some(ids) = self.avro_ids.get(&table.label, &table.route.topic, &avro) {
            return Ok(ids.clone());
        }
        let Some(registry) = &self.registry else {
            return Err(Error::definite(format!(
                "{}.{} is routed with format = \"avro\" but no [schema_registry] is configured; \
                 set schema_registry.url",
                table.schema.db, table.schema.table
            )));
        };
        // Registration happens while the Kafka transaction is open: leave it most of its time.
        let deadline = Instant::now() + Duration::from_millis(self.s.transaction_timeout_ms / 3);
        let topic = &table.route.topic;
        let table_name = (table.schema.db.clone(), table.schema.table.clone());
        let register = |is_key: bool, doc: &crate::encode::avro::AvroDoc| {
            let subject = registry
                .registry()
                .subject_for(topic, is_key, &doc.full_name);
            registry
                .register_retrying(&subject, &doc.schema_json, deadline)
                .map_err(|e| (subject, e))
        };
        let key = avro.key.as_ref().map(|doc| register(true, doc));
        let value = register(false, &avro.value);
        let outcome = match (key, value) {
            (None, Ok(value)) => Ok(SchemaIds { key: None, value }),
            (Some(Ok(key)), Ok(value)) => Ok(SchemaIds {
                key: Some(key),
                value,
            }),
            (Some(Err((subject, e))), _) | (_, Err((subject, e))) => {
                let changed = self
                    .last_shape
                    .get(&table_name)
                    .map(|old| describe_shape_change(&old.schema, &table.schema))
                    .unwrap_or_default();
                let msg = format!(
                    "the schema registry refused the new Avro schema of {}.{} (subject `{subject}`){}: {e}",
                    table_name.0,
                    table_name.1,
                    if changed.is_empty() {
                        String::new()
                    } else {
                        format!("; changed since the last shape written: {changed}")
                    }
                );
                if e.kind() == crate::error::ErrorKind::Definite
                    && table.route.on_schema_change == OnSchemaChange::Dlq
                {
                    tracing::warn!(table = %format!("{}.{}", table_name.0, table_name.1), dlq = %self.s.dlq_topic, error = %msg, "rows of a refused schema go to the dead-letter topic");
                    Err(msg)
                } else {
                    let fix = if e.kind() == crate::error::ErrorKind::Definite {
                        ". Nothing of this shape was committed. Fix: make the change compatible \
                         under the subject's compatibility rule (e.g. give a new NOT NULL column \
                         a nullable type), relax the rule for the subject in the registry, or set \
                         on_schema_change = \"dlq\" on the route to divert such rows"
                    } else {
                        ""
                    };
                    return Err(match e.kind() {
                        crate::error::ErrorKind::Transient => {
                            Error::transient(format!("{msg}{fix}"))
                        }
                        _ => Error::definite(format!("{msg}{fix}")),
                    });
                }
            }
        };
        if outcome.is_ok() {
            self.last_shape.insert(table_name, table.clone());
        }
        self.avro_ids
            .insert(&table.label, &table.route.topic, &avro, outcome.clone());
        Ok(outcome)
    }

    /// Writes a DDL's schema-change record and its schema-history updates into the open
    /// Kafka transaction, so they commit together with the offset past the statement.
    pub(super) fn write_schema_event(&mut self, ev: &crate::pipeline::SchemaEvent) -> Result<()> {
        if ev.record.is_some() {
            self.topics
                .ensure_ordered_topic(&self.s.schema_changes_topic)?;
        }
        self.topics
            .ensure_history_topic(&self.s.schema_history_topic)?;
        let key = serde_json::json!({"db": ev.db, "table": ev.table}).to_string();
        let at = |e: Error| {
            e.context(format!(
                "writing the schema change of {}.{} (binlog {}:{})",
                ev.db, ev.table, self.meta.file, self.meta.pos
            ))
        };
        if let Some(record) = &ev.record {
            self.producer
                .send_with_header(
                    &self.s.schema_changes_topic,
                    Some(key.as_bytes()),
                    Some(record),
                    None,
                )
                .map_err(at)?;
            self.kafka_records += 1;
        }
        for h in &ev.history {
            let (db, table, shape) = (&h.db, &h.table, &h.shape);
            let hkey = history_key(&self.s.name, db, table);
            self.producer
                .send(
                    &self.s.schema_history_topic,
                    Some(hkey.as_bytes()),
                    shape.as_deref(),
                )
                .map_err(at)?;
            self.kafka_records += 1;
        }
        Ok(())
    }
}
