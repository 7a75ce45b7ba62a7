//! One node of three down is not an outage: on the test bed's three-node cluster
//! (replication factor 3, min.insync.replicas 2), a pipeline (re)started while a node is
//! down must start and commit without a failed attempt, because the other two nodes serve
//! every partition.
//!
//! Found by the chaos run on the cluster:
//! - every start-up read (committed offsets, schema history) stopped at the first error its
//!   consumer reported, and a consumer whose bootstrap list names the stopped node reports
//!   "Connect to ... failed: Connection refused" (BrokerTransportFailure) although it goes on
//!   with the other nodes. Each attempt failed and the pipeline stood still until the node
//!   came back.
//! - right after a node is killed (SIGKILL), the cluster names it as a leader until its
//!   controller fences it (`broker.session.timeout.ms`, 9 s): a watermark read or a topic
//!   check sent there waited for its whole timeout (10 s, 30 s) and failed the attempt.
//!
//! Kafka's side does not depend on the source, so the tests run on one server (MariaDB, or
//! MySQL when only it is enabled), one at a time (each takes a node down).

mod support;

#[path = "support/chaos/mod.rs"]
mod chaos;

use std::time::{Duration, Instant};

use chaos::cluster;
use support::*;

/// One test at a time: two nodes down at once would be an outage.
static ONE_NODE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// How the node leading the pipeline's offsets topic is taken down.
#[derive(Clone, Copy)]
enum Down {
    /// `scripts/services stop`: a clean shutdown, its leaderships move at once.
    Stopped,
    /// `scripts/services kill` (SIGKILL), and sluice started at once: the cluster still
    /// names the dead node as leader until it is fenced.
    Killed,
}

/// 20 rows with every node up, sluice stopped, the offsets topic's leader taken down, 20 more
/// rows, sluice started: the 40 rows must arrive once each, with no failed attempt.
async fn starts_and_commits_with_the_offsets_leader(down: Down, tag: &str) {
    let Some(flavor) = flavors().into_iter().next() else {
        return;
    };
    let _one = ONE_NODE_AT_A_TIME.lock().await;
    let bootstrap = cluster::bootstrap();
    let p = cluster::pipeline(flavor, tag, "");
    let (mut c, mut child) = p
        .start_with(&[("t", "(id INT PRIMARY KEY, pad VARCHAR(10))")])
        .await;
    let db = p.db.clone();
    let topics = [p.topic("t")];
    exec(&mut c, &[&format!("USE {db}")]).await;
    exec(
        &mut c,
        &[&flavor.insert_seq(&format!("{db}.t"), 1, 20, "x")],
    )
    .await;
    let first = consume_raw_from(
        &bootstrap,
        &topics,
        "read_committed",
        20,
        Duration::ZERO,
        Duration::from_secs(60),
    );
    assert_eq!(first.len(), 20, "the first 20 rows, all nodes up");
    terminate(&mut child);

    // The node that leads the offsets topic: its stop moves that leadership as well.
    let victim = cluster::leader(&bootstrap, &p.offsets_topic, 0)
        .unwrap_or_else(|e| panic!("the leader of {}: {e}", p.offsets_topic));
    let name = cluster::node_name(victim).expect("a node of the test bed");
    let mut node = chaos::ServiceGuard::new(name);
    match down {
        Down::Stopped => node.stop(),
        Down::Killed => node.kill(),
    }
    .unwrap_or_else(|e| panic!("taking {name} down: {e}"));
    let up = cluster::bootstrap_without(victim);

    exec(
        &mut c,
        &[&flavor.insert_seq(&format!("{db}.t"), 21, 40, "y")],
    )
    .await;
    let started = Instant::now();
    let _child = p.spawn();
    let all = consume_raw_from(
        &up,
        &topics,
        "read_committed",
        40,
        Duration::from_secs(2),
        Duration::from_secs(90),
    );
    let took = started.elapsed();
    let log = p.log();
    let ids: Vec<String> = all
        .iter()
        .map(|r| String::from_utf8_lossy(r.key.as_deref().unwrap_or_default()).into_owned())
        .collect();
    assert_eq!(
        all.len(),
        40,
        "with {name} (node {victim}) down, the restarted pipeline committed {} of 40 rows \
         within {took:?}: {ids:?}\n{log}",
        all.len()
    );
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 40, "every row once: {ids:?}");
    assert!(
        !log.contains("reconnecting after a backoff"),
        "with one node of three down no attempt may fail (the other two serve every \
         partition):\n{log}"
    );
    node.start()
        .unwrap_or_else(|e| panic!("scripts/services start {name}: {e}"));
    // The next test starts on a whole cluster.
    let topics = vec![p.offsets_topic.clone(), p.topic("t")];
    let in_sync = cluster::wait_in_sync(&bootstrap, &topics, Duration::from_secs(180));
    eprintln!(
        "[{}] with node {victim} of 3 {}: started and committed 20 more rows in {} ms; \
         replicas in sync again: {in_sync:?}",
        flavor.name,
        match down {
            Down::Stopped => "stopped",
            Down::Killed => "killed",
        },
        took.as_millis()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pipeline_starts_and_commits_while_one_node_of_three_is_down() {
    starts_and_commits_with_the_offsets_leader(Down::Stopped, "node_down").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pipeline_starts_and_commits_right_after_the_offsets_leader_was_killed() {
    starts_and_commits_with_the_offsets_leader(Down::Killed, "node_killed").await;
}
