//! A bed for tests of process files and cluster mode: pipeline files written from
//! [`Member`]s, `sluice run` of a process file, its API over plain HTTP, sequenced workloads
//! and their check by an independent `read_committed` reader.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::*;

/// Rows per pipeline, and update rounds over all of them (each round one transaction per
/// 10 rows).
pub const ROWS: usize = 60;
pub const ROUNDS: usize = 4;

#[derive(Clone)]
pub struct Member {
    pub name: String,
    pub flavor: Flavor,
    pub server_id: u32,
    pub extra_route: &'static str,
}

impl Member {
    pub fn new(flavor: Flavor, tag: &str, extra_route: &'static str) -> Member {
        Member {
            name: unique(&format!("t_{}_proc_{tag}", flavor.name)),
            flavor,
            server_id: 10000 + rand::random::<u32>() % 50000,
            extra_route,
        }
    }

    pub fn file_text(&self) -> String {
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

    pub fn topic(&self) -> String {
        format!("{}.t", self.name)
    }
}

/// Writes the members' pipeline files under `dir/pipelines` and `dir/process.toml` (API on
/// any free port, then `extra`, e.g. a `[cluster]` section); returns the process file.
pub fn write_process(dir: &Path, members: &[&Member], extra: &str) -> std::path::PathBuf {
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
        format!("pipelines = [\"pipelines/*.toml\"]\n[api]\nlisten = \"127.0.0.1:0\"\n{extra}"),
    )
    .expect("process file");
    file
}

pub fn spawn(file: &Path, log: &Path) -> KillOnDrop {
    spawn_run(file, log)
}

/// The API address from the `api listening` log line.
pub fn api_addr(log: &Path) -> String {
    wait_for("the api to listen", Duration::from_secs(30), || {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        text.lines()
            .rev()
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
pub fn http_get(addr: &str, path: &str) -> (u16, String) {
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
pub fn get(addr: &str, path: &str) -> (u16, Value) {
    let (code, body) = http_get(addr, path);
    (
        code,
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
    )
}

pub fn state_of(addr: &str, name: &str) -> String {
    let (_, v) = get(addr, &format!("/pipelines/{name}/status"));
    v["state"].as_str().unwrap_or_default().to_string()
}

pub async fn setup_table(m: &Member) {
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
pub async fn workload(m: &Member) {
    insert_rows(m).await;
    update_rounds(m, ROUNDS).await;
}

/// Inserts ids 1..=ROWS with v = 0, 10 rows a transaction.
pub async fn insert_rows(m: &Member) {
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
}

/// `rounds` rounds of `v = v + 1` over every row, one transaction per 10 rows.
pub async fn update_rounds(m: &Member, rounds: usize) {
    let mut c = root(m.flavor.port).await;
    let db = &m.name;
    for _ in 0..rounds {
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

/// Every change of `m` once, in order per key: for each id, the values 0, 1, ..., `rounds`.
pub fn check_records(m: &Member, rounds: usize) {
    let want = ROWS * (rounds + 1);
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
    let expected: Vec<i64> = (0..=rounds as i64).collect();
    let wrong: Vec<String> = (1..=ROWS as i64)
        .filter(|id| per_key.get(id) != Some(&expected))
        .map(|id| format!("{id}: {:?}", per_key.get(&id)))
        .collect();
    assert!(
        wrong.is_empty() && recs.len() == want,
        "[{}] {} records, want {want}; keys not 0..={rounds} in order: {wrong:?}",
        m.name,
        recs.len()
    );
}
