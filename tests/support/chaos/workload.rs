//! The sequenced workload: multi-table source transactions whose every row change can be
//! recognised in Kafka, and a record of what was committed.
//!
//! Tables: `acct(id PK, seq, bal, pad)` and `ledger(id PK, txn, acct, seq)`. Every row write
//! stamps the row with a fresh `seq` from one counter, so per key the stamps strictly
//! increase, and a change is identified by `(table, op, key, seq)`: the after image's `seq`
//! for an insert or update, the before image's for a delete. Each source transaction writes
//! one `ledger` row whose id is the transaction's id (its commit marker) and touches 1–5 keys
//! in all: updates, inserts (some re-using a deleted key), deletes of `acct` and `ledger` rows,
//! and primary-key changes (`UPDATE acct SET id = id + N`, a delete of the old key and an
//! insert of the new one in Debezium's encoding).
//!
//! The workload writes to the server directly (never through a fault proxy). A server
//! restart makes a statement fail: the workload reconnects and decides from the commit
//! marker whether the transaction committed, so the record stays exact.
#![allow(dead_code)]

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql_async::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// One expected row change.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Change {
    /// `acct` or `ledger`.
    pub table: &'static str,
    /// `c`, `u` or `d`.
    pub op: char,
    /// Primary key.
    pub id: i64,
    /// The stamp that identifies it.
    pub seq: i64,
}

/// One committed source transaction.
#[derive(Debug, Clone)]
pub struct Txn {
    /// The workload's transaction id (= the ledger row it inserted).
    pub id: i64,
    /// Its row changes.
    pub changes: Vec<Change>,
}

/// The `CREATE TABLE` statements (bodies after the name).
pub const TABLES: [(&str, &str); 2] = [
    (
        "acct",
        "(id BIGINT PRIMARY KEY, seq BIGINT NOT NULL, bal BIGINT NOT NULL, \
         pad VARCHAR(255) NOT NULL) CHARACTER SET utf8mb4",
    ),
    (
        "ledger",
        "(id BIGINT PRIMARY KEY, txn BIGINT NOT NULL, acct BIGINT NOT NULL, \
         seq BIGINT NOT NULL)",
    ),
];

/// Live keys with their last stamp, with O(1) random choice.
#[derive(Default)]
struct Live {
    ids: Vec<i64>,
    at: HashMap<i64, (usize, i64)>,
}

impl Live {
    fn len(&self) -> usize {
        self.ids.len()
    }
    fn seq(&self, id: i64) -> Option<i64> {
        self.at.get(&id).map(|&(_, s)| s)
    }
    fn set(&mut self, id: i64, seq: i64) {
        match self.at.get_mut(&id) {
            Some(e) => e.1 = seq,
            None => {
                self.at.insert(id, (self.ids.len(), seq));
                self.ids.push(id);
            }
        }
    }
    fn remove(&mut self, id: i64) {
        if let Some((i, _)) = self.at.remove(&id) {
            self.ids.swap_remove(i);
            if let Some(&moved) = self.ids.get(i) {
                self.at.get_mut(&moved).expect("moved key").0 = i;
            }
        }
    }
    fn pick(&self, rng: &mut StdRng, avoid: &HashSet<i64>) -> Option<i64> {
        for _ in 0..8 {
            let id = *self.ids.get(rng.random_range(0..self.ids.len().max(1)))?;
            if !avoid.contains(&id) {
                return Some(id);
            }
        }
        None
    }
}

/// What the workload did, for the report.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    /// Transactions committed.
    pub txns: usize,
    /// Row changes committed.
    pub changes: usize,
    /// Transactions that failed (server restarts) and were rolled back.
    pub rolled_back: usize,
    /// Failed transactions that had committed after all (the marker was there).
    pub committed_despite_error: usize,
    /// Reconnections.
    pub reconnects: usize,
}

/// Sizes and pacing of a run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Stop once at least this many changes are committed and `done` is set.
    pub changes: usize,
    /// Changes per second (paced), 0 = as fast as possible.
    pub rate: f64,
    /// Live `acct` keys the workload keeps around.
    pub keys: usize,
}

/// The workload's shared progress (read while it runs).
#[derive(Default)]
pub struct Progress {
    /// Changes committed so far.
    pub changes: AtomicU64,
    /// Set by the test when the faults are over: the workload then stops at its target.
    pub done: AtomicBool,
    /// Set by the test to stop at once (a failed run).
    pub abort: AtomicBool,
}

