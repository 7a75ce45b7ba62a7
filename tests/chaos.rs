//! Exactly-once under faults: a sequenced multi-table workload (inserts, updates, deletes,
//! primary-key changes; 1–5 keys per source transaction) runs against a scratch database
//! server while faults of every kind hit the pipeline — sluice's database and Kafka links
//! reset, blackholed and throttled (fault proxies), a commit held past the transaction
//! timeout, SIGKILL and SIGSTOP of sluice, real restarts of the Kafka broker and of the
//! database server. sluice runs under a supervisor that starts it again whenever it exits.
//!
//! With `SLUICE_CHAOS_CLUSTER=1` sluice streams into the test bed's three-node Kafka cluster
//! (`scripts/services up kafka-cluster`; replication factor 3, min.insync.replicas 2)
//! instead: there is no fault proxy in front of it, so the Kafka link kinds and the broker
//! restart give way to SIGKILLs of single nodes — the transaction coordinator of sluice's
//! transactional id (`coordinator_kill`) and the leader of a partition of its data or offsets
//! topics (`leader_kill`) — each started again after a few seconds while the other two serve.
//!
//! With `SLUICE_CHAOS_MEMBERS=N` (N ≥ 2; `scripts/chaos --members N`) sluice itself runs in
//! its cluster mode: N instances, each under a supervisor of its own, started with a process
//! file of the one chaos pipeline and `[cluster]` (a group per run, a 6 s session timeout),
//! all through the same links (the fault proxies, or the three-node cluster: both work).
//! SIGKILL and SIGSTOP hit the member that owns the pipeline (its `GET /cluster`), so each
//! forces a takeover; a SIGSTOP lasts 2–12 s, often past the session timeout, so the woken
//! member is told its assignment was lost. Every other kind hits whichever member runs the
//! pipeline. The report gives, per fault, the owner before and after, and the moves. In
//! cluster mode a fence or a lost pipeline never ends the process, so any exit of a member
//! the test did not cause fails the run as well.
//!
//! Afterwards an independent checker (`scripts/lib/chaos-check`: Confluent's Python client,
//! `read_committed`, none of sluice's code) reads the topics to their end and proves: no
//! change lost, none duplicated, per-key order kept, every source transaction whole, and the
//! topics replayed give the source tables. Any exit of sluice the test did not cause
//! (e.g. exit 3, fenced, with no second instance) fails the run, as does a fault the pipeline
//! does not recover from within the deadline.
//!
//! Sizes (CI defaults): SLUICE_CHAOS_CHANGES (20000), SLUICE_CHAOS_FAULTS_PER_KIND (3),
//! SLUICE_CHAOS_SEED (random, printed), SLUICE_CHAOS_KINDS (a subset, `kind[:count],...`),
//! SLUICE_CHAOS_RATE (changes/s), SLUICE_CHAOS_OUT (a folder for the results),
//! SLUICE_CHAOS_CLUSTER (1: the three-node cluster), SLUICE_CHAOS_LANES (2: the Kafka kinds in
//! a lane of their own, at the same time as the others), SLUICE_CHAOS_MEMBERS (1: one sluice
//! process; N ≥ 2: N instances in sluice's cluster mode),
//! SLUICE_CHAOS_SERVICES (the `scripts/services` that runs the test bed; default this
//! checkout's). `scripts/chaos` runs it at large sizes.
//!
//! Both servers' runs go on at once (each on a thread and runtime of its own), sharing the
//! Kafka proxy and the broker: a Kafka fault of either hits both pipelines, and the Kafka
//! faults take turns. The test owns the proxy's advertised port and restarts shared services,
//! so it runs alone (the proxy's lock) and in this binary only.

mod support;

#[path = "support/chaos/mod.rs"]
mod chaos;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chaos::cluster;
use chaos::faults::{self, Kind, Rig};
use chaos::members::{self, Members};
use chaos::workload::{self, Plan, Progress, Workload};
use chaos::{report, Sizes};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use support::kafka_proxy::{self, KafkaProxy};
use support::*;

/// Live `acct` keys the workload keeps.
const KEYS: usize = 500;

