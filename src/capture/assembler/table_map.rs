//! TABLE_MAP events: the table cache (per table id, the map's decoder and where its rows go),
//! the schema a map decodes with, and a table's first known definition written to the
//! schema history.
//!
//! Invariant: a table map with full metadata wins over a tracked definition that disagrees
//! (logged, and the history corrected); without full metadata the tracked definition is
//! required and must agree with the map, or the pipeline stops. A table's shape is never
//! taken from today's information_schema for an older position.

use std::sync::Arc;

use mysql_common::binlog::events::{Event, TableMapEvent};

use crate::binlog::rows::RowDecoder;
use crate::error::{Error, Result};
use crate::pipeline::{Change, HistoryUpdate, SchemaEvent, TableCtx};
use crate::schema::tracked::TableDef;
use crate::schema::{SchemaError, ServerFlavor, TableSchema};

use super::{Assembler, TableEntry};

impl Assembler {
    pub(super) fn on_table_map(
        &mut self,
        ev: &Event,
        start_pos: u64,
        out: &mut Vec<Change>,
    ) -> Result<()> {
        let data = ev.data();
        let tme: TableMapEvent = ev.read_event().map_err(|e| {
            Error::definite(format!(
                "malformed TABLE_MAP event at {}: {e}",
                self.at(start_pos)
            ))
        })?;
        let id = tme.table_id();
        if let Some(entry) = self.tables.get(&id) {
            if entry.tme_raw == data {
                if entry.history.is_some() && self.can_emit() {
                    self.emit_first_history(id, out);
                }
                return Ok(());
            }
        }
        let db = tme.database_name().into_owned();
        let table = tme.table_name().into_owned();
        let route = if self.router.table_included(&db, &table) {
            self.router
                .route(&db, &table)
                .map_err(Error::definite_from)?
        } else {
            None
        };
        let mut history = None;
        let route = match route {
            None => None,
            Some(target) => {
                let (schema, unwritten) = self.table_schema(&tme, &db, &table, start_pos)?;
                history = unwritten;
                let key_idx = crate::pipeline::route_key_idx(&schema, &target)?;
                let schema = Arc::new(schema);
                let decoder = RowDecoder::new(schema.clone(), &tme).map_err(|e| {
                    Error::definite(format!("{e} (table {db}.{table}, {})", self.at(start_pos)))
                })?;
                let ctx = TableCtx::new(schema, target, key_idx).map_err(|e| {
                    e.context(format!("routing {db}.{table} ({})", self.at(start_pos)))
                })?;
                // A table first seen while streaming (created after the start): its series
                // exist from its first table map, before any of its records commit.
                if let Some(m) = self.router.metrics() {
                    m.register_tables([ctx.label.as_str()]);
                }
                Some((Arc::new(ctx), decoder))
            }
        };
        self.tables.insert(
            id,
            TableEntry {
                tme_raw: data.to_vec(),
                route,
                history,
            },
        );
        if self.tables.get(&id).is_some_and(|e| e.history.is_some()) && self.can_emit() {
            self.emit_first_history(id, out);
        }
        Ok(())
    }

