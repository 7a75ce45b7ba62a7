//! Runs a snapshot inside the stream: asks the chunk reader for one chunk at a time, lets the
//! stream's row changes of that table win over the chunk's rows ([`Window`]), and emits the
//! chunk as its own source transaction at a transaction boundary once the stream has read past
//! the chunk's watermark. Every checkpoint the stream sends carries the snapshot's progress, so
//! the offset record always says how far the snapshot got.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc;

use super::progress::SnapshotProgress;
use super::reader::{ChunkRead, ReadOutcome, ReadRequest, Reader};
use super::window::{Arrived, Place, Window};
use crate::config::route::Router;
use crate::config::SnapshotConfig;
use crate::error::{Error, Result};
use crate::pipeline::{route_key_idx, Change, TableCtx, TxnMeta};
use crate::position::GtidSet;
use crate::schema::TableSchema;
use crate::source::rows::{RowImage, RowsKind};
use crate::source::server::{ConnectOptions, ServerInfo};
use crate::source::stream::Tracker;

/// Rows per `Change::Rows` of an emitted chunk.
const ROWS_PER_CHANGE: usize = 1024;

/// What the chunk in flight is waiting for.
struct InFlight {
    seq: u64,
    window: Window,
    /// Set when the chunk arrived: its shape, last key and whether it ends the table.
    read: Option<(
        Arc<TableSchema>,
        Option<Vec<super::progress::KeyValue>>,
        bool,
    )>,
    started: Instant,
}

/// The snapshot running inside a stream.
pub struct Snapshotter {
    progress: SnapshotProgress,
    shared: Arc<SnapshotProgress>,
    in_flight: Option<InFlight>,
    seq: u64,
    requests: mpsc::Sender<ReadRequest>,
    results: mpsc::Receiver<Result<ReadOutcome>>,
    task: tokio::task::JoinHandle<()>,
    place: Option<Arc<Place>>,
    router: Arc<Router>,
    max_window_changes: usize,
    fresh: HashSet<(String, String)>,
    contexts: HashMap<(String, String), (Arc<TableSchema>, Arc<TableCtx>)>,
    connector: &'static str,
}

impl Drop for Snapshotter {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Snapshotter {
    /// Starts the chunk reader (its own connection) for `progress`.
    pub async fn start(
        progress: SnapshotProgress,
        connect: &ConnectOptions,
        info: &ServerInfo,
        cfg: &SnapshotConfig,
        router: Arc<Router>,
    ) -> Result<Self> {
        // A few slots: a chunk cancelled by a DDL may still be read while the next is asked.
        let (req_tx, mut req_rx) = mpsc::channel::<ReadRequest>(8);
        let (res_tx, res_rx) = mpsc::channel(8);
        let task = if progress.done() {
            // Finished before: only its progress goes on being recorded.
            tokio::spawn(async {})
        } else {
            let mut reader = Reader::connect(connect, info, cfg.chunk_size).await?;
            tokio::spawn(async move {
                while let Some(req) = req_rx.recv().await {
                    let out = reader.read(&req).await;
                    let failed = out.is_err();
                    if res_tx.send(out).await.is_err() || failed {
                        return;
                    }
                }
            })
        };
        tracing::info!(
            tables = progress.tables.len(),
            done = progress.tables.iter().filter(|t| t.done).count(),
            chunk_size = cfg.chunk_size,
            "snapshot running"
        );
        Ok(Snapshotter {
            shared: Arc::new(progress.clone()),
            progress,
            in_flight: None,
            seq: 0,
            requests: req_tx,
            results: res_rx,
            task,
            place: None,
            router,
            max_window_changes: cfg.max_window_changes,
            fresh: HashSet::new(),
            contexts: HashMap::new(),
            connector: info.flavor.connector(),
        })
    }

    /// The progress as committed with the next checkpoint.
    pub fn progress(&self) -> Arc<SnapshotProgress> {
        self.shared.clone()
    }

    /// Every table is done.
    pub fn finished(&self) -> bool {
        self.progress.done()
    }

    /// Closes the chunk reader of a finished snapshot (its progress goes on being recorded).
    pub fn retire(&mut self) {
        self.task.abort();
    }

    /// Whether the pipeline stops when the snapshot is done.
    pub fn then_stop(&self) -> bool {
        self.progress.then_stop
    }

    /// Looks at a change on its way to the sink: row changes of the table whose chunk is in
    /// flight feed its window; a DDL on that table cancels the chunk (read again with the new
    /// shape); checkpoints get the snapshot's progress.
    pub fn observe(&mut self, change: &mut Change) {
        match change {
            Change::Begin(meta) => self.place = Some(Arc::new(Place::of(meta))),
            Change::Rows { table, rows, .. } => {
                let Some(f) = self.in_flight.as_mut() else {
                    return;
                };
                if !f.window.is_for(&table.schema.db, &table.schema.table) {
                    return;
                }
                let Some(place) = &self.place else {
                    return;
                };
                for r in rows.iter() {
                    for image in [&r.before, &r.after].into_iter().flatten() {
                        f.window.on_image(place, table, image);
                    }
                }
            }
            // A history-only event (a table's first known shape) changes no table.
            Change::Schema(ev) if ev.record.is_none() => {}
            Change::Schema(ev) => {
                let hit = self.in_flight.as_ref().is_some_and(|f| {
                    f.window.is_for(&ev.db, &ev.table)
                        || ev.history.iter().any(|(d, t, _)| f.window.is_for(d, t))
                });
                let touched = ev
                    .history
                    .iter()
                    .map(|(d, t, _)| (d.clone(), t.clone()))
                    .chain([(ev.db.clone(), ev.table.clone())]);
                self.fresh.extend(touched);
                if hit {
                    tracing::info!(table = %format!("{}.{}", ev.db, ev.table), "the table's shape changed while a chunk was read; reading the chunk again");
                    self.in_flight = None;
                }
            }
            Change::Commit(cp) | Change::Progress(cp) => cp.snapshot = Some(self.shared.clone()),
        }
    }

