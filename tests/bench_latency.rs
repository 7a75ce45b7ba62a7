//! `sluice bench-latency` against the test bed: on a running pipeline it measures every row of
//! its window, in one-row and ten-row source transactions, with ordered, finite percentiles
//! and nothing missing; against a topic nobody writes to it fails and names the missing
//! rows within its drain timeout; a topic that never appears is a clear error.

mod support;

use std::time::{Duration, Instant};

use serde_json::Value;
use support::*;

/// Runs `sluice bench-latency <args>`, which must exit within `timeout`: (exit code, the
/// JSON line on stdout if there is one, stderr).
fn bench_latency(args: &[&str], timeout: Duration) -> (i32, Option<Value>, String) {
    let mut cmd = sluice_command();
    cmd.arg("bench-latency").args(args);
    let (status, out, err) = run_within(cmd, timeout);
    let code = status.unwrap_or_else(|| {
        panic!(
            "`sluice bench-latency {}` did not exit within {timeout:?}; stdout:\n{out}\nstderr:\n{err}",
            args.join(" ")
        )
    });
    let lines: Vec<&str> = out.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines.len() <= 1, "at most one line on stdout:\n{out}");
    let line = lines
        .first()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")));
    (code, line, err)
}

fn f(r: &Value, field: &str) -> f64 {
    r[field]
        .as_f64()
        .unwrap_or_else(|| panic!("{field} is not a number: {r}"))
}

/// Checks the line of a complete run of 200 rows/s, 1 s warm-up and 3 s measured.
fn check_complete(r: &Value, txn_rows: u64) {
    assert_eq!(r["txn_rows"], txn_rows, "{r}");
    assert_eq!(r["target_rows_per_s"], 200, "{r}");
    // 4 s at 200 rows/s; the 3 s after the warm-up measured, every row received.
    assert_eq!(r["rows_written"], 800, "{r}");
    assert_eq!(r["rows_measured"], 600, "{r}");
    assert_eq!(r["histogram_count"], r["rows_measured"], "{r}");
    assert_eq!(r["missing"], 0, "{r}");
    assert_eq!(r["missing_first_ids"], serde_json::json!([]), "{r}");
    for field in [
        "unexpected_duplicate",
        "unexpected_beyond",
        "unexpected_unparsed",
        "unexpected_tombstones",
        "consumer_errors",
    ] {
        assert_eq!(r[field], 0, "{field}: {r}");
    }
    let (p50, p99, p999, max) = (
        f(r, "p50_ms"),
        f(r, "p99_ms"),
        f(r, "p999_ms"),
        f(r, "max_ms"),
    );
    assert!(
        p50.is_finite()
            && max.is_finite()
            && 0.0 <= p50
            && p50 <= p99
            && p99 <= p999
            && p999 <= max,
        "{r}"
    );
    // Generous: a pipeline that commits every 50 ms delivers well within seconds.
    assert!(max < 10_000.0, "{r}");
    let achieved = f(r, "achieved_rows_per_s");
    assert!((100.0..=250.0).contains(&achieved), "{r}");
    assert!(r["lag_samples"].as_u64().unwrap_or(0) >= 2, "{r}");
    assert!(r["lag_slope_rows_per_s"].is_number(), "{r}");
    assert!(r["bounded"].is_boolean(), "{r}");
    assert!(f(r, "driver_behind_max_ms") >= 0.0, "{r}");
    assert!(f(r, "cpu_s") >= 0.0, "{r}");
}

async fn measures_the_latency_of_a_running_pipeline(flavor: Flavor) {
    let name = unique("lat_run");
    let p = Pipeline::named(flavor, &name, "");
    let (_c, _child) = p
        .start_with(&[("t", "(id BIGINT PRIMARY KEY, v VARCHAR(50) NOT NULL)")])
        .await;
    let source = format!("mysql://root@127.0.0.1:{}", flavor.port);
    let table = format!("{}.t", p.db);
    let topic = p.topic("t");
    for txn_rows in ["1", "10"] {
        let started = Instant::now();
        // The topic does not exist before the first run: it writes a first row and waits.
        let (code, line, err) = bench_latency(
            &[
                "--source",
                &source,
                "--table",
                &table,
                "--topic",
                &topic,
                "--rate",
                "200",
                "--txn-rows",
                txn_rows,
                "--warmup-s",
                "1",
                "--seconds",
                "3",
                "--drain-timeout-s",
                "20",
                "--payload-bytes",
                "50",
            ],
            Duration::from_secs(90),
        );
        let r = line.unwrap_or_else(|| panic!("no line; stderr:\n{err}\nlog:\n{}", p.log()));
        assert_eq!(code, 0, "[{}] {r}\nstderr:\n{err}", flavor.name);
        check_complete(&r, txn_rows.parse().unwrap());
        assert!(started.elapsed() < Duration::from_secs(60), "{r}");
    }
}

per_flavor!(measures_the_latency_of_a_running_pipeline);

/// Creates database `db` on MariaDB.
async fn create_database(db: &str) {
    let mut c = root(MARIADB.port).await;
    exec(&mut c, &[&format!("CREATE DATABASE {db}")]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_nobody_delivers_are_named_as_missing() {
    // A table no pipeline reads (bench-latency creates it), and a topic nobody writes to.
    let db = unique("lat_nobody");
    create_database(&db).await;
    let topic = format!("{db}.t");
    create_topic(&topic, 2, &[]);
    let started = Instant::now();
    let (code, line, err) = bench_latency(
        &[
            "--table",
            &format!("{db}.t"),
            "--topic",
            &topic,
            "--rate",
            "50",
            "--warmup-s",
            "0",
            "--seconds",
            "1",
            "--drain-timeout-s",
            "2",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(code, 1, "stderr:\n{err}");
    let r = line.unwrap_or_else(|| panic!("the line is printed before the error:\n{err}"));
    assert_eq!(r["rows_written"], 50, "{r}");
    assert_eq!(r["missing"], 50, "{r}");
    assert_eq!(r["rows_measured"], 0, "{r}");
    assert_eq!(
        r["missing_first_ids"].as_array().map(Vec::len),
        Some(10),
        "{r}"
    );
    assert!(
        err.contains("50 of the 50 rows")
            && err.contains("were not received")
            && err.contains("ids 1, 2, 3"),
        "{err}"
    );
    // The drain timeout bounds the wait.
    let drain = f(&r, "drain_s");
    assert!((2.0..10.0).contains(&drain), "{r}");
    assert!(started.elapsed() < Duration::from_secs(45));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_that_never_appears_is_a_clear_error() {
    let db = unique("lat_notopic");
    create_database(&db).await;
    let topic = format!("{db}.t");
    let (code, line, err) = bench_latency(
        &[
            "--table",
            &format!("{db}.t"),
            "--topic",
            &topic,
            "--rate",
            "10",
            "--topic-wait-s",
            "2",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(code, 1, "stderr:\n{err}");
    assert!(line.is_none(), "no line: {line:?}");
    assert!(
        err.contains(&format!("topic `{topic}` does not exist"))
            && err.contains("did not appear within 2 s")
            && err.contains("run a sluice pipeline"),
        "{err}"
    );
}
