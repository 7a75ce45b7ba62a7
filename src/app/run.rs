//! A pipeline's run and its retry loop (`run_pipeline`), the single-pipeline entry points
//! (`run`, `run_with`) and what the process and cluster runners share with them (the API
//! listener, the shutdown clock, `PipelineEnd`).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tracing::Instrument;

use crate::capture::SkipSet;
use crate::config::route::Router;
use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};
use crate::metrics;
use crate::mysql::preflight as checks_verdict;
use crate::mysql::server;
use crate::retry::{AttemptHealth, Backoff, Decision};
use crate::shutdown::ShutdownClock;
use crate::sink::SinkStats;

use super::attempt::{attempt, Running};
use super::settings::{client_config, start_spec, RunOptions};

/// Runs the pipeline until a shutdown signal or a definite error.
///
/// Problems of the configuration alone stop at once. The preflight (source and Kafka reachable,
/// server settings, grants, positions) is the first step of the first attempt: a problem an
/// operator must fix stops (exit 1), a transient one (source unreachable, broker not up yet) is
/// retried like any failed attempt.
pub async fn run(cfg: Config, shutdown: watch::Receiver<bool>) -> Result<()> {
    run_with(cfg, shutdown, RunOptions::default()).await
}

/// [`run`] with options: one pipeline, with its own API (`[api]` of its file).
pub async fn run_with(
    cfg: Config,
    shutdown: watch::Receiver<bool>,
    options: RunOptions,
) -> Result<()> {
    crate::mysql::query::set_timeout(cfg.source.query_timeout());
    let directory = crate::api::Pipelines::new();
    let (api_stop, api_stop_rx) = watch::channel(false);
    let api = serve_api(&cfg.api, &directory, api_stop_rx).await?;
    // Requested with the shutdown signal: the API's last requests get what is left of
    // `shutdown_timeout_ms` after the pipeline stopped, never more.
    let clock = requested_on(&shutdown, ShutdownClock::new(cfg.shutdown_timeout()));
    let ready_max_lag = cfg.api.ready_max_lag_seconds;
    let end = run_pipeline(
        cfg,
        shutdown,
        options,
        &directory,
        ready_max_lag,
        Arc::default(),
    )
    .await;
    let _ = api_stop.send(true);
    if let Some(api) = api {
        api.join(clock.cut(API_SHUTDOWN_GRACE)).await;
    }
    drop(end.registration);
    end.result
}

/// Serves the API of `cfg` over the pipelines of `directory` (`None`: `api.enabled = false`).
pub(crate) async fn serve_api(
    cfg: &crate::config::ApiConfig,
    directory: &crate::api::Pipelines,
    stop: watch::Receiver<bool>,
) -> Result<Option<crate::api::ApiServer>> {
    if !cfg.enabled {
        tracing::info!("api disabled (api.enabled = false)");
        return Ok(None);
    }
    let state = crate::api::ApiState::new(
        directory.clone(),
        cfg.token().map(str::to_owned),
        metrics::registry().clone(),
    );
    Ok(Some(crate::api::serve(cfg, state, stop).await?))
}

/// How a pipeline's run ended, and its series: kept registered by a process that runs
/// several pipelines (a stopped pipeline stays visible in `/metrics`), dropped by a single
/// run.
pub(crate) struct PipelineEnd {
    /// The run's result.
    pub result: Result<()>,
    /// The pipeline's metrics registration (`None` when registering failed).
    pub registration: Option<metrics::Registration>,
}

