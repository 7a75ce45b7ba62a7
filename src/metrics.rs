//! The metric catalogue (`GET /metrics`, Prometheus text format) and the pipeline's status
//! (`GET /status`, `GET /readyz`).
//!
//! Every metric is declared once, in [`CATALOGUE`]: name, type, unit, labels and help. The
//! registry is built from it, the README's catalogue is the same table, and a test checks that
//! a running sluice exports each one. Label values are bounded: a table name (`db.table`, the
//! included tables only), an op (`c`, `u`, `d`, `r`), a result, an error kind, a state, a GTID
//! source (a MariaDB domain id or a MySQL server uuid: one per server that ever wrote to the
//! source). Never a position, a GTID or a key.
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
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use prometheus::core::Collector;
use prometheus::{
    Encoder, Gauge, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec,
    Opts, Registry, TextEncoder,
};
use serde::Serialize;

use crate::position::SourcePosition;
use crate::snapshot::progress::SnapshotProgress;

/// How often at most the sink copies the read position into the metrics.
pub const READ_POSITION_EVERY: Duration = Duration::from_millis(100);

/// What kind of series a metric is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up (`…_total`).
    Counter,
    /// Any value.
    Gauge,
    /// Observations in buckets (`…_bucket`, `…_sum`, `…_count`).
    Histogram,
}

impl Kind {
    /// As Prometheus names it in `# TYPE`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// One entry of the catalogue.
#[derive(Debug, Clone, Copy)]
pub struct MetricDoc {
    /// Full name.
    pub name: &'static str,
    /// Counter, gauge or histogram.
    pub kind: Kind,
    /// Unit of the value (`seconds`, `bytes`, `rows`, ...; `1` for a pure number or flag).
    pub unit: &'static str,
    /// Label names.
    pub labels: &'static [&'static str],
    /// What it measures (the `# HELP` text).
    pub help: &'static str,
}

const fn doc(
    name: &'static str,
    kind: Kind,
    unit: &'static str,
    labels: &'static [&'static str],
    help: &'static str,
) -> MetricDoc {
    MetricDoc {
        name,
        kind,
        unit,
        labels,
        help,
    }
}

use Kind::{Counter, Gauge as G, Histogram as H};

/// The pipeline states of `sluice_pipeline_state`.
pub const STATES: &[&str] = &[
    "starting",
    "snapshotting",
    "streaming",
    "paused",
    "backoff",
    "stopped",
    "fenced",
];

/// The ops of the table counters: insert, update, delete, snapshot read.
pub const OPS: &[&str] = &["c", "u", "d", "r"];

/// The error kinds of `sluice_errors_total`.
pub const ERROR_KINDS: &[&str] = &["transient", "definite", "fenced"];

