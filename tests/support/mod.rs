//! Helpers for integration tests against the real services started by `scripts/services`:
//! MariaDB on 127.0.0.1:3306 and MySQL 9.7 on 127.0.0.1:3307 (scratch instances on 3316 / 3317,
//! GTID replicas on 3326 / 3327), MariaDB 11.8 on 127.0.0.1:3308 (no scratch instance or
//! replica), Kafka on 127.0.0.1:9092, Kafka Connect on 127.0.0.1:8083.
//!
//! Each test works in its own database, pipeline name, offsets topic and topic prefix, so tests
//! run in parallel without seeing each other's data.
#![allow(dead_code)]

pub mod connect;
pub mod crash;
pub mod forward;
pub mod kafka_proxy;
pub mod matrix;
pub mod processes;
pub mod proxy;
pub mod rows;

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mysql_async::prelude::*;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Headers, Message};
use rdkafka::TopicPartitionList;

/// A database flavour under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flavor {
    /// Name shown in failures (and, but for `mariadb11`, sluice's `source.connector`).
    pub name: &'static str,
    /// Port of the default instance.
    pub port: u16,
    /// Port of the instance for tests that change global settings.
    pub scratch_port: u16,
    /// Port of a GTID replica of the default instance.
    pub replica_port: u16,
    /// MySQL (true) or MariaDB (false).
    pub mysql: bool,
    /// MariaDB 11.8 LTS (the 11.x binlog: events inside a transaction with `end_log_pos` 0,
    /// UCA-14 collation ids above 255, TIMESTAMP up to 2106, VECTOR, two-phase ALTER).
    pub mariadb11: bool,
}

/// MariaDB (Debian packages) on 3306, scratch 3316, replica 3326.
pub const MARIADB: Flavor = Flavor {
    name: "mariadb",
    port: 3306,
    scratch_port: 3316,
    replica_port: 3326,
    mysql: false,
    mariadb11: false,
};

/// MariaDB 11.8 LTS (Debian trixie packages, private root) on 3308, started with
/// `binlog_alter_two_phase=ON`. It has no scratch instance or replica: the suites that run on
/// it (`per_flavor!(all: ...)`) change no globals and do no failover; the ports below are
/// where they would be, and nothing listens there.
pub const MARIADB11: Flavor = Flavor {
    name: "mariadb11",
    port: 3308,
    scratch_port: 3318,
    replica_port: 3328,
    mysql: false,
    mariadb11: true,
};

/// MySQL 9.7 (Debian sid packages, private root) on 3307, scratch 3317, replica 3327.
pub const MYSQL: Flavor = Flavor {
    name: "mysql",
    port: 3307,
    scratch_port: 3317,
    replica_port: 3327,
    mysql: true,
    mariadb11: false,
};

/// The flavours every database test runs against (MariaDB 11.8 only runs the suites that opt
/// in with `per_flavor!(all: ...)`). `SLUICE_TEST_FLAVORS=mysql` (a comma list) narrows the
/// set while developing; CI runs all.
pub fn flavors() -> Vec<Flavor> {
    [MARIADB, MYSQL]
        .into_iter()
        .filter(|f| f.enabled())
        .collect()
}

impl Flavor {
    /// The same flavour on its scratch instance (for tests that change global settings).
    pub const fn scratch(self) -> Flavor {
        Flavor {
            port: self.scratch_port,
            ..self
        }
    }

    /// Whether `SLUICE_TEST_FLAVORS` (default: all) selects this flavour.
    pub fn enabled(&self) -> bool {
        match std::env::var("SLUICE_TEST_FLAVORS") {
            Ok(list) if !list.trim().is_empty() => list.split(',').any(|f| f.trim() == self.name),
            _ => true,
        }
    }

    /// The server's executed GTID state, in sluice's `gtid:` syntax (without the prefix).
    pub async fn gtid_executed(&self, c: &mut mysql_async::Conn) -> String {
        let sql = if self.mysql {
            "SELECT @@GLOBAL.gtid_executed"
        } else {
            "SELECT @@GLOBAL.gtid_binlog_pos"
        };
        let v: Option<String> = c
            .query_first(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        v.unwrap_or_default().replace('\n', "")
    }

    /// Key of the GTID state in `sluice offsets show` output.
    pub fn gtid_key(&self) -> &'static str {
        if self.mysql {
            "gtid_set"
        } else {
            "gtid_list"
        }
    }

