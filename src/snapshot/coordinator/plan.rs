//! Planning chunks and reading them: [`Snapshotter::step`] asks the readers for split points
//! and chunks while they are free, and their results ([`Snapshotter::on_result`]) go into the
//! tables' plans: split points become key ranges, a chunk read is reconciled with its window
//! and waits to be emitted, a read that stopped at its limit leaves the rest of its range as
//! another chunk, a table without a usable key is scanned in one pass.
//!
//! Invariant: a chunk's window is registered before its request is sent, so before its reader
//! takes any watermark; at most `parallelism` requests are out and `parallelism + 1` chunks
//! held; tables are planned one after another; the result of a request the plan no longer
//! holds (cancelled) is dropped.

use std::time::Instant;

use super::{Plan, Ready, Slot, Snapshotter, State};
use crate::error::{Error, Result};
use crate::position::GtidSet;
use crate::snapshot::pool::Pool;
use crate::snapshot::reader::{ChunkRead, Read, ReadOutcome, ReadRequest};
use crate::snapshot::window::{Arrived, Window};

impl Snapshotter {
    /// The next reader result (cancel-safe); never when no reader runs.
    pub async fn next_result(&mut self) -> Option<Result<ReadOutcome>> {
        match self.pool.as_mut() {
            Some(p) => p.next().await,
            None => std::future::pending().await,
        }
    }

    /// The entry and slot of the request `seq`.
    fn find(&self, seq: u64) -> Option<(usize, usize)> {
        self.plans.iter().enumerate().find_map(|(i, p)| {
            p.slots
                .iter()
                .position(|s| match &s.state {
                    State::Reading { seq: q, .. } | State::Scanning { seq: q } => *q == seq,
                    _ => false,
                })
                .map(|j| (i, j))
        })
    }

    /// A reader result arrived.
    pub fn on_result(&mut self, outcome: ReadOutcome) -> Result<()> {
        match outcome {
            ReadOutcome::Skip { seq, reason } => {
                self.pending.remove(&seq);
                let entry = self
                    .find(seq)
                    .map(|(i, _)| i)
                    .or_else(|| self.plans.iter().position(|p| p.splitting == Some(seq)));
                let Some(i) = entry else {
                    return Ok(());
                };
                let t = &mut self.progress.tables[i];
                tracing::warn!(table = %format!("{}.{}", t.db, t.table), %reason, request = t.request.as_deref().unwrap_or(""), "table not snapshotted");
                t.done = true;
                self.plans[i] = Plan::new(t);
                self.update_shared();
                Ok(())
            }
            ReadOutcome::NoKey { seq } => {
                self.pending.remove(&seq);
                let Some(i) = self.plans.iter().position(|p| p.splitting == Some(seq)) else {
                    return Ok(());
                };
                let t = &mut self.progress.tables[i];
                tracing::warn!(table = %format!("{}.{}", t.db, t.table), "the table has neither a primary key nor a unique index of NOT NULL columns: it is read in one pass, and its changes while it is read are not reconciled with the rows read (see docs/snapshots.md)");
                t.scan = true;
                self.plans[i] = Plan::new(t);
                self.update_shared();
                Ok(())
            }
            ReadOutcome::Split {
                seq,
                key_names,
                bounds,
                end,
                estimate,
            } => {
                self.pending.remove(&seq);
                let Some(i) = self.plans.iter().position(|p| p.splitting == Some(seq)) else {
                    return Ok(());
                };
                let t = &mut self.progress.tables[i];
                if t.key.is_empty() {
                    t.key = key_names;
                }
                if let Some(e) = estimate {
                    t.estimate = e;
                }
                let plan = &mut self.plans[i];
                plan.splitting = None;
                plan.bounds.extend(bounds);
                plan.end = end;
                Ok(())
            }
            ReadOutcome::Chunk(c) => {
                self.on_chunk(c);
                Ok(())
            }
        }
    }

    fn on_chunk(&mut self, c: ChunkRead) {
        let seq = c.seq;
        let Some((i, j)) = self.find(seq) else {
            // Cancelled. A scan's batches go on coming until its last one.
            if c.complete || !c.key_names.is_empty() || !c.full {
                self.pending.remove(&seq);
            }
            return;
        };
        let plan = &mut self.plans[i];
        let ready = Ready {
            schema: c.schema,
            last_key: c.last_key.clone(),
            full: c.full,
            complete: c.complete,
        };
        if plan.scan {
            // A batch of the scan goes before the scanning slot; the last one ends it.
            let batch = Slot {
                after: None,
                upto: None,
                state: State::Batch {
                    rows: c.rows,
                    watermark: c.watermark,
                    ready,
                },
                started: plan.slots[j].started,
            };
            plan.slots.insert(j, batch);
            if c.complete {
                self.pending.remove(&seq);
                plan.slots.remove(j + 1);
            }
            return;
        }
        self.pending.remove(&seq);
        let slot = &mut plan.slots[j];
        let State::Reading { window, .. } = std::mem::replace(&mut slot.state, State::Planned)
        else {
            return;
        };
        let mut window = window;
        let arrived = Arrived {
            rows: c.rows,
            key_idx: c.key_idx,
            key_names: c.key_names,
            watermark: c.watermark,
        };
        match window.arrive(arrived) {
            Ok(()) => {
                let rest = (ready.full).then(|| Slot {
                    after: ready.last_key.clone(),
                    upto: slot.upto.clone(),
                    state: State::Planned,
                    started: Instant::now(),
                });
                slot.state = State::Arrived { window, ready };
                if let Some(rest) = rest {
                    // More rows than the read took: the rest of the range is another chunk.
                    plan.slots.insert(j + 1, rest);
                }
            }
            Err(reason) => {
                tracing::info!(%reason, "reading the chunk again");
                slot.state = State::Planned;
            }
        }
    }

