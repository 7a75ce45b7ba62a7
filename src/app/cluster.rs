//! Cluster mode's supervisor: starts and stops this instance's pipelines as the Kafka group
//! assigns and revokes them (`crate::cluster::group`).
//!
//! A pipeline runs as it would alone ([`run_pipeline`]), with a stop signal of its own: set
//! when the group revokes it (the pipeline then ends at a transaction boundary: the open
//! Kafka transaction commits if the source is at a boundary, else aborts) and when the
//! process shuts down. A revocation is answered once the pipeline's run ended, or after
//! `cluster.revoke_timeout_ms` (the run goes on draining; a restart of the same pipeline
//! waits for it). Safety does not rest on any of this: the next owner's `init_transactions`
//! fences whatever the old owner still does, and it resumes after the last committed offset
//! (`docs/architecture.md`, "Why a rebalance can neither lose nor duplicate"). A fence or a
//! definite error stops that pipeline only; it starts again when the group assigns it anew.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::Instrument;

use super::run::{
    requested_on, run_pipeline, serve_api, shutdown_timeout, PipelineEnd, API_SHUTDOWN_GRACE,
};
use super::settings::{client_config, RunOptions};
use crate::cluster::group::{assignment_topic, Decision, Member};
use crate::cluster::metrics::ClusterMetrics;
use crate::config::cluster::ClusterConfig;
use crate::config::process::Process;
use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};
use crate::shutdown::ShutdownClock;

/// One started run of a pipeline.
struct Slot {
    stop: watch::Sender<bool>,
    /// Set before `stop` when the assignment was lost: the run commits nothing more.
    no_commit: Arc<std::sync::atomic::AtomicBool>,
    task: JoinHandle<PipelineEnd>,
    assigned_at: Instant,
    streamed: bool,
}

/// The pipelines of the process in cluster mode.
struct Supervisor {
    configs: BTreeMap<String, Config>,
    options: RunOptions,
    directory: crate::api::Pipelines,
    lag: f64,
    metrics: ClusterMetrics,
    running: BTreeMap<String, Slot>,
    /// Runs told to stop that had not ended when their revocation was answered.
    draining: BTreeMap<String, JoinHandle<PipelineEnd>>,
    /// Registrations of ended runs (their series stay in `/metrics` until the next start).
    kept: BTreeMap<String, crate::metrics::Registration>,
    revoke_timeout: Duration,
}

/// Whose a run was when it ended, for how its error is logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Run {
    /// Still this member's: an error stopped the pipeline here.
    Assigned,
    /// Revoked or lost: the group had already given the pipeline to another member.
    HandedOver,
}

impl Supervisor {
    async fn start(&mut self, name: &str) {
        if self
            .running
            .get(name)
            .is_some_and(|s| !s.task.is_finished())
        {
            return;
        }
        if let Some(old) = self.running.remove(name) {
            self.settle(name, old.task.await, Run::Assigned);
        }
        if let Some(old) = self.draining.remove(name) {
            tracing::info!(pipeline = %name, "cluster: waiting for the previous run to end before starting it again");
            self.settle(name, old.await, Run::HandedOver);
        }
        // Its series come back with the new run's registration.
        self.kept.remove(name);
        let Some(cfg) = self.configs.get(name).cloned() else {
            tracing::warn!(pipeline = %name, "cluster: assigned a pipeline this instance has no file for; holding it without running it");
            return;
        };
        let (stop, rx) = watch::channel(false);
        let no_commit: Arc<std::sync::atomic::AtomicBool> = Arc::default();
        let (dir, lag, options, guard) = (
            self.directory.clone(),
            self.lag,
            self.options,
            no_commit.clone(),
        );
        let span = tracing::info_span!("pipeline", pipeline = %name);
        let task = tokio::spawn(
            async move {
                tracing::info!(delivery = %cfg.delivery, "cluster: starting the assigned pipeline");
                run_pipeline(cfg, rx, options, &dir, lag, guard).await
            }
            .instrument(span),
        );
        self.running.insert(
            name.to_string(),
            Slot {
                stop,
                no_commit,
                task,
                assigned_at: Instant::now(),
                streamed: false,
            },
        );
    }

