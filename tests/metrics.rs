//! Metrics of a running pipeline, scraped by the test bed's real Prometheus (`scripts/services`
//! starts it with file service discovery under `.data/prometheus/targets/`): every metric of
//! the catalogue is exported; every expression of the Grafana dashboard returns data for this
//! pipeline; and the figures are the pipeline's (the written-events counter equals the records
//! a read_committed consumer reads from the table's topic), each series labelled with the
//! pipeline's name. Both with a snapshot (start = "initial") and without one (start =
//! "latest": the snapshot and dead-letter series exist at zero all the same).

mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::*;

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

async fn metrics_text(addr: std::net::SocketAddr) -> String {
    let r = http()
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    r.text().await.unwrap()
}

/// The value of the series `name{labels}` in a text exposition (labels in any order).
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        let (series, value) = l.rsplit_once(' ')?;
        let (n, rest) = series.split_once('{').unwrap_or((series, "}"));
        if n != name {
            return None;
        }
        let all = labels
            .iter()
            .all(|(k, v)| rest.contains(&format!("{k}=\"{v}\"")));
        all.then(|| value.parse().ok()).flatten()
    })
}

fn prometheus_url() -> String {
    let port = std::env::var("SLUICE_PROMETHEUS_PORT").unwrap_or_else(|_| "9090".into());
    format!("http://127.0.0.1:{port}")
}

/// An instant query; the result vector.
async fn query(q: &str) -> Vec<Value> {
    let url = url::Url::parse_with_params(
        &format!("{}/api/v1/query", prometheus_url()),
        [("query", q)],
    )
    .unwrap();
    let r = http().get(url).send().await.unwrap_or_else(|e| {
        panic!(
            "Prometheus is not reachable at {} ({e}): run ./scripts/services up",
            prometheus_url()
        )
    });
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["status"], "success", "query {q}: {v}");
    v["data"]["result"].as_array().cloned().unwrap_or_default()
}

fn value_of(r: &Value) -> f64 {
    r["value"][1]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(f64::NAN)
}

/// Every `expr` of the dashboard's panels (nested rows included).
fn dashboard_exprs() -> Vec<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("grafana/dashboards/sluice.json");
    let d: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    fn walk(panels: &Value, out: &mut Vec<String>) {
        for p in panels.as_array().into_iter().flatten() {
            for t in p["targets"].as_array().into_iter().flatten() {
                if let Some(e) = t["expr"].as_str() {
                    out.push(e.to_string());
                }
            }
            walk(&p["panels"], out);
        }
    }
    let mut out = Vec::new();
    walk(&d["panels"], &mut out);
    out.dedup();
    out
}

/// The test's target file for Prometheus; removed when dropped.
struct Target(PathBuf);

