//! The committed state under faults around the offsets topic:
//!
//! * a foreign transaction left open on a shared offsets topic: the reader waits for the high
//!   watermark taken after fencing instead of resuming from an older record (which wrote the
//!   rows after it a second time), tells how to abort the hanging transaction, and goes on once
//!   it ends;
//! * offsets and schema history in topics of each pipeline's own by default, and the one-time
//!   move of a committed offset out of the shared `_sluice_offsets`;
//! * a deleted offsets topic: the run refuses to start over silently, `--start-over` does.

mod support;

use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use sluice::error::ErrorKind;
use sluice::sink::reader::{self, Until};
use support::*;

fn client() -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", KAFKA);
    c
}

fn admin() -> AdminClient<DefaultClientContext> {
    client().create().expect("admin")
}

/// Creates a compacted single-partition topic (as sluice creates its own).
fn create_compacted(name: &str) {
    create_topic(
        name,
        1,
        &[
            ("cleanup.policy", "compact"),
            ("min.compaction.lag.ms", "0"),
        ],
    );
}

/// Deletes a topic and waits until the metadata no longer lists it.
fn delete_topic(name: &str) {
    let res = futures_executor::block_on(admin().delete_topics(&[name], &AdminOptions::new()))
        .expect("delete");
    for r in res {
        r.unwrap_or_else(|e| panic!("delete {name}: {e:?}"));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while topic_exists(name) {
        assert!(
            Instant::now() < deadline,
            "topic {name} still listed 60 s after deletion"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn topic_exists(name: &str) -> bool {
    let c: BaseConsumer = client().create().expect("consumer");
    let md = c
        .fetch_metadata(Some(name), Duration::from_secs(10))
        .expect("metadata");
    md.topics()
        .iter()
        .any(|t| t.name() == name && t.error().is_none() && !t.partitions().is_empty())
}

/// `(partitions, cleanup.policy)` of a topic.
fn topic_shape(name: &str) -> (usize, String) {
    use rdkafka::admin::ResourceSpecifier;
    let c: BaseConsumer = client().create().expect("consumer");
    let md = c
        .fetch_metadata(Some(name), Duration::from_secs(10))
        .expect("metadata");
    let parts = md
        .topics()
        .iter()
        .find(|t| t.name() == name)
        .map_or(0, |t| t.partitions().len());
    let res = futures_executor::block_on(
        admin().describe_configs([&ResourceSpecifier::Topic(name)], &AdminOptions::new()),
    )
    .expect("describe");
    let policy = res
        .into_iter()
        .next()
        .and_then(|r| r.ok())
        .and_then(|r| {
            r.entries
                .iter()
                .find(|e| e.name == "cleanup.policy")
                .and_then(|e| e.value.clone())
        })
        .unwrap_or_default();
    (parts, policy)
}

/// Sum of `high - low` over a topic's partitions (every record, markers included).
fn topic_extent(name: &str) -> i64 {
    let c: BaseConsumer = client().create().expect("consumer");
    let md = c
        .fetch_metadata(Some(name), Duration::from_secs(10))
        .expect("metadata");
    let Some(t) = md.topics().iter().find(|t| t.name() == name) else {
        return 0;
    };
    t.partitions()
        .iter()
        .map(|p| {
            let (lo, hi) = c
                .fetch_watermarks(name, p.id(), Duration::from_secs(10))
                .expect("watermarks");
            hi - lo
        })
        .sum()
}

/// A transactional producer of the test's own (not sluice): `transaction.timeout.ms` long
/// enough that its open transaction outlives the test unless ended on purpose.
fn foreign_producer(txn_timeout_ms: u32) -> BaseProducer {
    let p: BaseProducer = client()
        .set("transactional.id", unique("foreign"))
        .set("transaction.timeout.ms", txn_timeout_ms.to_string())
        .create()
        .expect("producer");
    p.init_transactions(Duration::from_secs(30))
        .expect("init_transactions");
    p
}

/// Produces `(key, value)` records in one transaction and commits (`commit`) or leaves it open.
fn produce_txn(p: &BaseProducer, topic: &str, records: &[(&str, Option<&str>)], commit: bool) {
    p.begin_transaction().expect("begin");
    for (k, v) in records {
        let mut rec = BaseRecord::<str, str>::to(topic).key(*k);
        if let Some(v) = v {
            rec = rec.payload(*v);
        }
        p.send(rec).map_err(|(e, _)| e).expect("send");
    }
    p.flush(Duration::from_secs(30)).expect("flush");
    if commit {
        p.commit_transaction(Duration::from_secs(30))
            .expect("commit");
    }
}

fn read_latest(
    topic: &str,
    key: &str,
    until: Until,
    timeout: Duration,
) -> sluice::error::Result<Option<String>> {
    let map = reader::read_committed_latest(
        &client(),
        topic,
        &unique("test-reader"),
        |k| k == key.as_bytes(),
        until,
        timeout,
    )?;
    Ok(map
        .get(key.as_bytes())
        .map(|v| String::from_utf8_lossy(v).into_owned()))
}

/// The reader alone: a record committed after a foreign transaction opened (so above the LSO
/// it holds back) is the committed state; the reader does not accept the older value it could
/// read up to the LSO, fails as transient naming the stuck offset, the key there and the abort
/// command, and returns the newest value once the foreign transaction ends (aborted, then
/// committed).
#[test]
fn the_reader_waits_for_a_foreign_transaction_below_the_captured_high_watermark() {
    for end_by_commit in [false, true] {
        let topic = unique("t_reader_lso");
        create_compacted(&topic);
        let own = foreign_producer(60_000);
        produce_txn(&own, &topic, &[("p", Some("v1"))], true);
        produce_txn(&own, &topic, &[("p", Some("v2"))], true);
        let lso = topic_extent(&topic);
        let foreign = foreign_producer(300_000);
        produce_txn(&foreign, &topic, &[("other-pipeline", Some("x"))], false);
        produce_txn(&own, &topic, &[("p", Some("v3"))], true);

        // Up to the first end (the LSO), only v2 is visible: what the old reader resumed from.
        let first_end = read_latest(&topic, "p", Until::FirstEnd, Duration::from_secs(20));
        assert_eq!(first_end.unwrap().as_deref(), Some("v2"));

        let started = Instant::now();
        let e = read_latest(&topic, "p", Until::CapturedHigh, Duration::from_secs(3))
            .expect_err("must not accept the state below the foreign transaction");
        let msg = e.to_string();
        assert_eq!(e.kind(), ErrorKind::Transient, "{msg}");
        assert!(
            started.elapsed() >= Duration::from_secs(3),
            "waited the timeout"
        );
        for needle in [
            topic.as_str(),
            &format!("stays at {lso}"),
            "`other-pipeline`",
            "find-hanging --broker-id",
            &format!("abort --topic {topic} --partition 0 --start-offset {lso}"),
            KAFKA,
        ] {
            assert!(
                msg.contains(needle),
                "error should contain {needle:?}: {msg}"
            );
        }

        // The foreign transaction ends while the reader waits: it then returns v3.
        let t = topic.clone();
        let waiting = std::thread::spawn(move || {
            read_latest(&t, "p", Until::CapturedHigh, Duration::from_secs(60))
        });
        std::thread::sleep(Duration::from_secs(2));
        assert!(!waiting.is_finished(), "the reader must still wait");
        if end_by_commit {
            foreign
                .commit_transaction(Duration::from_secs(30))
                .expect("commit");
        } else {
            foreign
                .abort_transaction(Duration::from_secs(30))
                .expect("abort");
        }
        let got = waiting.join().expect("reader thread");
        assert_eq!(
            got.unwrap().as_deref(),
            Some("v3"),
            "commit={end_by_commit}"
        );
        delete_topic(&topic);
    }
}

/// The last entries of a topic are often control markers or aborted records, so no message
/// has offset `high - 1`: the reader still finishes at once (by its position), and a
/// tombstone removes the key.
#[test]
fn the_reader_finishes_over_trailing_markers_and_aborted_records() {
    let topic = unique("t_reader_markers");
    create_compacted(&topic);
    let p = foreign_producer(60_000);
    produce_txn(&p, &topic, &[("p", Some("v1")), ("q", Some("w1"))], true);
    // An aborted transaction at the end: its records and marker are skipped.
    produce_txn(&p, &topic, &[("p", Some("aborted"))], false);
    p.abort_transaction(Duration::from_secs(30)).expect("abort");
    let started = Instant::now();
    let got = read_latest(&topic, "p", Until::CapturedHigh, Duration::from_secs(20)).unwrap();
    assert_eq!(got.as_deref(), Some("v1"));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "finished by position, took {:?}",
        started.elapsed()
    );
    produce_txn(&p, &topic, &[("p", None)], true);
    let got = read_latest(&topic, "p", Until::CapturedHigh, Duration::from_secs(20)).unwrap();
    assert_eq!(got, None, "a tombstone removes the key");
    // A missing topic reads as empty.
    let none = read_latest(
        &unique("t_missing"),
        "p",
        Until::CapturedHigh,
        Duration::from_secs(5),
    );
    assert_eq!(none.unwrap(), None);
    delete_topic(&topic);
}

/// The lost-offsets guard counts committed records only: a topic with nothing but an aborted
/// transaction (a first attempt that crashed before its first commit) is no evidence.
#[test]
fn only_committed_records_count_as_a_past() {
    let topic = unique("t_past");
    create_compacted(&topic);
    let p = foreign_producer(60_000);
    produce_txn(&p, &topic, &[("k", Some("v"))], false);
    p.abort_transaction(Duration::from_secs(30)).expect("abort");
    let high = topic_extent(&topic);
    assert!(high >= 2, "record and abort marker");
    let past = |t: &str| {
        reader::holds_committed_records(
            &client(),
            t,
            &[(0, topic_extent(t))],
            Duration::from_secs(20),
        )
    };
    assert!(!past(&topic).unwrap(), "aborted records are no past");
    produce_txn(&p, &topic, &[("k", Some("v"))], true);
    assert!(past(&topic).unwrap(), "a committed record is");
    delete_topic(&topic);
}

// ------------------------------------------------------------------ with sluice and a database

/// Waits until the log of `p` contains `needle` (`times` times).
fn wait_log(p: &Pipeline, needle: &str, times: usize, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    loop {
        let log = p.log();
        if log.matches(needle).count() >= times {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "[{}] no {needle:?} (x{times}) in the log within {timeout:?}:\n{log}",
            p.flavor.name
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The committed records of a topic, once `want` arrived (and nothing more within 3 s).
fn committed(topic: &str, want: usize) -> Vec<Rec> {
    consume(
        &[topic.to_string()],
        "read_committed",
        want,
        Duration::from_secs(3),
        Duration::from_secs(120),
    )
}

/// The `id` keys of records, sorted.
fn ids(recs: &[Rec]) -> Vec<i64> {
    let mut ids: Vec<i64> = recs
        .iter()
        .filter(|r| r.value.is_some())
        .map(|r| r.key.as_ref().expect("key")["id"].as_i64().expect("id"))
        .collect();
    ids.sort_unstable();
    ids
}

fn ops(recs: &[Rec], op: &str) -> usize {
    recs.iter()
        .filter(|r| r.value.as_ref().is_some_and(|v| v["op"] == op))
        .count()
}

/// Removes the explicit `kafka.offsets_topic` the test pipelines set: the defaults apply.
fn use_default_topics(p: &Pipeline) {
    p.edit_config(&format!("offsets_topic = \"{}\"\n", p.offsets_topic), "");
}

/// Spawns `sluice run --start-over` on the pipeline, its log in `log`.
fn spawn_start_over(p: &Pipeline, log: &std::path::Path) -> KillOnDrop {
    KillOnDrop(
        sluice_command()
            .args(["run", "--start-over", "--config"])
            .arg(&p.config)
            .env("SLUICE_LOG", "info")
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(log).expect("log"))
            .spawn()
            .expect("spawn sluice"),
    )
}

/// Item: 100 rows; another producer opens a transaction on the (shared) offsets topic and
/// leaves it open; 100 more rows; SIGKILL; restart. The restart must not resume from the
/// offset it can read below the open transaction (that wrote rows 101–200 again): it waits,
/// fails as transient with the advice on hanging transactions, retries, and resumes from the
/// newest committed offset once the foreign transaction is aborted.
async fn a_foreign_open_transaction_on_a_shared_offsets_topic_repeats_nothing(flavor: Flavor) {
    let name = flavor.name;
    let p = Pipeline::new(flavor, "lso", "");
    p.edit_config(
        &format!("offsets_topic = \"{}\"", p.offsets_topic),
        &format!(
            "offsets_topic = \"{}\"\ntransaction_timeout_ms = 10000",
            p.offsets_topic
        ),
    );
    let db = p.db.clone();
    let (mut c, mut child) = p
        .start_with(&[("t", "(id INT PRIMARY KEY, pad VARCHAR(10))")])
        .await;
    // MariaDB's sequence tables live in the current database.
    exec(&mut c, &[&format!("USE {}", p.db)]).await;
    let topic = p.topic("t");
    exec(
        &mut c,
        &[&flavor.insert_seq(&format!("{db}.t"), 1, 100, "a")],
    )
    .await;
    assert_eq!(committed(&topic, 100).len(), 100, "[{name}] first 100 rows");
    let foreign = foreign_producer(600_000);
    produce_txn(
        &foreign,
        &p.offsets_topic,
        &[("other-pipeline", Some("{}"))],
        false,
    );
    exec(
        &mut c,
        &[&flavor.insert_seq(&format!("{db}.t"), 101, 200, "b")],
    )
    .await;
    assert_eq!(committed(&topic, 200).len(), 200, "[{name}] 200 rows");
    child.kill().expect("kill -9");
    let _ = child.wait();
    let lso = {
        let c: BaseConsumer = client()
            .set("isolation.level", "read_committed")
            .create()
            .expect("consumer");
        c.fetch_watermarks(&p.offsets_topic, 0, Duration::from_secs(10))
            .expect("lso")
            .1
    };

    let mut child = p.spawn();
    // It waits, tells how to abort the hanging transaction, fails as transient and retries.
    wait_log(&p, "find-hanging --broker-id", 1, Duration::from_secs(60));
    wait_log(
        &p,
        "transient error; reconnecting",
        1,
        Duration::from_secs(60),
    );
    let log = p.log();
    assert!(
        log.contains(&format!("--start-offset {lso}")) && log.contains("`other-pipeline`"),
        "[{name}] the advice names the stuck offset {lso} and the key there:\n{log}"
    );
    assert!(
        !log.contains("resuming from the committed offset"),
        "[{name}] must not resume while the foreign transaction is open:\n{log}"
    );
    assert_eq!(
        committed(&topic, usize::MAX).len(),
        200,
        "[{name}] nothing written while waiting"
    );
    foreign
        .abort_transaction(Duration::from_secs(30))
        .expect("abort the foreign transaction");
    wait_log(
        &p,
        "resuming from the committed offset",
        1,
        Duration::from_secs(120),
    );
    exec(
        &mut c,
        &[&flavor.insert_seq(&format!("{db}.t"), 201, 300, "c")],
    )
    .await;
    let recs = committed(&topic, 300);
    terminate(&mut child);
    let got = ids(&recs);
    let want: Vec<i64> = (1..=300).collect();
    let dups = got.windows(2).filter(|w| w[0] == w[1]).count();
    assert_eq!(
        (got.len(), dups),
        (300, 0),
        "[{name}] 300 rows, none twice; log:\n{}",
        p.log()
    );
    assert_eq!(got, want, "[{name}] every row once");
    eprintln!("[{name}] foreign open transaction: 300 rows, 0 duplicates, 0 missing");
}

/// A transaction another producer leaves open on a data partition: a restarted pipeline
/// reports the held partition after fencing (topic, partition, offset and the Kafka commands,
/// see `src/sink/hanging.rs`) and streams on (only its own producer id's unmarked records would
/// be taken into its next transaction), counting the commit markers it cannot verify there;
/// once Kafka's `TransactionsCommand abort` ends the foreign transaction, every row is there
/// once and the foreign record never.
async fn a_foreign_transaction_open_on_a_data_partition_is_reported(flavor: Flavor) {
    let name = flavor.name;
    let p = Pipeline::new(flavor, "hang", "");
    p.edit_config(
        &format!("offsets_topic = \"{}\"", p.offsets_topic),
        &format!(
            "offsets_topic = \"{}\"\ntransaction_timeout_ms = 10000",
            p.offsets_topic
        ),
    );
    let db = p.db.clone();
    let (mut c, mut child) = p
        .start_with(&[("t", "(id INT PRIMARY KEY, pad VARCHAR(10))")])
        .await;
    exec(&mut c, &[&format!("USE {}", p.db)]).await;
    let topic = p.topic("t");
    exec(
        &mut c,
        &[&flavor.insert_seq(&format!("{db}.t"), 1, 50, "a")],
    )
    .await;
    assert_eq!(committed(&topic, 50).len(), 50, "[{name}] first 50 rows");
    terminate(&mut child);

    let foreign = foreign_producer(600_000);
    foreign.begin_transaction().expect("begin");
    foreign
        .send(
            BaseRecord::<str, str>::to(&topic)
                .partition(0)
                .key("{\"id\":-1}")
                .payload("{}"),
        )
        .map_err(|(e, _)| e)
        .expect("send");
    foreign.flush(Duration::from_secs(30)).expect("flush");
    let lso = {
        let c: BaseConsumer = client()
            .set("isolation.level", "read_committed")
            .create()
            .expect("consumer");
        c.fetch_watermarks(&topic, 0, Duration::from_secs(10))
            .expect("lso")
            .1
    };
    exec(
        &mut c,
        &[&flavor.insert_seq(&format!("{db}.t"), 51, 100, "b")],
    )
    .await;

    let mut child = p.spawn();
    wait_log(
        &p,
        "held back by an open transaction",
        1,
        Duration::from_secs(90),
    );
    let log = p.log();
    let advice = format!("abort --topic {topic} --partition 0 --start-offset {lso}");
    assert!(
        log.contains(&advice),
        "[{name}] the warning names the partition, the offset {lso} and the command:\n{log}"
    );
    wait_log(
        &p,
        "resuming from the committed offset",
        1,
        Duration::from_secs(120),
    );
    // Its commits of rows 51–100 into the held partition: the foreign transaction keeps the
    // partition's last stable offset below their records, so their commit markers cannot be
    // verified there and are counted unverified (had the check read the high watermark for
    // the LSO, they would count as verified).
    let addr = p.api_addr(Duration::from_secs(30));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = reqwest::get(format!("http://{addr}/metrics"))
            .await
            .expect("GET /metrics")
            .text()
            .await
            .expect("metrics text");
        let unverified: f64 = text
            .lines()
            .find(|l| {
                l.starts_with("sluice_commit_markers_total{") && l.contains("result=\"unverified\"")
            })
            .and_then(|l| l.rsplit_once(' '))
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0.0);
        if unverified >= 1.0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "[{name}] no commit into the held partition counted unverified within 60 s:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // What the error tells the operator to do, with Kafka's own tool.
    let out = std::process::Command::new(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/lib/kafka-run-class"),
    )
    .args([
        "org.apache.kafka.tools.TransactionsCommand",
        "--bootstrap-server",
        KAFKA,
        "abort",
        "--topic",
        &topic,
        "--partition",
        "0",
        "--start-offset",
        &lso.to_string(),
    ])
    .output()
    .expect("run TransactionsCommand");
    assert!(
        out.status.success(),
        "[{name}] abort: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recs = committed(&topic, 100);
    terminate(&mut child);
    let got = ids(&recs);
    let want: Vec<i64> = (1..=100).collect();
    assert_eq!(
        got,
        want,
        "[{name}] every row once, the open record never; log:\n{}",
        p.log()
    );
    drop(foreign);
    eprintln!(
        "[{name}] foreign open transaction on a data partition: 100 rows, 0 duplicates, 0 missing"
    );
}

/// By default a pipeline's offsets and schema history are in topics of its own, compacted
/// with one partition, and nothing of it goes to the shared topics.
async fn offsets_and_history_are_in_topics_of_the_pipelines_own(flavor: Flavor) {
    let name = flavor.name;
    let p = Pipeline::new(flavor, "own", "");
    use_default_topics(&p);
    let (mut c, mut child) = p
        .start_with(&[("t", "(id INT PRIMARY KEY, pad VARCHAR(10))")])
        .await;
    // MariaDB's sequence tables live in the current database.
    exec(&mut c, &[&format!("USE {}", p.db)]).await;
    exec(
        &mut c,
        &[&flavor.insert_seq(&format!("{}.t", p.db), 1, 10, "a")],
    )
    .await;
    assert_eq!(committed(&p.topic("t"), 10).len(), 10);
    let offsets = format!("_sluice_offsets.{}", p.name);
    let history = format!("_sluice_schema_history.{}", p.name);
    for t in [&offsets, &history] {
        assert_eq!(
            topic_shape(t),
            (1, "compact".to_string()),
            "[{name}] shape of {t}"
        );
    }
    let rec = read_latest(
        &offsets,
        &p.name,
        Until::CapturedHigh,
        Duration::from_secs(30),
    )
    .unwrap()
    .expect("offset record in the pipeline's own topic");
    assert!(rec.contains("\"position\""), "{rec}");
    let hkey = format!("{}/{}.t", p.name, p.db);
    let h = read_latest(
        &history,
        &hkey,
        Until::CapturedHigh,
        Duration::from_secs(30),
    )
    .unwrap();
    assert!(h.is_some(), "[{name}] history entry {hkey} in {history}");
    for shared in ["_sluice_offsets", "_sluice_schema_history"] {
        let map = reader::read_committed_latest(
            &client(),
            shared,
            &unique("test-reader"),
            |k| k.starts_with(p.name.as_bytes()),
            Until::CapturedHigh,
            Duration::from_secs(60),
        )
        .unwrap();
        assert!(
            map.is_empty(),
            "[{name}] nothing of the pipeline in {shared}"
        );
    }
    let (code, out) = p.command(&["check"]);
    assert_eq!(code, 0, "[{name}] check:\n{out}");
    assert!(
        out.contains(&format!("`{offsets}`")) && out.contains(&format!("`{history}`")),
        "[{name}] check names the topics:\n{out}"
    );
    terminate(&mut child);
}

/// A pipeline that an older sluice ran with the shared `_sluice_offsets` and
/// `_sluice_schema_history`: its first run with the per-pipeline defaults moves the committed
/// offset and history over (logged), resumes from it without a new snapshot, and never moves
/// anything again.
async fn a_committed_offset_in_the_shared_topic_is_moved_over_once(flavor: Flavor) {
    let name = flavor.name;
    let p = Pipeline::new(flavor, "migrate", "");
    let shared =
        "offsets_topic = \"_sluice_offsets\"\nschema_history_topic = \"_sluice_schema_history\"\n";
    p.edit_config(
        &format!("offsets_topic = \"{}\"\n", p.offsets_topic),
        shared,
    );
    p.edit_config("start = \"latest\"", "start = \"initial\"");
    let db = p.db.clone();
    let mut c = root(flavor.port).await;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {db}"),
            &format!("CREATE TABLE {db}.t (id INT PRIMARY KEY, pad VARCHAR(10))"),
            &format!("USE {db}"),
            &flavor.insert_seq(&format!("{db}.t"), 1, 50, "a"),
        ],
    )
    .await;
    let topic = p.topic("t");
    let mut child = p.spawn();
    p.wait_started(Duration::from_secs(60));
    // The snapshot reads the 50 rows there at the start; rows inserted before its chunk is
    // read would be read by it too (a read after their create, as the watermark algorithm
    // allows), so the next rows wait for it.
    assert_eq!(
        ops(&committed(&topic, 50), "r"),
        50,
        "[{name}] the snapshot"
    );
    exec(
        &mut c,
        &[&flavor.insert_seq(&format!("{db}.t"), 51, 100, "b")],
    )
    .await;
    assert_eq!(committed(&topic, 100).len(), 100);
    assert!(terminate(&mut child).success(), "[{name}] clean stop");

    p.edit_config(shared, "");
    let (code, out) = p.command(&["offsets", "show"]);
    assert!(
        code == 0
            && out.contains("\"position\"")
            && out.contains("in the shared `_sluice_offsets`"),
        "[{name}] show finds the offset in the shared topic:\n{out}"
    );
    let mut child = p.spawn();
    let moved = format!(
        "migrated the committed offset of pipeline {0} from _sluice_offsets to _sluice_offsets.{0}",
        p.name
    );
    wait_log(&p, &moved, 1, Duration::from_secs(60));
    wait_log(
        &p,
        "resuming from the committed offset",
        1,
        Duration::from_secs(60),
    );
    exec(
        &mut c,
        &[&flavor.insert_seq(&format!("{db}.t"), 101, 150, "c")],
    )
    .await;
    let recs = committed(&topic, 150);
    let got = ids(&recs);
    assert_eq!(
        got,
        (1..=150).collect::<Vec<_>>(),
        "[{name}] every row once"
    );
    assert_eq!(ops(&recs, "r"), 50, "[{name}] one snapshot, not two");
    assert!(terminate(&mut child).success());

    // Moved, not copied: the shared topics hold nothing of the pipeline any more.
    let own = read_latest(
        &format!("_sluice_offsets.{}", p.name),
        &p.name,
        Until::CapturedHigh,
        Duration::from_secs(30),
    )
    .unwrap();
    assert!(own.is_some(), "[{name}] offset in the pipeline's own topic");
    let old = read_latest(
        "_sluice_offsets",
        &p.name,
        Until::CapturedHigh,
        Duration::from_secs(60),
    );
    assert_eq!(old.unwrap(), None, "[{name}] tombstoned in _sluice_offsets");
    let hkey = format!("{}/{db}.t", p.name);
    let h_own = read_latest(
        &format!("_sluice_schema_history.{}", p.name),
        &hkey,
        Until::CapturedHigh,
        Duration::from_secs(30),
    );
    assert!(h_own.unwrap().is_some(), "[{name}] history moved");
    let h_old = read_latest(
        "_sluice_schema_history",
        &hkey,
        Until::CapturedHigh,
        Duration::from_secs(60),
    );
    assert_eq!(
        h_old.unwrap(),
        None,
        "[{name}] history tombstoned in the shared topic"
    );

    // Once: the next run resumes from its own topic.
    let mut child = p.spawn();
    wait_log(
        &p,
        "resuming from the committed offset",
        2,
        Duration::from_secs(60),
    );
    exec(
        &mut c,
        &[&flavor.insert_seq(&format!("{db}.t"), 151, 160, "d")],
    )
    .await;
    let recs = committed(&topic, 160);
    terminate(&mut child);
    assert_eq!(
        ids(&recs),
        (1..=160).collect::<Vec<_>>(),
        "[{name}] every row once"
    );
    assert_eq!(p.log().matches(&moved).count(), 1, "[{name}] moved once");
}

/// Item: the offsets topic is deleted. The next run finds the pipeline's past (its history,
/// then, with that deleted too, its data topic), stops with exit 1 naming what it found and
/// how to go on, and writes nothing; `--start-over` starts from `source.start` (a new
/// snapshot here).
async fn a_deleted_offsets_topic_stops_the_run_until_told_to_start_over(flavor: Flavor) {
    let name = flavor.name;
    let p = Pipeline::new(flavor, "lost", "");
    use_default_topics(&p);
    p.edit_config("start = \"latest\"", "start = \"initial\"");
    let db = p.db.clone();
    let mut c = root(flavor.port).await;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {db}"),
            &format!("CREATE TABLE {db}.t (id INT PRIMARY KEY, pad VARCHAR(10))"),
            &format!("USE {db}"),
            &flavor.insert_seq(&format!("{db}.t"), 1, 20, "a"),
        ],
    )
    .await;
    let topic = p.topic("t");
    let mut child = p.spawn();
    p.wait_started(Duration::from_secs(60));
    // The snapshot's rows first: rows inserted while its chunk is still to be read would be
    // both streamed and read (as the snapshot's design has it), 60 records instead of 40.
    assert_eq!(committed(&topic, 20).len(), 20, "[{name}] the snapshot");
    exec(
        &mut c,
        &[&flavor.insert_seq(&format!("{db}.t"), 21, 40, "b")],
    )
    .await;
    assert_eq!(committed(&topic, 40).len(), 40);
    assert!(terminate(&mut child).success());

    let offsets = format!("_sluice_offsets.{}", p.name);
    let history = format!("_sluice_schema_history.{}", p.name);
    delete_topic(&offsets);
    let extent = topic_extent(&topic);
    let mut child = p.spawn();
    let st = wait_exit(&mut child, Duration::from_secs(120));
    let log = p.log();
    assert_eq!(st.code(), Some(1), "[{name}] refused; log:\n{log}");
    for needle in [
        format!("has no committed offset in `{offsets}`, but it ran before"),
        format!("`{history}` holds"),
        "would take a new snapshot".to_string(),
        "sluice offsets set".to_string(),
        "--start-over".to_string(),
    ] {
        assert!(
            log.contains(&needle),
            "[{name}] log should contain {needle:?}:\n{log}"
        );
    }
    assert_eq!(topic_extent(&topic), extent, "[{name}] nothing written");

    // Without the history the data topic is the evidence.
    delete_topic(&history);
    let mut child = p.spawn();
    let st = wait_exit(&mut child, Duration::from_secs(120));
    let log = p.log();
    assert_eq!(st.code(), Some(1), "[{name}] refused again; log:\n{log}");
    let needle = format!(
        "the topic `{topic}`, which this pipeline's routes write to, holds committed records"
    );
    assert!(
        log.contains(&needle),
        "[{name}] names the data topic:\n{log}"
    );
    assert_eq!(topic_extent(&topic), extent, "[{name}] nothing written");

    // On purpose: a new snapshot from source.start.
    let dir = tempfile::tempdir().expect("tempdir");
    let log_path = dir.path().join("start-over.log");
    let mut child = spawn_start_over(&p, &log_path);
    let recs = committed(&topic, 80);
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    terminate(&mut child);
    assert!(
        log.contains("starting over at source.start (--start-over)"),
        "[{name}] start-over is logged:\n{log}"
    );
    assert_eq!(
        recs.len(),
        80,
        "[{name}] 40 rows, then a new snapshot of 40; log:\n{log}"
    );
    assert_eq!(ops(&recs, "r"), 60, "[{name}] 20 + 40 snapshot records");
}

per_flavor!(
    a_foreign_open_transaction_on_a_shared_offsets_topic_repeats_nothing,
    a_foreign_transaction_open_on_a_data_partition_is_reported,
    offsets_and_history_are_in_topics_of_the_pipelines_own,
    a_committed_offset_in_the_shared_topic_is_moved_over_once,
    a_deleted_offsets_topic_stops_the_run_until_told_to_start_over,
);