/// Every metric sluice exports, besides the standard `process_*` ones of
/// [`PROCESS_METRICS`].
pub const CATALOGUE: &[MetricDoc] = &[
    doc("sluice_build_info", G, "1", &["version"],
        "Always 1; the version label names the running build."),
    doc("sluice_pipeline_state", G, "1", &["state"],
        "1 for the pipeline's current state, 0 for the others: starting (fencing, reading the committed offset, connecting), snapshotting (streaming while a snapshot is in progress), streaming, paused (POST /pause), backoff (waiting to restart after a transient error), stopped (a definite error), fenced (another instance took over)."),
    doc("sluice_events_read_total", Counter, "rows", &["table", "op"],
        "Row changes read from the source (binlog) and rows read by snapshots (op r), as handed to the sink."),
    doc("sluice_events_written_total", Counter, "records", &["table", "op"],
        "Records committed to data topics: what a read_committed consumer of the table's topic reads (tombstones not counted)."),
    doc("sluice_written_bytes_total", Counter, "bytes", &[],
        "Key and value bytes of committed data and dead-letter records."),
    doc("sluice_dead_letter_records_total", Counter, "records", &["table"],
        "Records committed to the dead-letter topic instead of their table's topic."),
    doc("sluice_read_binlog_file_index", G, "1", &[],
        "Number of the binlog file read so far (the suffix of mysql-bin.000042), at the last transaction boundary handed to the sink."),
    doc("sluice_read_binlog_offset", G, "bytes", &[],
        "Byte offset in that binlog file."),
    doc("sluice_committed_binlog_file_index", G, "1", &[],
        "Number of the binlog file of the committed offset."),
    doc("sluice_committed_binlog_offset", G, "bytes", &[],
        "Byte offset of the committed offset in its binlog file."),
    doc("sluice_read_gtid_sequence", G, "1", &["source_id"],
        "Highest GTID sequence number read per source (MariaDB: the domain id; MySQL: the server uuid)."),
    doc("sluice_committed_gtid_sequence", G, "1", &["source_id"],
        "Highest GTID sequence number of the committed offset per source."),
    doc("sluice_lag_seconds", G, "seconds", &[],
        "Now minus the source commit time of the last committed transaction. Heartbeats move it when the source is idle, so a quiet caught-up pipeline stays near source.heartbeat_ms + commit.idle_offset_ms."),
    doc("sluice_commit_lag_seconds", H, "seconds", &[],
        "Per committed Kafka transaction: commit time minus the source commit time of its last source transaction."),
    doc("sluice_transactions_total", Counter, "transactions", &["result"],
        "Kafka transactions (batches with delivery = at-least-once) by result: committed or aborted."),
    doc("sluice_transaction_commit_duration_seconds", H, "seconds", &[],
        "Writing the offset record and committing the Kafka transaction (flush included)."),
    doc("sluice_transaction_events", H, "records", &[],
        "Records per committed Kafka transaction (offset and schema records not counted)."),
    doc("sluice_last_commit_timestamp_seconds", G, "seconds", &[],
        "Unix time of the last Kafka commit."),
    doc("sluice_snapshot_rows_scanned", G, "rows", &["table"],
        "Rows read by the table's snapshot, as committed."),
    doc("sluice_snapshot_rows_estimated", G, "rows", &["table"],
        "The server's estimate of the table's rows when its snapshot began."),
    doc("sluice_snapshot_chunks_done", G, "chunks", &["table"],
        "Chunks of the table's snapshot committed."),
    doc("sluice_snapshot_chunks_expected", G, "chunks", &["table"],
        "Chunks expected for the table (from the estimate; grows when the table does)."),
    doc("sluice_snapshot_running", G, "1", &["table"],
        "1 while the table's snapshot is planned or in progress, 0 once done."),
    doc("sluice_binlog_retention_headroom_seconds", G, "seconds", &[],
        "Lower bound of the time until the server may purge the binlog file holding the committed position: its expiry minus the lag (the file was written to no earlier than the committed transaction); negative once it may or did. +Inf when the server never expires binlogs."),
    doc("sluice_binlog_expire_seconds", G, "seconds", &[],
        "The server's binlog expiry (binlog_expire_logs_seconds, or expire_logs_days); 0 means never."),
    doc("sluice_reconnects_total", Counter, "restarts", &[],
        "Restarts from the committed offset after a transient error."),
    doc("sluice_errors_total", Counter, "errors", &["kind"],
        "Errors that ended an attempt, by kind: transient (retried), definite (stops), fenced (another instance took over)."),
];

/// The standard process metrics also exported (Linux).
pub const PROCESS_METRICS: &[&str] = &[
    "process_cpu_seconds_total",
    "process_resident_memory_bytes",
    "process_open_fds",
    "process_max_fds",
    "process_start_time_seconds",
];

/// The catalogue entry of `name`.
pub fn doc_of(name: &str) -> Option<&'static MetricDoc> {
    CATALOGUE.iter().find(|d| d.name == name)
}

/// The catalogue as a Markdown table (for the README).
pub fn catalogue_markdown() -> String {
    let mut out =
        String::from("| metric | type | unit | labels | meaning |\n|---|---|---|---|---|\n");
    for d in CATALOGUE {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            d.name,
            d.kind.as_str(),
            d.unit,
            if d.labels.is_empty() {
                "–".to_string()
            } else {
                d.labels.join(", ")
            },
            d.help
        ));
    }
    out
}

