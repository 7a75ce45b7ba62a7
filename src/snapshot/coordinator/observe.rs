//! What the stream's changes do to a running snapshot ([`Snapshotter::observe`]): row changes
//! of a table with chunks in flight feed those chunks' windows; a DDL on such a table cancels
//! its chunks, read again with the new shape; inserts into the signal table are kept until
//! their transaction commits; every checkpoint gets the progress.
//!
//! Invariant (with the stream, which passes each change it sends here first): the window of a
//! chunk being read or waiting sees every row image of its table the stream sends, and a chunk
//! of a table whose shape changed is dropped (its plan starts again) instead of emitted.

use std::sync::Arc;

use super::{Plan, Snapshotter, State};
use crate::model::RowsKind;
use crate::pipeline::Change;
use crate::snapshot::signal::parse_signal;
use crate::snapshot::window::Place;

impl Snapshotter {
    /// Looks at a change on its way to the sink: row changes of a table with chunks in flight
    /// feed their windows; a DDL on such a table cancels its chunks (read again with the new
    /// shape); rows of the signal table become requests; checkpoints get the progress.
    pub fn observe(&mut self, change: &mut Change) {
        match change {
            Change::Begin(meta) => self.place = Some(Arc::new(Place::of(meta))),
            Change::Rows {
                table, rows, kind, ..
            } => {
                let (db, name) = (&table.schema.db, &table.schema.table);
                if *kind == RowsKind::Insert
                    && self
                        .signal_table
                        .as_ref()
                        .is_some_and(|(d, t)| d == db && t == name)
                {
                    for image in rows.iter().filter_map(|r| r.after.as_ref()) {
                        match parse_signal(&table.schema, image) {
                            Ok(Some(sig)) => self.signalled.push(sig),
                            Ok(None) => {}
                            Err(reason) => {
                                tracing::warn!(%reason, "signal row not understood; ignored")
                            }
                        }
                    }
                }
                let Some(place) = &self.place else {
                    return;
                };
                for (i, plan) in self.plans.iter_mut().enumerate() {
                    let p = &self.progress.tables[i];
                    if p.done || p.db != *db || p.table != *name {
                        continue;
                    }
                    for slot in plan.slots.iter_mut() {
                        let window = match &mut slot.state {
                            State::Reading { window, .. } | State::Arrived { window, .. } => window,
                            _ => continue,
                        };
                        for r in rows.iter() {
                            for image in [&r.before, &r.after].into_iter().flatten() {
                                window.on_image(place, table, image);
                            }
                        }
                    }
                }
            }
            // A history-only event (a table's first known shape) changes no table.
            Change::Schema(ev) if ev.record.is_none() => {}
            Change::Schema(ev) => {
                let touched: Vec<(String, String)> = ev
                    .history
                    .iter()
                    .map(|h| (h.db.clone(), h.table.clone()))
                    .chain([(ev.db.clone(), ev.table.clone())])
                    .collect();
                for (i, plan) in self.plans.iter_mut().enumerate() {
                    let p = &self.progress.tables[i];
                    let hit = !p.done && touched.iter().any(|(d, t)| *d == p.db && *t == p.table);
                    if hit {
                        tracing::info!(table = %format!("{}.{}", p.db, p.table), "the table's shape changed while chunks were read; reading them again");
                        *plan = Plan::new(p);
                    }
                }
                self.fresh.extend(touched);
            }
            Change::Commit(cp) => {
                self.take_signals();
                cp.snapshot = self.progress();
            }
            Change::Progress(cp) => cp.snapshot = self.progress(),
        }
    }
}
