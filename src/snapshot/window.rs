//! The watermark window of one chunk: which binlog changes win over the chunk's rows, and when
//! the chunk may be emitted. See `docs/snapshots.md` for the argument.
//!
//! A chunk is *registered* before its reader takes any watermark. From then on the stream
//! records the row images of the chunk's table with the place of their transaction. When the
//! chunk arrives with its [`Watermark`], every recorded or later image whose transaction the
//! chunk's read may have missed removes its key from the chunk: that row's binlog change is (or
//! will be) emitted in stream order and is at least as new as anything the chunk read. The chunk
//! is emitted at a transaction boundary once the stream has read past everything the chunk's
//! read may have seen ([`Watermark::passed`]); keys touched up to that point are removed too.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

use super::chunk::key_bytes;
use crate::encode::table_ctx::TableCtx;
use crate::model::TxnMeta;
use crate::position::{FilePos, Gtid, GtidSet};
use crate::value::Value;

/// Where a chunk was read, relative to the binlog.
#[derive(Debug, Clone, PartialEq)]
pub enum Watermark {
    /// MariaDB: the binlog position of the consistent snapshot the chunk was read in
    /// (`binlog_snapshot_file`/`_position`, which the server takes atomically with the
    /// snapshot): the read saw exactly the transactions before it.
    Exact(FilePos),
    /// MySQL with GTIDs: `low` is `gtid_executed` read before the chunk's consistent snapshot
    /// was taken, `high` after. A GTID enters `gtid_executed` only after its transaction
    /// committed in the storage engine, so the read saw all of `low`; whatever it saw is in
    /// `high`, or committed so close to it that emitting it after the chunk changes nothing.
    Gtid {
        /// `gtid_executed` before the snapshot.
        low: GtidSet,
        /// `gtid_executed` after the snapshot.
        high: GtidSet,
    },
}

/// A source transaction's place in the binlog.
#[derive(Debug, Clone, PartialEq)]
pub struct Place {
    /// MySQL GTID, when the transaction has one.
    pub gtid: Option<Gtid>,
    /// Binlog file of its first event.
    pub file: Arc<str>,
    /// Position of its first event.
    pub pos: u64,
}

impl Place {
    /// The place of a transaction from its metadata (a MariaDB GTID is not kept: MariaDB
    /// watermarks are positions).
    pub fn of(meta: &TxnMeta) -> Place {
        Place {
            gtid: meta.gtid.as_deref().and_then(|g| g.parse().ok()),
            file: meta.file.clone(),
            pos: meta.pos,
        }
    }
}

/// Orders binlog positions: by the file's numeric suffix (`binlog.000012`), then the offset.
pub fn cmp_pos(file: &str, pos: u64, other: &FilePos) -> Ordering {
    let index = |f: &str| f.rsplit_once('.').and_then(|(_, n)| n.parse::<u64>().ok());
    let by_file = match (index(file), index(&other.file)) {
        (Some(a), Some(b)) => a.cmp(&b),
        _ => file.cmp(&other.file),
    };
    by_file.then(pos.cmp(&other.pos))
}

impl Watermark {
    /// Whether the chunk's read may have missed the transaction at `place` (so its changes
    /// must win over the chunk's rows).
    pub fn may_miss(&self, place: &Place) -> bool {
        match self {
            Watermark::Exact(p) => cmp_pos(&place.file, place.pos, p) != Ordering::Less,
            Watermark::Gtid { low, .. } => match &place.gtid {
                Some(g) => !low.contains_gtid(g),
                None => true,
            },
        }
    }

    /// Whether a stream at `file:pos` that executed `executed` has read everything the chunk's
    /// read may have seen.
    pub fn passed(&self, file: &str, pos: u64, executed: Option<&GtidSet>) -> bool {
        match self {
            Watermark::Exact(p) => cmp_pos(file, pos, p) != Ordering::Less,
            Watermark::Gtid { high, .. } => executed.is_some_and(|e| high.is_subset(e)),
        }
    }
}

/// Rows a chunk read, with what the binlog says about them meanwhile.
#[derive(Debug)]
pub struct Arrived {
    /// The rows, in key order (values in table column order).
    pub rows: Vec<Vec<Value>>,
    /// Indexes of the key columns in `rows`.
    pub key_idx: Vec<usize>,
    /// Key column names.
    pub key_names: Vec<String>,
    /// Where it was read.
    pub watermark: Watermark,
}

/// A registered chunk of one table, before it is emitted.
#[derive(Debug)]
pub struct Window {
    /// Database.
    pub db: String,
    /// Table.
    pub table: String,
    /// Images seen before the chunk arrived: (place, image, the stream's table).
    seen: Vec<(Arc<Place>, Vec<Value>, Arc<TableCtx>)>,
    /// Rows of the chunk, once arrived.
    arrived: Option<Arrived>,
    /// Keys whose binlog changes win.
    drop: HashSet<Vec<u8>>,
    /// Images recorded before arrival; a cap keeps memory bounded on a hot table.
    seen_limit: usize,
    /// More images than `seen_limit` came before arrival: the chunk must be read again.
    overflowed: bool,
    /// The stream's executed GTID set when the chunk was registered (MySQL).
    registered_at: Option<GtidSet>,
}