struct Gen {
    rng: StdRng,
    next_seq: i64,
    next_txn: i64,
    next_fresh: i64,
    acct: Live,
    ledger: Live,
    /// Deleted `acct` keys an insert may use again.
    deleted: Live,
    /// How to take back the model changes of the planned transaction.
    undo: Vec<Undo>,
    saved: (i64, i64),
}

#[derive(Clone, Copy)]
enum Table {
    Acct,
    Ledger,
    Deleted,
}

/// A model entry as it was before the planned transaction.
struct Undo(Table, i64, Option<i64>);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Insert,
    Update,
    Delete,
    KeyChange,
    LedgerDelete,
}

/// One planned transaction: its statements and its changes.
struct Planned {
    id: i64,
    sql: String,
    changes: Vec<Change>,
}

impl Gen {
    fn stamp(&mut self) -> i64 {
        self.next_seq += 1;
        self.next_seq
    }

    fn live(&mut self, t: Table) -> &mut Live {
        match t {
            Table::Acct => &mut self.acct,
            Table::Ledger => &mut self.ledger,
            Table::Deleted => &mut self.deleted,
        }
    }

    fn set(&mut self, t: Table, id: i64, seq: i64) {
        let prev = self.live(t).seq(id);
        self.undo.push(Undo(t, id, prev));
        self.live(t).set(id, seq);
    }

    fn remove(&mut self, t: Table, id: i64) {
        let prev = self.live(t).seq(id);
        self.undo.push(Undo(t, id, prev));
        self.live(t).remove(id);
    }

    /// The planned transaction did not commit: the model goes back to before it.
    fn rollback(&mut self) {
        while let Some(Undo(t, id, prev)) = self.undo.pop() {
            match prev {
                Some(seq) => self.live(t).set(id, seq),
                None => self.live(t).remove(id),
            }
        }
        (self.next_seq, self.next_fresh) = self.saved;
    }

    fn pad(&mut self, seq: i64) -> String {
        let n = self.rng.random_range(0..120);
        let fill: String = (0..n)
            .map(|i| if (i + seq) % 17 == 0 { 'ü' } else { 'x' })
            .collect();
        format!("s{seq}{fill}")
    }

    fn choose(&mut self, keys: usize) -> Op {
        let live = self.acct.len();
        let roll = self.rng.random_range(0..100);
        if live < keys / 2 || (live < keys && roll < 20) {
            Op::Insert
        } else if live > keys + keys / 5 || roll < 10 {
            Op::Delete
        } else if roll < 20 {
            Op::KeyChange
        } else if (roll < 30 || (roll < 50 && self.ledger.len() > 2 * keys))
            && self.ledger.len() > 10
        {
            Op::LedgerDelete
        } else {
            Op::Update
        }
    }

