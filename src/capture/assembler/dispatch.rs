//! The assembler's entry points: an event of the replication stream, a TRANSACTION_PAYLOAD
//! read in one go or one inner event at a time, and `handle`, which takes each event by its
//! type — ROTATE, the GTID events, QUERY (BEGIN, COMMIT, ROLLBACK, XA, DDL), XID,
//! XA_PREPARE, heartbeats — and hands TABLE_MAPs, rows and DDL to the files that read them.
//!
//! Invariant: every event type is handled, listed as one to ignore, or a definite error
//! naming the type and position; sluice does not skip an event it does not understand.

use mysql_common::binlog::events::{AnonymousGtidEvent, Event, GtidEvent, QueryEvent};

use crate::binlog::events::{self, types, AlterPhase, QueryKind, XaStatement};
use crate::binlog::payload::PayloadReader;
use crate::error::{Error, Result};
use crate::pipeline::Change;
use crate::position::{FilePos, Gtid, Uuid16};

use super::{Assembler, At, PendingGtid, XaReplay};

impl Assembler {
    /// Handles one event of the replication stream, appending the resulting changes to `out`.
    /// A TRANSACTION_PAYLOAD is read here in one go (all its changes land in `out`); [`run`](crate::capture::run)
    /// streams payloads instead, through [`Assembler::starts_payload`],
    /// [`Assembler::open_payload`] and [`Assembler::on_inner_event`].
    pub fn on_event(&mut self, ev: &Event, out: &mut Vec<Change>) -> Result<()> {
        if self.starts_payload(ev) {
            let mut rd = self.open_payload(ev)?;
            while let Some(inner) = rd.next_event()? {
                self.on_inner_event(&inner, out)?;
            }
            return Ok(());
        }
        self.handle(ev, out)
    }

    /// Whether `ev` is a TRANSACTION_PAYLOAD to read with [`Assembler::open_payload`].
    pub fn starts_payload(&self, ev: &Event) -> bool {
        ev.header().event_type_raw() == types::TRANSACTION_PAYLOAD
    }

