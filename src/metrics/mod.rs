//! The metrics of a pipeline (`GET /metrics`, Prometheus text format) and its status
//! (`GET /status`, `GET /readyz`).
//!
//! Every metric is declared once, in [`CATALOGUE`] (`catalogue.rs`): name, type, unit, labels
//! and help. A pipeline's [`Metrics`] are built from it for the pipeline's name, which every
//! series carries as its `pipeline` label; the README's catalogue is the same table, and a
//! test checks that a running sluice exports each one. The process has one registry
//! ([`registry`], what `GET /metrics` renders): each pipeline registers its metrics there when
//! it starts ([`Metrics::register`]) and they leave it when the pipeline is removed (the
//! [`Registration`] dropped), so several pipelines render side by side, one series each.
//!
//! Label values are bounded: the pipeline's name, a table name (`db.table`, the included
//! tables only), an op (`c`, `u`, `d`, `r`), a result, an error kind, a state, a GTID source (a
//! MariaDB domain id or a MySQL server uuid: one per server that ever wrote to the source).
//! Never a position, a GTID or a key.
//!
//! The series dashboards and alerts rely on are created at start, at zero: every state, both
//! transaction results, every error kind, and each included table × op (see
//! [`Metrics::register_tables`]), so a fresh or quiet pipeline still exports them.
//!
//! The hot path does not touch this module per row: the sink counts rows per table and op in
//! its open transaction and adds them here when it commits (so `sluice_events_written_total`
//! equals what a `read_committed` consumer reads), and updates the read position at most every
//! [`READ_POSITION_EVERY`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{
    Encoder, Gauge, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec,
    Opts, Registry, TextEncoder,
};

use crate::position::SourcePosition;
use crate::snapshot::progress::SnapshotProgress;

mod catalogue;
mod status;

pub use catalogue::{
    catalogue_markdown, doc_of, Kind, MetricDoc, CATALOGUE, ERROR_KINDS, OPS, PIPELINE,
    PROCESS_METRICS, STATES,
};
use status::StatusInner;
pub use status::{LastError, Status};

/// How often at most the sink copies the read position into the metrics.
pub const READ_POSITION_EVERY: Duration = Duration::from_millis(100);

/// The process's registry: what `GET /metrics` renders. It holds the process collector
/// (`process_*`, one per process, without a `pipeline` label) and the metrics of every
/// pipeline registered in it. A process-wide accessor is right here: the registry is the
/// process's scrape target, not any pipeline's state; each pipeline's series live in its own
/// [`Metrics`], passed to whatever updates them.
pub fn registry() -> &'static Registry {
    static REGISTRY: LazyLock<Registry> = LazyLock::new(|| {
        let registry = Registry::new();
        #[cfg(target_os = "linux")]
        {
            let p = prometheus::process_collector::ProcessCollector::for_self();
            if let Err(e) = registry.register(Box::new(p)) {
                tracing::warn!(error = %e, "the process metrics cannot be registered");
            }
        }
        registry
    });
    &REGISTRY
}

/// The Prometheus text exposition of every series in `registry`.
pub fn render(registry: &Registry) -> String {
    let mut out = Vec::with_capacity(16 * 1024);
    if let Err(e) = TextEncoder::new().encode(&registry.gather(), &mut out) {
        tracing::warn!(error = %e, "encoding the metrics failed");
    }
    String::from_utf8(out).unwrap_or_default()
}

