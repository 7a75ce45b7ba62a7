//! Snapshot progress: which tables a snapshot covers and how far each got. It is part of the
//! offset record, so it commits in the same Kafka transaction as the rows of each chunk: after
//! a crash the snapshot goes on after the last committed chunk, never emitting a committed row
//! again and never skipping one.

use serde::{Deserialize, Serialize};

/// One value of a chunk's key, as the server returned it (binary protocol), so the next chunk's
/// `WHERE` binds exactly the same value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyValue {
    /// A signed integer.
    Int(i64),
    /// An unsigned integer.
    UInt(u64),
    /// A FLOAT/DOUBLE (keys of these types are legal, if unusual): the IEEE-754 bits as 16 hex
    /// digits, so the value survives JSON exactly.
    Double(String),
    /// Bytes (strings, decimals, binary), hex-encoded.
    Hex(String),
    /// DATE/DATETIME/TIMESTAMP: year, month, day, hour, minute, second, microsecond.
    Date(u16, u8, u8, u8, u8, u8, u32),
    /// TIME: negative, days, hours, minutes, seconds, microseconds.
    Time(bool, u32, u8, u8, u8, u32),
}

impl KeyValue {
    /// A DOUBLE key value.
    pub fn double(d: f64) -> Self {
        KeyValue::Double(format!("{:016x}", d.to_bits()))
    }

    /// From a value of a result row; `None` for NULL (key columns are NOT NULL).
    pub fn from_mysql(v: &mysql_async::Value) -> Option<Self> {
        use mysql_async::Value as M;
        Some(match v {
            M::NULL => return None,
            M::Int(i) => KeyValue::Int(*i),
            M::UInt(u) => KeyValue::UInt(*u),
            M::Float(f) => KeyValue::double(f64::from(*f)),
            M::Double(d) => KeyValue::double(*d),
            M::Bytes(b) => KeyValue::Hex(hex(b)),
            M::Date(y, mo, d, h, mi, s, us) => KeyValue::Date(*y, *mo, *d, *h, *mi, *s, *us),
            M::Time(neg, d, h, mi, s, us) => KeyValue::Time(*neg, *d, *h, *mi, *s, *us),
        })
    }

    /// The value to bind as a statement parameter; `None` when stored hex is damaged.
    pub fn to_mysql(&self) -> Option<mysql_async::Value> {
        use mysql_async::Value as M;
        Some(match self {
            KeyValue::Int(i) => M::Int(*i),
            KeyValue::UInt(u) => M::UInt(*u),
            KeyValue::Double(bits) => {
                M::Double(f64::from_bits(u64::from_str_radix(bits, 16).ok()?))
            }
            KeyValue::Hex(h) => M::Bytes(unhex(h)?),
            KeyValue::Date(y, mo, d, h, mi, s, us) => M::Date(*y, *mo, *d, *h, *mi, *s, *us),
            KeyValue::Time(neg, d, h, mi, s, us) => M::Time(*neg, *d, *h, *mi, *s, *us),
        })
    }
}

fn hex(b: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for &x in b {
        s.push(char::from(DIGITS[usize::from(x >> 4)]));
        s.push(char::from(DIGITS[usize::from(x & 15)]));
    }
    s
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Progress of one table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableProgress {
    /// Database.
    pub db: String,
    /// Table.
    pub table: String,
    /// Columns the chunks are ordered and split by (the primary key, or a unique index of
    /// NOT NULL columns); empty until the first chunk was read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub key: Vec<String>,
    /// Key of the last emitted row; `None` before the first chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Vec<KeyValue>>,
    /// Id of the ad-hoc request (API or signal) this entry belongs to; `None` for the snapshot
    /// the pipeline started with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
    /// Only rows matching this SQL condition are read (an ad-hoc request's `where`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    /// The table has no usable key: it is read in one pass (see `docs/snapshots.md`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub scan: bool,
    /// Every row was emitted.
    #[serde(default)]
    pub done: bool,
    /// Rows emitted so far.
    #[serde(default)]
    pub rows: u64,
    /// Chunks emitted so far.
    #[serde(default)]
    pub chunks: u64,
    /// The server's row estimate when the snapshot was planned (`information_schema.TABLES`).
    #[serde(default)]
    pub estimate: u64,
}

impl TableProgress {
    /// A table not started yet.
    pub fn new(db: &str, table: &str, estimate: u64) -> Self {
        TableProgress {
            db: db.to_string(),
            table: table.to_string(),
            key: Vec::new(),
            after: None,
            request: None,
            filter: None,
            scan: false,
            done: false,
            rows: 0,
            chunks: 0,
            estimate,
        }
    }
}

/// Progress of a snapshot, committed with the offsets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotProgress {
    /// When the snapshot was planned (ms since the epoch).
    pub started_ms: u64,
    /// Stop the pipeline once every table is done (`start = "snapshot_only"`).
    #[serde(default)]
    pub then_stop: bool,
    /// The tables, in the order they are read.
    pub tables: Vec<TableProgress>,
}

