//! A source transaction as the sink needs it: its [`TxnMeta`] (for the envelope), the
//! [`Checkpoint`] after it (everything a restart needs) and a [`SchemaEvent`] (what one DDL
//! statement writes). Pure data.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::position::SourcePosition;

/// Metadata of one source transaction, for the envelope's `source` and `transaction` blocks.
#[derive(Debug, Clone, Default)]
pub struct TxnMeta {
    /// GTID text of the transaction (`uuid:n` or `d-s-n`), if the server uses GTIDs.
    pub gtid: Option<String>,
    /// Binlog file of the transaction's first event.
    pub file: Arc<str>,
    /// Position of the transaction's first event.
    pub pos: u64,
    /// Commit time on the source, µs since the epoch: a MySQL GTID event's
    /// `original_commit_timestamp` (µs, MySQL 8.0.1+), else the opening event header's whole
    /// seconds. The transaction topic's BEGIN `ts_ms`; the rows' `source.ts_*` are this where
    /// the server logs a commit time, else each rows event's own second.
    pub ts_us: u64,
    /// Source server id.
    pub server_id: u32,
    /// Connection (thread) id that ran the transaction, when the binlog says it.
    pub thread: Option<u32>,
    /// `mysql` or `mariadb`: the envelope's `source.connector`.
    pub connector: &'static str,
}

impl TxnMeta {
    /// The transaction id written in the envelope: the GTID, or `file:pos` without GTIDs.
    pub fn id(&self) -> String {
        match &self.gtid {
            Some(g) => g.clone(),
            None => format!("{}:{}", self.file, self.pos),
        }
    }
}

/// Everything a restart needs, taken at a source transaction boundary.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    /// Position after the boundary.
    pub position: SourcePosition,
    /// Source time of the boundary, ms since the epoch.
    pub ts_ms: u64,
    /// XA transactions prepared before the boundary and not yet committed or rolled back:
    /// xid (`x'<gtrid hex>',x'<bqual hex>',<format id>`) → `file:pos` where the prepared
    /// group starts. Its rows are read again from there when `XA COMMIT` arrives.
    pub xa_prepared: BTreeMap<String, String>,
    /// Progress of a snapshot, if one runs (or ran): it commits with the offset.
    pub snapshot: Option<Arc<crate::snapshot::progress::SnapshotProgress>>,
}

/// What the sink writes for one DDL statement on an included table.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaEvent {
    /// Database of the table.
    pub db: String,
    /// Table name (the new name after a rename).
    pub table: String,
    /// The schema-change record (JSON, `schemas/schema_change.avsc`); `None` for a
    /// history-only update (a table's first known shape, written without a DDL: the
    /// definitions read at `start = "latest"`, or a table map seen for the first time).
    pub record: Option<Vec<u8>>,
    /// Schema-history updates, each a table's new shape (a tracked definition as JSON).
    pub history: Vec<HistoryUpdate<Vec<u8>>>,
}

/// One schema-history update: `db.table`'s new shape, or `None` to remove the table's entry
/// (dropped, or renamed away). `S` is the shape: a tracked definition, or its JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryUpdate<S> {
    /// Database of the table.
    pub db: String,
    /// Table name.
    pub table: String,
    /// The new shape; `None` removes the entry.
    pub shape: Option<S>,
}
