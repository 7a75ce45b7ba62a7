//! The sluice side of a chaos run: one supervised process (the default), or, with
//! `SLUICE_CHAOS_MEMBERS=N` (N ≥ 2), N instances in sluice's own cluster mode.
//!
//! In cluster mode every member is started (and restarted, by a [`Supervisor`] of its own)
//! with a process file of its own: the one chaos pipeline file (`pipelines/*.toml`, the
//! same for all), its API on a port of its own, and `[cluster]` with the run's group and a
//! short session timeout ([`SESSION_TIMEOUT_MS`]), so a killed or stalled owner's pipeline
//! moves within seconds. All members reach the database and Kafka through the same links
//! (the fault proxies, or the three-node cluster), so a link fault hits whichever member runs
//! the pipeline; SIGKILL and SIGSTOP hit the member that owns it ([`Members::owner`], from
//! each member's `GET /cluster`), which forces a takeover.
//!
//! With one member nothing of this applies: its pipeline file has the `[api]`, there is no
//! group and no lookup, and the run is the single-process run it always was.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::faults::Kind;
use super::get_json;
use super::supervisor::{Exit, Supervisor};

/// `cluster.session_timeout_ms` of the members: a silent owner's pipeline moves after this.
pub const SESSION_TIMEOUT_MS: u64 = 6000;
/// `cluster.heartbeat_interval_ms` of the members.
pub const HEARTBEAT_MS: u64 = 2000;

/// Who owns the pipeline: a member, and which of its starts (a killed member's restart
/// is another instance).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    /// Index into [`Members::list`].
    pub member: usize,
    /// Its starts so far when seen owning it (1 for the first).
    pub start: u32,
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "member {} (start {})", self.member + 1, self.start)
    }
}

/// One sluice instance.
pub struct Member {
    /// Its supervisor (restarts it whenever it exits).
    pub sluice: Supervisor,
    /// Port of its API.
    pub api_port: u16,
    /// Its log (every start of it).
    pub log: PathBuf,
}

/// The sluice instances of a run.
pub struct Members {
    /// The instances, member 1 first.
    pub list: Vec<Member>,
    /// The pipeline's name.
    pub pipeline: String,
    /// Cluster mode (two members or more).
    clustered: bool,
}

impl Members {
    /// Starts `n` instances of the pipeline `pipeline`, whose file `text` gives (with the
    /// `[api]` on the port it is passed, or without one: a pipeline file of a process file);
    /// configuration files go to `dir`, logs to `out` (`sluice.log`, or `sluice-<i>.log`
    /// per member). `group` is the cluster group (one per run).
    pub fn start(
        n: usize,
        dir: &Path,
        out: &Path,
        pipeline: &str,
        text: impl Fn(Option<u16>) -> String,
        group: &str,
    ) -> Members {
        assert!(n >= 1, "at least one sluice instance");
        let list = if n == 1 {
            let api_port = crate::support::reserved_port();
            let config = dir.join("sluice.toml");
            std::fs::write(&config, text(Some(api_port))).expect("write config");
            let log = out.join("sluice.log");
            vec![Member {
                sluice: Supervisor::start(&config, &log),
                api_port,
                log,
            }]
        } else {
            std::fs::create_dir_all(dir.join("pipelines")).expect("pipelines folder");
            std::fs::write(
                dir.join("pipelines").join(format!("{pipeline}.toml")),
                text(None),
            )
            .expect("write the pipeline file");
            (1..=n)
                .map(|i| {
                    let api_port = crate::support::reserved_port();
                    let config = dir.join(format!("member-{i}.toml"));
                    std::fs::write(&config, process_text(api_port, group))
                        .expect("write a process file");
                    let log = out.join(format!("sluice-{i}.log"));
                    Member {
                        sluice: Supervisor::start(&config, &log),
                        api_port,
                        log,
                    }
                })
                .collect()
        };
        Members {
            list,
            pipeline: pipeline.to_string(),
            clustered: n > 1,
        }
    }

    /// How many instances.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether they run in cluster mode.
    pub fn clustered(&self) -> bool {
        self.clustered
    }

    /// Every member's API port.
    pub fn ports(&self) -> Vec<u16> {
        self.list.iter().map(|m| m.api_port).collect()
    }

    /// The member that owns the pipeline now, as the members' `GET /cluster` say; one
    /// claiming it that runs it (streaming or snapshotting) first. None while no member
    /// claims it (a takeover under way) or none answers. With one member: that one, without
    /// asking.
    pub fn owner(&self) -> Option<Owner> {
        if !self.clustered {
            return Some(Owner {
                member: 0,
                start: self.list[0].sluice.starts(),
            });
        }
        let mut claims = Vec::new();
        for (i, m) in self.list.iter().enumerate() {
            let Some(view) = get_json(m.api_port, "/cluster") else {
                continue;
            };
            let entry = view["pipelines"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|p| p["name"].as_str() == Some(self.pipeline.as_str()));
            if let Some(p) = entry.filter(|p| p["assigned"].as_bool() == Some(true)) {
                let running = matches!(p["state"].as_str(), Some("streaming" | "snapshotting"));
                let owner = Owner {
                    member: i,
                    start: m.sluice.starts(),
                };
                claims.push((owner, running));
            }
        }
        claims
            .iter()
            .find(|(_, running)| *running)
            .or(claims.first())
            .map(|(o, _)| *o)
    }

