//! A source transaction's life in the assembler: opened at its GTID event or `BEGIN`,
//! ended by a commit (XID, `COMMIT`, a standalone statement, XA) or a rollback, and the
//! `Progress` sent between transactions.
//!
//! Invariants: a `Commit` goes out only for a transaction that sent a `Begin`, with the
//! position after it; a transaction's GTID joins the tracker's state when it ends, whether
//! anything of it was sent or not; a ROLLBACK after rows were sent is a transient error that
//! marks the transaction to be skipped on the replay; a `Progress` goes out only between
//! transactions, and never in replay mode.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::pipeline::{Change, TxnMeta};

use super::{Assembler, OpenTxn, PendingGtid};

/// How often a `Progress` is sent while the binlog has nothing for the sink.
const PROGRESS_EVERY: Duration = Duration::from_millis(500);

impl Assembler {
    /// Completes the group whose commit waited for an XA replay; `sent_begin` tells whether the
    /// replay emitted a `Begin` (and rows).
    pub fn finish_replay(&mut self, sent_begin: bool, ts: u32, out: &mut Vec<Change>) {
        if let Some(t) = self.txn.as_mut() {
            t.begun = sent_begin;
            t.xa = false;
        }
        self.commit(ts, out);
    }

    pub(super) fn advance(&mut self, log_pos: u64) {
        if log_pos != 0 {
            self.tracker.pos = log_pos;
        } else if self.payload_end != 0 {
            self.tracker.pos = self.payload_end;
        }
    }

    /// Opens the transaction the pending GTID (if any) starts. `header_ts` is the opening
    /// event's header time (whole seconds); `commit_us` the GTID event's
    /// `original_commit_timestamp` when the server wrote one (MySQL 8.0.1+), which the
    /// envelope's source times then carry at µs resolution.
    pub(super) fn open_pending(
        &mut self,
        header_ts: u32,
        commit_us: Option<u64>,
        server_id: u32,
        start_pos: u64,
    ) {
        let gtid = self.pending_gtid.take().unwrap_or(PendingGtid::None);
        let gtid_text = match &gtid {
            PendingGtid::None => None,
            PendingGtid::Mysql(u, None, n) => Some(format!("{u}:{n}")),
            PendingGtid::Mysql(u, Some(tag), n) => Some(format!("{u}:{tag}:{n}")),
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
                ts_us: commit_us.unwrap_or(u64::from(header_ts) * 1_000_000),
                server_id,
                thread: None,
                connector: self.flavor.connector(),
            },
            begun: false,
            skip,
            in_begin: false,
            xa: false,
            ddl_deferred: false,
            gtid,
            commit_us,
        });
    }

    pub(super) fn commit(&mut self, ts: u32, out: &mut Vec<Change>) {
        let Some(txn) = self.txn.take() else {
            // A COMMIT/XID without an opening event (stream started mid-transaction when
            // resuming by file/pos at a non-boundary): nothing of it was sent.
            self.progress_dirty = true;
            return;
        };
        self.consume_gtid(txn.gtid);
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

    /// Adds the ended transaction's GTID to the tracked position.
    fn consume_gtid(&mut self, gtid: PendingGtid) {
        match gtid {
            PendingGtid::Mysql(u, tag, n) => {
                if let Some(set) = self.tracker.mysql.as_mut() {
                    // gno (and tag) were validated when the GTID event was read; an
                    // out-of-range gno of an untagged event is ignored here and would show
                    // as a gap in the committed set.
                    let _ = set.add(u, tag.as_deref(), n);
                }
            }
            PendingGtid::Maria(g) => {
                if let Some(list) = self.tracker.mariadb.as_mut() {
                    list.update(g);
                }
            }
            PendingGtid::None => {}
        }
    }

    pub(super) fn rollback(&mut self, out: &mut Vec<Change>) -> Result<()> {
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
        self.consume_gtid(txn.gtid);
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
                self.tracker.checkpoint(crate::model::clock::now_ms()),
            ));
            self.last_progress = Instant::now();
            self.progress_dirty = false;
        }
    }
}
