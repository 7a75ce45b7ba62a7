//! `sluice bench-produce` against the test bed's Kafka: the records it reports are in the topic
//! exactly once, committed, with the asked value size and keys `{"id":1}` to `{"id":N}`, in
//! transactions of the asked size (with sluice's transaction header, unless asked without;
//! each commit's markers waited for, unless asked not to) or without transactions, at once or
//! in batches that each wait for their acknowledgements; and a missing topic is a clear error,
//! not a hang.

mod support;

use std::time::Duration;

use support::*;

/// Runs `sluice bench-produce <args>`, which must exit within `timeout`, returning (exit
/// code, stdout, stderr).
fn bench_produce(args: &[&str], timeout: Duration) -> (i32, String, String) {
    let mut cmd = sluice_command();
    cmd.arg("bench-produce").args(args);
    let (status, out, err) = run_within(cmd, timeout);
    let code = status.unwrap_or_else(|| {
        panic!(
            "`sluice bench-produce {}` did not exit within {timeout:?}; stderr:\n{err}",
            args.join(" ")
        )
    });
    (code, out, err)
}

/// What a run must report besides its records.
struct Expect {
    mode: &'static str,
    transactions: u64,
    ack_waits: u64,
    header: bool,
    markers_checked: bool,
}

/// Runs the benchmark on a new topic and checks what it reports and what the topic holds
/// (read_committed); returns the records read.
fn run_and_check(tag: &str, extra: &[&str], expect: Expect) -> Vec<RawRec> {
    let topic = unique(tag);
    create_topic(&topic, 1, &[]);
    let mut args = vec![
        "--topic",
        &topic,
        "--records",
        "5000",
        "--value-bytes",
        "200",
    ];
    args.extend_from_slice(extra);
    let (code, out, err) = bench_produce(&args, Duration::from_secs(120));
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "one line of JSON on stdout:\n{out}");
    let r: serde_json::Value = serde_json::from_str(lines[0]).expect("JSON line");
    assert_eq!(r["mode"], expect.mode, "{r}");
    assert_eq!(r["records"], 5000, "{r}");
    assert_eq!(r["transactions"], expect.transactions, "{r}");
    assert_eq!(r["ack_waits"], expect.ack_waits, "{r}");
    assert_eq!(r["header"], expect.header, "{r}");
    assert_eq!(r["markers_checked"], expect.markers_checked, "{r}");
    assert_eq!(r["value_bytes"], 200, "{r}");
    let seconds = r["seconds"].as_f64().expect("seconds");
    let rate = r["records_per_s"].as_f64().expect("records_per_s");
    assert!(seconds > 0.0 && rate > 0.0, "{r}");
    assert!((rate * seconds - 5000.0).abs() < 50.0, "{r}");
    assert!(r["cpu_s"].as_f64().expect("cpu_s") >= 0.0, "{r}");

    let recs = consume_raw(
        std::slice::from_ref(&topic),
        "read_committed",
        5000,
        Duration::from_secs(2),
        Duration::from_secs(60),
    );
    assert_eq!(recs.len(), 5000, "records read back from {topic}");
    for (i, rec) in recs.iter().enumerate() {
        let value = rec.value.as_ref().expect("a value");
        assert_eq!(value.len(), 200, "value of record {i}");
        let tagged = rec.headers.iter().any(|(k, _)| k == "sluice.txn");
        assert_eq!(tagged, expect.header, "header of record {i}");
        let key = rec.key.as_ref().expect("a key");
        assert_eq!(
            std::str::from_utf8(key).unwrap(),
            format!("{{\"id\":{}}}", i + 1),
            "key of record {i}"
        );
    }
    recs
}

#[test]
fn transactional_records_are_committed_in_transactions_of_the_asked_size() {
    let recs = run_and_check(
        "bench_txn",
        &["--txn-records", "1000", "--txn-max-ms", "60000"],
        Expect {
            mode: "transactional",
            transactions: 5,
            ack_waits: 5,
            header: true,
            markers_checked: true,
        },
    );
    // Every record carries sluice's transaction header; one attempt per 1000 records.
    let attempts = attempts(&recs);
    assert_eq!(attempts.len(), 5, "{attempts:?}");
    assert!(attempts[0].starts_with("bench-produce:1/"), "{attempts:?}");
    // 5000 records and a commit marker after each of the five transactions.
    assert_eq!(recs.last().map(|r| r.offset), Some(5000 + 4 - 1));
}

/// The distinct `sluice.txn` header values of `recs`, in order.
fn attempts(recs: &[RawRec]) -> Vec<String> {
    let mut attempts: Vec<String> = Vec::new();
    for rec in recs {
        let tag = rec
            .headers
            .iter()
            .find(|(k, _)| k == "sluice.txn")
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
            .expect("sluice.txn header");
        if attempts.last() != Some(&tag) {
            attempts.push(tag);
        }
    }
    attempts
}

#[test]
fn transactions_without_the_header_or_the_marker_check_when_asked() {
    let recs = run_and_check(
        "bench_txn_bare",
        &[
            "--txn-records",
            "2500",
            "--header",
            "false",
            "--check-markers",
            "false",
        ],
        Expect {
            mode: "transactional",
            transactions: 2,
            ack_waits: 2,
            header: false,
            markers_checked: false,
        },
    );
    assert_eq!(recs.last().map(|r| r.offset), Some(5000 + 1 - 1));
}

#[test]
fn idempotent_records_are_written_without_transactions() {
    let recs = run_and_check(
        "bench_idem",
        &["--idempotent"],
        Expect {
            mode: "idempotent",
            transactions: 0,
            ack_waits: 1,
            header: false,
            markers_checked: false,
        },
    );
    assert!(recs.iter().all(|r| r.headers.is_empty()));
    // No commit markers between them.
    assert_eq!(recs.last().map(|r| r.offset), Some(4999));
}

#[test]
fn idempotent_batches_wait_for_their_acknowledgements_and_carry_the_header_when_asked() {
    let recs = run_and_check(
        "bench_idem_batched",
        &[
            "--idempotent",
            "--batched",
            "--txn-records",
            "1000",
            "--txn-max-ms",
            "60000",
            "--header",
            "true",
        ],
        Expect {
            mode: "idempotent, batched",
            transactions: 0,
            ack_waits: 5,
            header: true,
            markers_checked: false,
        },
    );
    // One header value per batch, and no commit markers.
    assert_eq!(attempts(&recs).len(), 5);
    assert_eq!(recs.last().map(|r| r.offset), Some(4999));
}

#[test]
fn batched_without_idempotent_is_refused() {
    let topic = unique("bench_batched_txn");
    let (code, _, err) = bench_produce(&["--topic", &topic, "--batched"], Duration::from_secs(60));
    assert_eq!(code, 2, "clap refuses it: {err}");
    assert!(err.contains("--idempotent"), "{err}");
}

#[test]
fn a_missing_topic_is_a_clear_error() {
    let topic = unique("bench_missing");
    let (code, out, err) = bench_produce(&["--topic", &topic], Duration::from_secs(60));
    assert_eq!(code, 1, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.is_empty(), "nothing on stdout:\n{out}");
    assert!(
        err.contains(&format!("`{topic}` does not exist")) && err.contains("create it"),
        "{err}"
    );
}
