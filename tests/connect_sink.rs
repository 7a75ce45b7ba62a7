//! sluice's topics consumed by a real Kafka Connect sink: Debezium's JDBC sink connector on the
//! test bed's Connect worker (`scripts/services up connect`), reading the records of an Avro
//! route with Apicurio's `AvroConverter` in Confluent framing, or those of a JSON route with
//! `json_schemas = true` with Kafka Connect's `JsonConverter` (`schemas.enable=true`), and
//! writing them into a second database on the same server. After inserts, updates,
//! primary-key changes and deletes on two tables (one with a composite key), the target tables
//! must equal the source tables row by row.
//!
//! The sink is set up as README's "Kafka Connect sinks" recipe says: upsert by record key,
//! deletes applied, tables created by the sink, `read_committed` consumption (Connect sinks
//! read `read_uncommitted` by default, which would apply aborted records), and the
//! `StringConverter` for headers.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use mysql_async::prelude::*;
use serde_json::json;
use support::connect::{
    committed_offsets, pretty_status, require_worker, worker_log_tail, Connector,
};
use support::{consume_raw, exec, Flavor, Pipeline};

/// The tables: name, `CREATE TABLE` body, the key columns and the row as one comparable string.
const TABLES: &[(&str, &str, &str, &str)] = &[
    (
        "items",
        "(id INT PRIMARY KEY, name VARCHAR(64) NOT NULL, qty INT, price DECIMAL(10,2))",
        "id",
        "CONCAT_WS('|', id, name, IFNULL(qty, 'NULL'), IFNULL(price, 'NULL'))",
    ),
    (
        "pairs",
        "(a INT, b VARCHAR(16), note VARCHAR(64), PRIMARY KEY (a, b))",
        "a, b",
        "CONCAT_WS('|', a, b, IFNULL(note, 'NULL'))",
    ),
];

const ITEMS: usize = 200;
const PAIRS: usize = 100;

/// The workload, one statement (one source transaction) after the other: (SQL, table index,
/// records per affected row: an insert or update writes one, a primary-key change three
/// (delete, tombstone, create), a delete two (delete, tombstone)). Every matched row changes,
/// so the affected-row count is the number of row events in the binlog.
fn workload() -> Vec<(String, usize, usize)> {
    let items: Vec<String> = (1..=ITEMS)
        .map(|i| {
            let price = if i % 5 == 0 {
                "NULL".to_string()
            } else {
                format!("{}.{:02}", i, i % 100)
            };
            let qty = if i % 7 == 0 {
                "NULL".to_string()
            } else {
                (i * 3).to_string()
            };
            format!("({i},'item {i}',{qty},{price})")
        })
        .collect();
    let pairs: Vec<String> = (1..=PAIRS)
        .map(|i| format!("({},'k{}','pair {i}')", i / 4, i % 4))
        .collect();
    let s = |sql: &str, table, per_row| (sql.to_string(), table, per_row);
    vec![
        // Inserts in batches (several transactions).
        (
            format!("INSERT INTO items VALUES {}", items[..50].join(",")),
            0,
            1,
        ),
        (
            format!("INSERT INTO items VALUES {}", items[50..].join(",")),
            0,
            1,
        ),
        (
            format!("INSERT INTO pairs VALUES {}", pairs.join(",")),
            1,
            1,
        ),
        // Non-key updates, NULL to a value and back.
        s(
            "UPDATE items SET qty = qty + 1, name = CONCAT(name, ' v2') WHERE id % 4 = 1",
            0,
            1,
        ),
        s(
            "UPDATE items SET price = 0.50 WHERE id % 5 = 0 AND id <= 50",
            0,
            1,
        ),
        s("UPDATE items SET price = NULL WHERE id IN (10, 20)", 0, 1),
        s(
            "UPDATE pairs SET note = CONCAT('updated ', note) WHERE a % 3 = 0",
            1,
            1,
        ),
        // Primary-key changes (one column; one part of a composite key).
        s("UPDATE items SET id = id + 1000 WHERE id % 10 = 3", 0, 3),
        s("UPDATE pairs SET b = CONCAT(b, 'x') WHERE a % 5 = 2", 1, 3),
        // Deletes, rows whose key changed among them.
        s(
            "DELETE FROM items WHERE id % 9 = 0 OR id IN (1003, 1013)",
            0,
            2,
        ),
        s(
            "DELETE FROM pairs WHERE a = 7 OR (a = 12 AND b = 'k2x')",
            1,
            2,
        ),
        // Inserts that reuse deleted keys, and a last update.
        s(
            "INSERT INTO items VALUES (9, 'again 9', 9, 9.99), (18, 'again 18', NULL, NULL)",
            0,
            1,
        ),
        s("UPDATE items SET qty = 0 WHERE id = 2", 0, 1),
    ]
}

