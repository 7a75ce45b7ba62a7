//! Wiring: connects the stages, owns shutdown, restarts after transient errors.
//!
//! One *attempt* = start the sink thread (fence, read committed offset) → connect the source
//! at that offset → stream until shutdown or error. A transient error ends the attempt: the
//! source drops its side of the channel, the sink aborts a half-written source transaction
//! (or commits one that ended at a boundary), and the next attempt starts again from the
//! committed offset after a capped exponential backoff. A definite or fenced error stops.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use rdkafka::config::ClientConfig;
use tokio::sync::watch;

use crate::capture::seed;
use crate::capture::{self, SkipSet, SourceSettings};
use crate::config::route::Router;
use crate::config::topics::{SHARED_OFFSETS_TOPIC, SHARED_SCHEMA_HISTORY_TOPIC};
use crate::config::{Config, OnPurged};
use crate::error::{Error, ErrorKind, Result};
use crate::metrics;
use crate::mysql::preflight;
use crate::mysql::server;
use crate::pipeline::CHANNEL_CAPACITY;
use crate::position::StartSpec;
use crate::retry::{AttemptHealth, Backoff, Decision};
use crate::shutdown::{self, ShutdownClock};
use crate::sink::topics::TopicSettings;
use crate::sink::{self, SinkSettings, SinkStats};
use crate::snapshot::adhoc::Inbox;

mod checks;
pub use checks::preflight;

/// The librdkafka client config shared by producer, consumer and admin client.
pub fn client_config(cfg: &Config) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", &cfg.kafka.bootstrap_servers);
    for (k, v) in &cfg.kafka.properties {
        c.set(k, v);
    }
    c
}

/// The sink settings derived from the configuration.
pub fn sink_settings(cfg: &Config) -> SinkSettings {
    SinkSettings {
        name: cfg.name.clone(),
        transactional_id: cfg.transactional_id(),
        delivery: cfg.delivery,
        offsets_topic: cfg.offsets_topic(),
        shared_offsets_topic: cfg
            .kafka
            .offsets_topic
            .is_none()
            .then(|| SHARED_OFFSETS_TOPIC.to_string()),
        shared_history_topic: (cfg.kafka.offsets_topic.is_none()
            && cfg.kafka.schema_history_topic.is_none())
        .then(|| SHARED_SCHEMA_HISTORY_TOPIC.to_string()),
        read_timeout: committed_read_timeout(cfg),
        schema_changes_topic: cfg.schema_changes_topic(),
        schema_history_topic: cfg.schema_history_topic(),
        commit_max_ms: cfg.commit.max_ms,
        commit_max_events: cfg.commit.max_events,
        idle_offset_ms: cfg.commit.idle_offset_ms,
        transaction_timeout_ms: cfg.kafka.transaction_timeout_ms,
        max_buffer_kbytes: cfg.kafka.max_buffer_kbytes,
        client: client_config(cfg),
        registry: cfg.routes_use_avro().then(|| cfg.schema_registry.clone()),
        dlq_topic: cfg.dlq_topic(),
        data_topic_patterns: Router::new(cfg)
            .map(|r| r.topic_patterns())
            .unwrap_or_else(|_| regex::RegexSet::empty()),
        bootstrap: cfg.kafka.bootstrap_servers.clone(),
        topics: TopicSettings {
            partitions: cfg.kafka.partitions,
            replication_factor: cfg.kafka.replication_factor,
            config: cfg.kafka.topic_config.clone(),
        },
        shutdown: ShutdownClock::new(cfg.shutdown_timeout()),
    }
}

/// How long reading the committed state after fencing waits for a foreign transaction that
/// holds the offsets topic's last stable offset back: `kafka.transaction_timeout_ms`, within
/// 10 to 60 s (a transaction of another sluice with the same setting ends within it), before
/// the attempt fails as transient and is retried.
pub fn committed_read_timeout(cfg: &Config) -> Duration {
    Duration::from_millis(cfg.kafka.transaction_timeout_ms.clamp(10_000, 60_000))
}

/// Parses `source.start`.
pub fn start_spec(cfg: &Config) -> Result<StartSpec> {
    cfg.source
        .start
        .parse()
        .map_err(|e| Error::definite(format!("`source.start`: {e}")))
}

/// How `sluice run` was asked to start.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunOptions {
    /// `--start-over`: with no committed offset, start at `source.start` even though the
    /// pipeline's past is visible (its schema history or records in its topics).
    pub start_over: bool,
}

