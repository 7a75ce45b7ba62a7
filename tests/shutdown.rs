//! A bounded shutdown during a stuck commit, and recovery after a Kafka link blackhole,
//! through the fault proxy in front of the broker (`support::kafka_proxy`).
//!
//! * SIGTERM while the commit's EndTxn is held by the proxy: sluice exits within
//!   `shutdown_timeout_ms` (plus a small margin) with exit code 4. A restart without the fault
//!   then delivers every row exactly once, whichever way the given-up transaction ended: aborted
//!   (the held EndTxn is dropped with the proxy's connections; the restart's fencing aborts it)
//!   or committed (the held EndTxn is let through after sluice exited).
//! * All sluice↔broker traffic blackholed for 8 s: once the link is back, a row written then is
//!   committed within a few seconds (the abort of the failed attempt waits a few seconds at most,
//!   and the retry after an attempt that committed waits the minimum backoff).
//!
//! Every test here owns the proxy's advertised port, so they run one at a time (the proxy's
//! lock) and in this binary only.

mod support;

use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use support::kafka_proxy::{api, KafkaProxy};
use support::rows::{assert_exactly_once, committed_ids, insert};
use support::*;

/// `shutdown_timeout_ms` of these tests.
const SHUTDOWN_TIMEOUT_MS: u64 = 5000;

/// How much later than `shutdown_timeout_ms` the exit may be seen (process start-up of the
/// signal, the test's own polling).
const EXIT_MARGIN: Duration = Duration::from_millis(1500);

/// The state of the transaction of `transactional_id` at its coordinator (Kafka's own tool).
fn txn_state(transactional_id: &str) -> Option<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = die_with_test(std::process::Command::new(
        root.join("scripts/lib/kafka-run-class"),
    ))
    .args([
        "org.apache.kafka.tools.TransactionsCommand",
        "--bootstrap-server",
        KAFKA,
        "describe",
        "--transactional-id",
        transactional_id,
    ])
    .output()
    .expect("run TransactionsCommand");
    let text = String::from_utf8_lossy(&out.stdout);
    // A header line and one row; columns are separated by runs of whitespace.
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<&str> = lines.next()?.split_whitespace().collect();
    let row: Vec<&str> = lines.next()?.split_whitespace().collect();
    let i = header.iter().position(|h| *h == "TransactionState")?;
    row.get(i).map(|s| s.to_string())
}

/// A pipeline whose Kafka traffic crosses the proxy, with the given top-level and `[kafka]`
/// settings.
fn proxied_pipeline(
    flavor: Flavor,
    tag: &str,
    proxy: &KafkaProxy,
    top: &str,
    kafka: &str,
) -> Pipeline {
    let p = Pipeline::new(flavor, tag, "");
    let name_line = format!("name = \"{}\"\n", p.name);
    p.edit_config(&name_line, &format!("{name_line}{top}\n"));
    p.edit_config(
        &format!("bootstrap_servers = \"{KAFKA}\""),
        &format!("bootstrap_servers = \"{}\"\n{kafka}", proxy.bootstrap()),
    );
    p
}

/// How the transaction sluice gave up on ends before the restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GivenUp {
    /// The held EndTxn never reaches the broker (the proxy drops its connections); the
    /// restart's `init_transactions` aborts the transaction.
    Aborted,
    /// The held EndTxn is let through after sluice exited: the coordinator commits it.
    CommittedLate,
}