/// Every row of `table` in `db`, as comparable strings ordered by key.
async fn rows(c: &mut mysql_async::Conn, db: &str, table: &str) -> Vec<String> {
    rows_of(c, db, table, table).await
}

/// Every row of `table` in `db`, which has the columns of `like` (one of [`TABLES`]).
async fn rows_of(c: &mut mysql_async::Conn, db: &str, table: &str, like: &str) -> Vec<String> {
    let (_, _, key, row) = TABLES.iter().find(|t| t.0 == like).expect("table");
    let sql = format!("SELECT {row} FROM {db}.{table} ORDER BY {key}");
    c.query::<String, _>(&sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// How sluice writes the records and the sink reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wire {
    /// `format = "avro"`, Apicurio's `AvroConverter`.
    Avro,
    /// `format = "json"` with `json_schemas = true`, Kafka Connect's `JsonConverter`.
    JsonSchemas,
}

impl Wire {
    /// The sink connector's key and value converter settings.
    fn converters(self) -> serde_json::Value {
        match self {
            // Apicurio's converter reads Confluent framing: magic byte, then a 4-byte id
            // (as-confluent) that is the registry's content id (use-id), looked up through
            // Apicurio's v2 API.
            Wire::Avro => {
                let registry = "http://127.0.0.1:8081/apis/registry/v2";
                json!({
                    "key.converter": "io.apicurio.registry.utils.converter.AvroConverter",
                    "key.converter.apicurio.registry.url": registry,
                    "key.converter.apicurio.registry.as-confluent": "true",
                    "key.converter.apicurio.registry.use-id": "contentId",
                    "value.converter": "io.apicurio.registry.utils.converter.AvroConverter",
                    "value.converter.apicurio.registry.url": registry,
                    "value.converter.apicurio.registry.as-confluent": "true",
                    "value.converter.apicurio.registry.use-id": "contentId",
                })
            }
            Wire::JsonSchemas => json!({
                "key.converter": "org.apache.kafka.connect.json.JsonConverter",
                "key.converter.schemas.enable": "true",
                "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                "value.converter.schemas.enable": "true",
            }),
        }
    }
}

async fn sink_replicates_inserts_updates_key_changes_and_deletes(flavor: Flavor) {
    sink_replicates(flavor, Wire::Avro).await
}

async fn json_schemas_sink_replicates_inserts_updates_key_changes_and_deletes(flavor: Flavor) {
    sink_replicates(flavor, Wire::JsonSchemas).await
}

async fn sink_replicates(flavor: Flavor, wire: Wire) {
    let started = Instant::now();
    require_worker().await;
    let p = match wire {
        Wire::Avro => Pipeline::new_avro(flavor, "connect", ""),
        Wire::JsonSchemas => Pipeline::new(flavor, "connect_js", "json_schemas = true"),
    };
    let tables: Vec<(&str, &str)> = TABLES.iter().map(|t| (t.0, t.1)).collect();
    let (mut c, _sluice) = p.start_with(&tables).await;
    let target = format!("{}_sink", p.db);
    exec(&mut c, &[&format!("CREATE DATABASE {target}")]).await;

    let mut expected = [0usize; 2];
    exec(&mut c, &[&format!("USE {}", p.db)]).await;
    for (sql, table, per_row) in workload() {
        c.query_drop(&sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        let affected = c.affected_rows() as usize;
        assert!(affected > 0, "[{}] {sql}: no row affected", flavor.name);
        expected[table] += affected * per_row;
    }

    // Every record sluice wrote, read_committed: the sink must reach the offset after the last
    // one. (On a transactional topic the end offset sits one further, on the commit marker.)
    let topics: Vec<String> = TABLES.iter().map(|t| p.topic(t.0)).collect();
    let want = expected[0] + expected[1];
    let recs = consume_raw(
        &topics,
        "read_committed",
        want,
        Duration::from_secs(2),
        Duration::from_secs(90),
    );
    for (i, t) in topics.iter().enumerate() {
        let got = recs.iter().filter(|r| &r.topic == t).count();
        assert_eq!(
            got,
            expected[i],
            "[{}] {t}: {got} records, the workload makes {}; sluice log:\n{}",
            flavor.name,
            expected[i],
            p.log()
        );
    }
    let mut last: BTreeMap<(String, i32), i64> = BTreeMap::new();
    for r in &recs {
        let e = last.entry((r.topic.clone(), r.partition)).or_insert(0);
        *e = (*e).max(r.offset + 1);
    }

    let (jdbc, user) = if flavor.mysql {
        (
            format!(
                "jdbc:mysql://127.0.0.1:{}/{target}?allowPublicKeyRetrieval=true&useSSL=false",
                flavor.port
            ),
            "root",
        )
    } else {
        (
            format!("jdbc:mariadb://127.0.0.1:{}/{target}", flavor.port),
            "root",
        )
    };
    let name = format!("sluice-test-{}", p.name.replace('_', "-"));
    let mut config = json!({
            "connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector",
            "tasks.max": "1",
            "topics": topics.join(","),
            "connection.url": jdbc,
            "connection.username": user,
            "connection.password": "",
            "insert.mode": "upsert",
            "primary.key.mode": "record_key",
            "delete.enabled": "true",
            "schema.evolution": "basic",
            // The default table name, `${topic}` with `.` made `_`: `<db>_items`. (With
            // `${source.table}` the sink took the source's `items`, in another database of the
            // same server, for its own and never created the table.)
            "collection.name.format": "${topic}",
            "consumer.override.isolation.level": "read_committed",
            "consumer.override.auto.offset.reset": "earliest",
            "header.converter": "org.apache.kafka.connect.storage.StringConverter",
    });
    if let (Some(config), serde_json::Value::Object(converters)) =
        (config.as_object_mut(), wire.converters())
    {
        config.extend(converters);
    }
    let connector = Connector::create(&name, &config).await;

    // The sink's committed offsets reach the offset after the last record.
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        connector.assert_not_failed().await;
        let committed = committed_offsets(&connector.group(), &last);
        let behind: Vec<String> = last
            .iter()
            .filter(|(k, want)| committed[*k].is_none_or(|c| c < **want))
            .map(|((t, part), want)| {
                format!(
                    "{t}[{part}] at {:?}, want {want}",
                    committed[&(t.clone(), *part)]
                )
            })
            .collect();
        if behind.is_empty() {
            break;
        }
        if Instant::now() > deadline {
            panic!(
                "[{}] the sink did not commit past the last record within 180 s: {}\nstatus: {}\n{}",
                flavor.name,
                behind.join(", "),
                pretty_status(&connector.status().await),
                worker_log_tail(80)
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    for (table, ..) in TABLES {
        let source = rows(&mut c, &p.db, table).await;
        let sink = rows_of(&mut c, &target, &format!("{}_{table}", p.db), table).await;
        assert!(
            !source.is_empty(),
            "[{}] {table}: the workload left no rows",
            flavor.name
        );
        if source != sink {
            let only_source: Vec<&String> = source
                .iter()
                .filter(|r| !sink.contains(r))
                .take(10)
                .collect();
            let only_sink: Vec<&String> = sink
                .iter()
                .filter(|r| !source.contains(r))
                .take(10)
                .collect();
            panic!(
                "[{}] {table}: the sink's table differs from the source ({} vs {} rows); only in the \
                 source (first 10): {only_source:?}; only in the sink: {only_sink:?}\nstatus: {}\n{}",
                flavor.name,
                source.len(),
                sink.len(),
                pretty_status(&connector.status().await),
                worker_log_tail(60)
            );
        }
    }
    drop(connector);
    exec(&mut c, &[&format!("DROP DATABASE {target}")]).await;
    eprintln!(
        "[{}] {} {wire:?} records through the JDBC sink; test took {:?}",
        flavor.name,
        want,
        started.elapsed()
    );
}

per_flavor!(
    sink_replicates_inserts_updates_key_changes_and_deletes,
    json_schemas_sink_replicates_inserts_updates_key_changes_and_deletes
);