/// Runs the pipeline until a shutdown signal or a definite error.
///
/// Problems of the configuration alone stop at once. The preflight (source and Kafka reachable,
/// server settings, grants, positions) is the first step of the first attempt: a problem an
/// operator must fix stops (exit 1), a transient one (source unreachable, broker not up yet) is
/// retried like any failed attempt.
pub async fn run(cfg: Config, shutdown: watch::Receiver<bool>) -> Result<()> {
    run_with(cfg, shutdown, RunOptions::default()).await
}

/// [`run`] with options.
pub async fn run_with(
    cfg: Config,
    shutdown: watch::Receiver<bool>,
    options: RunOptions,
) -> Result<()> {
    crate::mysql::query::set_timeout(cfg.source.query_timeout());
    let router =
        Arc::new(Router::new(&cfg).map_err(|e| Error::definite(format!("configuration: {e}")))?);
    check_signal_table(&cfg, &router)?;
    let start = start_spec(&cfg)?;
    // Ad-hoc snapshot requests: the API holds the control, the stream the inbox. The control
    // lives as long as the run (with the API disabled too), so the inbox never sees its
    // senders gone while the pipeline runs.
    let (control, inbox) = crate::snapshot::adhoc::channel();
    let ops = crate::ops::Ops::new(&cfg, cfg.api.ready_max_lag_seconds);
    metrics::global().set_chunk_size(cfg.snapshot.chunk_size as u64);
    // the stream takes requests from here (wired separately)
    let (api_stop, api_stop_rx) = watch::channel(false);
    let api = if cfg.api.enabled {
        let state = crate::api::ApiState::new(
            control.clone(),
            ops.clone(),
            cfg.api.token().map(str::to_owned),
        );
        Some(crate::api::serve(&cfg.api, state, api_stop_rx).await?)
    } else {
        tracing::info!("api disabled (api.enabled = false)");
        None
    };
    let skip: SkipSet = SkipSet::default();
    let stats = Arc::new(SinkStats::default());
    let reporter = tokio::spawn(report(stats.clone()));
    let retention = tokio::spawn(crate::mysql::retention::watch(
        server::ConnectOptions::from_config(&cfg.source),
    ));
    let m = metrics::global();
    // Fixed at the shutdown request: bounds the sink's waits and the joins below.
    let clock = ShutdownClock::new(cfg.shutdown_timeout());
    tokio::spawn({
        let (clock, mut sd) = (clock.clone(), shutdown.clone());
        async move {
            if sd.wait_for(|s| *s).await.is_ok() {
                clock.request();
            }
        }
    });
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
        let commits_before = stats.txns_committed.load(Ordering::Relaxed);
        if !checked {
            let mut sd = shutdown.clone();
            let passed = tokio::select! {
                r = startup_checks(&cfg) => r,
                _ = sd.wait_for(|s| *s) => break Ok(()),
            };
            match passed {
                Ok(()) => checked = true,
                Err(e) if e.kind() == ErrorKind::Transient => {
                    let health = AttemptHealth {
                        ran_for: began.elapsed(),
                        commits: 0,
                    };
                    match wait_to_retry(&cfg, &mut backoff, health, e, &shutdown, &ops).await {
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
            options,
            clock: &clock,
            shutdown: &shutdown,
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
                match wait_to_retry(&cfg, &mut backoff, health, e, &shutdown, &ops).await {
                    Ok(true) => {}
                    Ok(false) => break Ok(()),
                    Err(e) => break Err(e),
                }
            }
            Err(e) => break Err(e),
        }
    };
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
    let _ = api_stop.send(true);
    if let Some(api) = api {
        api.join(clock.cut(API_SHUTDOWN_GRACE)).await;
    }
    drop(control);
    result
}

/// The preflight of `sluice run`: every check, then [`preflight::verdict`].
async fn startup_checks(cfg: &Config) -> Result<()> {
    preflight::verdict(&preflight(cfg).await?)
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
) -> Result<bool> {
    let m = metrics::global();
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
const API_SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// What every attempt of a run shares.
struct Running<'a> {
    cfg: &'a Config,
    router: &'a Arc<Router>,
    start: &'a StartSpec,
    skip: &'a SkipSet,
    stats: &'a Arc<SinkStats>,
    inbox: &'a Inbox,
    ops: &'a crate::ops::Ops,
    options: RunOptions,
    clock: &'a ShutdownClock,
    /// The run's shutdown signal (the attempt's stop signal also turns on a pause).
    shutdown: &'a watch::Receiver<bool>,
}

impl Running<'_> {
    /// Waits for the sink thread to end; after a shutdown, at most until the budget's
    /// `abort_by` (then the thread is left to die with the process; see [`shutdown`]).
    async fn join(&self, thread: std::thread::JoinHandle<Result<()>>) -> Result<()> {
        let doing = "the Kafka sink's last transaction";
        shutdown::bounded(self.clock, self.shutdown, doing, join_sink(thread)).await
    }
}