/// The metrics of one pipeline: every series of the catalogue, labelled with the pipeline's
/// name, and the figures of its status.
pub struct Metrics {
    /// The pipeline's `name`: the value of every series' `pipeline` label.
    pipeline: String,
    build_info: IntGaugeVec,
    pipeline_state: IntGaugeVec,
    events_read: IntCounterVec,
    events_written: IntCounterVec,
    written_bytes: IntCounter,
    dead_letter: IntCounterVec,
    read_file_index: IntGauge,
    read_offset: IntGauge,
    committed_file_index: IntGauge,
    committed_offset: IntGauge,
    read_gtid: IntGaugeVec,
    committed_gtid: IntGaugeVec,
    lag: LagGauge,
    commit_lag: Histogram,
    transactions: IntCounterVec,
    commit_markers: IntCounterVec,
    commit_duration: Histogram,
    transaction_events: Histogram,
    last_commit: Gauge,
    snapshot_scanned: IntGaugeVec,
    snapshot_estimated: IntGaugeVec,
    snapshot_chunks_done: IntGaugeVec,
    snapshot_chunks_total: IntGaugeVec,
    snapshot_running: IntGaugeVec,
    retention_headroom: Gauge,
    binlog_expire: Gauge,
    reconnects: IntCounter,
    errors: IntCounterVec,
    /// `snapshot.chunk_size`, for the expected chunks of a table.
    chunk_size: AtomicU64,
    status: Mutex<StatusInner>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("pipeline", &self.pipeline)
            .finish_non_exhaustive()
    }
}

/// A pipeline's metrics registered in a registry; dropping it (the pipeline is removed) takes
/// them out again, leaving the other pipelines' series.
#[derive(Debug)]
pub struct Registration {
    metrics: Arc<Metrics>,
    registry: Registry,
}

impl Registration {
    /// The registered metrics, for everything of the pipeline that updates or reads them.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.metrics.unregister_from(&self.registry);
    }
}

/// `sluice_lag_seconds`, computed when collected: now minus the source commit time of the
/// committed offset (0 before one), so every scrape sees the lag of that moment.
#[derive(Clone)]
struct LagGauge {
    gauge: Gauge,
    /// Source commit time (ms since the epoch) of the committed offset, 0 before the first.
    committed_ts_ms: Arc<AtomicU64>,
}

impl LagGauge {
    fn seconds(&self) -> f64 {
        let ts = self.committed_ts_ms.load(Ordering::Relaxed);
        if ts == 0 {
            return 0.0;
        }
        crate::model::clock::now_ms().saturating_sub(ts) as f64 / 1000.0
    }
}

impl Collector for LagGauge {
    fn desc(&self) -> Vec<&Desc> {
        self.gauge.desc()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        self.gauge.set(self.seconds());
        self.gauge.collect()
    }
}

/// The options of catalogue metric `name` for `pipeline`: its help, and the pipeline's name as
/// the constant `pipeline` label.
fn opts(name: &str, pipeline: &str) -> Opts {
    let d = doc_of(name).unwrap_or_else(|| panic!("metric {name} is not in the catalogue"));
    Opts::new(d.name, d.help).const_label(PIPELINE, pipeline)
}

/// The labels of catalogue metric `name` that vary by series: all but `pipeline`, which is
/// constant for a pipeline's metrics.
fn variable_labels(name: &str) -> Vec<&'static str> {
    doc_of(name)
        .map(|d| d.labels)
        .unwrap_or(&[])
        .iter()
        .copied()
        .filter(|l| *l != PIPELINE)
        .collect()
}

/// Buckets of a duration in seconds, 1 ms to 10 min.
fn seconds_buckets() -> Vec<f64> {
    vec![
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
        120.0, 300.0, 600.0,
    ]
}