/// SIGTERM while EndTxn is held: exit 4 within the bound, then exactly once after a restart.
async fn sigterm_during_a_stuck_commit_exits_within_the_bound(flavor: Flavor, given_up: GivenUp) {
    let proxy = KafkaProxy::start();
    let top = format!("shutdown_timeout_ms = {SHUTDOWN_TIMEOUT_MS}");
    let p = proxied_pipeline(flavor, "shutdown_stuck", &proxy, &top, "");
    let (mut c, mut child) = p.start_with(&[("t", "(id INT PRIMARY KEY, v INT)")]).await;
    let topic = p.topic("t");
    insert(&mut c, &p.db, 1, 50).await;
    assert_exactly_once(flavor, &committed_ids(&topic, 50), 50, &p.log());

    proxy.hold(&[api::END_TXN]);
    insert(&mut c, &p.db, 51, 100).await;
    assert!(
        proxy.wait_held(Duration::from_secs(30)),
        "[{}] no EndTxn reached the proxy; log:\n{}",
        flavor.name,
        p.log()
    );
    let signalled = Instant::now();
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill -TERM");
    assert!(sent.success());
    let bound = Duration::from_millis(SHUTDOWN_TIMEOUT_MS) + EXIT_MARGIN;
    let status = wait_exit(&mut child, bound + Duration::from_secs(30));
    let took = signalled.elapsed();
    eprintln!(
        "[{}] exit {:?} {} ms after SIGTERM (shutdown_timeout_ms = {SHUTDOWN_TIMEOUT_MS})",
        flavor.name,
        status.code(),
        took.as_millis()
    );
    assert!(
        took <= bound,
        "[{}] sluice took {took:?} to stop, more than {bound:?}; log:\n{}",
        flavor.name,
        p.log()
    );
    assert_eq!(
        status.code(),
        Some(4),
        "[{}] a shutdown that gave up on a commit exits 4; log:\n{}",
        flavor.name,
        p.log()
    );
    assert!(
        p.log()
            .contains("shut down with an unfinished Kafka transaction"),
        "[{}] the log says why; log:\n{}",
        flavor.name,
        p.log()
    );

    // The restart reaches the broker directly; the proxy either lets the held EndTxn through
    // first (and the coordinator commits the transaction sluice gave up on) or drops it with
    // every connection (the restart's fencing aborts it).
    match given_up {
        GivenUp::CommittedLate => {
            proxy.release();
            let txn_id = format!("sluice-{}", p.name);
            wait_for(
                "the coordinator to commit the given-up transaction",
                Duration::from_secs(60),
                || match txn_state(&txn_id) {
                    Some(s) if s == "CompleteCommit" => Ok(()),
                    other => Err(format!("{other:?}")),
                },
            );
        }
        GivenUp::Aborted => proxy.reset_all(),
    }
    p.edit_config(&proxy.bootstrap(), KAFKA);
    drop(proxy);
    let mut restarted = p.spawn();
    insert(&mut c, &p.db, 101, 150).await;
    let ids = committed_ids(&topic, 150);
    assert_exactly_once(flavor, &ids, 150, &p.log());
    let clean = terminate(&mut restarted);
    assert_eq!(
        clean.code(),
        Some(0),
        "[{}] a shutdown with nothing stuck exits 0; log:\n{}",
        flavor.name,
        p.log()
    );
}

/// A read_committed consumer of `topic` from its start.
fn committed_reader(topic: &str) -> BaseConsumer {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", KAFKA)
        .set("group.id", unique("test_blackhole"))
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_committed")
        .set("auto.offset.reset", "earliest")
        .create()
        .expect("consumer");
    consumer.subscribe(&[topic]).expect("subscribe");
    consumer
}

/// Polls `reader` until it has seen the row with `id`; `false` after `timeout`.
fn wait_row(reader: &BaseConsumer, id: i64, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if let Some(Ok(m)) = reader.poll(Duration::from_millis(50)) {
            let seen = m
                .payload()
                .and_then(|v| serde_json::from_slice::<serde_json::Value>(v).ok())
                .and_then(|v| v["after"]["id"].as_i64());
            if seen == Some(id) {
                return true;
            }
        }
    }
    false
}

