//! Start-up and retries: a source or broker that is not up yet when sluice starts is waited
//! for with the reconnect backoff (sluice does not exit, and streams once it is up); the
//! failure count of `source.max_reconnect_attempts` counts consecutive failures only (a healthy
//! attempt resets it), and more consecutive failures than that stop the pipeline (exit 1).
//!
//! The source's replication connection is cut from the server side (`KILL` of its `Binlog Dump`
//! thread); each test connects as a user of its own so it finds its own connections among the
//! other tests'.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use mysql_async::prelude::*;
use support::forward::LateForwarder;
use support::*;

/// How long the late forwarders stay down.
const DOWN_FOR: Duration = Duration::from_secs(6);

/// `id` → number of create records, from the JSON records of a table's topic.
fn creates(recs: &[Rec]) -> BTreeMap<i64, usize> {
    let mut out = BTreeMap::new();
    for r in recs {
        if let Some(v) = &r.value {
            if v["op"] == "c" {
                *out.entry(v["after"]["id"].as_i64().expect("id"))
                    .or_default() += 1;
            }
        }
    }
    out
}

/// Fails if sluice exited; used while waiting for something else.
fn still_running(child: &mut KillOnDrop, p: &Pipeline, while_: &str) {
    if let Some(st) = child.try_wait().expect("try_wait") {
        panic!(
            "[{}] sluice exited ({st:?}) {while_}; log:\n{}",
            p.flavor.name,
            p.log()
        );
    }
}

/// Waits until `fwd` listens, checking all along that sluice keeps running.
fn wait_until_up(fwd: &LateForwarder, child: &mut KillOnDrop, p: &Pipeline, what: &str) {
    wait_for(
        &format!("the late {what} to come up"),
        DOWN_FOR + Duration::from_secs(30),
        || {
            still_running(child, p, &format!("while the {what} was down"));
            if fwd.listening() {
                Ok(())
            } else {
                Err(format!("the {what} is still down"))
            }
        },
    );
}

/// Inserts ids `from..=upto` into `db.t`, then waits until the topic holds the create of
/// every id `1..=upto`, and checks each is there exactly once.
async fn streams(p: &Pipeline, c: &mut mysql_async::Conn, from: i64, upto: i64) {
    for id in from..=upto {
        exec(c, &[&format!("INSERT INTO {}.t VALUES ({id}, 'x')", p.db)]).await;
    }
    let want: BTreeMap<i64, usize> = (1..=upto).map(|i| (i, 1)).collect();
    let recs = consume(
        &[p.topic("t")],
        "read_committed",
        want.len(),
        Duration::from_secs(1),
        Duration::from_secs(60),
    );
    assert_eq!(
        creates(&recs),
        want,
        "[{}] each row exactly once; log:\n{}",
        p.flavor.name,
        p.log()
    );
}

/// The source's port refuses connections for the first seconds: sluice retries (no exit 1),
/// connects once the port is up and streams.
async fn source_down_at_start_is_waited_for(flavor: Flavor) {
    let fwd = LateForwarder::start(&format!("127.0.0.1:{}", flavor.port), DOWN_FOR);
    let p = Pipeline::new(flavor, "latesrc", "");
    p.edit_config(
        &format!("@127.0.0.1:{}\"", flavor.port),
        &format!("@127.0.0.1:{}\"", fwd.port),
    );
    let mut c = root(flavor.port).await;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {}", p.db),
            &format!(
                "CREATE TABLE {}.t (id INT PRIMARY KEY, v VARCHAR(10))",
                p.db
            ),
        ],
    )
    .await;
    let mut child = p.spawn();
    wait_until_up(&fwd, &mut child, &p, "source");
    p.wait_started(Duration::from_secs(60));
    let log = p.log();
    assert!(
        log.contains("transient error") && log.contains("Connection refused"),
        "[{}] the refused connection at start was retried as a transient error; log:\n{log}",
        flavor.name
    );
    assert!(fwd.accepted() > 0, "sluice connected through the forwarder");
    streams(&p, &mut c, 1, 5).await;
    let st = terminate(&mut child);
    assert!(st.success(), "[{}] {st:?}; log:\n{}", flavor.name, p.log());
}

