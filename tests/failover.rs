//! Failover by GTID: stream from a primary, stop sluice, point it at a replica of that primary
//! (MySQL replica of MySQL, MariaDB replica of MariaDB, both started by `scripts/services`),
//! restart: it resumes from the committed GTID position on the replica with no loss and no
//! duplicate. Sizes: SLUICE_TEST_FAILOVER_ROWS (default 2000 per phase).

mod support;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use support::*;

/// Waits until the replica has applied everything the primary has executed so far.
async fn wait_replica_caught_up(flavor: Flavor) {
    let mut primary = root(flavor.port).await;
    let mut replica = root(flavor.replica_port).await;
    let target = flavor.gtid_executed(&mut primary).await;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let now = flavor.gtid_executed(&mut replica).await;
        if flavor.gtid_contains(&now, &target) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "[{}] replica on {} did not catch up with the primary: primary {target}, replica {now}",
            flavor.name,
            flavor.replica_port
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn insert_range(flavor: Flavor, db: &str, lo: usize, hi: usize) {
    let mut c = root(flavor.port).await;
    for chunk in (lo..hi).collect::<Vec<_>>().chunks(100) {
        let vals: Vec<String> = chunk.iter().map(|i| format!("({i}, 'v{i}')")).collect();
        // One transaction per statement: many GTIDs to resume between.
        exec(
            &mut c,
            &[&format!("INSERT INTO {db}.t VALUES {}", vals.join(","))],
        )
        .await;
    }
}

async fn resume_on_a_replica_by_gtid_loses_and_duplicates_nothing(flavor: Flavor) {
    let name = flavor.name;
    let n = env_usize("SLUICE_TEST_FAILOVER_ROWS", 2000);
    let p = Pipeline::new(flavor, "failover", "");
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
    // Rotate the primary's binlog (not the replica's) so the committed offset names a file the
    // replica does not have: resuming there must go by GTID alone.
    exec(
        &mut c,
        &["FLUSH LOCAL BINARY LOGS", "FLUSH LOCAL BINARY LOGS"],
    )
    .await;
    let topics = vec![p.topic("t")];

    // Phase 1: stream from the primary.
    let mut child = p.spawn();
    p.wait_started(Duration::from_secs(60));
    insert_range(flavor, &db, 0, n).await;
    let seen = consume(
        &topics,
        "read_committed",
        n,
        Duration::ZERO,
        Duration::from_secs(120),
    );
    assert_eq!(seen.len(), n, "[{name}] phase 1; log:\n{}", p.log());
    let st = terminate(&mut child);
    assert!(st.success(), "[{name}] SIGTERM exits 0: {st:?}");
    let (_, committed) = p.command(&["offsets", "show"]);

    // Phase 2: the primary moves on while sluice is down; the replica follows it.
    insert_range(flavor, &db, n, 2 * n).await;
    wait_replica_caught_up(flavor).await;

    // Fail over: the same pipeline, now reading the replica.
    let text = std::fs::read_to_string(&p.config).expect("config");
    let moved = text.replace(
        &format!("@127.0.0.1:{}", flavor.port),
        &format!("@127.0.0.1:{}", flavor.replica_port),
    );
    assert_ne!(text, moved, "[{name}] config names the primary's port");
    std::fs::write(&p.config, moved).expect("config");
    let mut child = p.spawn();
    // Phase 3: new writes on the primary reach sluice through the replica.
    insert_range(flavor, &db, 2 * n, 3 * n).await;
    let recs = consume(
        &topics,
        "read_committed",
        3 * n,
        Duration::from_secs(3),
        Duration::from_secs(180),
    );
    terminate(&mut child);
    let ids: Vec<i64> = recs
        .iter()
        .map(|r| r.key.as_ref().expect("key")["id"].as_i64().expect("id"))
        .collect();
    let distinct: HashSet<i64> = ids.iter().copied().collect();
    let missing: Vec<usize> = (0..3 * n)
        .filter(|i| !distinct.contains(&(*i as i64)))
        .take(5)
        .collect();
    assert!(
        missing.is_empty(),
        "[{name}] lost rows after failover (first: {missing:?}); committed before failover: \
         {committed}; log:\n{}",
        p.log()
    );
    assert_eq!(
        ids.len(),
        3 * n,
        "[{name}] duplicates after failover (committed before: {committed}); log:\n{}",
        p.log()
    );
}

per_flavor!(resume_on_a_replica_by_gtid_loses_and_duplicates_nothing);