/// Kafka blackholed for 8 s, three times: each time, a row written when the link is back is
/// committed within 10 s; every row exactly once.
async fn recovery_after_a_kafka_blackhole_takes_seconds(flavor: Flavor) {
    const BLACKHOLE: Duration = Duration::from_secs(8);
    const WITHIN: Duration = Duration::from_secs(10);
    let rounds = env_usize("SLUICE_TEST_BLACKHOLE_ROUNDS", 3) as i64;
    let proxy = KafkaProxy::start();
    // As the chaos suite runs it.
    let p = proxied_pipeline(
        flavor,
        "blackhole",
        &proxy,
        "",
        "transaction_timeout_ms = 5000",
    );
    p.edit_config(
        "heartbeat_ms = 1000",
        "heartbeat_ms = 1000\nreconnect_backoff_max_ms = 5000",
    );
    let (mut c, _child) = p.start_with(&[("t", "(id INT PRIMARY KEY, v INT)")]).await;
    let topic = p.topic("t");
    let reader = committed_reader(&topic);
    let mut next = 1;
    let mut recoveries = Vec::new();
    for round in 1..=rounds {
        // Streaming before the fault: a row committed.
        insert(&mut c, &p.db, next, next + 9).await;
        assert!(
            wait_row(&reader, next + 9, Duration::from_secs(60)),
            "[{}] round {round}: not streaming before the blackhole; log:\n{}",
            flavor.name,
            p.log()
        );
        next += 10;
        proxy.pause();
        // Rows written during the blackhole: the attempt fails on them.
        insert(&mut c, &p.db, next, next + 9).await;
        next += 10;
        std::thread::sleep(BLACKHOLE);
        proxy.resume();
        let back = Instant::now();
        insert(&mut c, &p.db, next, next).await;
        let marker = next;
        next += 1;
        let seen = wait_row(&reader, marker, Duration::from_secs(60));
        let took = back.elapsed();
        eprintln!(
            "[{}] round {round}: row written after an {} s blackhole committed {} ms after the \
             link came back",
            flavor.name,
            BLACKHOLE.as_secs(),
            took.as_millis()
        );
        assert!(
            seen,
            "[{}] round {round}: nothing committed within 60 s of the link coming back; log:\n{}",
            flavor.name,
            p.log()
        );
        recoveries.push(took);
    }
    let slow: Vec<&Duration> = recoveries.iter().filter(|d| **d >= WITHIN).collect();
    assert!(
        slow.is_empty(),
        "[{}] recoveries {recoveries:?}: {} took {WITHIN:?} or more; log:\n{}",
        flavor.name,
        slow.len(),
        p.log()
    );
    let ids = committed_ids(&topic, (next - 1) as usize);
    assert_exactly_once(flavor, &ids, next - 1, &p.log());
}

#[tokio::test(flavor = "multi_thread")]
async fn mariadb_sigterm_during_a_stuck_commit_exits_within_the_bound() {
    if MARIADB.enabled() {
        sigterm_during_a_stuck_commit_exits_within_the_bound(MARIADB, GivenUp::Aborted).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn mysql_sigterm_during_a_stuck_commit_exits_within_the_bound() {
    if MYSQL.enabled() {
        sigterm_during_a_stuck_commit_exits_within_the_bound(MYSQL, GivenUp::Aborted).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn mariadb_a_given_up_commit_that_lands_later_is_not_repeated() {
    if MARIADB.enabled() {
        sigterm_during_a_stuck_commit_exits_within_the_bound(MARIADB, GivenUp::CommittedLate).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn mysql_a_given_up_commit_that_lands_later_is_not_repeated() {
    if MYSQL.enabled() {
        sigterm_during_a_stuck_commit_exits_within_the_bound(MYSQL, GivenUp::CommittedLate).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn mariadb_recovery_after_a_kafka_blackhole_takes_seconds() {
    if MARIADB.enabled() {
        recovery_after_a_kafka_blackhole_takes_seconds(MARIADB).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn mysql_recovery_after_a_kafka_blackhole_takes_seconds() {
    if MYSQL.enabled() {
        recovery_after_a_kafka_blackhole_takes_seconds(MYSQL).await;
    }
}
