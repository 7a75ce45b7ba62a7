//! The test bed's Kafka Connect worker (`scripts/services up connect`, REST on
//! `SLUICE_TEST_CONNECT_URL`, default `http://127.0.0.1:8083`): creating and deleting
//! connectors through its REST API, their status, the worker's log, and a sink's committed
//! consumer-group offsets.
//!
//! When the worker cannot be reached the tests fail (they do not skip): `scripts/test` starts it.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::TopicPartitionList;
use serde_json::Value;

use super::KAFKA;

/// The worker's REST address.
pub fn connect_url() -> String {
    std::env::var("SLUICE_TEST_CONNECT_URL").unwrap_or_else(|_| "http://127.0.0.1:8083".into())
}

/// The last `lines` lines of the worker's log (`.data/connect/connect.log` of this checkout).
pub fn worker_log_tail(lines: usize) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/.data/connect/connect.log");
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let all: Vec<&str> = text.lines().collect();
            let from = all.len().saturating_sub(lines);
            format!(
                "---- last {} lines of {path} ----\n{}",
                all.len() - from,
                all[from..].join("\n")
            )
        }
        Err(e) => format!("(no worker log at {path}: {e})"),
    }
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("http client")
}

/// `METHOD url` with an optional JSON body: (status, body parsed as JSON, or as a string).
async fn call(
    method: reqwest::Method,
    path: &str,
    body: Option<&Value>,
) -> Result<(u16, Value), String> {
    let url = format!("{}{path}", connect_url());
    let mut req = http().request(method.clone(), &url);
    if let Some(b) = body {
        req = req
            .header("Content-Type", "application/json")
            .body(b.to_string());
    }
    let resp = req
        .send()
        .await
        .map_err(|e| format!("{method} {url}: {e}"))?;
    let status = resp.status().as_u16();
    let text = resp
        .text()
        .await
        .map_err(|e| format!("{method} {url}: body: {e}"))?;
    let json = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Ok((status, json))
}

/// Fails the test with a clear message unless the worker answers `GET /health` as healthy.
pub async fn require_worker() {
    match call(reqwest::Method::GET, "/health", None).await {
        Ok((200, _)) => {}
        Ok((s, body)) => panic!(
            "the Kafka Connect worker at {} is not healthy (HTTP {s}: {body}); \
             ./scripts/services up connect starts it\n{}",
            connect_url(),
            worker_log_tail(40)
        ),
        Err(e) => panic!(
            "the Kafka Connect worker is not reachable at {} ({e}); set SLUICE_TEST_CONNECT_URL \
             or run ./scripts/services up connect",
            connect_url()
        ),
    }
}

/// A connector on the worker, deleted when dropped (also when the test fails half-way).
pub struct Connector {
    /// Its name (also its sink consumer group's: `connect-<name>`).
    pub name: String,
}

impl Connector {
    /// Creates (or reconfigures) connector `name` with `config` through `PUT
    /// /connectors/<name>/config`, retrying while the worker rebalances (HTTP 409) for up to
    /// 60 s.
    pub async fn create(name: &str, config: &Value) -> Connector {
        let path = format!("/connectors/{name}/config");
        let started = Instant::now();
        loop {
            match call(reqwest::Method::PUT, &path, Some(config)).await {
                Ok((200 | 201, _)) => break,
                Ok((409, _)) | Err(_) if started.elapsed() < Duration::from_secs(60) => {
                    tokio::time::sleep(Duration::from_millis(500)).await
                }
                Ok((s, body)) => panic!(
                    "PUT {path}: HTTP {s}: {body}\nconfig: {config:#}\n{}",
                    worker_log_tail(60)
                ),
                Err(e) => panic!("PUT {path}: {e}\n{}", worker_log_tail(60)),
            }
        }
        Connector {
            name: name.to_string(),
        }
    }

    /// `GET /connectors/<name>/status` (connector and task states, a failed task's trace).
    pub async fn status(&self) -> Value {
        match call(
            reqwest::Method::GET,
            &format!("/connectors/{}/status", self.name),
            None,
        )
        .await
        {
            Ok((_, v)) => v,
            Err(e) => Value::String(e),
        }
    }

    /// Panics if the connector or one of its tasks has FAILED, with its trace and the log.
    pub async fn assert_not_failed(&self) {
        let st = self.status().await;
        let failed = st["connector"]["state"] == "FAILED"
            || st["tasks"]
                .as_array()
                .is_some_and(|ts| ts.iter().any(|t| t["state"] == "FAILED"));
        if failed {
            panic!(
                "connector {} failed: {}\n{}",
                self.name,
                pretty_status(&st),
                worker_log_tail(80)
            );
        }
    }

    /// The sink's consumer group.
    pub fn group(&self) -> String {
        format!("connect-{}", self.name)
    }
}

/// A connector status with the traces' line breaks shown as such.
pub fn pretty_status(st: &Value) -> String {
    serde_json::to_string_pretty(st)
        .unwrap_or_default()
        .replace("\\n", "\n")
        .replace("\\t", "\t")
}

impl Drop for Connector {
    fn drop(&mut self) {
        // A fresh runtime on another thread: drop may run inside the test's runtime.
        let name = self.name.clone();
        let done = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(call(
                reqwest::Method::DELETE,
                &format!("/connectors/{name}"),
                None,
            ))
        })
        .join();
        match done {
            Ok(Ok((200 | 204 | 404, _))) => {}
            other => eprintln!("deleting connector {}: {other:?}", self.name),
        }
    }
}

/// The committed offsets of consumer group `group` for the given partitions (`None`: no
/// offset committed).
pub fn committed_offsets(
    group: &str,
    partitions: &BTreeMap<(String, i32), i64>,
) -> BTreeMap<(String, i32), Option<i64>> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", KAFKA)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    for (t, p) in partitions.keys() {
        tpl.add_partition(t, *p);
    }
    let got = consumer
        .committed_offsets(tpl, Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("committed offsets of group {group}: {e}"));
    partitions
        .keys()
        .map(|(t, p)| {
            let off = got
                .find_partition(t, *p)
                .and_then(|e| e.offset().to_raw())
                .filter(|o| *o >= 0);
            ((t.clone(), *p), off)
        })
        .collect()
}

/// The JsonConverter checker (`scripts/lib/connect-json-check`: Kafka Connect's own
/// `JsonConverter`, `schemas.enable=true`, on each key and value, then back).
const JSON_CHECK: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/scripts/lib/connect-json-check/run"
);

/// Runs the JsonConverter checker with `args` (and `stdin`): (exit code, one JSON document per
/// output line, stderr).
pub fn json_check(args: &[&str], stdin: Option<&str>) -> (i32, Vec<Value>, String) {
    let mut child = super::die_with_test(Command::new(JSON_CHECK))
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run connect-json-check");
    if let Some(text) = stdin {
        use std::io::Write;
        let mut input = child.stdin.take().expect("stdin");
        let text = text.to_string();
        // A writer thread: the checker answers line by line, so a large input must not wait
        // for the output to be read.
        std::thread::spawn(move || input.write_all(text.as_bytes()).expect("write stdin"));
    }
    let out = child.wait_with_output().expect("connect-json-check output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines = stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("checker line {l:?}: {e}")))
        .collect();
    (
        out.status.code().unwrap_or(-1),
        lines,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