impl Metrics {
    /// The metrics of the pipeline named `pipeline`, in no registry yet (see
    /// [`Metrics::register`]); on their own they count for a test or a tool that renders
    /// nothing.
    // The catalogue is a constant checked by the tests: a construction failure here is a
    // programming error found by the first test run, not a data-path condition.
    #[allow(clippy::expect_used)]
    pub fn new(pipeline: &str) -> Self {
        let ivec = |n: &str| {
            IntGaugeVec::new(opts(n, pipeline), &variable_labels(n)).expect("valid gauge")
        };
        let cvec = |n: &str| {
            IntCounterVec::new(opts(n, pipeline), &variable_labels(n)).expect("valid counter")
        };
        let igauge = |n: &str| IntGauge::with_opts(opts(n, pipeline)).expect("valid gauge");
        let gauge = |n: &str| Gauge::with_opts(opts(n, pipeline)).expect("valid gauge");
        let counter = |n: &str| IntCounter::with_opts(opts(n, pipeline)).expect("valid counter");
        let hist = |n: &str, buckets: Vec<f64>| {
            Histogram::with_opts(HistogramOpts::from(opts(n, pipeline)).buckets(buckets))
                .expect("valid histogram")
        };
        let m = Metrics {
            pipeline: pipeline.to_string(),
            build_info: ivec("sluice_build_info"),
            pipeline_state: ivec("sluice_pipeline_state"),
            events_read: cvec("sluice_events_read_total"),
            events_written: cvec("sluice_events_written_total"),
            written_bytes: counter("sluice_written_bytes_total"),
            dead_letter: cvec("sluice_dead_letter_records_total"),
            read_file_index: igauge("sluice_read_binlog_file_index"),
            read_offset: igauge("sluice_read_binlog_offset"),
            committed_file_index: igauge("sluice_committed_binlog_file_index"),
            committed_offset: igauge("sluice_committed_binlog_offset"),
            read_gtid: ivec("sluice_read_gtid_sequence"),
            committed_gtid: ivec("sluice_committed_gtid_sequence"),
            lag: LagGauge {
                gauge: gauge("sluice_lag_seconds"),
                committed_ts_ms: Arc::new(AtomicU64::new(0)),
            },
            commit_lag: hist("sluice_commit_lag_seconds", seconds_buckets()),
            transactions: cvec("sluice_transactions_total"),
            commit_markers: cvec("sluice_commit_markers_total"),
            commit_duration: hist(
                "sluice_transaction_commit_duration_seconds",
                seconds_buckets(),
            ),
            transaction_events: hist(
                "sluice_transaction_events",
                prometheus::exponential_buckets(1.0, 4.0, 11).expect("valid buckets"),
            ),
            last_commit: gauge("sluice_last_commit_timestamp_seconds"),
            snapshot_scanned: ivec("sluice_snapshot_rows_scanned"),
            snapshot_estimated: ivec("sluice_snapshot_rows_estimated"),
            snapshot_chunks_done: ivec("sluice_snapshot_chunks_done"),
            snapshot_chunks_total: ivec("sluice_snapshot_chunks_expected"),
            snapshot_running: ivec("sluice_snapshot_running"),
            retention_headroom: gauge("sluice_binlog_retention_headroom_seconds"),
            binlog_expire: gauge("sluice_binlog_expire_seconds"),
            reconnects: counter("sluice_reconnects_total"),
            errors: cvec("sluice_errors_total"),
            chunk_size: AtomicU64::new(8192),
            status: Mutex::new(StatusInner::default()),
        };
        m.build_info
            .with_label_values(&[env!("CARGO_PKG_VERSION")])
            .set(1);
        for s in STATES {
            m.pipeline_state
                .with_label_values(&[s])
                .set(i64::from(*s == "starting"));
        }
        for r in ["committed", "aborted"] {
            m.transactions.with_label_values(&[r]);
        }
        for r in ["verified", "unverified"] {
            m.commit_markers.with_label_values(&[r]);
        }
        for k in ERROR_KINDS {
            m.errors.with_label_values(&[k]);
        }
        m.retention_headroom.set(f64::INFINITY);
        m
    }

    /// The metrics of the pipeline named `pipeline`, registered in `registry` until the
    /// returned [`Registration`] is dropped. Fails when `registry` holds the metrics of a
    /// pipeline of that name already (nothing is registered then).
    pub fn register(
        pipeline: &str,
        registry: &Registry,
    ) -> Result<Registration, prometheus::Error> {
        let metrics = Arc::new(Metrics::new(pipeline));
        let collectors = metrics.collectors();
        for (i, c) in collectors.into_iter().enumerate() {
            if let Err(e) = registry.register(c) {
                for done in metrics.collectors().into_iter().take(i) {
                    let _ = registry.unregister(done);
                }
                return Err(e);
            }
        }
        Ok(Registration {
            metrics,
            registry: registry.clone(),
        })
    }

    /// Takes this pipeline's series out of `registry`.
    fn unregister_from(&self, registry: &Registry) {
        for c in self.collectors() {
            if let Err(e) = registry.unregister(c) {
                tracing::debug!(pipeline = %self.pipeline, error = %e, "unregistering a metric");
            }
        }
    }