    /// Starts reading a TRANSACTION_PAYLOAD: its inner events come from the returned reader,
    /// one at a time, and go to [`Assembler::on_inner_event`].
    pub fn open_payload<'e>(&mut self, ev: &'e Event) -> Result<PayloadReader<'e>> {
        let hdr = ev.header();
        let log_pos = u64::from(hdr.log_pos());
        let start = log_pos.saturating_sub(u64::from(hdr.event_size()));
        // Inner events carry log_pos 0: the payload's end stands for all of them.
        self.payload_end = log_pos;
        PayloadReader::open(ev, self.at(start).to_string(), self.max_event_bytes)
    }

    /// Handles one inner event of a TRANSACTION_PAYLOAD.
    pub fn on_inner_event(&mut self, ev: &Event, out: &mut Vec<Change>) -> Result<()> {
        self.handle(ev, out)
    }

    /// Handles one event (of the stream or inside a payload).
    fn handle(&mut self, ev: &Event, out: &mut Vec<Change>) -> Result<()> {
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
        // A definite error naming where the event starts, written out only when one is made
        // (and borrowing the file name only then: handlers change the tracker meanwhile).
        macro_rules! definite {
            ($what:expr $(,)?) => {{
                let what: String = $what;
                let at = At {
                    file: &self.tracker.file,
                    pos: start_pos,
                };
                Error::definite(format!("{what} at {at}"))
            }};
        }

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
                    return Err(definite!("malformed ROTATE event".into()));
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
                    .map_err(|e| definite!(format!("malformed GTID event: {e}")))?;
                self.pending_gtid = Some(PendingGtid::Mysql(Uuid16(g.sid()), None, g.gno()));
                let commit_us = events::commit_time_us(g.original_commit_timestamp());
                self.open_pending(hdr.timestamp(), commit_us, hdr.server_id(), start_pos);
            }
            types::ANONYMOUS_GTID => {
                // The same layout as a GTID event (with an all-zero sid); its commit time is
                // read the same way.
                let commit_us = ev
                    .read_event::<AnonymousGtidEvent>()
                    .ok()
                    .and_then(|g| events::commit_time_us(g.0.original_commit_timestamp()));
                self.pending_gtid = Some(PendingGtid::None);
                self.open_pending(hdr.timestamp(), commit_us, hdr.server_id(), start_pos);
            }
            types::GTID_TAGGED => {
                let g = events::parse_gtid_tagged(data).map_err(|e| definite!(e.to_string()))?;
                // Validates the tag (`[a-z_][a-z0-9_]{0,31}`) and the gno range up front, so
                // the tracker can always add it.
                let gtid = Gtid::new(Uuid16(g.uuid), g.tag.as_deref(), g.gno)
                    .map_err(|e| definite!(format!("tagged GTID event: {e}")))?;
                self.pending_gtid = Some(PendingGtid::Mysql(gtid.uuid, gtid.tag, gtid.gno));
                let commit_us = events::commit_time_us(g.original_commit_us);
                self.open_pending(hdr.timestamp(), commit_us, hdr.server_id(), start_pos);
            }
            types::MARIA_GTID => {
                let g = events::parse_maria_gtid(data, hdr.server_id())
                    .map_err(|e| definite!(e.to_string()))?;
                self.pending_gtid = Some(PendingGtid::Maria(g.gtid));
                self.open_pending(hdr.timestamp(), None, hdr.server_id(), start_pos);
                if matches!(g.alter, AlterPhase::Start | AlterPhase::Rollback(_)) {
                    if let Some(t) = self.txn.as_mut() {
                        t.ddl_deferred = true;
                    }
                }
                if g.flags & events::gtid_flags::PREPARED_XA != 0 {
                    if let Some(t) = self.txn.as_mut() {
                        t.in_begin = true;
                        t.xa = !self.replay_mode;
                    }
                }
            }
            types::MARIA_GTID_LIST => {
                let list =
                    events::parse_maria_gtid_list(data).map_err(|e| definite!(e.to_string()))?;
                if self.tracker.mariadb.is_none() && self.tracker.mysql.is_none() {
                    self.tracker.mariadb = Some(list);
                }
            }
            types::QUERY | types::MARIA_QUERY_COMPRESSED => {
                let q: QueryEvent = ev
                    .read_event()
                    .map_err(|e| definite!(format!("malformed QUERY event: {e}")))?;
                let text = if etype == types::MARIA_QUERY_COMPRESSED {
                    let raw = events::maria_uncompress(q.query_raw(), self.max_event_bytes)
                        .map_err(|e| definite!(e.to_string()))?;
                    String::from_utf8_lossy(&raw).into_owned()
                } else {
                    q.query().into_owned()
                };
                self.advance(log_pos);
                match events::classify_query(&text) {
                    QueryKind::Begin => {
                        if self.txn.is_none() {
                            self.pending_gtid.get_or_insert(PendingGtid::None);
                            self.open_pending(hdr.timestamp(), None, hdr.server_id(), start_pos);
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
                                self.open_pending(
                                    hdr.timestamp(),
                                    None,
                                    hdr.server_id(),
                                    start_pos,
                                );
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
                                return Err(definite!(format!(
                                    "reading prepared XA group again: found `XA COMMIT {xid}` \
                                     before its XA_PREPARE"
                                )));
                            }
                            match self.tracker.xa_prepared.remove(&xid) {
                                Some(at) => {
                                    let from: FilePos = at.parse().map_err(|e| {
                                        definite!(format!("prepared XA {xid} at {at:?}: {e}"))
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
                        self.on_ddl(&q, &text, hdr.timestamp(), hdr.server_id(), start_pos, out)?;
                        let in_begin = self.txn.as_ref().is_some_and(|t| t.in_begin);
                        if !in_begin {
                            self.commit(hdr.timestamp(), out);
                        }
                    }
                }
                return Ok(());
            }
            types::TABLE_MAP => self.on_table_map(ev, start_pos, out)?,
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
                let xp = events::parse_xa_prepare(data).map_err(|e| definite!(e.to_string()))?;
                self.advance(log_pos);
                if self.replay_mode {
                    if xp.xid != self.replay_xid {
                        return Err(definite!(format!(
                            "reading the prepared XA transaction {} again from its recorded start \
                             found, ending at {}:{}, the XA_PREPARE of {} instead: the binlog at that \
                             position is not the one the offset was read from (a failover to \
                             another server?). Nothing of it was written. Fix: point source.url \
                             back at the server that prepared it, or, accepting the loss of its \
                             rows, commit past it with `sluice offsets set --position <pos>`",
                            self.replay_xid, self.tracker.file, self.tracker.pos, xp.xid
                        )));
                    }
                    self.txn = None;
                    self.replay_done = true;
                    return Ok(());
                }
                let Some(t) = self.txn.as_ref() else {
                    return Err(definite!(format!(
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
                return Err(definite!(
                    "TRANSACTION_PAYLOAD event where none can be (inside a payload)".into(),
                ))
            }
            types::HEARTBEAT | types::HEARTBEAT_V2 => {
                if self.txn.is_none() {
                    self.progress_dirty = true;
                    self.maybe_progress(out, true);
                }
                return Ok(());
            }
            types::MARIA_START_ENCRYPTION => {
                return Err(definite!(
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
                return Err(definite!(format!(
                    "unknown binlog event type {other} ({} bytes); sluice does not skip events \
                     it does not understand — please report the server version",
                    size
                )))
            }
        }
        self.advance(log_pos);
        Ok(())
    }
}
