//! The [`Assembler`]: binlog events in, [`Change`]s of whole source transactions out.
//! Separate from the connection so it can be tested.
//!
//! This file holds the assembler's state — the position [`Tracker`], the open transaction,
//! the cached TABLE_MAPs, the tracked table definitions, the XA replay to do — with its
//! constructors and accessors. The handling is in the files below it, which all work on this
//! state: `dispatch` takes each event by its type and hands it on; `txn` opens, commits and
//! rolls back source transactions and sends the `Progress` between them; `table_map` reads
//! TABLE_MAPs and the schema they decode with; `rows` decodes rows events; `ddl` follows DDL
//! statements and emits their schema changes.
//!
//! Invariants (of the assembler as a whole):
//! * Positions sent (`Commit`, `Progress`) are source commit boundaries.
//! * Rows go out only between a `Begin` and its `Commit`; a transaction that touches no
//!   included table sends no `Begin`.
//! * Reading a prepared XA group again (replay mode) emits its rows and no position.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::binlog::rows::{RowDecoder, RowImage};
use crate::config::route::Router;
use crate::encode::table_ctx::TableCtx;
use crate::model::TxnMeta;
use crate::mysql::server::Flavor;
#[cfg(doc)]
use crate::pipeline::Change;
use crate::position::{FilePos, Uuid16};
use crate::schema::tracked::TableDef;

use super::tracker::Tracker;

mod ddl;
mod dispatch;
mod rows;
mod table_map;
#[cfg(test)]
mod tests;
mod txn;

/// Source transactions that ended in ROLLBACK after some of their rows were already written
/// into an (aborted) Kafka transaction; on the replay their rows are skipped. Keyed by
/// (binlog file, start position of the transaction).
pub type SkipSet = Arc<Mutex<HashSet<(String, u64)>>>;

/// One cached table: the decoder of its current TABLE_MAP and where its rows go.
struct TableEntry {
    tme_raw: Vec<u8>,
    /// `None` when the table is excluded or matches no route.
    route: Option<(Arc<TableCtx>, RowDecoder)>,
    /// The table's first known definition (or a correction), not yet in the schema history:
    /// written in the first regular source transaction that maps the table.
    history: Option<TableDef>,
}

/// The open source transaction.
struct OpenTxn {
    meta: TxnMeta,
    begun: bool,
    skip: bool,
    /// A `BEGIN` was seen: statements until COMMIT/XID belong to this transaction.
    in_begin: bool,
    /// An XA group: its rows are emitted only when `XA COMMIT` arrives (read again then).
    xa: bool,
    /// A MariaDB START ALTER or ROLLBACK ALTER group (`binlog_alter_two_phase`): its ALTER
    /// statement is not applied; the COMMIT ALTER group that follows a START ALTER carries
    /// the same statement and applies it, once.
    ddl_deferred: bool,
    gtid: PendingGtid,
    /// The GTID event's commit time (µs, MySQL 8.0.1+): the source time of every row. Without
    /// it each rows event's own header second is (as Debezium does).
    commit_us: Option<u64>,
}

/// A prepared XA group to read again and emit, because it committed.
#[derive(Debug, Clone)]
pub struct XaReplay {
    /// The xid, for messages.
    pub xid: String,
    /// Where the prepared group starts.
    pub from: FilePos,
}

#[derive(Debug, Clone)]
enum PendingGtid {
    None,
    /// uuid, tag (MySQL 8.3+ tagged GTIDs), gno.
    Mysql(Uuid16, Option<String>, u64),
    Maria(crate::position::MariadbGtid),
}