impl SnapshotProgress {
    /// Whether every table is done.
    pub fn done(&self) -> bool {
        self.tables.iter().all(|t| t.done)
    }

    /// The first table not done yet.
    pub fn next_table(&self) -> Option<&TableProgress> {
        self.tables.iter().find(|t| !t.done)
    }

    /// The progress entry of `db.table`.
    pub fn table_mut(&mut self, db: &str, table: &str) -> Option<&mut TableProgress> {
        self.tables
            .iter_mut()
            .find(|t| t.db == db && t.table == table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn mysql_value() -> impl Strategy<Value = mysql_async::Value> {
        use mysql_async::Value as M;
        prop_oneof![
            any::<i64>().prop_map(M::Int),
            any::<u64>().prop_map(M::UInt),
            any::<f64>()
                .prop_filter("finite", |d| d.is_finite())
                .prop_map(M::Double),
            proptest::collection::vec(any::<u8>(), 0..40).prop_map(M::Bytes),
            (
                0u16..=9999,
                0u8..=12,
                0u8..=31,
                0u8..24,
                0u8..60,
                0u8..60,
                0u32..1_000_000
            )
                .prop_map(|(y, mo, d, h, mi, s, us)| M::Date(y, mo, d, h, mi, s, us)),
            (
                any::<bool>(),
                0u32..35,
                0u8..24,
                0u8..60,
                0u8..60,
                0u32..1_000_000
            )
                .prop_map(|(n, d, h, mi, s, us)| M::Time(n, d, h, mi, s, us)),
        ]
    }

    proptest! {
        #[test]
        fn key_values_survive_the_offset_record(v in mysql_value()) {
            let k = KeyValue::from_mysql(&v).unwrap();
            let json = serde_json::to_string(&k).unwrap();
            let back: KeyValue = serde_json::from_str(&json).unwrap();
            prop_assert_eq!(back.to_mysql(), Some(v));
        }
    }

    #[test]
    fn progress_round_trips_and_reports_what_is_left() {
        let mut p = SnapshotProgress {
            started_ms: 5,
            then_stop: false,
            tables: vec![
                TableProgress::new("d", "a", 10),
                TableProgress::new("d", "b", 0),
            ],
        };
        assert_eq!(p.next_table().map(|t| t.table.as_str()), Some("a"));
        let a = p.table_mut("d", "a").unwrap();
        a.key = vec!["id".into()];
        a.after = Some(vec![KeyValue::Int(7), KeyValue::Hex("00ff".into())]);
        a.done = true;
        assert_eq!(p.next_table().map(|t| t.table.as_str()), Some("b"));
        let json = serde_json::to_string(&p).unwrap();
        let back: SnapshotProgress = serde_json::from_str(&json).unwrap();
        assert_eq!(back, p);
        assert!(!p.done());
        p.tables[1].done = true;
        assert!(p.done());
        assert_eq!(KeyValue::Hex("0g".into()).to_mysql(), None);
        assert_eq!(KeyValue::from_mysql(&mysql_async::Value::NULL), None);
    }
}