/// Runs one pipeline until a shutdown signal or a definite error; its API handle is put in
/// `directory` (served by the caller's listener). The query timeout is the caller's to set.
/// Once `no_commit` is set, a stop commits nothing (cluster mode, assignment lost).
pub(crate) async fn run_pipeline(
    cfg: Config,
    shutdown: watch::Receiver<bool>,
    options: RunOptions,
    directory: &crate::api::Pipelines,
    ready_max_lag_seconds: f64,
    no_commit: Arc<std::sync::atomic::AtomicBool>,
) -> PipelineEnd {
    let prepared = match prepare(&cfg) {
        Ok(p) => p,
        Err(e) => {
            return PipelineEnd {
                result: Err(e),
                registration: None,
            }
        }
    };
    let (router, start, registration) = prepared;
    let m = registration.metrics().clone();
    // Table contexts register their tables' series through the router.
    let router = Arc::new(router.with_metrics(m.clone()));
    // Ad-hoc snapshot requests: the API holds the control, the stream the inbox. The control
    // lives as long as the run (with the API disabled too), so the inbox never sees its
    // senders gone while the pipeline runs.
    let (control, inbox) = crate::snapshot::adhoc::channel();
    let ops = crate::ops::Ops::new(&cfg, ready_max_lag_seconds, m.clone());
    m.set_chunk_size(cfg.snapshot.chunk_size as u64);
    directory.insert(
        &cfg.name,
        crate::api::PipelineHandle {
            ops: ops.clone(),
            control: control.clone(),
        },
    );
    let skip: SkipSet = SkipSet::default();
    let stats = Arc::new(SinkStats::default());
    // In the pipeline's span (`pipeline{pipeline=…}` in a process of several).
    let reporter = tokio::spawn(report(stats.clone()).in_current_span());
    let retention = tokio::spawn(
        crate::mysql::retention::watch(server::ConnectOptions::from_config(&cfg.source), m.clone())
            .in_current_span(),
    );
    // Fixed at the shutdown request: bounds the sink's waits and the joins below.
    let clock = requested_on(
        &shutdown,
        ShutdownClock::new(cfg.shutdown_timeout()).with_no_commit(no_commit),
    );
    let mut backoff = Backoff::from_config(&cfg.source);
    // The preflight passed once: later attempts go straight to the sink and the source.
    let mut checked = false;
    let result = loop {
        if ops.is_paused() {
            m.set_state("paused");
            tracing::info!(
                "paused: the source is stopped; POST /resume restarts it from the committed offset"
            );
            let mut paused = ops.paused_rx();
            let mut sd = shutdown.clone();
            tokio::select! {
                _ = paused.wait_for(|p| !*p) => {}
                _ = sd.wait_for(|s| *s) => break Ok(()),
            }
            tracing::info!("resumed");
            backoff.reset();
        }
        m.set_state("starting");
        let began = std::time::Instant::now();
        let timeline = crate::startup::Timeline::new();
        let commits_before = stats.txns_committed.load(Ordering::Relaxed);
        if !checked {
            let mut sd = shutdown.clone();
            let passed = tokio::select! {
                r = startup_checks(&cfg, &timeline) => r,
                _ = sd.wait_for(|s| *s) => break Ok(()),
            };
            match passed {
                Ok(()) => checked = true,
                Err(e) if e.kind() == ErrorKind::Transient => {
                    let health = AttemptHealth {
                        ran_for: began.elapsed(),
                        commits: 0,
                    };
                    match wait_to_retry(&cfg, &mut backoff, health, e, &shutdown, &ops, &m).await {
                        Ok(true) => continue,
                        Ok(false) => break Ok(()),
                        Err(e) => break Err(e),
                    }
                }
                Err(e) => break Err(e),
            }
        }
        let stop = attempt_stop(shutdown.clone(), ops.paused_rx());
        let run = Running {
            cfg: &cfg,
            router: &router,
            start: &start,
            skip: &skip,
            stats: &stats,
            inbox: &inbox,
            ops: &ops,
            metrics: &m,
            options,
            clock: &clock,
            shutdown: &shutdown,
            timeline: &timeline,
        };
        let res = attempt(&run, stop).await;
        if *shutdown.borrow() {
            break res;
        }
        if ops.is_paused() {
            // The attempt stopped for the pause (or failed meanwhile): a new one starts from
            // the committed offset on resume.
            if let Err(e) = res {
                if e.kind() != ErrorKind::Transient {
                    break Err(e);
                }
                tracing::warn!(error = %e, "the source stopped with an error while pausing");
            }
            continue;
        }
        match res {
            Ok(()) => break Ok(()),
            Err(e) if e.kind() == ErrorKind::Transient => {
                let health = AttemptHealth {
                    ran_for: began.elapsed(),
                    commits: stats
                        .txns_committed
                        .load(Ordering::Relaxed)
                        .saturating_sub(commits_before),
                };
                match wait_to_retry(&cfg, &mut backoff, health, e, &shutdown, &ops, &m).await {
                    Ok(true) => {}
                    Ok(false) => break Ok(()),
                    Err(e) => break Err(e),
                }
            }
            Err(e) => break Err(e),
        }
    };
    // Kafka's authorization errors do not name the principal; sluice's do.
    let identity =
        crate::sink::identity::KafkaIdentity::of_pipeline(&client_config(&cfg), &cfg.name);
    let result = result.map_err(|e| identity.name_in(e));
    match &result {
        Err(e) if e.kind() == ErrorKind::Fenced => {
            m.error("fenced", &e.to_string());
            m.set_state("fenced");
        }
        // Not an error of the pipeline: a shutdown that ran out of time (exit 4).
        Err(e) if e.kind() == ErrorKind::Unfinished => m.set_state("stopped"),
        Err(e) => {
            m.error("definite", &e.to_string());
            m.set_state("stopped");
        }
        Ok(()) => m.set_state("stopped"),
    }
    retention.abort();
    reporter.abort();
    log_stats(&stats);
    drop(control);
    PipelineEnd {
        result,
        registration: Some(registration),
    }
}