    /// The schema of an included table's TABLE_MAP, checked against its tracked definition.
    /// Also returns a definition the schema history does not have yet (the table's first
    /// known shape, or a correction), to be written in the current transaction.
    ///
    /// A table map with full metadata is self-describing: it wins over a tracked definition
    /// that disagrees (logged as a warning; the history is corrected). Without full metadata
    /// the tracked definition supplies names, signedness, charsets, ENUM/SET members and the
    /// key; none, or one that disagrees with the map, stops the pipeline.
    fn table_schema(
        &mut self,
        tme: &TableMapEvent<'_>,
        db: &str,
        table: &str,
        start_pos: u64,
    ) -> Result<(TableSchema, Option<TableDef>)> {
        let flavor = ServerFlavor::from(self.flavor);
        let key = (db.to_string(), table.to_string());
        match TableSchema::from_table_map_with_flavor(tme, flavor) {
            Ok(mut schema) => {
                let fresh = TableDef::from_schema(&schema);
                let unwritten = match self.defs.get(&key) {
                    None => Some(fresh),
                    Some(def) => match TableSchema::from_table_map_with_def(tme, flavor, def) {
                        // The same shape, with what only the definition knows (MariaDB's
                        // UUID behind a logged BINARY(16)).
                        Ok(with_def) => {
                            schema = with_def;
                            None
                        }
                        Err(e) => {
                            tracing::warn!(
                                table = %format!("{db}.{table}"),
                                at = %self.at(start_pos),
                                mismatch = %e,
                                "the tracked definition disagrees with the table map, which \
                                 logs full metadata: taking the table map's shape and \
                                 correcting the schema history"
                            );
                            Some(fresh)
                        }
                    },
                };
                if let Some(d) = &unwritten {
                    self.defs.insert(key.clone(), d.clone());
                    self.lost.remove(&key);
                }
                Ok((schema, unwritten))
            }
            Err(SchemaError::NoFullMetadata { .. }) => {
                let Some(def) = self.defs.get(&key) else {
                    let why = self.lost.get(&key).map_or_else(
                        || {
                            "sluice has no tracked definition of it: the pipeline started \
                             at a position whose schema it does not know"
                                .to_string()
                        },
                        |w| format!("its tracked definition was lost at {w}"),
                    );
                    return Err(Error::definite(format!(
                        "the TABLE_MAP of {db}.{table} at {} has no column names (the server \
                         logs binlog_row_metadata=MINIMAL or NO_LOG) and {why}. sluice takes a \
                         table's first shape only where it is known: from information_schema \
                         when a new pipeline starts at `start = \"latest\"`, from the schema \
                         history committed with the offsets, or from table maps with full \
                         metadata — never from today's information_schema for an older \
                         position. Fix: SET GLOBAL binlog_row_metadata = 'FULL' on the source \
                         (MySQL 8.0.1+, MariaDB 10.5+) and restart, or start a new pipeline \
                         (another `name`, or `sluice offsets reset`) with `start = \"latest\"`",
                        self.at(start_pos)
                    )));
                };
                let schema =
                    TableSchema::from_table_map_with_def(tme, flavor, def).map_err(|e| {
                        Error::definite(format!(
                            "{e} at {}. The table map has no column names \
                             (binlog_row_metadata=MINIMAL or NO_LOG), so sluice decodes it with \
                             the tracked definition, and the two disagree: a DDL reached the \
                             table without reaching the binlog (sql_log_bin=0, a replication \
                             filter), or the tracked definition is wrong. Nothing after the \
                             committed offset was written. Fix: SET GLOBAL binlog_row_metadata \
                             = 'FULL' on the source and restart, or start a new pipeline at \
                             `start = \"latest\"`",
                            self.at(start_pos)
                        ))
                    })?;
                Ok((schema, None))
            }
            Err(e) => Err(Error::definite(format!(
                "{e} (table {db}.{table}, {})",
                self.at(start_pos)
            ))),
        }
    }

    /// Whether changes may be emitted now: a regular source transaction is open (not one
    /// being skipped, not a prepared XA group, not an XA replay).
    fn can_emit(&self) -> bool {
        !self.replay_mode && self.txn.as_ref().is_some_and(|t| !t.skip && !t.xa)
    }

    /// Writes the pending first-known definition of table `id` to the schema history, in the
    /// open source transaction.
    fn emit_first_history(&mut self, id: u64, out: &mut Vec<Change>) {
        let Some(def) = self.tables.get_mut(&id).and_then(|e| e.history.take()) else {
            return;
        };
        let bytes = match serde_json::to_vec(&def) {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(table = %def.name(), error = %e, "cannot encode a table definition for the schema history");
                return;
            }
        };
        let Some(txn) = self.txn.as_mut() else {
            return;
        };
        if !txn.begun {
            txn.begun = true;
            out.push(Change::Begin(txn.meta.clone()));
        }
        out.push(Change::Schema(SchemaEvent {
            history: vec![HistoryUpdate {
                db: def.db.clone(),
                table: def.table.clone(),
                shape: Some(bytes),
            }],
            db: def.db,
            table: def.table,
            record: None,
        }));
    }
}
