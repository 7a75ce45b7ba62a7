//! The group member: a Kafka consumer in the group `cluster.group`, polled by a dedicated OS
//! thread, subscribed to the assignment topics of this instance's pipelines. It consumes
//! nothing; owning partition 0 of `_sluice_cluster.<group>.<pipeline>` is the right to run
//! that pipeline.
//!
//! The rebalance callback runs on that thread, inside `poll`, and never touches the async
//! runtime: it sends the decision to the supervisor over a channel and, for a revocation,
//! waits on a plain channel for the pipelines to have stopped, at most
//! `cluster.revoke_timeout_ms` (below `max.poll.interval.ms`). An assignment reported *lost*
//! (the session expired: the group has presumed this member dead and given its pipelines to
//! others) is passed on as such: the supervisor does not wait for a commit there.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, Rebalance};
use rdkafka::{ClientContext, TopicPartitionList};
use tokio::sync::mpsc::UnboundedSender;

use crate::config::cluster::ClusterConfig;
use crate::error::{Error, Result};

/// The prefix of the assignment topics.
pub const ASSIGNMENT_TOPIC_PREFIX: &str = "_sluice_cluster.";

/// The assignment topic of `pipeline` in `group`.
pub fn assignment_topic(group: &str, pipeline: &str) -> String {
    format!("{ASSIGNMENT_TOPIC_PREFIX}{group}.{pipeline}")
}

/// The pipeline an assignment topic of `group` stands for.
pub fn pipeline_of<'a>(group: &str, topic: &'a str) -> Option<&'a str> {
    topic
        .strip_prefix(ASSIGNMENT_TOPIC_PREFIX)?
        .strip_prefix(group)?
        .strip_prefix('.')
}

/// What the group decided, for the supervisor.
#[derive(Debug)]
pub enum Decision {
    /// These pipelines are this member's now: start them.
    Assigned(Vec<String>),
    /// These pipelines are taken away: stop them, then answer on `done`. `lost`: the session
    /// had expired (others may run them already): stop at once, commit nothing.
    Revoked {
        /// The pipelines.
        names: Vec<String>,
        /// The assignment was lost rather than handed over.
        lost: bool,
        /// Answered once they stopped.
        done: std::sync::mpsc::Sender<()>,
    },
}

/// What this member knows of the group, for `/cluster`.
#[derive(Debug, Default, Clone)]
pub struct MemberView {
    /// This member's `client.id` (`sluice-<group>-<host>-<pid>`), as the group's member
    /// descriptions show it.
    pub client_id: String,
    /// The pipelines assigned to this member.
    pub assigned: BTreeSet<String>,
    /// Rebalances seen.
    pub rebalances: u64,
}

struct GroupContext {
    group: String,
    decisions: UnboundedSender<Decision>,
    revoke_timeout: Duration,
    view: Arc<Mutex<MemberView>>,
}

impl GroupContext {
    fn names(&self, tpl: &TopicPartitionList) -> Vec<String> {
        tpl.elements()
            .iter()
            .filter_map(|e| pipeline_of(&self.group, e.topic()).map(str::to_owned))
            .collect()
    }

    fn view(&self) -> std::sync::MutexGuard<'_, MemberView> {
        self.view.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl ClientContext for GroupContext {}

impl ConsumerContext for GroupContext {
    fn pre_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        let Rebalance::Revoke(tpl) = rebalance else {
            return;
        };
        let names = self.names(tpl);
        if names.is_empty() {
            return;
        }
        let lost = consumer.assignment_lost();
        tracing::info!(pipelines = ?names, lost, "cluster: pipelines revoked from this member");
        let (done, stopped) = std::sync::mpsc::channel();
        let sent = self.decisions.send(Decision::Revoked {
            names: names.clone(),
            lost,
            done,
        });
        if sent.is_ok() && stopped.recv_timeout(self.revoke_timeout).is_err() {
            tracing::warn!(
                pipelines = ?names,
                revoke_timeout_ms = self.revoke_timeout.as_millis() as u64,
                "cluster: revoked pipelines did not stop within cluster.revoke_timeout_ms; \
                 releasing them anyway (the next owner's fencing stops any late write)"
            );
        }
        let mut v = self.view();
        for n in &names {
            v.assigned.remove(n);
        }
        v.rebalances += 1;
    }