/// The registered metrics.
pub struct Metrics {
    registry: Registry,
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
    lag: Gauge,
    commit_lag: Histogram,
    transactions: IntCounterVec,
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
    /// Source commit time (ms since the epoch) of the committed offset, 0 before the first.
    committed_ts_ms: AtomicU64,
    /// `snapshot.chunk_size`, for the expected chunks of a table.
    chunk_size: AtomicU64,
    status: Mutex<StatusInner>,
}

/// The process-wide metrics.
pub fn global() -> &'static Metrics {
    static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);
    &METRICS
}

fn opts(name: &str) -> Opts {
    let d = doc_of(name).unwrap_or_else(|| panic!("metric {name} is not in the catalogue"));
    Opts::new(d.name, d.help)
}

fn labels(name: &str) -> &'static [&'static str] {
    doc_of(name).map(|d| d.labels).unwrap_or(&[])
}

fn hist(name: &str, buckets: Vec<f64>) -> Histogram {
    let o = opts(name);
    Histogram::with_opts(HistogramOpts::new(o.name, o.help).buckets(buckets))
        .expect("valid histogram")
}

/// Buckets of a duration in seconds, 1 ms to 10 min.
fn seconds_buckets() -> Vec<f64> {
    vec![
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
        120.0, 300.0, 600.0,
    ]
}

impl Metrics {
    // The catalogue is a constant checked by the tests: a registration failure here is a
    // programming error found by the first test run, not a data-path condition.
    #[allow(clippy::expect_used)]
    fn new() -> Self {
        let registry = Registry::new();
        let ivec = |n: &str| IntGaugeVec::new(opts(n), labels(n)).expect("valid gauge");
        let cvec = |n: &str| IntCounterVec::new(opts(n), labels(n)).expect("valid counter");
        let igauge = |n: &str| IntGauge::with_opts(opts(n)).expect("valid gauge");
        let gauge = |n: &str| Gauge::with_opts(opts(n)).expect("valid gauge");
        let m = Metrics {
            pipeline_state: ivec("sluice_pipeline_state"),
            events_read: cvec("sluice_events_read_total"),
            events_written: cvec("sluice_events_written_total"),
            written_bytes: IntCounter::with_opts(opts("sluice_written_bytes_total"))
                .expect("valid counter"),
            dead_letter: cvec("sluice_dead_letter_records_total"),
            read_file_index: igauge("sluice_read_binlog_file_index"),
            read_offset: igauge("sluice_read_binlog_offset"),
            committed_file_index: igauge("sluice_committed_binlog_file_index"),
            committed_offset: igauge("sluice_committed_binlog_offset"),
            read_gtid: ivec("sluice_read_gtid_sequence"),
            committed_gtid: ivec("sluice_committed_gtid_sequence"),
            lag: gauge("sluice_lag_seconds"),
            commit_lag: hist("sluice_commit_lag_seconds", seconds_buckets()),
            transactions: cvec("sluice_transactions_total"),
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
            reconnects: IntCounter::with_opts(opts("sluice_reconnects_total"))
                .expect("valid counter"),
            errors: cvec("sluice_errors_total"),
            committed_ts_ms: AtomicU64::new(0),
            chunk_size: AtomicU64::new(8192),
            status: Mutex::new(StatusInner::default()),
            registry,
        };
        let build = ivec("sluice_build_info");
        build.with_label_values(&[env!("CARGO_PKG_VERSION")]).set(1);
        let collectors: Vec<Box<dyn Collector>> = vec![
            Box::new(build),
            Box::new(m.pipeline_state.clone()),
            Box::new(m.events_read.clone()),
            Box::new(m.events_written.clone()),
            Box::new(m.written_bytes.clone()),
            Box::new(m.dead_letter.clone()),
            Box::new(m.read_file_index.clone()),
            Box::new(m.read_offset.clone()),
            Box::new(m.committed_file_index.clone()),
            Box::new(m.committed_offset.clone()),
            Box::new(m.read_gtid.clone()),
            Box::new(m.committed_gtid.clone()),
            Box::new(m.lag.clone()),
            Box::new(m.commit_lag.clone()),
            Box::new(m.transactions.clone()),
            Box::new(m.commit_duration.clone()),
            Box::new(m.transaction_events.clone()),
            Box::new(m.last_commit.clone()),
            Box::new(m.snapshot_scanned.clone()),
            Box::new(m.snapshot_estimated.clone()),
            Box::new(m.snapshot_chunks_done.clone()),
            Box::new(m.snapshot_chunks_total.clone()),
            Box::new(m.snapshot_running.clone()),
            Box::new(m.retention_headroom.clone()),
            Box::new(m.binlog_expire.clone()),
            Box::new(m.reconnects.clone()),
            Box::new(m.errors.clone()),
        ];
        for c in collectors {
            m.registry.register(c).expect("unique metric names");
        }
        #[cfg(target_os = "linux")]
        {
            let p = prometheus::process_collector::ProcessCollector::for_self();
            m.registry
                .register(Box::new(p))
                .expect("unique metric names");
        }
        for s in STATES {
            m.pipeline_state
                .with_label_values(&[s])
                .set(i64::from(*s == "starting"));
        }
        for r in ["committed", "aborted"] {
            m.transactions.with_label_values(&[r]);
        }
        for k in ERROR_KINDS {
            m.errors.with_label_values(&[k]);
        }
        m.retention_headroom.set(f64::INFINITY);
        m
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
            self.committed_ts_ms
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
            self.committed_ts_ms.store(source_ts_ms, Ordering::Relaxed);
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
        (file, self.committed_ts_ms.load(Ordering::Relaxed))
    }

