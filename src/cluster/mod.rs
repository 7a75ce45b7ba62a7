//! Cluster mode's Kafka side: the group member ([`group`]), the assignment topics and the
//! cluster metrics. The supervisor that starts and stops pipelines on the group's decisions
//! is `crate::app`'s (`app/cluster.rs`); the design and its safety argument are in
//! `docs/architecture.md` ("Cluster mode").

pub mod group;
pub mod metrics;

use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::types::RDKafkaErrorCode;

use crate::error::{Error, Result};
use crate::sink::client_roles::{for_consumer, for_producer};

/// Creates the assignment topics that do not exist yet (one partition each, the broker's
/// replication factor); a topic another instance created meanwhile counts as done.
pub async fn ensure_assignment_topics(base: &ClientConfig, topics: &[String]) -> Result<()> {
    let admin: AdminClient<DefaultClientContext> = for_producer(base).create().map_err(|e| {
        Error::definite(format!("cluster: cannot create a Kafka admin client: {e}"))
    })?;
    let new: Vec<NewTopic<'_>> = topics
        .iter()
        .map(|t| NewTopic::new(t, 1, TopicReplication::Fixed(-1)))
        .collect();
    let opts = AdminOptions::new().request_timeout(Some(Duration::from_secs(30)));
    let results = admin
        .create_topics(new.iter(), &opts)
        .await
        .map_err(|e| Error::transient(format!("cluster: creating the assignment topics: {e}")))?;
    for r in results {
        match r {
            Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((t, code @ RDKafkaErrorCode::TopicAuthorizationFailed))
            | Err((t, code @ RDKafkaErrorCode::ClusterAuthorizationFailed)) => {
                return Err(Error::definite(format!(
                    "cluster: creating the assignment topic `{t}` failed: {code}; grant CREATE \
                     on topics `_sluice_cluster.*` (or create the topic beforehand, one \
                     partition)"
                )))
            }
            Err((t, code)) => {
                return Err(Error::transient(format!(
                    "cluster: creating the assignment topic `{t}` failed: {code}"
                )))
            }
        }
    }
    Ok(())
}

/// `sluice check` of cluster mode: the group (reachable, its state and members) and the
/// assignment topics (there with one partition, or creatable: a validate-only creation
/// proves the rights).
pub async fn check(
    base: &ClientConfig,
    cluster: &crate::config::cluster::ClusterConfig,
    pipelines: &[String],
) -> Vec<crate::mysql::preflight::CheckItem> {
    use crate::mysql::preflight::CheckItem;
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let item = |name: &str, detail: String, problem: Option<String>| CheckItem {
        name: name.to_string(),
        detail,
        transient: problem.is_some(),
        problem,
    };
    let timeout = Duration::from_secs(10);
    let consumer: BaseConsumer = match for_consumer(base).create() {
        Ok(c) => c,
        Err(e) => {
            return vec![item(
                "cluster group",
                String::new(),
                Some(format!("cannot create a Kafka client: {e}")),
            )]
        }
    };
    let mut items = Vec::new();
    let group = cluster.group.as_str();
    items.push(match consumer.fetch_group_list(Some(group), timeout) {
        Ok(list) => {
            let detail = match list.groups().iter().find(|g| g.name() == group) {
                Some(g) if !g.members().is_empty() => format!(
                    "group {group:?}: {}, {} member(s): {}",
                    g.state(),
                    g.members().len(),
                    g.members()
                        .iter()
                        .map(|m| m.client_id())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                _ => format!("group {group:?}: no member yet (the first instance creates it)"),
            };
            item("cluster group", detail, None)
        }
        Err(e) => item(
            "cluster group",
            format!("group {group:?}"),
            Some(format!(
                "cannot describe the group: {e}; check kafka.bootstrap_servers and that \
                 sluice's principal may DESCRIBE and READ group {group:?}"
            )),
        ),
    });
    let topics: Vec<String> = pipelines
        .iter()
        .map(|p| group::assignment_topic(group, p))
        .collect();
    let md = consumer.fetch_metadata(None, timeout);
    items.push(match md {
        Ok(md) => {
            let mut missing = Vec::new();
            let mut wrong = Vec::new();
            for t in &topics {
                match md.topics().iter().find(|mt| mt.name() == t.as_str()) {
                    Some(mt) if mt.partitions().len() == 1 => {}
                    Some(mt) => wrong.push(format!("{t} ({} partitions)", mt.partitions().len())),
                    None => missing.push(t.clone()),
                }
            }
            let problem = if !wrong.is_empty() {
                Some(format!(
                    "assignment topics with more than one partition: {}; delete them (they \
                     hold no data) and let sluice create them with one",
                    wrong.join(", ")
                ))
            } else {
                validate_creation(base, &missing).await.err()
            };
            item(
                "cluster topics",
                format!(
                    "{} of {} assignment topics exist; {} to create",
                    topics.len() - missing.len() - wrong.len(),
                    topics.len(),
                    missing.len()
                ),
                problem,
            )
        }
        Err(e) => item(
            "cluster topics",
            String::new(),
            Some(format!("Kafka metadata request failed: {e}")),
        ),
    });
    items
}

/// Asks the broker to validate (not perform) creating `topics`.
async fn validate_creation(
    base: &ClientConfig,
    topics: &[String],
) -> std::result::Result<(), String> {
    if topics.is_empty() {
        return Ok(());
    }
    let admin: AdminClient<DefaultClientContext> = for_producer(base)
        .create()
        .map_err(|e| format!("cannot create a Kafka admin client: {e}"))?;
    let new: Vec<NewTopic<'_>> = topics
        .iter()
        .map(|t| NewTopic::new(t, 1, TopicReplication::Fixed(-1)))
        .collect();
    let opts = AdminOptions::new()
        .request_timeout(Some(Duration::from_secs(10)))
        .validate_only(true);
    let results = admin
        .create_topics(new.iter(), &opts)
        .await
        .map_err(|e| format!("validating the creation of the assignment topics: {e}"))?;
    for r in results {
        match r {
            Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((t, code)) => {
                return Err(format!(
                    "sluice could not create the assignment topic `{t}`: {code}; grant CREATE \
                     on topics `_sluice_cluster.*` or create it beforehand with one partition"
                ))
            }
        }
    }
    Ok(())
}
