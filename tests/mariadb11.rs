//! MariaDB 11.x binlog details, live on MariaDB 11.8 LTS (127.0.0.1:3308, started with
//! `binlog_alter_two_phase=ON`):
//! - events inside a transaction carry `end_log_pos` 0 (11.4+, `binlog_legacy_event_pos=OFF`):
//!   a pipeline started at an explicit `file:<name>:<pos>` between transactions emits exactly
//!   the transactions from there on (every row with its GTID event's end as `source.pos`, the
//!   rows events having none of their own), and resumes after a stop from its committed offset
//!   without a gap or a duplicate;
//! - `binlog_alter_two_phase`: an ALTER is logged as START ALTER and then COMMIT ALTER (or
//!   ROLLBACK ALTER when it fails), each with the statement; the schema change is recorded
//!   once, at COMMIT ALTER, and a rolled-back ALTER records nothing.
//!
//! Collation ids above 255 (`utf8mb4_uca1400_*`, the 11.5+ default), TIMESTAMP past 2038 and
//! VECTOR columns are in the type matrix (`tests/types.rs`, table `maria11`).

mod support;

use std::time::Duration;

use mysql_async::prelude::*;
use serde_json::Value;
use support::*;

fn enabled() -> bool {
    if MARIADB11.enabled() {
        true
    } else {
        eprintln!("mariadb11 not selected by SLUICE_TEST_FLAVORS: skipped");
        false
    }
}

/// The records that are changes (not tombstones).
fn changes(recs: &[Rec]) -> impl Iterator<Item = &Rec> {
    recs.iter().filter(|r| r.value.is_some())
}

/// `op`, `after.id` (or `before.id` for deletes) and `source.pos` of a record.
fn summary(r: &Rec) -> (String, i64, u64) {
    let v = r.value.as_ref().expect("value");
    let op = v["op"].as_str().expect("op").to_string();
    let img = if op == "d" { &v["before"] } else { &v["after"] };
    (
        op,
        img["id"].as_i64().expect("id"),
        v["source"]["pos"].as_u64().expect("source.pos"),
    )
}

/// The server's binlog end (`SHOW BINLOG STATUS`, MariaDB's newer name of `SHOW MASTER
/// STATUS`, which sluice uses and 11.8 still has).
async fn binlog_end(c: &mut mysql_async::Conn) -> (String, u64) {
    let row: mysql_async::Row = c
        .query_first("SHOW BINLOG STATUS")
        .await
        .expect("SHOW BINLOG STATUS")
        .expect("binary logging on");
    (row.get(0).expect("file"), row.get(1).expect("position"))
}

/// `Event_type`, `Pos`, `End_log_pos` and `Info` of `SHOW BINLOG EVENTS` from `pos` on (the
/// server computes `Pos` by reading the file; `End_log_pos` is what the event header says).
async fn binlog_events(
    c: &mut mysql_async::Conn,
    file: &str,
    pos: u64,
) -> Vec<(String, u64, u64, String)> {
    let rows: Vec<mysql_async::Row> = c
        .query(format!("SHOW BINLOG EVENTS IN '{file}' FROM {pos}"))
        .await
        .expect("SHOW BINLOG EVENTS");
    rows.into_iter()
        .map(|r| {
            (
                r.get::<String, _>(2).unwrap(),
                r.get::<u64, _>(1).unwrap(),
                r.get::<u64, _>(4).unwrap(),
                r.get::<Option<String>, _>(5).unwrap().unwrap_or_default(),
            )
        })
        .collect()
}

