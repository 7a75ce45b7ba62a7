//! The fault kinds, how each is done to a running pipeline, and how recovery is measured:
//! from the end of the fault until sluice has committed the source position the server had
//! at that moment (`GET /status` `committed_position` contains it).
//!
//! Which kinds a run can do depends on its Kafka: the single broker has the fault proxy in
//! front of it (resets, blackholes, a held EndTxn) and can only be restarted as a whole; the
//! three-node cluster (`SLUICE_CHAOS_CLUSTER=1`) has no proxy, and its nodes are killed one
//! at a time while the other two keep serving: the transaction coordinator of sluice's
//! transactional id, or the leader of a partition sluice writes.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::Rng;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::db_proxy::DbProxy;
use super::members::{self, Members, Owner, SESSION_TIMEOUT_MS};
use super::workload::Progress;
use super::{cluster, status, ServiceGuard, TXN_TIMEOUT_MS};
use crate::support::kafka_proxy::{api, KafkaProxy};
use crate::support::Flavor;

/// A kind of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Every connection of sluice to the database closed at once (proxy).
    DbReset,
    /// The database link blackholed for 5–10 s (proxy pause, both directions).
    DbBlackhole,
    /// The database link throttled to 2–32 KiB/s in uneven small writes for 5–10 s.
    DbThrottle,
    /// Every connection of sluice to Kafka closed at once (proxy).
    KafkaReset,
    /// The Kafka link blackholed for 5–10 s.
    KafkaBlackhole,
    /// A commit's EndTxn held past `kafka.transaction_timeout_ms` (the coordinator aborts
    /// the transaction and bumps the epoch), then let through.
    EndTxnHold,
    /// SIGKILL of sluice (in cluster mode: of the member that owns the pipeline); the
    /// supervisor starts it again.
    SigKill,
    /// SIGSTOP of sluice for 2–8 s, then SIGCONT (in cluster mode: of the owner, for 2–12 s,
    /// so often past the session timeout: the pipeline moves, and the woken member learns
    /// its assignment was lost).
    SigStop,
    /// The Kafka broker stopped and started again (`scripts/services stop/start kafka`).
    KafkaRestart,
    /// The database server stopped and started again (the scratch instance).
    DbRestart,
    /// Cluster only: SIGKILL of the node that is the transaction coordinator of sluice's
    /// transactional id, at a random moment (commits run every 50 ms, so nearly always with
    /// a transaction open), started again after 2–5 s.
    CoordinatorKill,
    /// Cluster only: SIGKILL of the leader of a random partition of sluice's data topics or
    /// its offsets topic, started again after 2–5 s.
    LeaderKill,
}

impl Kind {
    /// Every kind, in report order.
    pub const ALL: [Kind; 12] = [
        Kind::DbReset,
        Kind::DbBlackhole,
        Kind::DbThrottle,
        Kind::KafkaReset,
        Kind::KafkaBlackhole,
        Kind::EndTxnHold,
        Kind::SigKill,
        Kind::SigStop,
        Kind::KafkaRestart,
        Kind::DbRestart,
        Kind::CoordinatorKill,
        Kind::LeaderKill,
    ];