    /// The next reader result (cancel-safe).
    pub async fn next_result(&mut self) -> Option<Result<ReadOutcome>> {
        self.results.recv().await
    }

    /// A reader result arrived.
    pub fn on_result(&mut self, outcome: ReadOutcome) -> Result<()> {
        match outcome {
            ReadOutcome::Skip { seq, reason } => {
                let Some(f) = self.in_flight.take_if(|f| f.seq == seq) else {
                    return Ok(());
                };
                tracing::warn!(table = %format!("{}.{}", f.window.db, f.window.table), %reason, "table not snapshotted");
                if let Some(t) = self.progress.table_mut(&f.window.db, &f.window.table) {
                    t.done = true;
                }
                self.shared = Arc::new(self.progress.clone());
                Ok(())
            }
            ReadOutcome::Chunk(c) => self.on_chunk(c),
        }
    }

    fn on_chunk(&mut self, c: ChunkRead) -> Result<()> {
        let Some(f) = self.in_flight.as_mut().filter(|f| f.seq == c.seq) else {
            return Ok(());
        };
        let arrived = Arrived {
            rows: c.rows,
            key_idx: c.key_idx,
            key_names: c.key_names.clone(),
            watermark: c.watermark,
        };
        match f.window.arrive(arrived) {
            Ok(()) => {
                if let Some(t) = self.progress.table_mut(&c.db, &c.table) {
                    if t.key.is_empty() {
                        t.key = c.key_names;
                    }
                }
                f.read = Some((c.schema, c.last_key, c.complete));
                Ok(())
            }
            Err(reason) => {
                tracing::info!(%reason, "reading the chunk again");
                self.in_flight = None;
                Ok(())
            }
        }
    }

    /// At a transaction boundary: the chunk in flight as a source transaction of its own, when
    /// it arrived and the stream (at `tracker`) has read past its watermark.
    pub fn try_emit(&mut self, tracker: &Tracker) -> Result<Option<Vec<Change>>> {
        let ready = self.in_flight.as_ref().is_some_and(|f| {
            f.read.is_some()
                && f.window
                    .watermark()
                    .is_some_and(|w| w.passed(&tracker.file, tracker.pos, tracker.mysql.as_ref()))
        });
        if !ready {
            return Ok(None);
        }
        let Some(f) = self.in_flight.take() else {
            return Ok(None);
        };
        let (db, table) = (f.window.db.clone(), f.window.table.clone());
        let Some((schema, last_key, complete)) = f.read.clone() else {
            return Ok(None);
        };
        let Some((rows, read)) = f.window.finish() else {
            return Ok(None);
        };
        let ctx = self.context(&db, &table, &schema)?;
        let now_ms = crate::sink::offsets::now_ms();
        let mut out = Vec::with_capacity(2 + rows.len() / ROWS_PER_CHANGE);
        let emitted = rows.len();
        if let Some(ctx) = ctx {
            let meta = TxnMeta {
                gtid: None,
                file: Arc::from(tracker.file.as_str()),
                pos: tracker.pos,
                ts_sec: u32::try_from(now_ms / 1000).unwrap_or(u32::MAX),
                server_id: 0,
                thread: None,
                connector: self.connector,
            };
            out.push(Change::Begin(meta));
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
        if let Some(t) = self.progress.table_mut(&db, &table) {
            if last_key.is_some() {
                t.after = last_key;
            }
            t.rows += emitted as u64;
            t.chunks += 1;
            t.done = complete;
            tracing::info!(
                table = %format!("{db}.{table}"),
                rows = t.rows,
                estimate = t.estimate,
                chunk_rows = read,
                emitted,
                done = t.done,
                ms = f.started.elapsed().as_millis() as u64,
                "snapshot chunk"
            );
        }
        self.shared = Arc::new(self.progress.clone());
        let mut cp = tracker.checkpoint(now_ms);
        cp.snapshot = Some(self.shared.clone());
        if out.is_empty() {
            out.push(Change::Progress(cp));
        } else {
            out.push(Change::Commit(cp));
        }
        Ok(Some(out))
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

    /// Asks for the next chunk when none is in flight (registering its window first, before
    /// the reader takes any watermark). `executed`: the stream's executed GTID set now.
    pub async fn request_next(&mut self, executed: Option<&GtidSet>) -> Result<()> {
        if self.in_flight.is_some() {
            return Ok(());
        }
        let Some(t) = self.progress.next_table() else {
            return Ok(());
        };
        let (db, table, after) = (t.db.clone(), t.table.clone(), t.after.clone());
        self.seq += 1;
        let fresh = self.fresh.remove(&(db.clone(), table.clone()));
        self.in_flight = Some(InFlight {
            seq: self.seq,
            window: Window::new(&db, &table, self.max_window_changes, executed.cloned()),
            read: None,
            started: Instant::now(),
        });
        self.requests
            .send(ReadRequest {
                seq: self.seq,
                db,
                table,
                after,
                fresh,
            })
            .await
            .map_err(|_| Error::transient("the snapshot reader stopped"))
    }
}
