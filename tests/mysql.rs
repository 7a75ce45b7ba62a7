//! MySQL-only binlog features, live on MySQL 9.7 (127.0.0.1:3307): tagged GTIDs (8.3+) and
//! resuming from a tagged GTID set, `start = "gtid:<set>"`, and partial JSON updates
//! (`binlog_row_value_options=PARTIAL_JSON`, set per session so no global changes), rebuilt into
//! full documents. Compressed transactions are in `tests/scratch.rs` (they need a global).

mod support;

use std::time::Duration;

use mysql_async::prelude::*;
use serde_json::{json, Value};
use support::*;

fn enabled() -> bool {
    if MYSQL.enabled() {
        true
    } else {
        eprintln!("mysql not selected by SLUICE_TEST_FLAVORS: skipped");
        false
    }
}

/// The `source.gtid` of a record.
fn gtid_of(r: &Rec) -> String {
    r.value.as_ref().expect("value")["source"]["gtid"]
        .as_str()
        .expect("gtid")
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tagged_and_foreign_gtids_with_gaps_are_emitted_and_resumed_from() {
    if !enabled() {
        return;
    }
    let flavor = MYSQL;
    let tag = format!("t{:x}", rand::random::<u32>());
    // A second source UUID (as after a failover or a multi-source topology), with gaps.
    let b: [u8; 16] = rand::random();
    let other = format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
        u16::from_be_bytes([b[4], b[5]]),
        u16::from_be_bytes([b[6], b[7]]),
        u16::from_be_bytes([b[8], b[9]]),
        u64::from_be_bytes([0, 0, b[10], b[11], b[12], b[13], b[14], b[15]])
    );
    let p = Pipeline::new(flavor, "tagged", "");
    let db = p.db.clone();
    let mut c = root(flavor.port).await;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {db}"),
            &format!("CREATE TABLE {db}.t (id INT PRIMARY KEY, v VARCHAR(20))"),
        ],
    )
    .await;
    // Start from an explicit GTID set (the server's state now) rather than "latest".
    let start = flavor.gtid_executed(&mut c).await;
    let text = std::fs::read_to_string(&p.config).expect("config");
    std::fs::write(
        &p.config,
        text.replace("start = \"latest\"", &format!("start = \"gtid:{start}\"")),
    )
    .expect("config");
    exec(
        &mut c,
        &[
            &format!("INSERT INTO {db}.t VALUES (1, 'untagged')"),
            &format!("SET SESSION gtid_next = 'AUTOMATIC:{tag}'"),
            &format!("INSERT INTO {db}.t VALUES (2, 'tagged')"),
            &format!("INSERT INTO {db}.t VALUES (3, 'tagged')"),
        ],
    )
    .await;
    let mut child = p.spawn();
    let topics = vec![p.topic("t")];
    let recs = consume(
        &topics,
        "read_committed",
        3,
        Duration::from_secs(1),
        Duration::from_secs(60),
    );
    assert_eq!(
        recs.len(),
        3,
        "rows written before the start arrive; log:\n{}",
        p.log()
    );
    let gtids: Vec<String> = recs.iter().map(gtid_of).collect();
    assert!(!gtids[0].contains(&tag), "{gtids:?}");
    assert!(
        gtids[1].contains(&format!(":{tag}:")) && gtids[2].contains(&format!(":{tag}:")),
        "tagged GTIDs as uuid:tag:n: {gtids:?}"
    );
    terminate(&mut child);
    let (_, shown) = p.command(&["offsets", "show"]);
    assert!(
        shown.contains(&format!(":{tag}:")),
        "the committed GTID set holds the tag: {shown}"
    );
    // More tagged transactions while stopped; the restart resumes from the tagged set.
    exec(
        &mut c,
        &[
            &format!("INSERT INTO {db}.t VALUES (4, 'tagged')"),
            "SET SESSION gtid_next = 'AUTOMATIC'",
            &format!("INSERT INTO {db}.t VALUES (5, 'untagged')"),
            &format!("SET SESSION gtid_next = '{other}:5'"),
            &format!("INSERT INTO {db}.t VALUES (6, 'other 5')"),
            &format!("SET SESSION gtid_next = '{other}:7'"),
            &format!("INSERT INTO {db}.t VALUES (7, 'other 7')"),
            "SET SESSION gtid_next = 'AUTOMATIC'",
        ],
    )
    .await;
    let mut child = p.spawn();
    let recs = consume(
        &topics,
        "read_committed",
        7,
        Duration::from_secs(2),
        Duration::from_secs(60),
    );
    terminate(&mut child);
    let ids: Vec<i64> = recs
        .iter()
        .map(|r| r.key.as_ref().expect("key")["id"].as_i64().expect("id"))
        .collect();
    assert_eq!(
        ids,
        vec![1, 2, 3, 4, 5, 6, 7],
        "exactly once across the restart; log:\n{}",
        p.log()
    );
    assert!(gtid_of(&recs[3]).contains(&format!(":{tag}:")));
    assert_eq!(gtid_of(&recs[6]), format!("{other}:7"));
    let (_, shown) = p.command(&["offsets", "show"]);
    assert!(
        shown.contains(&format!("{other}:5:7")),
        "a set with a gap (uuid:5:7): {shown}"
    );
    // Fill the gap while stopped: the resumed stream sends exactly the missing GTID.
    exec(
        &mut c,
        &[
            &format!("SET SESSION gtid_next = '{other}:6'"),
            &format!("INSERT INTO {db}.t VALUES (8, 'other 6')"),
            "SET SESSION gtid_next = 'AUTOMATIC'",
        ],
    )
    .await;
    let mut child = p.spawn();
    let recs = consume(
        &topics,
        "read_committed",
        8,
        Duration::from_secs(2),
        Duration::from_secs(60),
    );
    terminate(&mut child);
    assert_eq!(
        recs.len(),
        8,
        "the gap's transaction once; log:\n{}",
        p.log()
    );
    assert_eq!(gtid_of(&recs[7]), format!("{other}:6"));
    let (_, shown) = p.command(&["offsets", "show"]);
    assert!(
        shown.contains(&format!("{other}:5-7")),
        "gap closed: {shown}"
    );
}

