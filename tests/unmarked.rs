//! Records Kafka leaves without a transaction marker (`src/sink/unmarked.rs`), made on
//! purpose on the test bed's three-node cluster: a data partition with one replica, on a
//! node that is stopped while the pipeline's transactional id ends a transaction. The
//! coordinator finds no leader for the partition, skips its marker ("Couldn't find leader
//! endpoint ... can be skipped") and completes the transaction; the records stay open there,
//! and the next marker of that producer id on the partition decides them.
//!
//! The transactions are ended by a producer with the pipeline's own transactional id (the
//! same producer id as sluice's), tagged as sluice tags its records:
//! - one tagged with the committed transaction's number but *another attempt*, and
//!   *aborted*: an attempt that was dropped unfinished and retried. It must never become
//!   visible. Before attempts were told apart it was taken for the committed one, and the
//!   restarted pipeline's next commit there made it visible (a duplicate).
//! - one tagged with the committed attempt, and *committed*: the restarted pipeline aborts it
//!   and writes it again before anything else, so no abort marker of a later attempt can take
//!   it (before that, it was left for the next marker there, and an abort lost it). It must
//!   be visible exactly once.
//!
//! Kafka's side of this does not depend on the source, so the test runs on one server
//! (MariaDB, or MySQL when only it is enabled).

mod support;

#[path = "support/chaos/mod.rs"]
mod chaos;

use std::time::{Duration, Instant};

use chaos::cluster;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Header, Message, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::TopicPartitionList;
use support::*;

fn client() -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", cluster::bootstrap());
    c
}

/// Creates `topic` with one partition whose only replica is on node `node`.
fn create_on_node(topic: &str, node: i32) {
    let admin: AdminClient<DefaultClientContext> = client().create().expect("admin");
    let replicas: &[&[i32]] = &[&[node]];
    let nt = NewTopic::new(topic, 1, TopicReplication::Variable(replicas));
    let res = futures_executor::block_on(admin.create_topics([&nt], &AdminOptions::new()))
        .expect("create topic");
    for r in res {
        r.unwrap_or_else(|(t, e)| panic!("create {t}: {e}"));
    }
}

/// `(last stable offset, high watermark)` of partition 0.
fn lso_and_high(topic: &str) -> (i64, i64) {
    let read = |iso: &str| {
        let c: BaseConsumer = client()
            .set("isolation.level", iso)
            .create()
            .expect("consumer");
        c.fetch_watermarks(topic, 0, Duration::from_secs(10))
            .expect("watermarks")
            .1
    };
    (read("read_committed"), read("read_uncommitted"))
}

/// The committed records of partition 0 of `topic`, as `(key, value)` text: read until
/// `want` came and 3 s more passed (to catch extras), or `timeout`.
fn committed(topic: &str, want: usize, timeout: Duration) -> Vec<(String, String)> {
    let c: BaseConsumer = client()
        .set("group.id", unique("unmarked_reader"))
        .set("isolation.level", "read_committed")
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, rdkafka::Offset::Beginning)
        .expect("tpl");
    c.assign(&tpl).expect("assign");
    let started = Instant::now();
    let mut out = Vec::new();
    let mut reached: Option<Instant> = None;
    while started.elapsed() < timeout {
        if reached.is_some_and(|at| at.elapsed() > Duration::from_secs(3)) {
            break;
        }
        if let Some(Ok(m)) = c.poll(Duration::from_millis(100)) {
            let text =
                |b: Option<&[u8]>| String::from_utf8_lossy(b.unwrap_or_default()).into_owned();
            out.push((text(m.key()), text(m.payload())));
            if out.len() >= want && reached.is_none() {
                reached = Some(Instant::now());
            }
        }
    }
    out
}

