//! The routes' Debezium-parity options on the real servers, read back with a
//! `read_committed` consumer: key-change headers (JSON and Avro routes), and
//! `bigint_unsigned`, `skipped_operations` (offsets still advance, transaction metadata counts
//! only what was written), `column_exclude`, `column_mask`, `column_hash` together, on
//! streamed changes and on snapshot reads; and `commit.mode = "eager"`.
//!
//! Expected masks and digests are what Debezium 3.5.0's `MaskStrings` returned for the same
//! values (`column.mask.with.5.chars`, `column.mask.hash.v2.SHA-256.with.salt.s4lt`); the
//! header bytes, masks (NULL masked too, INT passed through) and digests are also what Debezium
//! 3.5.0's MariaDB connector wrote for such rows on the test bed's Connect worker.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::*;

const NEWKEY: &str = "__debezium.newkey";
const OLDKEY: &str = "__debezium.oldkey";

/// The key-change headers of a record (the `sluice.txn` tag aside).
fn key_change_headers(r: &RawRec) -> Vec<(String, String)> {
    r.headers
        .iter()
        .filter(|(n, _)| n.starts_with("__debezium."))
        .map(|(n, v)| (n.clone(), String::from_utf8_lossy(v).into_owned()))
        .collect()
}

async fn key_changes_carry_debeziums_headers(flavor: Flavor) {
    let name = flavor.name;
    for avro in [false, true] {
        let p = if avro {
            Pipeline::new_avro(flavor, "kchdr_avro", "")
        } else {
            Pipeline::new(flavor, "kchdr", "")
        };
        let (mut c, _child) = p
            .start_with(&[("t", "(id INT PRIMARY KEY, s VARCHAR(20), v INT)")])
            .await;
        let db = &p.db;
        exec(
            &mut c,
            &[
                &format!("INSERT INTO {db}.t VALUES (1, 'a', 10)"),
                &format!("UPDATE {db}.t SET id = 5 WHERE id = 1"),
                &format!("UPDATE {db}.t SET v = 11 WHERE id = 5"),
            ],
        )
        .await;
        let recs = consume_raw(
            &[p.topic("t")],
            "read_committed",
            5,
            Duration::from_secs(2),
            Duration::from_secs(60),
        );
        assert_eq!(recs.len(), 5, "[{name}] avro={avro}: {recs:?}");
        let headers: Vec<_> = recs.iter().map(key_change_headers).collect();
        let h = |n: &str, v: &str| vec![(n.to_string(), v.to_string())];
        assert_eq!(
            headers,
            [
                vec![],
                h(NEWKEY, r#"{"id":5}"#),
                h(NEWKEY, r#"{"id":5}"#),
                h(OLDKEY, r#"{"id":1}"#),
                vec![],
            ],
            "[{name}] avro={avro}"
        );
        assert!(recs[2].value.is_none(), "[{name}] the tombstone is third");
        if !avro {
            let ops: Vec<Value> = recs
                .iter()
                .map(|r| r.json().value.map_or(Value::Null, |v| v["op"].clone()))
                .collect();
            assert_eq!(
                ops,
                [json!("c"), json!("d"), Value::Null, json!("c"), json!("u")]
            );
        }
    }
    // Switched off: the same records, no headers.
    let p = Pipeline::new(flavor, "kchdr_off", "key_change_headers = false");
    let (mut c, _child) = p.start_with(&[("t", "(id INT PRIMARY KEY)")]).await;
    let db = &p.db;
    exec(
        &mut c,
        &[
            &format!("INSERT INTO {db}.t VALUES (1)"),
            &format!("UPDATE {db}.t SET id = 2"),
        ],
    )
    .await;
    let recs = consume_raw(
        &[p.topic("t")],
        "read_committed",
        4,
        Duration::from_secs(2),
        Duration::from_secs(60),
    );
    assert_eq!(recs.len(), 4, "[{name}] {recs:?}");
    assert!(
        recs.iter().all(|r| key_change_headers(r).is_empty()),
        "[{name}]"
    );
}

async fn route_options_shape_and_skip_records(flavor: Flavor) {
    let name = flavor.name;
    let p = Pipeline::new(flavor, "ropts", "");
    let db = p.db.clone();
    p.edit_config(
        "format = \"json\"",
        &format!(
            r#"format = "json"
bigint_unsigned = "long"
skipped_operations = ["d"]
column_exclude = ['{db}\.u\.ssn']
column_mask = [{{ columns = ['{db}\.u\.email', '{db}\.u\.age'], chars = 5 }}]
column_hash = [{{ columns = ['{db}\.u\.(code|note)'], algorithm = "SHA-256", salt = "s4lt" }}]

[transaction_metadata]
enabled = true
"#
        ),
    );
    let (mut c, _child) = p
        .start_with(&[(
            "u",
            "(id BIGINT UNSIGNED PRIMARY KEY, email VARCHAR(64), code VARCHAR(8), note TEXT, \
             age INT, ssn CHAR(11)) CHARACTER SET utf8mb4",
        )])
        .await;
    exec(
        &mut c,
        &[
            &format!(
                "INSERT INTO {db}.u VALUES (18446744073709551615, 'ann@example.com', 'abc', \
                 'hello wörld', 41, '123-45-6789')"
            ),
            &format!("UPDATE {db}.u SET email = NULL, note = NULL, age = 42"),
            "BEGIN",
            &format!("DELETE FROM {db}.u"),
            &format!("INSERT INTO {db}.u VALUES (7, 'bob@x', 'xyz', 'n', 1, 's')"),
            "COMMIT",
            // Only skipped changes: no records, no transaction metadata.
            &format!("DELETE FROM {db}.u WHERE id = 7"),
        ],
    )
    .await;
    // The skipped delete's transaction still advances the committed offset.
    let target = flavor.gtid_executed(&mut c).await;
    let what = format!("[{name}] the committed offset to reach {target}");
    wait_for(&what, Duration::from_secs(30), || {
        let now = p.command(&["offsets", "show"]).1;
        serde_json::from_str::<Value>(&now)
            .ok()
            .and_then(|v| {
                v["position"][flavor.gtid_key()]
                    .as_str()
                    .map(str::to_string)
            })
            .filter(|now| flavor.gtid_contains(now, &target))
            .ok_or(now)
    });
    exec(
        &mut c,
        &[&format!(
            "INSERT INTO {db}.u VALUES (8, NULL, 'k', 'm', 2, NULL)"
        )],
    )
    .await;
    let recs = consume(
        &[p.topic("u")],
        "read_committed",
        4,
        Duration::from_secs(2),
        Duration::from_secs(60),
    );
    let got: Vec<(Value, Value, Value)> = recs
        .iter()
        .map(|r| {
            let v = r.value.clone().expect("no tombstones: deletes are skipped");
            (
                r.key.clone().expect("key"),
                v["op"].clone(),
                v["after"].clone(),
            )
        })
        .collect();
    let note = "0792676f2da5e933507793d0b2bfaaab3b349eeeee5d160eada153d93fc7b8ac";
    assert_eq!(
        got,
        [
            (
                json!({"id": -1}),
                json!("c"),
                json!({"id": -1, "email": "*****", "code": "5dc10a3e", "note": note, "age": 41})
            ),
            (
                json!({"id": -1}),
                json!("u"),
                json!({"id": -1, "email": "*****", "code": "5dc10a3e", "note": null, "age": 42})
            ),
            (
                json!({"id": 7}),
                json!("c"),
                json!({"id": 7, "email": "*****", "code": "b5ae984f",
                       "note": "f6f7365001380db26bd5e011465b8ed0d6a38aed70d84d3d7f050483af0485a3",
                       "age": 1})
            ),
            (
                json!({"id": 8}),
                json!("c"),
                json!({"id": 8, "email": "*****", "code": "ee9abbd0",
                       "note": "670933261159c4fce54ddb8644ceb40cf7b342d6de4cc5eafa8fc84473d354e9",
                       "age": 2})
            ),
        ],
        "[{name}]"
    );
    // The update's `before` went through the same projection.
    let before = recs[1].value.as_ref().unwrap()["before"].clone();
    assert_eq!(before["email"], json!("*****"), "[{name}] {before}");
    assert!(before.get("ssn").is_none(), "[{name}] {before}");
    // Transaction metadata: the four transactions with written events, each END counting
    // exactly what was written (the mixed transaction: its insert, not its skipped delete).
    let meta = consume(
        &[format!("{}.transaction", p.name)],
        "read_committed",
        8,
        Duration::from_secs(2),
        Duration::from_secs(60),
    );
    let ends: Vec<&Value> = meta
        .iter()
        .filter_map(|r| r.value.as_ref())
        .filter(|v| v["status"] == "END")
        .collect();
    assert_eq!(meta.len(), 8, "[{name}] {meta:?}");
    assert_eq!(ends.len(), 4, "[{name}] {meta:?}");
    for end in ends {
        assert_eq!(end["event_count"], json!(1), "[{name}] {end}");
    }
}

/// Snapshot reads (`op = r`) go through the same projection as streamed changes.
async fn snapshot_reads_get_the_same_column_rules(flavor: Flavor) {
    let name = flavor.name;
    let p = Pipeline::new(flavor, "roptsnap", "");
    let db = p.db.clone();
    p.edit_config("start = \"latest\"", "start = \"initial\"");
    p.edit_config(
        "format = \"json\"",
        &format!(
            r#"format = "json"
bigint_unsigned = "long"
skipped_operations = ["c", "u", "d"]
column_exclude = ['{db}\.u\.ssn']
column_mask = [{{ columns = ['{db}\.u\.email'], chars = 5 }}]
column_hash = [{{ columns = ['{db}\.u\.code'], algorithm = "SHA-256", salt = "s4lt" }}]
"#
        ),
    );
    let mut c = root(flavor.port).await;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {db}"),
            &format!(
                "CREATE TABLE {db}.u (id BIGINT UNSIGNED PRIMARY KEY, email VARCHAR(64), \
                 code VARCHAR(8), ssn CHAR(11)) CHARACTER SET utf8mb4"
            ),
            &format!(
                "INSERT INTO {db}.u VALUES (18446744073709551615, NULL, 'abc', '1'), \
                 (7, 'bob@x', 'xyz', '2')"
            ),
        ],
    )
    .await;
    let _child = p.spawn();
    p.wait_started(Duration::from_secs(60));
    let recs = consume(
        &[p.topic("u")],
        "read_committed",
        2,
        Duration::from_secs(2),
        Duration::from_secs(60),
    );
    let mut got: Vec<(Value, Value)> = recs
        .iter()
        .map(|r| {
            let v = r.value.clone().expect("value");
            assert_eq!(v["op"], "r", "[{name}] {v}");
            (r.key.clone().expect("key"), v["after"].clone())
        })
        .collect();
    got.sort_by_key(|(k, _)| k["id"].as_i64());
    assert_eq!(
        got,
        [
            (
                json!({"id": -1}),
                json!({"id": -1, "email": "*****", "code": "5dc10a3e"})
            ),
            (
                json!({"id": 7}),
                json!({"id": 7, "email": "*****", "code": "b5ae984f"})
            ),
        ],
        "[{name}] skipped_operations do not apply to snapshot reads"
    );
}

/// `commit.mode = "eager"`: a transaction commits at the end of a source transaction once the
/// source has nothing more buffered. With `commit.max_ms` at 20 s, the interval mode would
/// show none of these rows within the 15 s wait below (eager: well under a second).
async fn eager_commits_without_waiting_for_max_ms(flavor: Flavor) {
    let name = flavor.name;
    let p = Pipeline::new(flavor, "eager", "");
    p.edit_config(
        "[commit]\nmax_ms = 50",
        "[commit]\nmode = \"eager\"\nmax_ms = 20000",
    );
    let (mut c, _child) = p.start_with(&[("e", "(id INT PRIMARY KEY, v INT)")]).await;
    let db = p.db.clone();
    for i in 1..=3 {
        exec(&mut c, &[&format!("INSERT INTO {db}.e VALUES ({i}, {i})")]).await;
    }
    let recs = consume(
        &[p.topic("e")],
        "read_committed",
        3,
        Duration::from_secs(1),
        Duration::from_secs(15),
    );
    let ids: Vec<Value> = recs
        .iter()
        .map(|r| r.key.clone().unwrap_or(Value::Null)["id"].clone())
        .collect();
    assert_eq!(ids, [json!(1), json!(2), json!(3)], "[{name}] {}", p.log());
}

/// Partition count of `topic` (`None`: it does not exist), from the test bed's broker.
fn partitions_of(topic: &str) -> Option<usize> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let c: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", KAFKA)
        .create()
        .expect("metadata client");
    let md = c
        .fetch_metadata(Some(topic), Duration::from_secs(10))
        .expect("metadata");
    md.topics()
        .iter()
        .find(|t| t.name() == topic && t.error().is_none())
        .map(|t| t.partitions().len())
}

