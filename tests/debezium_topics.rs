//! Debezium's further topics. Transaction metadata (`[transaction_metadata]`): every source
//! transaction with rows gets exactly one `BEGIN` and one `END` record, written in the Kafka
//! transaction of its rows — proved through SIGKILLs (with heartbeats on as well) by an
//! independent `read_committed` consumer that matches each `END`'s counts against the data
//! records carrying that transaction's id. Heartbeats (`[heartbeat]`): paced records on an
//! idle source that leave the committed position where it was. And the envelope's three
//! resolutions of source and processing time (Debezium 3's `ts_ms`/`ts_us`/`ts_ns`).

mod support;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use mysql_async::prelude::*;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use support::*;

const TXN_METADATA: &str = "\n[transaction_metadata]\nenabled = true\n";

/// What the consumer saw of one transaction id on the metadata topic.
#[derive(Debug, Default)]
struct Framing {
    begins: Vec<i64>,
    ends: Vec<(i64, Value)>,
}

fn framing(recs: &[Rec]) -> BTreeMap<String, Framing> {
    let mut by_id: BTreeMap<String, Framing> = BTreeMap::new();
    for r in recs {
        let v = r
            .value
            .as_ref()
            .expect("no tombstones on the metadata topic");
        let id = v["id"].as_str().expect("id").to_string();
        assert_eq!(r.key, Some(json!({ "id": id })), "key of {v}");
        assert!(v["ts_ms"].as_i64().is_some_and(|t| t > 0), "ts_ms of {v}");
        let f = by_id.entry(id).or_default();
        match v["status"].as_str() {
            Some("BEGIN") => {
                assert_eq!(v["event_count"], Value::Null, "{v}");
                assert_eq!(v["data_collections"], Value::Null, "{v}");
                f.begins.push(r.offset);
            }
            Some("END") => f.ends.push((r.offset, v.clone())),
            other => panic!("status {other:?} in {v}"),
        }
    }
    by_id
}

/// Data envelopes (not tombstones) per transaction id and table.
type Events = HashMap<String, BTreeMap<String, u64>>;

fn events(recs: &[Rec]) -> Events {
    let mut out: Events = HashMap::new();
    for r in recs {
        let Some(v) = &r.value else { continue };
        let id = v["transaction"]["id"].as_str().expect("transaction.id");
        let table = format!(
            "{}.{}",
            v["source"]["db"].as_str().unwrap(),
            v["source"]["table"].as_str().unwrap()
        );
        *out.entry(id.to_string())
            .or_default()
            .entry(table)
            .or_default() += 1;
    }
    out
}

/// The `total_order`s of each transaction are exactly 1..=its events and each table's
/// `data_collection_order`s exactly 1..=its events there: no two events of a transaction
/// share a number (a key change's delete and create are two events), none is skipped.
fn check_orders(data: &[Rec]) {
    let mut total: HashMap<String, Vec<u64>> = HashMap::new();
    let mut per_table: HashMap<(String, String), Vec<u64>> = HashMap::new();
    for r in data {
        let Some(v) = &r.value else { continue };
        let t = &v["transaction"];
        let id = t["id"].as_str().expect("transaction.id").to_string();
        let table = v["source"]["table"].as_str().unwrap().to_string();
        total
            .entry(id.clone())
            .or_default()
            .push(t["total_order"].as_u64().expect("total_order"));
        per_table.entry((id, table)).or_default().push(
            t["data_collection_order"]
                .as_u64()
                .expect("data_collection_order"),
        );
    }
    for (id, mut orders) in total {
        orders.sort_unstable();
        let want: Vec<u64> = (1..=orders.len() as u64).collect();
        assert_eq!(orders, want, "total_order of transaction {id}");
    }
    for ((id, table), mut orders) in per_table {
        orders.sort_unstable();
        let want: Vec<u64> = (1..=orders.len() as u64).collect();
        assert_eq!(orders, want, "data_collection_order of {table} in {id}");
    }
}