/// The `txn` and `attempt` of the pipeline's committed offset record: the last record keyed
/// by the pipeline, read up to the partition's last stable offset (not for a fixed time:
/// under load a slow consumer would stop early and return an older record).
fn committed_txn(p: &Pipeline) -> (u64, String) {
    let recs = {
        let c: BaseConsumer = client()
            .set("group.id", unique("unmarked_offsets"))
            .set("isolation.level", "read_committed")
            .set("enable.auto.commit", "false")
            .create()
            .expect("consumer");
        let (_, stable_end) = c
            .fetch_watermarks(&p.offsets_topic, 0, Duration::from_secs(30))
            .expect("offsets topic watermarks");
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&p.offsets_topic, 0, rdkafka::Offset::Beginning)
            .expect("tpl");
        c.assign(&tpl).expect("assign");
        let mut last = None;
        let started = Instant::now();
        loop {
            let position = c
                .position()
                .ok()
                .and_then(|tpl| tpl.find_partition(&p.offsets_topic, 0).map(|e| e.offset()))
                .and_then(|o| match o {
                    rdkafka::Offset::Offset(o) => Some(o),
                    _ => None,
                });
            if position.is_some_and(|o| o >= stable_end) {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "{}: not read up to its last stable offset {stable_end} in 120 s (at {position:?})",
                p.offsets_topic
            );
            if let Some(Ok(m)) = c.poll(Duration::from_millis(100)) {
                if m.key() == Some(p.name.as_bytes()) {
                    last = m.payload().map(<[u8]>::to_vec);
                }
            }
        }
        last.expect("an offset record")
    };
    let v: serde_json::Value = serde_json::from_slice(&recs).expect("offset record JSON");
    let txn = v["txn"].as_u64().unwrap_or_else(|| panic!("no txn in {v}"));
    let attempt = v["attempt"]
        .as_str()
        .filter(|a| a.len() == 16)
        .unwrap_or_else(|| panic!("no attempt in {v}"))
        .to_string();
    (txn, attempt)
}