    /// Whether GTID state `a` is contained in `b` (both in the flavour's syntax).
    pub fn gtid_contains(&self, b: &str, a: &str) -> bool {
        if self.mysql {
            let a: sluice::position::GtidSet = a.parse().expect("GTID set");
            b.parse::<sluice::position::GtidSet>()
                .is_ok_and(|b| a.is_subset(&b))
        } else {
            let a: sluice::position::GtidList = a.parse().expect("GTID list");
            b.parse::<sluice::position::GtidList>()
                .is_ok_and(|b| a.is_subset(&b))
        }
    }

    /// `INSERT INTO table SELECT n, pad` for n in lo..=hi, in the flavour's SQL.
    pub fn insert_seq(&self, table: &str, lo: usize, hi: usize, pad: &str) -> String {
        if self.mysql {
            // MySQL has no sequence engine: a multi-row VALUES list.
            let vals: Vec<String> = (lo..=hi).map(|i| format!("({i},'{pad}')")).collect();
            format!("INSERT INTO {table} VALUES {}", vals.join(","))
        } else {
            format!("INSERT INTO {table} SELECT seq, '{pad}' FROM seq_{lo}_to_{hi}")
        }
    }
}

/// Generates one `#[tokio::test]` per flavour for each `async fn name(flavor: Flavor)` listed,
/// in modules `mariadb` and `mysql`, so a failure names the flavour (`mysql::name`).
/// `per_flavor!(all: ...)` adds module `mariadb11` (MariaDB 11.8): the suites whose code paths
/// 11.x's binlog changed opt in; the rest stay on two servers to keep CI's time.
#[macro_export]
macro_rules! per_flavor {
    (all: $($test:ident),* $(,)?) => {
        $crate::per_flavor!($($test),*);
        $crate::per_flavor!(@module mariadb11, MARIADB11, $($test),*);
    };
    (@module $module:ident, $flavor:ident, $($test:ident),*) => {
        mod $module {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    let f = $crate::support::$flavor;
                    if !f.enabled() {
                        eprintln!("{} not selected by SLUICE_TEST_FLAVORS: skipped", f.name);
                        return;
                    }
                    super::$test(f).await
                }
            )*
        }
    };
    ($($test:ident),* $(,)?) => {
        $crate::per_flavor!(@module mariadb, MARIADB, $($test),*);
        $crate::per_flavor!(@module mysql, MYSQL, $($test),*);
    };
}

/// Kafka bootstrap servers of the test bed.
pub const KAFKA: &str = "127.0.0.1:9092";

/// A short random suffix for names.
pub fn unique(prefix: &str) -> String {
    let n: u64 = rand::random();
    format!("{prefix}_{:x}", n & 0xffff_ffff)
}

/// Creates `name` on the test bed's Kafka with `partitions` partitions, one replica and the
/// topic settings `config`; panics when it cannot.
pub fn create_topic(name: &str, partitions: i32, config: &[(&str, &str)]) {
    use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
    use rdkafka::client::DefaultClientContext;
    let admin: AdminClient<DefaultClientContext> = rdkafka::config::ClientConfig::new()
        .set("bootstrap.servers", KAFKA)
        .create()
        .expect("admin");
    let mut topic = NewTopic::new(name, partitions, TopicReplication::Fixed(1));
    for (k, v) in config {
        topic = topic.set(k, v);
    }
    let res = futures_executor::block_on(admin.create_topics([&topic], &AdminOptions::new()))
        .expect("create topics");
    for r in res {
        r.unwrap_or_else(|(t, e)| panic!("create topic {t}: {e}"));
    }
}