/// One server's run. `kproxy` and `kafka_turn` are shared with the other server's run, which
/// goes on at the same time: both pipelines reach the broker through the one proxy, so a
/// Kafka fault of either run hits both, and the Kafka faults take turns (`kafka_turn`).
async fn run_on_server(
    flavor: Flavor,
    kproxy: &KafkaProxy,
    kafka_turn: Arc<tokio::sync::Mutex<()>>,
) {
    let sizes = Sizes::from_env();
    if sizes.cluster {
        if let Err(e) = chaos::check_cluster() {
            panic!("{e}");
        }
    } else {
        let proxied = format!("127.0.0.1:{}", kafka_proxy::proxied_port());
        assert!(
            std::net::TcpStream::connect(&proxied).is_ok(),
            "the Kafka broker has no PROXIED listener on {proxied} (scripts/lib/kafka.sh adds it): \
             restart Kafka with this checkout's scripts/services"
        );
    }
    let restarts = sizes
        .kinds
        .iter()
        .any(|(k, n)| *n > 0 && matches!(k, Kind::KafkaRestart | Kind::DbRestart));
    if restarts {
        if let Err(e) = chaos::check_services_script() {
            panic!("{e}");
        }
    }
    // Sluice's Kafka: the cluster directly, or the single broker through the fault proxy.
    let bootstrap = if sizes.cluster {
        cluster::bootstrap()
    } else {
        kproxy.bootstrap()
    };
    let checker_bootstrap = if sizes.cluster {
        cluster::bootstrap()
    } else {
        KAFKA.to_string()
    };
    let flavor = flavor.scratch();
    let fname = flavor.name;
    let started = Instant::now();
    let schedule = {
        let mut s: Vec<Kind> = sizes
            .kinds
            .iter()
            .flat_map(|(k, n)| std::iter::repeat_n(*k, *n))
            .collect();
        s.shuffle(&mut rand::rngs::StdRng::seed_from_u64(sizes.seed));
        s
    };
    let expected_secs: f64 = schedule
        .iter()
        .map(|k| k.expected_secs() + members::extra_secs(*k, sizes.members) + 1.0)
        .sum();
    let rate = sizes
        .rate
        .unwrap_or_else(|| (sizes.changes as f64 / expected_secs.max(10.0)).max(20.0));
    let instances = if sizes.members > 1 {
        format!(", {} sluice members in cluster mode", sizes.members)
    } else {
        String::new()
    };
    eprintln!(
        "[{fname}] chaos: {} changes at {rate:.0}/s into {bootstrap}{instances}, {} faults ({}), \
         seed {}",
        sizes.changes,
        schedule.len(),
        sizes
            .kinds
            .iter()
            .map(|(k, n)| format!("{}×{n}", k.name()))
            .collect::<Vec<_>>()
            .join(" "),
        sizes.seed
    );

    let name = unique(&format!("chaos_{fname}"));
    let db = name.clone();
    let mut c = root(flavor.port).await;
    let first_binlog = oldest_binlog(&mut c).await;
    exec(&mut c, &[&format!("CREATE DATABASE {db}")]).await;
    for (t, body) in workload::TABLES {
        exec(&mut c, &[&format!("CREATE TABLE {db}.{t} {body}")]).await;
    }
    drop(c);

    let dir = tempfile::Builder::new()
        .prefix("sluice-chaos-")
        .tempdir()
        .expect("tempdir");
    let out = sizes
        .out
        .clone()
        .map(|o| o.join(fname))
        .unwrap_or_else(|| dir.path().to_path_buf());
    std::fs::create_dir_all(&out).expect("results folder");
    let dbproxy = chaos::db_proxy::DbProxy::start(flavor.port);
    let server_id = 20000 + rand::random::<u32>() % 40000;
    let group = format!("{name}_group");
    let sluice = Members::start(
        sizes.members,
        dir.path(),
        &out,
        &name,
        |api| chaos::config_text(&name, &db, dbproxy.port(), &bootstrap, api, server_id),
        &group,
    );
    let api_ports = sluice.ports();
    if let Err(e) = faults::wait_committed(
        flavor,
        &api_ports,
        &faults::gtid_now(flavor, Duration::from_secs(30)).await,
        Duration::from_secs(90),
    ) {
        panic!(
            "[{fname}] sluice did not start streaming: {e}\nexits: {:?}\nlog:\n{}",
            sluice.exits(),
            sluice.log_tail(60)
        );
    }

    let progress = Arc::new(Progress::default());
    let work = tokio::spawn(
        Workload::new(
            flavor.port,
            &db,
            Plan {
                changes: sizes.changes,
                rate,
                keys: KEYS,
            },
            sizes.seed,
            progress.clone(),
        )
        .run(),
    );

    // One lane, or two: the kinds that take the Kafka turn in a lane of their own.
    let queues: Vec<VecDeque<Kind>> = if sizes.lanes == 2 {
        let (kafka, rest): (Vec<Kind>, Vec<Kind>) =
            schedule.iter().partition(|k| k.takes_kafka_turn());
        vec![rest.into(), kafka.into()]
    } else {
        vec![schedule.iter().copied().collect()]
    };
    let lane_count = queues.len();
    let stop = AtomicBool::new(false);
    let lanes: Vec<Vec<faults::Fault>> = tokio::task::block_in_place(|| {
        std::thread::scope(|scope| {
            let handles: Vec<_> = queues
                .into_iter()
                .enumerate()
                .map(|(lane, queue)| {
                    let rig = Rig {
                        flavor,
                        db: &dbproxy,
                        kafka: kproxy,
                        kafka_turn: kafka_turn.clone(),
                        sluice: &sluice,
                        broker: chaos::ServiceGuard::new("kafka"),
                        server: chaos::ServiceGuard::new(chaos::scratch_service(flavor)),
                        rng: rand::rngs::StdRng::seed_from_u64(sizes.seed ^ 0xfa17 ^ lane as u64),
                        started,
                        recovery_deadline: Duration::from_secs(120),
                        progress: progress.clone(),
                        cluster: (sizes.cluster && queue.iter().any(|k| k.takes_kafka_turn()))
                            .then(|| {
                                faults::ClusterRig::new(
                                    format!("sluice-{name}"),
                                    vec![
                                        format!("{db}.acct"),
                                        format!("{db}.ledger"),
                                        format!("{name}.offsets"),
                                    ],
                                )
                            }),
                        ran: 0,
                        restarting: None,
                        late: Vec::new(),
                    };
                    let tag = if lane_count > 1 {
                        format!("{fname} lane {}", lane + 1)
                    } else {
                        fname.to_string()
                    };
                    let (work, stop) = (&work, &stop);
                    scope.spawn(move || {
                        runtime("a fault lane").block_on(run_lane(rig, queue, &tag, work, stop))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a fault lane panicked"))
                .collect()
        })
    });
    let stuck = stop.load(Ordering::Relaxed);
    let mut done: Vec<faults::Fault> = lanes.into_iter().flatten().collect();
    done.sort_by_key(|f| f.at);
    if stuck {
        progress.abort.store(true, Ordering::Relaxed);
    }
    progress.done.store(true, Ordering::Relaxed);
    let outcome = tokio::time::timeout(Duration::from_secs(600), work)
        .await
        .unwrap_or_else(|_| panic!("[{fname}] the workload did not finish within 600 s"))
        .unwrap_or_else(|e| panic!("[{fname}] the workload failed: {e}"));
    eprintln!("[{fname}] workload: {:?}", outcome.stats);

    // Caught up and idle: nothing of the data topics can still be in an open transaction.
    let target = faults::gtid_now(flavor, Duration::from_secs(60)).await;
    let caught_up = tokio::task::block_in_place(|| {
        faults::wait_committed(flavor, &api_ports, &target, Duration::from_secs(300))
    });
    let last_exits = sluice.terminate(Duration::from_secs(60));
    let exits = sluice.exits();
    let starts = sluice.starts();

    let mut c = root(flavor.port).await;
    let first_binlog_now = oldest_binlog(&mut c).await;
    let state = out.join("state.json");
    workload::dump_tables(&mut c, &db, &state).await;
    let expected = out.join("expected.jsonl");
    workload::write_expected(&expected, &outcome.txns);
    let topics = [
        ("acct", format!("{db}.acct")),
        ("ledger", format!("{db}.ledger")),
    ];
    let (code, summary, check_err) = tokio::task::block_in_place(|| {
        chaos::run_checker(
            &checker_bootstrap,
            &topics,
            &expected,
            &state,
            Duration::from_secs(1800),
        )
    });

    let unexpected: Vec<&(usize, chaos::supervisor::Exit)> =
        exits.iter().filter(|(_, e)| !e.expected).collect();
    let report_doc = serde_json::json!({
        "flavor": fname,
        "kafka": if sizes.cluster { "cluster" } else { "single broker" },
        "bootstrap": bootstrap,
        "members": sizes.members,
        "cluster_group": (sizes.members > 1).then_some(&group),
        "ownership_moves": report::moves(&done),
        "seed": sizes.seed,
        "duration_s": started.elapsed().as_secs(),
        "workload": {
            "txns": outcome.stats.txns,
            "changes": outcome.stats.changes,
            "rolled_back": outcome.stats.rolled_back,
            "committed_despite_error": outcome.stats.committed_despite_error,
            "reconnects": outcome.stats.reconnects,
        },
        "faults": report::json(&done),
        "sluice": {
            "starts": starts,
            "exits": exits.iter().map(|(i, e)| serde_json::json!({
                "member": i + 1,
                "at_ms": e.at.as_millis() as u64,
                "how": e.how(),
                "expected": e.expected,
                "last_error": e.last_error,
            })).collect::<Vec<_>>(),
        },
        "caught_up": caught_up.as_ref().map(|d| d.as_millis() as u64).map_err(|e| e.clone()),
        "checker": summary,
    });
    std::fs::write(
        out.join("report.json"),
        serde_json::to_string_pretty(&report_doc).expect("report"),
    )
    .expect("write report");
    let moved = if sluice.clustered() {
        format!(
            " ({} members), the pipeline moved after {} of the faults",
            sluice.len(),
            report::moves(&done)
        )
    } else {
        String::new()
    };
    eprintln!(
        "[{fname}] chaos run: {:.0} s, {} faults, {} sluice starts{moved}\n{}",
        started.elapsed().as_secs_f64(),
        done.len(),
        starts,
        report::table(&done, sluice.clustered())
    );
    eprintln!(
        "[{fname}] checker (exit {code}): {}",
        summary.as_ref().map(|s| s.to_string()).unwrap_or_default()
    );
    if !check_err.trim().is_empty() {
        eprintln!("[{fname}] checker details:\n{check_err}");
    }
    eprintln!("[{fname}] results in {}", out.display());

    let mut failures = Vec::new();
    if done.len() < schedule.len() {
        failures.push(format!(
            "only {} of {} faults ran",
            done.len(),
            schedule.len()
        ));
    }
    for f in done.iter().filter(|f| f.recovery.is_none()) {
        failures.push(format!("stuck after {}: {}", f.kind.name(), f.note));
    }
    for f in &done {
        if let Some(e) = &f.failure {
            failures.push(format!("{} at {:.1?}: {e}", f.kind.name(), f.at));
        }
    }
    for (i, e) in &unexpected {
        let who = if sluice.clustered() {
            format!(" ({})", members::label(Some(*i)))
        } else {
            String::new()
        };
        failures.push(format!(
            "sluice{who} ended by itself ({}) at {:.1?}: {}",
            e.how(),
            e.at,
            e.last_error
        ));
    }
    if let Err(e) = &caught_up {
        failures.push(format!("final catch-up: {e}"));
    }
    for (i, last_exit) in last_exits.iter().enumerate() {
        match last_exit {
            Some(e) if e.code == Some(0) => {}
            other => {
                let who = if sluice.clustered() {
                    format!(" ({})", members::label(Some(i)))
                } else {
                    String::new()
                };
                failures.push(format!(
                    "the final SIGTERM did not end sluice{who} with exit 0: {other:?}"
                ))
            }
        }
    }
    if outcome.stats.changes < sizes.changes {
        failures.push(format!(
            "the workload committed {} changes, fewer than {}",
            outcome.stats.changes, sizes.changes
        ));
    }
    if code != 0 {
        failures.push(format!(
            "the checker found violations (exit {code}): {}",
            summary
                .map(|s| s.to_string())
                .unwrap_or_else(|| check_err.clone())
        ));
    }
    if !failures.is_empty() && first_binlog_now != first_binlog {
        failures.push(format!(
            "NOTE: the server's oldest binlog changed from {first_binlog} to {first_binlog_now} \
             during the run: something else purged binlogs of this scratch instance (another \
             test?), which alone makes sluice stop (its resume position is gone); run the chaos \
             test while nothing else uses the scratch instances"
        ));
    }
    if failures.is_empty() {
        let mut c = root(flavor.port).await;
        exec(&mut c, &[&format!("DROP DATABASE {db}")]).await;
    } else if sizes.out.is_none() {
        // Keep the log, the expected changes and the table dump for a look.
        let _ = dir.keep();
    }
    assert!(
        failures.is_empty(),
        "[{fname}] chaos run failed (seed {}; results in {}):\n- {}\nlog tail:\n{}",
        sizes.seed,
        out.display(),
        failures.join("\n- "),
        sluice.log_tail(40)
    );
}

/// A runtime of its own for a thread of the run (two workers: one may block in a wait).
fn runtime(what: &str) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("a runtime for {what}: {e}"))
}

/// One lane of faults, one after the other: until the queue is empty, the workload has
/// ended, or a fault (of this lane or another, `stop`) found the pipeline stuck.
async fn run_lane<T>(
    mut rig: Rig<'_>,
    mut queue: VecDeque<Kind>,
    tag: &str,
    work: &tokio::task::JoinHandle<T>,
    stop: &AtomicBool,
) -> Vec<faults::Fault> {
    let total = queue.len();
    let mut done: Vec<faults::Fault> = Vec::new();
    while let Some(first) = queue.front().copied() {
        let i = done.len();
        rig.gap().await;
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if work.is_finished() {
            eprintln!("[{tag}] the workload ended early; faults stop");
            break;
        }
        // While the other run (or this run's node restart) has the Kafka turn, a fault
        // that needs no turn goes first: the same faults, less time spent waiting.
        if first.takes_kafka_turn() && rig.kafka_turn.try_lock().is_err() {
            if let Some(j) = queue.iter().position(|k| !k.takes_kafka_turn()) {
                queue.swap(0, j);
            }
        }
        let kind = queue.pop_front().expect("not empty");
        let f = rig.run(kind).await;
        eprintln!(
            "[{tag}] fault {}/{} {:<15} at {:>6.1}s active {:>6} ms, recovery {} ms, changes {} {}",
            i + 1,
            total,
            kind.name(),
            f.at.as_secs_f64(),
            f.active.as_millis(),
            f.recovery
                .map(|d| d.as_millis().to_string())
                .unwrap_or_else(|| "STUCK".into()),
            rig.progress.changes.load(Ordering::Relaxed),
            f.note
        );
        let stuck = f.recovery.is_none();
        done.push(f);
        rig.add_late_notes(&mut done, false);
        if stuck {
            stop.store(true, Ordering::Relaxed);
            break;
        }
    }
    rig.add_late_notes(&mut done, true);
    done
}

/// The oldest binlog file the server still has.
async fn oldest_binlog(c: &mut mysql_async::Conn) -> String {
    use mysql_async::prelude::*;
    let rows: Vec<mysql_async::Row> = c.query("SHOW BINARY LOGS").await.expect("SHOW BINARY LOGS");
    rows.first()
        .and_then(|r| r.get::<String, _>(0))
        .unwrap_or_default()
}

/// Every enabled server at once, the Kafka side shared: the CI-sized run takes about as
/// long as one server's run alone (`scripts/chaos` runs it at large sizes). Each server's run
/// has a thread and a runtime of its own, so one run's blocking waits never hold up the other.
#[test]
fn exactly_once_under_faults() {
    // One chaos run at a time: the proxy's lock is held for the whole run.
    let kproxy = KafkaProxy::start();
    let turn = Arc::new(tokio::sync::Mutex::new(()));
    std::thread::scope(|scope| {
        for flavor in flavors() {
            let (kproxy, turn) = (&kproxy, turn.clone());
            scope.spawn(move || {
                runtime("a server's run").block_on(run_on_server(flavor, kproxy, turn))
            });
        }
    });
}

/// The checker finds each kind of violation, exactly, and nothing in a clean run or in an
/// aborted Kafka transaction (`scripts/lib/chaos-check-selftest`, planted defects in topics
/// written with Confluent's transactional producer).
#[test]
fn the_checker_finds_every_kind_of_violation() {
    // Not while a chaos run restarts the broker.
    let _one_at_a_time = KafkaProxy::start();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/lib/chaos-check-selftest"
    );
    let out = std::process::Command::new(script)
        .args(["--bootstrap", KAFKA])
        .output()
        .expect("run chaos-check-selftest");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    assert!(out.status.success(), "chaos-check-selftest failed:\n{text}");
}