    /// Seconds between now and the source commit time of the committed offset (0 before one).
    pub fn lag_seconds(&self) -> f64 {
        let ts = self.committed_ts_ms.load(Ordering::Relaxed);
        if ts == 0 {
            return 0.0;
        }
        crate::model::clock::now_ms().saturating_sub(ts) as f64 / 1000.0
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        self.lag.set(self.lag_seconds());
        let mut out = Vec::with_capacity(16 * 1024);
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            tracing::warn!(error = %e, "encoding the metrics failed");
        }
        String::from_utf8(out).unwrap_or_default()
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

#[derive(Debug, Clone)]
struct StatusInner {
    state: &'static str,
    read: Option<SourcePosition>,
    committed: Option<SourcePosition>,
    committed_at_ms: u64,
    committed_source_ts_ms: u64,
    snapshot: Option<SnapshotProgress>,
    last_error: Option<LastError>,
}

impl Default for StatusInner {
    fn default() -> Self {
        StatusInner {
            state: "starting",
            read: None,
            committed: None,
            committed_at_ms: 0,
            committed_source_ts_ms: 0,
            snapshot: None,
            last_error: None,
        }
    }
}

/// The last error that ended an attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LastError {
    /// `transient`, `definite` or `fenced`.
    pub kind: String,
    /// What happened and what to do.
    pub message: String,
    /// When, ms since the epoch.
    pub at_ms: u64,
}