/// Turns binlog events into [`Change`]s. Separate from the connection so it can be tested.
pub struct Assembler {
    flavor: Flavor,
    router: Arc<Router>,
    tracker: Tracker,
    tables: HashMap<u64, TableEntry>,
    txn: Option<OpenTxn>,
    pending_gtid: Option<PendingGtid>,
    skip: SkipSet,
    last_progress: Instant,
    progress_dirty: bool,
    /// End position of the last TRANSACTION_PAYLOAD event (its inner events have log_pos 0).
    payload_end: u64,
    seen_fde: bool,
    rows_buf: Vec<RowImage>,
    /// Set when a committed XA group must be read again before the current group commits.
    replay: Option<XaReplay>,
    /// This assembler reads a prepared XA group again: emit its rows, stop at XA_PREPARE.
    replay_mode: bool,
    /// Replay mode: the xid of the prepared group read again; the group's XA_PREPARE must
    /// carry it (after a failover, the recorded file:pos is of another server's binlog).
    replay_xid: String,
    /// In replay mode: the group's XA_PREPARE was reached.
    replay_done: bool,
    /// `source.max_event_bytes`: caps decompressed statements and inner events.
    max_event_bytes: u64,
    /// Tracked definitions of included tables: from the committed schema history, from
    /// TABLE_MAPs with full metadata, kept current by DDL.
    defs: HashMap<(String, String), TableDef>,
    /// Included tables whose tracked definition was lost, and where (a DDL sluice could not
    /// apply, `CREATE TABLE ... SELECT`): without full metadata their next TABLE_MAP stops.
    lost: HashMap<(String, String), String>,
}

impl Assembler {
    /// The tracked table definitions.
    pub fn defs(&self) -> impl Iterator<Item = &TableDef> {
        self.defs.values()
    }

    /// Seeds the tracked table definitions (the committed schema history).
    pub fn set_defs(&mut self, defs: impl IntoIterator<Item = TableDef>) {
        for d in defs {
            self.defs.insert((d.db.clone(), d.table.clone()), d);
        }
    }

    /// A new assembler starting at `tracker`.
    pub fn new(flavor: Flavor, router: Arc<Router>, tracker: Tracker, skip: SkipSet) -> Self {
        Assembler {
            flavor,
            router,
            tracker,
            tables: HashMap::new(),
            txn: None,
            pending_gtid: None,
            skip,
            last_progress: Instant::now(),
            progress_dirty: false,
            payload_end: 0,
            seen_fde: false,
            rows_buf: Vec::new(),
            replay: None,
            replay_mode: false,
            replay_xid: String::new(),
            replay_done: false,
            max_event_bytes: crate::config::DEFAULT_MAX_EVENT_BYTES,
            defs: HashMap::new(),
            lost: HashMap::new(),
        }
    }

    /// An assembler that reads one prepared XA group again (from its start) and emits its
    /// rows; [`Assembler::replay_done`] turns true at the group's XA_PREPARE.
    pub fn for_replay(flavor: Flavor, router: Arc<Router>, from: &FilePos, xid: &str) -> Self {
        let tracker = Tracker {
            file: from.file.clone(),
            pos: from.pos,
            mysql: None,
            mariadb: None,
            xa_prepared: BTreeMap::new(),
        };
        let mut a = Assembler::new(flavor, router, tracker, SkipSet::default());
        a.replay_mode = true;
        a.replay_xid = xid.to_string();
        a
    }

    /// Caps decompressed statements and inner events of compressed transactions at `max`
    /// bytes (`source.max_event_bytes`).
    pub fn set_max_event_bytes(&mut self, max: u64) {
        self.max_event_bytes = max;
    }

    /// Replay mode: the prepared group was read up to its XA_PREPARE.
    pub fn replay_done(&self) -> bool {
        self.replay_done
    }

    /// A committed XA group that must be read again before the current group can commit.
    pub fn take_replay(&mut self) -> Option<XaReplay> {
        self.replay.take()
    }

    /// Whether the stream is between source transactions.
    pub fn at_boundary(&self) -> bool {
        self.txn.is_none()
    }

    /// The tracker (current position state).
    pub fn tracker(&self) -> &Tracker {
        &self.tracker
    }

    fn at(&self, ev_pos: u64) -> At<'_> {
        At {
            file: &self.tracker.file,
            pos: ev_pos,
        }
    }
}

/// Where an event starts in the binlog, for messages: written out only when a message is.
/// (Formatting it into a `String` for every event, error or not, was 8% of the source's CPU
/// with one-row transactions: five events each.) Borrows only the tracker's file name, so a
/// handler can hold it while it changes other fields.
#[derive(Debug, Clone, Copy)]
pub(crate) struct At<'a> {
    file: &'a str,
    pos: u64,
}

impl std::fmt::Display for At<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "binlog {}:{}", self.file, self.pos)
    }
}