    /// [`Members::owner`], asked again until one answers or `timeout` passed.
    pub fn wait_owner(&self, timeout: Duration) -> Option<Owner> {
        let deadline = Instant::now() + timeout;
        loop {
            let owner = self.owner();
            if owner.is_some() || Instant::now() > deadline {
                return owner;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Every exit of every member so far, with the member's index, in time order.
    pub fn exits(&self) -> Vec<(usize, Exit)> {
        let mut all: Vec<(usize, Exit)> = self
            .list
            .iter()
            .enumerate()
            .flat_map(|(i, m)| m.sluice.exits().into_iter().map(move |e| (i, e)))
            .collect();
        all.sort_by_key(|(_, e)| e.at);
        all
    }

    /// How many exits each member had so far (to give to [`Members::exits_after`]).
    pub fn exit_counts(&self) -> Vec<usize> {
        self.list.iter().map(|m| m.sluice.exits().len()).collect()
    }

    /// The exits since `counts` ([`Members::exit_counts`]), with the member's index.
    pub fn exits_after(&self, counts: &[usize]) -> Vec<(usize, Exit)> {
        self.list
            .iter()
            .enumerate()
            .flat_map(|(i, m)| {
                let skip = counts.get(i).copied().unwrap_or(0);
                m.sluice.exits().into_iter().skip(skip).map(move |e| (i, e))
            })
            .collect()
    }

    /// Instances started so far (of every member).
    pub fn starts(&self) -> u32 {
        self.list.iter().map(|m| m.sluice.starts()).sum()
    }

    /// SIGTERM to every member at once, no restarts; each one's exit (SIGKILL after
    /// `timeout`). At once: stopped one after the other, each would hand the pipeline to the
    /// next just before that one stops too.
    pub fn terminate(&self, timeout: Duration) -> Vec<Option<Exit>> {
        let before: Vec<usize> = self
            .list
            .iter()
            .map(|m| m.sluice.send_terminate())
            .collect();
        self.list
            .iter()
            .zip(before)
            .map(|(m, b)| m.sluice.wait_terminated(b, timeout))
            .collect()
    }

    /// The last `n` lines of every member's log (a header per member in cluster mode).
    pub fn log_tail(&self, n: usize) -> String {
        if !self.clustered {
            return self.list[0].sluice.log_tail(n);
        }
        self.list
            .iter()
            .enumerate()
            .map(|(i, m)| format!("--- member {}:\n{}", i + 1, m.sluice.log_tail(n)))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The length of member `i`'s log now.
    pub fn log_len(&self, i: usize) -> u64 {
        std::fs::metadata(&self.list[i].log)
            .map(|m| m.len())
            .unwrap_or(0)
    }

    /// Member `i`'s log from byte `from` on.
    pub fn log_since(&self, i: usize, from: u64) -> String {
        use std::io::{Read, Seek, SeekFrom};
        let mut buf = Vec::new();
        if let Ok(mut f) = std::fs::File::open(&self.list[i].log) {
            let _ = f.seek(SeekFrom::Start(from));
            let _ = f.read_to_end(&mut buf);
        }
        String::from_utf8_lossy(&buf).into_owned()
    }
}

/// Seconds a fault of `kind` takes beyond [`Kind::expected_secs`] with `members` instances
/// (to pace the workload): in cluster mode a killed or stalled owner's pipeline moves only
/// after the session timeout, and starts on the new owner a few seconds later.
pub fn extra_secs(kind: Kind, members: usize) -> f64 {
    match kind {
        Kind::SigKill | Kind::SigStop if members > 1 => SESSION_TIMEOUT_MS as f64 / 1000.0 + 4.0,
        _ => 0.0,
    }
}

/// A member's process file: the pipeline files under `pipelines/`, the API on `api_port`,
/// the run's cluster group with a short session timeout.
pub fn process_text(api_port: u16, group: &str) -> String {
    format!(
        r#"pipelines = ["pipelines/*.toml"]

[api]
listen = "127.0.0.1:{api_port}"

[cluster]
group = "{group}"
session_timeout_ms = {SESSION_TIMEOUT_MS}
heartbeat_interval_ms = {HEARTBEAT_MS}
"#
    )
}

/// "member 2" for index 1; "-" for none.
pub fn label(i: Option<usize>) -> String {
    i.map(|i| format!("member {}", i + 1))
        .unwrap_or_else(|| "-".into())
}
