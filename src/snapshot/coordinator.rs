//! Runs snapshots inside the stream. Each table is planned into key ranges of about
//! `chunk_size` rows (split points read from the key's index), and up to `parallelism` chunk
//! readers read ranges at once, within a table and across tables. Each chunk's window lets the
//! stream's row changes of its table win over its rows ([`Window`]); a chunk is emitted as a
//! source transaction of its own at a transaction boundary, once the stream has read past its
//! watermark, in key order within its table. Every checkpoint the stream sends carries the
//! snapshot's progress (per table: the key the emitted chunks reach), so the offset record
//! always says how far the snapshot got.
//!
//! Ad-hoc requests (API or signal table, [`super::adhoc`]) add tables to the same progress.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use super::adhoc::{parse_table_name, Accepted, AdhocRequest, Inbox, Rejected};
use super::pool::Pool;
use super::progress::{KeyValue, SnapshotProgress, TableProgress};
use super::reader::{ChunkRead, Read, ReadOutcome, ReadRequest};
use super::signal::{parse_signal, Signal};
use super::window::{Arrived, Place, Watermark, Window};
use crate::config::route::Router;
use crate::config::SnapshotConfig;
use crate::error::{Error, Result};
use crate::pipeline::{route_key_idx, Change, TableCtx, TxnMeta};
use crate::position::GtidSet;
use crate::schema::TableSchema;
use crate::source::rows::{RowImage, RowsKind};
use crate::source::server::{ConnectOptions, Flavor, ServerInfo};
use crate::source::stream::Tracker;
use crate::value::Value;

/// Rows per `Change::Rows` of an emitted chunk.
const ROWS_PER_CHANGE: usize = 1024;

/// A chunk read and reconciled, waiting for the stream to pass its watermark.
struct Ready {
    schema: Arc<TableSchema>,
    last_key: Option<Vec<KeyValue>>,
    full: bool,
    complete: bool,
}

/// Where a planned chunk is.
enum State {
    /// Planned, not asked yet (its window is registered when it is asked).
    Planned,
    /// Asked: the reader's request `seq`; the window records the table's changes.
    Reading { seq: u64, window: Window },
    /// Read: waiting to be emitted.
    Arrived { window: Window, ready: Ready },
    /// A batch of a one-pass scan (no key: nothing to reconcile).
    Batch {
        rows: Vec<Vec<Value>>,
        watermark: Watermark,
        ready: Ready,
    },
    /// The one-pass scan `seq` is running; its batches are queued before this slot.
    Scanning { seq: u64 },
}

/// A key range `(after, upto]` of a table (`upto = None`: the next `chunk_size` rows).
struct Slot {
    after: Option<Vec<KeyValue>>,
    upto: Option<Vec<KeyValue>>,
    state: State,
    started: Instant,
}

/// The plan of one progress entry: the chunks asked and waiting, in key order, and how far the
/// table is planned.
#[derive(Default)]
struct Plan {
    slots: VecDeque<Slot>,
    /// The end of the last range planned (`progress.after` at the start).
    planned_to: Option<Vec<KeyValue>>,
    /// Split points read and not planned into slots yet.
    bounds: VecDeque<Vec<KeyValue>>,
    /// The split request in flight.
    splitting: Option<u64>,
    /// The split points reached the table's end: after them, one open-ended chunk.
    end: bool,
    /// The open-ended last chunk (or the scan) is planned: nothing more to plan.
    planned_all: bool,
    /// The table has no key and is scanned in one pass.
    scan: bool,
}

impl Plan {
    fn new(p: &TableProgress) -> Self {
        Plan {
            planned_to: p.after.clone(),
            scan: p.scan,
            ..Plan::default()
        }
    }
}

/// Snapshots running inside a stream.
pub struct Snapshotter {
    progress: SnapshotProgress,
    shared: Arc<SnapshotProgress>,
    plans: Vec<Plan>,
    pool: Option<Pool>,
    /// Requests sent to the readers and not answered yet (a scan until its last batch).
    pending: HashSet<u64>,
    seq: u64,
    place: Option<Arc<Place>>,
    router: Arc<Router>,
    cfg: SnapshotConfig,
    connect: ConnectOptions,
    info: ServerInfo,
    fresh: HashSet<(String, String)>,
    contexts: HashMap<(String, String), (Arc<TableSchema>, Arc<TableCtx>)>,
    inbox: Option<Inbox>,
    /// The signal table (`snapshot.signal_table`).
    signal_table: Option<(String, String)>,
    /// Signals of the transaction being read, acted on at its commit.
    signalled: Vec<Signal>,
    running: bool,
    requests_made: u64,
}

