//! The JsonConverter checker (`scripts/lib/connect-json-check`: Kafka Connect's own
//! `JsonConverter`, `schemas.enable=true`, run on each key and value, and the result written
//! back, which must give the same JSON) proven on real Debezium output: Debezium's MySQL or
//! MariaDB source connector on the test bed's Connect worker captures a small table (a
//! snapshot, then an insert, an update, a key change and a delete), and every key and value it
//! wrote must pass, with the Connect schemas Debezium gives them. The checker must also refuse
//! records that do not fit their schema.
//!
//! A later change compares sluice's own `schemas.enable=true`-style output with it.

mod support;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::connect::{json_check as check, require_worker, worker_log_tail, Connector};
use support::{consume_raw, exec, root, unique, Flavor, KAFKA};

/// The names of a STRUCT schema's fields (as the checker prints them).
fn field_names(schema: &Value) -> Vec<&str> {
    schema["fields"]
        .as_array()
        .unwrap_or_else(|| panic!("no fields in {schema}"))
        .iter()
        .map(|f| f["field"].as_str().expect("field name"))
        .collect()
}

fn field<'a>(schema: &'a Value, name: &str) -> &'a Value {
    schema["fields"]
        .as_array()
        .and_then(|fs| fs.iter().find(|f| f["field"] == name))
        .unwrap_or_else(|| panic!("no field {name} in {schema}"))
}