    /// The name used in `SLUICE_CHAOS_KINDS` and reports.
    pub fn name(self) -> &'static str {
        match self {
            Kind::DbReset => "db_reset",
            Kind::DbBlackhole => "db_blackhole",
            Kind::DbThrottle => "db_throttle",
            Kind::KafkaReset => "kafka_reset",
            Kind::KafkaBlackhole => "kafka_blackhole",
            Kind::EndTxnHold => "endtxn_hold",
            Kind::SigKill => "sigkill",
            Kind::SigStop => "sigstop",
            Kind::KafkaRestart => "kafka_restart",
            Kind::DbRestart => "db_restart",
            Kind::CoordinatorKill => "coordinator_kill",
            Kind::LeaderKill => "leader_kill",
        }
    }

    /// Whether a run against the cluster (`cluster`) or the single broker can do it: the
    /// proxy kinds and `kafka_restart` need the single broker, the node kills the cluster.
    pub fn available(self, cluster: bool) -> bool {
        match self {
            Kind::KafkaReset | Kind::KafkaBlackhole | Kind::EndTxnHold | Kind::KafkaRestart => {
                !cluster
            }
            Kind::CoordinatorKill | Kind::LeaderKill => cluster,
            _ => true,
        }
    }

    /// Whether doing it takes the Kafka turn (the Kafka side is shared by both runs).
    pub fn takes_kafka_turn(self) -> bool {
        matches!(
            self,
            Kind::KafkaReset
                | Kind::KafkaBlackhole
                | Kind::EndTxnHold
                | Kind::KafkaRestart
                | Kind::CoordinatorKill
                | Kind::LeaderKill
        )
    }

    /// The kind of a name.
    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// About how long one takes, recovery included (to pace the workload).
    pub fn expected_secs(self) -> f64 {
        match self {
            Kind::DbReset | Kind::KafkaReset => 3.0,
            Kind::DbBlackhole | Kind::DbThrottle | Kind::KafkaBlackhole => 11.0,
            Kind::EndTxnHold => 12.0,
            Kind::SigKill => 4.0,
            Kind::SigStop => 8.0,
            Kind::KafkaRestart => 50.0,
            Kind::DbRestart => 18.0,
            // The run's own part: the node is started again and caught up in the background.
            Kind::CoordinatorKill | Kind::LeaderKill => 12.0,
        }
    }
}

/// One fault as it happened.
#[derive(Debug, Clone)]
pub struct Fault {
    /// Its kind.
    pub kind: Kind,
    /// When it started, since the run's start.
    pub at: Duration,
    /// How long it was in force.
    pub active: Duration,
    /// From its end until sluice had committed the source's position at that end; None
    /// when that did not happen within the deadline (stuck).
    pub recovery: Option<Duration>,
    /// Details (durations, rates, what went wrong).
    pub note: String,
    /// What went wrong with doing the fault itself (a node that did not start again), found
    /// after the fault was reported; the run fails on it.
    pub failure: Option<String>,
    /// The member that owned the pipeline before the fault (cluster mode; always member 0
    /// with one), and after its recovery (None: no member claimed it then).
    pub owner_before: Option<Owner>,
    pub owner_after: Option<Owner>,
}

impl Fault {
    /// Whether the pipeline's owner changed over the fault (another member, or the same one
    /// started again).
    pub fn moved(&self) -> bool {
        self.owner_before != self.owner_after
    }
}

/// What the faults are done to.
pub struct Rig<'a> {
    /// The flavour (its scratch instance).
    pub flavor: Flavor,
    /// sluice's database link.
    pub db: &'a DbProxy,
    /// sluice's Kafka link (shared with the other server's run, if one goes on).
    pub kafka: &'a KafkaProxy,
    /// Held while a Kafka fault is in force: the runs sharing the proxy and the broker take
    /// turns (a fault of one still hits the other's pipeline too).
    pub kafka_turn: Arc<tokio::sync::Mutex<()>>,
    /// sluice: one process, or the members of its cluster mode.
    pub sluice: &'a Members,
    /// The Kafka broker.
    pub broker: ServiceGuard,
    /// The database server.
    pub server: ServiceGuard,
    /// Random choices.
    pub rng: StdRng,
    /// The run's start.
    pub started: Instant,
    /// How long recovery may take before the pipeline counts as stuck.
    pub recovery_deadline: Duration,
    /// The workload's progress (recovery waits for a transaction after the fault).
    pub progress: Arc<Progress>,
    /// The three-node cluster, when the run streams into it.
    pub cluster: Option<ClusterRig>,
    /// Faults run so far (the index of the next one in the run's list).
    pub ran: usize,
    /// A killed node being started again in the background.
    pub restarting: Option<NodeRestart>,
    /// What finished restarts had to add to their fault: (fault index, note, failure).
    pub late: Vec<(usize, String, Option<String>)>,
}

