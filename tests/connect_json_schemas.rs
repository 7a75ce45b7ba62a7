//! sluice's `json_schemas` records against the real thing:
//!
//! * Kafka Connect's own `JsonConverter` (`scripts/lib/connect-json-check`, `schemas.enable=
//!   true`) reads every key and value sluice writes for the type-matrix tables (inserts,
//!   updates, a key change, deletes with tombstones, a row of NULLs), and the transaction
//!   metadata and heartbeat records, into a Connect `Struct` and writes it back as the same
//!   JSON.
//! * Their schemas equal the Connect schemas Debezium 3.5's MariaDB connector writes for the
//!   same tables (`tests/golden/connect-schemas`, re-recorded by the ignored test
//!   `record_debezium_connect_schemas`), except the differences listed in [`DIFFERENCES`]
//!   (README, "JSON with schemas").
//!
//! Golden files are normalized only where a difference is inherent: Debezium names the key,
//! row and envelope structs after its topic (`<topic.prefix>.<db>.<table>`), sluice after its
//! own topic; both are written as `${topic}`.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::{json, Value as J};
use support::connect::{json_check, require_worker, worker_log_tail, Connector};
use support::matrix::{create_tables, matrix, Col};
use support::{consume_raw, exec, root, unique, Flavor, Pipeline, RawRec, KAFKA};

/// Where the golden files live.
const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/connect-schemas");

/// What a struct name's topic part is written as in the golden files.
const TOPIC: &str = "${topic}";

/// The schema differences from Debezium 3.5's MariaDB connector, each deliberate or pending,
/// as (flavour the difference shows on: `mariadb`, `mysql` or `both`; where: `<table>.<column>`
/// of the row structs; why). The test fails on a difference not listed here, and on a listed
/// one that no longer shows.
const DIFFERENCES: &[(&str, &str, &str)] = &[(
    "mysql",
    "docs.j",
    "MySQL's JSON type is io.debezium.data.Json, as Debezium's MySQL connector writes it; \
         MariaDB's JSON is LONGTEXT, a plain string in the MariaDB goldens",
)];

/// Tables without golden files: Debezium 3.5's MariaDB connector cannot capture them.
const NOT_RECORDED: &[(&str, &str)] = &[(
    "maria",
    "its DDL parser fails on MariaDB's UUID and INET6 column types (ParsingException)",
)];

/// Records each matrix table gets from [`workload`]: an insert, an update, a key change
/// (delete, tombstone, create), a delete (delete, tombstone) and an insert of NULLs.
const RECORDS_PER_TABLE: usize = 8;

/// The statements of each table's workload (one source transaction each).
fn workload(db: &str, t: &str, cols: &[Col]) -> Vec<String> {
    let names: Vec<&str> = cols.iter().map(|c| c.name).collect();
    let a: Vec<&str> = cols.iter().map(|c| c.a).collect();
    let sets: Vec<String> = cols
        .iter()
        .map(|c| format!("{} = {}", c.name, c.b))
        .collect();
    vec![
        format!(
            "INSERT INTO {db}.{t} (id, {}) VALUES (1, {})",
            names.join(", "),
            a.join(", ")
        ),
        format!("UPDATE {db}.{t} SET {} WHERE id = 1", sets.join(", ")),
        format!("UPDATE {db}.{t} SET id = 3 WHERE id = 1"),
        format!("DELETE FROM {db}.{t} WHERE id = 3"),
        format!("INSERT INTO {db}.{t} (id) VALUES (2)"),
    ]
}

/// Writes struct names that start with `topic` as `${topic}` (the inherent difference).
fn normalize(v: &mut J, topic: &str) {
    match v {
        J::Object(m) => {
            if let Some(J::String(name)) = m.get_mut("name") {
                if let Some(rest) = name.strip_prefix(topic).filter(|r| r.starts_with('.')) {
                    *name = format!("{TOPIC}{rest}");
                }
            }
            m.values_mut().for_each(|x| normalize(x, topic));
        }
        J::Array(a) => a.iter_mut().for_each(|x| normalize(x, topic)),
        _ => {}
    }
}

/// The `schema` of a `{"schema":…,"payload":…}` record part.
fn schema_of(bytes: &[u8], topic: &str) -> J {
    let doc: J = serde_json::from_slice(bytes).expect("JSON");
    let mut s = doc
        .get("schema")
        .unwrap_or_else(|| panic!("no schema in {doc}"))
        .clone();
    normalize(&mut s, topic);
    s
}

