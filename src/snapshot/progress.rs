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
    /// The tables, in the order they are read. In memory every table stays (the HTTP API
    /// follows a request to its end); the committed record keeps only those not done yet
    /// ([`SnapshotProgress::for_record`]).
    pub tables: Vec<TableProgress>,
    /// Tables done and left out of `tables` in the committed record: a restart needs nothing
    /// of them (a done table is never read again), so the record stays small however many
    /// tables a snapshot has. Left out of the JSON when 0 (as in records of older versions).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub finished_tables: u64,
    /// Rows the tables counted in `finished_tables` emitted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub finished_rows: u64,
    /// Ids of the ad-hoc requests whose tables are all done and left `tables` (one short id per
    /// request, so that whoever follows a request can still tell it finished).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finished_requests: Vec<String>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl SnapshotProgress {
    /// Whether every table is done.
    pub fn done(&self) -> bool {
        self.tables.iter().all(|t| t.done)
    }

    /// The progress as committed with the offset: the tables not done yet, and the done ones
    /// only counted (`finished_tables`, `finished_rows`).
    pub fn for_record(&self) -> SnapshotProgress {
        let (done, pending): (Vec<&TableProgress>, Vec<&TableProgress>) =
            self.tables.iter().partition(|t| t.done);
        let mut finished_requests = self.finished_requests.clone();
        for id in done.iter().filter_map(|t| t.request.as_ref()) {
            let running = pending.iter().any(|t| t.request.as_ref() == Some(id));
            if !running && !finished_requests.contains(id) {
                finished_requests.push(id.clone());
            }
        }
        SnapshotProgress {
            started_ms: self.started_ms,
            then_stop: self.then_stop,
            tables: pending.into_iter().cloned().collect(),
            finished_tables: self.finished_tables + done.len() as u64,
            finished_rows: self.finished_rows + done.iter().map(|t| t.rows).sum::<u64>(),
            finished_requests,
        }
    }

    /// Whether there is (or was) a snapshot to report: tables listed or finished.
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty() && self.finished_tables == 0
    }

    /// Tables of the snapshot, finished ones left out of the list included.
    pub fn table_count(&self) -> u64 {
        self.tables.len() as u64 + self.finished_tables
    }

    /// Rows emitted, by the listed tables and the finished ones left out.
    pub fn total_rows(&self) -> u64 {
        self.finished_rows + self.tables.iter().map(|t| t.rows).sum::<u64>()
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

/// A human-readable summary of a snapshot's progress (`sluice offsets show`): one line per
/// table (`db.table`, rows emitted against the server's estimate, chunks, done or in
/// progress, key columns, the ad-hoc request's id and filter when present) and a total line.
pub fn summary(p: &SnapshotProgress) -> String {
    let (y, mo, d) = crate::encode::json_value::civil_from_days(
        i64::try_from(p.started_ms / 86_400_000).unwrap_or(0),
    );
    let secs = (p.started_ms / 1000) % 86_400;
    let mut out = format!(
        "snapshot planned at {y:04}-{mo:02}-{d:02} {:02}:{:02}:{:02} UTC{}\n",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        if p.then_stop {
            " (the pipeline stops when it is done)"
        } else {
            ""
        }
    );
    let mut lines: Vec<Vec<String>> = Vec::new();
    for t in &p.tables {
        let mut cells = vec![
            format!("{}.{}", t.db, t.table),
            rows_cell(t.rows, t.estimate, t.done),
            chunks_cell(t.chunks),
            if t.done { "done" } else { "in progress" }.to_string(),
            if t.scan {
                "one pass (no key)".to_string()
            } else if t.key.is_empty() {
                "key not chosen yet".to_string()
            } else {
                format!("key ({})", t.key.join(", "))
            },
        ];
        if let Some(r) = &t.request {
            cells.push(format!("request {r}"));
        }
        if let Some(f) = &t.filter {
            cells.push(format!(
                "where {}",
                f.split_whitespace().collect::<Vec<_>>().join(" ")
            ));
        }
        lines.push(cells);
    }
    if p.finished_tables > 0 {
        lines.push(vec![
            format!(
                "{} finished table{} (not listed)",
                p.finished_tables,
                if p.finished_tables == 1 { "" } else { "s" }
            ),
            format!("{} rows", p.finished_rows),
        ]);
    }
    let done = p.tables.iter().filter(|t| t.done).count() as u64 + p.finished_tables;
    let rows = p.total_rows();
    let estimate = p.finished_rows + p.tables.iter().map(|t| t.estimate).sum::<u64>();
    let count = p.table_count();
    lines.push(vec![
        "total".to_string(),
        rows_cell(rows, estimate, p.done()),
        chunks_cell(p.tables.iter().map(|t| t.chunks).sum()),
        format!(
            "{done} of {count} table{} done",
            if count == 1 { "" } else { "s" }
        ),
    ]);
    // Columns aligned across the lines; a line's last cell is not padded, nor counted.
    let mut widths: Vec<usize> = Vec::new();
    for cells in &lines {
        for (i, c) in cells.iter().enumerate().take(cells.len().saturating_sub(1)) {
            let w = c.chars().count();
            match widths.get_mut(i) {
                Some(x) => *x = (*x).max(w),
                None => widths.push(w),
            }
        }
    }
    for cells in &lines {
        let mut line = String::from(" ");
        for (i, c) in cells.iter().enumerate() {
            line.push(' ');
            line.push_str(c);
            let pad = widths
                .get(i)
                .copied()
                .unwrap_or(0)
                .saturating_sub(c.chars().count());
            line.extend(std::iter::repeat_n(' ', pad + 1));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// `rows of ~estimate rows (pct%)`: the estimate is the server's, so an unfinished table shows
/// at most 99.9% and a finished one 100%.
fn rows_cell(rows: u64, estimate: u64, done: bool) -> String {
    let pct = if done {
        "100%".to_string()
    } else if estimate == 0 {
        "?%".to_string()
    } else {
        // Display only: the precision of f64 is plenty.
        let p = (rows as f64 * 100.0 / estimate as f64).min(99.9);
        format!("{p:.1}%")
    };
    format!("{rows} of ~{estimate} rows ({pct})")
}

fn chunks_cell(n: u64) -> String {
    format!("{n} chunk{}", if n == 1 { "" } else { "s" })
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
    fn summary_lines() {
        let mut p = SnapshotProgress {
            // 2024-02-29 13:05:09 UTC
            started_ms: 1_709_211_909_123,
            then_stop: false,
            tables: vec![
                TableProgress::new("shop", "orders", 5000),
                TableProgress::new("shop", "items", 0),
                TableProgress::new("crm", "people", 10),
                TableProgress::new("crm", "log", 100),
            ],
            finished_tables: 0,
            finished_rows: 0,
            finished_requests: Vec::new(),
        };
        let o = &mut p.tables[0];
        o.key = vec!["id".into()];
        o.rows = 5100;
        o.chunks = 3;
        o.done = true;
        let i = &mut p.tables[1];
        i.key = vec!["order_id".into(), "n".into()];
        i.rows = 7;
        i.chunks = 1;
        let c = &mut p.tables[2];
        c.key = vec!["id".into()];
        c.rows = 4;
        c.chunks = 2;
        c.request = Some("d139b9b7-2".into());
        c.filter = Some("id > 10\n  AND region = 'eu'".into());
        p.tables[3].scan = true;
        assert_eq!(
            summary(&p),
            "snapshot planned at 2024-02-29 13:05:09 UTC\n\
             \x20 shop.orders  5100 of ~5000 rows (100%)   3 chunks  done         key (id)\n\
             \x20 shop.items   7 of ~0 rows (?%)           1 chunk   in progress  key (order_id, n)\n\
             \x20 crm.people   4 of ~10 rows (40.0%)       2 chunks  in progress  key (id)  \
             request d139b9b7-2  where id > 10 AND region = 'eu'\n\
             \x20 crm.log      0 of ~100 rows (0.0%)       0 chunks  in progress  one pass (no key)\n\
             \x20 total        5111 of ~5110 rows (99.9%)  6 chunks  1 of 4 tables done\n"
        );
        for t in &mut p.tables {
            t.done = true;
        }
        p.tables.truncate(1);
        p.then_stop = true;
        p.started_ms = 0;
        assert_eq!(
            summary(&p),
            "snapshot planned at 1970-01-01 00:00:00 UTC (the pipeline stops when it is done)\n\
             \x20 shop.orders  5100 of ~5000 rows (100%)  3 chunks  done  key (id)\n\
             \x20 total        5100 of ~5000 rows (100%)  3 chunks  1 of 1 table done\n"
        );
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
            finished_tables: 0,
            finished_rows: 0,
            finished_requests: Vec::new(),
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

    /// A snapshot of `n` tables in `db`, none started.
    fn many(n: usize) -> SnapshotProgress {
        SnapshotProgress {
            started_ms: 1_700_000_000_000,
            then_stop: false,
            tables: (0..n)
                .map(|i| TableProgress::new("shop", &format!("table_{i:05}"), 1000))
                .collect(),
            finished_tables: 0,
            finished_rows: 0,
            finished_requests: Vec::new(),
        }
    }

    #[test]
    fn finished_tables_leave_the_committed_record() {
        let mut p = many(10_000);
        let size = |p: &SnapshotProgress| serde_json::to_vec(&p.for_record()).unwrap().len();
        let at_start = size(&p);
        // One table being read, with a key position.
        for (i, t) in p.tables.iter_mut().enumerate().take(9_999) {
            t.key = vec!["id".into()];
            t.after = Some(vec![KeyValue::Int(123_456_789)]);
            t.rows = 1000;
            t.chunks = 1;
            t.done = i < 9_999;
        }
        let near_end = size(&p);
        p.tables[9_999].done = true;
        p.tables[9_999].rows = 7;
        let at_end = size(&p);
        eprintln!("offset record's snapshot of 10000 tables: {at_start} bytes at the start, {near_end} with one table left, {at_end} when all are done");
        // 10,000 tables not started: about 85 bytes each (what is still to read is listed).
        assert!(at_start < 900_000, "{at_start} bytes at the start");
        // With all but one done, the record holds one table and two counts.
        assert!(near_end < 300, "{near_end} bytes with one table left");
        assert!(at_end < 200, "{at_end} bytes when all are done");
        // Before, every done table stayed: far past Kafka's 1 MiB default message size.
        let all = serde_json::to_vec(&p).unwrap().len();
        eprintln!("with every done table listed (the old format): {all} bytes");
        assert!(all > 1_000_000, "{all} bytes with every table listed");
        // The counts survive the round trip and add up.
        let back: SnapshotProgress =
            serde_json::from_slice(&serde_json::to_vec(&p.for_record()).unwrap()).unwrap();
        assert!(back.tables.is_empty() && back.done() && !back.is_empty());
        assert_eq!(
            (back.finished_tables, back.finished_rows),
            (10_000, 9_999_007)
        );
        assert_eq!((back.table_count(), back.total_rows()), (10_000, 9_999_007));
        // A record written again after a restart keeps counting.
        let again = back.for_record();
        assert_eq!(
            (again.finished_tables, again.finished_rows),
            (10_000, 9_999_007)
        );
        assert!(summary(&again).contains("10000 finished tables (not listed)"));
        assert!(summary(&again).contains("10000 of 10000 tables done"));
    }

    #[test]
    fn a_record_of_the_old_format_still_reads() {
        // Written before finished tables left the record: every table listed with all its
        // fields, done ones included.
        let old = r#"{"started_ms":1700000000000,"then_stop":true,"tables":[
            {"db":"shop","table":"orders","key":["id"],"after":[{"int":42}],"done":true,
             "rows":42,"chunks":1,"estimate":40},
            {"db":"shop","table":"items","key":["id"],"after":[{"int":7}],"done":false,
             "rows":7,"chunks":1,"estimate":100},
            {"db":"shop","table":"users","done":false,"rows":0,"chunks":0,"estimate":5}]}"#;
        let p: SnapshotProgress = serde_json::from_str(old).unwrap();
        assert_eq!(p.tables.len(), 3);
        assert_eq!((p.finished_tables, p.finished_rows), (0, 0));
        assert!(p.then_stop && !p.done());
        assert_eq!(p.next_table().unwrap().table, "items");
        assert_eq!(p.tables[1].after, Some(vec![KeyValue::Int(7)]));
        // Written again, the done table leaves, and the rest keep what a restart needs.
        let r = p.for_record();
        assert_eq!(r.tables.len(), 2);
        assert_eq!((r.finished_tables, r.finished_rows), (1, 42));
        assert_eq!(r.tables[0].after, Some(vec![KeyValue::Int(7)]));
        assert_eq!(r.total_rows(), 49);
        // A table not started is written with its names, state and counts only.
        let users = serde_json::to_string(&r.tables[1]).unwrap();
        assert_eq!(
            users,
            r#"{"db":"shop","table":"users","done":false,"rows":0,"chunks":0,"estimate":5}"#
        );
        let back: TableProgress = serde_json::from_str(&users).unwrap();
        assert_eq!(back, r.tables[1]);
    }

    #[test]
    fn a_finished_request_is_remembered_by_its_id() {
        let mut p = many(3);
        p.tables[0].request = Some("r1".into());
        p.tables[1].request = Some("r1".into());
        p.tables[2].request = Some("r2".into());
        p.tables[0].done = true;
        p.tables[2].done = true;
        // r1 still has a table to read; r2 is finished.
        let r = p.for_record();
        assert_eq!(r.finished_requests, ["r2"]);
        assert_eq!(r.tables.len(), 1);
        let mut r = r;
        r.tables[0].done = true;
        let again = r.for_record();
        assert_eq!(again.finished_requests, ["r2", "r1"]);
        assert!(again.tables.is_empty() && again.done());
    }
}
