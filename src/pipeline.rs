//! What flows between the stages: whole source transactions, cut into bounded messages.
//!
//! The source sends, per source transaction, `Begin`, any number of `Rows` (one binlog rows
//! event each, so a change is small whatever the transaction's size), then `Commit` carrying
//! the position *after* the transaction. Consecutive changes travel in batches (what the
//! source had at hand before it would wait for the binlog, bounded by count and bytes), so
//! the sink is woken once per batch. The channel is bounded: when the sink is slow, the source
//! waits, so memory does not grow with transaction size or backlog.
//!
//! Positions only travel on `Commit` (and `Progress` for binlog stretches without included
//! rows): the sink can therefore only ever record a source commit boundary as its offset.

use std::sync::Arc;

pub use crate::encode::table_ctx::{route_key_idx, TableCtx};
pub use crate::model::{Checkpoint, HistoryUpdate, SchemaEvent, TxnMeta};
use crate::model::{ReadMarks, RowImage, RowsKind};

/// Capacity of the source → sink channel, in messages (one batch of changes each: what the
/// source had at hand, see `capture::send::Outbox`). The channel is also bounded by bytes:
/// `source.channel_max_bytes` of [`Change::approx_bytes`]. Eight batches of at most 1 MiB
/// keep the source ahead of the sink while holding about what 256 single rows events held
/// before the batches (256 batches let the channel fill its 64 MiB: peak RSS 47 → 121 MiB in
/// a drain whose source outran its sink).
pub const CHANNEL_CAPACITY: usize = 8;

/// Most changes in one message of the source → sink channel.
pub const BATCH_MAX_CHANGES: usize = 256;

/// Most bytes ([`Change::approx_bytes`]) in one message of the source → sink channel: an
/// eighth of `source.channel_max_bytes`, at most 1 MiB (a single larger change goes alone).
pub fn batch_max_bytes(channel_max_bytes: usize) -> usize {
    (channel_max_bytes / 8).clamp(1, 1 << 20)
}

/// The source → sink channel's sending half (batches of changes).
pub type ChangeSender = crate::channel::Sender<Vec<Change>>;

/// The source → sink channel's receiving half, giving out one change at a time.
pub type ChangeReceiver = crate::channel::BatchReceiver<Change>;

/// The source → sink channel: [`CHANNEL_CAPACITY`] batches, `channel_max_bytes` bytes.
pub fn change_channel(channel_max_bytes: u64) -> (ChangeSender, ChangeReceiver) {
    let (tx, rx) = crate::channel::channel(CHANNEL_CAPACITY, channel_max_bytes);
    (tx, crate::channel::BatchReceiver::new(rx))
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
        /// Source time of the rows (µs since the epoch), the envelope's `source.ts_*`: the
        /// transaction's commit time where the server logs one (MySQL 8.0.1+), else the rows
        /// event's header second (so the rows of one MariaDB transaction can carry different
        /// seconds, as Debezium writes them); a snapshot read's time for snapshot rows.
        ts_us: u64,
        /// What the rows' `source.snapshot` says ([`ReadMarks::STREAM`] for binlog rows).
        marks: ReadMarks,
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
                        .map(|h| h.db.len() + h.table.len() + h.shape.as_ref().map_or(0, Vec::len))
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
