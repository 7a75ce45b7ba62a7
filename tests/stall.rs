//! Kafka stalls longer than the transaction timeout, through the fault proxy in front of the
//! broker (`support::kafka_proxy`).
//!
//! When a commit's EndTxn is held past `kafka.transaction_timeout_ms`, the coordinator aborts
//! the transaction and bumps the producer epoch; librdkafka then reports a fatal `_FENCED`,
//! exactly what a takeover by a second instance reports. sluice must tell the two apart: after
//! a timeout it recovers by itself (nothing lost, nothing duplicated, no exit 3); a real second
//! instance still makes the first exit 3.
//!
//! Every test here owns the proxy's advertised port, so they run one at a time (the proxy's
//! lock) and in this binary only.

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use support::kafka_proxy::{api, KafkaProxy};
use support::rows::{assert_exactly_once, committed_ids, insert};
use support::*;

/// `kafka.transaction_timeout_ms` of these tests.
const TXN_TIMEOUT_MS: u64 = 5000;

/// The producer epoch and state of `transactional_id`, from the broker (Kafka's own tool).
fn describe_txn(transactional_id: &str) -> Option<(i64, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(root.join("scripts/lib/kafka-run-class"))
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
    let col = |name: &str| header.iter().position(|h| *h == name).map(|i| row[i]);
    let epoch = col("ProducerEpoch")?.parse().ok()?;
    let state = col("TransactionState")?.to_string();
    Some((epoch, state))
}

/// Waits until the coordinator has bumped the epoch of `transactional_id` past `before`.
fn wait_epoch_above(transactional_id: &str, before: i64, timeout: Duration) -> (i64, String) {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some((epoch, state)) = describe_txn(transactional_id) {
            if epoch > before {
                return (epoch, state);
            }
        }
        assert!(
            Instant::now() < deadline,
            "the coordinator did not bump the epoch of {transactional_id} above {before} \
             within {timeout:?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn stalled_pipeline(flavor: Flavor, tag: &str, proxy: &KafkaProxy) -> Pipeline {
    let p = Pipeline::new(flavor, tag, "");
    p.edit_config(
        &format!("bootstrap_servers = \"{KAFKA}\""),
        &format!(
            "bootstrap_servers = \"{}\"\ntransaction_timeout_ms = {TXN_TIMEOUT_MS}",
            proxy.bootstrap()
        ),
    );
    p
}

/// EndTxn held past the transaction timeout: the coordinator aborts and bumps the epoch, the
/// pipeline recovers by itself with every row exactly once, and does not exit.
async fn a_commit_stalled_past_the_transaction_timeout_recovers(flavor: Flavor) {
    let proxy = KafkaProxy::start();
    let p = stalled_pipeline(flavor, "stall", &proxy);
    let (mut c, mut child) = p.start_with(&[("t", "(id INT PRIMARY KEY, v INT)")]).await;
    let topic = p.topic("t");
    insert(&mut c, &p.db, 1, 100).await;
    let ids = committed_ids(&topic, 100);
    assert_exactly_once(flavor, &ids, 100, &p.log());

    let txn_id = format!("sluice-{}", p.name);
    let (epoch_before, _) = describe_txn(&txn_id).expect("describe the transactional id");
    proxy.hold(&[api::END_TXN]);
    insert(&mut c, &p.db, 101, 200).await;
    assert!(
        proxy.wait_held(Duration::from_secs(30)),
        "[{}] no EndTxn reached the proxy; log:\n{}",
        flavor.name,
        p.log()
    );
    // Held until the coordinator has aborted the transaction by timeout (5 s plus the 1 s
    // abort cleanup interval of the test bed's broker) and bumped the epoch.
    let (epoch_after, state) = wait_epoch_above(&txn_id, epoch_before, Duration::from_secs(60));
    eprintln!(
        "[{}] epoch {epoch_before} -> {epoch_after} ({state}) while EndTxn was held",
        flavor.name
    );
    proxy.release();

    insert(&mut c, &p.db, 201, 300).await;
    let ids = committed_ids(&topic, 300);
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "[{}] sluice exited after a stall (not a takeover); log:\n{}",
        flavor.name,
        p.log()
    );
    assert_exactly_once(flavor, &ids, 300, &p.log());
    terminate(&mut child);
}

/// A real second instance while the first one's commit is stalled past the timeout: the first
/// sees the same `_FENCED` as after a timeout, but finds the new owner's claim and exits 3;
/// the second goes on, and nothing is lost or duplicated.
async fn a_takeover_during_a_stall_still_fences_the_first(flavor: Flavor) {
    let proxy = KafkaProxy::start();
    let p = stalled_pipeline(flavor, "stall_takeover", &proxy);
    let (mut c, mut first) = p.start_with(&[("t", "(id INT PRIMARY KEY, v INT)")]).await;
    let topic = p.topic("t");
    insert(&mut c, &p.db, 1, 100).await;
    committed_ids(&topic, 100);

    proxy.hold(&[api::END_TXN]);
    insert(&mut c, &p.db, 101, 150).await;
    assert!(proxy.wait_held(Duration::from_secs(30)), "EndTxn held");
    // The second instance reaches Kafka directly, not through the stalled proxy.
    let second_cfg = tempfile::NamedTempFile::new().expect("tempfile");
    let text = std::fs::read_to_string(&p.config)
        .expect("config")
        .replace(&proxy.bootstrap(), KAFKA);
    std::fs::write(second_cfg.path(), text).expect("write");
    let mut second = KillOnDrop(
        sluice_command()
            .args(["run", "--config"])
            .arg(second_cfg.path())
            .env("SLUICE_LOG", "info")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn the second instance"),
    );
    // Keep the first one's commit held past the transaction timeout, then let it go.
    std::thread::sleep(Duration::from_millis(TXN_TIMEOUT_MS + 2000));
    proxy.release();
    let status = wait_exit(&mut first, Duration::from_secs(120));
    assert_eq!(
        status.code(),
        Some(3),
        "[{}] the first instance must stop as fenced; log:\n{}",
        flavor.name,
        p.log()
    );
    insert(&mut c, &p.db, 151, 200).await;
    let ids = committed_ids(&topic, 200);
    assert_exactly_once(flavor, &ids, 200, &p.log());
    terminate(&mut second);
}

#[tokio::test(flavor = "multi_thread")]
async fn mariadb_a_commit_stalled_past_the_transaction_timeout_recovers() {
    if MARIADB.enabled() {
        a_commit_stalled_past_the_transaction_timeout_recovers(MARIADB).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn mysql_a_commit_stalled_past_the_transaction_timeout_recovers() {
    if MYSQL.enabled() {
        a_commit_stalled_past_the_transaction_timeout_recovers(MYSQL).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn mariadb_a_takeover_during_a_stall_still_fences_the_first() {
    if MARIADB.enabled() {
        a_takeover_during_a_stall_still_fences_the_first(MARIADB).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn mysql_a_takeover_during_a_stall_still_fences_the_first() {
    if MYSQL.enabled() {
        a_takeover_during_a_stall_still_fences_the_first(MYSQL).await;
    }
}