#[test]
fn the_checker_refuses_records_that_do_not_fit_their_schema() {
    let int_key = r#"{"schema":{"type":"struct","optional":false,"name":"k.Key","fields":[{"field":"id","type":"int32","optional":false}]},"payload":{"id":1}}"#;
    let input = [
        // Fits: passes.
        format!(r#"{{"key":{int_key},"value":{{"schema":{{"type":"string","optional":true}},"payload":"x"}}}}"#),
        // A string in an int32 field: toConnectData reads it as 0; the way back shows it.
        format!(r#"{{"key":{int_key},"value":{{"schema":{{"type":"int32","optional":false}},"payload":"x"}}}}"#),
        // A null in a required field.
        format!(r#"{{"key":{int_key},"value":{{"schema":{{"type":"int64","optional":false}},"payload":null}}}}"#),
        // A type Connect does not know.
        r#"{"key":null,"value":{"schema":{"type":"int128","optional":false},"payload":1}}"#.to_string(),
    ]
    .join("\n");
    let (code, lines, stderr) = check(&["--stdin"], Some(&input));
    assert_eq!(
        code, 1,
        "a refused record makes exit status 1: {lines:?} {stderr}"
    );
    assert_eq!(lines.len(), 4, "{lines:?} {stderr}");
    assert_eq!(lines[0]["key"]["ok"], true, "{}", lines[0]);
    assert_eq!(lines[0]["value"]["ok"], true, "{}", lines[0]);
    assert_eq!(lines[0]["key"]["schema"]["name"], "k.Key", "{}", lines[0]);
    for l in &lines[1..] {
        assert_eq!(l["key"]["ok"], true, "{l}");
        assert_eq!(l["value"]["ok"], false, "{l}");
        assert!(
            l["value"]["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{l}"
        );
    }
    assert_eq!(lines[1]["value"]["reencoded"]["payload"], 0, "{}", lines[1]);
}

async fn debezium_json_output_passes_the_checker(flavor: Flavor) {
    let started = Instant::now();
    require_worker().await;
    let db = unique(&format!("dbz_{}", flavor.name));
    let mut c = root(flavor.port).await;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {db}"),
            &format!(
                "CREATE TABLE {db}.t (id INT PRIMARY KEY, name VARCHAR(32) NOT NULL, \
                 price DECIMAL(8,2), at DATETIME(3), flag BIT(1), doc JSON)"
            ),
            &format!(
                "INSERT INTO {db}.t VALUES (1, 'one', 1.50, '2024-03-01 10:20:30.456', 1, '{{\"a\": 1}}'), \
                 (2, 'two', NULL, NULL, 0, NULL), (3, 'three', 3.00, '1999-12-31 23:59:59', NULL, '[1, 2]')"
            ),
        ],
    )
    .await;
    // Debezium's MySQL connector for MySQL, its MariaDB connector for MariaDB; plaintext
    // logins (MariaDB's `sluice` requires TLS, `sluice_plain` does not).
    let (class, user) = if flavor.mysql {
        ("io.debezium.connector.mysql.MySqlConnector", "sluice")
    } else {
        (
            "io.debezium.connector.mariadb.MariaDbConnector",
            "sluice_plain",
        )
    };
    let prefix = db.clone();
    let topic = format!("{prefix}.{db}.t");
    let connector = Connector::create(
        &format!("sluice-test-{}", db.replace('_', "-")),
        &json!({
            "connector.class": class,
            "tasks.max": "1",
            "database.hostname": "127.0.0.1",
            "database.port": flavor.port.to_string(),
            "database.user": user,
            "database.password": "sluice",
            "database.ssl.mode": if flavor.mysql { "disabled" } else { "disable" },
            "database.allowPublicKeyRetrieval": "true",
            "database.server.id": (200_000 + rand::random::<u32>() % 1_000_000).to_string(),
            "topic.prefix": prefix,
            "database.include.list": db,
            "table.include.list": format!("{db}.t"),
            "include.schema.changes": "false",
            "schema.history.internal.kafka.bootstrap.servers": KAFKA,
            "schema.history.internal.kafka.topic": format!("{prefix}.history"),
            "schema.history.internal.store.only.captured.databases.ddl": "true",
            "schema.history.internal.store.only.captured.tables.ddl": "true",
            // No FLUSH TABLES WITH READ LOCK: other tests write to the same server.
            "snapshot.locking.mode": "none",
            "decimal.handling.mode": "string",
            "topic.creation.default.replication.factor": "1",
            "topic.creation.default.partitions": "1",
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "key.converter.schemas.enable": "true",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "true",
        }),
    )
    .await;

    // The snapshot's three rows first, so the changes below are streamed from the binlog.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        connector.assert_not_failed().await;
        let got = consume_raw(
            std::slice::from_ref(&topic),
            "read_committed",
            3,
            Duration::ZERO,
            Duration::from_secs(2),
        );
        if got.len() >= 3 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "[{}] Debezium wrote {} of the 3 snapshot records to {topic} within 120 s; status: {}\n{}",
            flavor.name,
            got.len(),
            connector.status().await,
            worker_log_tail(80)
        );
    }
    exec(
        &mut c,
        &[
            &format!(
                "INSERT INTO {db}.t VALUES (4, 'four', 4.25, '2024-01-01 00:00:00', 1, '{{}}')"
            ),
            &format!("UPDATE {db}.t SET name = 'two v2', price = 2.00 WHERE id = 2"),
            &format!("UPDATE {db}.t SET id = 30 WHERE id = 3"),
            &format!("DELETE FROM {db}.t WHERE id = 1"),
        ],
    )
    .await;
    // 3 snapshot reads, a create, an update, a key change (delete, tombstone, create) and a
    // delete (delete, tombstone).
    let want = 10;
    let (code, lines, stderr) = check(
        &[
            "--bootstrap",
            KAFKA,
            "--topic",
            &topic,
            "--expect",
            &want.to_string(),
        ],
        None,
    );
    assert_eq!(
        (code, lines.len()),
        (0, want),
        "[{}] the checker on {topic}: exit {code}, {} lines: {lines:#?}\n{stderr}\n{}",
        flavor.name,
        lines.len(),
        worker_log_tail(40)
    );

    // The schemas Debezium gives its records, as the checker reports them.
    let tombstones = lines
        .iter()
        .filter(|l| l["value"]["schema"].is_null())
        .count();
    assert_eq!(tombstones, 2, "[{}] {lines:#?}", flavor.name);
    let key = &lines[0]["key"]["schema"];
    assert_eq!(key["name"], format!("{prefix}.{db}.t.Key"), "{key}");
    assert_eq!(key["type"], "struct", "{key}");
    assert_eq!(field_names(key), ["id"], "{key}");
    assert_eq!(field(key, "id")["type"], "int32", "{key}");
    assert_eq!(field(key, "id")["optional"], false, "{key}");
    let value = &lines[0]["value"]["schema"];
    assert_eq!(
        value["name"],
        format!("{prefix}.{db}.t.Envelope"),
        "{value}"
    );
    assert_eq!(value["version"], 2, "{value}");
    // Debezium 3.5's field order (envelope version 2): `transaction` before `op`.
    assert_eq!(
        field_names(value),
        [
            "before",
            "after",
            "source",
            "transaction",
            "op",
            "ts_ms",
            "ts_us",
            "ts_ns"
        ],
        "{value}"
    );
    let after = field(value, "after");
    assert_eq!(after["name"], format!("{prefix}.{db}.t.Value"), "{after}");
    assert_eq!(after["optional"], true, "{after}");
    assert_eq!(
        field_names(after),
        ["id", "name", "price", "at", "flag", "doc"],
        "{after}"
    );
    assert_eq!(field(after, "price")["type"], "string", "{after}");
    assert_eq!(
        field(after, "at")["name"],
        "io.debezium.time.Timestamp",
        "{after}"
    );
    // MariaDB's JSON is LONGTEXT with a json_valid check: Debezium sees a plain string.
    assert_eq!(field(after, "doc")["type"], "string", "{after}");
    assert!(field(after, "doc").get("name").is_none(), "{after}");
    assert_eq!(field(after, "flag")["type"], "boolean", "{after}");
    let source = field(value, "source");
    let connector_name = if flavor.mysql { "mysql" } else { "mariadb" };
    assert_eq!(
        source["name"],
        format!("io.debezium.connector.{connector_name}.Source"),
        "{source}"
    );
    assert!(field_names(source).contains(&"gtid"), "{source}");
    drop(connector);
    exec(&mut c, &[&format!("DROP DATABASE {db}")]).await;
    eprintln!(
        "[{}] {want} Debezium ({connector_name}) records passed JsonConverter; test took {:?}",
        flavor.name,
        started.elapsed()
    );
}

// MariaDB only: Debezium 3.5.0.Final's MySQL connector cannot read MySQL 8.4+'s tagged GTIDs
// (`uuid:tag:1-5`; its binlog client's GtidSet parses the tag as a number and the task fails
// with a NumberFormatException), and the test bed's MySQL has them once sluice's tests ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_debezium_json_output_passes_the_checker() {
    if !support::MARIADB.enabled() {
        eprintln!("mariadb not selected by SLUICE_TEST_FLAVORS: skipped");
        return;
    }
    debezium_json_output_passes_the_checker(support::MARIADB).await
}
