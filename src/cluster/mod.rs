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

/// Creates the assignment topics that do not exist yet (one partition each, the broker's
/// replication factor); a topic another instance created meanwhile counts as done.
pub async fn ensure_assignment_topics(base: &ClientConfig, topics: &[String]) -> Result<()> {
    let admin: AdminClient<DefaultClientContext> = base.create().map_err(|e| {
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