/// The Kafka bootstrap address refuses connections for the first seconds (the brokers'
/// metadata names 127.0.0.1:9092 itself, so only the bootstrap goes through the forwarder,
/// which is what "broker not up yet" at start is). With `socket.timeout.ms` = 2 s the
/// preflight's metadata request fails before the port is up: sluice retries it and streams.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_down_at_start_is_waited_for() {
    let flavor = MARIADB;
    let fwd = LateForwarder::start(KAFKA, DOWN_FOR);
    let p = Pipeline::new(
        flavor,
        "latekafka",
        "\n[kafka.properties]\n\"socket.timeout.ms\" = \"2000\"\n",
    );
    p.edit_config(
        &format!("bootstrap_servers = \"{KAFKA}\""),
        &format!("bootstrap_servers = \"127.0.0.1:{}\"", fwd.port),
    );
    let mut c = root(flavor.port).await;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {}", p.db),
            &format!(
                "CREATE TABLE {}.t (id INT PRIMARY KEY, v VARCHAR(10))",
                p.db
            ),
        ],
    )
    .await;
    let mut child = p.spawn();
    wait_until_up(&fwd, &mut child, &p, "Kafka bootstrap");
    p.wait_started(Duration::from_secs(60));
    let log = p.log();
    assert!(
        log.contains("transient error") && log.contains("Kafka reachable"),
        "the unreachable broker at start was retried as a transient error; log:\n{log}"
    );
    streams(&p, &mut c, 1, 5).await;
    let st = terminate(&mut child);
    assert!(st.success(), "{st:?}; log:\n{}", p.log());
}

/// A source user of the test's own; dropped from the server when the guard goes, also when
/// the test fails.
struct OwnUser {
    flavor: Flavor,
    name: String,
}

impl Drop for OwnUser {
    fn drop(&mut self) {
        let (port, sql) = (
            self.flavor.port,
            format!("DROP USER IF EXISTS '{}'@'%'", self.name),
        );
        // Drop runs inside the test's runtime: the statement runs on a runtime of its own.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let mut c = root(port).await;
                let _ = c.query_drop(sql).await;
            });
        })
        .join();
    }
}

/// A source user of the test's own, so its connections can be told from other tests'.
async fn own_user(flavor: Flavor, p: &Pipeline) -> OwnUser {
    let user = unique("retry");
    let mut c = root(flavor.port).await;
    exec(
        &mut c,
        &[
            &format!("CREATE USER '{user}'@'%' IDENTIFIED BY 'sluice'"),
            &format!(
                "GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{user}'@'%'"
            ),
        ],
    )
    .await;
    p.edit_config("sluice:sluice@", &format!("{user}:sluice@"));
    OwnUser { flavor, name: user }
}

/// The ids of `user`'s replication (`Binlog Dump`) connections.
async fn dump_threads(c: &mut mysql_async::Conn, user: &str) -> Vec<u64> {
    let rows: Vec<mysql_async::Row> = c.query("SHOW FULL PROCESSLIST").await.expect("processlist");
    rows.iter()
        .filter(|r| {
            let u: Option<String> = r.get("User");
            let cmd: Option<String> = r.get("Command");
            u.as_deref() == Some(user) && cmd.is_some_and(|c| c.starts_with("Binlog Dump"))
        })
        .filter_map(|r| r.get::<u64, _>("Id"))
        .collect()
}

