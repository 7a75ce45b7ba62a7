//! What every encoder shares: the records one row change becomes.
//!
//! | rows event | records (key, value)                                                      |
//! |------------|---------------------------------------------------------------------------|
//! | insert     | (key, `c` envelope)                                                       |
//! | delete     | (key, `d` envelope), then (key, tombstone) if the route asks for tombstones |
//! | update     | (key, `u` envelope) when the key is unchanged or the table has no key     |
//! | key change | (old key, `d`), (old key, tombstone) if asked, (new key, `c`)             |
//!
//! The records of a key change carry Debezium's headers (unless the route sets
//! `key_change_headers = false`): the delete and its tombstone `__debezium.newkey`, the
//! create `__debezium.oldkey` ([`crate::encode::key_header`]).
//!
//! A change's [`RowPos`] orders are those of its first event; a key change's create is the
//! next event of its transaction and its table (orders + 1), as Debezium numbers them. The
//! caller advances its counts by the number of envelopes (tombstones are not events).
//!
//! "Key change" compares the encoded key bytes, i.e. what consumers see. The format-specific
//! part (how a key and an envelope are written) is an [`EnvelopeWriter`]; [`encode_change`]
//! is the one place that decides which records a change becomes, so formats cannot drift.

use crate::encode::envelope::EventTime;
use crate::encode::key_header;
use crate::encode::table_ctx::TableCtx;
use crate::model::TxnMeta;
use crate::model::{RowImage, RowsKind, SnapshotMark};
use crate::value::Value;

/// One Kafka record: key and value bytes (`None` = null) and, on the records of a key
/// change, one header.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Record key.
    pub key: Option<Vec<u8>>,
    /// Record value; `None` is a tombstone.
    pub value: Option<Vec<u8>>,
    /// A header (name, value): Debezium's `__debezium.newkey` / `__debezium.oldkey` on the
    /// records of a key change ([`crate::encode::key_header`]); `None` on all others.
    pub header: Option<(&'static str, Vec<u8>)>,
}

impl Record {
    /// A record without header.
    pub fn new(key: Option<Vec<u8>>, value: Option<Vec<u8>>) -> Self {
        Record {
            key,
            value,
            header: None,
        }
    }
}

/// Envelope operation codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Insert (`c`).
    Create,
    /// Update (`u`).
    Update,
    /// Delete (`d`).
    Delete,
    /// Snapshot read (`r`).
    Read,
}

impl Op {
    /// The envelope's `op` string.
    pub fn code(self) -> &'static str {
        match self {
            Op::Create => "c",
            Op::Update => "u",
            Op::Delete => "d",
            Op::Read => "r",
        }
    }
}

/// Position of one row inside the source, for the `source` block.
#[derive(Debug, Clone, Copy)]
pub struct RowPos {
    /// Binlog position of the rows event.
    pub pos: u64,
    /// Index of the row within the rows event.
    pub row: u32,
    /// 1-based order of the event within its transaction.
    pub total_order: u64,
    /// 1-based order of the event within its transaction for this table.
    pub data_collection_order: u64,
    /// What `source.snapshot` says ([`SnapshotMark::False`] for streamed changes).
    pub snapshot: SnapshotMark,
    /// Source time of the row (µs since the epoch): `source.ts_ms`/`ts_us`/`ts_ns`.
    pub source_ts_us: u64,
}

/// One row change to encode: the table, its source transaction, what the event did, the row
/// and where it sits in the source.
#[derive(Debug, Clone, Copy)]
pub struct RowChange<'a> {
    /// The table and its route.
    pub table: &'a TableCtx,
    /// The source transaction.
    pub meta: &'a TxnMeta,
    /// Insert, update, delete or snapshot read.
    pub kind: RowsKind,
    /// The before and after images.
    pub row: &'a RowImage,
    /// Where the row sits in the source and in its transaction.
    pub row_pos: RowPos,
}