impl Snapshotter {
    /// A snapshotter for `progress` (the snapshot to run or go on with; `None`: only ad-hoc
    /// requests). Readers connect when there is something to read.
    pub fn new(
        progress: Option<SnapshotProgress>,
        connect: &ConnectOptions,
        info: &ServerInfo,
        cfg: &SnapshotConfig,
        router: Arc<Router>,
        inbox: Option<Inbox>,
    ) -> Self {
        let progress = progress.unwrap_or(SnapshotProgress {
            started_ms: crate::sink::offsets::now_ms(),
            then_stop: false,
            tables: Vec::new(),
            finished_tables: 0,
            finished_rows: 0,
            finished_requests: Vec::new(),
        });
        if !progress.tables.is_empty() {
            tracing::info!(
                tables = progress.table_count(),
                finished = progress.finished_tables,
                done = progress.tables.iter().filter(|t| t.done).count(),
                chunk_size = cfg.chunk_size,
                parallelism = cfg.parallelism,
                "snapshot running"
            );
        }
        let s = Snapshotter {
            shared: Arc::new(progress.clone()),
            plans: progress.tables.iter().map(Plan::new).collect(),
            // A snapshot_only pipeline with nothing to read still finishes (and stops).
            running: !progress.done() || progress.then_stop,
            progress,
            pool: None,
            pending: HashSet::new(),
            seq: 0,
            place: None,
            router,
            cfg: cfg.clone(),
            connect: connect.clone(),
            info: info.clone(),
            fresh: HashSet::new(),
            contexts: HashMap::new(),
            inbox,
            signal_table: cfg
                .signal_table
                .as_deref()
                .and_then(|t| parse_table_name(t).ok()),
            signalled: Vec::new(),
            requests_made: 0,
        };
        s.publish();
        s
    }

    fn publish(&self) {
        if let Some(inbox) = &self.inbox {
            let p = (!self.progress.is_empty()).then(|| self.shared.clone());
            inbox.publish(p);
        }
    }

    fn update_shared(&mut self) {
        self.shared = Arc::new(self.progress.clone());
        self.publish();
    }

    /// The progress as committed with the next checkpoint (`None` when there never was a
    /// snapshot).
    pub fn progress(&self) -> Option<Arc<SnapshotProgress>> {
        (!self.progress.is_empty()).then(|| self.shared.clone())
    }

    /// Every table is done.
    pub fn finished(&self) -> bool {
        self.progress.done()
    }

    /// Whether chunk readers are connected (there are results to wait for).
    pub fn reading(&self) -> bool {
        self.pool.is_some()
    }

    /// Whether the pipeline stops when the snapshot is done.
    pub fn then_stop(&self) -> bool {
        self.progress.then_stop
    }

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
                    .map(|(d, t, _)| (d.clone(), t.clone()))
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

    /// Acts on the signals of the transaction that commits now, so what they ask commits with
    /// it: exactly once, as the transaction itself.
    fn take_signals(&mut self) {
        for sig in std::mem::take(&mut self.signalled) {
            match sig {
                Signal::ExecuteSnapshot { id, requests } => {
                    for req in requests {
                        match self.accept(req) {
                            Ok(a) => {
                                tracing::info!(signal = %id, id = %a.id, tables = ?a.tables, "snapshot signal accepted")
                            }
                            Err(e) => {
                                tracing::warn!(signal = %id, reason = %e, "snapshot signal refused")
                            }
                        }
                    }
                }
                Signal::StopSnapshot { id, tables } => self.stop(&id, &tables),
                Signal::Ignored { id, kind } => {
                    tracing::info!(signal = %id, %kind, "signal type not performed by sluice; ignored")
                }
            }
        }
    }

