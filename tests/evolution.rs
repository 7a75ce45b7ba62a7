//! DDL and schema evolution against the real servers, Kafka and schema registry: schema-change
//! records, the schema history committed with the data, new tables picked up without a
//! restart, and the `on_schema_change` policies with the registry's compatibility rule.

mod support;

use std::time::Duration;

use serde_json::Value as J;
use support::*;

fn cols(def: &J) -> Vec<String> {
    def["columns"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| c["name"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn schema_changes(p: &Pipeline, want: usize) -> Vec<J> {
    consume(
        &[format!("{}.schema-changes", p.name)],
        "read_committed",
        want,
        Duration::from_secs(2),
        Duration::from_secs(60),
    )
    .into_iter()
    .filter_map(|r| r.value)
    .collect()
}

/// The schema history of this pipeline: latest value per key (None = removed), once it holds
/// `want` keys. The topic is shared: other pipelines' open transactions may hold back what a
/// `read_committed` reader sees for a while.
fn history(p: &Pipeline, want: usize) -> std::collections::BTreeMap<String, Option<J>> {
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    loop {
        let h = history_once(p);
        if h.len() >= want || std::time::Instant::now() > deadline {
            return h;
        }
    }
}

fn history_once(p: &Pipeline) -> std::collections::BTreeMap<String, Option<J>> {
    let recs = consume_raw(
        &[format!("_sluice_schema_history.{}", p.name)],
        "read_committed",
        usize::MAX,
        Duration::from_secs(2),
        Duration::from_secs(5),
    );
    let prefix = format!("{}/", p.name);
    let mut out = std::collections::BTreeMap::new();
    for r in recs {
        let Some(k) = r.key.map(|k| String::from_utf8_lossy(&k).into_owned()) else {
            continue;
        };
        if let Some(t) = k.strip_prefix(&prefix) {
            out.insert(
                t.to_string(),
                r.value
                    .map(|v| serde_json::from_slice(&v).expect("history value is JSON")),
            );
        }
    }
    out
}

async fn ddl_is_recorded_with_the_data_and_new_tables_are_picked_up(flavor: Flavor) {
    let p = Pipeline::new(flavor, "ddl", "");
    let db = &p.db;
    let (mut c, mut child) = p
        .start_with(&[("t", "(id INT PRIMARY KEY, a VARCHAR(10))")])
        .await;
    exec(
        &mut c,
        &[
            &format!("INSERT INTO {db}.t VALUES (1, 'x')"),
            &format!("ALTER TABLE {db}.t ADD COLUMN b INT NULL AFTER id"),
            &format!("INSERT INTO {db}.t VALUES (2, 20, 'y')"),
            &format!("ALTER TABLE {db}.t DROP COLUMN a, RENAME COLUMN b TO bb"),
            &format!("INSERT INTO {db}.t VALUES (3, 30)"),
            &format!("CREATE TABLE {db}.fresh (k BIGINT UNSIGNED PRIMARY KEY, v TEXT)"),
            &format!("INSERT INTO {db}.fresh VALUES (18446744073709551615, 'new')"),
            &format!("TRUNCATE TABLE {db}.fresh"),
            &format!("RENAME TABLE {db}.fresh TO {db}.fresh2"),
            &format!("DROP TABLE {db}.fresh2"),
            &format!("CREATE TABLE {db}.nopk (x INT)"),
        ],
    )
    .await;
    let data = consume(
        &[p.topic("t"), p.topic("fresh")],
        "read_committed",
        4,
        Duration::from_secs(2),
        Duration::from_secs(60),
    );
    let changes = schema_changes(&p, 7);
    let hist = history(&p, 4);
    terminate(&mut child);
    let name = flavor.name;

    let t: Vec<&J> = data
        .iter()
        .filter(|r| r.topic == p.topic("t"))
        .filter_map(|r| r.value.as_ref())
        .collect();
    assert_eq!(t.len(), 3, "[{name}] rows of t: {t:?}");
    assert_eq!(
        t[0]["after"],
        serde_json::json!({"id": 1, "a": "x"}),
        "[{name}]"
    );
    assert_eq!(
        t[1]["after"],
        serde_json::json!({"id": 2, "b": 20, "a": "y"}),
        "[{name}]"
    );
    assert_eq!(
        t[2]["after"],
        serde_json::json!({"id": 3, "bb": 30}),
        "[{name}]"
    );
    let fresh: Vec<&J> = data
        .iter()
        .filter(|r| r.topic == p.topic("fresh"))
        .filter_map(|r| r.value.as_ref())
        .collect();
    assert_eq!(
        fresh.len(),
        1,
        "[{name}] the new table is picked up: {data:?}"
    );
    assert_eq!(
        fresh[0]["after"]["k"],
        serde_json::json!(18446744073709551615u64),
        "[{name}]"
    );

    let kinds: Vec<(String, String)> = changes
        .iter()
        .map(|c| {
            (
                c["kind"].as_str().unwrap_or_default().to_string(),
                c["table"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = [
        ("ALTER", "t"),
        ("ALTER", "t"),
        ("CREATE", "fresh"),
        ("TRUNCATE", "fresh"),
        ("RENAME", "fresh2"),
        ("DROP", "fresh2"),
        ("CREATE", "nopk"),
    ]
    .iter()
    .map(|(k, t)| (k.to_string(), t.to_string()))
    .collect();
    assert_eq!(kinds, want, "[{name}] schema changes: {changes:#?}");
    assert_eq!(cols(&changes[0]["before"]), ["id", "a"], "[{name}]");
    assert_eq!(cols(&changes[0]["after"]), ["id", "b", "a"], "[{name}]");
    assert_eq!(cols(&changes[1]["after"]), ["id", "bb"], "[{name}]");
    assert!(changes[1]["ddl"]
        .as_str()
        .unwrap_or_default()
        .contains("RENAME COLUMN"));
    assert_eq!(cols(&changes[2]["after"]), ["k", "v"], "[{name}]");
    assert_eq!(changes[2]["after"]["primary_key"], serde_json::json!(["k"]));
    assert_eq!(cols(&changes[4]["before"]), ["k", "v"], "[{name}]");
    assert_eq!(changes[4]["before"]["table"], "fresh", "[{name}]");
    assert_eq!(changes[4]["after"]["table"], "fresh2", "[{name}]");
    assert!(changes[5]["after"].is_null(), "[{name}] drop has no after");

    // The history holds each live table's latest shape; dropped and renamed-away ones are gone.
    let t_def = hist
        .get(&format!("{db}.t"))
        .cloned()
        .flatten()
        .unwrap_or_else(|| panic!("[{name}] history of t: {hist:?}"));
    assert_eq!(cols(&t_def), ["id", "bb"], "[{name}]");
    assert!(
        matches!(hist.get(&format!("{db}.fresh")), Some(None)),
        "[{name}] {hist:?}"
    );
    assert!(
        matches!(hist.get(&format!("{db}.fresh2")), Some(None)),
        "[{name}] {hist:?}"
    );
}

async fn a_shape_change_under_fail_stops_before_it_is_committed(flavor: Flavor) {
    let p = Pipeline::new(flavor, "ddlfail", "on_schema_change = \"fail\"");
    let db = &p.db;
    let (mut c, mut child) = p.start_with(&[("t", "(id INT PRIMARY KEY)")]).await;
    exec(
        &mut c,
        &[
            &format!("INSERT INTO {db}.t VALUES (1)"),
            &format!("ALTER TABLE {db}.t ADD INDEX (id)"),
            &format!("ALTER TABLE {db}.t ADD COLUMN x INT"),
            &format!("INSERT INTO {db}.t VALUES (2, 2)"),
        ],
    )
    .await;
    let status = wait_exit(&mut child, Duration::from_secs(60));
    assert!(!status.success(), "[{}] must stop", flavor.name);
    let log = p.log();
    assert!(
        log.contains("on_schema_change = \\\"fail\\\"")
            || log.contains("on_schema_change = \"fail\""),
        "[{}] {log}",
        flavor.name
    );
    assert!(
        log.contains("ADD COLUMN x INT"),
        "[{}] names the statement: {log}",
        flavor.name
    );
    let data = consume(
        &[p.topic("t")],
        "read_committed",
        1,
        Duration::from_secs(2),
        Duration::from_secs(30),
    );
    assert_eq!(
        data.len(),
        1,
        "[{}] only the row before the DDL: {data:?}",
        flavor.name
    );
    // Restarting stops at the same statement again: the offset did not pass it.
    let mut child = p.spawn();
    let status = wait_exit(&mut child, Duration::from_secs(60));
    assert!(!status.success(), "[{}] stops again", flavor.name);
}

async fn avro_schemas_evolve_and_an_incompatible_change_stops(flavor: Flavor) {
    let p = Pipeline::new_avro(flavor, "avroevo", "on_schema_change = \"evolve\"");
    let db = &p.db;
    let (mut c, mut child) = p
        .start_with(&[("t", "(id INT PRIMARY KEY, a VARCHAR(10))")])
        .await;
    exec(
        &mut c,
        &[
            &format!("INSERT INTO {db}.t VALUES (1, 'x')"),
            &format!("ALTER TABLE {db}.t ADD COLUMN b INT NULL"),
            &format!("INSERT INTO {db}.t VALUES (2, 'y', 7)"),
        ],
    )
    .await;
    let recs = consume_raw(
        &[p.topic("t")],
        "read_committed",
        2,
        Duration::from_secs(2),
        Duration::from_secs(60),
    );
    assert_eq!(recs.len(), 2, "[{}] {recs:?}", flavor.name);
    let id = |r: &RawRec| {
        let v = r.value.as_ref().expect("value");
        u32::from_be_bytes([v[1], v[2], v[3], v[4]])
    };
    assert_ne!(
        id(&recs[0]),
        id(&recs[1]),
        "[{}] the new shape has a new schema id",
        flavor.name
    );
    // Confluent's own client decodes both versions.
    let lines = avro_consume(&p.topic("t"), 2);
    assert_eq!(
        lines[0]["value"]["after"],
        serde_json::json!({"id": 1, "a": "x"})
    );
    assert_eq!(
        lines[1]["value"]["after"],
        serde_json::json!({"id": 2, "a": "y", "b": 7})
    );

    // A NOT NULL column without an Avro default breaks BACKWARD compatibility: the registry
    // refuses it (409) and nothing of the new shape is committed.
    exec(
        &mut c,
        &[
            &format!("ALTER TABLE {db}.t ADD COLUMN n INT NOT NULL DEFAULT 0"),
            &format!("INSERT INTO {db}.t VALUES (3, 'z', 8, 9)"),
        ],
    )
    .await;
    let status = wait_exit(&mut child, Duration::from_secs(60));
    assert!(!status.success(), "[{}] must stop", flavor.name);
    let log = p.log();
    assert!(
        log.contains("refused the new Avro schema"),
        "[{}] {log}",
        flavor.name
    );
    assert!(
        log.contains("column `n` added"),
        "[{}] names the column: {log}",
        flavor.name
    );
    assert!(
        log.contains("409"),
        "[{}] the registry's answer: {log}",
        flavor.name
    );
    let recs = consume_raw(
        &[p.topic("t")],
        "read_committed",
        2,
        Duration::from_secs(3),
        Duration::from_secs(30),
    );
    assert_eq!(
        recs.len(),
        2,
        "[{}] nothing of the refused shape: {recs:?}",
        flavor.name
    );
}

async fn a_refused_schema_under_dlq_diverts_rows(flavor: Flavor) {
    let p = Pipeline::new_avro(flavor, "avrodlq", "on_schema_change = \"dlq\"");
    let db = &p.db;
    let (mut c, mut child) = p.start_with(&[("t", "(id INT PRIMARY KEY)")]).await;
    exec(
        &mut c,
        &[
            &format!("INSERT INTO {db}.t VALUES (1)"),
            &format!("ALTER TABLE {db}.t ADD COLUMN n INT NOT NULL DEFAULT 5"),
            &format!("INSERT INTO {db}.t VALUES (2, 6)"),
        ],
    )
    .await;
    let dlq = consume_raw(
        &[format!("{}.dlq", p.name)],
        "read_committed",
        1,
        Duration::from_secs(2),
        Duration::from_secs(60),
    );
    let data = consume_raw(
        &[p.topic("t")],
        "read_committed",
        1,
        Duration::from_secs(2),
        Duration::from_secs(30),
    );
    terminate(&mut child);
    assert_eq!(data.len(), 1, "[{}] {data:?}", flavor.name);
    assert_eq!(dlq.len(), 1, "[{}] {dlq:?}", flavor.name);
    let v: J = serde_json::from_slice(dlq[0].value.as_ref().expect("dlq value")).expect("JSON");
    assert_eq!(v["topic"], J::String(p.topic("t")), "[{}]", flavor.name);
    assert!(
        v["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("column `n` added"),
        "[{}] {v}",
        flavor.name
    );
}

per_flavor!(
    ddl_is_recorded_with_the_data_and_new_tables_are_picked_up,
    a_shape_change_under_fail_stops_before_it_is_committed,
    avro_schemas_evolve_and_an_incompatible_change_stops,
    a_refused_schema_under_dlq_diverts_rows,
);
