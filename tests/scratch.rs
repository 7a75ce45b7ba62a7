//! Tests that change a server's GLOBAL settings. They all run on the flavour's scratch instance
//! (MariaDB 3316, MySQL 3317) so the other test binaries never see the changes, one at a time
//! per instance (`lock`), and each restores the globals before asserting, also when a step
//! panics.

mod support;

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use mysql_async::prelude::*;
use serde_json::{json, Value};
use support::*;

/// Held by every test of this file: one test at a time changes a scratch server's globals.
static LOCK_MARIADB: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
static LOCK_MYSQL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn lock(flavor: Flavor) -> &'static tokio::sync::Mutex<()> {
    if flavor.mysql {
        &LOCK_MYSQL
    } else {
        &LOCK_MARIADB
    }
}

/// Runs `body` while holding `LOCK`, after running the `set` statements on the scratch server,
/// then always runs the `restore` statements (on a fresh connection) before re-raising a panic
/// of `set` or `body`.
async fn with_globals<F>(
    scratch: Flavor,
    set: &'static [&'static str],
    restore: &'static [&'static str],
    body: F,
) where
    F: Future<Output = ()> + Send + 'static,
{
    let _serial = lock(scratch).lock().await;
    let outcome = tokio::spawn(async move {
        let mut c = root(scratch.port).await;
        exec(&mut c, set).await;
        drop(c);
        body.await;
    })
    .await;
    let mut c = root(scratch.port).await;
    exec(&mut c, restore).await;
    match outcome {
        Ok(()) => {}
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("test task failed: {e}"),
    }
}

