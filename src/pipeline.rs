//! What flows between the stages: whole source transactions, cut into bounded messages.
//!
//! The source sends, per source transaction, `Begin`, any number of `Rows` (one binlog rows
//! event each, so a message is small whatever the transaction's size), then `Commit` carrying
//! the position *after* the transaction. The channel is bounded: when the sink is slow, the
//! source waits, so memory does not grow with transaction size or backlog.
//!
//! Positions only travel on `Commit` (and `Progress` for binlog stretches without included
//! rows): the sink can therefore only ever record a source commit boundary as its offset.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::config::route::RouteTarget;
use crate::config::Format;
use crate::encode::avro::AvroTable;
use crate::error::Result;
use crate::position::SourcePosition;
use crate::schema::TableSchema;
use crate::source::rows::{RowImage, RowsKind};

/// Capacity of the source → sink channel, in messages (one rows event or boundary each). The
/// channel is also bounded by bytes: `source.channel_max_bytes` of [`Change::approx_bytes`].
pub const CHANNEL_CAPACITY: usize = 256;

/// The source → sink channel's sending half.
pub type ChangeSender = crate::channel::Sender<Change>;

/// The source → sink channel's receiving half.
pub type ChangeReceiver = crate::channel::Receiver<Change>;

/// A table as the sink sees it: its schema and where its changes go.
#[derive(Debug)]
pub struct TableCtx {
    /// `db.table`, the `table` label of the metrics.
    pub label: String,
    /// Columns, types and primary key.
    pub schema: Arc<TableSchema>,
    /// Topic, format, key columns and tombstone setting.
    pub route: RouteTarget,
    /// Indexes of the key columns (the primary key or the route's `key_columns`); empty for
    /// tables without either, whose records get a null key.
    pub key_idx: Vec<usize>,
    /// Each column's name as an escaped JSON object key with its colon (`"name":`), computed
    /// once per table version so the encoder does not escape names per row.
    pub json_names: Vec<String>,
    /// Avro schemas and writing plan, derived once per table version when the route's format
    /// is Avro.
    pub avro: Option<Arc<AvroTable>>,
}

impl TableCtx {
    /// Builds the context: precomputes the JSON field names and, for Avro routes, derives the
    /// Avro schemas. Errors are definite (a table shape the Avro schema cannot express).
    pub fn new(schema: Arc<TableSchema>, route: RouteTarget, key_idx: Vec<usize>) -> Result<Self> {
        let json_names = schema
            .columns
            .iter()
            .map(|c| {
                let mut out = Vec::with_capacity(c.name.len() + 3);
                crate::encode::json_value::write_json_string(&mut out, &c.name);
                out.push(b':');
                String::from_utf8_lossy(&out).into_owned()
            })
            .collect();
        let avro = match route.format {
            Format::Avro => Some(Arc::new(AvroTable::new(
                &schema,
                &key_idx,
                &route.topic,
                route.avro,
            )?)),
            Format::Json => None,
        };
        let label = format!("{}.{}", schema.db, schema.table);
        // A table first seen while streaming (created after the start): its series exist from
        // its first table map, before any of its records commit.
        crate::metrics::global().register_tables([label.as_str()]);
        Ok(TableCtx {
            label,
            schema,
            route,
            key_idx,
            json_names,
            avro,
        })
    }
}

/// Metadata of one source transaction, for the envelope's `source` and `transaction` blocks.
#[derive(Debug, Clone, Default)]
pub struct TxnMeta {
    /// GTID text of the transaction (`uuid:n` or `d-s-n`), if the server uses GTIDs.
    pub gtid: Option<String>,
    /// Binlog file of the transaction's first event.
    pub file: Arc<str>,
    /// Position of the transaction's first event.
    pub pos: u64,
    /// Commit timestamp on the source, seconds since the epoch.
    pub ts_sec: u32,
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

/// One message from the source stage to the sink.
#[derive(Debug)]
pub enum Change {
    /// A source transaction that touches included tables starts.
    Begin(TxnMeta),
    /// Decoded rows of one binlog rows event of the open transaction.
    Rows {
        /// The table and its route.
        table: Arc<TableCtx>,
        /// Insert, update or delete.
        kind: RowsKind,
        /// The row images of the event.
        rows: Vec<RowImage>,
        /// Binlog position of the rows event (start).
        pos: u64,
    },
    /// A DDL statement changed (or created, dropped, renamed, truncated) an included table:
    /// the sink writes the schema-change record and the table's schema-history record in the
    /// open Kafka transaction, before anything that follows in the binlog. A history-only event
    /// (no record) may also come outside a source transaction, at the start of the stream: it
    /// commits with the next offset.
    Schema(SchemaEvent),
    /// The open transaction committed; the source resumes at the checkpoint after it.
    Commit(Checkpoint),
    /// The source moved past binlog without included rows (filtered tables, DDL, heartbeats,
    /// prepared XA transactions): the sink records it now and then so a restart does not
    /// replay it.
    Progress(Checkpoint),
}

impl Change {
    /// About the memory the message holds (what the channel's byte budget counts): the row
    /// images of a rows event, the records of a schema change. A checkpoint's snapshot
    /// progress is shared with the source (an `Arc`) and not counted.
    pub fn approx_bytes(&self) -> usize {
        let own = std::mem::size_of::<Change>();
        own + match self {
            Change::Rows { rows, .. } => rows
                .iter()
                .map(|r| {
                    std::mem::size_of::<RowImage>()
                        + r.before.as_deref().map_or(0, crate::value::row_bytes)
                        + r.after.as_deref().map_or(0, crate::value::row_bytes)
                })
                .sum::<usize>(),
            Change::Schema(e) => {
                e.db.len()
                    + e.table.len()
                    + e.record.as_ref().map_or(0, Vec::len)
                    + e.history
                        .iter()
                        .map(|(d, t, b)| d.len() + t.len() + b.as_ref().map_or(0, Vec::len))
                        .sum::<usize>()
            }
            Change::Begin(m) => m.gtid.as_ref().map_or(0, String::len),
            Change::Commit(c) | Change::Progress(c) => c
                .xa_prepared
                .iter()
                .map(|(k, v)| k.len() + v.len())
                .sum::<usize>(),
        }
    }
}

/// The key columns of a table's records: the route's `key_columns` when given, else the
/// primary key. A named column the table lacks is a definite error.
pub fn route_key_idx(
    schema: &crate::schema::TableSchema,
    target: &crate::config::route::RouteTarget,
) -> crate::error::Result<Vec<usize>> {
    if target.key_columns.is_empty() {
        return Ok(schema.primary_key.clone());
    }
    target
        .key_columns
        .iter()
        .map(|name| {
            schema
                .columns
                .iter()
                .position(|c| &c.name == name)
                .ok_or_else(|| {
                    crate::error::Error::definite(format!(
                        "route for {}.{} names key column `{name}` which the table does not \
                         have (columns: {}); fix `key_columns`",
                        schema.db,
                        schema.table,
                        schema
                            .columns
                            .iter()
                            .map(|c| c.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })
        })
        .collect()
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
    /// Schema-history updates, each `(db, table, new shape)`: `None` removes the table's entry
    /// (dropped, or renamed away).
    pub history: Vec<(String, String, Option<Vec<u8>>)>,
}