/// Waits for a replication connection of `user` other than `old`, then kills it from the
/// server side; returns its id.
async fn kill_replication(
    c: &mut mysql_async::Conn,
    user: &str,
    old: Option<u64>,
    child: &mut KillOnDrop,
    p: &Pipeline,
) -> u64 {
    let timeout = Duration::from_secs(60);
    let started = Instant::now();
    let id = loop {
        still_running(child, p, "while it should be reconnecting");
        let ids = dump_threads(c, user).await;
        if let Some(id) = ids.into_iter().find(|id| Some(*id) != old) {
            break id;
        }
        assert!(
            started.elapsed() < timeout,
            "[{}] waited {timeout:?} for a new replication connection of {user}; log:\n{}",
            p.flavor.name,
            p.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // The connection may be gone by itself in between; the next wait notices.
    let _ = c.query_drop(format!("KILL {id}")).await;
    id
}

/// The configuration of the retry tests: a limit of 2 consecutive failures, short backoff,
/// and `max_ms` as the time an attempt must run to count as healthy.
fn retry_settings(p: &Pipeline, max_ms: u64) {
    p.edit_config(
        "heartbeat_ms = 1000",
        &format!(
            "heartbeat_ms = 1000\nreconnect_backoff_min_ms = 100\n\
             reconnect_backoff_max_ms = {max_ms}\nmax_reconnect_attempts = 2"
        ),
    );
}

/// With `max_reconnect_attempts = 2`, four failures, each after a healthy attempt (it
/// committed a row and ran for `reconnect_backoff_max_ms`): the count starts over every time,
/// sluice keeps going and every row arrives exactly once.
async fn healthy_attempts_reset_the_failure_count(flavor: Flavor) {
    let healthy_after = Duration::from_millis(1500);
    let p = Pipeline::new(flavor, "reset", "");
    let own = own_user(flavor, &p).await;
    let user = own.name.as_str();
    retry_settings(&p, healthy_after.as_millis() as u64);
    let (mut c, mut child) = p
        .start_with(&[("t", "(id INT PRIMARY KEY, v VARCHAR(10))")])
        .await;
    let kills = 4;
    let mut old = None;
    for i in 1..=kills {
        // This attempt commits a row...
        streams(&p, &mut c, i, i).await;
        // ...and runs for the policy's time (it started before the row was written).
        let healthy_at = Instant::now() + healthy_after + Duration::from_millis(300);
        wait_for(
            "the attempt to have run long enough to be healthy",
            healthy_after * 4,
            || {
                still_running(&mut child, &p, "while healthy");
                if Instant::now() >= healthy_at {
                    Ok(())
                } else {
                    Err("not yet".into())
                }
            },
        );
        old = Some(kill_replication(&mut c, user, old, &mut child, &p).await);
    }
    // Reconnected after the last kill, too, with nothing lost or repeated.
    streams(&p, &mut c, kills + 1, kills + 1).await;
    still_running(&mut child, &p, "after healthy attempts");
    let log = p.log();
    let retried: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("transient error; reconnecting"))
        .collect();
    assert_eq!(
        retried.len(),
        kills as usize,
        "[{}] one retry per kill; log:\n{log}",
        flavor.name
    );
    assert!(
        retried.iter().all(|l| l.contains("attempt=1")),
        "[{}] after a healthy attempt every failure is the first in a row:\n{}",
        flavor.name,
        retried.join("\n")
    );
    let st = terminate(&mut child);
    assert!(st.success(), "[{}] {st:?}; log:\n{}", flavor.name, p.log());
}

/// The control: with the same limit of 2 and attempts that never get healthy (killed before
/// they ran `reconnect_backoff_max_ms`), the third failure in a row stops sluice with exit 1,
/// naming the setting.
async fn consecutive_failures_beyond_the_limit_stop(flavor: Flavor) {
    let p = Pipeline::new(flavor, "giveup", "");
    let own = own_user(flavor, &p).await;
    let user = own.name.as_str();
    retry_settings(&p, 60_000);
    let (mut c, mut child) = p
        .start_with(&[("t", "(id INT PRIMARY KEY, v VARCHAR(10))")])
        .await;
    let mut old = None;
    for _ in 0..3 {
        old = Some(kill_replication(&mut c, user, old, &mut child, &p).await);
    }
    let st = wait_exit(&mut child, Duration::from_secs(60));
    let log = p.log();
    assert_eq!(st.code(), Some(1), "[{}] {st:?}; log:\n{log}", flavor.name);
    assert!(
        log.contains("gave up: 3 attempts in a row failed")
            && log.contains("source.max_reconnect_attempts"),
        "[{}] the error names the limit; log:\n{log}",
        flavor.name
    );
}

per_flavor!(
    source_down_at_start_is_waited_for,
    healthy_attempts_reset_the_failure_count,
    consecutive_failures_beyond_the_limit_stop,
);