fn golden_path(name: &str) -> String {
    format!("{GOLDEN}/{name}.json")
}

fn read_golden(name: &str) -> J {
    let path = golden_path(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!("{path}: {e}; cargo test --test connect_json_schemas -- --ignored records them")
    });
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn fields(s: &J) -> Vec<&J> {
    s["fields"]
        .as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

fn without_fields(s: &J) -> J {
    let mut s = s.clone();
    if let Some(o) = s.as_object_mut() {
        o.remove("fields");
    }
    s
}

/// Where sluice's `{key, value}` schemas of `table` differ from Debezium's: `<table>.<column>`
/// for a column of the row structs (before and after must agree), `<table>:<what>` for the
/// rest, each with both sides.
fn schema_differences(table: &str, ours: &J, theirs: &J) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut differ = |at: String, o: &J, t: &J| {
        if o != t {
            out.insert(at, format!("sluice {o}, Debezium {t}"));
        }
    };
    differ(format!("{table}:key"), &ours["key"], &theirs["key"]);
    let (ov, tv) = (&ours["value"], &theirs["value"]);
    differ(
        format!("{table}:envelope"),
        &without_fields(ov),
        &without_fields(tv),
    );
    let names = |s: &J| -> Vec<J> { fields(s).iter().map(|f| f["field"].clone()).collect() };
    differ(
        format!("{table}:envelope fields"),
        &J::Array(names(ov)),
        &J::Array(names(tv)),
    );
    for tf in fields(tv) {
        let name = tf["field"].as_str().unwrap_or_default();
        let Some(of) = fields(ov).into_iter().find(|f| f["field"] == name) else {
            continue;
        };
        if name != "before" && name != "after" {
            differ(format!("{table}:{name}"), of, tf);
            continue;
        }
        differ(
            format!("{table}:{name} struct"),
            &without_fields(of),
            &without_fields(tf),
        );
        differ(
            format!("{table}:{name} columns"),
            &J::Array(names(of)),
            &J::Array(names(tf)),
        );
        for tc in fields(tf) {
            let col = tc["field"].as_str().unwrap_or_default();
            if let Some(oc) = fields(of).into_iter().find(|f| f["field"] == col) {
                differ(format!("{table}.{col}"), oc, tc);
            }
        }
    }
    out
}

/// Every JSON path where `a` and `b` differ.
fn diff_paths(a: &J, b: &J, at: &str, out: &mut Vec<String>) {
    match (a, b) {
        (J::Object(x), J::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                diff_paths(
                    x.get(k).unwrap_or(&J::Null),
                    y.get(k).unwrap_or(&J::Null),
                    &format!("{at}/{k}"),
                    out,
                );
            }
        }
        (J::Array(x), J::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                diff_paths(p, q, &format!("{at}/{i}"), out);
            }
        }
        _ if a != b => out.push(at.to_string()),
        _ => {}
    }
}

