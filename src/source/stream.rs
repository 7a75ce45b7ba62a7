//! The binlog source stage: one replication connection, events decoded into whole source
//! transactions and sent to the sink over a bounded channel.
//!
//! Invariants:
//! * Positions sent to the sink (`Commit`, `Progress`) are always source commit boundaries:
//!   the end of an XID / COMMIT / standalone DDL, or a point between transactions.
//! * Rows are only sent between a `Begin` and its `Commit`; a transaction that touches no
//!   included table sends no `Begin` at all (only, now and then, `Progress`).
//! * An event type sluice does not know is a definite error naming the type and position.
//!
//! Resuming is safe because the stream always (re)starts from the last *committed* position
//! (GTID state or file/pos), which is where a whole transaction ended.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use mysql_async::prelude::*;
use mysql_async::{BinlogStreamRequest, Conn};
use mysql_common::binlog::events::{Event, GtidEvent, QueryEvent, TableMapEvent};
use mysql_common::packets::Sid;
use tokio::sync::{mpsc, watch};

use crate::config::route::Router;
use crate::config::secret::SourceUrl;
use crate::error::{mysql_error, Error, Result};
use crate::pipeline::{Change, Checkpoint, TableCtx, TxnMeta};
use crate::position::{FilePos, GtidList, GtidSet, SourcePosition, StartSpec, Uuid16};
use crate::schema::{ServerFlavor, TableSchema};
use crate::source::events::{self, types, QueryKind, XaStatement};
use crate::source::rows::{parse_rows_event, RowDecoder, RowImage};
use crate::source::server::{self, Flavor, ServerInfo};

/// Settings of the source stage.
#[derive(Clone)]
pub struct SourceSettings {
    /// Where the server is.
    pub url: SourceUrl,
    /// The replica server id sluice registers with.
    pub server_id: u32,
    /// Heartbeat period asked of the server; silence for 3 periods is a dead connection.
    pub heartbeat: Duration,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Table filter and routes.
    pub router: Arc<Router>,
}

/// Source transactions that ended in ROLLBACK after some of their rows were already written
/// into an (aborted) Kafka transaction; on the replay their rows are skipped. Keyed by
/// (binlog file, start position of the transaction).
pub type SkipSet = Arc<Mutex<HashSet<(String, u64)>>>;

/// How the dump is requested from the server.
#[derive(Debug, Clone, PartialEq)]
pub enum DumpRequest {
    /// COM_BINLOG_DUMP from a file and position.
    FilePos(FilePos),
    /// COM_BINLOG_DUMP_GTID with the executed set (MySQL).
    MysqlGtid(GtidSet),
    /// COM_BINLOG_DUMP with `@slave_connect_state` (MariaDB).
    MariadbGtid(GtidList),
}

/// Tracks the position the stream is at, and builds the [`SourcePosition`] of a boundary.
#[derive(Debug, Clone)]
pub struct Tracker {
    /// Current binlog file.
    pub file: String,
    /// End of the last event read in `file`.
    pub pos: u64,
    /// MySQL executed GTID set, when streaming by GTID.
    pub mysql: Option<GtidSet>,
    /// MariaDB GTID state, once known.
    pub mariadb: Option<GtidList>,
    /// Prepared, uncommitted XA groups: xid → `file:pos` of the group's start.
    pub xa_prepared: BTreeMap<String, String>,
}

impl Tracker {
    /// The checkpoint at the current boundary.
    pub fn checkpoint(&self, ts_ms: u64) -> Checkpoint {
        Checkpoint {
            position: self.position(),
            ts_ms,
            xa_prepared: self.xa_prepared.clone(),
        }
    }

    /// The position at the current boundary.
    pub fn position(&self) -> SourcePosition {
        let fp = FilePos {
            file: self.file.clone(),
            pos: self.pos,
        };
        let file_pos = (!self.file.is_empty()).then_some(fp.clone());
        if let Some(set) = &self.mysql {
            SourcePosition::MysqlGtid {
                gtid_set: set.clone(),
                file_pos,
            }
        } else if let Some(list) = &self.mariadb {
            SourcePosition::MariadbGtid {
                gtid_list: list.clone(),
                file_pos,
            }
        } else {
            SourcePosition::FilePos(fp)
        }
    }
}

/// Where streaming begins: the dump request and the tracker state that goes with it.
#[derive(Debug, Clone)]
pub struct ResumePoint {
    /// What to ask the server for.
    pub request: DumpRequest,
    /// Position state at that point.
    pub tracker: Tracker,
}