    /// Stops revoked pipelines, all at once; returns when they ended or `revoke_timeout`
    /// passed (the rest go on draining).
    async fn stop(&mut self, names: &[String], lost: bool) {
        let mut stopping = Vec::new();
        for name in names {
            let Some(slot) = self.running.remove(name) else {
                continue;
            };
            if lost {
                slot.no_commit
                    .store(true, std::sync::atomic::Ordering::SeqCst);
            }
            let _ = slot.stop.send(true);
            stopping.push((name.clone(), slot.task));
        }
        let deadline = tokio::time::Instant::now() + self.revoke_timeout;
        for (name, mut task) in stopping {
            match tokio::time::timeout_at(deadline, &mut task).await {
                Ok(joined) => {
                    let joined = joined.map(|mut end| {
                        // The refused commit is how a lost pipeline is meant to stop.
                        if lost
                            && matches!(&end.result, Err(e) if e.kind() == ErrorKind::Unfinished)
                        {
                            end.result = Ok(());
                        }
                        end
                    });
                    self.settle(&name, joined, Run::HandedOver);
                    // Handed over: its series (a growing lag, `stopped`) belong to the new
                    // owner now, not here.
                    self.kept.remove(&name);
                    tracing::info!(pipeline = %name, lost, "cluster: revoked pipeline stopped");
                }
                Err(_) => {
                    tracing::warn!(pipeline = %name, "cluster: revoked pipeline still stopping after cluster.revoke_timeout_ms");
                    self.draining.insert(name, task);
                }
            }
        }
    }

    /// Logs how a run ended and keeps its series.
    fn settle(
        &mut self,
        name: &str,
        joined: std::result::Result<PipelineEnd, tokio::task::JoinError>,
        run: Run,
    ) {
        let end = match joined {
            Ok(end) => end,
            Err(e) => {
                tracing::error!(pipeline = %name, error = %e, "cluster: the pipeline's task ended abnormally");
                return;
            }
        };
        if let Some(r) = end.registration {
            self.kept.insert(name.to_string(), r);
        }
        match end.result {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::Fenced => tracing::warn!(
                pipeline = %name,
                "{e}; in cluster mode this means another member runs it now: this instance \
                 stopped it and goes on"
            ),
            // Taken away by the group while it failed (a lost assignment often comes with a
            // broken Kafka or database link): the new owner resumes from the committed offset;
            // nothing for an operator here.
            Err(e) if run == Run::HandedOver => tracing::warn!(
                pipeline = %name,
                kind = %e.kind(),
                "{e}; the run ended so while being handed over to another member, which \
                 resumes from the committed offset"
            ),
            Err(e) => tracing::error!(
                pipeline = %name,
                kind = %e.kind(),
                "{e}; this pipeline stopped, the process and its other pipelines go on"
            ),
        }
    }

    /// Notes pipelines that reached streaming (their start time) and runs that ended.
    async fn tick(&mut self) {
        let ended: Vec<String> = self
            .running
            .iter()
            .filter(|(_, s)| s.task.is_finished())
            .map(|(n, _)| n.clone())
            .collect();
        for (name, slot) in self.running.iter_mut() {
            if slot.streamed {
                continue;
            }
            // A snapshot counts as started: it is the pipeline at work.
            let streaming = self
                .directory
                .get(name)
                .is_some_and(|h| matches!(h.ops.status().state, "streaming" | "snapshotting"));
            if streaming {
                slot.streamed = true;
                let took = slot.assigned_at.elapsed();
                self.metrics.started(name, took);
                tracing::info!(pipeline = %name, took_ms = took.as_millis() as u64, "cluster: assigned pipeline streaming");
            }
        }
        for name in ended {
            if let Some(slot) = self.running.remove(&name) {
                // Finished: the result is ready at once.
                let joined = slot.task.await;
                self.settle(&name, joined, Run::Assigned);
            }
        }
    }
}

