//! What the open Kafka transaction holds, counted for the metrics when it commits, and the
//! dead-letter record format.

use crate::encode::json::Record;

/// What the open Kafka transaction holds, counted for the metrics.
#[derive(Default)]
pub(super) struct TxnCounts {
    /// Records per (`db.table`, op) written to their topics (tombstones not counted).
    pub(super) written: Vec<((String, &'static str), u64)>,
    /// Records per `db.table` written to the dead-letter topic.
    pub(super) dead_letters: Vec<(String, u64)>,
    /// Key and value bytes of all records.
    pub(super) bytes: u64,
}

impl TxnCounts {
    pub(super) fn add_written(&mut self, table: &str, op: &'static str, n: u64) {
        if n == 0 {
            return;
        }
        match self
            .written
            .iter_mut()
            .rev()
            .find(|((t, o), _)| *o == op && t == table)
        {
            Some((_, c)) => *c += n,
            None => self.written.push(((table.to_string(), op), n)),
        }
    }

    pub(super) fn add_dead_letters(&mut self, table: &str, n: u64) {
        if n == 0 {
            return;
        }
        match self.dead_letters.iter_mut().find(|(t, _)| t == table) {
            Some((_, c)) => *c += n,
            None => self.dead_letters.push((table.to_string(), n)),
        }
    }

    pub(super) fn clear(&mut self) {
        self.written.clear();
        self.dead_letters.clear();
        self.bytes = 0;
    }
}

/// The `op` label of a rows event.
pub(super) fn op_label(kind: crate::model::RowsKind) -> &'static str {
    use crate::model::RowsKind;
    match kind {
        RowsKind::Insert => "c",
        RowsKind::Update => "u",
        RowsKind::Delete => "d",
        RowsKind::Read => "r",
    }
}

/// The dead-letter record of a record that could not go to `topic`: JSON naming the topic and
/// the reason, with the record's key and value as base64 (they may be binary).
pub(super) fn dead_letter(topic: &str, reason: &str, rec: &Record) -> Vec<u8> {
    use base64::Engine as _;
    let b64 = |b: &Option<Vec<u8>>| {
        b.as_ref()
            .map(|b| base64::engine::general_purpose::STANDARD.encode(b))
    };
    serde_json::json!({
        "topic": topic,
        "reason": reason,
        "key_base64": b64(&rec.key),
        "value_base64": b64(&rec.value),
        "ts_ms": crate::model::clock::now_ms(),
    })
    .to_string()
    .into_bytes()
}