/// Resolves where to start: the committed position if there is one, else `start`.
pub async fn resolve_start(
    conn: &mut Conn,
    info: &ServerInfo,
    committed: Option<&SourcePosition>,
    start: &StartSpec,
) -> Result<ResumePoint> {
    let tracker = |file: &str, pos: u64| Tracker {
        file: file.to_string(),
        pos,
        mysql: None,
        mariadb: None,
        xa_prepared: BTreeMap::new(),
    };
    if let Some(pos) = committed {
        return match (pos, info.flavor) {
            (SourcePosition::FilePos(fp), _) => Ok(ResumePoint {
                request: DumpRequest::FilePos(fp.clone()),
                tracker: tracker(&fp.file, fp.pos),
            }),
            (SourcePosition::MysqlGtid { gtid_set, file_pos }, Flavor::MySql) => {
                let mut t = tracker("", 4);
                if let Some(fp) = file_pos {
                    t = tracker(&fp.file, fp.pos);
                }
                t.mysql = Some(gtid_set.clone());
                Ok(ResumePoint {
                    request: DumpRequest::MysqlGtid(gtid_set.clone()),
                    tracker: t,
                })
            }
            (
                SourcePosition::MariadbGtid {
                    gtid_list,
                    file_pos,
                },
                Flavor::MariaDb,
            ) => {
                let mut t = tracker("", 4);
                if let Some(fp) = file_pos {
                    t = tracker(&fp.file, fp.pos);
                }
                t.mariadb = Some(gtid_list.clone());
                let request = if gtid_list.is_empty() {
                    match file_pos {
                        Some(fp) => DumpRequest::FilePos(fp.clone()),
                        None => DumpRequest::MariadbGtid(gtid_list.clone()),
                    }
                } else {
                    DumpRequest::MariadbGtid(gtid_list.clone())
                };
                Ok(ResumePoint {
                    request,
                    tracker: t,
                })
            }
            (p, f) => Err(Error::definite(format!(
                "the committed position {p} is a {} position but the source is {f:?}: the \
                 pipeline was pointed at another server; reset it with `sluice offsets set \
                 --position <pos>` or use another `name`",
                p.kind()
            ))),
        };
    }
    match start {
        StartSpec::FilePos(fp) => Ok(ResumePoint {
            request: DumpRequest::FilePos(fp.clone()),
            tracker: tracker(&fp.file, fp.pos),
        }),
        StartSpec::MysqlGtid(set) => {
            if info.flavor != Flavor::MySql || !info.gtid_mode {
                return Err(Error::definite(format!(
                    "`source.start` is a MySQL GTID set but the source ({}) {}",
                    info.version,
                    if info.flavor == Flavor::MariaDb {
                        "is MariaDB: give a MariaDB GTID list such as gtid:0-1-42"
                    } else {
                        "has gtid_mode OFF: use file:<name>:<pos>"
                    }
                )));
            }
            let mut t = tracker("", 4);
            t.mysql = Some(set.clone());
            Ok(ResumePoint {
                request: DumpRequest::MysqlGtid(set.clone()),
                tracker: t,
            })
        }
        StartSpec::MariadbGtid(list) => {
            if info.flavor != Flavor::MariaDb {
                return Err(Error::definite(
                    "`source.start` is a MariaDB GTID list but the source is MySQL: give a MySQL \
                     GTID set (uuid:1-5) or file:<name>:<pos>",
                ));
            }
            let mut t = tracker("", 4);
            t.mariadb = Some(list.clone());
            Ok(ResumePoint {
                request: DumpRequest::MariadbGtid(list.clone()),
                tracker: t,
            })
        }
        StartSpec::Earliest | StartSpec::Initial | StartSpec::SnapshotOnly => {
            if matches!(start, StartSpec::SnapshotOnly) {
                return Err(Error::definite(
                    "`source.start = \"snapshot_only\"` is not available yet: use earliest, \
                     latest, gtid:<set> or file:<name>:<pos>",
                ));
            }
            if info.flavor == Flavor::MySql && info.gtid_mode {
                let purged = server::mysql_gtid_var(conn, "gtid_purged").await?;
                let mut t = tracker("", 4);
                t.mysql = Some(purged.clone());
                return Ok(ResumePoint {
                    request: DumpRequest::MysqlGtid(purged),
                    tracker: t,
                });
            }
            let logs = server::binary_logs(conn).await?;
            let first = logs.first().ok_or_else(|| {
                Error::definite("the source has no binary logs: enable `log_bin`")
            })?;
            Ok(ResumePoint {
                request: DumpRequest::FilePos(FilePos {
                    file: first.clone(),
                    pos: 4,
                }),
                tracker: tracker(first, 4),
            })
        }
        StartSpec::Latest => {
            let fp = server::current_file_pos(conn, info).await?;
            let mut t = tracker(&fp.file, fp.pos);
            match info.flavor {
                Flavor::MySql if info.gtid_mode => {
                    let set = server::mysql_gtid_var(conn, "gtid_executed").await?;
                    t.mysql = Some(set.clone());
                    Ok(ResumePoint {
                        request: DumpRequest::MysqlGtid(set),
                        tracker: t,
                    })
                }
                Flavor::MariaDb => {
                    let list = server::mariadb_binlog_gtid_pos(conn).await?;
                    t.mariadb = Some(list);
                    Ok(ResumePoint {
                        request: DumpRequest::FilePos(fp),
                        tracker: t,
                    })
                }
                Flavor::MySql => Ok(ResumePoint {
                    request: DumpRequest::FilePos(fp),
                    tracker: t,
                }),
            }
        }
    }
}