/// The `End_log_pos` of the GTID event of each transaction that maps `table` (`db.t`), in
/// binlog order: other tests write to the same server at the same time, so the transactions
/// of this one are found by their table maps, not by their place.
fn gtid_ends_of_transactions_on(events: &[(String, u64, u64, String)], table: &str) -> Vec<u64> {
    let mut out = Vec::new();
    let mut gtid_end = None;
    for (kind, _, end, info) in events {
        if kind == "Gtid" {
            gtid_end = Some(*end);
        } else if kind == "Table_map" && info.contains(&format!("({table})")) {
            if let Some(end) = gtid_end.take() {
                out.push(end);
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_position_start_between_transactions_with_zero_end_log_pos_is_exact() {
    if !enabled() {
        return;
    }
    let flavor = MARIADB11;
    let p = Pipeline::new(flavor, "filepos", "");
    let db = p.db.clone();
    let mut c = root(flavor.port).await;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {db}"),
            &format!("CREATE TABLE {db}.t (id INT PRIMARY KEY, v VARCHAR(20))"),
            &format!("INSERT INTO {db}.t VALUES (1, 'before'), (2, 'before')"),
            &format!("UPDATE {db}.t SET v = 'before 2' WHERE id = 1"),
        ],
    )
    .await;
    let (file, pos) = binlog_end(&mut c).await;
    exec(
        &mut c,
        &[
            "BEGIN",
            &format!("INSERT INTO {db}.t VALUES (3, 'a')"),
            &format!("INSERT INTO {db}.t VALUES (4, 'a')"),
            &format!("UPDATE {db}.t SET v = 'b' WHERE id = 1"),
            "COMMIT",
            &format!("DELETE FROM {db}.t WHERE id = 2"),
        ],
    )
    .await;
    let events = binlog_events(&mut c, &file, pos).await;
    // The rows events of the transaction have End_log_pos 0: the 11.x quirk under test.
    assert!(
        events
            .iter()
            .any(|(t, _, end, _)| t.starts_with("Write_rows") && *end == 0),
        "rows events inside a transaction have End_log_pos 0 on 11.8: {events:?}"
    );
    p.edit_config(
        "start = \"latest\"",
        &format!("start = \"file:{file}:{pos}\""),
    );
    let mut child = p.spawn();
    let topic = p.topic("t");
    // Four changes and the delete's tombstone.
    let recs = consume(
        std::slice::from_ref(&topic),
        "read_committed",
        5,
        Duration::from_secs(2),
        Duration::from_secs(60),
    );
    let got: Vec<(String, i64, u64)> = changes(&recs).map(summary).collect();
    let ops: Vec<(&str, i64)> = got.iter().map(|(o, id, _)| (o.as_str(), *id)).collect();
    assert_eq!(
        ops,
        [("c", 3), ("c", 4), ("u", 1), ("d", 2)],
        "exactly the transactions from {file}:{pos} on; log:\n{}",
        p.log()
    );
    // source.pos: the rows events carry no position of their own (End_log_pos 0), so each
    // row of a transaction gets the end of its GTID event, the last position the server
    // logged before them; the next transaction's starts after the previous one's XID.
    let ours = gtid_ends_of_transactions_on(&events, &format!("{db}.t"));
    assert_eq!(ours.len(), 2, "this test's two transactions in {events:?}");
    assert!(
        got[..3].iter().all(|(_, _, at)| *at == ours[0]),
        "the first transaction's rows: {got:?} ({events:?})"
    );
    assert_eq!(got[3].2, ours[1], "{got:?} ({events:?})");
    terminate(&mut child);

    // Stopped, then more writes: the restart resumes from the committed offset.
    exec(
        &mut c,
        &[
            "BEGIN",
            &format!("INSERT INTO {db}.t VALUES (5, 'after')"),
            &format!("UPDATE {db}.t SET v = 'after' WHERE id = 3"),
            "COMMIT",
        ],
    )
    .await;
    let mut child = p.spawn();
    let recs = consume(
        std::slice::from_ref(&topic),
        "read_committed",
        7,
        Duration::from_secs(2),
        Duration::from_secs(60),
    );
    let ops: Vec<(String, i64)> = changes(&recs)
        .map(summary)
        .map(|(o, id, _)| (o, id))
        .collect();
    let want: Vec<(String, i64)> = [("c", 3), ("c", 4), ("u", 1), ("d", 2), ("c", 5), ("u", 3)]
        .iter()
        .map(|(o, id)| (o.to_string(), *id))
        .collect();
    assert_eq!(ops, want, "no gap, no duplicate; log:\n{}", p.log());
    terminate(&mut child);
}

/// The records of `p`'s schema-change topic, once `want` arrived (or after the timeout).
fn schema_changes(p: &Pipeline, want: usize, quiet: Duration) -> Vec<Value> {
    consume(
        &[format!("{}.schema-changes", p.name)],
        "read_committed",
        want,
        quiet,
        Duration::from_secs(60),
    )
    .into_iter()
    .filter_map(|r| r.value)
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_phase_alter_is_recorded_once_and_a_rolled_back_one_never() {
    if !enabled() {
        return;
    }
    let flavor = MARIADB11;
    let p = Pipeline::new(flavor, "alter2p", "");
    let db = p.db.clone();
    let mut c = root(flavor.port).await;
    let two_phase: Option<i64> = c
        .query_first("SELECT @@GLOBAL.binlog_alter_two_phase")
        .await
        .expect("binlog_alter_two_phase");
    assert_eq!(
        two_phase,
        Some(1),
        "mariadb11 runs with binlog_alter_two_phase=ON"
    );
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {db}"),
            &format!("CREATE TABLE {db}.t (id INT PRIMARY KEY, c INT)"),
        ],
    )
    .await;
    let mut child = p.spawn();
    p.wait_started(Duration::from_secs(60));
    exec(
        &mut c,
        &[&format!("INSERT INTO {db}.t VALUES (1, 5), (2, 5)")],
    )
    .await;
    let (file, from) = binlog_end(&mut c).await;
    // Fails on the duplicate 5s after its START ALTER was logged: ROLLBACK ALTER.
    let failed = c
        .query_drop(format!(
            "ALTER TABLE {db}.t ADD UNIQUE KEY (c), ADD COLUMN x INT"
        ))
        .await;
    assert!(failed.is_err(), "the ALTER must fail");
    exec(
        &mut c,
        &[
            &format!("ALTER TABLE {db}.t ADD COLUMN e VARCHAR(10) DEFAULT 'x'"),
            &format!("INSERT INTO {db}.t VALUES (3, 6, 'y')"),
        ],
    )
    .await;
    let info: Vec<String> = c
        .query::<mysql_async::Row, _>(format!("SHOW BINLOG EVENTS IN '{file}' FROM {from}"))
        .await
        .expect("SHOW BINLOG EVENTS")
        .into_iter()
        .map(|r| r.get::<String, _>(5).unwrap_or_default())
        .collect();
    for phase in ["START ALTER", "ROLLBACK ALTER", "COMMIT ALTER"] {
        assert!(
            info.iter().any(|i| i.contains(phase)),
            "the binlog has a {phase} group: {info:?}"
        );
    }

    let topic = p.topic("t");
    let recs = consume(
        std::slice::from_ref(&topic),
        "read_committed",
        3,
        Duration::from_secs(2),
        Duration::from_secs(60),
    );
    assert_eq!(recs.len(), 3, "log:\n{}", p.log());
    let last = recs[2].value.as_ref().expect("value");
    assert_eq!(
        last["after"]["e"], "y",
        "rows after the ALTER carry e: {last}"
    );
    assert!(
        recs[0].value.as_ref().unwrap()["after"].get("x").is_none(),
        "the rolled-back column never appears"
    );
    // One is expected; whatever else arrives within 3 s more is counted too.
    let changes = schema_changes(&p, 1, Duration::from_secs(3));
    let alters: Vec<&Value> = changes
        .iter()
        .filter(|v| v.to_string().contains("ALTER TABLE"))
        .collect();
    assert_eq!(
        alters.len(),
        1,
        "one record for the committed ALTER, none for the rolled-back one: {changes:?}\nlog:\n{}",
        p.log()
    );
    assert!(
        alters[0].to_string().contains("ADD COLUMN e"),
        "{:?}",
        alters[0]
    );
    terminate(&mut child);
}
