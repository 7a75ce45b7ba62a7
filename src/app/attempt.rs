//! One attempt: the sink thread started (fencing, the committed state read), the source
//! connected at the committed offset, and the stream run until shutdown, a pause or an error.

use crate::capture::seed;
use crate::capture::{self, SkipSet, SourceSettings};
use crate::config::route::Router;
use crate::config::{Config, OnPurged};
use crate::error::{Error, ErrorKind, Result};
use crate::metrics;
use crate::mysql::preflight;
use crate::mysql::server;
use crate::position::StartSpec;
use crate::shutdown::{self, ShutdownClock};
use crate::sink::{self, SinkStats};
use crate::snapshot::adhoc::Inbox;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tracing::Instrument;

use super::settings::{client_config, sink_settings, RunOptions};

/// What every attempt of a run shares.
pub(super) struct Running<'a> {
    pub(super) cfg: &'a Config,
    pub(super) router: &'a Arc<Router>,
    pub(super) start: &'a StartSpec,
    pub(super) skip: &'a SkipSet,
    pub(super) stats: &'a Arc<SinkStats>,
    pub(super) inbox: &'a Inbox,
    pub(super) ops: &'a crate::ops::Ops,
    /// The pipeline's metrics.
    pub(super) metrics: &'a Arc<metrics::Metrics>,
    pub(super) options: RunOptions,
    pub(super) clock: &'a ShutdownClock,
    /// The run's shutdown signal (the attempt's stop signal also turns on a pause).
    pub(super) shutdown: &'a watch::Receiver<bool>,
    /// The attempt's start-up steps, timed.
    pub(super) timeline: &'a crate::startup::Timeline,
}

impl Running<'_> {
    /// Waits for the sink thread to end; after a shutdown, at most until the budget's
    /// `abort_by` (then the thread is left to die with the process; see [`shutdown`]).
    pub(super) async fn join(&self, thread: std::thread::JoinHandle<Result<()>>) -> Result<()> {
        let doing = "the Kafka sink's last transaction";
        shutdown::bounded(self.clock, self.shutdown, doing, join_sink(thread)).await
    }
}