impl Target {
    fn write(name: &str, addr: std::net::SocketAddr) -> Target {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".data/prometheus/targets");
        assert!(
            dir.is_dir(),
            "{} does not exist: run ./scripts/services up (it starts Prometheus)",
            dir.display()
        );
        let path = dir.join(format!("{name}.json"));
        let body = serde_json::json!([{ "targets": [addr.to_string()], "labels": {"test": name} }]);
        std::fs::write(&path, body.to_string()).unwrap();
        Target(path)
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[tokio::test]
async fn prometheus_scrapes_what_the_pipeline_wrote() {
    let flavor = MARIADB;
    let rows = env_usize("SLUICE_TEST_METRICS_ROWS", 300);
    let seeded = 40usize;
    let p = Pipeline::new(flavor, "metrics", "");
    p.edit_config("start = \"latest\"", "start = \"initial\"");
    let mut c = root(flavor.port).await;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {}", p.db),
            &format!("USE {}", p.db),
            &format!(
                "CREATE TABLE {}.t (id INT PRIMARY KEY, v VARCHAR(20))",
                p.db
            ),
            &flavor.insert_seq(&format!("{}.t", p.db), 1, seeded, ""),
        ],
    )
    .await;
    let mut child = p.spawn();
    p.wait_started(Duration::from_secs(60));
    let addr = p.api_addr(Duration::from_secs(30));
    let target = Target::write(&p.name, addr);

    // The catalogue, before any change streamed (the snapshot of `seeded` rows may run).
    let text = metrics_text(addr).await;
    let table = format!("{}.t", p.db);
    for d in sluice::metrics::CATALOGUE {
        assert!(
            text.contains(&format!("# TYPE {} {}", d.name, d.kind.as_str())),
            "{} is not exported:\n{text}",
            d.name
        );
    }
    for name in sluice::metrics::PROCESS_METRICS {
        assert!(text.contains(name), "{name} is not exported");
    }
    // Every series of sluice's own carries the pipeline's name.
    let pipeline_label = format!("pipeline=\"{}\"", p.name);
    let own: Vec<&str> = text.lines().filter(|l| l.starts_with("sluice_")).collect();
    assert!(own.len() > sluice::metrics::CATALOGUE.len(), "{text}");
    for line in own {
        assert!(
            line.contains(&pipeline_label),
            "{line} does not carry {pipeline_label}"
        );
    }
    for op in sluice::metrics::OPS {
        assert!(
            sample(
                &text,
                "sluice_events_written_total",
                &[("table", &table), ("op", op)]
            )
            .is_some(),
            "the {op} series of {table} exists from the start:\n{text}"
        );
    }

    // The snapshot's reads first: a chunk read after the inserts below began would also read
    // the rows they inserted (as a snapshot does: a row streamed before the chunk's window is
    // read again, with the same state), and the counts would depend on that race.
    let started = Instant::now();
    loop {
        let text = metrics_text(addr).await;
        let read = sample(
            &text,
            "sluice_events_written_total",
            &[("table", &table), ("op", "r")],
        );
        if read == Some(seeded as f64) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the snapshot of {seeded} rows did not finish within 60 s (read: {read:?}); log:\n{}",
            p.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Inserts, updates and deletes, several rows per transaction.
    let base = seeded + 1;
    let mut i = base;
    while i < base + rows {
        let hi = (i + 9).min(base + rows - 1);
        exec(
            &mut c,
            &[&flavor.insert_seq(&format!("{}.t", p.db), i, hi, "")],
        )
        .await;
        i = hi + 1;
    }
    let updates = rows / 3;
    let deletes = rows / 10;
    exec(
        &mut c,
        &[
            &format!("UPDATE {}.t SET v = 'updated' WHERE id <= {updates}", p.db),
            &format!(
                "DELETE FROM {}.t WHERE id > {}",
                p.db,
                seeded + rows - deletes
            ),
        ],
    )
    .await;
    let expected: BTreeMap<&str, f64> = [
        ("r", seeded as f64),
        ("c", rows as f64),
        ("u", updates as f64),
        ("d", deletes as f64),
    ]
    .into();

    // The pipeline's own counters reach the workload's figures.
    let started = Instant::now();
    let counted = loop {
        let text = metrics_text(addr).await;
        let counted: BTreeMap<&str, f64> = expected
            .keys()
            .map(|op| {
                let v = sample(
                    &text,
                    "sluice_events_written_total",
                    &[("table", &table), ("op", op)],
                );
                (*op, v.unwrap_or(0.0))
            })
            .collect();
        if counted == expected || started.elapsed() > Duration::from_secs(60) {
            break counted;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert_eq!(
        counted,
        expected,
        "sluice_events_written_total of {table}; log:\n{}",
        p.log()
    );

    // What a read_committed consumer reads: the same records.
    let recs = consume_raw(
        &[p.topic("t")],
        "read_committed",
        expected.values().sum::<f64>() as usize,
        Duration::from_secs(3),
        Duration::from_secs(60),
    );
    let with_value = recs.iter().filter(|r| r.value.is_some()).count();
    assert_eq!(
        with_value as f64,
        expected.values().sum::<f64>(),
        "records with a value in {}",
        p.topic("t")
    );

    // Prometheus scraped it: the same total, for this instance.
    let started = Instant::now();
    loop {
        let total_q =
            format!("sum(sluice_events_written_total{{job=\"sluice\", instance=\"{addr}\"}})");
        let r = query(&total_q).await;
        let v = r.first().map(value_of);
        if v == Some(expected.values().sum()) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "Prometheus has {v:?} for {total_q}; expected {}",
            expected.values().sum::<f64>()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let committed = query(&format!(
        "sluice_transactions_total{{job=\"sluice\", instance=\"{addr}\", result=\"committed\"}}"
    ))
    .await;
    assert!(
        committed.first().map(value_of).unwrap_or(0.0) >= 1.0,
        "{committed:?}"
    );
    let state = query(&format!(
        "sluice_pipeline_state{{job=\"sluice\", instance=\"{addr}\"}} == 1"
    ))
    .await;
    assert_eq!(state.len(), 1, "{state:?}");
    assert_eq!(state[0]["metric"]["state"], "streaming", "{state:?}");
    assert_eq!(state[0]["metric"]["pipeline"], p.name.as_str(), "{state:?}");
    let lag = query(&format!("sluice_lag_seconds{{instance=\"{addr}\"}}")).await;
    let lag = lag.first().map(value_of).unwrap_or(f64::NAN);
    assert!((0.0..60.0).contains(&lag), "lag {lag}");
    let scanned = query(&format!(
        "sluice_snapshot_rows_scanned{{instance=\"{addr}\", table=\"{table}\"}}"
    ))
    .await;
    assert_eq!(
        scanned.first().map(value_of),
        Some(seeded as f64),
        "{scanned:?}"
    );

    dashboard_has_data(addr, &p).await;

    let st = terminate(&mut child);
    assert!(st.success(), "{st:?}; log:\n{}", p.log());
    drop(target);
}

/// The dashboard's expressions for this instance and pipeline, with its variables filled in.
/// The Cluster row's series exist in cluster mode only (`tests/cluster.rs` checks them).
fn dashboard_queries(addr: std::net::SocketAddr, pipeline: &str) -> Vec<String> {
    dashboard_exprs()
        .iter()
        .filter(|e| {
            !sluice::cluster::metrics::CLUSTER_METRICS
                .iter()
                .any(|(name, _, _)| e.contains(name))
        })
        .map(|e| {
            e.replace("$job", "sluice")
                .replace("instance=~\"$instance\"", &format!("instance=\"{addr}\""))
                .replace(
                    "pipeline=~\"$pipeline\"",
                    &format!("pipeline=\"{pipeline}\""),
                )
                .replace("$__rate_interval", "1m")
        })
        .collect()
}

/// Waits until every dashboard expression returns data for this instance: `rate()` and
/// `increase()` need two scrapes inside their window, so a fresh target has none at first.
async fn dashboard_has_data(addr: std::net::SocketAddr, p: &Pipeline) {
    let timeout = Duration::from_secs(90);
    let started = Instant::now();
    loop {
        let mut empty = Vec::new();
        for q in dashboard_queries(addr, &p.name) {
            if query(&q).await.is_empty() {
                empty.push(q);
            }
        }
        if empty.is_empty() {
            return;
        }
        assert!(
            started.elapsed() < timeout,
            "waited {timeout:?} for every dashboard expression to have data; without data:\n{}\n\
             metrics:\n{}\nlog:\n{}",
            empty.join("\n"),
            metrics_text(addr).await,
            p.log()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Waits until Prometheus has a series for the instant query `q`; returns its result.
async fn wait_for_series(q: &str, what: &str) -> Vec<Value> {
    let timeout = Duration::from_secs(60);
    let started = Instant::now();
    loop {
        let r = query(q).await;
        if !r.is_empty() {
            return r;
        }
        assert!(
            started.elapsed() < timeout,
            "waited {timeout:?} for {what}: `{q}` has no data"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// A pipeline that never snapshotted (start = "latest") and has written no dead letter: the
/// snapshot and dead-letter series of each included table exist at zero from the start, so
/// every dashboard panel has data and an `increase()` alert can see the first dead letter. A
/// table created while streaming gets them from its first row event on.
#[tokio::test]
async fn a_pipeline_without_a_snapshot_exports_every_dashboard_series() {
    let flavor = MARIADB;
    let p = Pipeline::new(flavor, "metrics_latest", "");
    let (mut c, mut child) = p
        .start_with(&[("t", "(id INT PRIMARY KEY, v VARCHAR(20))")])
        .await;
    let addr = p.api_addr(Duration::from_secs(30));
    let target = Target::write(&p.name, addr);
    let table = format!("{}.t", p.db);

    // Straight from the pipeline, before any row: each table's series at zero.
    let text = metrics_text(addr).await;
    let per_table = [
        "sluice_dead_letter_records_total",
        "sluice_snapshot_rows_scanned",
        "sluice_snapshot_rows_estimated",
        "sluice_snapshot_chunks_done",
        "sluice_snapshot_chunks_expected",
        "sluice_snapshot_running",
    ];
    for name in per_table {
        assert_eq!(
            sample(&text, name, &[("pipeline", &p.name), ("table", &table)]),
            Some(0.0),
            "{name} of {table} exists at 0 from the start, labelled with its pipeline:\n{text}"
        );
    }

    // Some traffic, so the rates have something to show; then every expression has data.
    exec(
        &mut c,
        &[
            // MariaDB's sequence tables (seq_1_to_20) live in the current database.
            &format!("USE {}", p.db),
            &flavor.insert_seq(&format!("{}.t", p.db), 1, 20, ""),
        ],
    )
    .await;
    dashboard_has_data(addr, &p).await;
    let q = format!(
        "increase(sluice_dead_letter_records_total{{job=\"sluice\", instance=\"{addr}\", \
         table=\"{table}\"}}[1m])"
    );
    let r = wait_for_series(
        &q,
        "the dead-letter increase of a table with no dead letter",
    )
    .await;
    assert_eq!(r.first().map(value_of), Some(0.0), "{r:?}");

    // A table created while streaming: its series exist once its first row was read.
    let later = format!("{}.later", p.db);
    exec(
        &mut c,
        &[
            &format!("CREATE TABLE {later} (id INT PRIMARY KEY, v VARCHAR(20))"),
            &format!("INSERT INTO {later} VALUES (1, 'x')"),
        ],
    )
    .await;
    let started = Instant::now();
    loop {
        let text = metrics_text(addr).await;
        let written = sample(
            &text,
            "sluice_events_written_total",
            &[("table", &later), ("op", "c")],
        );
        if written == Some(1.0) {
            for name in per_table {
                assert_eq!(
                    sample(&text, name, &[("table", &later)]),
                    Some(0.0),
                    "{name} of {later}, a table created while streaming:\n{text}"
                );
            }
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "waited 60 s for the row of {later} to be written (written {written:?}); log:\n{}",
            p.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let st = terminate(&mut child);
    assert!(st.success(), "{st:?}; log:\n{}", p.log());
    drop(target);
}

/// One source transaction over 12 tables whose topics have 3 partitions each: the commit
/// wrote a dozen or more data partitions and the offsets topic's. The commit markers of every
/// one of them are checked (`sluice_commit_markers_total{result="verified"}` grows by at
/// least that many; the check asks for all their last stable offsets at once), none is left
/// unverified, and no check ran out of time.
#[tokio::test]
async fn the_markers_of_every_partition_a_commit_wrote_are_checked() {
    const TABLES: usize = 12;
    let flavor = MARIADB;
    let p = Pipeline::new(flavor, "markers", "");
    let db = p.db.clone();
    p.edit_config(
        &format!("offsets_topic = \"{}\"", p.offsets_topic),
        &format!("offsets_topic = \"{}\"\npartitions = 3", p.offsets_topic),
    );
    let names: Vec<String> = (0..TABLES).map(|i| format!("t{i:02}")).collect();
    let tables: Vec<(&str, &str)> = names
        .iter()
        .map(|n| (n.as_str(), "(id INT PRIMARY KEY, v INT)"))
        .collect();
    let (mut c, _child) = p.start_with(&tables).await;
    let addr = p.api_addr(Duration::from_secs(30));
    let markers = |text: &str, result: &str| {
        sample(text, "sluice_commit_markers_total", &[("result", result)]).unwrap_or(0.0)
    };
    let before = markers(&metrics_text(addr).await, "verified");

    let mut txn = vec!["BEGIN".to_string()];
    for n in &names {
        txn.push(format!(
            "INSERT INTO {db}.{n} VALUES (1, 1), (2, 2), (3, 3), (4, 4)"
        ));
    }
    txn.push("COMMIT".to_string());
    let sql: Vec<&str> = txn.iter().map(String::as_str).collect();
    exec(&mut c, &sql).await;
    let topics: Vec<String> = names.iter().map(|n| p.topic(n)).collect();
    let recs = consume(
        &topics,
        "read_committed",
        TABLES * 4,
        Duration::from_secs(1),
        Duration::from_secs(60),
    );
    assert_eq!(recs.len(), TABLES * 4, "{}", p.log());
    let written: std::collections::BTreeSet<(String, i32)> = recs
        .iter()
        .map(|r| (r.topic.clone(), r.partition))
        .collect();
    assert!(
        written.len() > TABLES,
        "the keys spread over more partitions than tables: {written:?}"
    );
    // The data partitions and the offsets topic's; idle offset commits may add to it.
    let want = (written.len() + 1) as f64;
    let started = Instant::now();
    let text = loop {
        let text = metrics_text(addr).await;
        if markers(&text, "verified") - before >= want
            || started.elapsed() > Duration::from_secs(20)
        {
            break text;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let verified = markers(&text, "verified") - before;
    assert!(
        verified >= want,
        "{verified} partitions verified after a commit over {} partitions and the offsets \
         topic's; log:\n{}",
        written.len(),
        p.log()
    );
    assert_eq!(markers(&text, "unverified"), 0.0, "{text}");
    let log = p.log();
    assert!(!log.contains("did not reach"), "{log}");
    assert!(!log.contains("transient"), "{log}");
}
