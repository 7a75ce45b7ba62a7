//! End-to-end: changes written to the real database arrive in the real Kafka exactly as
//! expected, read with `isolation.level=read_committed`.

mod support;

use std::time::Duration;

use serde_json::json;
use support::*;

async fn setup(p: &Pipeline) {
    let mut c = root(p.flavor.port).await;
    let db = &p.db;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {db}"),
            &format!(
                "CREATE TABLE {db}.customers (id INT PRIMARY KEY, name VARCHAR(100), \
                 balance DECIMAL(10,2), created DATETIME(3), flags SET('a','b','c'), \
                 kind ENUM('person','company'), big BIGINT UNSIGNED, blobby VARBINARY(8), \
                 d DATE, t TIME(6), ts TIMESTAMP(3) NULL, y YEAR, j JSON, b1 BIT(1), b9 BIT(9))"
            ),
            &format!(
                "CREATE TABLE {db}.orders (id BIGINT PRIMARY KEY, customer_id INT NOT NULL, \
                 amount DECIMAL(12,4), note TEXT)"
            ),
            &format!("CREATE TABLE {db}.skipped_nopk (a INT, b VARCHAR(10))"),
        ],
    )
    .await;
}

async fn changes_arrive_exactly_once_in_order_with_debezium_shape(flavor: Flavor) {
    let p = Pipeline::new(flavor, "basic", "");
    setup(&p).await;
    let mut child = p.spawn();
    p.wait_started(Duration::from_secs(60));
    // A new pipeline's topics are created while its producer fences and its readers connect:
    // each learns them before it looks, so the first attempt goes through (it once ended on a
    // cached "unknown partition" of the offsets topic and started again after a backoff).
    let log = p.log();
    assert!(
        !log.contains("transient error"),
        "[{}] a new pipeline's first attempt ended in a transient error:\n{log}",
        flavor.name
    );
    let mut c = root(flavor.port).await;
    let db = &p.db;
    exec(
        &mut c,
        &[
            &format!(
                "INSERT INTO {db}.customers VALUES (1, 'Ann ü😀', 12.50, '2024-03-01 10:20:30.123', \
                 'a,c', 'company', 18446744073709551615, X'00ff', '2024-03-01', '-12:34:56.000789', \
                 '2024-03-01 10:20:30.456', 2024, '{{\"k\": [1, 2]}}', b'1', b'100000001')"
            ),
            &format!(
                "INSERT INTO {db}.customers (id, name) VALUES (2, 'Bob')"
            ),
            "BEGIN",
            &format!("INSERT INTO {db}.orders VALUES (10, 1, 99.9900, 'first')"),
            &format!("UPDATE {db}.customers SET balance = balance - 99.99 WHERE id = 1"),
            "COMMIT",
            &format!("DELETE FROM {db}.customers WHERE id = 2"),
            &format!("UPDATE {db}.customers SET id = 3 WHERE id = 1"),
            &format!("INSERT INTO {db}.skipped_nopk VALUES (1, 'x')"),
        ],
    )
    .await;
    let topics = vec![
        p.topic("customers"),
        p.topic("orders"),
        p.topic("skipped_nopk"),
    ];
    // customers: c1 c2 u1 d2 t2 d1 t1 c3 = 8, orders: 1, nopk: 1
    let recs = consume(
        &topics,
        "read_committed",
        10,
        Duration::from_secs(2),
        Duration::from_secs(60),
    );
    let st = terminate(&mut child);
    let by = by_topic(&recs);
    let name = flavor.name;
    let cust = by.get(&p.topic("customers")).cloned().unwrap_or_default();
    let ops: Vec<String> = cust
        .iter()
        .map(|r| match &r.value {
            None => format!("tomb{}", r.key.as_ref().unwrap()["id"]),
            Some(v) => format!(
                "{}{}",
                v["op"].as_str().unwrap(),
                r.key.as_ref().unwrap()["id"]
            ),
        })
        .collect();
    assert_eq!(
        ops,
        ["c1", "c2", "u1", "d2", "tomb2", "d1", "tomb1", "c3"],
        "[{name}] customers ops; log:\n{}",
        p.log()
    );
    let first = cust[0].value.as_ref().unwrap();
    let after = &first["after"];
    assert_eq!(first["before"], serde_json::Value::Null, "[{name}]");
    assert_eq!(after["id"], json!(1), "[{name}]");
    assert_eq!(after["name"], json!("Ann ü😀"), "[{name}]");
    assert_eq!(
        after["balance"],
        json!("12.50"),
        "[{name}] decimal as exact string"
    );
    assert_eq!(
        after["created"],
        json!(1709288430123i64),
        "[{name}] DATETIME(3) as epoch ms"
    );
    assert_eq!(after["flags"], json!("a,c"), "[{name}]");
    assert_eq!(after["kind"], json!("company"), "[{name}]");
    assert_eq!(
        after["big"],
        json!(18446744073709551615u64),
        "[{name}] exact BIGINT UNSIGNED"
    );
    assert_eq!(after["blobby"], json!("AP8="), "[{name}] binary as base64");
    assert_eq!(after["d"], json!(19783), "[{name}] DATE as days");
    assert_eq!(
        after["t"],
        json!(-45296000789i64),
        "[{name}] TIME as micros"
    );
    assert_eq!(
        after["ts"],
        json!("2024-03-01T10:20:30.456Z"),
        "[{name}] TIMESTAMP ISO UTC"
    );
    assert_eq!(after["y"], json!(2024), "[{name}]");
    let j: serde_json::Value =
        serde_json::from_str(after["j"].as_str().expect("JSON as a string")).unwrap();
    assert_eq!(j, json!({"k": [1, 2]}), "[{name}] JSON column");
    assert_eq!(after["b1"], json!(true), "[{name}] BIT(1)");
    assert_eq!(
        after["b9"],
        json!("AQE="),
        "[{name}] BIT(9) as base64 big-endian"
    );
    let src = &first["source"];
    assert_eq!(src["db"], json!(p.db), "[{name}]");
    assert_eq!(src["table"], json!("customers"), "[{name}]");
    assert_eq!(src["name"], json!(p.name), "[{name}]");
    assert_eq!(src["snapshot"], json!("false"), "[{name}]");
    assert!(src["pos"].as_u64().unwrap() > 0, "[{name}]");
    let connector = if flavor.mysql { "mysql" } else { "mariadb" };
    assert_eq!(src["connector"], json!(connector), "[{name}]");

    // The multi-table transaction: both records carry the same transaction id, in order.
    let order = &by[&p.topic("orders")][0];
    let upd = &cust[2];
    let ov = order.value.as_ref().unwrap();
    let uv = upd.value.as_ref().unwrap();
    assert_eq!(ov["transaction"]["id"], uv["transaction"]["id"], "[{name}]");
    assert_eq!(ov["transaction"]["total_order"], json!(1), "[{name}]");
    assert_eq!(uv["transaction"]["total_order"], json!(2), "[{name}]");
    assert_eq!(uv["before"]["balance"], json!("12.50"), "[{name}]");
    assert_eq!(uv["after"]["balance"], json!("-87.49"), "[{name}]");
    assert_eq!(ov["after"]["amount"], json!("99.9900"), "[{name}]");
    assert_eq!(order.key, Some(json!({"id": 10})), "[{name}]");

    // The key change (autocommit, one source transaction): its delete and create are the
    // transaction's events 1 and 2, as Debezium numbers them.
    let orders_of = |i: usize| {
        let t = &cust[i].value.as_ref().unwrap()["transaction"];
        (
            t["id"].clone(),
            t["total_order"].clone(),
            t["data_collection_order"].clone(),
        )
    };
    let (del_id, del_total, del_table) = orders_of(5);
    let (cre_id, cre_total, cre_table) = orders_of(7);
    assert_eq!(del_id, cre_id, "[{name}] one transaction");
    assert_eq!(
        (del_total, del_table),
        (json!(1), json!(1)),
        "[{name}] key change delete"
    );
    assert_eq!(
        (cre_total, cre_table),
        (json!(2), json!(2)),
        "[{name}] key change create"
    );

    // A table without a primary key: null key.
    let nopk = &by[&p.topic("skipped_nopk")];
    assert_eq!(nopk.len(), 1, "[{name}]");
    assert!(
        nopk[0].key.is_none(),
        "[{name}] no key without a primary key"
    );
    assert!(
        st.success(),
        "[{name}] SIGTERM exits 0, got {st:?}; log:\n{}",
        p.log()
    );
    assert_eq!(recs.len(), 10, "[{name}] no extra records");
}