async fn statement_format_and_missing_full_metadata_are_refused(flavor: Flavor) {
    let scratch = flavor.scratch();
    let _serial = lock(scratch).lock().await;
    let mut c = root(scratch.port).await;
    let p = Pipeline::new(scratch, "fmt", "");
    exec(&mut c, &["SET GLOBAL binlog_format = 'STATEMENT'"]).await;
    let out = p.command(&["check"]);
    // `run` stops at once too (exit 1): a definite problem is never retried.
    let run = p.command_within(&["run"], Duration::from_secs(60));
    exec(&mut c, &["SET GLOBAL binlog_format = 'ROW'"]).await;
    for out in [out, run] {
        assert_eq!(out.0, 1, "{}", out.1);
        assert!(
            out.1.contains("binlog_format") && out.1.contains("ROW"),
            "{}",
            out.1
        );
    }

    // Without full metadata only a start whose schema is known is accepted.
    p.edit_config("start = \"latest\"", "start = \"earliest\"");
    exec(&mut c, &["SET GLOBAL binlog_row_metadata = 'MINIMAL'"]).await;
    let out = p.command(&["run"]);
    exec(&mut c, &["SET GLOBAL binlog_row_metadata = 'FULL'"]).await;
    assert_ne!(out.0, 0, "{}", out.1);
    assert!(
        out.1.contains("binlog_row_metadata=MINIMAL")
            && out.1.contains("FULL")
            && out.1.contains("start = \"latest\""),
        "{}",
        out.1
    );
    assert_nothing_written(&p);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_minimal_metadata_is_decoded_with_tracked_definitions() {
    let s = MARIADB.scratch();
    with_globals(
        s,
        &["SET GLOBAL binlog_row_metadata = 'MINIMAL'"],
        &["SET GLOBAL binlog_row_metadata = 'FULL'"],
        without_full_metadata(s, "MINIMAL"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_no_log_metadata_is_decoded_with_tracked_definitions() {
    let s = MARIADB.scratch();
    with_globals(
        s,
        &["SET GLOBAL binlog_row_metadata = 'NO_LOG'"],
        &["SET GLOBAL binlog_row_metadata = 'FULL'"],
        without_full_metadata(s, "NO_LOG"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_minimal_metadata_is_decoded_with_tracked_definitions() {
    if !MYSQL.enabled() {
        return;
    }
    let s = MYSQL.scratch();
    with_globals(
        s,
        &["SET GLOBAL binlog_row_metadata = 'MINIMAL'"],
        &["SET GLOBAL binlog_row_metadata = 'FULL'"],
        without_full_metadata(s, "MINIMAL"),
    )
    .await;
}

/// A server logging table maps without column names (`mode`: MINIMAL, or MariaDB's NO_LOG
/// without signedness and charsets either; MySQL knows only MINIMAL and FULL). A new pipeline
/// at `start = "latest"` reads the definitions from information_schema; DDL keeps them
/// current; a restart takes them from the schema history committed with the offset: rows
/// written before a DDL that ran while sluice was down are decoded with the old shape, rows
/// after it with the new one. A DDL that bypasses the binlog stops the pipeline before
/// anything of the disagreeing table map is written.
async fn without_full_metadata(scratch: Flavor, mode: &'static str) {
    let p = Pipeline::new(scratch, &format!("meta_{}", mode.to_lowercase()), "");
    let db = p.db.clone();
    let mut c = root(scratch.port).await;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {db}"),
            // Key columns after others, unsigned extremes, charsets, ENUM and SET: all things a
            // table map without full metadata cannot tell.
            &format!(
                "CREATE TABLE {db}.t (note VARCHAR(20) CHARACTER SET utf8mb4, \
                 big BIGINT UNSIGNED, small TINYINT UNSIGNED, neg TINYINT, \
                 e ENUM('x','y','z'), st SET('p','q','r'), l1 VARCHAR(10) CHARACTER SET latin1, \
                 d DECIMAL(10,3), id INT NOT NULL, k VARCHAR(8) NOT NULL, PRIMARY KEY (id, k))"
            ),
        ],
    )
    .await;
    let (code, check) = p.command(&["check"]);
    assert_eq!(code, 0, "{check}");
    assert!(
        check.contains(&format!("binlog_row_metadata={mode}")),
        "the server logs {mode} metadata: {check}"
    );
    let mut child = p.spawn();
    p.wait_started(Duration::from_secs(60));
    let t = format!("{db}.t");
    exec(
        &mut c,
        &[
            &format!(
                "INSERT INTO {t} VALUES ('grüße 😀', 18446744073709551615, 255, -128, 'z', 'p,r', \
                 'café', -1234567.891, 1, 'a'), (NULL, 0, 0, 127, 'x', '', 'x', 0.5, 2, 'b')"
            ),
            &format!("UPDATE {t} SET big = big - 1, st = 'q' WHERE id = 1"),
            &format!("DELETE FROM {t} WHERE id = 2"),
            &format!(
                "ALTER TABLE {t} ADD COLUMN added INT UNSIGNED AFTER big, DROP COLUMN neg, \
                 MODIFY d DECIMAL(12,4)"
            ),
            &format!("ALTER TABLE {t} RENAME COLUMN small TO tiny"),
            &format!(
                "INSERT INTO {t} (note, big, added, tiny, e, st, l1, d, id, k) VALUES \
                 ('after', 18446744073709551614, 4294967295, 200, 'y', 'q,r', 'ñ', 12.3456, 3, 'c')"
            ),
            &format!("CREATE TABLE {db}.t2 (id BIGINT UNSIGNED PRIMARY KEY, v ENUM('on','off'))"),
            &format!("INSERT INTO {db}.t2 VALUES (18446744073709551615, 'off')"),
        ],
    )
    .await;
    let topics = [p.topic("t"), p.topic("t2")];
    // c1 c2 u1 d2 tomb2 c3 | c(t2)
    let first = consume(
        &topics,
        "read_committed",
        7,
        Duration::from_secs(1),
        Duration::from_secs(60),
    );
    assert_eq!(
        first.len(),
        7,
        "records before the kill; log:
{}",
        p.log()
    );

    // Down: a row of the old shape, a DDL, a row of the new shape.
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    exec(
        &mut c,
        &[
            &format!(
                "INSERT INTO {t} (note, big, added, tiny, e, st, l1, d, id, k) VALUES \
                 ('old shape', 7, 8, 9, 'x', 'p', 'ü', 1.5, 4, 'd')"
            ),
            &format!("ALTER TABLE {t} ADD COLUMN late BIGINT UNSIGNED FIRST"),
            &format!(
                "INSERT INTO {t} (late, note, big, added, tiny, e, st, l1, d, id, k) VALUES \
                 (18446744073709551615, 'new shape', 1, 2, 3, 'z', 'p,q,r', 'ß', -0.0001, 5, 'e')"
            ),
        ],
    )
    .await;
    let mut child = p.spawn();
    let all = consume(
        &topics,
        "read_committed",
        9,
        Duration::from_secs(2),
        Duration::from_secs(60),
    );
    let log = p.log();
    let ctx = format!(
        "[{} {mode}] log:
{log}",
        scratch.name
    );
    assert_eq!(
        all.len(),
        9,
        "no record lost or repeated across the kill; {ctx}"
    );

    let after = |r: &Rec| r.value.as_ref().map(|v| v["after"].clone());
    let before = |r: &Rec| r.value.as_ref().map(|v| v["before"].clone());
    let row1 = json!({"note": "grüße 😀", "big": 18446744073709551615u64, "small": 255,
        "neg": -128, "e": "z", "st": "p,r", "l1": "café", "d": "-1234567.891", "id": 1, "k": "a"});
    let t_recs: Vec<&Rec> = all.iter().filter(|r| r.topic == topics[0]).collect();
    assert_eq!(t_recs.len(), 8, "{ctx}");
    assert_eq!(t_recs[0].key, Some(json!({"id": 1, "k": "a"})), "{ctx}");
    assert_eq!(after(t_recs[0]), Some(row1.clone()), "{ctx}");
    assert_eq!(
        after(t_recs[1]),
        Some(
            json!({"note": null, "big": 0, "small": 0, "neg": 127, "e": "x", "st": "",
            "l1": "x", "d": "0.500", "id": 2, "k": "b"})
        ),
        "{ctx}"
    );
    let mut row1u = row1.clone();
    row1u["big"] = json!(18446744073709551614u64);
    row1u["st"] = json!("q");
    assert_eq!(before(t_recs[2]), Some(row1), "{ctx}");
    assert_eq!(after(t_recs[2]), Some(row1u), "{ctx}");
    assert_eq!(t_recs[3].key, Some(json!({"id": 2, "k": "b"})), "{ctx}");
    assert_eq!(after(t_recs[3]), Some(Value::Null), "{ctx}");
    assert!(t_recs[4].value.is_none(), "tombstone; {ctx}");
    assert_eq!(
        after(t_recs[5]),
        Some(
            json!({"note": "after", "big": 18446744073709551614u64, "added": 4294967295u64,
            "tiny": 200, "e": "y", "st": "q,r", "l1": "ñ", "d": "12.3456", "id": 3, "k": "c"})
        ),
        "{ctx}"
    );
    assert_eq!(
        after(t_recs[6]),
        Some(
            json!({"note": "old shape", "big": 7, "added": 8, "tiny": 9, "e": "x", "st": "p",
            "l1": "ü", "d": "1.5000", "id": 4, "k": "d"})
        ),
        "a row written before the DDL that ran while sluice was down has the old shape; {ctx}"
    );
    assert_eq!(
        after(t_recs[7]),
        Some(
            json!({"late": 18446744073709551615u64, "note": "new shape", "big": 1, "added": 2,
            "tiny": 3, "e": "z", "st": "p,q,r", "l1": "ß", "d": "-0.0001", "id": 5, "k": "e"})
        ),
        "{ctx}"
    );
    let t2: Vec<&Rec> = all.iter().filter(|r| r.topic == topics[1]).collect();
    assert_eq!(t2.len(), 1, "{ctx}");
    assert_eq!(
        t2[0].key,
        Some(json!({"id": 18446744073709551615u64})),
        "{ctx}"
    );
    assert_eq!(
        after(t2[0]),
        Some(json!({"id": 18446744073709551615u64, "v": "off"})),
        "{ctx}"
    );

    // A DDL the binlog never sees: the next table map disagrees with the tracked definition.
    exec(
        &mut c,
        &[
            "SET SESSION sql_log_bin = 0",
            &format!("ALTER TABLE {t} ADD COLUMN hidden INT"),
            "SET SESSION sql_log_bin = 1",
            &format!("INSERT INTO {t} (id, k) VALUES (6, 'f')"),
        ],
    )
    .await;
    let st = wait_exit(&mut child, Duration::from_secs(60));
    let log = p.log();
    assert!(
        !st.success(),
        "sluice must stop; log:
{log}"
    );
    assert!(
        log.contains(&format!(
            "`{db}`.`t` has 12 columns but the tracked schema has 11"
        )),
        "the error names the table and the disagreement; log:
{log}"
    );
    let again = consume(
        &topics,
        "read_committed",
        10,
        Duration::from_secs(2),
        Duration::from_secs(10),
    );
    assert_eq!(
        again.len(),
        9,
        "nothing of the disagreeing row is written; log:
{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_purged_position_fails_or_takes_a_new_snapshot() {
    purged_position(MARIADB.scratch()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_purged_position_fails_or_takes_a_new_snapshot() {
    if !MYSQL.enabled() {
        return;
    }
    purged_position(MYSQL.scratch()).await;
}

/// The binlog after the committed position is purged while sluice is down. With
/// `snapshot.on_purged = "fail"` (the default) it refuses to start, naming the purge and the
/// setting; with `"resnapshot"` it snapshots the table again and streams on: the table rebuilt
/// from the topic equals the table.
async fn purged_position(scratch: Flavor) {
    let _serial = lock(scratch).lock().await;
    let p = Pipeline::new(scratch, "purged", "");
    let db = p.db.clone();
    let (mut c, mut child) = p
        .start_with(&[("t", "(id INT PRIMARY KEY, v VARCHAR(20))")])
        .await;
    exec(
        &mut c,
        &[&format!("INSERT INTO {db}.t VALUES (1, 'one'), (2, 'two')")],
    )
    .await;
    let topic = p.topic("t");
    let first = consume(
        std::slice::from_ref(&topic),
        "read_committed",
        2,
        Duration::from_millis(300),
        Duration::from_secs(60),
    );
    assert_eq!(first.len(), 2, "log:\n{}", p.log());
    terminate(&mut child);

    // Down: more changes, then every binlog but the newest is purged.
    exec(
        &mut c,
        &[
            &format!("UPDATE {db}.t SET v = 'uno' WHERE id = 1"),
            &format!("INSERT INTO {db}.t VALUES (3, 'three')"),
            "FLUSH BINARY LOGS",
            &format!("DELETE FROM {db}.t WHERE id = 2"),
        ],
    )
    .await;
    // The server keeps a log it still needs (crash-recovery checkpoint, a reader): flush and
    // purge until only the newest one is left.
    let status = if scratch.mysql {
        "SHOW BINARY LOG STATUS"
    } else {
        "SHOW MASTER STATUS"
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let row: mysql_async::Row = c
            .query_first(status)
            .await
            .expect("binlog status")
            .expect("binary logging is on");
        let file: String = row.get("File").unwrap();
        exec(&mut c, &[&format!("PURGE BINARY LOGS TO '{file}'")]).await;
        let logs: Vec<mysql_async::Row> = c.query("SHOW BINARY LOGS").await.expect("logs");
        if logs.len() == 1 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the server keeps {} binlogs after PURGE",
            logs.len()
        );
        exec(&mut c, &["FLUSH BINARY LOGS"]).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // It must stop by itself, within a bound.
    let mut refused = p.spawn();
    let st = wait_exit(&mut refused, Duration::from_secs(60));
    let out = p.log();
    assert!(!st.success(), "a purged position must not start: {out}");
    assert!(
        out.contains("purged") && out.contains("on_purged"),
        "the error names the purge and the setting: {out}"
    );

    p.edit_config(
        "format = \"json\"",
        "format = \"json\"\n\n[snapshot]\non_purged = \"resnapshot\"",
    );
    let mut child = p.spawn();
    // r1 (uno), r3 after the earlier c1, c2.
    let all = consume(
        std::slice::from_ref(&topic),
        "read_committed",
        4,
        Duration::from_secs(2),
        Duration::from_secs(90),
    );
    terminate(&mut child);
    let log = p.log();
    assert!(log.contains("taking a new snapshot"), "log:\n{log}");
    let reads: Vec<(Value, Value)> = all
        .iter()
        .filter(|r| r.value.as_ref().is_some_and(|v| v["op"] == "r"))
        .map(|r| {
            let v = r.value.as_ref().unwrap();
            (v["after"]["id"].clone(), v["after"]["v"].clone())
        })
        .collect();
    assert_eq!(
        reads,
        [(json!(1), json!("uno")), (json!(3), json!("three"))],
        "the new snapshot has the table as it is; log:\n{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_compressed_binlog_events_are_decoded() {
    with_globals(
        MARIADB.scratch(),
        &[
            "SET GLOBAL log_bin_compress = ON",
            "SET GLOBAL log_bin_compress_min_len = 10",
        ],
        &[
            "SET GLOBAL log_bin_compress = OFF",
            "SET GLOBAL log_bin_compress_min_len = DEFAULT",
        ],
        compressed_events(),
    )
    .await;
}

/// A long, repetitive (so zlib shrinks it), row-specific string of about `bytes` bytes
/// (never more), with multi-byte UTF-8 characters.
fn long_text(tag: &str, id: i64, bytes: usize) -> String {
    let unit = format!("{tag} {id} Grüße, façade 😀 lorem ipsum dolor sit amet {id}; ");
    let mut s = String::with_capacity(bytes + unit.len());
    while s.len() + unit.len() <= bytes {
        s.push_str(&unit);
    }
    s
}

/// The title (VARCHAR(2000): at most 2000 characters) and body (TEXT: at most 65535 bytes)
/// inserted for row `id`. Row 20 has a body of almost 64 KiB, so its rows event is longer than
/// 65535 bytes uncompressed (a 3-byte uncompressed-length field).
fn row_values(id: i64) -> (String, String) {
    let title = long_text("title", id, 1200 + 30 * id as usize);
    let body_len = if id == 20 {
        65_000
    } else {
        2_000 + 700 * id as usize
    };
    (title, long_text("body", id, body_len))
}

fn tuple(id: i64, title: &str, body: &str) -> String {
    format!("({id}, '{title}', '{body}')")
}

async fn compressed_events() {
    let p = Pipeline::new(MARIADB.scratch(), "compress", "");
    // The pipeline name (and so the database) contains a '-': quote it in SQL.
    let db = p.db.clone();
    let table = format!("`{db}`.docs");
    let mut c = root(MARIADB.scratch().port).await;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE `{db}`"),
            &format!(
                "CREATE TABLE {table} (id INT PRIMARY KEY, title VARCHAR(2000), body TEXT) \
                 DEFAULT CHARSET = utf8mb4"
            ),
        ],
    )
    .await;
    let mut child = p.spawn();
    p.wait_started(Duration::from_secs(60));

    // Where the workload starts in the binlog, to check below that it was written compressed.
    let (start_file, start_pos): (String, u64) = {
        let row: mysql_async::Row = c
            .query_first("SHOW MASTER STATUS")
            .await
            .expect("SHOW MASTER STATUS")
            .expect("binary logging is on");
        (row.get("File").unwrap(), row.get("Position").unwrap())
    };

    // Rows 1..=8: one autocommit transaction each.
    for id in 1..=8 {
        let (t, b) = row_values(id);
        exec(
            &mut c,
            &[&format!("INSERT INTO {table} VALUES {}", tuple(id, &t, &b))],
        )
        .await;
    }
    // Rows 9..=20 in one transaction of two multi-row INSERTs (the first one's rows event is
    // over 64 KiB uncompressed).
    let multi: Vec<String> = (9..=18)
        .map(|id| {
            let (t, b) = row_values(id);
            tuple(id, &t, &b)
        })
        .collect();
    let tail: Vec<String> = (19..=20)
        .map(|id| {
            let (t, b) = row_values(id);
            tuple(id, &t, &b)
        })
        .collect();
    exec(
        &mut c,
        &[
            "BEGIN",
            &format!("INSERT INTO {table} VALUES {}", multi.join(", ")),
            &format!("INSERT INTO {table} VALUES {}", tail.join(", ")),
            "COMMIT",
        ],
    )
    .await;
    let (new_title, new_body) = (
        long_text("new title", 5, 1999),
        long_text("new body", 5, 30_000),
    );
    // A DDL longer than 255 bytes, so its compressed QUERY event has a 2-byte length field.
    let comment = "a column added while log_bin_compress is on ".repeat(8);
    exec(
        &mut c,
        &[
            &format!(
                "UPDATE {table} SET title = '{new_title}', body = '{new_body}' WHERE id = 5"
            ),
            &format!("DELETE FROM {table} WHERE id = 7"),
            &format!("ALTER TABLE {table} ADD COLUMN extra INT COMMENT '{comment}'"),
            &format!("INSERT INTO {table} (id, title, body, extra) VALUES (21, 'after the alter', 'x', 42)"),
        ],
    )
    .await;

    let topic = p.topic("docs");
    // c1..c20, u5, d7, tombstone 7, c21
    let recs = consume(
        std::slice::from_ref(&topic),
        "read_committed",
        24,
        Duration::from_secs(2),
        Duration::from_secs(90),
    );
    let alive = child.try_wait().expect("try_wait").is_none();
    let st = terminate(&mut child);

    // The server really wrote compressed events for this workload.
    let events = binlog_events_since(&mut c, &start_file, start_pos).await;
    let listing: Vec<String> = events
        .iter()
        .map(|(t, i)| format!("{t}: {}", i.chars().take(100).collect::<String>()))
        .collect();
    let mut table_ids = Vec::new();
    let mut kinds: HashMap<String, usize> = HashMap::new();
    let mut alter_type = None;
    for (etype, info) in &events {
        if etype == "Table_map" && info.ends_with(&format!("({db}.docs)")) {
            let id = info
                .strip_prefix("table_id: ")
                .and_then(|s| s.split(' ').next())
                .expect("table id in Table_map info")
                .to_owned();
            table_ids.push(format!("table_id: {id} "));
        } else if etype.contains("_rows") && table_ids.iter().any(|t| info.starts_with(t)) {
            *kinds.entry(etype.clone()).or_default() += 1;
        } else if info.contains("ADD COLUMN extra") {
            alter_type = Some(etype.clone());
        }
    }
    assert_eq!(
        alter_type.as_deref(),
        Some("Query_compressed"),
        "the ALTER TABLE must be a compressed QUERY event; events: {listing:#?}"
    );
    for (etype, n) in &kinds {
        assert!(
            etype.contains("_compressed"),
            "all rows events of the table must be compressed, saw {n} {etype}; events: {listing:#?}"
        );
    }
    let count = |prefix: &str| -> usize {
        kinds
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .map(|(_, n)| n)
            .sum()
    };
    assert!(
        count("Write_rows") >= 11 && count("Update_rows") == 1 && count("Delete_rows") == 1,
        "compressed rows events by type: {kinds:?}"
    );
    eprintln!("compressed events of the workload: {kinds:?}, ALTER TABLE: Query_compressed");

    // And sluice decoded every one of them.
    assert!(
        alive,
        "sluice stopped during the workload; log:\n{}",
        p.log()
    );
    let ops: Vec<String> = recs
        .iter()
        .map(|r| {
            let id = &r.key.as_ref().expect("key")["id"];
            match &r.value {
                None => format!("tomb{id}"),
                Some(v) => format!("{}{id}", v["op"].as_str().expect("op")),
            }
        })
        .collect();
    let mut want_ops: Vec<String> = (1..=20).map(|id| format!("c{id}")).collect();
    want_ops.extend(["u5", "d7", "tomb7", "c21"].map(String::from));
    assert_eq!(ops, want_ops, "ops; log:\n{}", p.log());

    let doc = |id: i64, title: &str, body: &str| json!({"id": id, "title": title, "body": body});
    for (i, r) in recs.iter().take(20).enumerate() {
        let id = i as i64 + 1;
        let (t, b) = row_values(id);
        let v = r.value.as_ref().unwrap();
        assert_eq!(r.key, Some(json!({ "id": id })), "key of c{id}");
        assert_eq!(v["before"], Value::Null, "before of c{id}");
        assert!(
            v["after"] == doc(id, &t, &b),
            "after of c{id} differs: title {} bytes (want {}), body {} bytes (want {})",
            v["after"]["title"].as_str().map_or(0, str::len),
            t.len(),
            v["after"]["body"].as_str().map_or(0, str::len),
            b.len()
        );
    }
    // The 12 rows of the one transaction share its transaction id, in order.
    let txn = &recs[8].value.as_ref().unwrap()["transaction"];
    for (k, r) in recs[8..20].iter().enumerate() {
        let t = &r.value.as_ref().unwrap()["transaction"];
        assert_eq!(t["id"], txn["id"], "c{} is in the transaction of c9", k + 9);
        assert_eq!(t["total_order"], json!(k + 1), "order of c{}", k + 9);
    }
    assert_ne!(
        recs[0].value.as_ref().unwrap()["transaction"]["id"],
        txn["id"]
    );

    let (t5, b5) = row_values(5);
    let upd = recs[20].value.as_ref().unwrap();
    assert_eq!(recs[20].key, Some(json!({"id": 5})));
    assert!(upd["before"] == doc(5, &t5, &b5), "before of u5");
    assert!(upd["after"] == doc(5, &new_title, &new_body), "after of u5");

    let (t7, b7) = row_values(7);
    let del = recs[21].value.as_ref().unwrap();
    assert_eq!(recs[21].key, Some(json!({"id": 7})));
    assert!(del["before"] == doc(7, &t7, &b7), "before of d7");
    assert_eq!(del["after"], Value::Null);
    assert_eq!(recs[22].key, Some(json!({"id": 7})), "tombstone key");
    assert!(recs[22].value.is_none(), "tombstone after the delete");

    let after_alter = recs[23].value.as_ref().unwrap();
    assert_eq!(recs[23].key, Some(json!({"id": 21})));
    assert_eq!(
        after_alter["after"],
        json!({"id": 21, "title": "after the alter", "body": "x", "extra": 42}),
        "the row written after the ALTER has the new column"
    );

    assert!(
        st.success(),
        "SIGTERM exits 0, got {st:?}; log:\n{}",
        p.log()
    );
    assert_eq!(recs.len(), 24, "no extra records");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_compressed_transactions_are_decoded() {
    if !MYSQL.enabled() {
        return;
    }
    with_globals(
        MYSQL.scratch(),
        &["SET GLOBAL binlog_transaction_compression = ON"],
        &["SET GLOBAL binlog_transaction_compression = OFF"],
        compressed_transactions(),
    )
    .await;
}

/// Peak resident memory of a process in KiB (`VmHWM`), if readable.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

/// MySQL `binlog_transaction_compression=ON`: every transaction arrives as a zstd
/// TRANSACTION_PAYLOAD event; small ones, a large one (SLUICE_TEST_COMPRESSED_ROWS rows of
/// ~600 bytes), updates and deletes all arrive exactly once with their values.
async fn compressed_transactions() {
    let scratch = MYSQL.scratch();
    let n = env_usize("SLUICE_TEST_COMPRESSED_ROWS", 20_000);
    let p = Pipeline::new(scratch, "zstd", "");
    let db = p.db.clone();
    let table = format!("{db}.docs");
    let mut c = root(scratch.port).await;
    exec(
        &mut c,
        &[
            "SET SESSION binlog_transaction_compression = ON",
            &format!("CREATE DATABASE {db}"),
            &format!("CREATE TABLE {table} (id INT PRIMARY KEY, seq INT NOT NULL, body TEXT)"),
        ],
    )
    .await;
    let mut child = p.spawn();
    p.wait_started(Duration::from_secs(60));
    let (start_file, start_pos): (String, u64) = {
        let row: mysql_async::Row = c
            .query_first("SHOW BINARY LOG STATUS")
            .await
            .expect("SHOW BINARY LOG STATUS")
            .expect("binary logging is on");
        (row.get("File").unwrap(), row.get("Position").unwrap())
    };
    let body = |id: usize| long_text("zstd", id as i64, 600);
    // 1..=50: small autocommit transactions.
    for id in 1..=50 {
        exec(
            &mut c,
            &[&format!(
                "INSERT INTO {table} VALUES ({id}, 0, '{}')",
                body(id)
            )],
        )
        .await;
    }
    // One large transaction: n rows in statements of 500.
    exec(&mut c, &["BEGIN"]).await;
    let ids: Vec<usize> = (1000..1000 + n).collect();
    for chunk in ids.chunks(500) {
        let vals: Vec<String> = chunk
            .iter()
            .map(|id| format!("({id}, 0, '{}')", body(*id)))
            .collect();
        exec(
            &mut c,
            &[&format!("INSERT INTO {table} VALUES {}", vals.join(","))],
        )
        .await;
    }
    exec(&mut c, &["COMMIT"]).await;
    // Updates and deletes in one transaction, then a DDL and a row of the new shape.
    exec(
        &mut c,
        &[
            "BEGIN",
            &format!("UPDATE {table} SET seq = seq + 1, body = 'short' WHERE id <= 10"),
            &format!("DELETE FROM {table} WHERE id > 40 AND id <= 50"),
            "COMMIT",
            &format!("ALTER TABLE {table} ADD COLUMN extra INT"),
            &format!("INSERT INTO {table} VALUES (51, 1, 'after the alter', 42)"),
        ],
    )
    .await;
    let events = binlog_events_since(&mut c, &start_file, start_pos).await;
    let payloads = events
        .iter()
        .filter(|(t, _)| t == "Transaction_payload")
        .count();
    assert!(
        payloads >= 52,
        "the workload was written as compressed transaction payloads, saw {payloads}: {:?}",
        &events[..events.len().min(20)]
    );

    // 50 + n inserts, 10 updates, 10 deletes + 10 tombstones, 1 insert after the ALTER.
    let want = 50 + n + 10 + 20 + 1;
    let recs = consume(
        &[p.topic("docs")],
        "read_committed",
        want,
        Duration::from_secs(3),
        Duration::from_secs(180),
    );
    let peak = peak_rss_kib(child.id());
    let st = terminate(&mut child);
    eprintln!(
        "[mysql] compressed transactions: {} records, sluice peak RSS {peak:?} KiB",
        recs.len()
    );
    assert_eq!(
        recs.len(),
        want,
        "every change exactly once; log:\n{}",
        p.log()
    );
    let mut inserted = std::collections::HashSet::new();
    let (mut updates, mut deletes, mut tombstones) = (0, 0, 0);
    for r in &recs {
        let id = r.key.as_ref().expect("key")["id"].as_i64().expect("id");
        match &r.value {
            None => tombstones += 1,
            Some(v) => match v["op"].as_str() {
                Some("c") => {
                    if id != 51 {
                        assert_eq!(
                            v["after"]["body"],
                            json!(body(id as usize)),
                            "value of row {id}"
                        );
                    }
                    assert!(inserted.insert(id), "row {id} inserted once");
                }
                Some("u") => {
                    updates += 1;
                    assert_eq!(v["before"]["body"], json!(body(id as usize)));
                    assert_eq!(v["after"]["body"], json!("short"));
                    assert_eq!(v["after"]["seq"], json!(1));
                }
                Some("d") => deletes += 1,
                other => panic!("unexpected op {other:?}"),
            },
        }
    }
    assert_eq!(inserted.len(), 50 + n + 1);
    assert_eq!((updates, deletes, tombstones), (10, 10, 10));
    let last = recs
        .last()
        .and_then(|r| r.value.clone())
        .expect("last value");
    assert_eq!(last["after"]["extra"], json!(42), "the row after the ALTER");
    assert!(
        st.success(),
        "SIGTERM exits 0, got {st:?}; log:\n{}",
        p.log()
    );
}

/// (Event_type, Info) of every binlog event from `file`:`pos` to the end of the last binlog.
async fn binlog_events_since(
    c: &mut mysql_async::Conn,
    file: &str,
    pos: u64,
) -> Vec<(String, String)> {
    let logs: Vec<mysql_async::Row> = c.query("SHOW BINARY LOGS").await.expect("SHOW BINARY LOGS");
    let mut out = Vec::new();
    for name in logs
        .iter()
        .map(|r| r.get::<String, _>("Log_name").unwrap())
        .filter(|n| n.as_str() >= file)
    {
        let sql = if name == file {
            format!("SHOW BINLOG EVENTS IN '{name}' FROM {pos}")
        } else {
            format!("SHOW BINLOG EVENTS IN '{name}'")
        };
        let rows: Vec<mysql_async::Row> =
            c.query(&sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
        for r in rows {
            out.push((
                r.get::<String, _>("Event_type").unwrap(),
                r.get::<Option<String>, _>("Info")
                    .flatten()
                    .unwrap_or_default(),
            ));
        }
    }
    out
}

per_flavor!(statement_format_and_missing_full_metadata_are_refused);
