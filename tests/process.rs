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
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::*;

/// Rows per pipeline, and update rounds over all of them (each round one transaction per
/// 10 rows).
const ROWS: usize = 60;
const ROUNDS: usize = 4;

struct Member {
    name: String,
    flavor: Flavor,
    server_id: u32,
    extra_route: &'static str,
}

impl Member {
    fn new(flavor: Flavor, tag: &str, extra_route: &'static str) -> Member {
        Member {
            name: unique(&format!("t_{}_proc_{tag}", flavor.name)),
            flavor,
            server_id: 10000 + rand::random::<u32>() % 50000,
            extra_route,
        }
    }

    fn file_text(&self) -> String {
        let (name, port, sid) = (&self.name, self.flavor.port, self.server_id);
        format!(
            r#"name = "{name}"
[source]
url = "mysql://sluice:sluice@127.0.0.1:{port}"
server_id = {sid}
include = ["{name}\\..*"]
start = "latest"
heartbeat_ms = 1000
[kafka]
bootstrap_servers = "{KAFKA}"
offsets_topic = "{name}.offsets"
[commit]
max_ms = 50
[[route]]
match = "{name}\\.(.*)"
topic = "{name}.$1"
format = "json"
{extra}
"#,
            extra = self.extra_route
        )
    }

    fn topic(&self) -> String {
        format!("{}.t", self.name)
    }
}

fn write_process(dir: &Path, members: &[&Member]) -> std::path::PathBuf {
    std::fs::create_dir_all(dir.join("pipelines")).expect("mkdir");
    for m in members {
        std::fs::write(
            dir.join("pipelines").join(format!("{}.toml", m.name)),
            m.file_text(),
        )
        .expect("pipeline file");
    }
    let file = dir.join("process.toml");
    std::fs::write(
        &file,
        "pipelines = [\"pipelines/*.toml\"]\n[api]\nlisten = \"127.0.0.1:0\"\n",
    )
    .expect("process file");
    file
}

fn spawn(file: &Path, log: &Path) -> KillOnDrop {
    let child: Child = sluice_command()
        .args(["run", "--config"])
        .arg(file)
        .env(
            "SLUICE_LOG",
            std::env::var("SLUICE_TEST_LOG").unwrap_or_else(|_| "info".into()),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(log).expect("log")))
        .spawn()
        .expect("spawn sluice");
    KillOnDrop(child)
}

/// The API address from the `api listening` log line.
fn api_addr(log: &Path) -> String {
    wait_for("the api to listen", Duration::from_secs(30), || {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        text.lines()
            .find_map(|l| {
                let i = l.find("api listening")?;
                let rest = &l[i..];
                let a = rest.split("addr=").nth(1)?;
                Some(a.split_whitespace().next()?.to_string())
            })
            .ok_or_else(|| "no `api listening` line yet".to_string())
    })
}

/// `GET http://<addr><path>` over a plain HTTP/1.0 connection: status and body.
fn http_get(addr: &str, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the api");
    s.set_read_timeout(Some(Duration::from_secs(10))).ok();
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").expect("request");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("answer");
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b)
        .unwrap_or_default();
    (code, body.to_string())
}

/// [`http_get`] of a JSON answer.
fn get(addr: &str, path: &str) -> (u16, Value) {
    let (code, body) = http_get(addr, path);
    (
        code,
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
    )
}

fn state_of(addr: &str, name: &str) -> String {
    let (_, v) = get(addr, &format!("/pipelines/{name}/status"));
    v["state"].as_str().unwrap_or_default().to_string()
}

async fn setup_table(m: &Member) {
    let mut c = root(m.flavor.port).await;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {}", m.name),
            &format!(
                "CREATE TABLE {}.t (id INT PRIMARY KEY, v INT NOT NULL)",
                m.name
            ),
        ],
    )
    .await;
}

/// Inserts ids 1..=ROWS with v = 0 (10 rows a transaction), then ROUNDS rounds of
/// `v = v + 1` over every row (one transaction per 10 rows).
async fn workload(m: &Member) {
    let mut c = root(m.flavor.port).await;
    let db = &m.name;
    for lo in (1..=ROWS).step_by(10) {
        let vals: Vec<String> = (lo..lo + 10).map(|i| format!("({i}, 0)")).collect();
        exec(
            &mut c,
            &[&format!("INSERT INTO {db}.t VALUES {}", vals.join(","))],
        )
        .await;
    }
    for _ in 0..ROUNDS {
        for lo in (1..=ROWS).step_by(10) {
            exec(
                &mut c,
                &[&format!(
                    "UPDATE {db}.t SET v = v + 1 WHERE id BETWEEN {lo} AND {}",
                    lo + 9
                )],
            )
            .await;
        }
    }
}

/// Every change of `m` once, in order per key: for each id, the values 0, 1, ..., ROUNDS.
fn check_records(m: &Member) {
    let want = ROWS * (ROUNDS + 1);
    let recs = consume_raw(
        &[m.topic()],
        "read_committed",
        want,
        Duration::from_millis(1500),
        Duration::from_secs(120),
    );
    let mut per_key: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    let mut sorted: Vec<&RawRec> = recs.iter().collect();
    sorted.sort_by_key(|r| (r.partition, r.offset));
    for r in sorted {
        let rec = r.json();
        let id = rec.key.as_ref().expect("key")["id"].as_i64().expect("id");
        let v = rec.value.as_ref().expect("value")["after"]["v"]
            .as_i64()
            .expect("v");
        per_key.entry(id).or_default().push(v);
    }
    let expected: Vec<i64> = (0..=ROUNDS as i64).collect();
    let wrong: Vec<String> = (1..=ROWS as i64)
        .filter(|id| per_key.get(id) != Some(&expected))
        .map(|id| format!("{id}: {:?}", per_key.get(&id)))
        .collect();
    assert!(
        wrong.is_empty() && recs.len() == want,
        "[{}] {} records, want {want}; keys not 0..={ROUNDS} in order: {wrong:?}",
        m.name,
        recs.len()
    );
}

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
    let file = write_process(dir.path(), &members.iter().collect::<Vec<_>>());
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
        check_records(m);
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
}

#[test]
fn pipelines_sharing_a_server_id_on_one_server_are_refused_at_start() {
    let a = Member::new(MARIADB, "ida", "");
    let mut b = Member::new(MARIADB, "idb", "");
    b.server_id = a.server_id;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write_process(dir.path(), &[&a, &b]);
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