/// Runs the pipelines of `process` this instance is assigned by the group of `cluster`,
/// until a shutdown signal.
pub async fn run_cluster(
    process: Process,
    cluster: ClusterConfig,
    shutdown: watch::Receiver<bool>,
    options: RunOptions,
) -> Result<()> {
    let Some((_, first)) = process.pipelines.first() else {
        return Err(Error::definite(
            "cluster: the process file lists no pipeline",
        ));
    };
    crate::mysql::query::set_timeout(first.source.query_timeout());
    let base = client_config(first);
    let api_cfg = process.settings.api.clone();
    let directory = crate::api::Pipelines::new();
    let (api_stop, api_stop_rx) = watch::channel(false);
    let api = serve_api(&api_cfg, &directory, api_stop_rx).await?;
    let clock = requested_on(&shutdown, ShutdownClock::new(shutdown_timeout(&process)));
    let names: Vec<String> = process
        .pipelines
        .iter()
        .map(|(_, c)| c.name.clone())
        .collect();
    let topics: Vec<String> = names
        .iter()
        .map(|n| assignment_topic(&cluster.group, n))
        .collect();
    // The topics must exist before the group can assign them.
    let mut backoff = Duration::from_millis(500);
    loop {
        match crate::cluster::ensure_assignment_topics(&base, &topics).await {
            Ok(()) => break,
            Err(e) if e.kind() == ErrorKind::Transient => {
                tracing::warn!(error = %e, retry_in = ?backoff, "cluster: retrying");
                let mut sd = shutdown.clone();
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = sd.wait_for(|s| *s) => return Ok(()),
                }
                backoff = (backoff * 2).min(Duration::from_secs(10));
            }
            Err(e) => return Err(e),
        }
    }
    let metrics = ClusterMetrics::register(crate::metrics::registry(), &names)
        .map_err(|e| Error::definite(format!("cluster: cannot register its metrics: {e}")))?;
    let (tx, mut decisions) = tokio::sync::mpsc::unbounded_channel();
    let member = Member::join(&base, &cluster, topics, tx)?;
    tracing::info!(group = %cluster.group, pipelines = ?names, "cluster: joined the group; waiting for assignments");
    {
        let (view, dir, group, names) = (
            member.view.clone(),
            directory.clone(),
            cluster.group.clone(),
            names.clone(),
        );
        directory.set_cluster_view(Arc::new(move || {
            let v = view.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let pipelines: Vec<_> = names
                .iter()
                .map(|n| {
                    let state = dir
                        .get(n)
                        .filter(|_| v.assigned.contains(n))
                        .map(|h| h.ops.status().state);
                    json!({ "name": n, "assigned": v.assigned.contains(n), "state": state })
                })
                .collect();
            json!({
                "group": group,
                "client_id": v.client_id,
                "assigned": v.assigned,
                "rebalances": v.rebalances,
                "pipelines": pipelines,
            })
        }));
    }
    let mut sup = Supervisor {
        configs: process
            .pipelines
            .into_iter()
            .map(|(_, c)| (c.name.clone(), c))
            .collect(),
        options,
        directory: directory.clone(),
        lag: api_cfg.ready_max_lag_seconds,
        metrics,
        running: BTreeMap::new(),
        draining: BTreeMap::new(),
        kept: BTreeMap::new(),
        revoke_timeout: cluster.revoke_timeout(),
    };
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    let mut sd = shutdown.clone();
    loop {
        tokio::select! {
            d = decisions.recv() => match d {
                Some(Decision::Assigned(list)) => {
                    for n in list {
                        sup.metrics.set_assigned(&n, true);
                        sup.start(&n).await;
                    }
                }
                Some(Decision::Revoked { names, lost, done }) => {
                    for n in &names {
                        sup.metrics.set_assigned(n, false);
                    }
                    sup.stop(&names, lost).await;
                    let _ = done.send(());
                }
                None => break,
            },
            _ = sd.wait_for(|s| *s) => break,
            _ = tick.tick() => sup.tick().await,
        }
    }
    // Shutdown: every pipeline ends at a transaction boundary, then the member leaves the
    // group (its pipelines move at once).
    let stopping: Vec<(String, Slot)> = std::mem::take(&mut sup.running).into_iter().collect();
    for (_, slot) in &stopping {
        let _ = slot.stop.send(true);
    }
    let mut unfinished = None;
    for (name, slot) in stopping {
        let joined = slot.task.await;
        if let Ok(PipelineEnd { result: Err(e), .. }) = &joined {
            if e.kind() == ErrorKind::Unfinished {
                unfinished = Some(Error::unfinished(e.to_string()));
            }
        }
        sup.settle(&name, joined, Run::Assigned);
    }
    for (name, task) in std::mem::take(&mut sup.draining) {
        let joined = task.await;
        sup.settle(&name, joined, Run::HandedOver);
    }
    // No one answers revocations any more: closing the channel makes the leave's own
    // revocation callback return at once instead of waiting `revoke_timeout_ms` for an
    // answer (every pipeline has stopped already).
    drop(decisions);
    let _ = tokio::task::spawn_blocking(move || member.leave()).await;
    let _ = api_stop.send(true);
    if let Some(api) = api {
        api.join(clock.cut(API_SHUTDOWN_GRACE)).await;
    }
    match unfinished {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