    /// Every collector of the pipeline (one per catalogue metric).
    fn collectors(&self) -> Vec<Box<dyn Collector>> {
        vec![
            Box::new(self.build_info.clone()),
            Box::new(self.pipeline_state.clone()),
            Box::new(self.events_read.clone()),
            Box::new(self.events_written.clone()),
            Box::new(self.written_bytes.clone()),
            Box::new(self.dead_letter.clone()),
            Box::new(self.read_file_index.clone()),
            Box::new(self.read_offset.clone()),
            Box::new(self.committed_file_index.clone()),
            Box::new(self.committed_offset.clone()),
            Box::new(self.read_gtid.clone()),
            Box::new(self.committed_gtid.clone()),
            Box::new(self.lag.clone()),
            Box::new(self.commit_lag.clone()),
            Box::new(self.transactions.clone()),
            Box::new(self.commit_markers.clone()),
            Box::new(self.commit_duration.clone()),
            Box::new(self.transaction_events.clone()),
            Box::new(self.last_commit.clone()),
            Box::new(self.snapshot_scanned.clone()),
            Box::new(self.snapshot_estimated.clone()),
            Box::new(self.snapshot_chunks_done.clone()),
            Box::new(self.snapshot_chunks_total.clone()),
            Box::new(self.snapshot_running.clone()),
            Box::new(self.retention_headroom.clone()),
            Box::new(self.binlog_expire.clone()),
            Box::new(self.reconnects.clone()),
            Box::new(self.errors.clone()),
        ]
    }

    /// The pipeline's name (the `pipeline` label of its series).
    pub fn pipeline(&self) -> &str {
        &self.pipeline
    }

