//! Several pipelines in one `sluice run` (a process file, `pipelines = [...]`), against the
//! real servers: two pipelines on MariaDB and one on MySQL stream sequenced workloads while a
//! fourth, on MariaDB, stops with a definite error mid-stream (a DDL on a route with
//! `on_schema_change = "fail"`). An independent `read_committed` reader proves, per pipeline:
//! every change once, in order per key; the process and the other pipelines go on after the
//! fourth stopped; the API serves every pipeline (`/pipelines`, `/pipelines/{name}/...`) and
//! `/metrics` labels each. Before that, a process whose pipelines share a server id on one
//! server is refused at start, naming both files.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use support::processes::*;
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelines_of_one_process_stream_on_and_stop_alone() {
    let members = [
        Member::new(MARIADB, "a", ""),
        Member::new(MARIADB, "b", ""),
        Member::new(MYSQL, "c", ""),
        Member::new(MARIADB, "bad", "on_schema_change = \"fail\""),
    ];
    for m in &members {
        setup_table(m).await;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write_process(dir.path(), &members.iter().collect::<Vec<_>>(), "");
    let log = dir.path().join("sluice.log");
    let mut child = spawn(&file, &log);
    let addr = api_addr(&log);
    let show_log = || std::fs::read_to_string(&log).unwrap_or_default();
    for m in &members {
        wait_for(
            &format!("{} streaming", m.name),
            Duration::from_secs(60),
            || match state_of(&addr, &m.name).as_str() {
                "streaming" => Ok(()),
                s => Err(format!("{s}; log:\n{}", show_log())),
            },
        );
    }
    // The fourth pipeline stops on a DDL its route refuses; the others stream meanwhile.
    let bad = &members[3];
    let mut c = root(bad.flavor.port).await;
    exec(
        &mut c,
        &[
            &format!("INSERT INTO {}.t VALUES (1, 0)", bad.name),
            &format!("ALTER TABLE {}.t ADD COLUMN w INT", bad.name),
            &format!("INSERT INTO {}.t VALUES (2, 0, 0)", bad.name),
        ],
    )
    .await;
    let (a, b, y) = (&members[0], &members[1], &members[2]);
    tokio::join!(workload(a), workload(b), workload(y));
    wait_for(
        "the refusing pipeline to stop",
        Duration::from_secs(60),
        || match state_of(&addr, &bad.name).as_str() {
            "stopped" => Ok(()),
            s => Err(s.to_string()),
        },
    );
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "the process ended with one pipeline's error; log:\n{}",
        show_log()
    );
    for m in [a, b, y] {
        check_records(m, ROUNDS);
        assert_eq!(state_of(&addr, &m.name), "streaming", "{}", m.name);
    }
    // The refusing pipeline wrote its row before the DDL, nothing after it.
    let recs = consume_raw(
        &[bad.topic()],
        "read_committed",
        usize::MAX,
        Duration::from_millis(1000),
        Duration::from_secs(30),
    );
    assert_eq!(recs.len(), 1, "{}: {recs:?}", bad.name);
    // The API: the directory, a per-pipeline status, and the single paths refused.
    let (code, list) = get(&addr, "/pipelines");
    assert_eq!(code, 200, "{list}");
    let states: BTreeMap<String, String> = list["pipelines"]
        .as_array()
        .expect("pipelines")
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap_or_default().to_string(),
                p["state"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    for m in &members {
        let want = if m.name == bad.name {
            "stopped"
        } else {
            "streaming"
        };
        assert_eq!(
            states.get(&m.name).map(String::as_str),
            Some(want),
            "{list}"
        );
    }
    eprintln!("GET /pipelines: {list}");
    let (code, v) = get(&addr, "/status");
    assert_eq!(code, 409, "{v}");
    let (code, v) = get(&addr, &format!("/pipelines/{}/status", bad.name));
    assert_eq!(code, 200, "{v}");
    assert!(
        v["last_error"].to_string().contains("on_schema_change"),
        "the stopped pipeline's status names its error: {v}"
    );
    eprintln!("{}: last_error {}", bad.name, v["last_error"]);
    // Every pipeline's series in one /metrics, the stopped one's too.
    let (_, metrics) = http_get(&addr, "/metrics");
    for m in &members {
        assert!(
            metrics.contains(&format!("pipeline=\"{}\"", m.name)),
            "no series of {} in /metrics",
            m.name
        );
    }
    let status = terminate(&mut child);
    assert!(status.success(), "{status:?}; log:\n{}", show_log());
    // Every pipeline's lines name it, those of its sink thread and its tasks too.
    let log = show_log();
    for m in &members {
        let span = format!("pipeline{{name={}}}", m.name);
        for what in ["producer initialized", "progress"] {
            assert!(
                log.lines().any(|l| l.contains(&span) && l.contains(what)),
                "no `{what}` line in {span}; log:\n{log}"
            );
        }
    }
}

#[test]
fn pipelines_sharing_a_server_id_on_one_server_are_refused_at_start() {
    let a = Member::new(MARIADB, "ida", "");
    let mut b = Member::new(MARIADB, "idb", "");
    b.server_id = a.server_id;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write_process(dir.path(), &[&a, &b], "");
    let started = Instant::now();
    let out = sluice_command()
        .args(["run", "--config"])
        .arg(&file)
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("source.server_id")
            && text.contains(&format!("{}.toml", a.name))
            && text.contains(&format!("{}.toml", b.name)),
        "{text}"
    );
    assert!(started.elapsed() < Duration::from_secs(10), "{text}");
}