impl Window {
    /// Registers a chunk of `db.table`, before its read takes a watermark; `executed` is the
    /// stream's executed GTID set at this moment (MySQL), to check that the read saw all the
    /// stream had already emitted.
    pub fn new(db: &str, table: &str, seen_limit: usize, executed: Option<GtidSet>) -> Self {
        Window {
            db: db.to_string(),
            table: table.to_string(),
            seen: Vec::new(),
            arrived: None,
            drop: HashSet::new(),
            seen_limit,
            overflowed: false,
            registered_at: executed,
        }
    }

    /// The binlog changed a row of the table (`image`: before or after image, in the stream's
    /// column order) in the transaction at `place`.
    pub fn on_image(&mut self, place: &Arc<Place>, table: &Arc<TableCtx>, image: &[Value]) {
        match &self.arrived {
            None => {
                if self.seen.len() >= self.seen_limit {
                    self.overflowed = true;
                    self.seen.clear();
                } else if !self.overflowed {
                    self.seen
                        .push((place.clone(), image.to_vec(), table.clone()));
                }
            }
            Some(a) => {
                if a.watermark.may_miss(place) {
                    if let Some(idx) = stream_key_idx(table, &a.key_names) {
                        self.drop.insert(key_bytes(image, &idx));
                    }
                }
            }
        }
    }

    /// The chunk's rows arrived. `Err` when the table changed so much meanwhile that the chunk
    /// must be read again (too many changes to remember).
    pub fn arrive(&mut self, arrived: Arrived) -> Result<(), String> {
        if self.overflowed {
            return Err(format!(
                "more than {} row changes of {}.{} arrived while its chunk was read",
                self.seen_limit, self.db, self.table
            ));
        }
        if let (Watermark::Gtid { low, .. }, Some(at)) = (&arrived.watermark, &self.registered_at) {
            // The stream emitted these before the chunk was registered; a read that did not
            // see them all would overwrite them with older rows.
            if !at.is_subset(low) {
                return Err(format!(
                    "the chunk of {}.{} was read in a snapshot older than the stream",
                    self.db, self.table
                ));
            }
        }
        for (place, image, table) in self.seen.drain(..) {
            if arrived.watermark.may_miss(&place) {
                if let Some(idx) = stream_key_idx(&table, &arrived.key_names) {
                    self.drop.insert(key_bytes(&image, &idx));
                }
            }
        }
        self.arrived = Some(arrived);
        Ok(())
    }

    /// The arrived chunk's watermark.
    pub fn watermark(&self) -> Option<&Watermark> {
        self.arrived.as_ref().map(|a| &a.watermark)
    }

    /// The rows to emit (the chunk minus the rows the binlog changed meanwhile), and the key of
    /// the chunk's last row (whether emitted or not: the chunk covers the range up to it).
    pub fn finish(self) -> Option<(Vec<Vec<Value>>, usize)> {
        let a = self.arrived?;
        let read = a.rows.len();
        let drop = self.drop;
        let rows = a
            .rows
            .into_iter()
            .filter(|r| !drop.contains(&key_bytes(r, &a.key_idx)))
            .collect();
        Some((rows, read))
    }
}