    /// Creates the per-table series at zero for `tables` (`db.table`): every op of the event
    /// counters, the dead-letter counter and the snapshot gauges (a table never snapshotted
    /// shows 0 rows, 0 chunks, not running), so dashboards have data and an `increase()`
    /// alert sees the first dead letter. Series that exist keep their values.
    pub fn register_tables<'a>(&self, tables: impl IntoIterator<Item = &'a str>) {
        for t in tables {
            for op in OPS {
                self.events_read.with_label_values(&[t, op]);
                self.events_written.with_label_values(&[t, op]);
            }
            self.dead_letter.with_label_values(&[t]);
            for g in [
                &self.snapshot_scanned,
                &self.snapshot_estimated,
                &self.snapshot_chunks_done,
                &self.snapshot_chunks_total,
                &self.snapshot_running,
            ] {
                g.with_label_values(&[t]);
            }
        }
    }

    /// `snapshot.chunk_size`, which the expected chunks per table are computed with.
    pub fn set_chunk_size(&self, rows: u64) {
        self.chunk_size.store(rows.max(1), Ordering::Relaxed);
    }

    /// The pipeline entered `state` (one of [`STATES`]).
    pub fn set_state(&self, state: &str) {
        for s in STATES {
            self.pipeline_state
                .with_label_values(&[s])
                .set(i64::from(*s == state));
        }
        if let Ok(mut st) = self.status.lock() {
            st.state = STATES
                .iter()
                .find(|s| **s == state)
                .copied()
                .unwrap_or("starting");
        }
    }

    /// A commit says whether a snapshot is in progress: `snapshotting` or `streaming`, unless
    /// the pipeline is in another state (paused, stopping).
    pub fn streaming_state(&self, state: &str) {
        let now = self.state();
        if now != state && matches!(now, "streaming" | "snapshotting") {
            self.set_state(state);
        }
    }

    /// The current state (one of [`STATES`]).
    pub fn state(&self) -> &'static str {
        self.status.lock().map(|s| s.state).unwrap_or("starting")
    }

    /// `n` rows of `table` (`db.table`) with `op` were handed to the sink.
    pub fn add_read(&self, table: &str, op: &str, n: u64) {
        self.events_read.with_label_values(&[table, op]).inc_by(n);
    }

    /// A Kafka transaction committed: its counted records per table and op, its bytes, its
    /// duration, and the checkpoint it committed.
    pub fn committed(&self, c: &CommitStats<'_>) {
        for ((table, op), n) in c.written {
            self.events_written
                .with_label_values(&[table.as_str(), op])
                .inc_by(*n);
        }
        for (table, n) in c.dead_letters {
            self.dead_letter
                .with_label_values(&[table.as_str()])
                .inc_by(*n);
        }
        self.written_bytes.inc_by(c.bytes);
        self.transactions.with_label_values(&["committed"]).inc();
        self.commit_duration.observe(c.duration.as_secs_f64());
        self.transaction_events.observe(c.records as f64);
        let now_ms = crate::model::clock::now_ms();
        self.last_commit.set(now_ms as f64 / 1000.0);
        if c.source_ts_ms > 0 {
            self.lag
                .committed_ts_ms
                .store(c.source_ts_ms, Ordering::Relaxed);
            self.commit_lag
                .observe(now_ms.saturating_sub(c.source_ts_ms) as f64 / 1000.0);
        }
        set_position(
            c.position,
            &self.committed_file_index,
            &self.committed_offset,
            &self.committed_gtid,
        );
        if let Some(p) = c.snapshot {
            self.snapshot_progress(p);
        }
        if let Ok(mut st) = self.status.lock() {
            st.committed = Some(c.position.clone());
            st.committed_at_ms = now_ms;
            st.committed_source_ts_ms = c.source_ts_ms;
            if let Some(p) = c.snapshot {
                st.snapshot = Some(p.clone());
            }
        }
    }

    /// After a commit: partitions whose commit marker was seen, and those another producer's
    /// open transaction made unverifiable.
    pub fn markers_checked(&self, verified: usize, unverified: usize) {
        let add = |r: &str, n: usize| {
            if n > 0 {
                self.commit_markers.with_label_values(&[r]).inc_by(n as u64);
            }
        };
        add("verified", verified);
        add("unverified", unverified);
    }

    /// A Kafka transaction was aborted.
    pub fn aborted(&self) {
        self.transactions.with_label_values(&["aborted"]).inc();
    }

    /// The committed offset read at start (before anything new is committed).
    pub fn resumed_from(&self, position: Option<&SourcePosition>, source_ts_ms: u64) {
        if let Some(p) = position {
            set_position(
                p,
                &self.committed_file_index,
                &self.committed_offset,
                &self.committed_gtid,
            );
            self.read_position(p);
        }
        if source_ts_ms > 0 {
            self.lag
                .committed_ts_ms
                .store(source_ts_ms, Ordering::Relaxed);
        }
        if let Ok(mut st) = self.status.lock() {
            st.committed = position.cloned();
            st.committed_source_ts_ms = source_ts_ms;
        }
    }

    /// The source handed the sink a transaction boundary at `position`.
    pub fn read_position(&self, position: &SourcePosition) {
        set_position(
            position,
            &self.read_file_index,
            &self.read_offset,
            &self.read_gtid,
        );
        if let Ok(mut st) = self.status.lock() {
            st.read = Some(position.clone());
        }
    }

    /// Copies a snapshot's committed progress into the per-table gauges.
    pub fn snapshot_progress(&self, p: &SnapshotProgress) {
        let chunk = self.chunk_size.load(Ordering::Relaxed).max(1);
        for t in &p.tables {
            let name = format!("{}.{}", t.db, t.table);
            let expected = if t.done {
                t.chunks
            } else {
                t.chunks.max(t.estimate.max(t.rows).div_ceil(chunk))
            };
            let label = [name.as_str()];
            self.snapshot_scanned
                .with_label_values(&label)
                .set(t.rows as i64);
            self.snapshot_estimated
                .with_label_values(&label)
                .set(t.estimate as i64);
            self.snapshot_chunks_done
                .with_label_values(&label)
                .set(t.chunks as i64);
            self.snapshot_chunks_total
                .with_label_values(&label)
                .set(expected as i64);
            self.snapshot_running
                .with_label_values(&label)
                .set(i64::from(!t.done));
        }
    }

    /// The server's binlog expiry (`None`: never) and the headroom of the committed position.
    pub fn retention(&self, expire: Option<Duration>, headroom_secs: Option<f64>) {
        self.binlog_expire
            .set(expire.map(|d| d.as_secs_f64()).unwrap_or(0.0));
        self.retention_headroom
            .set(headroom_secs.unwrap_or(f64::INFINITY));
    }

    /// An attempt ended with an error of `kind` (`transient`, `definite` or `fenced`), and the
    /// operator-facing message.
    pub fn error(&self, kind: &str, message: &str) {
        self.errors.with_label_values(&[kind]).inc();
        if let Ok(mut st) = self.status.lock() {
            st.last_error = Some(LastError {
                kind: kind.to_string(),
                message: message.to_string(),
                at_ms: crate::model::clock::now_ms(),
            });
        }
    }

    /// The source restarts from the committed offset after a transient error.
    pub fn reconnect(&self) {
        self.reconnects.inc();
    }

    /// The binlog file number of the committed offset (when it has a file position) and its
    /// source commit time (ms since the epoch, 0 before one).
    pub fn committed_file_and_ts(&self) -> (Option<u64>, u64) {
        let file = self.status.lock().ok().and_then(|s| {
            s.committed.as_ref().and_then(|p| match p {
                SourcePosition::FilePos(fp) => fp.file_index(),
                SourcePosition::MysqlGtid { file_pos, .. }
                | SourcePosition::MariadbGtid { file_pos, .. } => {
                    file_pos.as_ref().and_then(|f| f.file_index())
                }
            })
        });
        (file, self.lag.committed_ts_ms.load(Ordering::Relaxed))
    }

    /// Seconds between now and the source commit time of the committed offset (0 before one).
    pub fn lag_seconds(&self) -> f64 {
        self.lag.seconds()
    }

    /// What `GET /status` shows.
    pub fn status(&self) -> Status {
        let st = self.status.lock().map(|s| s.clone()).unwrap_or_default();
        Status {
            state: st.state,
            read_position: st.read.as_ref().map(|p| p.to_string()),
            committed_position: st.committed.as_ref().map(|p| p.to_string()),
            committed_at_ms: (st.committed_at_ms > 0).then_some(st.committed_at_ms),
            committed_source_ts_ms: (st.committed_source_ts_ms > 0)
                .then_some(st.committed_source_ts_ms),
            lag_seconds: self.lag_seconds(),
            binlog_retention_headroom_seconds: Some(self.retention_headroom.get())
                .filter(|v| v.is_finite()),
            snapshot: st.snapshot,
            last_error: st.last_error,
        }
    }
}

