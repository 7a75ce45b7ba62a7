//! sluice side by side with Debezium on the type matrix (`scripts/parity`; not part of
//! `scripts/test`: its one test is `#[ignore]`d, the comparison's own unit tests run always).
//!
//! One database with the type matrix's tables (`tests/support/matrix.rs`), row 1 preloaded;
//! Debezium's connector (on the test bed's Kafka Connect worker) and a sluice pipeline both
//! start with a snapshot, then the same transactions run once and both read them from the same
//! binlog: inserts (row B, a row of NULLs), an update (row A to B), a primary-key change,
//! a delete, a TRUNCATE and one more insert. Every record of every table is then compared (see
//! `parity/compare.rs`) and the Markdown report written to `PARITY_OUT`.
//!
//! Environment (set by `scripts/parity`): `PARITY_FLAVOR` (`mariadb` | `mysql`),
//! `PARITY_SCHEMAS` (`1`: JsonConverter `schemas.enable=true` on both sides),
//! `PARITY_SLUICE_ROUTE` (TOML lines added to sluice's route), `PARITY_DEBEZIUM` (a JSON
//! object of connector properties), both with `{db}` standing for the database,
//! `PARITY_RESET_GTIDS` (`1`: on MySQL, reset the scratch server's GTID state when it holds
//! tagged GTIDs), `PARITY_OUT` (the report's path), `PARITY_KEEP` (`1`: keep the database and
//! the topics; otherwise a run that finishes drops and deletes them).

mod support;

#[path = "parity/compare.rs"]
mod compare;
#[path = "parity/tests.rs"]
mod compare_tests;
#[path = "parity/deliberate.rs"]
mod deliberate;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use compare::{
    compare_table, compare_transaction_topic, report, without_topic_prefix, Column, Outcome, Record,
};
use mysql_async::prelude::*;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Headers, Message};
use rdkafka::TopicPartitionList;
use serde_json::{json, Value};
use support::connect::{require_worker, worker_log_tail, Connector};
use support::matrix::{create_tables, matrix, Col};
use support::{exec, root, unique, Flavor, KAFKA, MARIADB, MYSQL};

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_default()
}

