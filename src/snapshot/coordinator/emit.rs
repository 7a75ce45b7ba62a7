//! Emitting chunks ([`Snapshotter::try_emit`]): at a transaction boundary, each chunk that
//! arrived, comes next in its table's key order and whose watermark the stream has passed
//! becomes a source transaction of its own: `op = "r"` rows in changes of at most
//! [`ROWS_PER_CHANGE`], then a checkpoint carrying the progress.
//!
//! Invariant: a table's chunks go out in key order, and its progress (the key the emitted
//! chunks reach) moves on only in the checkpoint that commits the chunk's rows.

use std::sync::Arc;

use super::{Slot, Snapshotter, State};
use crate::capture::Tracker;
use crate::error::{Error, Result};
use crate::model::{ReadMarks, ReadPlace, RowImage, RowsKind};
use crate::pipeline::{route_key_idx, Change, TableCtx, TxnMeta};
use crate::schema::TableSchema;

/// Rows per `Change::Rows` of an emitted chunk.
const ROWS_PER_CHANGE: usize = 1024;

impl Snapshotter {
    /// At a transaction boundary: every chunk that arrived, comes next in its table's key order
    /// and whose watermark the stream (at `tracker`) has passed, each as a source transaction
    /// of its own.
    pub fn try_emit(&mut self, tracker: &Tracker) -> Result<Option<Vec<Change>>> {
        let mut out = Vec::new();
        for i in 0..self.plans.len() {
            loop {
                let ready = self.plans[i].slots.front().is_some_and(|s| match &s.state {
                    State::Arrived { window, .. } => window.watermark().is_some_and(|w| {
                        w.passed(&tracker.file, tracker.pos, tracker.mysql.as_ref())
                    }),
                    State::Batch { watermark, .. } => {
                        watermark.passed(&tracker.file, tracker.pos, tracker.mysql.as_ref())
                    }
                    _ => false,
                });
                if !ready {
                    break;
                }
                let Some(slot) = self.plans[i].slots.pop_front() else {
                    break;
                };
                self.emit(i, slot, tracker, &mut out)?;
            }
        }
        Ok((!out.is_empty()).then_some(out))
    }

    fn emit(
        &mut self,
        i: usize,
        slot: Slot,
        tracker: &Tracker,
        out: &mut Vec<Change>,
    ) -> Result<()> {
        let (rows, read, ready) = match slot.state {
            State::Arrived { window, ready } => match window.finish() {
                Some((rows, read)) => (rows, read, ready),
                None => return Ok(()),
            },
            State::Batch { rows, ready, .. } => {
                let n = rows.len();
                (rows, n, ready)
            }
            _ => return Ok(()),
        };
        let (db, table) = {
            let t = &self.progress.tables[i];
            (t.db.clone(), t.table.clone())
        };
        let ctx = self.context(&db, &table, &ready.schema)?;
        let now_ms = crate::model::clock::now_ms();
        let emitted = rows.len();
        let mut began = false;
        if let Some(ctx) = ctx.filter(|_| !rows.is_empty()) {
            began = true;
            out.push(Change::Begin(TxnMeta {
                gtid: None,
                file: Arc::from(tracker.file.as_str()),
                pos: tracker.pos,
                ts_us: now_ms.saturating_mul(1000),
                server_id: 0,
                thread: None,
                connector: self.info.flavor.connector(),
            }));
            let chunk = self.chunk_place(i, ready.complete);
            let incremental = self.progress.tables[i].request.is_some();
            let total = rows.len();
            let mut start = 0;
            let mut rows = rows.into_iter().peekable();
            while rows.peek().is_some() {
                let batch: Vec<RowImage> = rows
                    .by_ref()
                    .take(ROWS_PER_CHANGE)
                    .map(|after| RowImage {
                        before: None,
                        after: Some(after),
                    })
                    .collect();
                out.push(Change::Rows {
                    table: ctx.clone(),
                    kind: RowsKind::Read,
                    marks: ReadMarks::of_chunk_part(chunk, incremental, start, batch.len(), total),
                    rows: batch,
                    pos: tracker.pos,
                    ts_us: now_ms.saturating_mul(1000),
                });
                start += ROWS_PER_CHANGE;
            }
        }
        let t = &mut self.progress.tables[i];
        if !t.scan {
            // The range is covered up to its planned end, or up to the last row read when the
            // read stopped at its limit or the range was open-ended.
            let reached = if ready.full || slot.upto.is_none() {
                ready.last_key.clone()
            } else {
                slot.upto.clone()
            };
            if reached.is_some() {
                t.after = reached;
            }
        }
        t.rows += emitted as u64;
        t.chunks += 1;
        t.done = ready.complete;
        tracing::info!(
            table = %format!("{db}.{table}"),
            rows = t.rows,
            estimate = t.estimate,
            chunk_rows = read,
            emitted,
            done = t.done,
            ms = slot.started.elapsed().as_millis() as u64,
            "snapshot chunk"
        );
        if t.done {
            tracing::info!(table = %format!("{db}.{table}"), rows = t.rows, chunks = t.chunks, request = t.request.as_deref().unwrap_or(""), "table snapshotted");
        }
        self.update_shared();
        let mut cp = tracker.checkpoint(now_ms);
        cp.snapshot = self.progress();
        out.push(if began {
            Change::Commit(cp)
        } else {
            Change::Progress(cp)
        });
        Ok(())
    }

    /// Where the chunk of entry `i` about to be emitted sits (for the rows' `source.snapshot`):
    /// it starts its table when the table emitted no row yet, ends it when it is the table's
    /// last (`complete`); its table is the snapshot's first when no table of the initial
    /// snapshot emitted a row yet, the last when every other one is done. Emission order
    /// decides, so the marks stay right when chunks of several tables are read at once; a
    /// resumed snapshot goes on counting from its stored progress.
    fn chunk_place(&self, i: usize, complete: bool) -> ReadPlace {
        let p = &self.progress;
        let initial = |t: &&crate::snapshot::progress::TableProgress| t.request.is_none();
        ReadPlace {
            first_in_table: p.tables[i].rows == 0,
            last_in_table: complete,
            first_table: p.finished_rows == 0
                && p.tables.iter().filter(initial).all(|t| t.rows == 0),
            last_table: p
                .tables
                .iter()
                .enumerate()
                .filter(|(j, t)| *j != i && t.request.is_none())
                .all(|(_, t)| t.done),
        }
    }

    /// The stream's table context for snapshot rows of `db.table` read with `schema` (cached
    /// per shape, so an Avro route registers each shape once); `None` when no route takes the
    /// table any more.
    fn context(
        &mut self,
        db: &str,
        table: &str,
        schema: &Arc<TableSchema>,
    ) -> Result<Option<Arc<TableCtx>>> {
        let name = (db.to_string(), table.to_string());
        if let Some((s, ctx)) = self.contexts.get(&name) {
            if Arc::ptr_eq(s, schema) {
                return Ok(Some(ctx.clone()));
            }
        }
        let target = if self.router.table_included(db, table) {
            self.router.route(db, table).map_err(Error::definite_from)?
        } else {
            None
        };
        let Some(target) = target else {
            return Ok(None);
        };
        let key_idx = route_key_idx(schema, &target)?;
        let ctx = Arc::new(
            TableCtx::new(schema.clone(), target, key_idx)
                .map_err(|e| e.context(format!("routing the snapshot of {db}.{table}")))?,
        );
        if let Some(m) = self.router.metrics() {
            m.register_tables([ctx.label.as_str()]);
        }
        self.contexts.insert(name, (schema.clone(), ctx.clone()));
        Ok(Some(ctx))
    }
}