/// One source transaction touching many tables that have no topic yet: their topics are
/// created together (one request, not one round per table), each with `kafka.partitions`,
/// every row arrives; a table whose only operation is skipped gets no topic.
async fn many_new_tables_get_their_topics_together(flavor: Flavor) {
    const TABLES: usize = 40;
    let name = flavor.name;
    let p = Pipeline::new(flavor, "manytopics", "");
    let db = p.db.clone();
    p.edit_config(
        &format!("offsets_topic = \"{}\"", p.offsets_topic),
        &format!("offsets_topic = \"{}\"\npartitions = 2", p.offsets_topic),
    );
    // Inserts into `skipped` produce no records, so it must get no topic.
    p.edit_config(
        "[[route]]",
        &format!(
            "[[route]]\nmatch = '{db}\\.skipped'\ntopic = \"{db}.skipped\"\nformat = \"json\"\nskipped_operations = [\"c\"]\n\n[[route]]"
        ),
    );
    let names: Vec<String> = (0..TABLES).map(|i| format!("t{i:02}")).collect();
    let mut tables: Vec<(&str, &str)> = names
        .iter()
        .map(|n| (n.as_str(), "(id INT PRIMARY KEY, v INT)"))
        .collect();
    tables.push(("skipped", "(id INT PRIMARY KEY, v INT)"));
    let (mut c, _child) = p.start_with(&tables).await;
    let mut txn = vec!["BEGIN".to_string()];
    txn.extend(
        names
            .iter()
            .map(|n| format!("INSERT INTO {db}.{n} VALUES (1, 1)")),
    );
    txn.push(format!("INSERT INTO {db}.skipped VALUES (1, 1)"));
    txn.push("COMMIT".to_string());
    let sql: Vec<&str> = txn.iter().map(String::as_str).collect();
    exec(&mut c, &sql).await;
    let topics: Vec<String> = names.iter().map(|n| p.topic(n)).collect();
    let recs = consume(
        &topics,
        "read_committed",
        TABLES,
        Duration::from_secs(1),
        Duration::from_secs(60),
    );
    assert_eq!(recs.len(), TABLES, "[{name}] {}", p.log());
    for t in &topics {
        assert_eq!(partitions_of(t), Some(2), "[{name}] {t}");
        assert_eq!(
            recs.iter().filter(|r| &r.topic == t).count(),
            1,
            "[{name}] one record in {t}"
        );
    }
    assert_eq!(
        partitions_of(&p.topic("skipped")),
        None,
        "[{name}] {}",
        p.log()
    );
    let log = p.log();
    let created = log
        .lines()
        .filter(|l| l.contains("created topic") && l.contains("partitions=2"))
        .count();
    assert_eq!(
        created, TABLES,
        "[{name}] every data topic created once: {log}"
    );
    let grouped: usize = log
        .lines()
        .filter(|l| l.contains("data topics checked together"))
        .filter_map(|l| {
            l.split("created=")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse::<usize>()
                .ok()
        })
        .sum();
    assert!(
        grouped > 1,
        "[{name}] the new topics were created in groups: {log}"
    );
}

per_flavor!(
    eager_commits_without_waiting_for_max_ms,
    many_new_tables_get_their_topics_together,
    key_changes_carry_debeziums_headers,
    route_options_shape_and_skip_records,
    snapshot_reads_get_the_same_column_rules,
);