/// Every transaction id in the data has one BEGIN and one END (BEGIN first), the END's counts
/// are the data's, and the metadata names no transaction the data lacks.
fn check_framing(meta: &[Rec], data: &[Rec]) -> usize {
    let framed = framing(meta);
    let events = events(data);
    for (id, tables) in &events {
        let f = framed
            .get(id)
            .unwrap_or_else(|| panic!("transaction {id} has rows but no BEGIN/END"));
        assert_eq!(f.begins.len(), 1, "BEGIN records of {id}: {f:?}");
        assert_eq!(f.ends.len(), 1, "END records of {id}: {f:?}");
        let (end_at, end) = &f.ends[0];
        assert!(f.begins[0] < *end_at, "BEGIN after END for {id}");
        let total: u64 = tables.values().sum();
        assert_eq!(
            end["event_count"],
            json!(total),
            "event_count of {id}: {end}"
        );
        let listed: BTreeMap<String, u64> = end["data_collections"]
            .as_array()
            .expect("data_collections")
            .iter()
            .map(|c| {
                (
                    c["data_collection"].as_str().unwrap().to_string(),
                    c["event_count"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(&listed, tables, "data_collections of {id}: {end}");
        // On MySQL the END carries the commit time the rows' source block has (milliseconds
        // from the GTID event), as Debezium's; MariaDB's is the commit event's second.
        let source = data
            .iter()
            .filter_map(|r| r.value.as_ref())
            .find(|v| v["transaction"]["id"] == json!(id))
            .map(|v| v["source"].clone())
            .expect("a row of the transaction");
        if source["connector"] == "mysql" {
            assert_eq!(end["ts_ms"], source["ts_ms"], "END ts_ms of {id}: {end}");
        } else {
            assert!(
                end["ts_ms"].as_i64() >= source["ts_ms"].as_i64(),
                "END before the rows' source time in {id}: {end} / {source}"
            );
        }
    }
    let extra: Vec<&String> = framed
        .keys()
        .filter(|id| !events.contains_key(*id))
        .collect();
    assert!(extra.is_empty(), "BEGIN/END without rows: {extra:?}");
    events.len()
}

/// One source transaction of the workload: inserts into both tables, an update, a key change
/// or a delete, chosen at random.
async fn random_txn(c: &mut mysql_async::Conn, db: &str, rng: &mut impl Rng, next: &mut i64) {
    let mut t = c
        .start_transaction(Default::default())
        .await
        .expect("begin");
    let k = rng.random_range(1..=*next);
    match rng.random_range(0..4) {
        0 => {
            *next += 1;
            let n = *next;
            t.query_drop(format!("INSERT INTO {db}.a VALUES ({n}, 0)"))
                .await
                .expect("insert a");
            t.query_drop(format!("INSERT INTO {db}.b VALUES ({n}, 'x')"))
                .await
                .expect("insert b");
        }
        1 => t
            .query_drop(format!(
                "UPDATE {db}.a SET v = v + 1 WHERE id <= {k} LIMIT 3"
            ))
            .await
            .expect("update"),
        // A key change: delete + create in the data, two events.
        2 => {
            let top: Option<i64> = t
                .query_first(format!("SELECT MAX(id) FROM {db}.a WHERE id < 1000000"))
                .await
                .expect("max")
                .flatten();
            if let Some(top) = top {
                t.query_drop(format!(
                    "UPDATE {db}.a SET id = id + 1000000 WHERE id = {top}"
                ))
                .await
                .expect("key change");
            }
        }
        _ => t
            .query_drop(format!("DELETE FROM {db}.b WHERE id = {k}"))
            .await
            .expect("delete"),
    }
    // Every transaction changes at least one row, so each has rows in the data.
    t.query_drop(format!(
        "UPDATE {db}.b SET s = IF(s = 'y', 'z', 'y') WHERE id = 0"
    ))
    .await
    .expect("touch");
    t.commit().await.expect("commit");
}

async fn every_transaction_is_framed_once_through_kills(flavor: Flavor) {
    let p = Pipeline::new(
        flavor,
        "txmeta",
        &format!("{TXN_METADATA}\n[heartbeat]\ninterval_ms = 200\n"),
    );
    let db = p.db.clone();
    let (mut c, mut child) = p
        .start_with(&[
            ("a", "(id INT PRIMARY KEY, v INT NOT NULL)"),
            ("b", "(id INT PRIMARY KEY, s VARCHAR(10) NOT NULL)"),
        ])
        .await;
    exec(
        &mut c,
        &[
            &format!("INSERT INTO {db}.a VALUES (1, 0)"),
            &format!("INSERT INTO {db}.b VALUES (0, 'x'), (1, 'x')"),
        ],
    )
    .await;
    let txns = env_usize("SLUICE_TEST_TXMETA_TXNS", 400);
    let seed: u64 = rand::random();
    eprintln!("[{}] {txns} transactions, seed {seed}", flavor.name);
    let port = flavor.port;
    let db2 = db.clone();
    let workload = tokio::spawn(async move {
        let mut c = root(port).await;
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut next = 1i64;
        for _ in 0..txns {
            random_txn(&mut c, &db2, &mut rng, &mut next).await;
        }
    });
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 1);
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(rng.random_range(300..1200))).await;
        child.kill().expect("kill -9");
        let _ = child.wait();
        child = p.spawn();
    }
    workload.await.expect("workload");
    // The 2 set-up statements and every workload transaction, each with rows.
    let want_txns = 2 + txns;
    let meta_topic = format!("{}.transaction", p.name);
    let meta = consume(
        std::slice::from_ref(&meta_topic),
        "read_committed",
        2 * want_txns,
        Duration::from_secs(3),
        Duration::from_secs(180),
    );
    terminate(&mut child);
    let data = consume(
        &[p.topic("a"), p.topic("b")],
        "read_committed",
        usize::MAX,
        Duration::from_secs(3),
        Duration::from_secs(180),
    );
    let framed = check_framing(&meta, &data);
    check_orders(&data);
    assert_eq!(
        framed,
        want_txns,
        "transactions with rows; log:\n{}",
        p.log()
    );
    assert_eq!(meta.len(), 2 * want_txns, "BEGIN + END per transaction");
    eprintln!(
        "[{}] {framed} transactions, {} data records, {} metadata records: each framed once",
        flavor.name,
        data.len(),
        meta.len()
    );
}

/// Avro records on the metadata topic decode with the registered schemas (Confluent's own
/// client), and say what the JSON ones say.
async fn avro_records_decode_with_confluents_client(flavor: Flavor) {
    let p = Pipeline::new(
        flavor,
        "txmeta_avro",
        &format!(
            "{TXN_METADATA}format = \"avro\"\n\n[schema_registry]\nurl = \"{}\"\n",
            registry_url()
        ),
    );
    let db = p.db.clone();
    let (mut c, mut child) = p
        .start_with(&[
            ("a", "(id INT PRIMARY KEY, v INT)"),
            ("b", "(id INT PRIMARY KEY)"),
        ])
        .await;
    let mut t = c.start_transaction(Default::default()).await.unwrap();
    t.query_drop(format!("INSERT INTO {db}.a VALUES (1, 1), (2, 2)"))
        .await
        .unwrap();
    t.query_drop(format!("INSERT INTO {db}.b VALUES (1)"))
        .await
        .unwrap();
    t.commit().await.unwrap();
    let recs = avro_consume(&format!("{}.transaction", p.name), 2);
    terminate(&mut child);
    assert_eq!(recs.len(), 2, "{recs:?}");
    let (begin, end) = (&recs[0]["value"], &recs[1]["value"]);
    let id = begin["id"].as_str().expect("id");
    assert_eq!(recs[0]["key"], json!({ "id": id }));
    assert_eq!(begin["status"], "BEGIN");
    assert_eq!(end["status"], "END");
    assert_eq!(end["id"], begin["id"]);
    assert_eq!(end["event_count"], 3, "{end}");
    let tables: Vec<(String, i64)> = end["data_collections"]
        .as_array()
        .expect("data_collections")
        .iter()
        .map(|c| {
            (
                c["data_collection"].as_str().unwrap().to_string(),
                c["event_count"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(tables, [(format!("{db}.a"), 2), (format!("{db}.b"), 1)]);
}

/// On an idle pipeline, heartbeats arrive at their interval (not faster), keyed by the
/// pipeline, and the committed position never goes back (other tests share the server, so it
/// may move on with their binlog).
async fn heartbeats_pace_an_idle_pipeline_and_keep_its_position(flavor: Flavor) {
    let p = Pipeline::new(flavor, "heartbeat", "\n[heartbeat]\ninterval_ms = 300\n");
    let db = p.db.clone();
    let (mut c, mut child) = p.start_with(&[("a", "(id INT PRIMARY KEY)")]).await;
    exec(&mut c, &[&format!("INSERT INTO {db}.a VALUES (1)")]).await;
    let topic = format!("__debezium-heartbeat.{}", p.name);
    // A first heartbeat proves the pipeline streams; then an idle stretch.
    consume(
        std::slice::from_ref(&topic),
        "read_committed",
        1,
        Duration::ZERO,
        Duration::from_secs(60),
    );
    let (code, before) = p.command(&["offsets", "show"]);
    assert_eq!(code, 0, "{before}");
    let idle = Duration::from_secs(4);
    tokio::time::sleep(idle).await;
    let (code, after) = p.command(&["offsets", "show"]);
    assert_eq!(code, 0, "{after}");
    terminate(&mut child);
    let beats = consume(
        std::slice::from_ref(&topic),
        "read_committed",
        usize::MAX,
        Duration::from_secs(2),
        Duration::from_secs(30),
    );
    let position = |text: &str| -> String {
        let v: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"));
        v["position"][flavor.gtid_key()]
            .as_str()
            .unwrap_or_else(|| panic!("no GTID position in {text}"))
            .to_string()
    };
    assert!(
        flavor.gtid_contains(&position(&after), &position(&before)),
        "the committed position went back: {before} then {after}"
    );
    let ts: Vec<i64> = beats
        .iter()
        .map(|r| {
            assert_eq!(r.key, Some(json!({ "serverName": p.name })));
            r.value.as_ref().expect("value")["ts_ms"]
                .as_i64()
                .expect("ts_ms")
        })
        .collect();
    // 4 s idle at 300 ms: about 13, never much faster than the interval.
    assert!(ts.len() >= 8, "{} heartbeats in {idle:?}: {ts:?}", ts.len());
    for w in ts.windows(2) {
        assert!(
            w[1] - w[0] >= 250,
            "heartbeats {} ms apart: {ts:?}",
            w[1] - w[0]
        );
    }
    eprintln!("[{}] {} heartbeats in {idle:?}", flavor.name, ts.len());
}

fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_micros() as i64
}

/// The envelope's times, read as a consumer would: `source.ts_ms`/`ts_us`/`ts_ns` are the
/// source commit time (on MySQL the GTID event's microsecond `original_commit_timestamp`, so
/// `ts_ms` has milliseconds; on MariaDB the event header's whole seconds), the top-level
/// `ts_ms`/`ts_us`/`ts_ns` one processing-time reading, never before the commit.
async fn envelope_times_carry_the_commit_at_microseconds(flavor: Flavor) {
    let p = Pipeline::new(flavor, "times", "");
    let db = p.db.clone();
    let (mut c, mut child) = p.start_with(&[("a", "(id INT PRIMARY KEY)")]).await;
    let commits = 8;
    let mut windows = Vec::new();
    for id in 0..commits {
        // Spread the commits over sub-second instants.
        tokio::time::sleep(Duration::from_millis(37 + 53 * id as u64)).await;
        let before = now_us();
        exec(&mut c, &[&format!("INSERT INTO {db}.a VALUES ({id})")]).await;
        windows.push((before, now_us()));
    }
    let recs = consume(
        &[p.topic("a")],
        "read_committed",
        commits,
        Duration::ZERO,
        Duration::from_secs(60),
    );
    terminate(&mut child);
    assert_eq!(recs.len(), commits, "{recs:#?}");
    let mut sub_second = 0;
    for (r, (before, after)) in recs.iter().zip(&windows) {
        let v = r.value.as_ref().expect("value");
        let s = &v["source"];
        let int = |x: &Value, f: &str| x[f].as_i64().unwrap_or_else(|| panic!("{f} in {v}"));
        let (ms, us, ns) = (int(s, "ts_ms"), int(s, "ts_us"), int(s, "ts_ns"));
        assert_eq!((ms, ns), (us / 1000, us * 1000), "source times of {v}");
        assert_eq!(s["sequence"], Value::Null, "{v}");
        // The commit happened inside the statement's window (1 s of slack for the
        // header's whole seconds on MariaDB and for clock reading order).
        assert!(
            us >= before - 1_000_000 && us <= after + 1_000_000,
            "source.ts_us {us} outside [{before}, {after}] in {v}"
        );
        if flavor.mysql {
            sub_second += usize::from(ms % 1000 != 0);
        } else {
            assert_eq!(us % 1_000_000, 0, "MariaDB's binlog has whole seconds: {v}");
        }
        let (ms, us, ns) = (int(v, "ts_ms"), int(v, "ts_us"), int(v, "ts_ns"));
        assert_eq!(
            (ms, us),
            (ns / 1_000_000, ns / 1000),
            "processing times of {v}"
        );
        assert!(us >= int(s, "ts_us"), "processed before the commit: {v}");
    }
    if flavor.mysql {
        // Eight commits all on a whole second would mean the header's seconds were used
        // (chance with milliseconds: 10^-24).
        assert!(
            sub_second > 0,
            "no millisecond in any source.ts_ms: {recs:#?}"
        );
    }
    eprintln!(
        "[{}] {commits} commits, {sub_second} with milliseconds in source.ts_ms",
        flavor.name
    );
}

/// `kafka.context_headers`: data records, tombstones, transaction metadata and heartbeats
/// carry Debezium 3's `__debezium.context.*` headers as plain UTF-8 text (the values
/// Debezium 3.5's connectors wrote on the test bed: the logical name, `mysql` / `mariadb`,
/// task `0`, and one run id for the whole process); switched off (the default), none.
async fn context_headers_name_pipeline_connector_task_and_run(flavor: Flavor) {
    let name = flavor.name;
    let family = if name.starts_with("mariadb") {
        "mariadb"
    } else {
        "mysql"
    };
    let context = |r: &RawRec| -> BTreeMap<String, String> {
        r.headers
            .iter()
            .filter_map(|(n, v)| {
                let n = n.strip_prefix("__debezium.context.")?;
                Some((
                    n.to_string(),
                    String::from_utf8(v.clone()).expect("UTF-8 text"),
                ))
            })
            .collect()
    };
    for on in [true, false] {
        let p = Pipeline::new(
            flavor,
            "ctxhdr",
            &format!("{TXN_METADATA}\n[heartbeat]\ninterval_ms = 200\n"),
        );
        if on {
            let from = format!("offsets_topic = \"{}\"", p.offsets_topic);
            p.edit_config(&from, &format!("{from}\ncontext_headers = true"));
        }
        let db = p.db.clone();
        let (mut c, mut child) = p.start_with(&[("a", "(id INT PRIMARY KEY)")]).await;
        exec(
            &mut c,
            &[
                &format!("INSERT INTO {db}.a VALUES (1)"),
                &format!("DELETE FROM {db}.a WHERE id = 1"),
            ],
        )
        .await;
        let topics = [
            p.topic("a"),
            format!("{}.transaction", p.name),
            format!("__debezium-heartbeat.{}", p.name),
        ];
        // The create, the delete and its tombstone, two BEGIN/END pairs, heartbeats.
        let recs = consume_raw(
            &topics,
            "read_committed",
            9,
            Duration::from_secs(1),
            Duration::from_secs(60),
        );
        terminate(&mut child);
        let count = |t: &str| recs.iter().filter(|r| r.topic == t).count();
        assert_eq!(count(&topics[0]), 3, "[{name}] on={on}: {recs:?}");
        assert_eq!(count(&topics[1]), 4, "[{name}] on={on}: {recs:?}");
        assert!(count(&topics[2]) >= 2, "[{name}] on={on}: {recs:?}");
        assert!(
            recs.iter()
                .any(|r| r.topic == topics[0] && r.value.is_none()),
            "[{name}] a tombstone is among them"
        );
        if !on {
            assert!(recs.iter().all(|r| context(r).is_empty()), "[{name}]");
            continue;
        }
        let run = context(&recs[0]).get("runId").cloned().expect("runId");
        assert_eq!(run.len(), 36, "[{name}] a UUID text: {run}");
        for r in &recs {
            let mut h = context(r);
            assert_eq!(
                h.remove("connectorLogicalName").as_deref(),
                Some(p.name.as_str())
            );
            assert_eq!(h.remove("taskId").as_deref(), Some("0"), "[{name}]");
            assert_eq!(h.remove("runId").as_deref(), Some(run.as_str()), "[{name}]");
            let connector = h.remove("connectorName");
            // Known from the source's first transaction on; a heartbeat may come before it.
            if r.topic != topics[2] || connector.is_some() {
                assert_eq!(connector.as_deref(), Some(family), "[{name}] {}", r.topic);
            }
            assert!(h.is_empty(), "[{name}] no other context headers: {h:?}");
        }
    }
}

per_flavor!(
    context_headers_name_pipeline_connector_task_and_run,
    envelope_times_carry_the_commit_at_microseconds,
    every_transaction_is_framed_once_through_kills,
    avro_records_decode_with_confluents_client,
    heartbeats_pace_an_idle_pipeline_and_keep_its_position,
);
