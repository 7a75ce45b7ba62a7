//! A faulty link between sluice and the source, made by a proxy (`support::proxy`):
//!
//! * slow: an initial snapshot in small chunks while another captured table receives ~150 KB
//!   blob rows, whose binlog events take tens of milliseconds each to arrive. Snapshot results
//!   and binlog reads race in the stream loop's `select!` all the time; a read that loses such
//!   a race must lose no byte of the stream.
//! * corrupting: one byte inside a binlog event is flipped on the way; sluice must stop with a
//!   definite error naming the position, commit nothing of that event or after it, and read
//!   it intact after a restart.
//!
//! Through the proxy the connections are plaintext (`ssl_mode = "disabled"`): on MariaDB as
//! `sluice_plain` (mysql_native_password), on MySQL as `sluice`, whose
//! `caching_sha2_password` works over plaintext (RSA key exchange on a cold cache).
//!
//! Sizes: `SLUICE_TEST_SLOW_ROWS` (snapshot rows, default 3000), `SLUICE_TEST_SLOW_RATE`
//! (link bytes/s, default 4000000).

mod support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql_async::prelude::*;
use serde_json::Value as J;
use support::*;

per_flavor!(
    a_snapshot_completes_while_large_events_cross_a_slow_link,
    a_corrupted_event_stops_the_pipeline_before_it
);

/// Size of each blob row.
const BLOB: usize = 150_000;

fn snapshot_done(p: &Pipeline) -> bool {
    let (code, out) = p.command(&["offsets", "show"]);
    code == 0 && out.contains("\"snapshot\"") && !out.contains("\"done\": false")
}

/// Inserts a `BLOB`-byte row every `every` until `stop`; the count goes to `written`.
fn blob_writer(
    port: u16,
    table: String,
    every: Duration,
    stop: Arc<AtomicBool>,
    written: Arc<AtomicUsize>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut c = root(port).await;
        let mut id = 0usize;
        while !stop.load(Ordering::Relaxed) && id < 2000 {
            id += 1;
            let sql =
                format!("INSERT INTO {table} VALUES ({id}, REPEAT(CHAR(65 + {id} % 26), {BLOB}))");
            c.query_drop(sql).await.expect("blob insert");
            written.store(id, Ordering::SeqCst);
            tokio::time::sleep(every).await;
        }
    })
}