    fn post_rebalance(&self, _: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        match rebalance {
            Rebalance::Assign(tpl) => {
                let names = self.names(tpl);
                {
                    let mut v = self.view();
                    v.assigned.extend(names.iter().cloned());
                    v.rebalances += 1;
                }
                if !names.is_empty() {
                    tracing::info!(pipelines = ?names, "cluster: pipelines assigned to this member");
                    let _ = self.decisions.send(Decision::Assigned(names));
                }
            }
            Rebalance::Revoke(_) => {}
            Rebalance::Error(e) => tracing::warn!(error = %e, "cluster: rebalance error"),
        }
    }
}

/// The running member: its thread and what it knows.
pub struct Member {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// What the member knows of the group.
    pub view: Arc<Mutex<MemberView>>,
}

impl Member {
    /// Joins the group (subscribing to `topics`, which must exist) on a new OS thread that
    /// polls until [`Member::leave`].
    pub fn join(
        base: &ClientConfig,
        cluster: &ClusterConfig,
        topics: Vec<String>,
        decisions: UnboundedSender<Decision>,
    ) -> Result<Member> {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_default();
        let client_id = format!("sluice-{}-{host}-{}", cluster.group, std::process::id());
        let view = Arc::new(Mutex::new(MemberView {
            client_id: client_id.clone(),
            ..MemberView::default()
        }));
        let ctx = GroupContext {
            group: cluster.group.clone(),
            decisions,
            revoke_timeout: cluster.revoke_timeout(),
            view: view.clone(),
        };
        let mut cfg = crate::sink::client_roles::for_consumer(base);
        cfg.set("group.id", &cluster.group)
            .set("client.id", &client_id)
            .set("group.protocol", "classic")
            .set("partition.assignment.strategy", "cooperative-sticky")
            .set("session.timeout.ms", cluster.session_timeout_ms.to_string())
            .set(
                "heartbeat.interval.ms",
                cluster.heartbeat_interval_ms.to_string(),
            )
            .set(
                "max.poll.interval.ms",
                cluster.max_poll_interval_ms.to_string(),
            )
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("enable.partition.eof", "false");
        let consumer: BaseConsumer<GroupContext> = cfg.create_with_context(ctx).map_err(|e| {
            Error::definite(format!("cluster: cannot create the group consumer: {e}"))
        })?;
        let refs: Vec<&str> = topics.iter().map(String::as_str).collect();
        consumer.subscribe(&refs).map_err(|e| {
            Error::definite(format!(
                "cluster: cannot subscribe to the assignment topics: {e}"
            ))
        })?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new()
            .name("sluice-cluster-group".into())
            .spawn({
                let stop = stop.clone();
                move || poll_until(consumer, &stop)
            })
            .map_err(|e| Error::definite(format!("cluster: cannot start the group thread: {e}")))?;
        Ok(Member {
            stop,
            thread: Some(thread),
            view,
        })
    }

    /// Leaves the group (its pipelines move at once, no session timeout to wait for) and
    /// ends the thread. Call after this member's pipelines stopped.
    pub fn leave(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn poll_until(consumer: BaseConsumer<GroupContext>, stop: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) {
        // Nothing is ever produced to the assignment topics: a poll only serves the group
        // protocol (heartbeats, rebalances and their callbacks).
        if let Some(Err(e)) = consumer.poll(Duration::from_millis(100)) {
            tracing::debug!(error = %e, "cluster: group consumer");
        }
    }
    // Leaving: dropping the consumer closes it, which leaves the group at once (the
    // revocation it runs finds this member's pipelines stopped already).
    drop(consumer);
    tracing::info!("cluster: left the group");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignment_topics_name_their_pipeline() {
        let t = assignment_topic("prod", "shop.eu");
        assert_eq!(t, "_sluice_cluster.prod.shop.eu");
        assert_eq!(pipeline_of("prod", &t), Some("shop.eu"));
        assert_eq!(pipeline_of("pro", &t), None);
        assert_eq!(pipeline_of("prod.shop", &t), Some("eu"));
        assert_eq!(pipeline_of("prod", "other"), None);
    }
}
