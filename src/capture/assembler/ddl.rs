//! DDL statements: the tracked definitions of included tables kept current, and one
//! schema-change record per table a statement changes, emitted in the statement's own
//! transaction so it commits with the offset past it.
//!
//! Invariant: sluice does not guess a table's new shape — a DDL it cannot parse on an
//! included table is a definite error, and a definition it cannot follow is marked lost so
//! the table's next TABLE_MAP must bring full metadata; a shape change on a route with
//! `on_schema_change = "fail"` stops before anything of it is committed.

use mysql_common::binlog::consts::StatusVarKey;
use mysql_common::binlog::events::{QueryEvent, StatusVarVal};

use crate::config::route::RouteTarget;
use crate::config::OnSchemaChange;
use crate::error::{Error, Result};
use crate::model::HistoryUpdate;
use crate::pipeline::{Change, SchemaEvent};
use crate::schema::ddl::{parse_ddl_with, DdlChange, DdlParse, SqlMode};
use crate::schema::tracked::{
    AlterOp, ChangeKind, ChangeSource, SchemaChangeRecord, TableDef, TableName,
};
use crate::schema::ServerFlavor;

use super::Assembler;

/// One schema change found in a DDL statement.
struct DdlEvent {
    /// What the statement did to the table.
    kind: ChangeKind,
    /// Database of the table.
    db: String,
    /// Table name (the new name after a rename).
    table: String,
    /// The shape before the statement.
    before: Option<TableDef>,
    /// The shape after it.
    after: Option<TableDef>,
    /// The schema-history updates it makes.
    history: Vec<HistoryUpdate<TableDef>>,
}

impl Assembler {
    /// Whether `db.table` is captured and routed.
    fn included(&self, db: &str, table: &str) -> Result<Option<RouteTarget>> {
        if !self.router.table_included(db, table) {
            return Ok(None);
        }
        self.router.route(db, table).map_err(Error::definite_from)
    }

    /// A statement that may be DDL: tracks the shape of included tables and emits one
    /// schema-change record per table it changes, inside the statement's own transaction (so it
    /// commits with the offset past it). A table's rows after the DDL come with TABLE_MAPs of
    /// the new shape, which the row decoder follows by itself.
    pub(super) fn on_ddl(
        &mut self,
        q: &QueryEvent<'_>,
        text: &str,
        ts: u32,
        server_id: u32,
        start_pos: u64,
        out: &mut Vec<Change>,
    ) -> Result<()> {
        if self.replay_mode || self.txn.as_ref().is_some_and(|t| t.skip || t.xa) {
            return Ok(());
        }
        if self.txn.as_ref().is_some_and(|t| t.ddl_deferred) {
            tracing::debug!(at = %self.at(start_pos), "START/ROLLBACK ALTER: applied at its COMMIT ALTER, if any");
            return Ok(());
        }
        let schema = q.schema();
        let default_db = (!schema.is_empty()).then_some(schema.as_ref());
        let mode = q
            .status_vars()
            .get_status_var(StatusVarKey::SqlMode)
            .and_then(|v| match v.get_value() {
                Ok(StatusVarVal::SqlMode(bits)) => Some(SqlMode::from_bits(bits.0)),
                _ => None,
            })
            .unwrap_or_default();
        let flavor = ServerFlavor::from(self.flavor);
        let changes = match parse_ddl_with(default_db, text, mode, flavor) {
            DdlParse::NotDdl => return Ok(()),
            DdlParse::Changes(c) => c,
            DdlParse::Unparsed { tables, error } => {
                for t in &tables {
                    if self.included(&t.db, &t.table)?.is_some() {
                        return Err(Error::definite(format!(
                            "cannot parse a DDL statement on the included table {t} at {}: \
                             {error}. Statement: {text:?}. sluice does not guess a table's new \
                             shape; please report the statement, or exclude the table \
                             (source.exclude) and restart",
                            self.at(start_pos)
                        )));
                    }
                }
                tracing::debug!(at = %self.at(start_pos), %error, "unparsed statement names no included table; ignored");
                return Ok(());
            }
        };
        let at = self.at(start_pos).to_string();
        let mut events = Vec::new();
        for change in changes {
            self.apply_ddl(change, text, &at, &mut events)?;
        }
        if events.is_empty() {
            return Ok(());
        }
        // A first-known definition not written yet is stale now: the DDL's history wins.
        for entry in self.tables.values_mut() {
            if let (Some(_), Some((ctx, _))) = (&entry.history, &entry.route) {
                let (d, t) = (&ctx.schema.db, &ctx.schema.table);
                if events
                    .iter()
                    .any(|e| e.history.iter().any(|h| h.db == *d && h.table == *t))
                {
                    entry.history = None;
                }
            }
        }
        if self.txn.is_none() {
            self.open_pending(ts, None, server_id, start_pos);
        }
        let Some(txn) = self.txn.as_mut() else {
            return Ok(());
        };
        if !txn.begun {
            txn.begun = true;
            out.push(Change::Begin(txn.meta.clone()));
        }
        let meta = txn.meta.clone();
        for DdlEvent {
            kind,
            db,
            table,
            before,
            after,
            history,
        } in events
        {
            let record = SchemaChangeRecord {
                source: ChangeSource {
                    file: meta.file.to_string(),
                    pos: meta.pos,
                    gtid: meta.gtid.clone(),
                    server_id: meta.server_id,
                    ts_ms: meta.ts_us / 1000,
                },
                db: db.clone(),
                table: table.clone(),
                ddl: text.to_string(),
                kind,
                before,
                after,
            };
            let record = serde_json::to_vec(&record)
                .map_err(|e| Error::definite(format!("encoding a schema-change record: {e}")))?;
            let history = history
                .into_iter()
                .map(|HistoryUpdate { db, table, shape }| {
                    let bytes = shape.map(|d| serde_json::to_vec(&d)).transpose();
                    bytes
                        .map(|shape| HistoryUpdate { db, table, shape })
                        .map_err(|e| Error::definite(format!("encoding a table definition: {e}")))
                })
                .collect::<Result<Vec<_>>>()?;
            out.push(Change::Schema(SchemaEvent {
                db,
                table,
                record: Some(record),
                history,
            }));
        }
        Ok(())
    }

