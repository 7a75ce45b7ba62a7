//! JSON encoding of row changes as Debezium's `JsonConverter` (`schemas.enable=false`) writes
//! them, so consumers written for Debezium read sluice's topics unchanged.
//!
//! Key: `{"<key column>": value, ...}` (null key for tables without a key). Value: the envelope
//! `{before, after, source{...}, op, ts_ms, transaction{id, total_order,
//! data_collection_order}}`. A delete is followed by a tombstone (null value) when the route
//! asks for it; an update that changes the key becomes delete + tombstone + create, as in
//! Debezium, so compacted topics keep only live keys.
//!
//! The encoder is pure: the same input always gives the same bytes apart from `ts_ms`
//! (processing time), which is why tests compare parsed documents without it.

use std::io::Write;

use crate::encode::json_value::{write_json_string, write_json_value};
use crate::pipeline::{TableCtx, TxnMeta};
use crate::source::rows::{RowImage, RowsKind};
use crate::value::Value;

/// One Kafka record: key and value bytes (`None` = null).
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Record key.
    pub key: Option<Vec<u8>>,
    /// Record value; `None` is a tombstone.
    pub value: Option<Vec<u8>>,
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
    fn code(self) -> &'static str {
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
}

/// Encodes row changes to Debezium-compatible JSON.
pub struct JsonEncoder {
    name_json: Vec<u8>,
    version: &'static str,
}

impl JsonEncoder {
    /// An encoder for the pipeline `name` (written as `source.name`).
    pub fn new(name: &str) -> Self {
        let mut name_json = Vec::new();
        write_json_string(&mut name_json, name);
        JsonEncoder {
            name_json,
            version: env!("CARGO_PKG_VERSION"),
        }
    }

    /// Encodes one row image into its records, appended to `out`.
    #[allow(clippy::too_many_arguments)]
    pub fn encode(
        &self,
        table: &TableCtx,
        meta: &TxnMeta,
        kind: RowsKind,
        row: &RowImage,
        pos: u64,
        row_idx: u32,
        order: (u64, u64),
        out: &mut Vec<Record>,
    ) {
        let rp = RowPos {
            pos,
            row: row_idx,
            total_order: order.0,
            data_collection_order: order.1,
        };
        let ts_ms = crate::sink::offsets::now_ms();
        match kind {
            RowsKind::Insert => {
                let after = row.after.as_deref();
                out.push(Record {
                    key: self.key(table, after),
                    value: Some(self.envelope(table, meta, Op::Create, None, after, rp, ts_ms)),
                });
            }
            RowsKind::Delete => {
                let before = row.before.as_deref();
                let key = self.key(table, before);
                out.push(Record {
                    key: key.clone(),
                    value: Some(self.envelope(table, meta, Op::Delete, before, None, rp, ts_ms)),
                });
                if table.route.tombstones {
                    out.push(Record { key, value: None });
                }
            }
            RowsKind::Update => {
                let before = row.before.as_deref();
                let after = row.after.as_deref();
                let old_key = self.key(table, before);
                let new_key = self.key(table, after);
                if old_key != new_key && !table.key_idx.is_empty() {
                    out.push(Record {
                        key: old_key.clone(),
                        value: Some(self.envelope(
                            table,
                            meta,
                            Op::Delete,
                            before,
                            None,
                            rp,
                            ts_ms,
                        )),
                    });
                    if table.route.tombstones {
                        out.push(Record {
                            key: old_key,
                            value: None,
                        });
                    }
                    out.push(Record {
                        key: new_key,
                        value: Some(self.envelope(table, meta, Op::Create, None, after, rp, ts_ms)),
                    });
                } else {
                    out.push(Record {
                        key: new_key,
                        value: Some(self.envelope(
                            table,
                            meta,
                            Op::Update,
                            before,
                            after,
                            rp,
                            ts_ms,
                        )),
                    });
                }
            }
        }
    }

    /// The key document, or `None` for tables without key columns.
    pub fn key(&self, table: &TableCtx, row: Option<&[Value]>) -> Option<Vec<u8>> {
        if table.key_idx.is_empty() {
            return None;
        }
        let row = row?;
        let mut out = Vec::with_capacity(32);
        out.push(b'{');
        for (n, &i) in table.key_idx.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            self.field(&mut out, table, row, i);
        }
        out.push(b'}');
        Some(out)
    }

    fn field(&self, out: &mut Vec<u8>, table: &TableCtx, row: &[Value], i: usize) {
        if let (Some(name), Some(col)) = (table.json_names.get(i), table.schema.columns.get(i)) {
            out.extend_from_slice(name.as_bytes());
            match row.get(i) {
                Some(v) => write_json_value(out, col, v),
                None => out.extend_from_slice(b"null"),
            }
        }
    }

    fn row_doc(&self, out: &mut Vec<u8>, table: &TableCtx, row: Option<&[Value]>) {
        let Some(row) = row else {
            out.extend_from_slice(b"null");
            return;
        };
        out.push(b'{');
        for i in 0..table.schema.columns.len() {
            if i > 0 {
                out.push(b',');
            }
            self.field(out, table, row, i);
        }
        out.push(b'}');
    }

    /// The envelope document.
    #[allow(clippy::too_many_arguments)]
    pub fn envelope(
        &self,
        table: &TableCtx,
        meta: &TxnMeta,
        op: Op,
        before: Option<&[Value]>,
        after: Option<&[Value]>,
        rp: RowPos,
        ts_ms: u64,
    ) -> Vec<u8> {
        let mut out = Vec::with_capacity(256 + 64 * table.schema.columns.len());
        out.extend_from_slice(b"{\"before\":");
        self.row_doc(&mut out, table, before);
        out.extend_from_slice(b",\"after\":");
        self.row_doc(&mut out, table, after);
        // Writing into a Vec cannot fail.
        let _ = write!(
            out,
            ",\"source\":{{\"version\":\"{}\",\"connector\":\"{}\",\"name\":",
            self.version, meta.connector
        );
        out.extend_from_slice(&self.name_json);
        let _ = write!(
            out,
            ",\"ts_ms\":{},\"snapshot\":\"{}\",\"db\":",
            u64::from(meta.ts_sec) * 1000,
            if op == Op::Read { "true" } else { "false" }
        );
        write_json_string(&mut out, &table.schema.db);
        out.extend_from_slice(b",\"table\":");
        write_json_string(&mut out, &table.schema.table);
        let _ = write!(out, ",\"server_id\":{},\"gtid\":", meta.server_id);
        match &meta.gtid {
            Some(g) => write_json_string(&mut out, g),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"file\":");
        write_json_string(&mut out, &meta.file);
        let _ = write!(out, ",\"pos\":{},\"row\":{},\"thread\":", rp.pos, rp.row);
        match meta.thread {
            Some(t) => {
                let _ = write!(out, "{t}");
            }
            None => out.extend_from_slice(b"null"),
        }
        let _ = write!(
            out,
            ",\"query\":null}},\"op\":\"{}\",\"ts_ms\":{},\"transaction\":{{\"id\":",
            op.code(),
            ts_ms
        );
        write_json_string(&mut out, &meta.id());
        let _ = write!(
            out,
            ",\"total_order\":{},\"data_collection_order\":{}}}}}",
            rp.total_order, rp.data_collection_order
        );
        out
    }
}
