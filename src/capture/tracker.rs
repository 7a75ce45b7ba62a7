//! The [`Tracker`]: the position the stream is at — the binlog file and the end of the last
//! event read, the MySQL GTID set or MariaDB GTID state, and the prepared, uncommitted XA
//! groups — and the [`Checkpoint`] and [`SourcePosition`] built from it.
//!
//! Invariant: a checkpoint holds the tracker's state as it is, nothing more; it is a source
//! commit boundary because it is only taken between source transactions (after a commit, or
//! while the binlog has no transaction open).

use std::collections::BTreeMap;

use crate::pipeline::Checkpoint;
use crate::position::{FilePos, GtidList, GtidSet, SourcePosition};

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
            snapshot: None,
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