async fn attempt(run: &Running<'_>, shutdown: watch::Receiver<bool>) -> Result<()> {
    let Running {
        cfg,
        router,
        start,
        skip,
        stats,
        inbox,
        ops,
        options,
        clock,
        shutdown: _,
    } = *run;
    let (tx, rx) = crate::channel::channel(CHANNEL_CAPACITY, cfg.source.channel_max_bytes);
    let mut settings = sink_settings(cfg);
    settings.shutdown = clock.clone();
    let sink::SinkHandle { thread, ready } = sink::start(
        settings,
        rx,
        stats.clone(),
        tokio::runtime::Handle::current(),
    );
    let opening = async { Ok(ready.await) };
    let doing = "starting the Kafka sink (fencing, reading the committed offset)";
    let (committed, history) = match shutdown::bounded(clock, run.shutdown, doing, opening).await? {
        Ok(Ok(c)) => (c.offset, c.history),
        Ok(Err(e)) => return Err(e),
        Err(_) => return run.join(thread).await,
    };
    if committed.is_none() {
        if let Err(e) = guard_lost_offsets(cfg, router, history.len(), options).await {
            // Nothing was produced: the sink ends without writing.
            drop(tx);
            let _ = run.join(thread).await;
            return Err(e);
        }
    }
    if let Some(r) = &committed {
        let m = metrics::global();
        m.resumed_from(Some(&r.position), r.source_ts_ms);
        if let Some(p) = &r.snapshot {
            m.snapshot_progress(p);
        }
    }
    if let Some(p) = committed.as_ref().and_then(|r| r.snapshot.as_ref()) {
        if p.then_stop && p.done() {
            tracing::info!(
                rows = p.total_rows(),
                "the snapshot (start = \"snapshot_only\") is complete; nothing left to do"
            );
            drop(tx);
            return run.join(thread).await;
        }
    }
    // The source stops at once on shutdown (or pause), wherever it is: connecting, resolving
    // the start, streaming. Dropping it drops `tx`, and the sink finishes as at any stop.
    let mut stop = shutdown.clone();
    let source = async {
        let connect = server::ConnectOptions::from_config(&cfg.source);
        let mut conn = server::connect(&connect).await?;
        let info = server::server_info(&mut conn).await?;
        match server::tls_status(&mut conn).await {
            Ok(Some(tls)) => {
                tracing::info!(ssl_mode = %connect.ssl_mode, %tls, "connected to the source over TLS")
            }
            Ok(None) => {
                tracing::info!(ssl_mode = %connect.ssl_mode, "connected to the source in plaintext (no TLS)")
            }
            Err(e) => tracing::warn!(error = %e, "cannot read the source connection's TLS status"),
        }
        // The committed position is gone from the server and the operator asked for a new
        // snapshot then: start over as a new pipeline would with start = "initial".
        let mut committed = committed.clone();
        let mut start = start;
        if let (Some(r), OnPurged::Resnapshot) = (&committed, cfg.snapshot.on_purged) {
            let item =
                preflight::check_position(&mut conn, &info, &r.position, "committed offset").await;
            if let Some(problem) = item.problem {
                tracing::warn!(position = %r.position, %problem, "the committed position was purged; taking a new snapshot (snapshot.on_purged = \"resnapshot\")");
                committed = None;
                start = &StartSpec::Initial;
            }
        }
        let mut resume = match (&committed, start) {
            // A new pipeline at "now": the included tables' definitions at that position.
            (None, StartSpec::Latest) => seed::latest_with_defs(&mut conn, &info, router).await?,
            // The same, and a snapshot of the tables read while streaming from there.
            (None, StartSpec::Initial | StartSpec::SnapshotOnly) => {
                let mut r = seed::latest_with_defs(&mut conn, &info, router).await?;
                let then_stop = matches!(start, StartSpec::SnapshotOnly);
                r.snapshot = Some(seed::plan_snapshot(&mut conn, router, then_stop).await?);
                r
            }
            _ => {
                capture::resolve_start(
                    &mut conn,
                    &info,
                    committed.as_ref().map(|r| &r.position),
                    start,
                )
                .await?
            }
        };
        if let Some(r) = &committed {
            resume.tracker.xa_prepared = r.xa_prepared.clone();
            resume.snapshot = r.snapshot.clone();
        }
        // The schema history committed with the offset: the shapes at that position.
        if committed.is_some() {
            for ((db, table), bytes) in &history {
                let def: crate::schema::tracked::TableDef =
                    serde_json::from_slice(bytes).map_err(|e| {
                        Error::definite(format!(
                            "the schema history record of {db}.{table} in `{}` is not a table \
                             definition sluice can read ({e}); was it written by a newer sluice?",
                            cfg.schema_history_topic()
                        ))
                    })?;
                resume.defs.push(def);
            }
        }
        match &committed {
            Some(r) => tracing::info!(position = %r.position, "resuming from the committed offset"),
            None => tracing::info!(start = %start, "no committed offset; starting at source.start"),
        }
        let tables = table_infos(&resume.defs, router);
        metrics::global().register_tables(tables.iter().map(|t| t.table.as_str()));
        ops.set_tables(tables);
        let snapshotting = resume.snapshot.as_ref().is_some_and(|p| !p.done());
        metrics::global().set_state(if snapshotting {
            "snapshotting"
        } else {
            "streaming"
        });
        let settings = SourceSettings {
            connect,
            server_id: cfg.source.server_id,
            heartbeat: cfg.source.heartbeat(),
            router: router.clone(),
            snapshot: cfg.snapshot.clone(),
            adhoc: Some(inbox.clone()),
            max_event_bytes: cfg.source.max_event_bytes,
        };
        // The stream runs on its own replication connection.
        drop(conn);
        capture::run(&settings, &info, resume, tx, skip.clone(), shutdown).await
    };
    let source_result = tokio::select! {
        biased;
        r = source => r,
        _ = stop.wait_for(|s| *s) => Ok(()),
    };
    let sink_result = run.join(thread).await;
    match (source_result, sink_result) {
        // A sink failure explains why the source stopped; fenced/definite win over transient.
        (Ok(()), s) => s,
        (Err(e), Ok(())) => Err(e),
        (Err(se), Err(ke)) => {
            if ke.kind() != ErrorKind::Transient {
                Err(ke)
            } else {
                Err(se)
            }
        }
    }
}