/// One cached table: the decoder of its current TABLE_MAP and where its rows go.
struct TableEntry {
    tme_raw: Vec<u8>,
    /// `None` when the table is excluded or matches no route.
    route: Option<(Arc<TableCtx>, RowDecoder)>,
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
    gtid: PendingGtid,
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
    Mysql(Uuid16, u64),
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
    /// In replay mode: the group's XA_PREPARE was reached.
    replay_done: bool,
}

/// How often a `Progress` is sent while the binlog has nothing for the sink.
const PROGRESS_EVERY: Duration = Duration::from_millis(500);

impl Assembler {
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
            replay_done: false,
        }
    }

    /// An assembler that reads one prepared XA group again (from its start) and emits its
    /// rows; [`Assembler::replay_done`] turns true at the group's XA_PREPARE.
    pub fn for_replay(flavor: Flavor, router: Arc<Router>, from: &FilePos) -> Self {
        let tracker = Tracker {
            file: from.file.clone(),
            pos: from.pos,
            mysql: None,
            mariadb: None,
            xa_prepared: BTreeMap::new(),
        };
        let mut a = Assembler::new(flavor, router, tracker, SkipSet::default());
        a.replay_mode = true;
        a
    }

    /// Replay mode: the prepared group was read up to its XA_PREPARE.
    pub fn replay_done(&self) -> bool {
        self.replay_done
    }

    /// A committed XA group that must be read again before the current group can commit.
    pub fn take_replay(&mut self) -> Option<XaReplay> {
        self.replay.take()
    }

    /// Completes the group whose commit waited for an XA replay; `sent_begin` tells whether the
    /// replay emitted a `Begin` (and rows).
    pub fn finish_replay(&mut self, sent_begin: bool, ts: u32, out: &mut Vec<Change>) {
        if let Some(t) = self.txn.as_mut() {
            t.begun = sent_begin;
            t.xa = false;
        }
        self.commit(ts, out);
    }

    /// The tracker (current position state).
    pub fn tracker(&self) -> &Tracker {
        &self.tracker
    }

    fn at(&self, ev_pos: u64) -> String {
        format!("binlog {}:{}", self.tracker.file, ev_pos)
    }

    /// Handles one event, appending the resulting changes to `out`.
    pub fn on_event(&mut self, ev: &Event, out: &mut Vec<Change>) -> Result<()> {
        let hdr = ev.header();
        let etype = hdr.event_type_raw();
        let log_pos = u64::from(hdr.log_pos());
        let size = u64::from(hdr.event_size());
        let start_pos = if log_pos >= size {
            log_pos - size
        } else {
            self.tracker.pos
        };
        let data = ev.data();
        let at = self.at(start_pos);
        let definite = |what: String| Error::definite(format!("{what} at {at}"));

        match etype {
            types::ROTATE => {
                let body: Vec<u8> = if !self.seen_fde {
                    let mut h = [0u8; 19];
                    h[0..4].copy_from_slice(&hdr.timestamp().to_le_bytes());
                    h[4] = etype;
                    h[5..9].copy_from_slice(&hdr.server_id().to_le_bytes());
                    h[9..13].copy_from_slice(&hdr.event_size().to_le_bytes());
                    h[13..17].copy_from_slice(&hdr.log_pos().to_le_bytes());
                    h[17..19].copy_from_slice(&hdr.flags_raw().to_le_bytes());
                    events::strip_fake_rotate_crc(&h, data).to_vec()
                } else {
                    data.to_vec()
                };
                if body.len() < 8 {
                    return Err(definite("malformed ROTATE event".into()));
                }
                let mut p = [0u8; 8];
                p.copy_from_slice(&body[..8]);
                let name = String::from_utf8_lossy(&body[8..]).into_owned();
                if name != self.tracker.file {
                    self.tables.clear();
                }
                self.tracker.file = name;
                self.tracker.pos = u64::from_le_bytes(p).max(4);
                self.seen_fde = false;
                return Ok(());
            }
            types::FORMAT_DESCRIPTION => {
                self.seen_fde = true;
                return Ok(());
            }
            _ => {}
        }

        match etype {
            types::GTID => {
                let g: GtidEvent = ev
                    .read_event()
                    .map_err(|e| definite(format!("malformed GTID event: {e}")))?;
                self.pending_gtid = Some(PendingGtid::Mysql(Uuid16(g.sid()), g.gno()));
                self.open_pending(hdr.timestamp(), hdr.server_id(), start_pos);
            }
            types::ANONYMOUS_GTID => {
                self.pending_gtid = Some(PendingGtid::None);
                self.open_pending(hdr.timestamp(), hdr.server_id(), start_pos);
            }
            types::GTID_TAGGED => {
                return Err(definite(
                    "tagged GTID event (MySQL 8.3+ `uuid:tag:n`) is not supported yet".into(),
                ))
            }
            types::MARIA_GTID => {
                let g = events::parse_maria_gtid(data, hdr.server_id())
                    .map_err(|e| definite(e.to_string()))?;
                self.pending_gtid = Some(PendingGtid::Maria(g.gtid));
                self.open_pending(hdr.timestamp(), hdr.server_id(), start_pos);
                if g.flags & events::gtid_flags::PREPARED_XA != 0 {
                    if let Some(t) = self.txn.as_mut() {
                        t.in_begin = true;
                        t.xa = !self.replay_mode;
                    }
                }
            }
            types::MARIA_GTID_LIST => {
                let list =
                    events::parse_maria_gtid_list(data).map_err(|e| definite(e.to_string()))?;
                if self.tracker.mariadb.is_none() && self.tracker.mysql.is_none() {
                    self.tracker.mariadb = Some(list);
                }
            }
            types::QUERY | types::MARIA_QUERY_COMPRESSED => {
                let q: QueryEvent = ev
                    .read_event()
                    .map_err(|e| definite(format!("malformed QUERY event: {e}")))?;
                let text = if etype == types::MARIA_QUERY_COMPRESSED {
                    let raw = events::maria_uncompress(q.query_raw())
                        .map_err(|e| definite(e.to_string()))?;
                    String::from_utf8_lossy(&raw).into_owned()
                } else {
                    q.query().into_owned()
                };
                self.advance(log_pos);
                match events::classify_query(&text) {
                    QueryKind::Begin => {
                        if self.txn.is_none() {
                            self.pending_gtid.get_or_insert(PendingGtid::None);
                            self.open_pending(hdr.timestamp(), hdr.server_id(), start_pos);
                        }
                        if let Some(t) = self.txn.as_mut() {
                            t.in_begin = true;
                            t.meta.thread = Some(q.thread_id());
                        }
                    }
                    QueryKind::Commit => self.commit(hdr.timestamp(), out),
                    QueryKind::Rollback => self.rollback(out)?,
                    QueryKind::Savepoint => {}
                    QueryKind::Xa(stmt) => match events::parse_xa_statement(&stmt) {
                        XaStatement::Start => {
                            if self.txn.is_none() {
                                self.open_pending(hdr.timestamp(), hdr.server_id(), start_pos);
                            }
                            let replay_mode = self.replay_mode;
                            if let Some(t) = self.txn.as_mut() {
                                t.in_begin = true;
                                t.xa = !replay_mode;
                                t.meta.thread = Some(q.thread_id());
                            }
                        }
                        XaStatement::End | XaStatement::Other => {}
                        XaStatement::Commit(xid) => {
                            if self.replay_mode {
                                return Err(definite(format!(
                                    "reading prepared XA group again: found `XA COMMIT {xid}` \
                                     before its XA_PREPARE"
                                )));
                            }
                            match self.tracker.xa_prepared.remove(&xid) {
                                Some(at) => {
                                    let from: FilePos = at.parse().map_err(|e| {
                                        definite(format!("prepared XA {xid} at {at:?}: {e}"))
                                    })?;
                                    self.replay = Some(XaReplay { xid, from });
                                    // The group commits in finish_replay, after its rows.
                                    return Ok(());
                                }
                                None => {
                                    tracing::warn!(
                                        xid,
                                        at = %self.at(start_pos),
                                        "XA COMMIT of a transaction prepared before the \
                                         pipeline's start position: its rows cannot be emitted"
                                    );
                                    self.commit(hdr.timestamp(), out);
                                }
                            }
                        }
                        XaStatement::Rollback(xid) => {
                            self.tracker.xa_prepared.remove(&xid);
                            self.commit(hdr.timestamp(), out);
                        }
                    },
                    QueryKind::Other => {
                        // DDL or another standalone statement: its own transaction.
                        let in_begin = self.txn.as_ref().is_some_and(|t| t.in_begin);
                        if !in_begin {
                            self.commit(hdr.timestamp(), out);
                        }
                    }
                }
                return Ok(());
            }
            types::TABLE_MAP => self.on_table_map(ev, start_pos)?,
            // PARTIAL_UPDATE_ROWS (binlog_row_value_options=PARTIAL_JSON) is an UPDATE_ROWS
            // v2 whose after images may carry JSON diffs; the row decoder rebuilds the
            // full documents from the before images.
            t if types::is_rows(t) || t == types::PARTIAL_UPDATE_ROWS => {
                self.on_rows(ev, etype, start_pos, out)?
            }
            types::XID => {
                self.advance(log_pos);
                self.commit(hdr.timestamp(), out);
                return Ok(());
            }
            types::XA_PREPARE => {
                let xp = events::parse_xa_prepare(data).map_err(|e| definite(e.to_string()))?;
                self.advance(log_pos);
                if self.replay_mode {
                    self.txn = None;
                    self.replay_done = true;
                    return Ok(());
                }
                let Some(t) = self.txn.as_ref() else {
                    return Err(definite(format!(
                        "XA_PREPARE of {} without its group",
                        xp.xid
                    )));
                };
                let from = FilePos {
                    file: t.meta.file.to_string(),
                    pos: t.meta.pos,
                };
                if xp.one_phase {
                    // `XA COMMIT ... ONE PHASE` (MySQL): the group is committed right here.
                    self.replay = Some(XaReplay { xid: xp.xid, from });
                } else {
                    self.tracker.xa_prepared.insert(xp.xid, from.to_string());
                    if let Some(t) = self.txn.as_mut() {
                        t.begun = false;
                    }
                    self.commit(hdr.timestamp(), out);
                }
                return Ok(());
            }
            types::TRANSACTION_PAYLOAD => {
                // mysql_async decompresses it and yields the inner events next; those carry
                // log_pos 0, so the payload's end stands for all of them.
                self.payload_end = log_pos;
                return Ok(());
            }
            types::HEARTBEAT | types::HEARTBEAT_V2 => {
                if self.txn.is_none() {
                    self.progress_dirty = true;
                    self.maybe_progress(out, true);
                }
                return Ok(());
            }
            types::MARIA_START_ENCRYPTION => {
                return Err(definite(
                    "the binlog is encrypted (START_ENCRYPTION event): sluice cannot read \
                     encrypted binlogs; disable `encrypt_binlog` on the source"
                        .into(),
                ))
            }
            types::STOP
            | types::INTVAR
            | types::RAND
            | types::USER_VAR
            | types::IGNORABLE
            | types::ROWS_QUERY
            | types::PREVIOUS_GTIDS
            | types::TRANSACTION_CONTEXT
            | types::VIEW_CHANGE
            | types::MARIA_ANNOTATE_ROWS
            | types::MARIA_BINLOG_CHECKPOINT => {}
            other => {
                return Err(definite(format!(
                    "unknown binlog event type {other} ({} bytes); sluice does not skip events \
                     it does not understand — please report the server version",
                    size
                )))
            }
        }
        self.advance(log_pos);
        Ok(())
    }

    fn advance(&mut self, log_pos: u64) {
        if log_pos != 0 {
            self.tracker.pos = log_pos;
        } else if self.payload_end != 0 {
            self.tracker.pos = self.payload_end;
        }
    }

    fn open_pending(&mut self, ts: u32, server_id: u32, start_pos: u64) {
        let gtid = self.pending_gtid.take().unwrap_or(PendingGtid::None);
        let gtid_text = match &gtid {
            PendingGtid::None => None,
            PendingGtid::Mysql(u, n) => Some(format!("{u}:{n}")),
            PendingGtid::Maria(g) => Some(g.to_string()),
        };
        let file: Arc<str> = Arc::from(self.tracker.file.as_str());
        let skip = self
            .skip
            .lock()
            .map(|s| s.contains(&(self.tracker.file.clone(), start_pos)))
            .unwrap_or(false);
        self.txn = Some(OpenTxn {
            meta: TxnMeta {
                gtid: gtid_text,
                file,
                pos: start_pos,
                ts_sec: ts,
                server_id,
                thread: None,
                connector: self.flavor.connector(),
            },
            begun: false,
            skip,
            in_begin: false,
            xa: false,
            gtid,
        });
    }

    fn commit(&mut self, ts: u32, out: &mut Vec<Change>) {
        let Some(txn) = self.txn.take() else {
            // A COMMIT/XID without an opening event (stream started mid-transaction when
            // resuming by file/pos at a non-boundary): nothing of it was sent.
            self.progress_dirty = true;
            return;
        };
        match txn.gtid {
            PendingGtid::Mysql(u, n) => {
                if let Some(set) = self.tracker.mysql.as_mut() {
                    // gno was validated by the server; an out-of-range one is ignored here
                    // and would show as a gap in the committed set.
                    let _ = set.add(u, None, n);
                }
            }
            PendingGtid::Maria(g) => {
                if let Some(list) = self.tracker.mariadb.as_mut() {
                    list.update(g);
                }
            }
            PendingGtid::None => {}
        }
        self.payload_end = 0;
        let ts_ms = u64::from(ts) * 1000;
        if self.replay_mode {
            return;
        }
        if txn.begun {
            out.push(Change::Commit(self.tracker.checkpoint(ts_ms)));
            self.last_progress = Instant::now();
            self.progress_dirty = false;
        } else {
            self.progress_dirty = true;
            self.maybe_progress(out, false);
        }
    }

    fn rollback(&mut self, out: &mut Vec<Change>) -> Result<()> {
        let Some(txn) = self.txn.take() else {
            return Ok(());
        };
        self.payload_end = 0;
        if txn.begun {
            if let Ok(mut s) = self.skip.lock() {
                s.insert((txn.meta.file.to_string(), txn.meta.pos));
            }
            return Err(Error::transient(format!(
                "source transaction at binlog {}:{} ended in ROLLBACK after its rows were sent; \
                 aborting the Kafka transaction and replaying without it",
                txn.meta.file, txn.meta.pos
            )));
        }
        // Nothing was sent: like a commit without data (the GTID is still consumed).
        match txn.gtid {
            PendingGtid::Mysql(u, n) => {
                if let Some(set) = self.tracker.mysql.as_mut() {
                    let _ = set.add(u, None, n);
                }
            }
            PendingGtid::Maria(g) => {
                if let Some(list) = self.tracker.mariadb.as_mut() {
                    list.update(g);
                }
            }
            PendingGtid::None => {}
        }
        self.progress_dirty = true;
        self.maybe_progress(out, false);
        Ok(())
    }

    /// Sends a `Progress` when the position moved and enough time passed (or `force`).
    pub fn maybe_progress(&mut self, out: &mut Vec<Change>, force: bool) {
        if self.replay_mode || self.txn.is_some() || !self.progress_dirty {
            return;
        }
        if force || self.last_progress.elapsed() >= PROGRESS_EVERY {
            out.push(Change::Progress(
                self.tracker.checkpoint(crate::sink::offsets::now_ms()),
            ));
            self.last_progress = Instant::now();
            self.progress_dirty = false;
        }
    }

    fn on_table_map(&mut self, ev: &Event, start_pos: u64) -> Result<()> {
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
                return Ok(());
            }
        }
        let db = tme.database_name().into_owned();
        let table = tme.table_name().into_owned();
        let route = if self.router.table_included(&db, &table) {
            self.router
                .route(&db, &table)
                .map_err(|e| Error::definite(e.to_string()))?
        } else {
            None
        };
        let route = match route {
            None => None,
            Some(target) => {
                let flavor = match self.flavor {
                    Flavor::MySql => ServerFlavor::MySql,
                    Flavor::MariaDb => ServerFlavor::MariaDb,
                };
                let schema =
                    TableSchema::from_table_map_with_flavor(&tme, flavor).map_err(|e| {
                        Error::definite(format!("{e} (table {db}.{table}, {})", self.at(start_pos)))
                    })?;
                let key_idx = if target.key_columns.is_empty() {
                    schema.primary_key.clone()
                } else {
                    let mut idx = Vec::new();
                    for name in &target.key_columns {
                        let i = schema
                            .columns
                            .iter()
                            .position(|c| &c.name == name)
                            .ok_or_else(|| {
                                Error::definite(format!(
                                    "route for {db}.{table} names key column `{name}` which the \
                                     table does not have (columns: {}); fix `key_columns`",
                                    schema
                                        .columns
                                        .iter()
                                        .map(|c| c.name.as_str())
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                ))
                            })?;
                        idx.push(i);
                    }
                    idx
                };
                let schema = Arc::new(schema);
                let decoder = RowDecoder::new(schema.clone(), &tme).map_err(|e| {
                    Error::definite(format!("{e} (table {db}.{table}, {})", self.at(start_pos)))
                })?;
                Some((Arc::new(TableCtx::new(schema, target, key_idx)), decoder))
            }
        };
        self.tables.insert(
            id,
            TableEntry {
                tme_raw: data.to_vec(),
                route,
            },
        );
        Ok(())
    }

    fn on_rows(
        &mut self,
        ev: &Event,
        etype: u8,
        start_pos: u64,
        out: &mut Vec<Change>,
    ) -> Result<()> {
        let post_header_len = ev
            .fde()
            .event_type_header_lengths()
            .get(usize::from(etype).saturating_sub(1))
            .copied()
            .filter(|l| *l == 6 || *l == 8)
            .unwrap_or(8);
        let hdr = parse_rows_event(etype, post_header_len, ev.data())
            .map_err(|e| Error::definite(format!("rows event at {}: {e}", self.at(start_pos))))?;
        let Some(entry) = self.tables.get(&hdr.table_id) else {
            return Err(Error::definite(format!(
                "rows event for unknown table id {} at {} (no TABLE_MAP before it)",
                hdr.table_id,
                self.at(start_pos)
            )));
        };
        let Some((ctx, decoder)) = &entry.route else {
            return Ok(());
        };
        let at = self.at(start_pos);
        let Some(txn) = self.txn.as_mut() else {
            return Err(Error::definite(format!(
                "rows event outside a transaction at {at}"
            )));
        };
        if txn.skip || txn.xa {
            return Ok(());
        }
        self.rows_buf.clear();
        decoder.decode(&hdr, &mut self.rows_buf).map_err(|e| {
            Error::definite(format!(
                "decoding rows of {}.{} at {at}: {e}",
                ctx.schema.db, ctx.schema.table
            ))
        })?;
        if !txn.begun {
            txn.begun = true;
            out.push(Change::Begin(txn.meta.clone()));
        }
        out.push(Change::Rows {
            table: ctx.clone(),
            kind: hdr.kind,
            rows: std::mem::take(&mut self.rows_buf),
            pos: start_pos,
        });
        Ok(())
    }
}

