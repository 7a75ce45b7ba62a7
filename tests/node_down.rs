//! One node of three down is not an outage: on the test bed's three-node cluster
//! (replication factor 3, min.insync.replicas 2), a pipeline (re)started while a node is
//! stopped must start at once and commit, because the other two nodes serve every partition.
//!
//! Found by the chaos run on the cluster: every start-up read (committed offsets, schema
//! history) stopped at the first error its consumer reported, and a consumer whose bootstrap
//! list names the stopped node reports "Connect to ... failed: Connection refused"
//! (BrokerTransportFailure) although it goes on with the other nodes. Each attempt failed and
//! the pipeline stood still until the node came back.
//!
//! Kafka's side does not depend on the source, so the test runs on one server (MariaDB, or
//! MySQL when only it is enabled).

mod support;

#[path = "support/chaos/mod.rs"]
mod chaos;

use std::time::{Duration, Instant};

use chaos::cluster;
use support::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_pipeline_starts_and_commits_while_one_node_of_three_is_down() {
    let Some(flavor) = flavors().into_iter().next() else {
        return;
    };
    let bootstrap = cluster::bootstrap();
    let brokers = cluster::brokers(&bootstrap).unwrap_or_default();
    assert_eq!(
        brokers.len(),
        3,
        "the three-node cluster is not up (`scripts/services up kafka-cluster`; scripts/test \
         starts it): brokers {brokers:?}"
    );
    let p = Pipeline::new(flavor, "node_down", "");
    p.edit_config(
        &format!("bootstrap_servers = \"{KAFKA}\""),
        &format!("bootstrap_servers = \"{bootstrap}\""),
    );
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
    node.stop()
        .unwrap_or_else(|e| panic!("scripts/services stop {name}: {e}"));
    let up: Vec<String> = cluster::ports()
        .iter()
        .zip(1..)
        .filter(|(_, id)| *id != victim)
        .map(|(port, _)| format!("127.0.0.1:{port}"))
        .collect();
    let up = up.join(",");

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
    eprintln!(
        "[{}] with node {victim} of 3 down: started and committed 20 more rows in {} ms",
        flavor.name,
        took.as_millis()
    );
}