    /// Applies one DDL change to the tracked definitions; pushes a schema-change event per
    /// included table it touches.
    fn apply_ddl(
        &mut self,
        change: DdlChange,
        text: &str,
        at: &str,
        events: &mut Vec<DdlEvent>,
    ) -> Result<()> {
        let key = |t: &TableName| (t.db.clone(), t.table.clone());
        match change {
            DdlChange::CreateTable {
                table,
                def,
                if_not_exists,
                ..
            } => {
                if self.included(&table.db, &table.table)?.is_none() {
                    return Ok(());
                }
                if if_not_exists && self.defs.contains_key(&key(&table)) {
                    return Ok(());
                }
                let before = self.defs.insert(key(&table), def.clone());
                self.lost.remove(&key(&table));
                events.push(DdlEvent {
                    kind: ChangeKind::Create,
                    db: table.db.clone(),
                    table: table.table.clone(),
                    before,
                    after: Some(def.clone()),
                    history: vec![HistoryUpdate {
                        db: table.db,
                        table: table.table,
                        shape: Some(def),
                    }],
                });
            }
            DdlChange::CreateTableLike {
                table,
                like,
                if_not_exists,
                ..
            } => {
                if self.included(&table.db, &table.table)?.is_none()
                    || (if_not_exists && self.defs.contains_key(&key(&table)))
                {
                    return Ok(());
                }
                let after = self.defs.get(&key(&like)).cloned().map(|mut d| {
                    d.db = table.db.clone();
                    d.table = table.table.clone();
                    d
                });
                let before = match &after {
                    Some(d) => self.defs.insert(key(&table), d.clone()),
                    None => self.defs.remove(&key(&table)),
                };
                events.push(DdlEvent {
                    kind: ChangeKind::Create,
                    db: table.db.clone(),
                    table: table.table.clone(),
                    before,
                    after: after.clone(),
                    history: vec![HistoryUpdate {
                        db: table.db,
                        table: table.table,
                        shape: after,
                    }],
                });
            }
            DdlChange::CreateTableAsSelect { table, .. } => {
                if self.included(&table.db, &table.table)?.is_none() {
                    return Ok(());
                }
                // The shape comes with the table's first TABLE_MAP (with full metadata).
                let before = self.defs.remove(&key(&table));
                self.lost.insert(
                    key(&table),
                    format!("{at} (CREATE TABLE ... SELECT: the statement does not spell out the columns)"),
                );
                events.push(DdlEvent {
                    kind: ChangeKind::Create,
                    db: table.db.clone(),
                    table: table.table.clone(),
                    before,
                    after: None,
                    history: vec![HistoryUpdate {
                        db: table.db,
                        table: table.table,
                        shape: None,
                    }],
                });
            }
            DdlChange::AlterTable { table, ops } => {
                let route = self.included(&table.db, &table.table)?;
                let before = self.defs.get(&key(&table)).cloned();
                let mut new_name = table.clone();
                for op in &ops {
                    if let AlterOp::RenameTo(n) = op {
                        new_name = n.clone();
                    }
                }
                let new_route = self.included(&new_name.db, &new_name.table)?;
                if route.is_none() && new_route.is_none() {
                    return Ok(());
                }
                let shape_changes = ops.iter().any(|op| {
                    !matches!(
                        op,
                        AlterOp::Other(_)
                            | AlterOp::AlterColumnDefault(_)
                            | AlterOp::SetColumnVisibility { .. }
                            | AlterOp::RenameTo(_)
                    )
                });
                if shape_changes {
                    if let Some(r) = route.as_ref().or(new_route.as_ref()) {
                        if r.on_schema_change == OnSchemaChange::Fail {
                            return Err(Error::definite(format!(
                                "DDL changes the shape of {table} at {at} and its route has \
                                 on_schema_change = \"fail\": {text:?}. Nothing of it was \
                                 committed. To let it through, set on_schema_change = \"evolve\" \
                                 (or \"dlq\") on the route of topic `{}` and restart",
                                r.topic
                            )));
                        }
                    }
                }
                let after = match &before {
                    Some(b) => {
                        let mut d = b.clone();
                        match d.apply_all(&ops) {
                            Ok(()) => {
                                d.db = new_name.db.clone();
                                d.table = new_name.table.clone();
                                Some(d)
                            }
                            Err(e) => {
                                // The next TABLE_MAP (full metadata) gives the real shape.
                                tracing::warn!(%table, %at, error = %e, "tracked definition out of step; taking the next TABLE_MAP's shape");
                                self.lost.insert(
                                    key(&new_name),
                                    format!("{at} ({e}; statement: {text:?})"),
                                );
                                None
                            }
                        }
                    }
                    None => None,
                };
                self.defs.remove(&key(&table));
                if let Some(a) = &after {
                    self.defs.insert(key(&new_name), a.clone());
                }
                let renamed = new_name != table;
                let mut history = Vec::new();
                if renamed {
                    history.push(HistoryUpdate {
                        db: table.db.clone(),
                        table: table.table.clone(),
                        shape: None,
                    });
                }
                if new_route.is_some() {
                    history.push(HistoryUpdate {
                        db: new_name.db.clone(),
                        table: new_name.table.clone(),
                        shape: after.clone(),
                    });
                }
                events.push(DdlEvent {
                    kind: if renamed && !shape_changes {
                        ChangeKind::Rename
                    } else {
                        ChangeKind::Alter
                    },
                    db: new_name.db.clone(),
                    table: new_name.table.clone(),
                    before,
                    after: if new_route.is_some() { after } else { None },
                    history,
                });
            }
            DdlChange::DropTable { tables, .. } => {
                for t in tables {
                    if self.included(&t.db, &t.table)?.is_none() {
                        continue;
                    }
                    let before = self.defs.remove(&key(&t));
                    events.push(DdlEvent {
                        kind: ChangeKind::Drop,
                        db: t.db.clone(),
                        table: t.table.clone(),
                        before,
                        after: None,
                        history: vec![HistoryUpdate {
                            db: t.db,
                            table: t.table,
                            shape: None,
                        }],
                    });
                }
            }
            DdlChange::RenameTable { pairs } => {
                for (old, new) in pairs {
                    let old_in = self.included(&old.db, &old.table)?.is_some();
                    let new_in = self.included(&new.db, &new.table)?.is_some();
                    if !old_in && !new_in {
                        // Keep following the shape through renames of excluded names.
                        if let Some(mut d) = self.defs.remove(&key(&old)) {
                            d.db = new.db.clone();
                            d.table = new.table.clone();
                            self.defs.insert(key(&new), d);
                        }
                        continue;
                    }
                    let before = self.defs.remove(&key(&old));
                    let after = before.clone().map(|mut d| {
                        d.db = new.db.clone();
                        d.table = new.table.clone();
                        d
                    });
                    if let Some(a) = &after {
                        self.defs.insert(key(&new), a.clone());
                    }
                    let mut history = Vec::new();
                    if old_in {
                        history.push(HistoryUpdate {
                            db: old.db.clone(),
                            table: old.table.clone(),
                            shape: None,
                        });
                    }
                    if new_in {
                        history.push(HistoryUpdate {
                            db: new.db.clone(),
                            table: new.table.clone(),
                            shape: after.clone(),
                        });
                    }
                    events.push(DdlEvent {
                        kind: ChangeKind::Rename,
                        db: new.db.clone(),
                        table: new.table.clone(),
                        before,
                        after: if new_in { after } else { None },
                        history,
                    });
                }
            }
            DdlChange::Truncate { table } => {
                if self.included(&table.db, &table.table)?.is_none() {
                    return Ok(());
                }
                let def = self.defs.get(&key(&table)).cloned();
                events.push(DdlEvent {
                    kind: ChangeKind::Truncate,
                    db: table.db.clone(),
                    table: table.table.clone(),
                    before: def.clone(),
                    after: def,
                    history: Vec::new(),
                });
            }
            DdlChange::DropDatabase { db } => {
                let mut gone: Vec<(String, String)> = self
                    .defs
                    .keys()
                    .filter(|(d, _)| *d == db)
                    .cloned()
                    .collect();
                gone.sort();
                for (d, t) in gone {
                    if self.included(&d, &t)?.is_none() {
                        self.defs.remove(&(d, t));
                        continue;
                    }
                    let before = self.defs.remove(&(d.clone(), t.clone()));
                    events.push(DdlEvent {
                        kind: ChangeKind::Drop,
                        db: d.clone(),
                        table: t.clone(),
                        before,
                        after: None,
                        history: vec![HistoryUpdate {
                            db: d,
                            table: t,
                            shape: None,
                        }],
                    });
                }
            }
            DdlChange::CreateDatabase { .. } | DdlChange::AlterDatabase { .. } => {}
        }
        Ok(())
    }
}