async fn a_killed_transaction_is_invisible_then_written_once(flavor: Flavor) {
    let p = Pipeline::new(flavor, "atomic", "");
    let mut c = root(flavor.port).await;
    let db = &p.db;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {db}"),
            &format!("CREATE TABLE {db}.a (id INT PRIMARY KEY, v VARCHAR(200))"),
            &format!("CREATE TABLE {db}.b (id INT PRIMARY KEY, v VARCHAR(200))"),
        ],
    )
    .await;
    let mut child = p.spawn();
    p.wait_started(Duration::from_secs(60));
    let n = env_usize("SLUICE_TEST_ATOMIC_ROWS", 40_000);
    // One source transaction over two tables, large enough to be caught mid-write.
    let pad = "x".repeat(150);
    exec(&mut c, &["BEGIN"]).await;
    for chunk in (0..n).collect::<Vec<_>>().chunks(2000) {
        let vals: Vec<String> = chunk.iter().map(|i| format!("({i},'{pad}')")).collect();
        let vals = vals.join(",");
        exec(
            &mut c,
            &[
                &format!("INSERT INTO {db}.a VALUES {vals}"),
                &format!("INSERT INTO {db}.b VALUES {vals}"),
            ],
        )
        .await;
    }
    exec(&mut c, &["COMMIT"]).await;
    let topics = vec![p.topic("a"), p.topic("b")];
    // Wait until some records of the open transaction are in the log, then kill -9.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let seen = consume(
            &topics,
            "read_uncommitted",
            1,
            Duration::ZERO,
            Duration::from_millis(500),
        );
        if !seen.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "[{}] nothing written; log:\n{}",
            flavor.name,
            p.log()
        );
    }
    child.kill().expect("kill -9");
    let _ = child.wait();
    let uncommitted = consume(
        &topics,
        "read_uncommitted",
        2 * n,
        Duration::from_secs(1),
        Duration::from_secs(5),
    )
    .len();
    let committed = consume(
        &topics,
        "read_committed",
        1,
        Duration::from_secs(1),
        Duration::from_secs(3),
    )
    .len();
    assert!(
        committed == 0 || committed == 2 * n,
        "[{}] a source transaction must be all or nothing under read_committed: saw {committed} of {}",
        flavor.name,
        2 * n
    );
    eprintln!(
        "[{}] after kill -9: read_uncommitted {uncommitted}, read_committed {committed}",
        flavor.name
    );
    // Restart: the pipeline fences the dead instance's transaction and writes it once.
    let mut child = p.spawn();
    let recs = consume(
        &topics,
        "read_committed",
        2 * n,
        Duration::from_secs(3),
        Duration::from_secs(120),
    );
    terminate(&mut child);
    assert_eq!(
        recs.len(),
        2 * n,
        "[{}] exactly once after restart; log:\n{}",
        flavor.name,
        p.log()
    );
    let ids: std::collections::HashSet<(String, i64)> = recs
        .iter()
        .map(|r| {
            (
                r.topic.clone(),
                r.key.as_ref().unwrap()["id"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(ids.len(), 2 * n, "[{}] no duplicates", flavor.name);
}

async fn xa_transactions_are_emitted_only_when_committed_even_across_a_crash(flavor: Flavor) {
    let name = flavor.name;
    let p = Pipeline::new(flavor, "xa", "");
    let db = &p.db;
    let mut c = root(flavor.port).await;
    let mut other = root(flavor.port).await;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {db}"),
            &format!("CREATE TABLE {db}.t (id INT PRIMARY KEY, v VARCHAR(20))"),
        ],
    )
    .await;
    let mut child = p.spawn();
    p.wait_started(Duration::from_secs(60));
    exec(
        &mut c,
        &[
            "XA START 'a'",
            &format!("INSERT INTO {db}.t VALUES (1, 'a1'), (2, 'a2')"),
            "XA END 'a'",
            "XA PREPARE 'a'",
        ],
    )
    .await;
    exec(
        &mut other,
        &[&format!("INSERT INTO {db}.t VALUES (100, 'marker')")],
    )
    .await;
    let topics = vec![p.topic("t")];
    let seen = consume(
        &topics,
        "read_committed",
        1,
        Duration::from_secs(2),
        Duration::from_secs(60),
    );
    let ids: Vec<i64> = seen
        .iter()
        .map(|r| r.key.as_ref().unwrap()["id"].as_i64().unwrap())
        .collect();
    assert_eq!(
        ids,
        vec![100],
        "[{name}] a prepared XA transaction is not emitted; log:\n{}",
        p.log()
    );
    // Crash after the prepare was passed by a commit: the prepared group must survive.
    child.kill().expect("kill -9");
    let _ = child.wait();
    let mut child = p.spawn();
    exec(
        &mut c,
        &[
            "XA COMMIT 'a'",
            "XA START 'b'",
            &format!("INSERT INTO {db}.t VALUES (3, 'b3')"),
            "XA END 'b'",
            "XA PREPARE 'b'",
            "XA ROLLBACK 'b'",
            "XA START 'c'",
            &format!("INSERT INTO {db}.t VALUES (4, 'c4')"),
            "XA END 'c'",
            "XA COMMIT 'c' ONE PHASE",
        ],
    )
    .await;
    let recs = consume(
        &topics,
        "read_committed",
        4,
        Duration::from_secs(3),
        Duration::from_secs(60),
    );
    terminate(&mut child);
    let ids: Vec<i64> = recs
        .iter()
        .map(|r| r.key.as_ref().unwrap()["id"].as_i64().unwrap())
        .collect();
    assert_eq!(
        ids,
        vec![100, 1, 2, 4],
        "[{name}] committed XA rows once, rolled back never; log:\n{}",
        p.log()
    );
    let v = recs[1].value.as_ref().unwrap();
    assert_eq!(v["after"]["v"], json!("a1"), "[{name}]");
    assert_eq!(
        recs[1].value.as_ref().unwrap()["transaction"]["id"],
        recs[2].value.as_ref().unwrap()["transaction"]["id"],
        "[{name}] both rows of XA 'a' are one transaction"
    );
}

async fn filtered_traffic_advances_the_committed_offset_and_offsets_set_fences(flavor: Flavor) {
    let name = flavor.name;
    let p = Pipeline::new(flavor, "idle", "");
    let db = &p.db;
    let other = format!("{db}_other");
    let mut c = root(flavor.port).await;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {db}"),
            &format!("CREATE DATABASE {other}"),
            &format!("CREATE TABLE {other}.noise (id INT PRIMARY KEY)"),
        ],
    )
    .await;
    let mut child = p.spawn();
    p.wait_started(Duration::from_secs(60));
    let before = p.command(&["offsets", "show"]).1;
    for i in 0..50 {
        exec(
            &mut c,
            &[&format!("INSERT INTO {other}.noise VALUES ({i})")],
        )
        .await;
    }
    let target = flavor.gtid_executed(&mut c).await;
    // Offset-only transactions record progress through binlog without included rows.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let now = p.command(&["offsets", "show"]).1;
        // Other tests write to the same server: the offset may pass the target.
        let reached = serde_json::from_str::<serde_json::Value>(&now)
            .ok()
            .and_then(|v| {
                v["position"][flavor.gtid_key()]
                    .as_str()
                    .map(str::to_string)
            })
            .is_some_and(|now| flavor.gtid_contains(&now, &target));
        if reached {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "[{name}] committed offset did not reach {target}: before {before}, now {now}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    // `offsets set` fences the running instance and commits the operator's position.
    let operator_gtid = if flavor.mysql {
        let uuid: String =
            mysql_async::prelude::Queryable::query_first(&mut c, "SELECT @@server_uuid")
                .await
                .unwrap()
                .unwrap();
        format!("{uuid}:1")
    } else {
        "0-1-1".to_string()
    };
    let (code, out) = p.command(&[
        "offsets",
        "set",
        "--position",
        &format!("gtid:{operator_gtid}"),
    ]);
    assert_eq!(code, 0, "[{name}] offsets set: {out}");
    let (_, shown) = p.command(&["offsets", "show"]);
    assert!(
        shown.contains(&format!("\"{}\": \"{operator_gtid}\"", flavor.gtid_key()))
            && shown.contains("operator"),
        "[{name}] {shown}"
    );
    exec(
        &mut c,
        &[&format!("INSERT INTO {other}.noise VALUES (1000)")],
    )
    .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "[{name}] still running after offsets set; log:\n{}",
            p.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(
        status.code(),
        Some(3),
        "[{name}] fenced by offsets set; log:\n{}",
        p.log()
    );
}