fn set_position(p: &SourcePosition, file: &IntGauge, offset: &IntGauge, gtid: &IntGaugeVec) {
    let fp = match p {
        SourcePosition::FilePos(fp) => Some(fp),
        SourcePosition::MysqlGtid { gtid_set, file_pos } => {
            for (uuid, tag, gno) in gtid_set.last_gnos() {
                let id = match tag {
                    Some(t) => format!("{uuid}:{t}"),
                    None => uuid.to_string(),
                };
                gtid.with_label_values(&[id.as_str()]).set(gno as i64);
            }
            file_pos.as_ref()
        }
        SourcePosition::MariadbGtid {
            gtid_list,
            file_pos,
        } => {
            for g in gtid_list.iter() {
                gtid.with_label_values(&[g.domain_id.to_string().as_str()])
                    .set(g.seq_no as i64);
            }
            file_pos.as_ref()
        }
    };
    if let Some(fp) = fp {
        if let Some(i) = fp.file_index() {
            file.set(i as i64);
        }
        offset.set(fp.pos as i64);
    }
}

/// The counts of one committed Kafka transaction.
pub struct CommitStats<'a> {
    /// Records written per (`db.table`, op).
    pub written: &'a [((String, &'static str), u64)],
    /// Records sent to the dead-letter topic per `db.table`.
    pub dead_letters: &'a [(String, u64)],
    /// All records of the transaction (data and dead-letter).
    pub records: u64,
    /// Their key and value bytes.
    pub bytes: u64,
    /// Offset write + commit.
    pub duration: Duration,
    /// The committed position.
    pub position: &'a SourcePosition,
    /// Its source commit time, ms since the epoch (0: unknown).
    pub source_ts_ms: u64,
    /// The snapshot progress committed with it.
    pub snapshot: Option<&'a SnapshotProgress>,
}

#[cfg(test)]
mod tests;