    /// Chunks asked and not emitted yet, over all tables.
    fn in_flight(&self) -> usize {
        self.plans
            .iter()
            .flat_map(|p| p.slots.iter())
            .filter(|s| !matches!(s.state, State::Planned))
            .count()
    }

    /// At a transaction boundary: closes the readers when every table is done; otherwise asks
    /// for more chunks while readers are free, registering each chunk's window before its
    /// reader takes any watermark. `executed`: the stream's executed GTID set now. Returns
    /// true when the snapshot just finished.
    pub async fn step(&mut self, executed: Option<&GtidSet>) -> Result<bool> {
        if self.progress.done() {
            if self.pending.is_empty() {
                self.pool = None;
            }
            let was = std::mem::replace(&mut self.running, false);
            return Ok(was);
        }
        if self.pool.is_none() {
            self.pool = Some(Pool::start(&self.connect, &self.info, &self.cfg).await?);
        }
        let parallelism = self.cfg.parallelism.max(1);
        // Chunks read ahead: one more than readers, so a reader is busy while a chunk waits
        // for the stream; memory holds at most this many chunks.
        let ahead = parallelism + 1;
        let mut requests = Vec::new();
        for i in 0..self.plans.len() {
            if self.progress.tables[i].done {
                continue;
            }
            loop {
                if self.pending.len() + requests.len() >= parallelism || self.in_flight() >= ahead {
                    break;
                }
                match self.next_request(i, executed) {
                    Some(r) => requests.push(r),
                    None => break,
                }
            }
            if !self.plans[i].planned_all {
                // Tables are planned one after another.
                break;
            }
        }
        for r in requests {
            self.pending.insert(r.seq);
            let pool = self
                .pool
                .as_ref()
                .ok_or_else(|| Error::transient("the snapshot readers stopped"))?;
            pool.send(r).await?;
        }
        Ok(false)
    }

    /// The next request for entry `i`, if it has one to make now.
    pub(super) fn next_request(
        &mut self,
        i: usize,
        executed: Option<&GtidSet>,
    ) -> Option<ReadRequest> {
        let (db, table, filter, estimate) = {
            let t = &self.progress.tables[i];
            (t.db.clone(), t.table.clone(), t.filter.clone(), t.estimate)
        };
        self.seq += 1;
        let seq = self.seq;
        let fresh = self.fresh.remove(&(db.clone(), table.clone()));
        let plan = &mut self.plans[i];
        let req = |what| ReadRequest {
            seq,
            db: db.clone(),
            table: table.clone(),
            what,
            filter: filter.clone(),
            fresh,
        };
        let window = || Window::new(&db, &table, self.cfg.max_window_changes, executed.cloned());
        // A chunk planned before (the rest of a range, or one to read again) comes first.
        if let Some(slot) = plan
            .slots
            .iter_mut()
            .find(|s| matches!(s.state, State::Planned))
        {
            slot.state = State::Reading {
                seq,
                window: window(),
            };
            slot.started = Instant::now();
            return Some(req(Read::Chunk {
                after: slot.after.clone(),
                upto: slot.upto.clone(),
            }));
        }
        if plan.planned_all {
            return None;
        }
        if plan.scan {
            plan.planned_all = true;
            plan.slots.push_back(Slot {
                after: None,
                upto: None,
                state: State::Scanning { seq },
                started: Instant::now(),
            });
            return Some(req(Read::Scan));
        }
        let next = plan.bounds.pop_front().map(Some).or_else(|| {
            // After the last split point: the rest of the table, a chunk at a time.
            (plan.end).then_some(None)
        });
        match next {
            Some(upto) => {
                plan.planned_all = upto.is_none();
                let after = std::mem::replace(&mut plan.planned_to, upto.clone());
                plan.slots.push_back(Slot {
                    after: after.clone(),
                    upto: upto.clone(),
                    state: State::Reading {
                        seq,
                        window: window(),
                    },
                    started: Instant::now(),
                });
                Some(req(Read::Chunk { after, upto }))
            }
            None if plan.splitting.is_none() => {
                plan.splitting = Some(seq);
                Some(req(Read::Split {
                    after: plan.planned_to.clone(),
                    count: self.cfg.parallelism.max(1) * 2,
                    estimate: estimate == 0 && plan.planned_to.is_none(),
                }))
            }
            None => None,
        }
    }
}
