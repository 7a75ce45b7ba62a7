//! Several pipelines in one process (a process file, `crate::config::process`).
//!
//! Each pipeline runs exactly as a single `sluice run` would ([`run_pipeline`]): its own
//! source connection, transactional producer, offsets, snapshot, channels and librdkafka
//! buffers, its own retry loop. What the pipelines share holds no pipeline state: the
//! runtime, the API listener (one directory of pipelines, `/pipelines/{name}/…`) and the
//! metrics registry (every series labelled `pipeline`).
//!
//! One pipeline's end is that pipeline's: a definite error or a fence stops it and is logged
//! with its name; the process and the other pipelines go on (a fence never exits the process
//! here: exit 3 is the single-pipeline behaviour). A stopped pipeline stays in the API and
//! in `/metrics` with its state and last error. The process ends on a shutdown signal — or
//! when every pipeline stopped with an error, with exit 1, so a supervisor notices.

use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::Instrument;

use super::run::{requested_on, run_pipeline, serve_api, shutdown_timeout, API_SHUTDOWN_GRACE};
use super::settings::RunOptions;
use crate::config::process::Process;
use crate::error::{Error, ErrorKind, Result};
use crate::shutdown::ShutdownClock;

/// Runs every pipeline of `process` until a shutdown signal (or until all of them stopped).
pub async fn run_process(
    process: Process,
    shutdown: watch::Receiver<bool>,
    options: RunOptions,
) -> Result<()> {
    if let Some(cluster) = process.settings.cluster.clone() {
        return super::cluster::run_cluster(process, cluster, shutdown, options).await;
    }
    // One value for all (checked when the process file was loaded).
    if let Some((_, first)) = process.pipelines.first() {
        crate::mysql::query::set_timeout(first.source.query_timeout());
    }
    let api_cfg = &process.settings.api;
    let directory = crate::api::Pipelines::new();
    let (api_stop, api_stop_rx) = watch::channel(false);
    let api = serve_api(api_cfg, &directory, api_stop_rx).await?;
    let clock = requested_on(&shutdown, ShutdownClock::new(shutdown_timeout(&process)));
    let total = process.pipelines.len();
    tracing::info!(
        pipelines = total,
        names = ?process.pipelines.iter().map(|(_, c)| c.name.as_str()).collect::<Vec<_>>(),
        file = %process.file.display(),
        "starting the pipelines of the process file"
    );
    let mut running = JoinSet::new();
    for (file, cfg) in process.pipelines {
        let name = cfg.name.clone();
        let span = tracing::info_span!("pipeline", pipeline = %name);
        let (sd, dir) = (shutdown.clone(), directory.clone());
        let lag = api_cfg.ready_max_lag_seconds;
        running.spawn(
            async move {
                tracing::info!(file = %file.display(), delivery = %cfg.delivery, config = %cfg.redacted_json(), "starting");
                let end = run_pipeline(cfg, sd, options, &dir, lag, Default::default()).await;
                (name, end)
            }
            .instrument(span),
        );
    }
    // Registrations of stopped pipelines, kept until the process ends.
    let mut kept = Vec::new();
    let mut failed = Vec::new();
    let mut unfinished = None;
    while let Some(joined) = running.join_next().await {
        let (name, end) = match joined {
            Ok(v) => v,
            Err(e) => {
                // A panic in a pipeline's task (reported by the panic hook too).
                tracing::error!(error = %e, "a pipeline's task ended abnormally");
                failed.push(format!("(a pipeline): {e}"));
                continue;
            }
        };
        kept.extend(end.registration);
        match end.result {
            Ok(()) => tracing::info!(pipeline = %name, "pipeline stopped"),
            Err(e) if e.kind() == ErrorKind::Unfinished => {
                tracing::warn!(pipeline = %name, kind = %e.kind(), "{e}");
                unfinished = Some(e);
            }
            Err(e) => {
                tracing::error!(
                    pipeline = %name,
                    kind = %e.kind(),
                    "{e}; this pipeline stopped, the process and its other pipelines go on"
                );
                failed.push(format!("{name}: {e}"));
            }
        }
    }
    let _ = api_stop.send(true);
    if let Some(api) = api {
        api.join(clock.cut(API_SHUTDOWN_GRACE)).await;
    }
    drop(kept);
    if let Some(e) = unfinished {
        return Err(e);
    }
    if !*shutdown.borrow() && !failed.is_empty() && failed.len() == total {
        return Err(Error::definite(format!(
            "every pipeline of the process stopped with an error: {}",
            failed.join("; ")
        )));
    }
    Ok(())
}