    fn plan(&mut self, db: &str, keys: usize) -> Planned {
        self.undo.clear();
        self.saved = (self.next_seq, self.next_fresh);
        self.next_txn += 1;
        let t = self.next_txn;
        let mut sql = String::from("START TRANSACTION;");
        let mut changes = Vec::new();
        let mut touched = HashSet::new();
        let n = self.rng.random_range(1..=5usize);
        // The commit marker.
        let s = self.stamp();
        let first = self.acct.ids.first().copied().unwrap_or(0);
        sql += &format!("INSERT INTO {db}.ledger VALUES ({t},{t},{first},{s});");
        changes.push(Change {
            table: "ledger",
            op: 'c',
            id: t,
            seq: s,
        });
        for _ in 1..n {
            let op = self.choose(keys);
            match op {
                Op::Insert => {
                    let reuse = self.rng.random_bool(0.3);
                    let id = match self.deleted.pick(&mut self.rng, &touched) {
                        Some(id) if reuse => {
                            self.remove(Table::Deleted, id);
                            id
                        }
                        _ => {
                            self.next_fresh += 1;
                            self.next_fresh
                        }
                    };
                    let s = self.stamp();
                    let pad = self.pad(s);
                    sql += &format!("INSERT INTO {db}.acct VALUES ({id},{s},1000,'{pad}');");
                    changes.push(Change {
                        table: "acct",
                        op: 'c',
                        id,
                        seq: s,
                    });
                    touched.insert(id);
                    self.set(Table::Acct, id, s);
                }
                Op::Update | Op::Delete | Op::KeyChange => {
                    let Some(id) = self.acct.pick(&mut self.rng, &touched) else {
                        continue;
                    };
                    let old = self.acct.seq(id).expect("live key");
                    touched.insert(id);
                    if op == Op::Update {
                        let s = self.stamp();
                        let pad = self.pad(s);
                        let d: i64 = self.rng.random_range(-50..=50);
                        sql += &format!(
                            "UPDATE {db}.acct SET seq={s},bal=bal+({d}),pad='{pad}' WHERE id={id};"
                        );
                        changes.push(Change {
                            table: "acct",
                            op: 'u',
                            id,
                            seq: s,
                        });
                        self.set(Table::Acct, id, s);
                        continue;
                    }
                    // A delete, or a key change: the old key's delete, then the new key's insert.
                    changes.push(Change {
                        table: "acct",
                        op: 'd',
                        id,
                        seq: old,
                    });
                    self.remove(Table::Acct, id);
                    self.set(Table::Deleted, id, 0);
                    if op == Op::Delete {
                        sql += &format!("DELETE FROM {db}.acct WHERE id={id};");
                    } else {
                        self.next_fresh += 1;
                        let new = self.next_fresh;
                        let s = self.stamp();
                        sql += &format!(
                            "UPDATE {db}.acct SET id=id+{},seq={s} WHERE id={id};",
                            new - id
                        );
                        changes.push(Change {
                            table: "acct",
                            op: 'c',
                            id: new,
                            seq: s,
                        });
                        touched.insert(new);
                        self.set(Table::Acct, new, s);
                    }
                }
                Op::LedgerDelete => {
                    let Some(id) = self.ledger.pick(&mut self.rng, &HashSet::new()) else {
                        continue;
                    };
                    let old = self.ledger.seq(id).expect("live ledger row");
                    sql += &format!("DELETE FROM {db}.ledger WHERE id={id};");
                    changes.push(Change {
                        table: "ledger",
                        op: 'd',
                        id,
                        seq: old,
                    });
                    self.remove(Table::Ledger, id);
                }
            }
        }
        self.set(Table::Ledger, t, s);
        sql += "COMMIT";
        Planned {
            id: t,
            sql,
            changes,
        }
    }
}

/// The workload against one server.
pub struct Workload {
    port: u16,
    db: String,
    plan: Plan,
    progress: Arc<Progress>,
    seed: u64,
}

/// What a finished workload leaves.
pub struct Outcome {
    /// Every committed transaction, in commit order.
    pub txns: Vec<Txn>,
    /// Counters.
    pub stats: Stats,
}

async fn connect(port: u16, db: &str, deadline: Duration) -> mysql_async::Conn {
    let opts = mysql_async::OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(port)
        .user(Some("root"))
        .db_name(Some(db))
        .prefer_socket(false);
    let started = Instant::now();
    loop {
        match mysql_async::Conn::new(opts.clone()).await {
            Ok(c) => return c,
            Err(e) if started.elapsed() < deadline => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => {
                panic!("workload: cannot connect to 127.0.0.1:{port} within {deadline:?}: {e}")
            }
        }
    }
}

impl Workload {
    /// A workload on `db` (whose tables exist) of the server on `port`.
    pub fn new(port: u16, db: &str, plan: Plan, seed: u64, progress: Arc<Progress>) -> Workload {
        Workload {
            port,
            db: db.to_string(),
            plan,
            progress,
            seed,
        }
    }

