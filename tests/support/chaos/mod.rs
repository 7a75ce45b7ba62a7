//! The chaos harness: sluice between a database fault proxy and a Kafka fault proxy, a
//! sequenced workload writing to the database directly, faults of every kind while it runs,
//! and an independent checker (`scripts/lib/chaos-check`, Confluent's Python client as a
//! `read_committed` consumer) that proves every committed change arrived exactly once, in
//! order per key, every source transaction whole, and that replaying the topics gives the
//! source tables.
//!
//! Sizes and choices come from the environment (see [`Sizes::from_env`]); with
//! `SLUICE_CHAOS_CLUSTER=1` sluice streams into the test bed's three-node Kafka cluster
//! instead of the single broker (see [`cluster`]); with `SLUICE_CHAOS_MEMBERS=N` (N ≥ 2)
//! sluice runs as N instances in its own cluster mode (see [`members`]).
#![allow(dead_code)]

pub mod cluster;
pub mod db_proxy;
pub mod faults;
pub mod members;
pub mod report;
pub mod supervisor;
pub mod workload;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::Flavor;

/// `kafka.transaction_timeout_ms` of the chaos pipeline.
pub const TXN_TIMEOUT_MS: u64 = 5000;

/// What a run does, from the environment.
#[derive(Debug, Clone)]
pub struct Sizes {
    /// `SLUICE_CHAOS_CHANGES` (default 20000): row changes at least.
    pub changes: usize,
    /// `SLUICE_CHAOS_FAULTS_PER_KIND` (default 3).
    pub faults_per_kind: usize,
    /// `SLUICE_CHAOS_SEED` (default random).
    pub seed: u64,
    /// `SLUICE_CHAOS_KINDS`: a comma list of fault kinds, each optionally `kind:count`
    /// (default: every kind the run's Kafka allows, `faults_per_kind` times).
    pub kinds: Vec<(faults::Kind, usize)>,
    /// `SLUICE_CHAOS_CLUSTER=1`: stream into the three-node cluster (`coordinator_kill` and
    /// `leader_kill` instead of the proxy kinds and `kafka_restart`).
    pub cluster: bool,
    /// `SLUICE_CHAOS_RATE`: changes per second while faults run (default: the target
    /// spread over the expected length of the fault schedule).
    pub rate: Option<f64>,
    /// `SLUICE_CHAOS_OUT`: a folder for the results (report JSON, checker summary, log).
    pub out: Option<PathBuf>,
    /// `SLUICE_CHAOS_LANES` (1 or 2, default 1): with 2, the kinds that take the Kafka turn
    /// (node kills, broker restarts, Kafka link faults) run in a lane of their own, at the
    /// same time as the others; a fault of one lane then often overlaps one of the other, and
    /// its recovery time is that of both.
    pub lanes: usize,
    /// `SLUICE_CHAOS_MEMBERS` (default 1): with N ≥ 2, N sluice instances run the pipeline
    /// in cluster mode (a process file with `[cluster]`, one group per run), each under a
    /// supervisor of its own; SIGKILL and SIGSTOP hit the one that owns the pipeline (see
    /// [`members`]).
    pub members: usize,
}

fn env_parse<T: std::str::FromStr>(name: &str) -> Option<T> {
    let v = std::env::var(name).ok()?;
    Some(
        v.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a valid value")),
    )
}

impl Sizes {
    /// Reads the `SLUICE_CHAOS_*` variables.
    pub fn from_env() -> Sizes {
        let changes = env_parse("SLUICE_CHAOS_CHANGES").unwrap_or(20_000);
        let per_kind = env_parse("SLUICE_CHAOS_FAULTS_PER_KIND").unwrap_or(3);
        let seed = env_parse("SLUICE_CHAOS_SEED").unwrap_or_else(rand::random);
        let on_cluster = cluster::enabled();
        let target = if on_cluster {
            "the three-node cluster (SLUICE_CHAOS_CLUSTER=1)"
        } else {
            "the single broker (SLUICE_CHAOS_CLUSTER=1 selects the cluster)"
        };
        let kinds = match std::env::var("SLUICE_CHAOS_KINDS") {
            Ok(list) if !list.trim().is_empty() => list
                .split(',')
                .map(|item| {
                    let (name, count) = match item.trim().split_once(':') {
                        Some((n, c)) => (
                            n,
                            c.parse().unwrap_or_else(|_| {
                                panic!("SLUICE_CHAOS_KINDS: {item:?}: count is not a number")
                            }),
                        ),
                        None => (item.trim(), per_kind),
                    };
                    let kind = faults::Kind::parse(name).unwrap_or_else(|| {
                        panic!(
                            "SLUICE_CHAOS_KINDS: unknown fault kind {name:?}; known: {}",
                            faults::Kind::ALL.map(|k| k.name()).join(", ")
                        )
                    });
                    assert!(
                        count == 0 || kind.available(on_cluster),
                        "SLUICE_CHAOS_KINDS: {name} cannot run against {target}"
                    );
                    (kind, count)
                })
                .collect(),
            _ => faults::Kind::ALL
                .iter()
                .filter(|k| k.available(on_cluster))
                .map(|k| (*k, per_kind))
                .collect(),
        };
        Sizes {
            changes,
            faults_per_kind: per_kind,
            seed,
            kinds,
            cluster: on_cluster,
            rate: env_parse("SLUICE_CHAOS_RATE"),
            out: std::env::var_os("SLUICE_CHAOS_OUT").map(PathBuf::from),
            lanes: match env_parse::<usize>("SLUICE_CHAOS_LANES").unwrap_or(1) {
                n @ (1 | 2) => n,
                n => panic!("SLUICE_CHAOS_LANES={n}: give 1 or 2"),
            },
            members: match env_parse::<usize>("SLUICE_CHAOS_MEMBERS").unwrap_or(1) {
                0 => panic!("SLUICE_CHAOS_MEMBERS=0: give 1 (one process) or more"),
                n => n,
            },
        }
    }
}