/// What one envelope says: the table, the transaction, the operation, the images and when
/// sluice wrote it.
#[derive(Debug, Clone, Copy)]
pub struct Envelope<'a> {
    /// The table and its route.
    pub table: &'a TableCtx,
    /// The source transaction.
    pub meta: &'a TxnMeta,
    /// The envelope's `op`.
    pub op: Op,
    /// The before image, if the operation has one.
    pub before: Option<&'a [Value]>,
    /// The after image, if the operation has one.
    pub after: Option<&'a [Value]>,
    /// Where the row sits in the source and in its transaction.
    pub row_pos: RowPos,
    /// When sluice wrote the envelope (the top-level `ts_ms`/`ts_us`/`ts_ns`): one clock
    /// reading for all the records of a row change.
    pub ts: EventTime,
}

/// How one format writes a record key and an envelope.
pub trait EnvelopeWriter {
    /// Why a row cannot be written (`Infallible` for formats that can write anything).
    type Error;

    /// The key bytes, or `None` for tables without key columns (or a missing image).
    fn key(&self, table: &TableCtx, row: Option<&[Value]>) -> Result<Option<Vec<u8>>, Self::Error>;

    /// The envelope bytes.
    fn envelope(&self, e: &Envelope<'_>) -> Result<Vec<u8>, Self::Error>;
}

/// Appends the records of one row change to `out` (see the module table). On error, `out`
/// may hold some of the row's records; callers drop them with the error.
pub fn encode_change<W: EnvelopeWriter>(
    w: &W,
    change: &RowChange<'_>,
    out: &mut Vec<Record>,
) -> Result<(), W::Error> {
    let RowChange {
        table,
        meta,
        kind,
        row,
        row_pos,
    } = *change;
    let ts = EventTime {
        ns: crate::model::clock::now_ns(),
    };
    let envelope_at = |op, before, after, row_pos| Envelope {
        table,
        meta,
        op,
        before,
        after,
        row_pos,
        ts,
    };
    let envelope = |op, before, after| envelope_at(op, before, after, row_pos);
    match kind {
        RowsKind::Insert | RowsKind::Read => {
            let after = row.after.as_deref();
            let op = if kind == RowsKind::Read {
                Op::Read
            } else {
                Op::Create
            };
            out.push(Record::new(
                w.key(table, after)?,
                Some(w.envelope(&envelope(op, None, after))?),
            ));
        }
        RowsKind::Delete => {
            let before = row.before.as_deref();
            let key = w.key(table, before)?;
            let value = w.envelope(&envelope(Op::Delete, before, None))?;
            if table.route.tombstones {
                out.push(Record::new(key.clone(), Some(value)));
                out.push(Record::new(key, None));
            } else {
                out.push(Record::new(key, Some(value)));
            }
        }
        RowsKind::Update => {
            let before = row.before.as_deref();
            let after = row.after.as_deref();
            let old_key = w.key(table, before)?;
            let new_key = w.key(table, after)?;
            if old_key != new_key && !table.out.key_idx.is_empty() {
                let delete = w.envelope(&envelope(Op::Delete, before, None))?;
                let create_pos = RowPos {
                    total_order: row_pos.total_order + 1,
                    data_collection_order: row_pos.data_collection_order + 1,
                    ..row_pos
                };
                let create = w.envelope(&envelope_at(Op::Create, None, after, create_pos))?;
                let header = |name: &'static str, image: Option<&[Value]>| {
                    if !table.route.rules.key_change_headers {
                        return None;
                    }
                    let json = image.and_then(|r| key_header::json_key(table, r))?;
                    Some((name, key_header::connect_header_text(json)))
                };
                let new_key_header = header(key_header::KEY_CHANGE_NEWKEY, after);
                let old_key_header = header(key_header::KEY_CHANGE_OLDKEY, before);
                out.push(Record {
                    key: old_key.clone(),
                    value: Some(delete),
                    header: new_key_header.clone(),
                });
                if table.route.tombstones {
                    out.push(Record {
                        key: old_key,
                        value: None,
                        header: new_key_header,
                    });
                }
                out.push(Record {
                    key: new_key,
                    value: Some(create),
                    header: old_key_header,
                });
            } else {
                out.push(Record::new(
                    new_key,
                    Some(w.envelope(&envelope(Op::Update, before, after))?),
                ));
            }
        }
    }
    Ok(())
}