async fn a_source_transaction_longer_than_the_kafka_timeout_is_a_clear_error(flavor: Flavor) {
    let name = flavor.name;
    let p = Pipeline::new(flavor, "txtimeout", "");
    let text = std::fs::read_to_string(&p.config).unwrap();
    std::fs::write(
        &p.config,
        text.replace("[kafka]\n", "[kafka]\ntransaction_timeout_ms = 1000\n"),
    )
    .unwrap();
    let db = &p.db;
    let mut c = root(flavor.port).await;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {db}"),
            &format!("CREATE TABLE {db}.big (id INT PRIMARY KEY, v VARCHAR(200))"),
        ],
    )
    .await;
    // The source link is throttled so the transaction cannot cross it within the timeout
    // however fast this machine and sluice are: at 2 MB/s its ~18 MB take ~9 s, and every
    // attempt gives up at 90% of the 1 s timeout. (Unthrottled, a replay from the server's
    // page cache wrote 300,000 rows in under a second on a 2-core machine.)
    let proxy = p.source_proxy();
    proxy.throttle(env_usize("SLUICE_TEST_TIMEOUT_LINK_BYTES", 2_000_000) as u64);
    let mut child = p.spawn();
    p.wait_started(Duration::from_secs(60));
    let n = env_usize("SLUICE_TEST_TIMEOUT_ROWS", 100_000);
    let pad = "y".repeat(150);
    exec(&mut c, &[&format!("USE {db}"), "BEGIN"]).await;
    for lo in (0..n).step_by(10_000) {
        exec(
            &mut c,
            &[&flavor.insert_seq(&format!("{db}.big"), lo + 1, lo + 10_000, &pad)],
        )
        .await;
    }
    exec(&mut c, &["COMMIT"]).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("[{name}] sluice kept running; log:\n{}", p.log());
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(
        status.code(),
        Some(1),
        "[{name}] definite error; log:\n{}",
        p.log()
    );
    assert!(
        p.log().contains("transaction.timeout.ms")
            && p.log().contains("kafka.transaction_timeout_ms"),
        "[{name}] the error names the setting; log:\n{}",
        p.log()
    );
    let seen = consume(
        &[p.topic("big")],
        "read_committed",
        1,
        Duration::from_secs(1),
        Duration::from_secs(5),
    );
    assert!(
        seen.is_empty(),
        "[{name}] nothing of the transaction is visible, saw {}",
        seen.len()
    );
}

per_flavor!(
    all:
    changes_arrive_exactly_once_in_order_with_debezium_shape,
    a_killed_transaction_is_invisible_then_written_once,
    xa_transactions_are_emitted_only_when_committed_even_across_a_crash,
    filtered_traffic_advances_the_committed_offset_and_offsets_set_fences,
    a_source_transaction_longer_than_the_kafka_timeout_is_a_clear_error,
);