/// The test bed's `scripts/services` that runs the services: `SLUICE_CHAOS_SERVICES`, else
/// the one of this checkout (in CI, the checkout that started them).
pub fn services_script() -> PathBuf {
    std::env::var_os("SLUICE_CHAOS_SERVICES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/services"))
}

/// Refuses a `scripts/services` that cannot stop and start one service: an older one takes
/// `stop` for `down` and would stop the whole test bed.
pub fn check_services_script() -> Result<(), String> {
    let script = services_script();
    let out = Command::new(&script)
        .arg("help")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {} help: {e}", script.display()))?;
    let usage = String::from_utf8_lossy(&out.stdout);
    let single = |verb: &str| {
        usage.lines().any(|l| {
            l.trim_start()
                .starts_with(&format!("scripts/services {verb} NAME"))
        })
    };
    if single("stop") && single("start") {
        Ok(())
    } else {
        Err(format!(
            "{} has no `stop NAME` / `start NAME` (its usage does not list them): it would stop \
             every service; point SLUICE_CHAOS_SERVICES at a scripts/services that has them, \
             or leave kafka_restart and db_restart out of SLUICE_CHAOS_KINDS",
            script.display()
        ))
    }
}

/// Refuses to run against the cluster unless the test bed's `scripts/services` knows its
/// nodes (to kill and start them) and all three brokers are registered.
pub fn check_cluster() -> Result<(), String> {
    check_services_script()?;
    let script = services_script();
    let out = Command::new(&script)
        .arg("help")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {} help: {e}", script.display()))?;
    if !String::from_utf8_lossy(&out.stdout).contains(cluster::NODES[0]) {
        return Err(format!(
            "{} does not know the Kafka cluster's nodes ({}): point SLUICE_CHAOS_SERVICES at \
             a scripts/services that has them",
            script.display(),
            cluster::NODES.join(", ")
        ));
    }
    let bootstrap = cluster::bootstrap();
    match cluster::brokers(&bootstrap) {
        Ok(ids) if ids == [1, 2, 3] => Ok(()),
        found => Err(format!(
            "the Kafka cluster at {bootstrap} is not up with brokers 1, 2 and 3 ({found:?}): \
             start it with `{} up kafka-cluster`",
            script.display()
        )),
    }
}

/// The service name of a flavour's scratch instance.
pub fn scratch_service(flavor: Flavor) -> &'static str {
    if flavor.mysql {
        "mysql-scratch"
    } else {
        "mariadb-scratch"
    }
}

/// Runs `scripts/services ACTION NAME` with a deadline; its output, or an error naming it.
pub fn services(action: &str, name: &str, timeout: Duration) -> Result<String, String> {
    let script = services_script();
    let out = tempfile::NamedTempFile::new().expect("tempfile");
    let mut child = Command::new(&script)
        .args([action, name])
        .stdin(Stdio::null())
        .stdout(Stdio::from(out.reopen().expect("reopen")))
        .stderr(Stdio::from(out.reopen().expect("reopen")))
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Ok(Some(st)) = child.try_wait() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "`{} {action} {name}` did not finish within {timeout:?}: {}",
                script.display(),
                std::fs::read_to_string(out.path()).unwrap_or_default()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let text = std::fs::read_to_string(out.path()).unwrap_or_default();
    if status.success() {
        Ok(text)
    } else {
        Err(format!(
            "`{} {action} {name}` failed ({status}): {text}",
            script.display()
        ))
    }
}

/// Restarts a service this guard stopped if the test ends (or panics) before it did.
pub struct ServiceGuard {
    name: &'static str,
    stopped: bool,
}

impl ServiceGuard {
    /// A guard for `name` (nothing stopped yet).
    pub fn new(name: &'static str) -> ServiceGuard {
        ServiceGuard {
            name,
            stopped: false,
        }
    }

    /// Stops the service.
    pub fn stop(&mut self) -> Result<(), String> {
        check_services_script()?;
        self.stopped = true;
        services("stop", self.name, Duration::from_secs(120)).map(|_| ())
    }

    /// SIGKILLs the service (a crash).
    pub fn kill(&mut self) -> Result<(), String> {
        check_services_script()?;
        self.stopped = true;
        services("kill", self.name, Duration::from_secs(60)).map(|_| ())
    }