/// One checker input line: the record's own key and value bytes (JSON text, or null).
fn checker_line(r: &RawRec) -> String {
    let part = |b: &Option<Vec<u8>>| {
        b.as_ref().map_or("null".to_string(), |b| {
            String::from_utf8_lossy(b).into_owned()
        })
    };
    format!(r#"{{"key":{},"value":{}}}"#, part(&r.key), part(&r.value))
}

/// Whether a record JsonConverter did not write back the same is the one known case: a BIGINT
/// UNSIGNED value above 2^63-1, which sluice writes exactly and Connect's `int64` holds as its
/// two's complement (the value Debezium's default `bigint.unsigned.handling.mode=long`
/// writes). Panics on any other difference.
fn only_unsigned_bigint_wraps(original: &J, line: &J) -> bool {
    let reencoded = &line["value"]["reencoded"];
    let mut paths = Vec::new();
    diff_paths(original, reencoded, "", &mut paths);
    assert!(!paths.is_empty(), "{line}");
    for p in &paths {
        let ok = p == "/payload/before/biu" || p == "/payload/after/biu";
        assert!(
            ok,
            "JsonConverter writes {p} back differently: {line}\noriginal: {original}"
        );
        let ptr = p.as_str();
        let ours = original
            .pointer(ptr)
            .and_then(J::as_u64)
            .unwrap_or_else(|| panic!("{p}: {original}"));
        assert_eq!(
            reencoded.pointer(ptr).and_then(J::as_i64),
            Some(ours as i64),
            "{p}: {line}"
        );
    }
    true
}

const EXTRA: &str = r#"json_schemas = true

[transaction_metadata]
enabled = true
json_schemas = true

[heartbeat]
interval_ms = 200
json_schemas = true
"#;

async fn json_schemas_convert_and_match_debeziums_schemas(flavor: Flavor) {
    let started = Instant::now();
    let p = Pipeline::new(flavor, "jschemas", EXTRA);
    let tables = matrix(flavor);
    let mut c = root(flavor.port).await;
    exec(&mut c, &[&format!("CREATE DATABASE {}", p.db)]).await;
    create_tables(&mut c, &p.db, &tables).await;
    let _sluice = p.spawn();
    p.wait_started(Duration::from_secs(60));
    exec(&mut c, &["SET time_zone = '+00:00'", "SET sql_mode = ''"]).await;
    let mut statements = 0;
    for (t, cols) in &tables {
        let sql = workload(&p.db, t, cols);
        statements += sql.len();
        let sql: Vec<&str> = sql.iter().map(String::as_str).collect();
        exec(&mut c, &sql).await;
    }
    // A table whose shape changes: each record carries the schema of its table version.
    let db = &p.db;
    exec(
        &mut c,
        &[
            &format!("CREATE TABLE {db}.evolving (id INT PRIMARY KEY)"),
            &format!("INSERT INTO {db}.evolving VALUES (1)"),
            &format!("ALTER TABLE {db}.evolving ADD COLUMN note VARCHAR(10) NOT NULL"),
            &format!("INSERT INTO {db}.evolving VALUES (2, 'x')"),
        ],
    )
    .await;
    statements += 2;

    let mut topics: Vec<String> = tables.iter().map(|(t, _)| p.topic(t)).collect();
    topics.push(p.topic("evolving"));
    let want = RECORDS_PER_TABLE * tables.len() + 2;
    let data = consume_raw(
        &topics,
        "read_committed",
        want,
        Duration::from_secs(1),
        Duration::from_secs(90),
    );
    assert_eq!(
        data.len(),
        want,
        "[{}] sluice log:\n{}",
        flavor.name,
        p.log()
    );
    let txn_topic = format!("{}.transaction", p.name);
    let txn = consume_raw(
        std::slice::from_ref(&txn_topic),
        "read_committed",
        2 * statements,
        Duration::ZERO,
        Duration::from_secs(30),
    );
    assert_eq!(txn.len(), 2 * statements, "[{}] BEGIN and END", flavor.name);
    let hb_topic = format!("__debezium-heartbeat.{}", p.name);
    let hb = consume_raw(
        std::slice::from_ref(&hb_topic),
        "read_committed",
        1,
        Duration::ZERO,
        Duration::from_secs(30),
    );
    assert!(!hb.is_empty(), "[{}] no heartbeat", flavor.name);

    // Kafka Connect's JsonConverter on every key and value.
    let all: Vec<&RawRec> = data.iter().chain(&txn).chain(&hb).collect();
    let input: Vec<String> = all.iter().map(|r| checker_line(r)).collect();
    let (code, lines, stderr) = json_check(&["--stdin"], Some(&input.join("\n")));
    assert_eq!(
        lines.len(),
        all.len(),
        "[{}] checker exit {code}: {stderr}",
        flavor.name
    );
    let mut wrapped_bigints = 0;
    for (r, line) in all.iter().zip(&lines) {
        assert_eq!(line["key"]["ok"], true, "[{}] key of {line}", flavor.name);
        if line["value"]["ok"] != true {
            let original: J =
                serde_json::from_slice(r.value.as_deref().expect("a value")).expect("JSON value");
            assert!(only_unsigned_bigint_wraps(&original, line));
            wrapped_bigints += 1;
        }
        // Tombstones and the keys of tables without key stay null.
        assert_eq!(
            r.value.is_none(),
            line["value"]["schema"].is_null(),
            "{line}"
        );
    }
    // The insert of row A, the update (A and B), the key change's delete (B) and create (B),
    // and the delete (B): every envelope with a BIGINT UNSIGNED above 2^63-1.
    assert_eq!(
        (code == 0, wrapped_bigints),
        (false, 5),
        "[{}] {stderr}",
        flavor.name
    );

    let evolving_topic = p.topic("evolving");
    let evolving: Vec<J> = data
        .iter()
        .filter(|r| r.topic == evolving_topic)
        .map(|r| serde_json::from_slice(r.value.as_deref().expect("value")).expect("JSON"))
        .collect();
    let after_columns = |v: &J| -> Vec<J> {
        let after = fields(&v["schema"])
            .into_iter()
            .find(|f| f["field"] == "after")
            .expect("after");
        fields(after).iter().map(|f| f["field"].clone()).collect()
    };
    assert_eq!(evolving.len(), 2, "[{}] {evolving:?}", flavor.name);
    assert_eq!(after_columns(&evolving[0]), [json!("id")]);
    assert_eq!(after_columns(&evolving[1]), [json!("id"), json!("note")]);
    assert_eq!(
        evolving[1]["payload"]["after"],
        json!({"id": 2, "note": "x"})
    );

    // The schemas against Debezium's.
    let mut differences = BTreeMap::new();
    for (t, _) in &tables {
        let topic = p.topic(t);
        let recs: Vec<&RawRec> = data.iter().filter(|r| r.topic == topic).collect();
        if NOT_RECORDED.iter().any(|(n, _)| n == t) {
            continue;
        }
        let values: BTreeSet<String> = recs
            .iter()
            .filter_map(|r| r.value.as_deref())
            .map(|v| schema_of(v, &topic).to_string())
            .collect();
        assert_eq!(values.len(), 1, "[{}] {t}: one value schema", flavor.name);
        let first = recs[0];
        let ours = json!({
            "key": schema_of(first.key.as_deref().expect("a key"), &topic),
            "value": schema_of(first.value.as_deref().expect("a value"), &topic),
        });
        let mut theirs = read_golden(&format!("mariadb/{t}"));
        if flavor.mysql {
            // sluice names the source struct after the connector it stands in for.
            normalize_connector(&mut theirs);
        }
        differences.extend(schema_differences(t, &ours, &theirs));
    }
    let further = read_golden("mariadb/further-topics");
    for (what, recs) in [("transaction", &txn), ("heartbeat", &hb)] {
        for r in recs.iter() {
            let ours = json!({
                "key": schema_of(r.key.as_deref().expect("key"), ""),
                "value": schema_of(r.value.as_deref().expect("value"), ""),
            });
            assert_eq!(ours, further[what], "[{}] {what} schemas", flavor.name);
        }
    }
    let expected: BTreeSet<&str> = DIFFERENCES
        .iter()
        .filter(|(f, ..)| *f == "both" || *f == flavor.name)
        .map(|(_, at, _)| *at)
        .collect();
    let got: BTreeSet<&str> = differences.keys().map(String::as_str).collect();
    assert_eq!(
        got, expected,
        "[{}] schema differences from Debezium's (listed in DIFFERENCES and README):\n{:#?}",
        flavor.name, differences
    );
    exec(&mut c, &[&format!("DROP DATABASE {}", p.db)]).await;
    eprintln!(
        "[{}] {} records passed JsonConverter, schemas as Debezium's but {} listed differences; \
         test took {:?}",
        flavor.name,
        all.len(),
        expected.len(),
        started.elapsed()
    );
}

/// The golden source struct, as the MySQL connector names it.
fn normalize_connector(v: &mut J) {
    match v {
        J::Object(m) => {
            if let Some(J::String(name)) = m.get_mut("name") {
                if name == "io.debezium.connector.mariadb.Source" {
                    *name = "io.debezium.connector.mysql.Source".into();
                }
            }
            m.values_mut().for_each(normalize_connector);
        }
        J::Array(a) => a.iter_mut().for_each(normalize_connector),
        _ => {}
    }
}

per_flavor!(json_schemas_convert_and_match_debeziums_schemas);

/// Re-records the golden files: Debezium 3.5's MariaDB connector on the test bed's Connect
/// worker (JsonConverter, `schemas.enable=true`, `decimal.handling.mode=string`, the other
/// settings at their defaults, as sluice's JSON) snapshots one row of each type-matrix table;
/// each table's first record gives `mariadb/<table>.json` (`{"key": …, "value": …}`), a
/// streamed transaction and the heartbeat give `mariadb/further-topics.json`. The tables of
/// [`NOT_RECORDED`] are left out.
///
/// `cargo test --profile ci --test connect_json_schemas -- --ignored record`
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "re-records tests/golden/connect-schemas from Debezium's MariaDB connector"]
async fn record_debezium_connect_schemas() {
    require_worker().await;
    let flavor = support::MARIADB;
    let db = unique("dbz_schemas");
    let tables: Vec<(&str, Vec<Col>)> = matrix(flavor)
        .into_iter()
        .filter(|(t, _)| !NOT_RECORDED.iter().any(|(n, _)| n == t))
        .collect();
    let mut c = root(flavor.port).await;
    exec(&mut c, &[&format!("CREATE DATABASE {db}")]).await;
    create_tables(&mut c, &db, &tables).await;
    exec(&mut c, &["SET time_zone = '+00:00'", "SET sql_mode = ''"]).await;
    let include: Vec<String> = tables.iter().map(|(t, _)| format!("{db}.{t}")).collect();
    for (t, cols) in &tables {
        exec(&mut c, &[&workload(&db, t, cols)[0]]).await;
    }
    let prefix = db.clone();
    let connector = Connector::create(
        &format!("sluice-record-{}", db.replace('_', "-")),
        &json!({
            "connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
            "tasks.max": "1",
            "database.hostname": "127.0.0.1",
            "database.port": flavor.port.to_string(),
            "database.user": "sluice_plain",
            "database.password": "sluice",
            "database.ssl.mode": "disable",
            "database.server.id": (200_000 + rand::random::<u32>() % 1_000_000).to_string(),
            "topic.prefix": prefix,
            "database.include.list": db,
            "table.include.list": include.join(","),
            "include.schema.changes": "false",
            "schema.history.internal.kafka.bootstrap.servers": KAFKA,
            "schema.history.internal.kafka.topic": format!("{prefix}.history"),
            "schema.history.internal.store.only.captured.databases.ddl": "true",
            "schema.history.internal.store.only.captured.tables.ddl": "true",
            "snapshot.locking.mode": "none",
            "decimal.handling.mode": "string",
            "provide.transaction.metadata": "true",
            "heartbeat.interval.ms": "1000",
            "topic.creation.default.replication.factor": "1",
            "topic.creation.default.partitions": "1",
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "key.converter.schemas.enable": "true",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "true",
        }),
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(180);
    let topic_of = |t: &str| format!("{prefix}.{db}.{t}");
    let topics: Vec<String> = tables.iter().map(|(t, _)| topic_of(t)).collect();
    let snapshot = loop {
        connector.assert_not_failed().await;
        let got = consume_raw(
            &topics,
            "read_committed",
            tables.len(),
            Duration::ZERO,
            Duration::from_secs(3),
        );
        if topics.iter().all(|t| got.iter().any(|r| &r.topic == t)) {
            break got;
        }
        assert!(
            Instant::now() < deadline,
            "Debezium's snapshot: {} of {} tables within 180 s; status: {}\n{}",
            got.len(),
            tables.len(),
            connector.status().await,
            worker_log_tail(80)
        );
    };
    std::fs::create_dir_all(format!("{GOLDEN}/mariadb")).expect("golden dir");
    let write = |name: &str, v: &J| {
        let text = serde_json::to_string_pretty(v).expect("JSON") + "\n";
        std::fs::write(golden_path(name), text).expect("write golden file");
    };
    for (t, _) in &tables {
        let topic = topic_of(t);
        let r = snapshot.iter().find(|r| r.topic == topic).expect("record");
        write(
            &format!("mariadb/{t}"),
            &json!({
                "key": schema_of(r.key.as_deref().expect("key"), &topic),
                "value": schema_of(r.value.as_deref().expect("value"), &topic),
            }),
        );
    }
    // A streamed transaction (the snapshot has no transaction metadata) and a heartbeat.
    let (t, cols) = &tables[0];
    exec(&mut c, &[&workload(&db, t, cols)[4]]).await;
    let mut further = serde_json::Map::new();
    for (what, topic) in [
        ("transaction", format!("{prefix}.transaction")),
        ("heartbeat", format!("__debezium-heartbeat.{prefix}")),
    ] {
        let recs = consume_raw(
            std::slice::from_ref(&topic),
            "read_committed",
            1,
            Duration::ZERO,
            Duration::from_secs(120),
        );
        let r = recs
            .first()
            .unwrap_or_else(|| panic!("no record on {topic}\n{}", worker_log_tail(60)));
        further.insert(
            what.to_string(),
            json!({
                "key": schema_of(r.key.as_deref().expect("key"), &topic),
                "value": schema_of(r.value.as_deref().expect("value"), &topic),
            }),
        );
    }
    write("mariadb/further-topics", &J::Object(further));
    drop(connector);
    exec(&mut c, &[&format!("DROP DATABASE {db}")]).await;
    eprintln!("recorded {} tables' schemas into {GOLDEN}", tables.len());
}
