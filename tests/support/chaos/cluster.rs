//! The test bed's three-node Kafka cluster (`scripts/services up kafka-cluster`): which node
//! leads a partition, which one is the transaction coordinator of a transactional id, and
//! waiting until every replica is back in sync after a node restart.
//!
//! Used when the chaos run targets the cluster (`SLUICE_CHAOS_CLUSTER=1`). Node `n` (1..3)
//! is the service `kafka-cluster-n`, a broker on the n-th port of `SLUICE_KAFKA_CLUSTER_PORTS`
//! (default 9192, 9292, 9392) with node id `n`.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::metadata::Metadata;

/// The cluster nodes' service names; node id = index + 1.
pub const NODES: [&str; 3] = ["kafka-cluster-1", "kafka-cluster-2", "kafka-cluster-3"];

/// Kafka's internal topic of transaction state (one partition per coordinator shard).
pub const TXN_STATE_TOPIC: &str = "__transaction_state";

/// `SLUICE_CHAOS_CLUSTER=1`: the chaos run streams into the cluster.
pub fn enabled() -> bool {
    matches!(
        std::env::var("SLUICE_CHAOS_CLUSTER")
            .as_deref()
            .map(str::trim),
        Ok("1") | Ok("true") | Ok("yes")
    )
}

/// The brokers' ports (`SLUICE_KAFKA_CLUSTER_PORTS`, as in `scripts/lib/kafka.sh`).
pub fn ports() -> Vec<u16> {
    let list = std::env::var("SLUICE_KAFKA_CLUSTER_PORTS")
        .unwrap_or_else(|_| "9192,9292,9392".to_string());
    let ports: Vec<u16> = list
        .split(',')
        .map(|p| {
            p.trim().parse().unwrap_or_else(|_| {
                panic!("SLUICE_KAFKA_CLUSTER_PORTS={list:?}: {p:?} is not a port")
            })
        })
        .collect();
    assert_eq!(
        ports.len(),
        NODES.len(),
        "SLUICE_KAFKA_CLUSTER_PORTS={list:?} must name three ports"
    );
    ports
}