/// A killed cluster node started again on a thread of its own, which holds the Kafka turn
/// until every replica is back in sync: the run's other faults go on meanwhile (as in
/// production, the pipeline runs on two nodes while the third boots), and no other node is
/// killed before the cluster is whole again.
pub struct NodeRestart {
    /// The node kill's index in the run's list of faults.
    fault: usize,
    /// The node's index in `ClusterRig::nodes`.
    node: usize,
    /// The thread: gives back the node's guard, a note and a failure.
    thread: std::thread::JoinHandle<(ServiceGuard, String, Option<String>)>,
}

/// The cluster side of a run against the three-node cluster.
pub struct ClusterRig {
    /// Bootstrap servers (all three brokers).
    pub bootstrap: String,
    /// The nodes, by node id - 1 (`kafka-cluster-1` .. `-3`).
    pub nodes: Vec<ServiceGuard>,
    /// sluice's transactional id (`sluice-<name>`).
    pub transactional_id: String,
    /// The topics sluice writes: its data topics and its offsets topic.
    pub topics: Vec<String>,
}

impl ClusterRig {
    /// A rig for the test bed's cluster nodes.
    pub fn new(transactional_id: String, topics: Vec<String>) -> ClusterRig {
        ClusterRig {
            bootstrap: cluster::bootstrap(),
            nodes: cluster::NODES.into_iter().map(ServiceGuard::new).collect(),
            transactional_id,
            topics,
        }
    }

    /// The node that is sluice's transaction coordinator.
    fn coordinator(&self) -> Result<i32, String> {
        cluster::coordinator(&self.bootstrap, &self.transactional_id)
    }
}

/// The server's executed GTID state (connecting afresh, retrying while it restarts).
pub async fn gtid_now(flavor: Flavor, deadline: Duration) -> String {
    let opts = mysql_async::OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(flavor.port)
        .user(Some("root"))
        .prefer_socket(false);
    let started = Instant::now();
    loop {
        let attempt = async {
            let mut c = mysql_async::Conn::new(opts.clone()).await?;
            let g = flavor.gtid_executed(&mut c).await;
            let _ = c.disconnect().await;
            Ok::<String, mysql_async::Error>(g)
        };
        match attempt.await {
            Ok(g) => return g,
            Err(e) if started.elapsed() < deadline => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!(
                "cannot read the GTID state of 127.0.0.1:{} within {deadline:?}: {e}",
                flavor.port
            ),
        }
    }
}