/// No committed offset: refuse to start at `source.start` when the pipeline's past is visible
/// (see [`sink::past`]), unless `--start-over` asked for it.
async fn guard_lost_offsets(
    cfg: &Config,
    router: &Router,
    history_entries: usize,
    options: RunOptions,
) -> Result<()> {
    let look = sink::past::Look {
        client: client_config(cfg),
        history: (cfg.schema_history_topic(), history_entries),
        patterns: router.topic_patterns(),
        own_topics: vec![cfg.schema_changes_topic(), cfg.dlq_topic()],
        skip: vec![cfg.offsets_topic(), cfg.schema_history_topic()],
        timeout: Duration::from_secs(30),
    };
    let found = tokio::task::spawn_blocking(move || sink::past::evidence(&look))
        .await
        .map_err(|e| Error::definite(format!("the lost-offsets check failed: {e}")))??;
    if found.is_empty() {
        return Ok(());
    }
    if options.start_over {
        tracing::warn!(found = %found.join("; "), start = %cfg.source.start, "no committed offset although the pipeline ran before; starting over at source.start (--start-over)");
        return Ok(());
    }
    Err(sink::past::refusal(
        &cfg.name,
        &cfg.offsets_topic(),
        &cfg.source.start,
        &found,
    ))
}

/// The included tables as `GET /tables` shows them.
fn table_infos(
    defs: &[crate::schema::tracked::TableDef],
    router: &Router,
) -> Vec<crate::ops::TableInfo> {
    let mut out: Vec<crate::ops::TableInfo> = defs
        .iter()
        .filter_map(|d| {
            let target = router.route(&d.db, &d.table).ok().flatten()?;
            let (key_columns, key_source) = if !target.key_columns.is_empty() {
                (target.key_columns.clone(), "route key_columns")
            } else if !d.primary_key.is_empty() {
                (d.primary_key.clone(), "primary key")
            } else {
                (Vec::new(), "none")
            };
            Some(crate::ops::TableInfo {
                table: format!("{}.{}", d.db, d.table),
                topic: target.topic,
                format: match target.format {
                    crate::config::Format::Json => "json",
                    crate::config::Format::Avro => "avro",
                }
                .to_string(),
                key_columns,
                key_source: key_source.to_string(),
            })
        })
        .collect();
    out.sort_by(|a, b| a.table.cmp(&b.table));
    out
}

async fn join_sink(thread: std::thread::JoinHandle<Result<()>>) -> Result<()> {
    tokio::task::spawn_blocking(move || thread.join())
        .await
        .map_err(|e| Error::definite(format!("sink join failed: {e}")))?
        .map_err(|_| Error::definite("the sink thread panicked"))?
}

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