/// Waits until `topic`'s only partition has (`leaderless`) or has not lost its leader.
fn wait_leader(topic: &str, leaderless: bool) {
    let started = Instant::now();
    loop {
        let state = cluster::partitions(&cluster::bootstrap(), topic);
        if let Ok(ps) = &state {
            if ps.iter().all(|p| (p.leader < 0) == leaderless) {
                return;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "{topic}: waited 90 s for its partition to be {}: {state:?}",
            if leaderless {
                "without a leader"
            } else {
                "led again"
            }
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn services(action: &str, name: &str) {
    chaos::services(action, name, Duration::from_secs(180))
        .unwrap_or_else(|e| panic!("scripts/services {action} {name}: {e}"));
}

/// Ends one transaction of the pipeline's transactional id with the partition's only node
/// down, so Kafka skips the partition's marker; asserts the record is left open there.
fn end_without_marker(
    txn_id: &str,
    topic: &str,
    node: i32,
    record: (&str, &str),
    tag: &str,
    commit: bool,
) {
    let producer: BaseProducer = client()
        .set("transactional.id", txn_id)
        .set("transaction.timeout.ms", "60000")
        .create()
        .expect("producer");
    producer
        .init_transactions(Duration::from_secs(60))
        .expect("init_transactions");
    producer.begin_transaction().expect("begin");
    producer
        .send(
            BaseRecord::<str, str>::to(topic)
                .partition(0)
                .key(record.0)
                .payload(record.1)
                .headers(OwnedHeaders::new().insert(Header {
                    key: "sluice.txn",
                    value: Some(tag),
                })),
        )
        .map_err(|(e, _)| e)
        .expect("send");
    producer.flush(Duration::from_secs(30)).expect("flush");
    let node_name = cluster::node_name(node).expect("node");
    services("stop", node_name);
    wait_leader(topic, true);
    if commit {
        producer
            .commit_transaction(Duration::from_secs(60))
            .expect("commit with the partition's node down");
    } else {
        producer
            .abort_transaction(Duration::from_secs(60))
            .expect("abort with the partition's node down");
    }
    drop(producer);
    services("start", node_name);
    wait_leader(topic, false);
    let (lso, high) = lso_and_high(topic);
    assert!(
        lso < high,
        "{topic}: Kafka wrote the marker although the partition had no leader (LSO {lso}, high \
         watermark {high}): this Kafka does not reproduce records left without a marker"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn records_kafka_left_without_a_marker_follow_their_transaction() {
    let Some(flavor) = flavors().into_iter().next() else {
        return;
    };
    let bootstrap = cluster::bootstrap();
    let p = cluster::pipeline(flavor, "unmarked", "\ntransaction_timeout_ms = 20000");
    let txn_id = format!("sluice-{}", p.name);
    let (mut c, mut child) = p
        .start_with(&[
            ("a", "(id INT PRIMARY KEY, pad VARCHAR(10))"),
            ("c", "(id INT PRIMARY KEY, pad VARCHAR(10))"),
        ])
        .await;
    // The partitions live on a node that is not the coordinator of the pipeline's
    // transactional id (which must stay up to end the transactions); it is known once
    // sluice has fenced. sluice creates a data topic at its first row: these come first.
    let coordinator = cluster::coordinator(&bootstrap, &txn_id)
        .unwrap_or_else(|e| panic!("the coordinator of {txn_id}: {e}"));
    let node = (1..=3).find(|n| *n != coordinator).expect("a node");
    let (aborted_topic, committed_topic) = (p.topic("a"), p.topic("c"));
    create_on_node(&aborted_topic, node);
    create_on_node(&committed_topic, node);
    let db = p.db.clone();
    exec(&mut c, &[&format!("USE {db}")]).await;
    for t in ["a", "c"] {
        exec(
            &mut c,
            &[&flavor.insert_seq(&format!("{db}.{t}"), 1, 20, "x")],
        )
        .await;
    }
    for t in [&aborted_topic, &committed_topic] {
        assert_eq!(
            committed(t, 20, Duration::from_secs(60)).len(),
            20,
            "{t}: first 20 rows"
        );
    }
    terminate(&mut child);
    let (txn, attempt) = committed_txn(&p);
    assert!(
        txn >= 1,
        "the committed offset record counts transactions: {txn}"
    );

    // The one the coordinator aborted, tagged with the committed transaction's number and
    // another attempt, and the one it committed, tagged with the committed attempt.
    let other = if attempt == "0000000000000001" {
        "0000000000000002"
    } else {
        "0000000000000001"
    };
    let never = format!("{}:{txn}/{other}", p.name);
    end_without_marker(
        &txn_id,
        &aborted_topic,
        node,
        ("{\"id\":-1}", "aborted"),
        &never,
        false,
    );
    let done = format!("{}:{txn}/{attempt}", p.name);
    end_without_marker(
        &txn_id,
        &committed_topic,
        node,
        ("{\"id\":-2}", "committed"),
        &done,
        true,
    );

    for t in ["a", "c"] {
        exec(
            &mut c,
            &[&flavor.insert_seq(&format!("{db}.{t}"), 21, 40, "y")],
        )
        .await;
    }
    let _child = p.spawn();
    let a = committed(&aborted_topic, 40, Duration::from_secs(120));
    let cc = committed(&committed_topic, 41, Duration::from_secs(120));
    let log = p.log();
    assert!(
        !a.iter().any(|(k, _)| k == "{\"id\":-1}"),
        "{aborted_topic}: the record of the aborted transaction became visible:\n{a:?}\n{log}"
    );
    assert_eq!(
        a.len(),
        40,
        "{aborted_topic}: 40 rows once each:\n{a:?}\n{log}"
    );
    assert_eq!(
        cc.iter().filter(|(k, _)| k == "{\"id\":-2}").count(),
        1,
        "{committed_topic}: the record of the committed transaction is there once:\n{cc:?}\n{log}"
    );
    assert_eq!(
        cc.len(),
        41,
        "{committed_topic}: 40 rows and that record:\n{cc:?}\n{log}"
    );
    assert!(
        log.contains(
            "aborted this pipeline's records that Kafka left without a transaction marker"
        ),
        "the abort is logged:\n{log}"
    );
    assert!(
        log.contains("wrote again the records of a committed transaction"),
        "the committed attempt's records are written again:\n{log}"
    );
    let (after, _) = committed_txn(&p);
    assert!(
        after >= txn + 2,
        "the repair committed its intent and its copies as transactions of their own: {after} after {txn}"
    );
    for (lso, high) in [lso_and_high(&aborted_topic), lso_and_high(&committed_topic)] {
        assert_eq!(lso, high, "nothing is left open");
    }
    eprintln!(
        "[{}] unmarked records: aborted one never visible, committed one visible once; 40 + 41 records",
        flavor.name
    );
}