    /// Stops the ad-hoc snapshots of `tables` (`db.table`; all when empty): their entries end
    /// where they got (marked done), their chunks in flight are dropped.
    fn stop(&mut self, id: &str, tables: &[String]) {
        let names: Vec<(String, String)> = tables
            .iter()
            .filter_map(|t| parse_table_name(t).ok())
            .collect();
        let mut stopped = Vec::new();
        for (i, t) in self.progress.tables.iter_mut().enumerate() {
            let named = names.is_empty() || names.iter().any(|(d, n)| *d == t.db && *n == t.table);
            if !t.done && t.request.is_some() && named {
                t.done = true;
                self.plans[i] = Plan::new(t);
                stopped.push(format!("{}.{}", t.db, t.table));
            }
        }
        tracing::info!(signal = %id, ?stopped, "ad-hoc snapshots stopped");
        self.update_shared();
    }

    /// Adds an ad-hoc request's tables to the snapshot (at a transaction boundary: the next
    /// checkpoint commits it).
    pub fn accept(&mut self, req: AdhocRequest) -> std::result::Result<Accepted, Rejected> {
        if self.info.flavor == Flavor::MySql && !self.info.gtid_mode {
            return Err(Rejected::Invalid(
                "snapshots on MySQL need gtid_mode=ON (the read-only watermarks are GTID sets)"
                    .into(),
            ));
        }
        if req.tables.is_empty() {
            return Err(Rejected::Invalid(
                "`tables` is empty: name at least one table as db.table".into(),
            ));
        }
        if let Some(f) = &req.filter {
            if f.trim().is_empty() || f.contains(';') {
                return Err(Rejected::Invalid(format!(
                    "`where` {f:?} is not a single SQL condition (empty, or with a `;`)"
                )));
            }
        }
        let mut names = Vec::new();
        for t in &req.tables {
            let (db, table) = parse_table_name(t).map_err(Rejected::Invalid)?;
            let routed = self.router.table_included(&db, &table)
                && matches!(self.router.route(&db, &table), Ok(Some(_)));
            if !routed {
                return Err(Rejected::Invalid(format!(
                    "{db}.{table} is not captured by this pipeline (it must match \
                     `source.include`, no `source.exclude` and a `[[route]]`)"
                )));
            }
            if !names.contains(&(db.clone(), table.clone())) {
                names.push((db, table));
            }
        }
        let id = match req.id {
            Some(id) if !id.trim().is_empty() => id,
            _ => {
                self.requests_made += 1;
                format!(
                    "snapshot-{}-{}",
                    crate::sink::offsets::now_ms(),
                    self.requests_made
                )
            }
        };
        if self
            .progress
            .tables
            .iter()
            .any(|t| !t.done && t.request.as_deref() == Some(id.as_str()))
        {
            return Err(Rejected::Invalid(format!(
                "a snapshot request with id {id:?} is still running"
            )));
        }
        if self.progress.done() && self.pending.is_empty() {
            // Nothing runs: the finished entries make way.
            self.progress.tables.clear();
            self.progress.finished_tables = 0;
            self.progress.finished_rows = 0;
            self.progress.finished_requests.clear();
            self.plans.clear();
            self.progress.started_ms = crate::sink::offsets::now_ms();
        }
        for (db, table) in &names {
            let mut t = TableProgress::new(db, table, 0);
            t.request = Some(id.clone());
            t.filter = req.filter.clone();
            self.plans.push(Plan::new(&t));
            self.progress.tables.push(t);
        }
        if !self.running {
            tracing::info!(%id, "snapshot running");
        }
        self.running = true;
        self.update_shared();
        Ok(Accepted {
            id,
            tables: names.iter().map(|(d, t)| format!("{d}.{t}")).collect(),
        })
    }

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
        let now_ms = crate::sink::offsets::now_ms();
        let emitted = rows.len();
        let mut began = false;
        if let Some(ctx) = ctx.filter(|_| !rows.is_empty()) {
            began = true;
            out.push(Change::Begin(TxnMeta {
                gtid: None,
                file: Arc::from(tracker.file.as_str()),
                pos: tracker.pos,
                ts_sec: u32::try_from(now_ms / 1000).unwrap_or(u32::MAX),
                server_id: 0,
                thread: None,
                connector: self.info.flavor.connector(),
            }));
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
                    rows: batch,
                    pos: tracker.pos,
                });
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
            self.router
                .route(db, table)
                .map_err(|e| Error::definite(e.to_string()))?
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
        self.contexts.insert(name, (schema.clone(), ctx.clone()));
        Ok(Some(ctx))
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
            self.pool = Some(
                Pool::start(
                    &self.connect,
                    &self.info,
                    self.cfg.chunk_size,
                    usize::try_from(self.cfg.chunk_max_bytes).unwrap_or(usize::MAX),
                    self.cfg.parallelism,
                )
                .await?,
            );
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
    fn next_request(&mut self, i: usize, executed: Option<&GtidSet>) -> Option<ReadRequest> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::position::FilePos;
    use crate::schema::{Column, ColumnKind};
    use crate::source::rows::RowImage;
    use crate::source::server::Flavor;

    fn config() -> crate::config::Config {
        let text = r#"
name = "t"
[source]
url = "mysql://u:p@127.0.0.1"
server_id = 9
include = ["d\\..*"]
[kafka]
bootstrap_servers = "127.0.0.1:9092"
[snapshot]
chunk_size = 10
parallelism = 2
signal_table = "d.sig"
"#;
        crate::config::Config::from_str_with_env(text, Vec::new()).unwrap()
    }

    fn info() -> ServerInfo {
        ServerInfo {
            flavor: Flavor::MariaDb,
            version: "11".into(),
            server_id: 1,
            log_bin: true,
            binlog_format: "ROW".into(),
            binlog_row_image: "FULL".into(),
            binlog_row_metadata: "FULL".into(),
            gtid_mode: true,
            gtid_mode_value: String::new(),
            binlog_row_value_options: String::new(),
            binlog_transaction_compression: false,
            binlog_expire_seconds: 0,
        }
    }

    fn snapshotter(tables: &[&str]) -> Snapshotter {
        let cfg = config();
        let router = Arc::new(Router::new(&cfg).unwrap());
        let progress = SnapshotProgress {
            started_ms: 1,
            then_stop: false,
            tables: tables
                .iter()
                .map(|t| TableProgress::new("d", t, 0))
                .collect(),
            finished_tables: 0,
            finished_rows: 0,
            finished_requests: Vec::new(),
        };
        Snapshotter::new(
            Some(progress),
            &ConnectOptions::from_config(&cfg.source),
            &info(),
            &cfg.snapshot,
            router,
            None,
        )
    }

    fn schema(table: &str, cols: &[&str]) -> Arc<TableSchema> {
        Arc::new(TableSchema {
            db: "d".into(),
            table: table.into(),
            columns: cols
                .iter()
                .map(|c| Column {
                    name: (*c).into(),
                    kind: if *c == "id" {
                        ColumnKind::Int { unsigned: false }
                    } else {
                        ColumnKind::String {
                            charset: 45,
                            binary: false,
                            fixed: false,
                            max_bytes: 400,
                        }
                    },
                    nullable: false,
                })
                .collect(),
            primary_key: vec![0],
        })
    }

    fn chunk(seq: u64, ids: std::ops::RangeInclusive<i64>, full: bool, at: u64) -> ReadOutcome {
        let rows: Vec<Vec<Value>> = ids.clone().map(|i| vec![Value::Int(i)]).collect();
        ReadOutcome::Chunk(ChunkRead {
            seq,
            db: "d".into(),
            table: "t".into(),
            schema: schema("t", &["id"]),
            key_names: vec!["id".into()],
            key_idx: vec![0],
            last_key: Some(vec![KeyValue::Int(*ids.end())]),
            rows,
            watermark: Watermark::Exact(FilePos {
                file: "b.000001".into(),
                pos: at,
            }),
            full,
            complete: false,
        })
    }

    fn tracker(pos: u64) -> Tracker {
        Tracker {
            file: "b.000001".into(),
            pos,
            mysql: None,
            mariadb: None,
            xa_prepared: Default::default(),
        }
    }

    /// (ids of each emitted chunk, the progress `after` committed with it).
    fn emitted(changes: &[Change]) -> Vec<(Vec<i64>, Option<Vec<KeyValue>>)> {
        let mut out = Vec::new();
        let mut ids = Vec::new();
        for c in changes {
            match c {
                Change::Rows { rows, kind, .. } => {
                    assert_eq!(*kind, RowsKind::Read);
                    ids.extend(rows.iter().map(|r| match r.after.as_deref() {
                        Some([Value::Int(i)]) => *i,
                        other => panic!("{other:?}"),
                    }))
                }
                Change::Commit(cp) | Change::Progress(cp) => {
                    let p = cp.snapshot.as_ref().expect("progress");
                    out.push((std::mem::take(&mut ids), p.tables[0].after.clone()));
                }
                _ => {}
            }
        }
        out
    }

    fn read_of(r: &ReadRequest) -> (Option<Vec<KeyValue>>, Option<Vec<KeyValue>>) {
        match &r.what {
            Read::Chunk { after, upto } => (after.clone(), upto.clone()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ranges_are_planned_read_in_parallel_and_emitted_in_key_order() {
        let mut s = snapshotter(&["t"]);
        let split = s.next_request(0, None).unwrap();
        assert!(
            matches!(
                split.what,
                Read::Split {
                    after: None,
                    count: 4,
                    estimate: true
                }
            ),
            "{split:?}"
        );
        assert!(s.next_request(0, None).is_none(), "one split at a time");
        s.on_result(ReadOutcome::Split {
            seq: split.seq,
            key_names: vec!["id".into()],
            bounds: vec![vec![KeyValue::Int(10)], vec![KeyValue::Int(20)]],
            end: true,
            estimate: Some(30),
        })
        .unwrap();
        let k = |i| Some(vec![KeyValue::Int(i)]);
        let a = s.next_request(0, None).unwrap();
        let b = s.next_request(0, None).unwrap();
        let c = s.next_request(0, None).unwrap();
        assert_eq!(read_of(&a), (None, k(10)));
        assert_eq!(read_of(&b), (k(10), k(20)));
        assert_eq!(read_of(&c), (k(20), None));
        assert!(
            s.next_request(0, None).is_none(),
            "the table is planned to its end"
        );
        assert!(s.plans[0].planned_all);
        assert_eq!(s.progress.tables[0].estimate, 30);

        // The second range arrives first: it waits for the first.
        s.on_result(chunk(b.seq, 11..=20, false, 100)).unwrap();
        assert!(s.try_emit(&tracker(500)).unwrap().is_none());
        s.on_result(chunk(a.seq, 1..=10, false, 90)).unwrap();
        // Not before the stream passed the watermarks.
        assert!(s
            .try_emit(&tracker(95))
            .unwrap()
            .is_some_and(|c| emitted(&c).len() == 1));
        let out = s.try_emit(&tracker(500)).unwrap().unwrap();
        assert_eq!(emitted(&out), vec![((11..=20).collect(), k(20))]);

        // The open-ended last range comes back full: the rest is another chunk after its
        // last row, and the table is done only when a read comes back short.
        s.on_result(chunk(c.seq, 21..=30, true, 100)).unwrap();
        let d = s.next_request(0, None).unwrap();
        assert_eq!(read_of(&d), (k(30), None));
        let out = s.try_emit(&tracker(500)).unwrap().unwrap();
        assert_eq!(emitted(&out), vec![((21..=30).collect(), k(30))]);
        assert!(!s.finished());
        let ReadOutcome::Chunk(mut last) = chunk(d.seq, 31..=33, false, 100) else {
            unreachable!()
        };
        last.complete = true;
        s.on_result(ReadOutcome::Chunk(last)).unwrap();
        let out = s.try_emit(&tracker(500)).unwrap().unwrap();
        assert_eq!(emitted(&out), vec![((31..=33).collect(), k(33))]);
        assert!(s.finished());
        assert_eq!(s.progress.tables[0].rows, 33);
        assert_eq!(s.progress.tables[0].chunks, 4);
    }

    #[test]
    fn a_bounded_range_read_to_its_limit_leaves_the_rest_for_another_chunk() {
        let mut s = snapshotter(&["t"]);
        let split = s.next_request(0, None).unwrap();
        s.on_result(ReadOutcome::Split {
            seq: split.seq,
            key_names: vec!["id".into()],
            bounds: vec![vec![KeyValue::Int(100)]],
            end: true,
            estimate: None,
        })
        .unwrap();
        let a = s.next_request(0, None).unwrap();
        let _tail = s.next_request(0, None).unwrap();
        s.on_result(chunk(a.seq, 1..=20, true, 10)).unwrap();
        let rest = s.next_request(0, None).unwrap();
        let k = |i| Some(vec![KeyValue::Int(i)]);
        assert_eq!(read_of(&rest), (k(20), k(100)));
        let out = s.try_emit(&tracker(500)).unwrap().unwrap();
        // Progress reaches the last row read, not the range's planned end.
        assert_eq!(emitted(&out), vec![((1..=20).collect(), k(20))]);
    }

    #[test]
    fn a_ddl_cancels_the_tables_chunks_and_plans_them_again() {
        let mut s = snapshotter(&["t"]);
        let split = s.next_request(0, None).unwrap();
        s.on_result(ReadOutcome::Split {
            seq: split.seq,
            key_names: vec!["id".into()],
            bounds: vec![vec![KeyValue::Int(10)]],
            end: false,
            estimate: None,
        })
        .unwrap();
        let a = s.next_request(0, None).unwrap();
        let mut ddl = Change::Schema(crate::pipeline::SchemaEvent {
            db: "d".into(),
            table: "t".into(),
            record: Some(Vec::new()),
            history: Vec::new(),
        });
        s.observe(&mut ddl);
        // The cancelled chunk's result is dropped; planning starts again with a split.
        s.on_result(chunk(a.seq, 1..=10, false, 10)).unwrap();
        assert!(s.try_emit(&tracker(500)).unwrap().is_none());
        let again = s.next_request(0, None).unwrap();
        assert!(
            matches!(again.what, Read::Split { after: None, .. }),
            "{again:?}"
        );
        assert!(again.fresh, "the reader reads the new shape");
    }

    #[test]
    fn requests_and_signals_add_tables_and_commit_with_their_transaction() {
        let mut s = snapshotter(&[]);
        assert!(s.progress().is_none());
        let req = |tables: &[&str], id: Option<&str>| AdhocRequest {
            tables: tables.iter().map(|t| t.to_string()).collect(),
            filter: Some("id > 5".into()),
            id: id.map(String::from),
        };
        assert!(matches!(
            s.accept(req(&["other.t"], None)),
            Err(Rejected::Invalid(m)) if m.contains("not captured")
        ));
        assert!(matches!(
            s.accept(req(&[], None)),
            Err(Rejected::Invalid(_))
        ));
        let a = s.accept(req(&["d.t", "d.t", "d.u"], Some("r1"))).unwrap();
        assert_eq!(a.tables, ["d.t", "d.u"]);
        assert!(matches!(
            s.accept(req(&["d.t"], Some("r1"))),
            Err(Rejected::Invalid(m)) if m.contains("still running")
        ));
        let p = s.progress().unwrap();
        assert_eq!(p.tables.len(), 2);
        assert_eq!(p.tables[0].request.as_deref(), Some("r1"));
        assert_eq!(p.tables[0].filter.as_deref(), Some("id > 5"));

        // A signal row acts when its transaction commits, and that commit carries it.
        let sig = schema("sig", &["id", "type", "data"]);
        let target = s.router.route("d", "sig").unwrap().unwrap();
        let ctx = Arc::new(TableCtx::new(sig, target, vec![0]).unwrap());
        let row = vec![
            Value::Bytes(b"s1".to_vec()),
            Value::Bytes(b"execute-snapshot".to_vec()),
            Value::Bytes(br#"{"data-collections": ["d.v"]}"#.to_vec()),
        ];
        let mut rows = Change::Rows {
            table: ctx,
            kind: RowsKind::Insert,
            rows: vec![RowImage {
                before: None,
                after: Some(row),
            }],
            pos: 10,
        };
        s.observe(&mut rows);
        assert_eq!(s.progress.tables.len(), 2, "not before the commit");
        let mut commit = Change::Commit(tracker(20).checkpoint(0));
        s.observe(&mut commit);
        let Change::Commit(cp) = commit else {
            unreachable!()
        };
        let p = cp.snapshot.expect("the commit carries the request");
        assert_eq!(p.tables.len(), 3);
        assert_eq!(p.tables[2].table, "v");
        assert_eq!(p.tables[2].request.as_deref(), Some("s1"));

        // stop-snapshot ends them where they got.
        s.signalled.push(Signal::StopSnapshot {
            id: "s2".into(),
            tables: vec!["d.t".into()],
        });
        s.take_signals();
        assert!(s.progress.tables[0].done);
        assert!(!s.progress.tables[1].done);
    }
}
