//! The metric catalogue: every metric sluice exports, with its type, unit, labels and help.
//! The registry is built from it ([`super::Metrics`]), and the README's table is
//! [`catalogue_markdown`].

/// The label every series of a pipeline carries: the pipeline's `name`.
pub const PIPELINE: &str = "pipeline";

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
    doc("sluice_build_info", G, "1", &[PIPELINE, "version"],
        "Always 1; the version label names the running build."),
    doc("sluice_pipeline_state", G, "1", &[PIPELINE, "state"],
        "1 for the pipeline's current state, 0 for the others: starting (fencing, reading the committed offset, connecting), snapshotting (streaming while a snapshot is in progress), streaming, paused (POST /pause), backoff (waiting to restart after a transient error), stopped (a definite error), fenced (another instance took over)."),
    doc("sluice_events_read_total", Counter, "rows", &[PIPELINE, "table", "op"],
        "Row changes read from the source (binlog) and rows read by snapshots (op r), as handed to the sink."),
    doc("sluice_events_written_total", Counter, "records", &[PIPELINE, "table", "op"],
        "Records committed to data topics: what a read_committed consumer of the table's topic reads (tombstones not counted)."),
    doc("sluice_written_bytes_total", Counter, "bytes", &[PIPELINE],
        "Key and value bytes of committed data and dead-letter records."),
    doc("sluice_dead_letter_records_total", Counter, "records", &[PIPELINE, "table"],
        "Records committed to the dead-letter topic instead of their table's topic."),
    doc("sluice_read_binlog_file_index", G, "1", &[PIPELINE],
        "Number of the binlog file read so far (the suffix of mysql-bin.000042), at the last transaction boundary handed to the sink."),
    doc("sluice_read_binlog_offset", G, "bytes", &[PIPELINE],
        "Byte offset in that binlog file."),
    doc("sluice_committed_binlog_file_index", G, "1", &[PIPELINE],
        "Number of the binlog file of the committed offset."),
    doc("sluice_committed_binlog_offset", G, "bytes", &[PIPELINE],
        "Byte offset of the committed offset in its binlog file."),
    doc("sluice_read_gtid_sequence", G, "1", &[PIPELINE, "source_id"],
        "Highest GTID sequence number read per source (MariaDB: the domain id; MySQL: the server uuid)."),
    doc("sluice_committed_gtid_sequence", G, "1", &[PIPELINE, "source_id"],
        "Highest GTID sequence number of the committed offset per source."),
    doc("sluice_lag_seconds", G, "seconds", &[PIPELINE],
        "Now minus the source commit time of the last committed transaction. Heartbeats move it when the source is idle, so a quiet caught-up pipeline stays near source.heartbeat_ms + commit.idle_offset_ms."),
    doc("sluice_commit_lag_seconds", H, "seconds", &[PIPELINE],
        "Per committed Kafka transaction: commit time minus the source commit time of its last source transaction."),
    doc("sluice_transactions_total", Counter, "transactions", &[PIPELINE, "result"],
        "Kafka transactions (batches with delivery = at-least-once) by result: committed or aborted."),
    doc("sluice_commit_markers_total", Counter, "partitions", &[PIPELINE, "result"],
        "After each exactly-once commit, per partition it wrote: verified when the partition's last stable offset passed its records (the commit marker is there), unverified when another producer's open transaction held it below them. A marker that does not come ends the attempt (errors_total{kind=\"transient\"}), and the next one settles the records."),
    doc("sluice_transaction_commit_duration_seconds", H, "seconds", &[PIPELINE],
        "Writing the offset record and committing the Kafka transaction (flush included)."),
    doc("sluice_transaction_events", H, "records", &[PIPELINE],
        "Records per committed Kafka transaction (offset and schema records not counted)."),
    doc("sluice_last_commit_timestamp_seconds", G, "seconds", &[PIPELINE],
        "Unix time of the last Kafka commit."),
    doc("sluice_snapshot_rows_scanned", G, "rows", &[PIPELINE, "table"],
        "Rows read by the table's snapshot, as committed."),
    doc("sluice_snapshot_rows_estimated", G, "rows", &[PIPELINE, "table"],
        "The server's estimate of the table's rows when its snapshot began."),
    doc("sluice_snapshot_chunks_done", G, "chunks", &[PIPELINE, "table"],
        "Chunks of the table's snapshot committed."),
    doc("sluice_snapshot_chunks_expected", G, "chunks", &[PIPELINE, "table"],
        "Chunks expected for the table (from the estimate; grows when the table does)."),
    doc("sluice_snapshot_running", G, "1", &[PIPELINE, "table"],
        "1 while the table's snapshot is planned or in progress, 0 once done."),
    doc("sluice_binlog_retention_headroom_seconds", G, "seconds", &[PIPELINE],
        "Lower bound of the time until the server may purge the binlog file holding the committed position: its expiry minus the lag (the file was written to no earlier than the committed transaction); negative once it may or did. +Inf when the server never expires binlogs."),
    doc("sluice_binlog_expire_seconds", G, "seconds", &[PIPELINE],
        "The server's binlog expiry (binlog_expire_logs_seconds, or expire_logs_days); 0 means never."),
    doc("sluice_reconnects_total", Counter, "restarts", &[PIPELINE],
        "Restarts from the committed offset after a transient error."),
    doc("sluice_errors_total", Counter, "errors", &[PIPELINE, "kind"],
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