/// Opens the replication stream at `resume` and pumps changes into `tx` until shutdown, a
/// disconnect (transient error) or a definite error.
pub async fn run(
    settings: &SourceSettings,
    info: &ServerInfo,
    mut conn: Conn,
    resume: ResumePoint,
    tx: mpsc::Sender<Change>,
    skip: SkipSet,
    mut shutdown: watch::Receiver<bool>,
) -> Result<()> {
    let hb_ns = settings
        .heartbeat
        .as_nanos()
        .min(u128::from(u32::MAX) * 1_000_000) as u64;
    conn.query_drop(format!("SET @master_heartbeat_period = {hb_ns}"))
        .await
        .map_err(|e| mysql_error("setting the heartbeat period", &e))?;
    if info.flavor == Flavor::MariaDb {
        conn.query_drop("SET @mariadb_slave_capability = 4")
            .await
            .map_err(|e| mysql_error("announcing GTID capability", &e))?;
        if let DumpRequest::MariadbGtid(list) = &resume.request {
            conn.query_drop(format!("SET @slave_connect_state = '{list}'"))
                .await
                .map_err(|e| mysql_error("setting @slave_connect_state", &e))?;
            conn.query_drop("SET @slave_gtid_strict_mode = 1")
                .await
                .map_err(|e| mysql_error("setting @slave_gtid_strict_mode", &e))?;
        }
    }
    let file_bytes;
    let mut req = BinlogStreamRequest::new(settings.server_id);
    match &resume.request {
        DumpRequest::FilePos(fp) => {
            file_bytes = fp.file.clone().into_bytes();
            req = req.with_filename(&file_bytes).with_pos(fp.pos);
        }
        DumpRequest::MysqlGtid(set) => {
            let sids: Vec<Sid<'static>> = set
                .intervals()
                .map(|(uuid, _tag, ivs)| {
                    let mut sid = Sid::new(*uuid.as_bytes());
                    for (a, b) in ivs {
                        sid = sid.with_interval(mysql_common::packets::GnoInterval::new(*a, *b));
                    }
                    sid
                })
                .collect();
            req = req.with_gtid().with_gtid_set(sids).with_pos(4);
        }
        DumpRequest::MariadbGtid(_) => {
            req = req.with_pos(4);
        }
    }
    tracing::info!(request = ?resume.request, "requesting the binlog stream");
    let mut stream = conn
        .get_binlog_stream(req)
        .await
        .map_err(|e| purged_or(mysql_error("requesting the binlog stream", &e), &resume))?;

    let mut asm = Assembler::new(
        info.flavor,
        settings.router.clone(),
        resume.tracker.clone(),
        skip,
    );
    let silence = settings.heartbeat * 3 + Duration::from_secs(5);
    let mut out = Vec::with_capacity(8);
    loop {
        let next = tokio::select! {
            biased;
            _ = shutdown.changed() => return Ok(()),
            n = tokio::time::timeout(silence, stream.next()) => n,
        };
        let ev = match next {
            Err(_) => {
                return Err(Error::transient(format!(
                    "no binlog event or heartbeat for {silence:?}: the replication connection is \
                     presumed dead (at {}:{})",
                    asm.tracker().file,
                    asm.tracker().pos
                )))
            }
            Ok(None) => {
                return Err(Error::transient(format!(
                    "the source closed the binlog stream at {}:{}",
                    asm.tracker().file,
                    asm.tracker().pos
                )))
            }
            Ok(Some(Err(e))) => {
                return Err(purged_or(
                    mysql_error(
                        format!(
                            "binlog stream at {}:{}",
                            asm.tracker().file,
                            asm.tracker().pos
                        ),
                        &e,
                    ),
                    &resume,
                ))
            }
            Ok(Some(Ok(ev))) => ev,
        };
        asm.on_event(&ev, &mut out)?;
        if let Some(replay) = asm.take_replay() {
            for change in out.drain(..) {
                if tx.send(change).await.is_err() {
                    return Ok(());
                }
            }
            let sent_begin = replay_xa(settings, info, &replay, &tx).await?;
            asm.finish_replay(sent_begin, ev.header().timestamp(), &mut out);
        }
        if out.is_empty() {
            asm.maybe_progress(&mut out, false);
        }
        for change in out.drain(..) {
            tokio::select! {
                biased;
                _ = shutdown.changed() => return Ok(()),
                r = tx.send(change) => if r.is_err() { return Ok(()) },
            }
        }
    }
}