async fn a_snapshot_completes_while_large_events_cross_a_slow_link(flavor: Flavor) {
    let n = env_usize("SLUICE_TEST_SLOW_ROWS", 3000);
    let rate = env_usize("SLUICE_TEST_SLOW_RATE", 4_000_000) as u64;
    let p = Pipeline::new(
        flavor,
        "slow",
        "\n[snapshot]\nchunk_size = 50\nparallelism = 2\n",
    );
    p.edit_config("start = \"latest\"", "start = \"initial\"");
    let mut c = root(flavor.port).await;
    let db = p.db.clone();
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {db}"),
            &format!("CREATE TABLE {db}.t (id INT PRIMARY KEY, pad VARCHAR(100) NOT NULL)"),
            &format!("CREATE TABLE {db}.blobs (id INT PRIMARY KEY, b LONGBLOB NOT NULL)"),
            // MariaDB's sequence tables live in the current database.
            &format!("USE {db}"),
        ],
    )
    .await;
    let mut lo = 1;
    while lo <= n {
        let hi = (lo + 999).min(n);
        exec(
            &mut c,
            &[&flavor.insert_seq(&format!("{db}.t"), lo, hi, "initial")],
        )
        .await;
        lo = hi + 1;
    }
    let proxy = p.source_proxy();
    proxy.throttle(rate);

    // Large events are already flowing when sluice starts, and go on during the snapshot at
    // a quarter of the link (each takes ~40 ms to cross it, so reads are often mid-event when
    // a chunk result arrives); slow enough for the stream to keep up on a busy machine, as
    // every chunk waits for the stream to pass its watermark.
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicUsize::new(0));
    let every = Duration::from_secs_f64(BLOB as f64 / (rate as f64 * 0.25));
    let writer = blob_writer(
        flavor.port,
        format!("{db}.blobs"),
        every,
        stop.clone(),
        written.clone(),
    );
    while written.load(Ordering::SeqCst) < 3 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let started = Instant::now();
    let mut child = p.spawn();
    let deadline = started + Duration::from_secs(90);
    while !snapshot_done(&p) {
        if let Ok(Some(st)) = child.try_wait() {
            panic!(
                "[{}] sluice exited ({st:?}); log:\n{}",
                flavor.name,
                p.log()
            );
        }
        if Instant::now() > deadline {
            stop.store(true, Ordering::Relaxed);
            let _ = child.kill();
            let log = p.log();
            panic!(
                "[{}] the snapshot of {n} rows did not finish within 90 s over a {rate} B/s link \
                 ({} blob rows written, {} bytes through, {} connections, {} framing errors); \
                 log:\n{log}",
                flavor.name,
                written.load(Ordering::SeqCst),
                proxy.bytes_down(),
                proxy.connections(),
                log.matches("out of order").count(),
            );
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let took = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    writer.await.expect("writer");
    let blobs = written.load(Ordering::SeqCst);

    // Every snapshot row exactly once, as an `r` record.
    let recs = consume(
        &[p.topic("t")],
        "read_committed",
        n,
        Duration::from_secs(2),
        Duration::from_secs(120),
    );
    let mut reads: BTreeMap<i64, usize> = BTreeMap::new();
    for r in &recs {
        let v = r.value.as_ref().expect("value");
        assert_eq!(v["op"], "r", "[{}] {v}", flavor.name);
        *reads
            .entry(v["after"]["id"].as_i64().expect("id"))
            .or_default() += 1;
    }
    let twice: Vec<_> = reads.iter().filter(|(_, k)| **k > 1).take(5).collect();
    assert!(
        twice.is_empty(),
        "[{}] rows read twice: {twice:?}",
        flavor.name
    );
    assert_eq!(
        reads.keys().copied().collect::<Vec<_>>(),
        (1..=n as i64).collect::<Vec<_>>(),
        "[{}] snapshot rows",
        flavor.name
    );

    // Every blob row, whole: in the snapshot (`r`, rows written before sluice started or
    // before the table's chunk) or as its insert (`c`), each at most once.
    let recs = consume(
        &[p.topic("blobs")],
        "read_committed",
        usize::MAX,
        Duration::from_secs(5),
        Duration::from_secs(120),
    );
    let mut seen: BTreeMap<i64, (usize, usize)> = BTreeMap::new();
    for r in &recs {
        let v = r.value.as_ref().expect("value");
        let after = &v["after"];
        let id = after["id"].as_i64().expect("id");
        let len = match &after["b"] {
            J::String(s) => s.len(),
            other => panic!("[{}] blob value {other}", flavor.name),
        };
        assert!(len >= BLOB, "[{}] blob {id}: {len} characters", flavor.name);
        let e = seen.entry(id).or_default();
        match v["op"].as_str() {
            Some("r") => e.0 += 1,
            Some("c") => e.1 += 1,
            other => panic!("[{}] blob {id}: op {other:?}", flavor.name),
        }
    }
    terminate(&mut child);
    let log = p.log();
    assert_eq!(
        seen.keys().copied().collect::<Vec<_>>(),
        (1..=blobs as i64).collect::<Vec<_>>(),
        "[{}] blob rows; log:\n{log}",
        flavor.name
    );
    let twice: Vec<_> = seen
        .iter()
        .filter(|(_, (r, c))| *r > 1 || *c > 1)
        .take(5)
        .collect();
    assert!(
        twice.is_empty(),
        "[{}] blob rows twice: {twice:?}",
        flavor.name
    );
    let framing = log.matches("out of order").count();
    let reconnects = log.matches("transient error; reconnecting").count();
    eprintln!(
        "[{}] snapshot of {n} rows (chunks of 50, parallelism 2) with {blobs} blob rows of \
         {BLOB} bytes over a {rate} B/s link: {took:?}, {} bytes through, {} connections, \
         {framing} framing errors, {reconnects} reconnects",
        flavor.name,
        proxy.bytes_down(),
        proxy.connections(),
    );
    assert_eq!(framing, 0, "[{}] framing errors; log:\n{log}", flavor.name);
    assert_eq!(reconnects, 0, "[{}] reconnects; log:\n{log}", flavor.name);
    assert!(
        took < Duration::from_secs(60),
        "[{}] the snapshot took {took:?}",
        flavor.name
    );
    exec(&mut c, &[&format!("DROP DATABASE {db}")]).await;
}

/// One byte of a rows event flipped between server and sluice (the `a` of a long value
/// turned into `A`, which would decode as a plausible wrong value): sluice exits 1 with a
/// definite error naming the event's position and the checksum mismatch, never a panic; the
/// rows before the event are committed, nothing of it or after it is; a restart without the
/// fault reads the event intact and delivers the rest exactly once.
async fn a_corrupted_event_stops_the_pipeline_before_it(flavor: Flavor) {
    let p = Pipeline::new(flavor, "corrupt", "");
    let proxy = p.source_proxy();
    let (mut c, mut child) = p
        .start_with(&[("t", "(id INT PRIMARY KEY, v VARCHAR(2000) NOT NULL)")])
        .await;
    let db = p.db.clone();
    for id in 1..=5 {
        exec(
            &mut c,
            &[&format!("INSERT INTO {db}.t VALUES ({id}, 'short {id}')")],
        )
        .await;
    }
    let before = consume(
        &[p.topic("t")],
        "read_committed",
        5,
        Duration::from_millis(500),
        Duration::from_secs(60),
    );
    assert_eq!(before.len(), 5, "[{}] log:\n{}", flavor.name, p.log());
    // The next dump packet of at least 1000 bytes is row 6's rows event: flip byte 500 of
    // it, inside the value.
    proxy.corrupt(support::proxy::Corrupt {
        after_bytes: 0,
        min_len: 1000,
        offset: 500,
        xor: 0x20,
    });
    let long = "a".repeat(1500);
    exec(
        &mut c,
        &[
            &format!("INSERT INTO {db}.t VALUES (6, '{long}')"),
            &format!("INSERT INTO {db}.t VALUES (7, 'after')"),
        ],
    )
    .await;
    let status = wait_exit(&mut child, Duration::from_secs(60));
    let log = p.log();
    let hits = proxy.corrupted();
    assert_eq!(
        hits.len(),
        1,
        "[{}] hits {hits:?}; log:\n{log}",
        flavor.name
    );
    let hit = hits[0];
    assert_eq!(
        status.code(),
        Some(1),
        "[{}] {status:?}; log:\n{log}",
        flavor.name
    );
    assert!(!log.contains("panicked"), "[{}] log:\n{log}", flavor.name);
    for needle in [
        "is damaged".to_string(),
        "CRC32 mismatch".to_string(),
        format!(":{} is damaged (event type {}", hit.start(), hit.event_type),
    ] {
        assert!(
            log.contains(&needle),
            "[{}] the error should contain {needle:?} (hit {hit:?}); log:\n{log}",
            flavor.name
        );
    }
    // Nothing of the damaged event or after it was committed.
    let recs = consume(
        &[p.topic("t")],
        "read_committed",
        usize::MAX,
        Duration::from_secs(2),
        Duration::from_secs(60),
    );
    let ids: Vec<i64> = recs
        .iter()
        .map(|r| {
            r.value.as_ref().expect("value")["after"]["id"]
                .as_i64()
                .expect("id")
        })
        .collect();
    assert_eq!(ids, vec![1, 2, 3, 4, 5], "[{}] committed rows", flavor.name);
    // Without the fault, a restart reads the event intact: rows 6 and 7, once each.
    let mut child = p.spawn();
    let recs = consume(
        &[p.topic("t")],
        "read_committed",
        7,
        Duration::from_secs(2),
        Duration::from_secs(60),
    );
    terminate(&mut child);
    let got: Vec<(i64, String)> = recs
        .iter()
        .map(|r| {
            let a = &r.value.as_ref().expect("value")["after"];
            (
                a["id"].as_i64().expect("id"),
                a["v"].as_str().expect("v").to_string(),
            )
        })
        .collect();
    let mut want: Vec<(i64, String)> = (1..=5).map(|i| (i, format!("short {i}"))).collect();
    want.push((6, long));
    want.push((7, "after".into()));
    assert!(
        got == want,
        "[{}] after the restart: {:?}",
        flavor.name,
        got.iter().map(|(i, v)| (i, v.len())).collect::<Vec<_>>()
    );
    exec(&mut c, &[&format!("DROP DATABASE {db}")]).await;
}