/// `clock`, requested (its budget fixed) when `shutdown` turns true.
pub(crate) fn requested_on(
    shutdown: &watch::Receiver<bool>,
    clock: ShutdownClock,
) -> ShutdownClock {
    tokio::spawn({
        let (clock, mut sd) = (clock.clone(), shutdown.clone());
        async move {
            if sd.wait_for(|s| *s).await.is_ok() {
                clock.request();
            }
        }
    });
    clock
}

/// What a pipeline needs before it runs, from its configuration alone: its router, start and
/// metrics registration. Problems here stop the pipeline at once.
fn prepare(cfg: &Config) -> Result<(Router, crate::position::StartSpec, metrics::Registration)> {
    let router = Router::new(cfg).map_err(|e| Error::definite(format!("configuration: {e}")))?;
    check_signal_table(cfg, &router)?;
    let start = start_spec(cfg)?;
    // The pipeline's series, in the process's registry (what `GET /metrics` renders) until
    // the registration is dropped.
    let registration = metrics::Metrics::register(&cfg.name, metrics::registry()).map_err(|e| {
        Error::definite(format!(
            "the metrics of pipeline {:?} cannot be registered ({e}): does this process run              a pipeline of that name already?",
            cfg.name
        ))
    })?;
    Ok((router, start, registration))
}

/// The preflight of `sluice run`: every check, then [`checks_verdict::verdict`].
async fn startup_checks(cfg: &Config, timeline: &crate::startup::Timeline) -> Result<()> {
    checks_verdict::verdict(&super::checks::preflight_timed(cfg, timeline).await?)
}

