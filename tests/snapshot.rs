//! Snapshots against the real servers: `start = "initial"` while a concurrent workload updates,
//! deletes and inserts rows of the table being read, with and without sluice being SIGKILLed
//! during the snapshot. The table rebuilt from the topic (last record per key, deletes applied)
//! must equal the table, and no row's `r` record may appear twice.
//! A table of wide rows is cut into chunks by `snapshot.chunk_max_bytes`.
//!
//! Sizes: `SLUICE_TEST_SNAPSHOT_ROWS` (rows in the table, default 100000; twice that, in chunks
//! of 50, for the SIGKILL test), `SLUICE_TEST_SNAPSHOT_KILLS` (SIGKILLs during the snapshot,
//! default 10).

mod support;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql_async::prelude::*;
use serde_json::Value as J;
use support::*;

per_flavor!(
    all:
    initial_snapshot_under_writes_equals_the_table,
    snapshot_survives_repeated_sigkills,
    adhoc_snapshots_by_signal_and_command,
    wide_rows_are_chunked_by_bytes,
    a_chunk_over_its_time_limit_stops_with_the_setting,
    snapshot_records_are_marked_by_their_place,
    rows_in_the_transaction_that_creates_their_topic_arrive
);

/// Fills `t` with ids 1..=n.
async fn fill(c: &mut mysql_async::Conn, flavor: Flavor, table: &str, n: usize) {
    let mut lo = 1;
    while lo <= n {
        let hi = (lo + 4999).min(n);
        exec(c, &[&flavor.insert_seq(table, lo, hi, "initial")]).await;
        lo = hi + 1;
    }
}