    /// Starts it again.
    pub fn start(&mut self) -> Result<(), String> {
        let r = services("start", self.name, Duration::from_secs(300)).map(|_| ());
        if r.is_ok() {
            self.stopped = false;
        }
        r
    }
}

impl Drop for ServiceGuard {
    fn drop(&mut self) {
        if self.stopped {
            eprintln!(
                "chaos: starting {} again (the test ended while it was stopped)",
                self.name
            );
            if let Err(e) = services("start", self.name, Duration::from_secs(300)) {
                eprintln!("chaos: {e}");
            }
        }
    }
}

/// `GET /status` of sluice's API on `port`, or None (not answering within 1 s).
pub fn status(port: u16) -> Option<serde_json::Value> {
    get_json(port, "/status")
}

/// `GET <path>` of sluice's API on `port`: the JSON of a 200 answer, or None (another
/// answer, or none within 1 s).
pub fn get_json(port: u16, path: &str) -> Option<serde_json::Value> {
    let addr = ([127, 0, 0, 1], port).into();
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
    s.set_write_timeout(Some(Duration::from_secs(1))).ok()?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
        .ok()?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf);
    let (head, body) = text.split_once("\r\n\r\n")?;
    if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
        return None;
    }
    serde_json::from_str(body).ok()
}

/// The pipeline configuration: the source through the database proxy (plaintext, so the
/// proxy sees the protocol), Kafka through the Kafka proxy, a 5 s transaction timeout; its
/// API on `api_port` (None: a pipeline file of a process file, which has the `[api]`).
pub fn config_text(
    name: &str,
    db: &str,
    db_port: u16,
    bootstrap: &str,
    api_port: Option<u16>,
    server_id: u32,
) -> String {
    let api = api_port
        .map(|p| format!("[api]\nlisten = \"127.0.0.1:{p}\"\n\n"))
        .unwrap_or_default();
    format!(
        r#"name = "{name}"

[source]
url = "mysql://sluice:sluice@127.0.0.1:{db_port}"
server_id = {server_id}
include = ["{db}\\..*"]
start = "latest"
heartbeat_ms = 1000
connect_timeout_ms = 5000
reconnect_backoff_max_ms = 5000
ssl_mode = "disabled"
# Through the plaintext proxy MySQL's caching_sha2_password needs the server's RSA key
# after a restart empties its cache.
allow_public_key_retrieval = true

[kafka]
bootstrap_servers = "{bootstrap}"
offsets_topic = "{name}.offsets"
transaction_timeout_ms = {TXN_TIMEOUT_MS}
partitions = 3

[commit]
max_ms = 50
idle_offset_ms = 500

{api}[[route]]
match = "{db}\\.(.*)"
topic = "{db}.$1"
format = "json"
"#
    )
}

/// Runs the independent checker against `bootstrap`; (exit code, summary JSON, stderr).
///
/// A run that ends without a summary gave no verdict (the other server's lane may be
/// restarting the shared broker just then): it is run again, up to three times, 15 s apart.
/// A run with a summary is the verdict, whatever it says.
pub fn run_checker(
    bootstrap: &str,
    topics: &[(&str, String)],
    expected: &Path,
    state: &Path,
    timeout: Duration,
) -> (i32, Option<serde_json::Value>, String) {
    let mut earlier = String::new();
    for attempt in 1..=3 {
        let (code, summary, stderr) = check_once(bootstrap, topics, expected, state, timeout);
        if summary.is_some() || code == 0 || attempt == 3 {
            return (code, summary, format!("{earlier}{stderr}"));
        }
        let tail: String = stderr.lines().rev().take(5).collect::<Vec<_>>().join("\n");
        earlier.push_str(&format!(
            "(checker run {attempt} ended without a verdict, exit {code}; run again in 15 s; \
             its last lines:\n{tail})\n"
        ));
        std::thread::sleep(Duration::from_secs(15));
    }
    unreachable!("the third run returns")
}

fn check_once(
    bootstrap: &str,
    topics: &[(&str, String)],
    expected: &Path,
    state: &Path,
    timeout: Duration,
) -> (i32, Option<serde_json::Value>, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/lib/chaos-check");
    let mut cmd = Command::new(&script);
    cmd.args(["--bootstrap", bootstrap]);
    for (table, topic) in topics {
        cmd.args(["--topic", &format!("{table}={topic}")]);
    }
    cmd.arg("--expected")
        .arg(expected)
        .arg("--state")
        .arg(state);
    let out = tempfile::NamedTempFile::new().expect("tempfile");
    let err = tempfile::NamedTempFile::new().expect("tempfile");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::from(out.reopen().expect("reopen")))
        .stderr(Stdio::from(err.reopen().expect("reopen")))
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Ok(Some(st)) = child.try_wait() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "chaos-check did not finish within {timeout:?}; stderr:\n{}",
                std::fs::read_to_string(err.path()).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let stdout = std::fs::read_to_string(out.path()).unwrap_or_default();
    let stderr = std::fs::read_to_string(err.path()).unwrap_or_default();
    let summary = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l.trim()).ok());
    (status.code().unwrap_or(-1), summary, stderr)
}