/// Every record of `topics` (those that exist), read_committed, until nothing new comes for
/// `idle`: topic → records in offset order (partition by partition).
fn read_topics(topics: &[String], idle: Duration) -> BTreeMap<String, Vec<Record>> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", KAFKA)
        .set("group.id", unique("parity_reader"))
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_committed")
        .set("auto.offset.reset", "earliest")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    for t in topics {
        let md = consumer
            .fetch_metadata(Some(t), Duration::from_secs(10))
            .expect("metadata");
        for mt in md.topics().iter().filter(|mt| mt.error().is_none()) {
            for p in mt.partitions() {
                tpl.add_partition_offset(t, p.id(), rdkafka::Offset::Beginning)
                    .expect("tpl");
            }
        }
    }
    let mut out: BTreeMap<String, Vec<Record>> = BTreeMap::new();
    if tpl.count() == 0 {
        return out;
    }
    consumer.assign(&tpl).expect("assign");
    let parse = |b: Option<&[u8]>, what: &str| {
        b.map(|b| {
            serde_json::from_slice(b).unwrap_or_else(|e| {
                panic!("{what} is not JSON ({e}): {}", String::from_utf8_lossy(b))
            })
        })
    };
    let mut last = Instant::now();
    while last.elapsed() < idle {
        match consumer.poll(Duration::from_millis(100)) {
            None => {}
            Some(Err(e)) => panic!("consume {topics:?}: {e}"),
            Some(Ok(m)) => {
                last = Instant::now();
                let headers = m
                    .headers()
                    .map(|hs| {
                        hs.iter()
                            .map(|h| {
                                let v = h.value.map(|v| String::from_utf8_lossy(v).into_owned());
                                (h.key.to_string(), v)
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                out.entry(m.topic().to_string()).or_default().push(Record {
                    key: parse(m.key(), "key"),
                    value: parse(m.payload(), "value"),
                    headers,
                });
            }
        }
    }
    out
}

/// Reads `topics` until every one holds a record `done` accepts, for at most `timeout`; fails
/// early when the connector failed.
async fn wait_for_records(
    side: &str,
    topics: &[String],
    done: impl Fn(&Record) -> bool,
    timeout: Duration,
    connector: &Connector,
) {
    let deadline = Instant::now() + timeout;
    loop {
        connector.assert_not_failed().await;
        let got = read_topics(topics, Duration::from_secs(2));
        let short: Vec<String> = topics
            .iter()
            .filter(|t| !got.get(*t).is_some_and(|rs| rs.iter().any(&done)))
            .map(|t| format!("{t}: {} records", got.get(t).map_or(0, Vec::len)))
            .collect();
        if short.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{side}: not every topic got its last record within {timeout:?}: {short:?}\n{}",
            worker_log_tail(60)
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

fn values(cols: &[Col], pick: impl Fn(&Col) -> &str) -> String {
    cols.iter().map(pick).collect::<Vec<_>>().join(", ")
}

/// The workload after the snapshot: transactions over all tables at once, as SQL scripts.
fn workload(db: &str, tables: &[(&str, Vec<Col>)]) -> Vec<Vec<String>> {
    let each = |f: &dyn Fn(&str, &[Col]) -> String| -> Vec<String> {
        tables.iter().map(|(t, cols)| f(t, cols)).collect()
    };
    vec![
        each(&|t, cols| {
            let nulls = values(cols, |_| "NULL");
            format!(
                "INSERT INTO {db}.{t} VALUES (2, {}), (3, {nulls})",
                values(cols, |c| c.b)
            )
        }),
        each(&|t, cols| {
            let set: Vec<String> = cols
                .iter()
                .map(|c| format!("{} = {}", c.name, c.b))
                .collect();
            format!("UPDATE {db}.{t} SET {} WHERE id = 1", set.join(", "))
        }),
        each(&|t, _| format!("UPDATE {db}.{t} SET id = 20 WHERE id = 2")),
        each(&|t, _| format!("DELETE FROM {db}.{t} WHERE id = 3")),
        each(&|t, _| format!("TRUNCATE TABLE {db}.{t}")),
        each(&|t, cols| format!("INSERT INTO {db}.{t} VALUES (4, {})", values(cols, |c| c.a))),
    ]
}

/// Whether a record is the key of the workload's last insert (id 4), written after everything
/// else in every table.
fn is_last(r: &Record) -> bool {
    let key = r.key.as_ref().map(|k| k.get("payload").unwrap_or(k));
    key.is_some_and(|k| k["id"] == 4)
}

/// Column types Debezium 3.5 cannot capture at all, with why: its DDL parser refuses MariaDB's
/// `INET6` and `INET4` (the connector task fails with "DDL statement couldn't be parsed").
const DEBEZIUM_CANNOT_CAPTURE: &[(&str, &str)] = &[
    (
        "INET6",
        "Debezium 3.5's DDL parser refuses the type (its task fails: \"DDL statement couldn't \
         be parsed\"); sluice writes the text the server prints (`2001:db8::1`)",
    ),
    (
        "INET4",
        "Debezium 3.5's DDL parser refuses the type (its task fails: \"DDL statement couldn't \
         be parsed\"); sluice writes the text the server prints (`192.0.2.1`)",
    ),
];

/// The type matrix: per table, its name and columns.
type Tables = Vec<(&'static str, Vec<Col>)>;

/// The matrix without the columns Debezium cannot capture, and those columns with the reason.
fn runnable(tables: Tables) -> (Tables, Vec<(Column, &'static str)>) {
    let mut left_out = Vec::new();
    let tables = tables
        .into_iter()
        .map(|(t, cols)| {
            let (keep, drop): (Vec<Col>, Vec<Col>) = cols
                .into_iter()
                .partition(|c| !DEBEZIUM_CANNOT_CAPTURE.iter().any(|(ty, _)| *ty == c.ty));
            for c in drop {
                let why = DEBEZIUM_CANNOT_CAPTURE
                    .iter()
                    .find(|(ty, _)| *ty == c.ty)
                    .map(|w| w.1);
                let col = Column {
                    table: t.into(),
                    name: c.name.into(),
                    ty: c.ty.into(),
                };
                left_out.push((col, why.unwrap_or_default()));
            }
            (t, keep)
        })
        .collect();
    (tables, left_out)
}

/// MySQL runs on the scratch instance: Debezium 3.5's MySQL connector cannot parse tagged
/// GTIDs (`uuid:tag:n`), which the main instance holds once sluice's tests ran.
async fn mysql_gtids_debezium_can_read(c: &mut mysql_async::Conn) {
    let executed: String = c
        .query_first("SELECT @@GLOBAL.gtid_executed")
        .await
        .expect("gtid_executed")
        .unwrap_or_default();
    let tagged = executed.split(',').any(|uuid_set| {
        uuid_set.split(':').skip(1).any(|part| {
            part.trim()
                .starts_with(|ch: char| ch.is_ascii_alphabetic() || ch == '_')
        })
    });
    if !tagged {
        return;
    }
    assert!(
        env("PARITY_RESET_GTIDS") == "1",
        "the scratch MySQL's gtid_executed holds tagged GTIDs ({executed}), which Debezium \
         3.5's MySQL connector cannot parse; run `scripts/parity --reset-scratch-gtids` to \
         clear them (RESET BINARY LOGS AND GTIDS on the scratch instance)"
    );
    eprintln!("resetting the scratch MySQL's binary logs and GTIDs (tagged: {executed})");
    exec(c, &["RESET BINARY LOGS AND GTIDS"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "tooling: run by scripts/parity"]
async fn parity_run() {
    let flavor: Flavor = match env("PARITY_FLAVOR").as_str() {
        "mariadb" | "" => MARIADB,
        "mysql" => MYSQL.scratch(),
        other => panic!("PARITY_FLAVOR must be mariadb or mysql, got {other:?}"),
    };
    let schemas = env("PARITY_SCHEMAS") == "1";
    require_worker().await;
    let db = unique(&format!("parity_{}", flavor.name));
    // Debezium: the flavor's connector, its own plaintext login.
    let (class, user) = if flavor.mysql {
        ("io.debezium.connector.mysql.MySqlConnector", "sluice")
    } else {
        (
            "io.debezium.connector.mariadb.MariaDbConnector",
            "sluice_plain",
        )
    };
    let mut config = json!({
        "connector.class": class,
        "tasks.max": "1",
        "database.hostname": "127.0.0.1",
        "database.port": flavor.port.to_string(),
        "database.user": user,
        "database.password": "sluice",
        "database.ssl.mode": if flavor.mysql { "disabled" } else { "disable" },
        "database.allowPublicKeyRetrieval": "true",
        "database.server.id": (300_000 + rand::random::<u32>() % 1_000_000).to_string(),
        "topic.prefix": db,
        "database.include.list": db,
        "include.schema.changes": "false",
        "schema.history.internal.kafka.bootstrap.servers": KAFKA,
        "schema.history.internal.kafka.topic": format!("{db}.history"),
        "schema.history.internal.store.only.captured.databases.ddl": "true",
        "snapshot.mode": "initial",
        "snapshot.locking.mode": "none",
        "decimal.handling.mode": "string",
        "time.precision.mode": "adaptive_time_microseconds",
        "binary.handling.mode": "bytes",
        "provide.transaction.metadata": "true",
        "topic.creation.default.replication.factor": "1",
        "topic.creation.default.partitions": "1",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": schemas.to_string(),
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": schemas.to_string(),
    });
    let extra = env("PARITY_DEBEZIUM").replace("{db}", &db);
    if !extra.trim().is_empty() {
        let extra: Value = serde_json::from_str(&extra)
            .unwrap_or_else(|e| panic!("PARITY_DEBEZIUM is not a JSON object ({e}): {extra}"));
        for (k, v) in extra.as_object().expect("PARITY_DEBEZIUM: a JSON object") {
            config[k] = v.clone();
        }
    }

    // sluice: the same name (so `source.name` compares), its own topics.
    let route_extra = env("PARITY_SLUICE_ROUTE").replace("{db}", &db);
    let schemas_line = if schemas { "json_schemas = true\n" } else { "" };
    let txn_schemas_line = schemas_line;
    let dir = tempfile::tempdir().expect("tempdir");
    let sluice_config = dir.path().join("sluice.toml");
    let text = format!(
        r#"name = "{db}"

[source]
url = "mysql://sluice:sluice@127.0.0.1:{port}"
server_id = {sid}
include = ["{db}\\..*"]
start = "initial"

[kafka]
bootstrap_servers = "{KAFKA}"
offsets_topic = "sluice_{db}.offsets"
# Debezium 3 writes its __debezium.context.* headers by default; sluice when asked.
context_headers = true

[transaction_metadata]
enabled = true
topic = "sluice_{db}.transaction"
{txn_schemas_line}
[api]
enabled = false

[[route]]
match = "{db}\\.(.*)"
topic = "sluice_{db}.{db}.$1"
format = "json"
{schemas_line}{route_extra}
"#,
        port = flavor.port,
        sid = 20000 + (rand::random::<u32>() % 40000),
    );
    std::fs::write(&sluice_config, &text).expect("write config");
    let (code, out) = {
        let o = support::sluice_command()
            .args(["check", "--config"])
            .arg(&sluice_config)
            .output()
            .expect("sluice check");
        (
            o.status.code().unwrap_or(-1),
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
        )
    };
    assert!(
        code == 0,
        "sluice refuses the config (an option not built yet?): exit {code}\n{out}\nconfig:\n{text}"
    );

    let mut c = root(flavor.port).await;
    if flavor.mysql {
        mysql_gtids_debezium_can_read(&mut c).await;
    }
    exec(&mut c, &["SET time_zone = '+00:00'", "SET sql_mode = ''"]).await;
    exec(&mut c, &[&format!("CREATE DATABASE {db}")]).await;
    let (tables, left_out) = runnable(matrix(flavor));
    create_tables(&mut c, &db, &tables).await;
    for (t, cols) in &tables {
        let sql = format!("INSERT INTO {db}.{t} VALUES (1, {})", values(cols, |c| c.a));
        exec(&mut c, &[&sql]).await;
    }

    let connector = Connector::create(&format!("parity-{}", db.replace('_', "-")), &config).await;
    let log = std::fs::File::create(dir.path().join("sluice.log")).expect("log");
    let sluice = support::KillOnDrop(
        support::sluice_command()
            .args(["run", "--config"])
            .arg(&sluice_config)
            .env("SLUICE_LOG", "info")
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn sluice"),
    );
    let dbz_topics: Vec<String> = tables
        .iter()
        .map(|(t, _)| format!("{db}.{db}.{t}"))
        .collect();
    let sluice_topics: Vec<String> = dbz_topics.iter().map(|t| format!("sluice_{t}")).collect();
    let started = Instant::now();
    wait_for_records(
        "Debezium snapshot",
        &dbz_topics,
        |_| true,
        Duration::from_secs(240),
        &connector,
    )
    .await;
    wait_for_records(
        "sluice snapshot",
        &sluice_topics,
        |_| true,
        Duration::from_secs(120),
        &connector,
    )
    .await;
    eprintln!("both snapshots read in {:?}", started.elapsed());

    for txn in workload(&db, &tables) {
        let mut t = c
            .start_transaction(Default::default())
            .await
            .expect("begin");
        for sql in &txn {
            t.query_drop(sql)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
        t.commit().await.expect("commit");
    }
    wait_for_records(
        "Debezium",
        &dbz_topics,
        is_last,
        Duration::from_secs(180),
        &connector,
    )
    .await;
    wait_for_records(
        "sluice",
        &sluice_topics,
        is_last,
        Duration::from_secs(120),
        &connector,
    )
    .await;
    // Read again after a pause: a record too many written late counts too.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let dbz = read_topics(&dbz_topics, Duration::from_secs(2));
    let mut sl = read_topics(&sluice_topics, Duration::from_secs(2));
    for r in sl.values_mut().flatten() {
        without_topic_prefix(r, "sluice_");
    }

    let mut outcome = Outcome::default();
    let mut columns = Vec::new();
    for ((t, cols), (st, dt)) in tables.iter().zip(sluice_topics.iter().zip(&dbz_topics)) {
        let got =
            |m: &BTreeMap<String, Vec<Record>>, t: &String| m.get(t).cloned().unwrap_or_default();
        compare_table(&mut outcome, t, &got(&sl, st), &got(&dbz, dt));
        columns.push(Column {
            table: t.to_string(),
            name: "id".into(),
            ty: "INT PRIMARY KEY".into(),
        });
        columns.extend(cols.iter().map(|c| Column {
            table: t.to_string(),
            name: c.name.into(),
            ty: c.ty.into(),
        }));
    }
    let txn_topics = [
        format!("sluice_{db}.transaction"),
        format!("{db}.transaction"),
    ];
    let txns = read_topics(&txn_topics, Duration::from_secs(2));
    let side = |t: &String| txns.get(t).map(Vec::as_slice).unwrap_or_default();
    compare_transaction_topic(&mut outcome, side(&txn_topics[0]), side(&txn_topics[1]));
    let (mut md, findings) = report(&outcome, flavor.name, &columns);
    for (c, why) in &left_out {
        md.push_str(&format!(
            "\nNot run: {}.{} ({}): {why}.\n",
            c.table, c.name, c.ty
        ));
    }
    let out_path = env("PARITY_OUT");
    if out_path.is_empty() {
        println!("{md}");
    } else {
        std::fs::write(&out_path, &md).expect("write PARITY_OUT");
    }
    eprintln!(
        "[{}] {} records matched, {findings} undocumented difference(s)",
        flavor.name, outcome.matched
    );
    drop(connector);
    drop(sluice);
    if env("PARITY_KEEP") != "1" {
        exec(&mut c, &[&format!("DROP DATABASE {db}")]).await;
        let mut topics: Vec<String> = dbz_topics.into_iter().chain(sluice_topics).collect();
        topics.extend(txn_topics);
        topics.extend([
            format!("{db}.history"),
            format!("sluice_{db}.offsets"),
            format!("{db}.schema-changes"),
            format!("_sluice_schema_history.{db}"),
        ]);
        delete_topics(&topics).await;
    }
}

/// Deletes the run's topics (those that exist); a failure is only reported.
async fn delete_topics(topics: &[String]) {
    use rdkafka::admin::{AdminClient, AdminOptions};
    use rdkafka::client::DefaultClientContext;
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", KAFKA)
        .create()
        .expect("admin client");
    let names: Vec<&str> = topics.iter().map(String::as_str).collect();
    match admin.delete_topics(&names, &AdminOptions::new()).await {
        Ok(results) => {
            for r in results {
                if let Err((t, e)) = r {
                    eprintln!("deleting topic {t}: {e}");
                }
            }
        }
        Err(e) => eprintln!("deleting the run's topics: {e}"),
    }
}