/// A free TCP port on 127.0.0.1 that something will listen on later, or again after a restart
/// (sluice's API across SIGKILLs, a server that comes up late). Chosen below the kernel's
/// ephemeral range: a port from that range, once released, can be taken meanwhile as the local
/// port of any outgoing connection (the test's own probes of that very port included, which on
/// loopback can connect to themselves), and the later bind then fails with "address in use".
pub fn reserved_port() -> u16 {
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    // The test bed's services listen below 20000.
    let (lo, hi) = (20000u16, ephemeral_low.max(20001));
    for _ in 0..1000 {
        let port = lo + rand::random::<u16>() % (hi - lo);
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in {lo}..{hi}, below the ephemeral range");
}

/// Workload size from the environment (small in CI, large in benchmarks).
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Root connection to the flavour's server.
pub async fn root(port: u16) -> mysql_async::Conn {
    let opts = mysql_async::OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(port)
        .user(Some("root"))
        .prefer_socket(false);
    mysql_async::Conn::new(opts).await.unwrap_or_else(|e| {
        panic!("connect root@127.0.0.1:{port}: {e} (run ./scripts/services up)")
    })
}

/// Runs statements on a root connection.
pub async fn exec(conn: &mut mysql_async::Conn, sql: &[&str]) {
    for s in sql {
        conn.query_drop(*s)
            .await
            .unwrap_or_else(|e| panic!("{s}: {e}"));
    }
}

/// A test pipeline: its name, database, topics and config file.
pub struct Pipeline {
    /// Flavour under test.
    pub flavor: Flavor,
    /// Pipeline name.
    pub name: String,
    /// Source database the test writes to.
    pub db: String,
    /// Offsets topic.
    pub offsets_topic: String,
    /// Config file path.
    pub config: PathBuf,
    _dir: tempfile::TempDir,
}

impl Pipeline {
    /// A pipeline reading `db` on the flavour's server, with extra TOML appended.
    pub fn new(flavor: Flavor, tag: &str, extra: &str) -> Pipeline {
        Pipeline::named(flavor, &unique(&format!("t_{}_{tag}", flavor.name)), extra)
    }

    /// [`Pipeline::new`] with the pipeline (and database) name `name`.
    pub fn named(flavor: Flavor, name: &str, extra: &str) -> Pipeline {
        let name = name.to_string();
        let db = name.clone();
        let offsets_topic = format!("{name}.offsets");
        let dir = tempfile::tempdir().expect("tempdir");
        let config = dir.path().join("sluice.toml");
        let text = format!(
            r#"name = "{name}"

[source]
url = "mysql://sluice:sluice@127.0.0.1:{port}"
server_id = {sid}
include = ["{db}\\..*"]
start = "latest"
heartbeat_ms = 1000

[kafka]
bootstrap_servers = "{KAFKA}"
offsets_topic = "{offsets_topic}"

[commit]
max_ms = 50
idle_offset_ms = 500

[api]
listen = "127.0.0.1:0"

[[route]]
match = "{db}\\.(.*)"
topic = "{db}.$1"
format = "json"
{extra}
"#,
            port = flavor.port,
            sid = 10000 + (rand::random::<u32>() % 50000),
        );
        std::fs::write(&config, text).expect("write config");
        Pipeline {
            flavor,
            name,
            db,
            offsets_topic,
            config,
            _dir: dir,
        }
    }

    /// A pipeline whose route writes Avro, registering in the test bed's registry; `route_extra`
    /// is appended to the route (e.g. `on_schema_change = "dlq"`).
    pub fn new_avro(flavor: Flavor, tag: &str, route_extra: &str) -> Pipeline {
        let p = Pipeline::new(
            flavor,
            tag,
            &format!(
                "{route_extra}\n\n[schema_registry]\nurl = \"{}\"\n",
                registry_url()
            ),
        );
        p.edit_config("format = \"json\"", "format = \"avro\"");
        p
    }

    /// Replaces `from` (which must occur) with `to` in the config file.
    pub fn edit_config(&self, from: &str, to: &str) {
        let text = std::fs::read_to_string(&self.config).expect("config");
        assert!(text.contains(from), "config has no {from:?}:\n{text}");
        std::fs::write(&self.config, text.replace(from, to)).expect("config");
    }

    /// Starts a fault proxy in front of the pipeline's database server and sends the
    /// pipeline's source connection through it ([`Pipeline::through_proxy`]).
    pub fn source_proxy(&self) -> proxy::Proxy {
        let upstream = format!("127.0.0.1:{}", self.flavor.port).parse().unwrap();
        let proxy = proxy::Proxy::start(upstream);
        self.through_proxy(proxy.port());
        proxy
    }

    /// Sends the pipeline's source connection through a proxy listening on `proxy_port`, in
    /// plaintext (a proxy that throttles or corrupts bytes must see them): MySQL's `sluice`
    /// user, MariaDB's `sluice_plain` (its `sluice` user requires TLS).
    pub fn through_proxy(&self, proxy_port: u16) {
        let user = if self.flavor.mysql {
            "sluice"
        } else {
            "sluice_plain"
        };
        self.edit_config(
            &format!("mysql://sluice:sluice@127.0.0.1:{}\"", self.flavor.port),
            &format!("mysql://{user}:sluice@127.0.0.1:{proxy_port}\""),
        );
        // MySQL's `sluice` logs in with caching_sha2_password: over plaintext, a cold cache
        // needs the server's RSA key, which must be allowed.
        self.edit_config(
            "heartbeat_ms = 1000",
            "heartbeat_ms = 1000\nssl_mode = \"disabled\"\nallow_public_key_retrieval = true",
        );
    }

    /// Creates the pipeline's database and `tables` (`CREATE TABLE` bodies after the name,
    /// e.g. `("t", "(id INT PRIMARY KEY)")`), starts sluice and waits until it streams.
    pub async fn start_with(&self, tables: &[(&str, &str)]) -> (mysql_async::Conn, KillOnDrop) {
        let mut c = root(self.flavor.port).await;
        exec(&mut c, &[&format!("CREATE DATABASE {}", self.db)]).await;
        for (t, body) in tables {
            exec(&mut c, &[&format!("CREATE TABLE {}.{t} {body}", self.db)]).await;
        }
        let child = self.spawn();
        self.wait_started(Duration::from_secs(60));
        (c, child)
    }

    /// Topic of a table.
    pub fn topic(&self, table: &str) -> String {
        format!("{}.{table}", self.db)
    }

    /// Starts `sluice run` on this pipeline; killed when the returned guard is dropped.
    pub fn spawn(&self) -> KillOnDrop {
        spawn_run(&self.config, &self._dir.path().join("sluice.log"))
    }

    /// The log of all spawned instances.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("sluice.log")).unwrap_or_default()
    }

    /// The address the API of the last spawned instance listens on (the config's
    /// `api.listen` is `127.0.0.1:0`, any free port: the `api listening addr=...` log line
    /// names it); waits for that line up to `timeout`. A test that needs a fixed port edits
    /// `listen = "127.0.0.1:0"` in the config.
    pub fn api_addr(&self, timeout: Duration) -> std::net::SocketAddr {
        let started = Instant::now();
        loop {
            let log = self.log();
            let addr = log
                .lines()
                .rev()
                .filter(|l| l.contains("api listening"))
                .find_map(|l| l.split_whitespace().find_map(|w| w.strip_prefix("addr=")))
                .and_then(|a| a.parse().ok());
            if let Some(addr) = addr {
                return addr;
            }
            assert!(
                started.elapsed() < timeout,
                "[{}] no `api listening` line within {timeout:?}; log:\n{log}",
                self.flavor.name
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Runs a sluice subcommand to completion (at most 120 s), returning (exit code, stdout +
    /// stderr).
    pub fn command(&self, args: &[&str]) -> (i32, String) {
        self.command_within(args, Duration::from_secs(120))
    }

    /// Runs a sluice subcommand, which must exit within `timeout` (else it is killed and the
    /// test fails with its output), returning (exit code, stdout + stderr).
    pub fn command_within(&self, args: &[&str], timeout: Duration) -> (i32, String) {
        let mut cmd = sluice_command();
        cmd.args(args).arg("--config").arg(&self.config);
        let (status, out, err) = run_within(cmd, timeout);
        let text = format!("{out}{err}");
        match status {
            Some(code) => (code, text),
            None => panic!(
                "[{}] `sluice {}` did not exit within {timeout:?}; output:\n{text}",
                self.flavor.name,
                args.join(" ")
            ),
        }
    }

    /// Waits until the committed offset record shows the snapshot done (no table left to
    /// read): a workload started after it is streamed, never read again by a snapshot chunk.
    pub fn wait_snapshot_committed(&self, timeout: Duration) {
        let started = Instant::now();
        loop {
            let (code, out) = self.command(&["offsets", "show"]);
            // The record's JSON, without the progress summary printed after it.
            let json = out.find("\n}").map_or(out.as_str(), |end| &out[..end + 2]);
            let done = code == 0
                && serde_json::from_str::<serde_json::Value>(json).is_ok_and(|v| {
                    v.get("position").is_some()
                        && match v.get("snapshot") {
                            None | Some(serde_json::Value::Null) => true,
                            Some(s) => s["tables"].as_array().is_some_and(|t| t.is_empty()),
                        }
                });
            if done {
                return;
            }
            assert!(
                started.elapsed() < timeout,
                "[{}] the snapshot was not committed as done within {timeout:?}; offsets show: \
                 {out}; log:\n{}",
                self.flavor.name,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Waits until the pipeline has a committed offset (it is streaming).
    pub fn wait_started(&self, timeout: Duration) {
        let started = Instant::now();
        loop {
            let (code, out) = self.command(&["offsets", "show"]);
            if code == 0 && out.contains("\"position\"") {
                return;
            }
            assert!(
                started.elapsed() < timeout,
                "[{}] pipeline did not commit an offset within {timeout:?}; log:\n{}",
                self.flavor.name,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}

/// A spawned child process (`sluice run`) that is killed and reaped when dropped, so a test
/// that fails (panics) half-way never leaves it running. Derefs to the [`Child`].
#[derive(Debug)]
pub struct KillOnDrop(pub Child);

impl Deref for KillOnDrop {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl DerefMut for KillOnDrop {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

/// Starts `sluice run --config <config>`, its log appended to `log`; killed when the returned
/// guard is dropped. `SLUICE_TEST_LOG` (e.g. `info,librdkafka=debug` with
/// `SLUICE_KAFKA_PROPERTY_DEBUG=msg,eos`) to look closer at a failing test.
pub fn spawn_run(config: &Path, log: &Path) -> KillOnDrop {
    let child = sluice_command()
        .args(["run", "--config"])
        .arg(config)
        .env(
            "SLUICE_LOG",
            std::env::var("SLUICE_TEST_LOG").unwrap_or_else(|_| "info".into()),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::from(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
                .expect("log file"),
        ))
        .spawn()
        .expect("spawn sluice");
    KillOnDrop(child)
}

/// Runs `cmd` with its output captured; kills it once `timeout` passes. Returns its exit code
/// (`None`: killed at the timeout; -1: ended by a signal), stdout and stderr.
pub fn run_within(mut cmd: Command, timeout: Duration) -> (Option<i32>, String, String) {
    let mut child = KillOnDrop(
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run sluice"),
    );
    let read = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = read(child.stdout.take().map(|r| Box::new(r) as _));
    let err = read(child.stderr.take().map(|r| Box::new(r) as _));
    let started = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            break Some(st.code().unwrap_or(-1));
        }
        if started.elapsed() > timeout {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = out.join().unwrap_or_default();
    let err = err.join().unwrap_or_default();
    (status, out, err)
}

/// The `sluice` binary under test, with [`die_with_test`]'s safety net.
pub fn sluice_command() -> Command {
    die_with_test(Command::new(env!("CARGO_BIN_EXE_sluice")))
}

/// The safety net under [`KillOnDrop`]: a test binary killed outright (SIGKILL, a timeout)
/// runs no destructors, so the child asks the kernel for SIGKILL when its parent goes
/// (`PR_SET_PDEATHSIG`). Linux ties that to the spawning *thread*: spawn from the test's own
/// thread or a runtime worker (both live as long as the test), never from a short-lived
/// thread such as a `spawn_blocking` closure.
pub fn die_with_test(mut cmd: Command) -> Command {
    let parent = std::process::id();
    // SAFETY: the closure runs in the forked child before exec and only makes
    // async-signal-safe system calls (prctl, getppid, raise).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent died between fork and prctl: nobody would reap us.
            if libc::getppid() as u32 != parent {
                libc::raise(libc::SIGKILL);
            }
            Ok(())
        });
    }
    cmd
}

/// Polls `probe` every 100 ms until it yields a value or `timeout` passes; panics then with
/// what was awaited (`what`) and the probe's last word (`Err(state)`).
pub fn wait_for<T>(
    what: &str,
    timeout: Duration,
    mut probe: impl FnMut() -> Result<T, String>,
) -> T {
    let started = Instant::now();
    loop {
        let last = match probe() {
            Ok(v) => return v,
            Err(state) => state,
        };
        assert!(
            started.elapsed() < timeout,
            "waited {timeout:?} for {what}; last state: {last}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Asserts that the pipeline never committed an offset (nothing was written).
pub fn assert_nothing_written(p: &Pipeline) {
    let (_, out) = p.command(&["offsets", "show"]);
    assert!(
        !out.contains("\"position\""),
        "[{}] no offset may be committed: {out}",
        p.flavor.name
    );
}

/// Waits for a process to exit by itself (it must within `timeout`).
pub fn wait_exit(child: &mut Child, timeout: Duration) -> std::process::ExitStatus {
    wait_exit_or(child, timeout, String::new)
}

/// [`wait_exit`], with `what()` (e.g. the pipeline's log) in the panic when it does not stop.
pub fn wait_exit_or(
    child: &mut Child,
    timeout: Duration,
    what: impl Fn() -> String,
) -> std::process::ExitStatus {
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(Some(st)) = child.try_wait() {
            return st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("sluice did not stop within {timeout:?}\n{}", what());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Reads `topic` with Confluent's own Python client (`scripts/lib/avro-consume`: Avro decoded
/// with the registry's writer schemas), expecting `expect` records; one JSON document
/// `{partition, offset, key, value}` per record.
pub fn avro_consume(topic: &str, expect: usize) -> Vec<serde_json::Value> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/lib/avro-consume");
    let out = die_with_test(Command::new(script))
        .args([
            "--bootstrap",
            KAFKA,
            "--registry",
            &registry_url(),
            "--topic",
            topic,
        ])
        .args(["--expect", &expect.to_string(), "--max-idle-ms", "10000"])
        .output()
        .expect("run avro-consume");
    assert!(
        out.status.success(),
        "avro-consume {topic}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("avro-consume line"))
        .collect()
}

/// Sends SIGTERM and waits for the exit status.
pub fn terminate(child: &mut Child) -> std::process::ExitStatus {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(Some(st)) = child.try_wait() {
            return st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return child.wait().expect("wait");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One consumed record.
#[derive(Debug, Clone)]
pub struct Rec {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Offset.
    pub offset: i64,
    /// Key as JSON (None for a null key).
    pub key: Option<serde_json::Value>,
    /// Value as JSON (None for a tombstone).
    pub value: Option<serde_json::Value>,
}

/// Schema registry of the test bed (Confluent-compatible API).
pub fn registry_url() -> String {
    std::env::var("SLUICE_TEST_REGISTRY_URL")
        .unwrap_or_else(|_| "http://127.0.0.1:8081/apis/ccompat/v7".to_string())
}

/// One consumed record, undecoded.
#[derive(Debug, Clone)]
pub struct RawRec {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Offset.
    pub offset: i64,
    /// Key bytes (None for a null key).
    pub key: Option<Vec<u8>>,
    /// Value bytes (None for a tombstone).
    pub value: Option<Vec<u8>>,
    /// Headers (name, value; a null value as empty), in record order.
    pub headers: Vec<(String, Vec<u8>)>,
}

/// Reads every record of `topics` with `isolation.level`, until `want` records were seen
/// (then waits `settle` more to catch extras) or `timeout` passes; with `want = usize::MAX`,
/// until nothing new came for `settle` (10 s for the first record). Keys and values must be
/// JSON.
pub fn consume(
    topics: &[String],
    isolation: &str,
    want: usize,
    settle: Duration,
    timeout: Duration,
) -> Vec<Rec> {
    consume_raw(topics, isolation, want, settle, timeout)
        .iter()
        .map(RawRec::json)
        .collect()
}

impl RawRec {
    /// The record with key and value parsed as JSON (they must be JSON).
    pub fn json(&self) -> Rec {
        let parse = |b: &Option<Vec<u8>>, what: &str| {
            b.as_ref().map(|b| {
                serde_json::from_slice(b).unwrap_or_else(|e| panic!("{what} is not JSON: {e}"))
            })
        };
        Rec {
            topic: self.topic.clone(),
            partition: self.partition,
            offset: self.offset,
            key: parse(&self.key, "key"),
            value: parse(&self.value, "value"),
        }
    }
}

/// Like [`consume`], without decoding.
pub fn consume_raw(
    topics: &[String],
    isolation: &str,
    want: usize,
    settle: Duration,
    timeout: Duration,
) -> Vec<RawRec> {
    consume_raw_from(KAFKA, topics, isolation, want, settle, timeout)
}

/// Like [`consume_raw`], from the Kafka at `bootstrap` (e.g. the three-node cluster). A
/// broker of several that cannot be reached is not an error: the consumer reads from the
/// others, within `timeout`.
pub fn consume_raw_from(
    bootstrap: &str,
    topics: &[String],
    isolation: &str,
    want: usize,
    settle: Duration,
    timeout: Duration,
) -> Vec<RawRec> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", unique("test_reader"))
        .set("enable.auto.commit", "false")
        .set("isolation.level", isolation)
        .set("auto.offset.reset", "earliest")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    let wait_until = Instant::now() + timeout.min(Duration::from_secs(60));
    for t in topics {
        // sluice creates topics when their first row arrives: wait for them to exist.
        loop {
            let md = consumer
                .fetch_metadata(Some(t), Duration::from_secs(10))
                .expect("metadata");
            let parts: Vec<i32> = md
                .topics()
                .iter()
                .filter(|mt| mt.error().is_none())
                .flat_map(|mt| mt.partitions().iter().map(|p| p.id()))
                .collect();
            if !parts.is_empty() {
                for p in parts {
                    tpl.add_partition_offset(t, p, rdkafka::Offset::Beginning)
                        .expect("tpl");
                }
                break;
            }
            if Instant::now() > wait_until {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    consumer.assign(&tpl).expect("assign");
    let started = Instant::now();
    let mut reached: Option<Instant> = None;
    let mut last = Instant::now();
    let mut out = Vec::new();
    loop {
        if started.elapsed() > timeout {
            break;
        }
        if let Some(at) = reached {
            if at.elapsed() > settle {
                break;
            }
        }
        // Reading everything (`want == usize::MAX`): done once nothing came for `settle`.
        let quiet = if out.is_empty() {
            settle.max(Duration::from_secs(10))
        } else {
            settle
        };
        if want == usize::MAX && last.elapsed() > quiet {
            break;
        }
        match consumer.poll(Duration::from_millis(100)) {
            None => {}
            Some(Err(e))
                if matches!(
                    e.rdkafka_error_code(),
                    Some(
                        rdkafka::error::RDKafkaErrorCode::BrokerTransportFailure
                            | rdkafka::error::RDKafkaErrorCode::AllBrokersDown
                    )
                ) => {}
            Some(Err(e)) => panic!("consume: {e}"),
            Some(Ok(m)) => {
                last = Instant::now();
                out.push(RawRec {
                    topic: m.topic().to_string(),
                    partition: m.partition(),
                    offset: m.offset(),
                    key: m.key().map(|k| k.to_vec()),
                    value: m.payload().map(|v| v.to_vec()),
                    headers: m
                        .headers()
                        .map(|h| {
                            h.iter()
                                .map(|h| (h.key.to_string(), h.value.unwrap_or_default().to_vec()))
                                .collect()
                        })
                        .unwrap_or_default(),
                });
                if out.len() >= want && reached.is_none() {
                    reached = Some(Instant::now());
                }
            }
        }
    }
    out
}

/// Groups records by topic.
pub fn by_topic(recs: &[Rec]) -> HashMap<String, Vec<Rec>> {
    let mut m: HashMap<String, Vec<Rec>> = HashMap::new();
    for r in recs {
        m.entry(r.topic.clone()).or_default().push(r.clone());
    }
    m
}