/// An attempt (or the preflight) failed with the transient error `e`: counts it, and waits
/// the backoff. `Ok(true)`: start the next attempt; `Ok(false)`: shutdown requested meanwhile;
/// `Err`: `source.max_reconnect_attempts` consecutive failures were retried already.
async fn wait_to_retry(
    cfg: &Config,
    backoff: &mut Backoff,
    health: AttemptHealth,
    e: Error,
    shutdown: &watch::Receiver<bool>,
    ops: &crate::ops::Ops,
    m: &metrics::Metrics,
) -> Result<bool> {
    m.error("transient", &e.to_string());
    let reset = health.healthy(cfg.source.reconnect_backoff_max()) && backoff.failures() > 0;
    let (delay, failures) = match backoff.on_failure(health) {
        Decision::Retry { delay, failures } => (delay, failures),
        Decision::GiveUp { failures } => {
            return Err(Error::definite(format!(
                "{e}; gave up: {failures} attempts in a row failed, more than \
                 `source.max_reconnect_attempts` = {} (an attempt that commits and runs for \
                 `source.reconnect_backoff_max_ms` resets the count; 0 retries for ever)",
                cfg.source.max_reconnect_attempts
            )))
        }
    };
    m.set_state("backoff");
    m.reconnect();
    tracing::warn!(error = %e, retry_in = ?delay, attempt = failures, after_healthy_attempt = reset, "transient error; reconnecting after a backoff, from the committed offset");
    let mut sd = shutdown.clone();
    let mut paused = ops.paused_rx();
    tokio::select! {
        _ = tokio::time::sleep(delay) => Ok(true),
        _ = sd.wait_for(|s| *s) => Ok(false),
        _ = paused.wait_for(|p| *p) => Ok(true),
    }
}

/// The signal table must be captured: its inserts are read from the binlog like any table's
/// (and written to its topic, as Debezium does with its signal table).
fn check_signal_table(cfg: &Config, router: &Router) -> Result<()> {
    let Some(name) = &cfg.snapshot.signal_table else {
        return Ok(());
    };
    let (db, table) = crate::snapshot::adhoc::parse_table_name(name)
        .map_err(|e| Error::definite(format!("snapshot.signal_table: {e}")))?;
    let captured =
        router.table_included(&db, &table) && matches!(router.route(&db, &table), Ok(Some(_)));
    if captured {
        Ok(())
    } else {
        Err(Error::definite(format!(
            "snapshot.signal_table = {name:?} is not captured by this pipeline: signals are read \
             from the binlog, so the table must be included (add it to source.include, and make \
             sure no source.exclude pattern or route drops it); its rows are written to its \
             topic like any table's"
        )))
    }
}

/// The stop signal of one attempt: shutdown, or a pause.
fn attempt_stop(
    mut shutdown: watch::Receiver<bool>,
    mut paused: watch::Receiver<bool>,
) -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        tokio::select! {
            _ = shutdown.wait_for(|s| *s) => {}
            _ = paused.wait_for(|p| *p) => {}
            // The attempt is over (its receiver dropped): nothing to stop.
            _ = tx.closed() => return,
        }
        let _ = tx.send(true);
    });
    rx
}

/// How long requests in progress on the API may take to finish once the pipeline stopped.
pub(crate) const API_SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

async fn report(stats: Arc<SinkStats>) {
    let mut tick = tokio::time::interval(Duration::from_secs(10));
    tick.tick().await;
    loop {
        tick.tick().await;
        log_stats(&stats);
    }
}

fn log_stats(stats: &SinkStats) {
    let txns = stats.txns_committed.load(Ordering::Relaxed);
    let micros = stats.commit_micros_total.load(Ordering::Relaxed);
    tracing::info!(
        records = stats.records_committed.load(Ordering::Relaxed),
        transactions = txns,
        aborted = stats.txns_aborted.load(Ordering::Relaxed),
        mean_commit_ms = if txns > 0 {
            micros as f64 / txns as f64 / 1000.0
        } else {
            0.0
        },
        "progress"
    );
}

/// The longest `shutdown_timeout_ms` of the pipelines of a process: the process's bound.
pub fn shutdown_timeout(process: &crate::config::process::Process) -> Duration {
    process
        .pipelines
        .iter()
        .map(|(_, c)| c.shutdown_timeout())
        .max()
        .unwrap_or(Duration::from_millis(
            crate::config::DEFAULT_SHUTDOWN_TIMEOUT_MS,
        ))
}