/// Random single-row updates, deletes and inserts until `stop`; returns how many ran.
fn workload(
    port: u16,
    table: String,
    n: usize,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<usize> {
    tokio::spawn(async move {
        let mut c = root(port).await;
        let mut next_id = n + 1;
        let mut done = 0;
        while !stop.load(Ordering::Relaxed) {
            let id = 1 + rand::random::<u64>() as usize % n;
            let sql = match done % 4 {
                0 | 1 => format!("UPDATE {table} SET pad = CONCAT('u', {done}) WHERE id = {id}"),
                2 => format!("DELETE FROM {table} WHERE id = {id}"),
                _ => {
                    next_id += 1;
                    format!("INSERT INTO {table} VALUES ({next_id}, 'new {done}')")
                }
            };
            c.query_drop(sql).await.expect("workload statement");
            done += 1;
            if done % 50 == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        done
    })
}

/// Every record of `topic` under read_committed, until nothing new came for `idle`.
fn consume_all(topic: &str, idle: Duration) -> Vec<RawRec> {
    consume_raw(
        &[topic.to_string()],
        "read_committed",
        usize::MAX,
        idle,
        Duration::from_secs(240),
    )
}

/// The table as the topic says it is: id → pad, and how many `r` records each id got.
fn rebuild(recs: &[RawRec]) -> (BTreeMap<i64, String>, HashMap<i64, usize>) {
    let mut by_part: BTreeMap<i32, Vec<&RawRec>> = BTreeMap::new();
    for r in recs {
        by_part.entry(r.partition).or_default().push(r);
    }
    let mut state = BTreeMap::new();
    let mut reads: HashMap<i64, usize> = HashMap::new();
    for (_, mut list) in by_part {
        list.sort_by_key(|r| r.offset);
        for r in list {
            let rec = r.json();
            let id = rec.key.as_ref().expect("key")["id"].as_i64().expect("id");
            match &rec.value {
                None => {
                    state.remove(&id);
                }
                Some(v) => {
                    if v["op"] == "r" {
                        *reads.entry(id).or_default() += 1;
                    }
                    match &v["after"] {
                        J::Null => {
                            state.remove(&id);
                        }
                        after => {
                            state.insert(id, after["pad"].as_str().expect("pad").to_string());
                        }
                    }
                }
            }
        }
    }
    (state, reads)
}

async fn table_state(c: &mut mysql_async::Conn, table: &str) -> BTreeMap<i64, String> {
    let rows: Vec<(i64, String)> = c
        .query(format!("SELECT id, pad FROM {table}"))
        .await
        .expect("select");
    rows.into_iter().collect()
}

/// Writes a marker row and waits until its record is committed: everything before it is too.
async fn wait_caught_up(p: &Pipeline, c: &mut mysql_async::Conn) {
    exec(
        c,
        &[&format!("INSERT INTO {}.marker VALUES (1, 'done')", p.db)],
    )
    .await;
    let recs = consume(
        &[p.topic("marker")],
        "read_committed",
        1,
        Duration::from_millis(100),
        Duration::from_secs(120),
    );
    assert_eq!(recs.len(), 1, "marker record; log:\n{}", p.log());
}

/// Whether the committed snapshot is done, and how many chunks it committed so far.
fn snapshot_chunks(p: &Pipeline) -> (bool, u64) {
    let (code, out) = p.command(&["offsets", "show"]);
    // The offset record (stdout) comes first; the summary and any log lines (stderr) follow.
    let Some(Ok(doc)) = serde_json::Deserializer::from_str(&out)
        .into_iter::<J>()
        .next()
    else {
        return (false, 0);
    };
    let tables = doc["snapshot"]["tables"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    // Done tables leave the record, counted in `finished_tables` (each had a chunk at least).
    let finished = doc["snapshot"]["finished_tables"].as_u64().unwrap_or(0);
    let chunks = tables
        .iter()
        .filter_map(|t| t["chunks"].as_u64())
        .sum::<u64>()
        + finished;
    let done = code == 0
        && doc["snapshot"].is_object()
        && (!tables.is_empty() || finished > 0)
        && tables.iter().all(|t| t["done"] == true);
    (done, chunks)
}

fn snapshot_done(p: &Pipeline) -> bool {
    let (code, out) = p.command(&["offsets", "show"]);
    code == 0 && out.contains("\"snapshot\"") && !out.contains("\"done\": false")
}

async fn setup(
    flavor: Flavor,
    tag: &str,
    chunk: usize,
    parallelism: usize,
    n: usize,
) -> (Pipeline, mysql_async::Conn, usize) {
    let p = Pipeline::new(
        flavor,
        tag,
        &format!("\n[snapshot]\nchunk_size = {chunk}\nparallelism = {parallelism}\n"),
    );
    p.edit_config("start = \"latest\"", "start = \"initial\"");
    let mut c = root(flavor.port).await;
    let db = &p.db;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {db}"),
            &format!("CREATE TABLE {db}.t (id INT PRIMARY KEY, pad VARCHAR(100) NOT NULL)"),
            &format!("CREATE TABLE {db}.marker (id INT PRIMARY KEY, pad VARCHAR(100))"),
            // No key at all: read in one pass.
            &format!("CREATE TABLE {db}.k (a INT, b VARCHAR(20))"),
            &format!("INSERT INTO {db}.k SELECT id, pad FROM (SELECT 1 AS id, 'x' AS pad) s"),
        ],
    )
    .await;
    exec(&mut c, &[&format!("USE {db}")]).await;
    fill(&mut c, flavor, &format!("{db}.t"), n).await;
    (p, c, n)
}

fn check(p: &Pipeline, recs: &[RawRec], want: &BTreeMap<i64, String>, what: &str) {
    let (got, reads) = rebuild(recs);
    let twice: Vec<(&i64, &usize)> = reads.iter().filter(|(_, n)| **n > 1).take(5).collect();
    assert!(
        twice.is_empty(),
        "[{}] {what}: rows with more than one r record: {twice:?}",
        p.flavor.name
    );
    if &got != want {
        let missing: Vec<_> = want
            .keys()
            .filter(|k| !got.contains_key(k))
            .take(5)
            .collect();
        let extra: Vec<_> = got
            .keys()
            .filter(|k| !want.contains_key(k))
            .take(5)
            .collect();
        let differ: Vec<_> = want
            .iter()
            .filter(|(k, v)| got.get(k).is_some_and(|g| g != *v))
            .take(5)
            .map(|(k, v)| (k, v, got.get(k)))
            .collect();
        panic!(
            "[{}] {what}: the topic's table differs from the table ({} vs {} rows): missing \
             {missing:?}, extra {extra:?}, different {differ:?}",
            p.flavor.name,
            got.len(),
            want.len()
        );
    }
    let r: usize = reads.values().sum();
    eprintln!(
        "[{}] {what}: {} rows equal, {} r records, {} records in all",
        p.flavor.name,
        want.len(),
        r,
        recs.len()
    );
}

async fn initial_snapshot_under_writes_equals_the_table(flavor: Flavor) {
    let n = env_usize("SLUICE_TEST_SNAPSHOT_ROWS", 100_000);
    let (p, mut c, n) = setup(flavor, "snap", 2000, 4, n).await;
    let keyless = 2 * 2000 + 17;
    exec(
        &mut c,
        &[&format!(
            "INSERT INTO {}.k SELECT id, CONCAT('k', id) FROM {}.t WHERE id BETWEEN 2 AND {keyless}",
            p.db, p.db
        )],
    )
    .await;
    let table = format!("{}.t", p.db);
    let stop = Arc::new(AtomicBool::new(false));
    let load = workload(flavor.port, table.clone(), n, stop.clone());
    let started = Instant::now();
    let mut child = p.spawn();
    let deadline = Instant::now() + Duration::from_secs(300);
    while !snapshot_done(&p) {
        assert!(
            Instant::now() < deadline,
            "snapshot did not finish; log:\n{}",
            p.log()
        );
        if let Ok(Some(st)) = child.try_wait() {
            panic!("sluice exited ({st:?}); log:\n{}", p.log());
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let took = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let ops = load.await.expect("workload");
    wait_caught_up(&p, &mut c).await;
    let want = table_state(&mut c, &table).await;
    let recs = consume_all(&p.topic("t"), Duration::from_secs(3));
    terminate(&mut child);
    eprintln!(
        "[{}] snapshot of {n} rows with {ops} concurrent statements took {took:?}",
        flavor.name
    );
    check(&p, &recs, &want, "snapshot under writes");
    // The keyless table, read in one pass with nothing writing to it: each row once.
    let mut got: Vec<(i64, String)> = consume_all(&p.topic("k"), Duration::from_secs(2))
        .iter()
        .map(|r| {
            let v: J = serde_json::from_slice(r.value.as_deref().expect("k value")).expect("json");
            assert_eq!(v["op"], "r", "{v}");
            let a = &v["after"];
            (
                a["a"].as_i64().expect("a"),
                a["b"].as_str().expect("b").to_string(),
            )
        })
        .collect();
    got.sort();
    let mut want: Vec<(i64, String)> = c
        .query(format!("SELECT a, b FROM {}.k ORDER BY a", p.db))
        .await
        .expect("k rows");
    want.sort();
    assert_eq!(got.len(), keyless, "[{}] keyless rows", flavor.name);
    assert_eq!(got, want, "[{}] keyless table", flavor.name);
}

async fn snapshot_survives_repeated_sigkills(flavor: Flavor) {
    let kills = env_usize("SLUICE_TEST_SNAPSHOT_KILLS", 10);
    // Small chunks and twice the rows: the snapshot must outlast the kills.
    let n = 2 * env_usize("SLUICE_TEST_SNAPSHOT_ROWS", 100_000);
    let (p, mut c, n) = setup(flavor, "snapkill", 50, 3, n).await;
    let total_chunks = (n as u128 / 50).max(1);
    let table = format!("{}.t", p.db);
    let stop = Arc::new(AtomicBool::new(false));
    let load = workload(flavor.port, table.clone(), n, stop.clone());
    let mut killed = 0;
    let mut child = p.spawn();
    let mut chunks_before = 0;
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        assert!(
            Instant::now() < deadline,
            "snapshot did not finish; log:\n{}",
            p.log()
        );
        let (done, chunks) = snapshot_chunks(&p);
        if done {
            break;
        }
        // Each instance commits at least one chunk before it is killed, however slow the
        // machine: kill it once it did, at a random moment after that, without warning; at
        // once when the snapshot is further on than the kills (a fast machine would finish
        // it before all of them).
        if killed < kills && chunks > chunks_before {
            let ahead = u128::from(chunks) * kills as u128 > killed as u128 * total_chunks;
            if !ahead {
                std::thread::sleep(Duration::from_millis(rand::random::<u64>() % 500));
            }
            child.kill().expect("SIGKILL");
            let _ = child.wait();
            killed += 1;
            chunks_before = snapshot_chunks(&p).1;
            child = p.spawn();
        } else {
            if let Ok(Some(st)) = child.try_wait() {
                panic!("sluice exited ({st:?}); log:\n{}", p.log());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    assert!(
        killed >= kills,
        "[{}] the snapshot finished after {killed} SIGKILLs, fewer than {kills}: make the table \
         bigger (SLUICE_TEST_SNAPSHOT_ROWS)",
        flavor.name
    );
    stop.store(true, Ordering::Relaxed);
    let ops = load.await.expect("workload");
    wait_caught_up(&p, &mut c).await;
    let want = table_state(&mut c, &table).await;
    let recs = consume_all(&p.topic("t"), Duration::from_secs(3));
    terminate(&mut child);
    eprintln!(
        "[{}] {killed} SIGKILLs during the snapshot of {n} rows, {ops} concurrent statements",
        flavor.name
    );
    check(&p, &recs, &want, "snapshot with SIGKILLs");
}

/// `r` records per id in `recs` (JSON values of table `t`).
fn reads_per_id(recs: &[RawRec]) -> BTreeMap<i64, usize> {
    let mut reads = BTreeMap::new();
    for r in recs {
        let rec = r.json();
        if rec.value.as_ref().is_some_and(|v| v["op"] == "r") {
            let id = rec.key.as_ref().expect("key")["id"].as_i64().expect("id");
            *reads.entry(id).or_default() += 1;
        }
    }
    reads
}

fn adhoc_done(p: &Pipeline, request: &str) -> bool {
    let (code, out) = p.command(&["offsets", "show"]);
    let Ok(doc) = serde_json::from_str::<J>(out.split("\nsnapshot planned").next().unwrap_or(""))
    else {
        return false;
    };
    let _ = code;
    let tables = doc["snapshot"]["tables"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    // A finished request's tables leave the record; its id stays in `finished_requests`.
    let finished = doc["snapshot"]["finished_requests"]
        .as_array()
        .is_some_and(|ids| ids.iter().any(|id| id == request));
    let mine: Vec<&J> = tables.iter().filter(|t| t["request"] == request).collect();
    finished || (!mine.is_empty() && mine.iter().all(|t| t["done"] == true))
}

/// Ad-hoc snapshots of a streaming pipeline (start = "latest": no initial snapshot): a
/// Debezium-shaped signal row with a filter, a SIGKILL while it runs, a signal naming a table
/// the pipeline does not capture (refused, nothing stops), then `sluice snapshot` over the
/// HTTP API for the whole table; then filters that try to read another table, stall the
/// snapshot or hide SQL in a comment (each refused naming its part, by the command and by a
/// signal) and one with literals, functions and an interval that the server runs with bound
/// parameters. Each id gets exactly one `r` record per snapshot that covers it.
async fn adhoc_snapshots_by_signal_and_command(flavor: Flavor) {
    let n = 2000;
    // Fixed across the SIGKILL and restart below.
    let api = support::reserved_port();
    let p = Pipeline::new(
        flavor,
        "adhoc",
        "\n[snapshot]\nchunk_size = 40\nparallelism = 2\nsignal_table = \"@DB@.sig\"\n",
    );
    p.edit_config("@DB@", &p.db.clone());
    // `sluice snapshot` needs a fixed port.
    p.edit_config(
        "listen = \"127.0.0.1:0\"",
        &format!("listen = \"127.0.0.1:{api}\""),
    );
    let db = p.db.clone();
    let mut c = root(flavor.port).await;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {db}"),
            &format!("CREATE TABLE {db}.t (id INT PRIMARY KEY, pad VARCHAR(100) NOT NULL)"),
            &format!("CREATE TABLE {db}.marker (id INT PRIMARY KEY, pad VARCHAR(100))"),
            &format!(
                "CREATE TABLE {db}.sig (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, \
                 data VARCHAR(2048) NULL)"
            ),
        ],
    )
    .await;
    exec(&mut c, &[&format!("USE {db}")]).await;
    fill(&mut c, flavor, &format!("{db}.t"), n).await;
    let mut child = p.spawn();
    p.wait_started(Duration::from_secs(60));

    exec(
        &mut c,
        &[&format!(
            "INSERT INTO {db}.sig VALUES ('sig-1', 'execute-snapshot', '{{\"data-collections\": \
             [\"{db}.t\"], \"type\": \"incremental\", \"additional-conditions\": \
             [{{\"data-collection\": \"{db}.t\", \"filter\": \"id <= 1000\"}}]}}')"
        )],
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut killed = false;
    while !adhoc_done(&p, "sig-1") {
        assert!(
            Instant::now() < deadline,
            "signal snapshot did not finish; log:\n{}",
            p.log()
        );
        if !killed {
            child.kill().expect("SIGKILL");
            let _ = child.wait();
            killed = true;
            child = p.spawn();
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    exec(
        &mut c,
        &[&format!(
            "INSERT INTO {db}.sig VALUES ('sig-bad', 'execute-snapshot', \
             '{{\"data-collections\": [\"{db}_other.t\"]}}')"
        )],
    )
    .await;

    // The instance started after the SIGKILL may still be coming up.
    let mut tries = 0;
    let (code, out) = loop {
        let (code, out) = p.command(&["snapshot", "--table", &format!("{db}.t")]);
        tries += 1;
        if code == 0 || !out.contains("cannot reach the sluice API") || tries == 60 {
            break (code, out);
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(code, 0, "sluice snapshot: {out}\nlog:\n{}", p.log());

    // Filters are parsed: each attack is refused naming its part, nothing is read for it.
    for (attack, part) in [
        (
            "1=1 UNION SELECT user, password FROM mysql.user",
            "goes on after one condition",
        ),
        (
            "id IN (SELECT id FROM mysql.user)",
            "IN takes a list of literals only",
        ),
        ("SLEEP(100) = 0", "the function SLEEP is not allowed"),
        ("id > 0 /*! OR 1=1 */", "comments are not allowed"),
        ("id = @@version", "variables are not allowed"),
    ] {
        let (code, out) =
            p.command(&["snapshot", "--table", &format!("{db}.t"), "--where", attack]);
        assert!(
            code != 0 && out.contains("refused") && out.contains(part),
            "[{}] `--where {attack}` is refused naming the part ({part}): exit {code}, {out}",
            flavor.name
        );
    }
    exec(
        &mut c,
        &[&format!(
            "INSERT INTO {db}.sig VALUES ('sig-attack', 'execute-snapshot', '{{\"data-collections\": \
             [\"{db}.t\"], \"additional-conditions\": [{{\"data-collection\": \"{db}.t\", \
             \"filter\": \"BENCHMARK(1000000000, MD5(pad)) = 0\"}}]}}')"
        )],
    )
    .await;
    // A filter with string and number literals, functions and an interval runs with them as
    // statement parameters on the server.
    let (code, out) = p.command(&[
        "snapshot",
        "--table",
        &format!("{db}.t"),
        "--where",
        "id BETWEEN 1 AND 10 AND LOWER(pad) <> 'no such '' pad' AND NOW() > \
         DATE_SUB(NOW(), INTERVAL 1 DAY) AND id IN (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 99999)",
    ]);
    assert_eq!(
        code,
        0,
        "the filtered sluice snapshot: {out}\nlog:\n{}",
        p.log()
    );

    wait_caught_up(&p, &mut c).await;
    let reads = reads_per_id(&consume_all(&p.topic("t"), Duration::from_secs(3)));
    terminate(&mut child);
    let log = p.log();
    assert!(
        log.contains("snapshot signal refused") && log.contains("is not captured"),
        "the signal naming an uncaptured table is refused in the log:\n{log}"
    );
    assert!(
        log.contains("the function BENCHMARK is not allowed"),
        "the signal with a BENCHMARK filter is refused in the log:\n{log}"
    );
    let want: BTreeMap<i64, usize> = (1..=n as i64)
        .map(|id| {
            let filtered = if id <= 10 { 1 } else { 0 };
            (id, filtered + if id <= 1000 { 2 } else { 1 })
        })
        .collect();
    assert_eq!(
        reads, want,
        "[{}] r records per id: the signal's filtered snapshot, the command's full one, then \
         the bound-parameter filter's ten; none for the refused filters",
        flavor.name
    );
    let sig = consume_all(&p.topic("sig"), Duration::from_secs(2));
    assert_eq!(
        sig.len(),
        3,
        "[{}] the signal rows are written to their topic",
        flavor.name
    );
}

/// Wide rows: with `chunk_size` far above what `chunk_max_bytes` holds, a chunk ends at its
/// bytes (3 rows of 100 kB at 256 KiB), and every row still gets exactly one `r` record.
async fn wide_rows_are_chunked_by_bytes(flavor: Flavor) {
    const ROWS: i64 = 30;
    let p = Pipeline::new(
        flavor,
        "snapwide",
        "\n[snapshot]\nchunk_size = 1000\nchunk_max_bytes = 262144\n",
    );
    p.edit_config("start = \"latest\"", "start = \"initial\"");
    let mut c = root(flavor.port).await;
    let db = &p.db;
    let mut sql = vec![
        format!("CREATE DATABASE {db}"),
        format!("CREATE TABLE {db}.w (id INT PRIMARY KEY, b LONGBLOB NOT NULL)"),
    ];
    for id in 1..=ROWS {
        sql.push(format!(
            "INSERT INTO {db}.w VALUES ({id}, REPEAT(CHAR(65 + {id} % 26), 100000))"
        ));
    }
    exec(&mut c, &sql.iter().map(String::as_str).collect::<Vec<_>>()).await;
    let mut child = p.spawn();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !snapshot_done(&p) {
        assert!(
            Instant::now() < deadline,
            "[{}] the snapshot did not finish; log:\n{}",
            flavor.name,
            p.log()
        );
        if let Ok(Some(st)) = child.try_wait() {
            panic!("sluice exited ({st:?}); log:\n{}", p.log());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let reads = reads_per_id(&consume_all(&p.topic("w"), Duration::from_secs(3)));
    terminate(&mut child);
    let want: BTreeMap<i64, usize> = (1..=ROWS).map(|id| (id, 1)).collect();
    assert_eq!(reads, want, "[{}] one r record per row", flavor.name);
    let log = p.log();
    let chunks = log
        .lines()
        .filter(|l| l.contains("snapshot chunk") && l.contains(&format!("{db}.w")))
        .count();
    assert!(
        chunks >= 10,
        "[{}] {ROWS} rows of 100 kB in chunks of at most 256 KiB: {chunks} chunks; log:\n{log}",
        flavor.name
    );
}

/// `snapshot.statement_timeout_ms` is enforced by the server: with 1 ms and 30,000-row chunks
/// the first chunk query is interrupted (MySQL's MAX_EXECUTION_TIME hint, MariaDB's
/// max_statement_time), and the run stops with a definite error naming the setting instead of
/// retrying a chunk that can never finish.
async fn a_chunk_over_its_time_limit_stops_with_the_setting(flavor: Flavor) {
    let p = Pipeline::new(
        flavor,
        "snaplimit",
        "\n[snapshot]\nchunk_size = 30000\nstatement_timeout_ms = 1\n",
    );
    p.edit_config("start = \"latest\"", "start = \"initial\"");
    let mut c = root(flavor.port).await;
    let db = p.db.clone();
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {db}"),
            &format!("CREATE TABLE {db}.t (id INT PRIMARY KEY, pad VARCHAR(1000) NOT NULL)"),
        ],
    )
    .await;
    exec(&mut c, &[&format!("USE {db}")]).await;
    fill(&mut c, flavor, &format!("{db}.t"), 30_000).await;
    // 30 MB to read: a query that could end before the server's timer fires (1 ms, late on
    // a loaded machine) would let the snapshot succeed and the pipeline stream on.
    exec(
        &mut c,
        &[&format!("UPDATE {db}.t SET pad = REPEAT('x', 1000)")],
    )
    .await;
    let mut child = p.spawn();
    let status = wait_exit_or(&mut child.0, Duration::from_secs(120), || {
        format!("[{}] log:\n{}", flavor.name, p.log())
    });
    let log = p.log();
    assert_eq!(
        status.code(),
        Some(1),
        "[{}] a definite error; log:\n{log}",
        flavor.name
    );
    assert!(
        log.contains("snapshot.statement_timeout_ms") && log.contains("time limit"),
        "[{}] the error names the setting; log:\n{log}",
        flavor.name
    );
}

/// `source.snapshot` of the initial snapshot's records, as Debezium marks them: the
/// snapshot's first row `first`, each later table's first row `first_in_data_collection`,
/// each table's last row `last_in_data_collection` (the snapshot's last row `last`), all
/// others `true`; a one-row table's row is its table's last. Tables `a` (5 rows in chunks of
/// 2), `b` (1 row), `c` (empty) and `d` (3 rows), planned in name order; then a streamed
/// insert is `false`. At parallelism 1 the tables go out in name order; at 2 a later table's
/// chunk may go out before an earlier table's last one, so which table holds the snapshot's
/// `first` and `last` is not fixed there: each table then starts with `first` or
/// `first_in_data_collection` and ends with `last` or `last_in_data_collection`, and the
/// snapshot has exactly one `first` and one `last`.
async fn snapshot_records_are_marked_by_their_place(flavor: Flavor) {
    for parallelism in [1, 2] {
        let p = Pipeline::new(
            flavor,
            &format!("marks{parallelism}"),
            &format!("\n[snapshot]\nchunk_size = 2\nparallelism = {parallelism}\n"),
        );
        p.edit_config("start = \"latest\"", "start = \"initial\"");
        let mut c = root(flavor.port).await;
        let db = &p.db;
        let sizes = [("a", 5), ("b", 1), ("c", 0), ("d", 3)];
        // `USE`: MariaDB's sequence tables are found in the current database.
        exec(
            &mut c,
            &[&format!("CREATE DATABASE {db}"), &format!("USE {db}")],
        )
        .await;
        for (t, n) in sizes {
            exec(
                &mut c,
                &[&format!(
                    "CREATE TABLE {db}.{t} (id INT PRIMARY KEY, pad VARCHAR(20) NOT NULL)"
                )],
            )
            .await;
            if n > 0 {
                fill(&mut c, flavor, &format!("{db}.{t}"), n).await;
            }
        }
        let mut child = p.spawn();
        let deadline = Instant::now() + Duration::from_secs(120);
        while !snapshot_done(&p) {
            assert!(
                Instant::now() < deadline,
                "snapshot did not finish; log:\n{}",
                p.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        exec(
            &mut c,
            &[&format!("INSERT INTO {db}.d VALUES (100, 'streamed')")],
        )
        .await;
        let mut marks: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (t, n) in sizes {
            let want = if t == "d" { n + 1 } else { n };
            let recs = if want == 0 {
                Vec::new()
            } else {
                consume_raw(
                    &[p.topic(t)],
                    "read_committed",
                    want,
                    Duration::from_millis(500),
                    Duration::from_secs(60),
                )
            };
            assert_eq!(
                recs.len(),
                want,
                "[{}] records of {t}; log:\n{}",
                flavor.name,
                p.log()
            );
            let mut list: Vec<&RawRec> = recs.iter().collect();
            list.sort_by_key(|r| (r.partition, r.offset));
            let got = list
                .iter()
                .map(|r| {
                    let v: J =
                        serde_json::from_slice(r.value.as_deref().expect("value")).expect("json");
                    v["source"]["snapshot"]
                        .as_str()
                        .expect("snapshot")
                        .to_string()
                })
                .collect();
            marks.insert(t, got);
        }
        terminate(&mut child);
        let want: BTreeMap<&str, Vec<&str>> = [
            (
                "a",
                vec!["first", "true", "true", "true", "last_in_data_collection"],
            ),
            ("b", vec!["last_in_data_collection"]),
            ("c", vec![]),
            (
                "d",
                vec!["first_in_data_collection", "true", "last", "false"],
            ),
        ]
        .into_iter()
        .collect();
        let want: BTreeMap<&str, Vec<String>> = want
            .into_iter()
            .map(|(t, v)| (t, v.into_iter().map(String::from).collect()))
            .collect();
        let what = format!(
            "[{}] source.snapshot at parallelism {parallelism}",
            flavor.name
        );
        if parallelism == 1 {
            assert_eq!(marks, want, "{what}");
            continue;
        }
        let count = |m: &str| marks.values().flatten().filter(|x| *x == m).count();
        // Known gap (README, "Not done yet"): with parallel chunk readers the table that ends
        // the snapshot can finish with `last_in_data_collection`, so the snapshot's `last` is
        // missing in some runs (about one in seven here); never two, never one too early.
        assert_eq!(count("first"), 1, "{what}: {marks:?}");
        assert!(count("last") <= 1, "{what}: {marks:?}");
        // Where the table's first or last row is the snapshot's does not count here.
        let class = |m: &String| {
            match m.as_str() {
                "first" | "first_in_data_collection" => "starts its table",
                "last" | "last_in_data_collection" => "ends its table",
                other => other,
            }
            .to_string()
        };
        let classes = |m: &BTreeMap<&str, Vec<String>>| -> BTreeMap<String, Vec<String>> {
            m.iter()
                .filter(|(t, _)| **t != "b")
                .map(|(t, v)| (t.to_string(), v.iter().map(class).collect()))
                .collect()
        };
        assert_eq!(classes(&marks), classes(&want), "{what}: {marks:?}");
        // The one-row table's row both starts and ends it: the end wins unless it is the
        // snapshot's first row and not its last.
        assert!(
            ["first", "last", "last_in_data_collection"].contains(&marks["b"][0].as_str()),
            "{what}: {marks:?}"
        );
    }
}

/// Every snapshot row of many small tables arrives, while each table's topic is created in the
/// same Kafka transaction as its first rows (two rows were once seen missing from exactly such
/// a transaction, docs/reliability.md). Counted per topic by an independent reader, with
/// `read_uncommitted` too (a record that never reached the log is missing from both), and
/// compared with the committed offset. Sized by `SLUICE_TEST_NEW_TOPICS` (tables, default 40).
async fn rows_in_the_transaction_that_creates_their_topic_arrive(flavor: Flavor) {
    let tables = env_usize("SLUICE_TEST_NEW_TOPICS", 40);
    let p = Pipeline::new(
        flavor,
        "newtopics",
        "\n[snapshot]\nchunk_size = 2\nparallelism = 2\n",
    );
    p.edit_config("start = \"latest\"", "start = \"initial\"");
    let db = &p.db;
    let mut c = root(flavor.port).await;
    // `USE`: MariaDB's sequence tables are found in the current database.
    exec(
        &mut c,
        &[&format!("CREATE DATABASE {db}"), &format!("USE {db}")],
    )
    .await;
    // 1 to 5 rows: a table's first chunk (2 rows) comes with its topic's creation.
    let rows = |i: usize| 1 + i % 5;
    for i in 0..tables {
        exec(
            &mut c,
            &[&format!(
                "CREATE TABLE {db}.t{i} (id INT PRIMARY KEY, pad VARCHAR(20) NOT NULL)"
            )],
        )
        .await;
        fill(&mut c, flavor, &format!("{db}.t{i}"), rows(i)).await;
    }
    let mut child = p.spawn();
    let deadline = Instant::now() + Duration::from_secs(180);
    while !snapshot_done(&p) {
        assert!(
            Instant::now() < deadline,
            "snapshot did not finish; log:\n{}",
            p.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    terminate(&mut child);
    let topics: Vec<String> = (0..tables).map(|i| p.topic(&format!("t{i}"))).collect();
    let total: usize = (0..tables).map(rows).sum();
    let mut missing = Vec::new();
    for isolation in ["read_committed", "read_uncommitted"] {
        // Until every row is read (or nothing new came for 5 s): 40 new partitions may take
        // the reader a while to start fetching on a busy machine.
        let recs = consume_raw(
            &topics,
            isolation,
            total,
            Duration::from_millis(5000),
            Duration::from_secs(120),
        );
        let mut by: HashMap<&str, Vec<&RawRec>> = HashMap::new();
        for r in &recs {
            by.entry(r.topic.as_str()).or_default().push(r);
        }
        for (i, topic) in topics.iter().enumerate() {
            let got = by
                .get(topic.as_str())
                .map(Vec::as_slice)
                .unwrap_or_default();
            let mut ids: Vec<i64> = got
                .iter()
                .map(|r| r.json().key.expect("key")["id"].as_i64().expect("id"))
                .collect();
            ids.sort_unstable();
            let want: Vec<i64> = (1..=rows(i) as i64).collect();
            if ids != want {
                let at: Vec<(i32, i64)> = got.iter().map(|r| (r.partition, r.offset)).collect();
                missing.push(format!(
                    "{isolation} {topic}: ids {ids:?} at {at:?}, want {want:?}"
                ));
            }
        }
        eprintln!(
            "[{}] {isolation}: {} of {total} rows",
            flavor.name,
            recs.len()
        );
    }
    assert!(
        missing.is_empty(),
        "[{}] rows missing or repeated:\n{}\nlog:\n{}",
        flavor.name,
        missing.join("\n"),
        p.log()
    );
}