/// Waits until sluice's committed position contains `target` (as the API on one of
/// `api_ports` says: in cluster mode any member that ran the pipeline reports what it
/// committed, and what was committed stays committed); the time it took, or None after
/// `deadline` (with the last status seen of each).
pub fn wait_committed(
    flavor: Flavor,
    api_ports: &[u16],
    target: &str,
    deadline: Duration,
) -> Result<Duration, String> {
    let started = Instant::now();
    let mut last = vec![None; api_ports.len()];
    loop {
        for (i, port) in api_ports.iter().enumerate() {
            if let Some(st) = status(*port) {
                let committed = st["committed_position"].as_str().unwrap_or("");
                if let Some(set) = committed.strip_prefix("gtid:") {
                    if flavor.gtid_contains(set, target) {
                        return Ok(started.elapsed());
                    }
                }
                last[i] = Some(st);
            }
        }
        if started.elapsed() > deadline {
            let seen: Vec<String> = last
                .iter()
                .map(|s| {
                    s.as_ref()
                        .map(|s| s.to_string())
                        .unwrap_or_else(|| "the API never answered".into())
                })
                .collect();
            return Err(format!(
                "not committed up to {target} within {deadline:?}; last status: {}",
                seen.join("; ")
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn blocking<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

impl Rig<'_> {
    fn ms(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(self.rng.random_range(lo..=hi))
    }

    /// Does one fault of `kind`, then measures the recovery.
    pub async fn run(&mut self, kind: Kind) -> Fault {
        let index = self.ran;
        self.ran += 1;
        self.settle_restart(false);
        let node_kill = matches!(kind, Kind::CoordinatorKill | Kind::LeaderKill);
        let mut turn = if kind.takes_kafka_turn() {
            Some(self.kafka_turn.clone().lock_owned().await)
        } else {
            None
        };
        if node_kill {
            // Holding the turn: this run's previous restart (if any) has let go of it.
            self.settle_restart(true);
        }
        // Cluster mode: the member that owns the pipeline now (the one a process fault hits).
        let owner_before = blocking(|| self.sluice.wait_owner(Duration::from_secs(30)));
        let log_from = owner_before.map(|o| self.sluice.log_len(o.member));
        let at = self.started.elapsed();
        let t0 = Instant::now();
        let exits_before = self.sluice.exit_counts();
        let note = match kind {
            Kind::DbReset => {
                self.db.reset_all();
                String::new()
            }
            Kind::DbBlackhole => {
                let d = self.ms(5000, 10000);
                self.db.pause();
                tokio::time::sleep(d).await;
                self.db.resume();
                format!("{} ms", d.as_millis())
            }
            Kind::DbThrottle => {
                let d = self.ms(5000, 10000);
                let rate = self.rng.random_range(2048..=32768u64);
                self.db.throttle(Some(rate));
                tokio::time::sleep(d).await;
                self.db.throttle(None);
                format!("{} B/s for {} ms", rate, d.as_millis())
            }
            Kind::KafkaReset => {
                self.kafka.reset_all();
                String::new()
            }
            Kind::KafkaBlackhole => {
                let d = self.ms(5000, 10000);
                self.kafka.pause();
                tokio::time::sleep(d).await;
                self.kafka.resume();
                format!("{} ms", d.as_millis())
            }
            Kind::EndTxnHold => {
                self.kafka.hold(&[api::END_TXN]);
                let held = blocking(|| self.kafka.wait_held(Duration::from_secs(30)));
                let note = if held {
                    // The coordinator aborts after the timeout, at its next cleanup run (1 s).
                    tokio::time::sleep(Duration::from_millis(TXN_TIMEOUT_MS + 2500)).await;
                    format!("EndTxn held {} ms", TXN_TIMEOUT_MS + 2500)
                } else {
                    "no EndTxn reached the proxy within 30 s (nothing to commit?)".into()
                };
                self.kafka.release();
                note
            }
            Kind::SigKill => match owner_before.map(|o| o.member) {
                Some(i) => {
                    let m = &self.sluice.list[i].sluice;
                    blocking(|| m.kill9(Duration::from_secs(30)));
                    if self.sluice.clustered() {
                        members::label(Some(i))
                    } else {
                        String::new()
                    }
                }
                None => "no member owns the pipeline: nothing killed".into(),
            },
            Kind::SigStop => {
                let d = if self.sluice.clustered() {
                    self.ms(2000, 12000)
                } else {
                    self.ms(2000, 8000)
                };
                match owner_before
                    .map(|o| o.member)
                    .and_then(|i| Some((i, self.sluice.list[i].sluice.stop_signal()?)))
                {
                    Some((i, pid)) => {
                        tokio::time::sleep(d).await;
                        self.sluice.list[i].sluice.cont(pid);
                        let past = if self.sluice.clustered()
                            && d > Duration::from_millis(SESSION_TIMEOUT_MS)
                        {
                            ", past the session timeout"
                        } else {
                            ""
                        };
                        format!("stopped {} ms{past}{}", d.as_millis(), self.who(i))
                    }
                    None => "no sluice process to stop".into(),
                }
            }
            Kind::KafkaRestart | Kind::DbRestart => {
                let d = self.ms(1000, 3000);
                let guard = if kind == Kind::KafkaRestart {
                    &mut self.broker
                } else {
                    &mut self.server
                };
                blocking(|| guard.stop()).unwrap_or_else(|e| panic!("{}: {e}", kind.name()));
                let down = Instant::now();
                tokio::time::sleep(d).await;
                blocking(|| guard.start()).unwrap_or_else(|e| panic!("{}: {e}", kind.name()));
                format!("down {} ms", down.elapsed().as_millis())
            }
            Kind::CoordinatorKill | Kind::LeaderKill => {
                let turn = turn.take().expect("a node kill holds the Kafka turn");
                self.kill_node(kind, index, turn).await
            }
        };
        let active = t0.elapsed();
        // A node kill's turn went to its restart thread, which keeps it until every replica
        // is back in sync: two nodes out of sync at once would leave partitions below
        // min.insync.replicas. Any other Kafka fault is over.
        drop(turn);
        let end = Instant::now();
        // Recovered = committed a source transaction written after the fault ended.
        let before = self.progress.changes.load(Ordering::Relaxed);
        while self.progress.changes.load(Ordering::Relaxed) == before
            && end.elapsed() < Duration::from_secs(60)
            && !self.progress.done.load(Ordering::Relaxed)
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let target = gtid_now(self.flavor, Duration::from_secs(60)).await;
        let left = self.recovery_deadline.saturating_sub(end.elapsed());
        let ports = self.sluice.ports();
        let waited = blocking(|| wait_committed(self.flavor, &ports, &target, left));
        let mut note = note;
        for (i, e) in &self.sluice.exits_after(&exits_before) {
            if !e.expected {
                let who = if self.sluice.clustered() {
                    format!(" ({})", members::label(Some(*i)))
                } else {
                    String::new()
                };
                note += &format!("; sluice{who} {}: {}", e.how(), e.last_error);
            }
        }
        let owner_after = if self.sluice.clustered() {
            blocking(|| self.sluice.wait_owner(Duration::from_secs(30)))
        } else {
            owner_before
        };
        if self.sluice.clustered() {
            if let (Some(o), Some(from)) = (owner_before, log_from) {
                // The stalled owner's way out: told its assignment was lost, it stopped the
                // pipeline without committing.
                if self.sluice.log_since(o.member, from).contains("lost=true") {
                    note += "; the old owner learned its assignment was lost";
                }
            }
            if owner_after != owner_before {
                let show = |o: Option<Owner>| o.map(|o| o.to_string()).unwrap_or("none".into());
                note += &format!("; owner {} -> {}", show(owner_before), show(owner_after));
            }
        }
        let (recovery, note) = match waited {
            Ok(_) => (Some(end.elapsed()), note),
            Err(e) => (None, format!("{note}; STUCK: {e}")),
        };
        Fault {
            kind,
            at,
            active,
            recovery,
            note,
            failure: None,
            owner_before,
            owner_after,
        }
    }

    /// Collects this run's node restart if its thread has ended (or, with `wait`, once it
    /// has): the node's guard back in its place, the note and failure into `late`.
    pub fn settle_restart(&mut self, wait: bool) {
        let finished = self
            .restarting
            .as_ref()
            .is_some_and(|r| wait || r.thread.is_finished());
        if !finished {
            return;
        }
        let r = self.restarting.take().expect("checked above");
        let (guard, note, failure) = blocking(|| r.thread.join()).unwrap_or_else(|_| {
            (
                ServiceGuard::new(cluster::NODES[r.node]),
                String::new(),
                Some("the node's restart thread panicked".into()),
            )
        });
        if let Some(c) = self.cluster.as_mut() {
            c.nodes[r.node] = guard;
        }
        self.late.push((r.fault, note, failure));
    }

    /// Waits for the last node restart and adds what the finished restarts found to their
    /// faults in `done` (indexed as the run's list).
    pub fn add_late_notes(&mut self, done: &mut [Fault], wait: bool) {
        self.settle_restart(wait);
        for (i, note, failure) in self.late.drain(..) {
            if let Some(f) = done.get_mut(i) {
                f.note += &note;
                if failure.is_some() {
                    f.failure = failure;
                }
            }
        }
    }

    /// SIGKILL of a cluster node (the coordinator, or a partition leader), started again
    /// after 2–5 s; the note says which node and whether sluice committed while it was down.
    async fn kill_node(
        &mut self,
        kind: Kind,
        index: usize,
        turn: tokio::sync::OwnedMutexGuard<()>,
    ) -> String {
        let jitter = self.ms(0, 200);
        let down_for = self.ms(2000, 5000);
        let pick_topic = self.rng.random_range(0..usize::MAX);
        let pick_partition = self.rng.random_range(0..usize::MAX);
        let api_ports = self.sluice.ports();
        let Some(c) = self.cluster.as_mut() else {
            panic!("{} needs the cluster (SLUICE_CHAOS_CLUSTER=1)", kind.name());
        };
        let coordinator = blocking(|| c.coordinator());
        let (victim, what) = match kind {
            Kind::CoordinatorKill => match &coordinator {
                Ok(id) => (*id, format!("coordinator of {}", c.transactional_id)),
                Err(e) => return format!("no coordinator found: {e}"),
            },
            _ => {
                let topic = c.topics[pick_topic % c.topics.len()].clone();
                let found = blocking(|| cluster::partitions(&c.bootstrap, &topic));
                let parts = match found {
                    Ok(p) => p,
                    Err(e) => return format!("no partitions of {topic}: {e}"),
                };
                let p = parts[pick_partition % parts.len()];
                if p.leader < 0 {
                    return format!("{topic}[{}] has no leader", p.partition);
                }
                let also = if coordinator.as_ref().ok() == Some(&p.leader) {
                    ", also the coordinator"
                } else {
                    ""
                };
                (
                    p.leader,
                    format!("leader of {topic}[{}]{also}", p.partition),
                )
            }
        };
        let Some(name) = cluster::node_name(victim) else {
            return format!("{what} is node {victim}, not one of the test bed's");
        };
        let idx = usize::try_from(victim - 1).expect("node id");
        // Every member's (cluster mode: whichever runs the pipeline commits).
        let committed = || {
            let all: Vec<Option<String>> = blocking(|| {
                api_ports
                    .iter()
                    .map(|p| {
                        status(*p).and_then(|s| s["committed_position"].as_str().map(String::from))
                    })
                    .collect()
            });
            all.iter().any(Option::is_some).then_some(all)
        };
        tokio::time::sleep(jitter).await;
        blocking(|| c.nodes[idx].kill()).unwrap_or_else(|e| panic!("{}: {e}", kind.name()));
        let down = Instant::now();
        let before = committed();
        tokio::time::sleep(down_for).await;
        let during = committed();
        // Started again on a thread of its own, which keeps the turn until the cluster is
        // whole again; the run measures the recovery meanwhile.
        let mut guard = std::mem::replace(&mut c.nodes[idx], ServiceGuard::new(name));
        let (bootstrap, topics) = (c.bootstrap.clone(), c.topics.clone());
        let started_again = Instant::now();
        let thread = std::thread::spawn(move || {
            let out = match guard.start() {
                Err(e) => (
                    String::new(),
                    Some(format!("{name} did not start again: {e}")),
                ),
                Ok(()) => {
                    let up = started_again.elapsed();
                    match cluster::wait_in_sync(&bootstrap, &topics, Duration::from_secs(180)) {
                        Ok(d) => (
                            format!(
                                "; up again {} ms after its start, replicas in sync {} ms later",
                                up.as_millis(),
                                d.as_millis()
                            ),
                            None,
                        ),
                        Err(e) => (
                            String::new(),
                            Some(format!("{name}'s replicas not in sync: {e}")),
                        ),
                    }
                }
            };
            drop(turn);
            (guard, out.0, out.1)
        });
        self.restarting = Some(NodeRestart {
            fault: index,
            node: idx,
            thread,
        });
        let committed_while_down = match (&before, &during) {
            (Some(b), Some(d)) if b != d => "committed while it was down",
            (Some(_), Some(_)) => "no commit while it was down",
            _ => "API not answering",
        };
        format!(
            "{name} ({what}) killed, down {} ms, {committed_while_down}",
            down.elapsed().as_millis()
        )
    }

    /// ", member 2" in cluster mode (which member a process fault hit); nothing with one.
    fn who(&self, i: usize) -> String {
        if self.sluice.clustered() {
            format!(" ({})", members::label(Some(i)))
        } else {
            String::new()
        }
    }

    /// A pause of normal running between two faults.
    pub async fn gap(&mut self) {
        let d = self.ms(300, 1500);
        tokio::time::sleep(d).await;
    }
}