    /// Runs until the target is reached after `progress.done`, or `progress.abort`.
    pub async fn run(self) -> Outcome {
        let mut g = Gen {
            rng: StdRng::seed_from_u64(self.seed),
            next_seq: 0,
            next_txn: 0,
            next_fresh: 0,
            acct: Live::default(),
            ledger: Live::default(),
            deleted: Live::default(),
            undo: Vec::new(),
            saved: (0, 0),
        };
        let mut stats = Stats::default();
        let mut txns = Vec::new();
        let reconnect_within = Duration::from_secs(180);
        let mut conn = connect(self.port, &self.db, reconnect_within).await;
        let started = Instant::now();
        loop {
            if self.progress.abort.load(Ordering::Relaxed) {
                break;
            }
            if stats.changes >= self.plan.changes && self.progress.done.load(Ordering::Relaxed) {
                break;
            }
            if self.plan.rate > 0.0 && !self.progress.done.load(Ordering::Relaxed) {
                let due = Duration::from_secs_f64(stats.changes as f64 / self.plan.rate);
                if let Some(wait) = due.checked_sub(started.elapsed()) {
                    tokio::time::sleep(wait.min(Duration::from_millis(500))).await;
                    continue;
                }
            }
            let p = g.plan(&self.db, self.plan.keys);
            let committed = match conn.query_drop(&p.sql).await {
                Ok(()) => true,
                Err(e) => {
                    let old_id = conn.id();
                    drop(conn);
                    stats.reconnects += 1;
                    conn = connect(self.port, &self.db, reconnect_within).await;
                    let done = self.marker_committed(&mut conn, old_id, p.id).await;
                    eprintln!(
                        "workload: transaction {} failed ({e}); {}",
                        p.id,
                        if done {
                            "it committed all the same"
                        } else {
                            "rolled back, retried with a new plan"
                        }
                    );
                    if done {
                        stats.committed_despite_error += 1;
                    }
                    done
                }
            };
            if committed {
                stats.txns += 1;
                stats.changes += p.changes.len();
                self.progress
                    .changes
                    .store(stats.changes as u64, Ordering::Relaxed);
                txns.push(Txn {
                    id: p.id,
                    changes: p.changes,
                });
            } else {
                // Back to the model before this plan; the transaction id is not reused.
                g.rollback();
                stats.rolled_back += 1;
            }
        }
        let _ = conn.disconnect().await;
        Outcome { txns, stats }
    }

    /// After a failed transaction: waits until the old session is gone from the server,
    /// then tells from the commit marker whether the transaction committed.
    async fn marker_committed(&self, conn: &mut mysql_async::Conn, old_id: u32, txn: i64) -> bool {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let alive: Option<i64> = conn
                .query_first(format!(
                    "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
                     WHERE ID = {old_id} AND ID <> CONNECTION_ID() AND DB = '{}'",
                    self.db
                ))
                .await
                .expect("workload: read the process list");
            if alive == Some(0) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "workload: the failed session {old_id} is still on the server after 60 s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let n: Option<i64> = conn
            .query_first(format!(
                "SELECT COUNT(*) FROM {}.ledger WHERE id = {txn}",
                self.db
            ))
            .await
            .expect("workload: read the commit marker");
        n == Some(1)
    }
}

/// Writes the committed transactions as JSON lines
/// `{"txn":T,"changes":[["acct","u",id,seq],...]}` for the checker.
pub fn write_expected(path: &Path, txns: &[Txn]) {
    let f = std::fs::File::create(path).expect("create the expected-changes file");
    let mut w = std::io::BufWriter::new(f);
    for t in txns {
        let changes: Vec<serde_json::Value> = t
            .changes
            .iter()
            .map(|c| serde_json::json!([c.table, c.op.to_string(), c.id, c.seq]))
            .collect();
        let line = serde_json::json!({"txn": t.id, "changes": changes});
        writeln!(w, "{line}").expect("write the expected-changes file");
    }
    w.flush().expect("flush the expected-changes file");
}

/// Dumps both tables as `{"acct": {"<id>": {column: value}}, "ledger": {...}}`.
pub async fn dump_tables(conn: &mut mysql_async::Conn, db: &str, path: &Path) {
    let acct: Vec<(i64, i64, i64, String)> = conn
        .query(format!("SELECT id, seq, bal, pad FROM {db}.acct"))
        .await
        .expect("dump acct");
    let ledger: Vec<(i64, i64, i64, i64)> = conn
        .query(format!("SELECT id, txn, acct, seq FROM {db}.ledger"))
        .await
        .expect("dump ledger");
    let mut a = serde_json::Map::new();
    for (id, seq, bal, pad) in acct {
        a.insert(
            id.to_string(),
            serde_json::json!({"id": id, "seq": seq, "bal": bal, "pad": pad}),
        );
    }
    let mut l = serde_json::Map::new();
    for (id, txn, acct, seq) in ledger {
        l.insert(
            id.to_string(),
            serde_json::json!({"id": id, "txn": txn, "acct": acct, "seq": seq}),
        );
    }
    let doc = serde_json::json!({"acct": a, "ledger": l});
    std::fs::write(path, doc.to_string()).expect("write the table dump");
}