pub(super) async fn attempt(run: &Running<'_>, shutdown: watch::Receiver<bool>) -> Result<()> {
    let Running {
        cfg,
        router,
        start,
        skip,
        stats,
        inbox,
        ops,
        metrics,
        options,
        clock,
        shutdown: _,
        timeline,
    } = *run;
    let (tx, rx) = crate::pipeline::change_channel(cfg.source.channel_max_bytes);
    let mut settings = sink_settings(cfg);
    settings.shutdown = clock.clone();
    settings.startup = timeline.clone();
    let sink::SinkHandle { thread, ready } = sink::start(
        settings,
        rx,
        stats.clone(),
        metrics.clone(),
        tokio::runtime::Handle::current(),
    );
    // The source connects while the sink fences and reads: neither waits on the other's
    // round trips (a TLS handshake with the source takes tens of milliseconds).
    let connect = server::ConnectOptions::from_config(&cfg.source);
    let early = tokio::spawn(
        connect_source(connect.clone(), timeline.clone()).instrument(tracing::Span::current()),
    );
    let early = AbortOnDrop(early);
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
        metrics.resumed_from(Some(&r.position), r.source_ts_ms);
        if let Some(p) = &r.snapshot {
            metrics.snapshot_progress(p);
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
        let (mut conn, info, stream) = early.join().await??;
        let t0 = std::time::Instant::now();
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
        let position = committed.as_ref().map(|r| &r.position);
        let mut resume = resume_point(&mut conn, &info, router, position, start).await?;
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
        timeline.record("source: start resolved", t0);
        match &committed {
            Some(r) => tracing::info!(position = %r.position, "resuming from the committed offset"),
            None => tracing::info!(start = %start, "no committed offset; starting at source.start"),
        }
        tracing::info!(
            after_ms = timeline.elapsed().as_millis() as u64,
            steps = %timeline.summary(),
            "started: requesting the binlog stream"
        );
        let tables = table_infos(&resume.defs, router);
        metrics.register_tables(tables.iter().map(|t| t.table.as_str()));
        ops.set_tables(tables);
        let snapshotting = resume.snapshot.as_ref().is_some_and(|p| !p.done());
        metrics.set_state(if snapshotting {
            "snapshotting"
        } else {
            "streaming"
        });
        let settings = source_settings(cfg, connect, router, Some(inbox.clone()));
        // The stream runs on its own replication connection.
        drop(conn);
        capture::run(
            &settings,
            &info,
            resume,
            tx,
            skip.clone(),
            shutdown,
            Some(stream),
        )
        .await
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

/// The source stage's settings from the configuration (`adhoc`: where ad-hoc snapshot
/// requests come from, if anywhere).
pub(super) fn source_settings(
    cfg: &Config,
    connect: server::ConnectOptions,
    router: &Arc<Router>,
    adhoc: Option<Inbox>,
) -> SourceSettings {
    SourceSettings {
        connect,
        server_id: cfg.source.server_id,
        heartbeat: cfg.source.heartbeat(),
        router: router.clone(),
        snapshot: cfg.snapshot.clone(),
        adhoc,
        max_event_bytes: cfg.source.max_event_bytes,
    }
}

/// Where the stream starts: after the committed `position`, or (none) at `start`, with the
/// included tables' definitions there and, for `initial` and `snapshot_only`, the snapshot's
/// plan.
pub(super) async fn resume_point(
    conn: &mut mysql_async::Conn,
    info: &server::ServerInfo,
    router: &Arc<Router>,
    position: Option<&crate::position::SourcePosition>,
    start: &StartSpec,
) -> Result<capture::ResumePoint> {
    Ok(match (position, start) {
        // A new pipeline at "now": the included tables' definitions at that position.
        (None, StartSpec::Latest) => seed::latest_with_defs(conn, info, router).await?,
        // The same, and a snapshot of the tables read while streaming from there.
        (None, StartSpec::Initial | StartSpec::SnapshotOnly) => {
            let mut r = seed::latest_with_defs(conn, info, router).await?;
            let then_stop = matches!(start, StartSpec::SnapshotOnly);
            r.snapshot = Some(seed::plan_snapshot(conn, router, then_stop).await?);
            r
        }
        _ => capture::resolve_start(conn, info, position, start).await?,
    })
}

/// Connects to the source twice at once: the connection the start is resolved on (its
/// version and settings read; logs whether it is encrypted) and the replication connection
/// the stream will run on.
pub(super) async fn connect_source(
    connect: server::ConnectOptions,
    timeline: crate::startup::Timeline,
) -> Result<(
    mysql_async::Conn,
    server::ServerInfo,
    crate::mysql::replication::Replication,
)> {
    let t0 = std::time::Instant::now();
    let queries = async {
        let mut conn = crate::mysql::session::connect(&connect).await?;
        let info = server::server_info(&mut conn).await?;
        Ok::<_, Error>((conn, info))
    };
    let (queries, stream) = tokio::join!(
        queries,
        crate::mysql::replication::Replication::connect(&connect)
    );
    let (mut conn, info) = queries?;
    let stream = stream?;
    match server::tls_status(&mut conn).await {
        Ok(Some(tls)) => {
            tracing::info!(ssl_mode = %connect.ssl_mode, %tls, "connected to the source over TLS")
        }
        Ok(None) => {
            tracing::info!(ssl_mode = %connect.ssl_mode, "connected to the source in plaintext (no TLS)")
        }
        Err(e) => tracing::warn!(error = %e, "cannot read the source connection's TLS status"),
    }
    timeline.record("source: connected", t0);
    Ok((conn, info, stream))
}

/// A spawned task that is aborted when this is dropped (an attempt that ends before it uses
/// the task's result).
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> AbortOnDrop<T> {
    /// The task's result.
    async fn join(mut self) -> Result<T> {
        (&mut self.0)
            .await
            .map_err(|e| Error::transient(format!("connecting to the source: {e}")))
    }
}

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
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
        own_topics: [cfg.schema_changes_topic(), cfg.dlq_topic()]
            .into_iter()
            .chain(
                cfg.transaction_metadata
                    .enabled
                    .then(|| cfg.transaction_topic()),
            )
            .chain(cfg.heartbeat.enabled().then(|| cfg.heartbeat_topic()))
            .collect(),
        skip: vec![cfg.offsets_topic(), cfg.schema_history_topic()],
        timeout: Duration::from_secs(30),
    };
    let span = tracing::Span::current();
    let found = tokio::task::spawn_blocking(move || span.in_scope(|| sink::past::evidence(&look)))
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

pub(super) async fn join_sink(thread: std::thread::JoinHandle<Result<()>>) -> Result<()> {
    tokio::task::spawn_blocking(move || thread.join())
        .await
        .map_err(|e| Error::definite(format!("sink join failed: {e}")))?
        .map_err(|_| Error::definite("the sink thread panicked"))?
}
