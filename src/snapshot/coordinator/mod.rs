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
//!
//! The [`Snapshotter`] and the state of its plans are defined here, with its constructor and
//! the accessors of its progress; each other file adds one part of its behaviour: `plan`
//! (planning chunks, asking the readers for them and taking their results in), `emit`
//! (emitting the chunks at transaction boundaries), `observe` (what the stream's changes do
//! to the snapshot) and `requests` (ad-hoc requests and signals).
//!
//! Invariant: the files are layered. This one imports none of the others, and they import
//! only this one's items (a method in one may call a method in another), so the stream, which
//! names only the type, does not import `emit`, the one file that names its
//! [`crate::capture::Tracker`].

mod emit;
mod observe;
mod plan;
mod requests;

#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use super::adhoc::{parse_table_name, Inbox};
use super::filter::RowFilter;
use super::pool::Pool;
use super::progress::{KeyValue, SnapshotProgress, TableProgress};
use super::signal::Signal;
use super::window::{Place, Watermark, Window};
use crate::config::route::Router;
use crate::config::SnapshotConfig;
use crate::mysql::server::{ConnectOptions, ServerInfo};
use crate::pipeline::TableCtx;
use crate::schema::TableSchema;
use crate::value::Value;

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
            started_ms: crate::model::clock::now_ms(),
            then_stop: false,
            tables: Vec::new(),
            finished_tables: 0,
            finished_rows: 0,
            finished_requests: Vec::new(),
        });
        for t in progress.tables.iter().filter(|t| !t.done) {
            // A filter stored by an earlier version that this one refuses: the table's read
            // is skipped with this reason (the reader checks it again).
            if let Some(Err(e)) = t.filter.as_deref().map(RowFilter::parse) {
                tracing::warn!(
                    table = %format!("{}.{}", t.db, t.table),
                    filter = t.filter.as_deref().unwrap_or(""),
                    "the stored snapshot filter is refused ({e}); the table will be skipped"
                );
            }
        }
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
    #[cfg(test)]
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
}