/// The stream table's indexes of the key columns, by name; `None` if one is missing (the
/// table's shape changed: the window is discarded by the DDL anyway).
fn stream_key_idx(table: &TableCtx, names: &[String]) -> Option<Vec<usize>> {
    names
        .iter()
        .map(|n| table.schema.columns.iter().position(|c| &c.name == n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::route::Router;
    use crate::schema::{Column, ColumnKind, TableSchema};

    fn ctx() -> Arc<TableCtx> {
        let text = r#"
name = "t"
[source]
url = "mysql://u:p@127.0.0.1"
server_id = 9
[kafka]
bootstrap_servers = "127.0.0.1:9092"
"#;
        let cfg = crate::config::Config::from_str_with_env(text, Vec::new()).unwrap();
        let router = Router::new(&cfg).unwrap();
        let target = router.route("d", "t").unwrap().unwrap();
        let col = |name: &str| Column {
            name: name.into(),
            kind: ColumnKind::Int { unsigned: false },
            nullable: false,
        };
        let schema = TableSchema {
            db: "d".into(),
            table: "t".into(),
            columns: vec![col("v"), col("id")],
            primary_key: vec![1],
        };
        Arc::new(TableCtx::new(Arc::new(schema), target, vec![1]).unwrap())
    }

    fn fp(file: &str, pos: u64) -> FilePos {
        FilePos {
            file: file.into(),
            pos,
        }
    }

    fn place(file: &str, pos: u64) -> Arc<Place> {
        Arc::new(Place {
            gtid: None,
            file: Arc::from(file),
            pos,
        })
    }

    /// Chunk rows in the snapshot's column order: (id, v).
    fn arrived(ids: &[i64], watermark: Watermark) -> Arrived {
        Arrived {
            rows: ids
                .iter()
                .map(|&i| vec![Value::Int(i), Value::Int(i * 10)])
                .collect(),
            key_idx: vec![0],
            key_names: vec!["id".into()],
            watermark,
        }
    }

    fn image(id: i64) -> Vec<Value> {
        vec![Value::Int(-1), Value::Int(id)]
    }

    fn ids(rows: &[Vec<Value>]) -> Vec<i64> {
        rows.iter()
            .map(|r| match r[0] {
                Value::Int(i) => i,
                _ => panic!(),
            })
            .collect()
    }

    #[test]
    fn positions_order_by_file_number_then_offset() {
        assert_eq!(
            cmp_pos("b.000010", 4, &fp("b.000009", 900)),
            Ordering::Greater
        );
        assert_eq!(cmp_pos("b.000009", 4, &fp("b.000009", 900)), Ordering::Less);
        assert_eq!(
            cmp_pos("b.000009", 900, &fp("b.000009", 900)),
            Ordering::Equal
        );
    }

    #[test]
    fn changes_the_read_may_have_missed_win_over_the_chunk() {
        let t = ctx();
        let mut w = Window::new("d", "t", 100, None);
        // Before the chunk's snapshot position: seen by the read; after it: missed.
        w.on_image(&place("b.000002", 100), &t, &image(1));
        w.on_image(&place("b.000002", 500), &t, &image(2));
        w.arrive(arrived(
            &[1, 2, 3, 4],
            Watermark::Exact(fp("b.000002", 300)),
        ))
        .unwrap();
        w.on_image(&place("b.000003", 4), &t, &image(4));
        w.on_image(&place("b.000003", 50), &t, &image(9));
        let (rows, read) = w.finish().unwrap();
        assert_eq!(read, 4);
        assert_eq!(ids(&rows), [1, 3]);
    }

    #[test]
    fn gtid_watermarks_use_the_low_set_for_what_was_seen() {
        let t = ctx();
        let uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
        let low: GtidSet = format!("{uuid}:1-10").parse().unwrap();
        let high: GtidSet = format!("{uuid}:1-12").parse().unwrap();
        let wm = Watermark::Gtid { low, high };
        let at = |n: u64| {
            Arc::new(Place {
                gtid: Some(format!("{uuid}:{n}").parse().unwrap()),
                file: Arc::from("b.000001"),
                pos: n,
            })
        };
        assert!(!wm.may_miss(&at(10)));
        assert!(wm.may_miss(&at(11)));
        let mut w = Window::new("d", "t", 100, None);
        w.on_image(&at(9), &t, &image(1));
        w.on_image(&at(11), &t, &image(2));
        w.arrive(arrived(&[1, 2, 3], wm.clone())).unwrap();
        w.on_image(&at(13), &t, &image(3));
        assert_eq!(ids(&w.finish().unwrap().0), [1]);
        let upto = |n: u64| -> GtidSet { format!("{uuid}:1-{n}").parse().unwrap() };
        assert!(!wm.passed("b.000001", 1, Some(&upto(11))));
        assert!(wm.passed("b.000001", 1, Some(&upto(12))));
        assert!(!wm.passed("b.000001", 1, None));
    }

    #[test]
    fn too_many_changes_before_arrival_ask_for_a_new_read() {
        let t = ctx();
        let mut w = Window::new("d", "t", 2, None);
        for i in 0..3 {
            w.on_image(&place("b.000001", 10 + i), &t, &image(i as i64));
        }
        let e = w
            .arrive(arrived(&[1], Watermark::Exact(fp("b.000001", 1))))
            .unwrap_err();
        assert!(e.contains("more than 2 row changes of d.t"), "{e}");
    }

    #[test]
    fn a_read_older_than_what_the_stream_emitted_is_refused() {
        let uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
        let set = |n: u64| -> GtidSet { format!("{uuid}:1-{n}").parse().unwrap() };
        let mut w = Window::new("d", "t", 10, Some(set(8)));
        let wm = Watermark::Gtid {
            low: set(7),
            high: set(9),
        };
        let e = w.arrive(arrived(&[1], wm)).unwrap_err();
        assert!(e.contains("older than the stream"), "{e}");
        let mut w = Window::new("d", "t", 10, Some(set(7)));
        let wm = Watermark::Gtid {
            low: set(7),
            high: set(9),
        };
        assert!(w.arrive(arrived(&[1], wm)).is_ok());
    }
}
