//! The HTTP API of a running pipeline and `sluice snapshot`'s answers when it cannot reach one.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::*;

async fn get(url: &str) -> (u16, Value) {
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let r = http.get(url).send().await.unwrap();
    let status = r.status().as_u16();
    (
        status,
        serde_json::from_str(&r.text().await.unwrap()).unwrap(),
    )
}

/// `GET url` as text.
async fn get_text(url: &str) -> (u16, String) {
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let r = http.get(url).send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

/// `POST url` with an optional bearer token.
async fn post(url: &str, token: Option<&str>) -> (u16, Value) {
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let mut b = http.post(url);
    if let Some(t) = token {
        b = b.bearer_auth(t);
    }
    let r = b.send().await.unwrap();
    let status = r.status().as_u16();
    (
        status,
        serde_json::from_str(&r.text().await.unwrap()).unwrap(),
    )
}

/// Polls `GET url` until `ok` holds for its answer (within `timeout`); returns that answer.
async fn poll(url: &str, timeout: Duration, ok: impl Fn(u16, &Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let (status, v) = get(url).await;
        if ok(status, &v) {
            return v;
        }
        assert!(
            started.elapsed() < timeout,
            "GET {url}: not as expected within {timeout:?}; last answer {status} {v}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The value of the series `name{labels}` in Prometheus text, when exported.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

/// The ids of `recs` (the key's `id`) with how often each was read.
fn id_counts(recs: &[Rec]) -> BTreeMap<i64, usize> {
    let mut out = BTreeMap::new();
    for r in recs {
        let id = r.key.as_ref().unwrap()["id"].as_i64().unwrap();
        *out.entry(id).or_default() += 1;
    }
    out
}

#[tokio::test]
async fn a_running_pipeline_serves_the_api() {
    let p = Pipeline::new(MARIADB, "api", "");
    let (_c, mut child) = p.start_with(&[("t", "(id INT PRIMARY KEY)")]).await;
    let addr = p.api_addr(Duration::from_secs(30));
    assert!(addr.ip().is_loopback() && addr.port() != 0, "{addr}");
    assert_eq!(
        get(&format!("http://{addr}/healthz")).await,
        (200, json!({"status": "ok"}))
    );
    // start = "latest": no snapshot.
    assert_eq!(
        get(&format!("http://{addr}/snapshots")).await,
        (200, json!({"snapshot": null}))
    );
    let (status, v) = get(&format!("http://{addr}/metrics-not-yet")).await;
    assert_eq!(status, 404, "{v}");

    // `sluice snapshot` cannot know a port 0 server's port.
    let (code, out) = p.command(&["snapshot", "--table", &format!("{}.t", p.db)]);
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("port 0") && out.contains("api.listen"),
        "{out}"
    );

    let st = terminate(&mut child);
    assert!(st.success(), "{st:?}; log:\n{}", p.log());
    // The API stopped with the pipeline.
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    assert!(http
        .get(format!("http://{addr}/healthz"))
        .send()
        .await
        .is_err());
}

#[test]
fn snapshot_command_names_the_address_when_nothing_listens() {
    let p = Pipeline::new(MARIADB, "apicli", "");
    let port = support::reserved_port();
    p.edit_config(
        "listen = \"127.0.0.1:0\"",
        &format!("listen = \"127.0.0.1:{port}\""),
    );
    let (code, out) = p.command(&["snapshot", "--table", "a.b", "--no-wait"]);
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("is `sluice run` running with the API enabled")
            && out.contains(&format!("127.0.0.1:{port}")),
        "{out}"
    );
}

#[test]
fn a_taken_api_port_stops_run_naming_the_setting() {
    let p = Pipeline::new(MARIADB, "apiport", "");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    p.edit_config("listen = \"127.0.0.1:0\"", &format!("listen = \"{addr}\""));
    let (code, out) = p.command(&["run"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("api.listen") && out.contains(&addr.to_string()),
        "{out}"
    );
    assert_nothing_written(&p);
}

/// Status, tables, configuration and metrics of a pipeline that wrote a small workload; then
/// a pause (rows inserted meanwhile are not written) and a resume (they are, exactly once).
#[tokio::test]
async fn operators_read_status_and_pause_and_resume_a_running_pipeline() {
    let p = Pipeline::new(MARIADB, "ops", "");
    let token = format!("tok-{:x}", rand::random::<u64>());
    p.edit_config(
        "listen = \"127.0.0.1:0\"",
        &format!("listen = \"127.0.0.1:0\"\ntoken = \"{token}\""),
    );
    let (mut c, mut child) = p
        .start_with(&[("t", "(id INT PRIMARY KEY, v VARCHAR(20))")])
        .await;
    let addr = p.api_addr(Duration::from_secs(30));
    let url = |path: &str| format!("http://{addr}{path}");
    let table = format!("{}.t", p.db);
    let topics = vec![p.topic("t")];
    // Every series carries the pipeline's name (labels in name order).
    let written = format!(
        "sluice_events_written_total{{op=\"c\",pipeline=\"{}\",table=\"{table}\"}}",
        p.name
    );

    // A small workload: 5 rows in two source transactions.
    exec(
        &mut c,
        &[
            &format!("INSERT INTO {table} VALUES (1,'a'),(2,'b'),(3,'c')"),
            &format!("INSERT INTO {table} VALUES (4,'d'),(5,'e')"),
        ],
    )
    .await;
    let started = Instant::now();
    loop {
        let (status, text) = get_text(&url("/metrics")).await;
        assert_eq!(status, 200);
        if sample(&text, &written) == Some(5.0) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{written} did not reach 5; metrics:\n{text}\nlog:\n{}",
            p.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Status: streaming, with a committed position.
    let status = poll(&url("/status"), Duration::from_secs(30), |s, v| {
        s == 200 && v["state"] == "streaming" && v["committed_position"].is_string()
    })
    .await;
    let committed = status["committed_position"].as_str().unwrap();
    assert!(
        committed.starts_with("gtid:") || committed.starts_with("file:"),
        "{status}"
    );
    assert!(status["read_position"].is_string(), "{status}");
    assert_eq!(status["paused"], false, "{status}");
    assert!(status["lag_seconds"].as_f64().unwrap() < 60.0, "{status}");
    let (code, ready) = get(&url("/readyz")).await;
    assert_eq!((code, &ready["ready"]), (200, &json!(true)), "{ready}");

    // Tables: the test table and its topic.
    let (code, v) = get(&url("/tables")).await;
    assert_eq!(code, 200, "{v}");
    let t = v["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"] == table.as_str())
        .unwrap_or_else(|| panic!("{table} not in {v}"));
    assert_eq!(t["topic"], p.topic("t"), "{v}");
    assert_eq!(t["format"], "json", "{v}");
    assert_eq!(t["key_columns"], json!(["id"]), "{v}");

    // Configuration: the effective one, without secrets.
    let (code, text) = get_text(&url("/config")).await;
    assert_eq!(code, 200, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["name"], p.name.as_str(), "{v}");
    assert_eq!(v["api"]["token"], "***", "{v}");
    assert!(!text.contains(&token), "the api token is shown: {text}");
    assert!(
        !text.contains(":sluice@"),
        "the source password is shown: {text}"
    );
    assert!(v["source"]["url"].as_str().unwrap().contains("***"), "{v}");

    // Pause: only with the token; the state becomes paused, readiness goes.
    let (code, v) = post(&url("/pause"), None).await;
    assert_eq!(code, 401, "{v}");
    let (code, v) = post(&url("/pause"), Some(&token)).await;
    assert_eq!((code, v), (202, json!({"paused": true, "changed": true})));
    let status = poll(&url("/status"), Duration::from_secs(30), |_, v| {
        v["state"] == "paused"
    })
    .await;
    assert_eq!(status["paused"], true, "{status}");
    let (code, ready) = get(&url("/readyz")).await;
    assert_eq!((code, &ready["state"]), (503, &json!("paused")), "{ready}");
    let (code, v) = post(&url("/pause"), Some(&token)).await;
    assert_eq!((code, v), (200, json!({"paused": true, "changed": false})));

    // Rows inserted while paused are not written.
    exec(
        &mut c,
        &[
            &format!("INSERT INTO {table} VALUES (6,'f'),(7,'g')"),
            &format!("INSERT INTO {table} VALUES (8,'h'),(9,'i'),(10,'j')"),
        ],
    )
    .await;
    // Nothing new may show up: the topic is read until it stayed quiet for 5 s (a window to
    // observe an absence, not a wait for something to happen).
    let recs = consume(
        &topics,
        "read_committed",
        usize::MAX,
        Duration::from_secs(5),
        Duration::from_secs(30),
    );
    assert_eq!(
        id_counts(&recs),
        (1..=5).map(|i| (i, 1)).collect::<BTreeMap<_, _>>(),
        "while paused; log:\n{}",
        p.log()
    );
    let (_, status) = get(&url("/status")).await;
    assert_eq!(status["state"], "paused", "{status}");

    // Resume: streaming again from the committed offset; every row exactly once.
    let (code, v) = post(&url("/resume"), Some(&token)).await;
    assert_eq!((code, v), (202, json!({"paused": false, "changed": true})));
    poll(&url("/status"), Duration::from_secs(60), |_, v| {
        v["state"] == "streaming" && v["paused"] == false
    })
    .await;
    let recs = consume(
        &topics,
        "read_committed",
        10,
        Duration::from_secs(3),
        Duration::from_secs(60),
    );
    assert_eq!(
        id_counts(&recs),
        (1..=10).map(|i| (i, 1)).collect::<BTreeMap<_, _>>(),
        "after the resume; log:\n{}",
        p.log()
    );
    let (code, v) = post(&url("/resume"), Some(&token)).await;
    assert_eq!((code, v), (200, json!({"paused": false, "changed": false})));
    let started = Instant::now();
    loop {
        let (_, text) = get_text(&url("/metrics")).await;
        if sample(&text, &written) == Some(10.0) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{written} did not reach 10:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (code, ready) = get(&url("/readyz")).await;
    assert_eq!((code, &ready["ready"]), (200, &json!(true)), "{ready}");

    let st = terminate(&mut child);
    assert!(st.success(), "{st:?}; log:\n{}", p.log());
}