/// The server id the XA replay connection registers with: a second dump connection must not
/// use the pipeline's own id (the server would drop the main stream). Documented in the README.
pub fn replay_server_id(server_id: u32) -> u32 {
    server_id ^ 0x4000_0000
}

/// Reads a committed XA transaction's prepared group again, from its start up to its
/// XA_PREPARE, over a second connection, and sends its rows. Returns whether a `Begin` was sent
/// (the group touched included tables). Memory stays bounded: rows stream through like any
/// others.
async fn replay_xa(
    settings: &SourceSettings,
    info: &ServerInfo,
    r: &XaReplay,
    tx: &mpsc::Sender<Change>,
) -> Result<bool> {
    tracing::info!(xid = %r.xid, from = %r.from, "XA COMMIT: reading the prepared transaction again");
    let mut conn = server::connect(&settings.url, settings.connect_timeout).await?;
    if info.flavor == Flavor::MariaDb {
        conn.query_drop("SET @mariadb_slave_capability = 4")
            .await
            .map_err(|e| mysql_error("announcing GTID capability", &e))?;
    }
    let file = r.from.file.clone().into_bytes();
    let req = BinlogStreamRequest::new(replay_server_id(settings.server_id))
        .with_filename(&file)
        .with_pos(r.from.pos)
        .with_non_blocking();
    let mut stream = conn.get_binlog_stream(req).await.map_err(|e| {
        mysql_error(
            format!("reading prepared XA transaction {} at {}", r.xid, r.from),
            &e,
        )
    })?;
    let mut asm = Assembler::for_replay(info.flavor, settings.router.clone(), &r.from);
    let mut out = Vec::new();
    let mut sent_begin = false;
    while let Some(ev) = tokio::time::timeout(Duration::from_secs(60), stream.next())
        .await
        .map_err(|_| {
            Error::transient(format!(
                "reading prepared XA transaction {} timed out",
                r.xid
            ))
        })?
    {
        let ev = ev.map_err(|e| mysql_error(format!("prepared XA transaction {}", r.xid), &e))?;
        asm.on_event(&ev, &mut out)?;
        for change in out.drain(..) {
            sent_begin |= matches!(change, Change::Begin(_));
            if tx.send(change).await.is_err() {
                return Err(Error::transient("the sink stopped during an XA replay"));
            }
        }
        if asm.replay_done() {
            let _ = stream.close().await;
            return Ok(sent_begin);
        }
    }
    Err(Error::definite(format!(
        "prepared XA transaction {} at {} ended without its XA_PREPARE event",
        r.xid, r.from
    )))
}

/// Turns the server's "purged / not found" replies into an operator message.
fn purged_or(err: Error, resume: &ResumePoint) -> Error {
    let text = err.to_string();
    let purged = text.contains("1236")
        || text.contains("purged")
        || text.contains("Could not find first log")
        || text.contains("could not find");
    if purged {
        Error::definite(format!(
            "the source no longer has the binlog at the resume position ({:?}): it was purged \
             or never existed ({text}). Data between the committed offset and the oldest binlog \
             is gone from the binlog; take a new snapshot of the tables or move the pipeline \
             with `sluice offsets set --position <pos>` (e.g. the output of SHOW BINARY LOGS), \
             and raise binlog retention (`binlog_expire_logs_seconds`)",
            resume.request
        ))
    } else {
        err
    }
}