/// The pipeline's status (`GET /status`).
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// One of [`STATES`].
    pub state: &'static str,
    /// The last transaction boundary the source handed to the sink (`gtid:…` / `file:…`).
    pub read_position: Option<String>,
    /// The committed offset: where a restart resumes.
    pub committed_position: Option<String>,
    /// When this instance last committed, ms since the epoch.
    pub committed_at_ms: Option<u64>,
    /// Source commit time of the committed offset, ms since the epoch.
    pub committed_source_ts_ms: Option<u64>,
    /// `sluice_lag_seconds`.
    pub lag_seconds: f64,
    /// `sluice_binlog_retention_headroom_seconds` (absent when the server never expires
    /// binlogs or it is not known yet).
    pub binlog_retention_headroom_seconds: Option<f64>,
    /// The snapshot progress last committed.
    pub snapshot: Option<SnapshotProgress>,
    /// The last error that ended an attempt.
    pub last_error: Option<LastError>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::position::FilePos;

    #[test]
    fn catalogue_names_follow_the_conventions() {
        let mut seen = std::collections::HashSet::new();
        for d in CATALOGUE {
            assert!(seen.insert(d.name), "{} twice", d.name);
            assert!(d.name.starts_with("sluice_"), "{}", d.name);
            match d.kind {
                Kind::Counter => assert!(d.name.ends_with("_total"), "{}", d.name),
                _ => assert!(!d.name.ends_with("_total"), "{}", d.name),
            }
            if d.unit == "seconds" || d.unit == "bytes" {
                assert!(
                    d.name.contains(&format!("_{}", d.unit)) || d.name.ends_with("_offset"),
                    "{} in {} should say so in its name",
                    d.name,
                    d.unit
                );
            }
            for l in d.labels {
                assert!(
                    [
                        "version",
                        "state",
                        "table",
                        "op",
                        "result",
                        "kind",
                        "source_id"
                    ]
                    .contains(l),
                    "{}: label {l} is not one of the bounded ones",
                    d.name
                );
            }
            assert!(d.help.len() > 20, "{} needs a real help text", d.name);
        }
    }

    #[test]
    fn every_catalogue_metric_is_exported_from_the_start() {
        let m = global();
        m.register_tables(["shop.orders"]);
        let text = m.render();
        for d in CATALOGUE {
            // GTID series exist once there is a source.
            if d.labels.contains(&"source_id") {
                continue;
            }
            assert!(
                text.contains(&format!("# TYPE {} {}", d.name, d.kind.as_str())),
                "{} missing from\n{text}",
                d.name
            );
        }
        for p in PROCESS_METRICS {
            assert!(text.contains(p), "{p} missing");
        }
        assert!(text.contains(r#"sluice_events_written_total{op="r",table="shop.orders"} 0"#));

        assert!(text.contains(r#"sluice_pipeline_state{state="fenced"} 0"#));
        assert!(text.contains(r#"sluice_transactions_total{result="aborted"} 0"#));
    }

    #[test]
    fn a_table_never_snapshotted_has_its_series_at_zero() {
        let m = Metrics::new();
        m.register_tables(["shop.orders"]);
        let text = m.render();
        let zero = [
            "sluice_dead_letter_records_total",
            "sluice_snapshot_rows_scanned",
            "sluice_snapshot_rows_estimated",
            "sluice_snapshot_chunks_done",
            "sluice_snapshot_chunks_expected",
            "sluice_snapshot_running",
        ];
        for name in zero {
            assert!(
                text.contains(&format!(r#"{name}{{table="shop.orders"}} 0"#)),
                "{name} of shop.orders at 0:\n{text}"
            );
        }
    }

    #[test]
    fn registering_again_keeps_the_values() {
        let m = Metrics::new();
        m.register_tables(["shop.orders"]);
        m.dead_letter.with_label_values(&["shop.orders"]).inc_by(3);
        m.snapshot_scanned
            .with_label_values(&["shop.orders"])
            .set(42);
        m.register_tables(["shop.orders"]);
        assert_eq!(m.dead_letter.with_label_values(&["shop.orders"]).get(), 3);
        assert_eq!(
            m.snapshot_scanned.with_label_values(&["shop.orders"]).get(),
            42
        );
    }

    #[test]
    fn positions_become_numbers() {
        let m = Metrics::new();
        let p = SourcePosition::MariadbGtid {
            gtid_list: "0-1-42,3-7-9".parse().expect("a MariaDB GTID list"),
            file_pos: None,
        };
        m.read_position(&p);
        assert_eq!(m.read_gtid.with_label_values(&["0"]).get(), 42);
        assert_eq!(m.read_gtid.with_label_values(&["3"]).get(), 9);
        let f = SourcePosition::FilePos(
            FilePos::new("mysql-bin.000012", 4711).expect("a file position"),
        );
        m.read_position(&f);
        assert_eq!(m.read_file_index.get(), 12);
        assert_eq!(m.read_offset.get(), 4711);
        let g = SourcePosition::MysqlGtid {
            gtid_set: "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77"
                .parse()
                .expect("a MySQL GTID set"),
            file_pos: None,
        };
        m.resumed_from(Some(&g), 1_000);
        assert_eq!(
            m.committed_gtid
                .with_label_values(&["3e11fa47-71ca-11e1-9e33-c80aa9429562"])
                .get(),
            77
        );
        assert!(m.lag_seconds() > 1_000_000.0, "ts 1000 ms is decades ago");
    }

    #[test]
    fn commits_count_what_was_written() {
        let m = Metrics::new();
        let pos =
            SourcePosition::FilePos(FilePos::new("bin.000003", 120).expect("a file position"));
        let written = [
            (("shop.orders".to_string(), "c"), 3u64),
            (("shop.orders".to_string(), "d"), 1),
        ];
        let dlq = [("shop.items".to_string(), 2u64)];
        let stats = CommitStats {
            written: &written,
            dead_letters: &dlq,
            records: 6,
            bytes: 600,
            duration: Duration::from_millis(12),
            position: &pos,
            source_ts_ms: crate::model::clock::now_ms() - 2_000,
            snapshot: None,
        };
        m.committed(&stats);
        m.committed(&stats);
        m.aborted();
        assert_eq!(
            m.events_written
                .with_label_values(&["shop.orders", "c"])
                .get(),
            6
        );
        assert_eq!(m.dead_letter.with_label_values(&["shop.items"]).get(), 4);
        assert_eq!(m.written_bytes.get(), 1200);
        assert_eq!(m.transactions.with_label_values(&["committed"]).get(), 2);
        assert_eq!(m.transactions.with_label_values(&["aborted"]).get(), 1);
        assert_eq!(m.commit_duration.get_sample_count(), 2);
        assert_eq!(m.transaction_events.get_sample_sum(), 12.0);
        assert_eq!(m.committed_file_index.get(), 3);
        let lag = m.lag_seconds();
        assert!((1.9..10.0).contains(&lag), "lag {lag}");
        let s = m.status();
        assert_eq!(s.committed_position.as_deref(), Some("file:bin.000003:120"));
    }

    #[test]
    fn states_are_exclusive() {
        let m = Metrics::new();
        m.set_state("paused");
        m.set_state("streaming");
        let on: Vec<_> = STATES
            .iter()
            .filter(|s| m.pipeline_state.with_label_values(&[s]).get() == 1)
            .collect();
        assert_eq!(on, vec![&"streaming"]);
        assert_eq!(m.state(), "streaming");
    }

    #[test]
    fn the_markdown_catalogue_lists_every_metric() {
        let md = catalogue_markdown();
        for d in CATALOGUE {
            assert!(md.contains(&format!("`{}`", d.name)));
        }
    }
}

#[cfg(test)]
mod readme {
    /// The README's metric catalogue is this module's, between its markers.
    #[test]
    fn readme_lists_the_catalogue() {
        let readme = include_str!("../README.md");
        let begin = "<!-- metrics:begin (generated from src/metrics.rs CATALOGUE) -->\n";
        let end = "<!-- metrics:end -->";
        let want = super::catalogue_markdown();
        let got = readme
            .split_once(begin)
            .and_then(|(_, rest)| rest.split_once(end))
            .map(|(table, _)| table);
        if let Ok(path) = std::env::var("SLUICE_WRITE_CATALOGUE") {
            std::fs::write(path, &want).expect("write the catalogue");
        }
        assert_eq!(
            got,
            Some(want.as_str()),
            "README.md's metric catalogue (between {begin:?} and {end:?}) is not CATALOGUE's; \
             run with SLUICE_WRITE_CATALOGUE=<file> to get the table"
        );
    }
}