/// Bootstrap servers: all three brokers.
pub fn bootstrap() -> String {
    ports()
        .iter()
        .map(|p| format!("127.0.0.1:{p}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The service name of node `id`.
pub fn node_name(id: i32) -> Option<&'static str> {
    usize::try_from(id)
        .ok()
        .and_then(|i| i.checked_sub(1))
        .and_then(|i| NODES.get(i).copied())
}

fn client(bootstrap: &str) -> Result<BaseConsumer, String> {
    ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("socket.timeout.ms", "5000")
        .set("topic.metadata.refresh.interval.ms", "-1")
        .create()
        .map_err(|e| format!("metadata client: {e}"))
}

/// Metadata of `topics` (fresh from a broker).
pub fn metadata(bootstrap: &str, topic: &str) -> Result<Metadata, String> {
    client(bootstrap)?
        .fetch_metadata(Some(topic), Duration::from_secs(10))
        .map_err(|e| format!("metadata of {topic}: {e}"))
}

/// A pipeline of `flavor` streaming into the cluster (`kafka_extra`, e.g. further `[kafka]`
/// settings, follows its bootstrap line); fails at once, saying how to start it, when the
/// cluster is not up.
pub fn pipeline(
    flavor: crate::support::Flavor,
    tag: &str,
    kafka_extra: &str,
) -> crate::support::Pipeline {
    let bootstrap = bootstrap();
    let up = brokers(&bootstrap).unwrap_or_default();
    assert_eq!(
        up.len(),
        NODES.len(),
        "the three-node cluster is not up (`scripts/services up kafka-cluster`; scripts/test \
         starts it): brokers {up:?}"
    );
    let p = crate::support::Pipeline::new(flavor, tag, "");
    p.edit_config(
        &format!("bootstrap_servers = \"{}\"", crate::support::KAFKA),
        &format!("bootstrap_servers = \"{bootstrap}\"{kafka_extra}"),
    );
    p
}

/// The bootstrap list of the nodes other than `down`.
pub fn bootstrap_without(down: i32) -> String {
    ports()
        .iter()
        .zip(1..)
        .filter(|(_, id)| *id != down)
        .map(|(port, _)| format!("127.0.0.1:{port}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The brokers registered (and not fenced) in the cluster.
pub fn brokers(bootstrap: &str) -> Result<Vec<i32>, String> {
    let md = client(bootstrap)?
        .fetch_metadata(None, Duration::from_secs(10))
        .map_err(|e| format!("metadata: {e}"))?;
    let mut ids: Vec<i32> = md.brokers().iter().map(|b| b.id()).collect();
    ids.sort_unstable();
    Ok(ids)
}

/// One partition's leader and whether all its replicas are in sync.
#[derive(Debug, Clone, Copy)]
pub struct PartitionState {
    /// The partition.
    pub partition: i32,
    /// Its leader's node id (-1: none).
    pub leader: i32,
    /// ISR == replicas.
    pub in_sync: bool,
}

/// The partitions of `topic` (error when the topic does not exist).
pub fn partitions(bootstrap: &str, topic: &str) -> Result<Vec<PartitionState>, String> {
    let md = metadata(bootstrap, topic)?;
    let t = md
        .topics()
        .iter()
        .find(|t| t.name() == topic)
        .ok_or_else(|| format!("no metadata for {topic}"))?;
    if let Some(e) = t.error() {
        return Err(format!("{topic}: {e:?}"));
    }
    let mut out: Vec<PartitionState> = t
        .partitions()
        .iter()
        .map(|p| {
            let mut isr = p.isr().to_vec();
            let mut replicas = p.replicas().to_vec();
            isr.sort_unstable();
            replicas.sort_unstable();
            PartitionState {
                partition: p.id(),
                leader: p.leader(),
                in_sync: isr == replicas,
            }
        })
        .collect();
    out.sort_by_key(|p| p.partition);
    if out.is_empty() {
        return Err(format!("{topic} has no partitions"));
    }
    Ok(out)
}

/// The leader of `topic`'s `partition`.
pub fn leader(bootstrap: &str, topic: &str, partition: i32) -> Result<i32, String> {
    let p = partitions(bootstrap, topic)?
        .into_iter()
        .find(|p| p.partition == partition)
        .ok_or_else(|| format!("{topic} has no partition {partition}"))?;
    if p.leader < 0 {
        return Err(format!("{topic}[{partition}] has no leader"));
    }
    Ok(p.leader)
}

/// Java's `String.hashCode` (over UTF-16 code units), as Kafka hashes a transactional id.
pub fn java_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// The `__transaction_state` partition that holds `transactional_id`: Kafka's
/// `Utils.abs(transactionalId.hashCode) % partitions` (`TransactionStateManager.partitionFor`).
pub fn txn_state_partition(transactional_id: &str, partitions: usize) -> i32 {
    let h = java_hash(transactional_id);
    let abs = if h == i32::MIN { 0 } else { h.abs() };
    abs % i32::try_from(partitions).expect("partition count")
}

/// The transaction coordinator of `transactional_id`: the leader of its `__transaction_state`
/// partition (what FindCoordinator answers).
pub fn coordinator(bootstrap: &str, transactional_id: &str) -> Result<i32, String> {
    let parts = partitions(bootstrap, TXN_STATE_TOPIC)?;
    let p = txn_state_partition(transactional_id, parts.len());
    leader(bootstrap, TXN_STATE_TOPIC, p)
}

/// Waits until all three brokers are registered and every partition of `topics` (and of
/// `__transaction_state`) has its full replica set in sync; the time it took, or an error
/// naming what still lags after `deadline`.
pub fn wait_in_sync(
    bootstrap: &str,
    topics: &[String],
    deadline: Duration,
) -> Result<Duration, String> {
    let started = Instant::now();
    let mut all: Vec<String> = topics.to_vec();
    all.push(TXN_STATE_TOPIC.to_string());
    loop {
        let lagging = match brokers(bootstrap) {
            Ok(b) if b.len() < NODES.len() => Err(format!("brokers registered: {b:?}")),
            Ok(_) => {
                let mut lag = Vec::new();
                for t in &all {
                    match partitions(bootstrap, t) {
                        Ok(ps) => lag.extend(
                            ps.iter()
                                .filter(|p| !p.in_sync || p.leader < 0)
                                .map(|p| format!("{t}[{}]", p.partition)),
                        ),
                        Err(e) => lag.push(e),
                    }
                }
                if lag.is_empty() {
                    Ok(())
                } else {
                    Err(format!("not in sync: {}", lag.join(", ")))
                }
            }
            Err(e) => Err(e),
        };
        match lagging {
            Ok(()) => return Ok(started.elapsed()),
            Err(e) if started.elapsed() > deadline => {
                return Err(format!("after {deadline:?}: {e}"))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(250)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transactional_ids_hash_as_in_java() {
        // "hello".hashCode() == 99162322 in Java; a non-ASCII id hashes its UTF-16 units.
        assert_eq!(java_hash("hello"), 99_162_322);
        assert_eq!(java_hash(""), 0);
        assert_eq!(java_hash("é"), 0xe9);
        // Checked against the coordinator Kafka's TransactionsCommand reported.
        assert_eq!(txn_state_partition("rf3-check-one-down", 50), 42);
    }
}
