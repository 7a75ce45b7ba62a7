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
        let span = format!("pipeline{{pipeline={}}}", m.name);
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

/// `[logging]` of a process file sets the process's levels and line format (with
/// `SLUICE_LOG` and `SLUICE_LOG_FORMAT` unset, which would take precedence): `format = "json"`
/// and a span filter raising one pipeline to debug over `error` elsewhere. Every line is a JSON
/// object; the louder pipeline's debug lines are there, named by `spans[].pipeline`; no line
/// below error comes from outside that pipeline's span.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logging_settings_of_the_process_file_apply() {
    let loud = Member::new(MARIADB, "loud", "");
    let quiet = Member::new(MARIADB, "quiet", "");
    setup_table(&loud).await;
    setup_table(&quiet).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let extra = format!(
        "[logging]\nlevel = \"error,[pipeline{{pipeline={}}}]=debug\"\nformat = \"json\"\n",
        loud.name
    );
    let file = write_process(dir.path(), &[&loud, &quiet], &extra);
    let log = dir.path().join("sluice.log");
    let mut child = KillOnDrop(
        sluice_command()
            .args(["run", "--config"])
            .arg(&file)
            .env_remove("SLUICE_LOG")
            .env_remove("SLUICE_LOG_FORMAT")
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("spawn sluice"),
    );
    let lines = || -> Vec<serde_json::Value> {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(|l| {
                serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}"))
            })
            .collect()
    };
    let in_span = |l: &serde_json::Value, name: &str| {
        l["spans"]
            .as_array()
            .is_some_and(|s| s.iter().any(|s| s["pipeline"] == name))
    };
    // The loud pipeline's progress line (every 10 s) says it streams, at info inside its span.
    wait_for(
        "the loud pipeline's progress line",
        Duration::from_secs(60),
        || {
            let got = lines();
            match got
                .iter()
                .any(|l| in_span(l, &loud.name) && l["message"] == "progress")
            {
                true => Ok(()),
                false => Err(format!("{} lines so far", got.len())),
            }
        },
    );
    // A change on each: the loud one's commit is logged at debug.
    for m in [&loud, &quiet] {
        let mut c = root(m.flavor.port).await;
        exec(
            &mut c,
            &[&format!("INSERT INTO {}.t VALUES (1, 0)", m.name)],
        )
        .await;
    }
    wait_for(
        "a debug line of the loud pipeline",
        Duration::from_secs(30),
        || match lines()
            .iter()
            .any(|l| l["level"] == "DEBUG" && in_span(l, &loud.name))
        {
            true => Ok(()),
            false => Err("none yet".to_string()),
        },
    );
    let status = terminate(&mut child);
    assert!(status.success(), "{status:?}");
    let got = lines();
    let leaked: Vec<_> = got
        .iter()
        .filter(|l| l["level"] != "ERROR" && !in_span(l, &loud.name))
        .collect();
    assert!(
        leaked.is_empty(),
        "lines below error outside {}'s span: {leaked:#?}",
        loud.name
    );
}
