//! The exactly-once crash scenario, shared by the crash test and the security tests: a
//! workload of per-key sequence numbers runs while sluice is killed with SIGKILL at random
//! moments and restarted; an independent `read_committed` consumer (on the test bed's
//! PLAINTEXT listener) then checks that every change arrived exactly once and in order per
//! key.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use mysql_async::prelude::*;
use rand::{Rng, SeedableRng};

use super::*;

/// Runs the scenario on `p` (whose database must not exist yet): `changes` changes over 500
/// keys in 10-row transactions, `kills` SIGKILLs 0.2 to 1.5 s apart; seed from
/// SLUICE_TEST_SEED or random. Panics with the seed and the log's tail on any loss,
/// duplicate or reordering.
pub async fn sigkill_at_random_moments(p: &Pipeline, changes: usize, kills: usize) {
    let flavor = p.flavor;
    let name = flavor.name;
    let keys = 500usize;
    let per_txn = 10usize;
    let seed: u64 = std::env::var("SLUICE_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    eprintln!(
        "[{name}] crash test {}: {changes} changes, {kills} kills, seed {seed}",
        p.name
    );
    let db = p.db.clone();
    let mut c = root(flavor.port).await;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {db}"),
            &format!(
                "CREATE TABLE {db}.seqs (k INT PRIMARY KEY, seq INT NOT NULL, pad VARCHAR(100))"
            ),
        ],
    )
    .await;
    let mut child = p.spawn();
    p.wait_started(Duration::from_secs(60));

    // The workload: inserts of every key (seq 0), then transactions bumping random keys.
    let port = flavor.port;
    let db2 = db.clone();
    let workload = tokio::spawn(async move {
        let mut c = root(port).await;
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5eed);
        for chunk in (0..keys).collect::<Vec<_>>().chunks(100) {
            let vals: Vec<String> = chunk.iter().map(|k| format!("({k},0,'p')")).collect();
            c.query_drop(format!("INSERT INTO {db2}.seqs VALUES {}", vals.join(",")))
                .await
                .expect("insert");
        }
        let mut done = keys;
        while done < changes {
            let mut ks: Vec<usize> = (0..per_txn).map(|_| rng.random_range(0..keys)).collect();
            ks.sort_unstable();
            ks.dedup();
            let list = ks
                .iter()
                .map(|k| k.to_string())
                .collect::<Vec<_>>()
                .join(",");
            c.query_drop(format!(
                "UPDATE {db2}.seqs SET seq = seq + 1 WHERE k IN ({list})"
            ))
            .await
            .expect("update");
            done += ks.len();
        }
        done
    });

    // Kill -9 at random moments while the workload runs (and a little after).
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    for i in 0..kills {
        let wait = rng.random_range(200..1500);
        tokio::time::sleep(Duration::from_millis(wait)).await;
        child.kill().expect("kill -9");
        let _ = child.wait();
        eprintln!("[{name}] kill {} after {wait} ms", i + 1);
        child = p.spawn();
    }
    let total = workload.await.expect("workload");
    // Let the last instance drain, then count with an independent read_committed consumer.
    let topics = vec![p.topic("seqs")];
    let started = Instant::now();
    let recs = consume(
        &topics,
        "read_committed",
        total,
        Duration::from_secs(3),
        Duration::from_secs(600),
    );
    eprintln!(
        "[{name}] consumed {} records in {:?} (expected {total})",
        recs.len(),
        started.elapsed()
    );
    terminate(&mut child);

    let mut per_key: HashMap<i64, Vec<i64>> = HashMap::new();
    for r in &recs {
        let v = r.value.as_ref().expect("no deletes in this workload");
        let k = r.key.as_ref().expect("key")["k"].as_i64().expect("k");
        per_key
            .entry(k)
            .or_default()
            .push(v["after"]["seq"].as_i64().expect("seq"));
    }
    let mut c = root(flavor.port).await;
    let finals: Vec<(i64, i64)> = c
        .query(format!("SELECT k, seq FROM {db}.seqs"))
        .await
        .expect("final state");
    let mut missing = 0usize;
    let mut dup_or_order = 0usize;
    for (k, last) in &finals {
        let seen = per_key.get(k).cloned().unwrap_or_default();
        let want: Vec<i64> = (0..=*last).collect();
        if seen != want {
            if seen.len() < want.len() {
                missing += 1;
            } else {
                dup_or_order += 1;
            }
            if missing + dup_or_order <= 3 {
                eprintln!("[{name}] key {k}: want 0..={last}, saw {seen:?}");
            }
        }
    }
    assert_eq!(
        (missing, dup_or_order),
        (0, 0),
        "[{name}] keys with missing / duplicated-or-reordered changes (seed {seed}); log tail:\n{}",
        tail(&p.log())
    );
    assert_eq!(recs.len(), total, "[{name}] record count (seed {seed})");
    eprintln!(
        "[{name}] crash test passed: {total} changes, {kills} SIGKILLs, 0 lost, 0 duplicated"
    );
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}