/// The document of row `id` as the server renders it.
async fn server_doc(c: &mut mysql_async::Conn, table: &str, id: i64) -> Value {
    let text: Option<String> = c
        .query_first(format!(
            "SELECT CAST(j AS CHAR) FROM {table} WHERE id = {id}"
        ))
        .await
        .expect("select");
    serde_json::from_str(&text.expect("row")).expect("JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partial_json_updates_arrive_as_full_documents() {
    if !enabled() {
        return;
    }
    let flavor = MYSQL;
    let p = Pipeline::new(flavor, "pjson", "");
    let db = p.db.clone();
    let table = format!("{db}.docs");
    let mut c = root(flavor.port).await;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {db}"),
            &format!("CREATE TABLE {table} (id INT PRIMARY KEY, j JSON, k JSON, n INT)"),
        ],
    )
    .await;
    let mut child = p.spawn();
    p.wait_started(Duration::from_secs(60));
    let (file, pos): (String, u64) = {
        let row: mysql_async::Row = c
            .query_first("SHOW BINARY LOG STATUS")
            .await
            .expect("status")
            .expect("binlog on");
        (
            row.get("File").expect("File"),
            row.get("Position").expect("Position"),
        )
    };
    exec(
        &mut c,
        &[
            &format!(
                "INSERT INTO {table} VALUES (1, '{{\"a\": 1, \"b\": [1, 2, 3], \"c\": {{\"d\": \"x\"}}, \
                 \"price\": 1.50, \"big\": 18446744073709551615, \"neg\": -9223372036854775808, \
                 \"f\": 1e300, \"s\": \"{}\"}}', '[1]', 0)",
                "long text ".repeat(40)
            ),
            &format!("INSERT INTO {table} VALUES (2, '{{\"q\": {{\"r\": [true, null]}}}}', NULL, 0)"),
            "SET SESSION binlog_row_value_options = 'PARTIAL_JSON'",
        ],
    )
    .await;
    let updates = [
        "UPDATE {t} SET j = JSON_SET(j, '$.a', 2), n = n + 1 WHERE id = 1",
        "UPDATE {t} SET j = JSON_REPLACE(j, '$.c.d', 'yy') WHERE id = 1",
        "UPDATE {t} SET j = JSON_REMOVE(j, '$.b[0]') WHERE id = 1",
        "UPDATE {t} SET j = JSON_SET(j, '$.b[10]', 'appended', '$.\"new key\"', JSON_OBJECT('z', 1)) WHERE id = 1",
        "UPDATE {t} SET j = JSON_ARRAY_INSERT(j, '$.b[0]', 'first') WHERE id = 1",
        "UPDATE {t} SET j = JSON_SET(j, '$.q.r[last]', 3.25), k = JSON_ARRAY(1, 2) WHERE id = 2",
        "UPDATE {t} SET j = JSON_SET(j, '$.a', 3) WHERE id IN (1, 2)",
    ];
    // After each statement, the server's documents: what every record's `after.j` must equal.
    let mut expected: Vec<(i64, Value)> = Vec::new();
    for u in updates {
        let sql = u.replace("{t}", &table);
        exec(&mut c, &[&sql]).await;
        let ids: &[i64] = if sql.contains("IN (1, 2)") {
            &[1, 2]
        } else if sql.contains("id = 2") {
            &[2]
        } else {
            &[1]
        };
        for id in ids {
            expected.push((*id, server_doc(&mut c, &table, *id).await));
        }
    }
    // The server really logged partial updates (otherwise this test proves nothing).
    let events: Vec<mysql_async::Row> = c
        .query(format!("SHOW BINLOG EVENTS IN '{file}' FROM {pos}"))
        .await
        .expect("SHOW BINLOG EVENTS");
    let partial = events
        .iter()
        .filter(|r| r.get::<String, _>("Event_type").as_deref() == Some("Update_rows_partial"))
        .count();
    assert!(
        partial >= updates.len(),
        "partial update events in the binlog: {partial}"
    );

    let want = 2 + expected.len();
    let recs = consume(
        &[p.topic("docs")],
        "read_committed",
        want,
        Duration::from_secs(2),
        Duration::from_secs(60),
    );
    terminate(&mut child);
    assert_eq!(recs.len(), want, "records; log:\n{}", p.log());
    for (i, (id, doc)) in expected.iter().enumerate() {
        let r = &recs[2 + i];
        let v = r.value.as_ref().expect("value");
        assert_eq!(v["op"], json!("u"));
        assert_eq!(r.key, Some(json!({"id": id})));
        let got: Value = serde_json::from_str(v["after"]["j"].as_str().expect("JSON as a string"))
            .expect("JSON");
        assert_eq!(
            &got, doc,
            "update {i} of row {id}: rebuilt document equals the server's"
        );
    }
}
