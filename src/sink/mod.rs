//! The transactional Kafka sink.
//!
//! ```text
//!  source ──Change──▶ [bounded channel] ──▶ sink thread
//!                                            │ begin_transaction (first change after a commit)
//!                                            │ produce rows of whole source transactions
//!                                            │ produce ONE offset record (position after the
//!                                            │   last source transaction in this Kafka txn)
//!                                            ▼ commit_transaction  ⇒ data + offset visible together
//! ```
//!
//! Invariants that make a crash at any point safe:
//! * `init_transactions` runs before the committed offset is read: it fences older instances
//!   and aborts whatever they left open, so the offset read is that of committed data only.
//! * A Kafka transaction is committed only at a source commit boundary (never while a source
//!   transaction is open), and it always carries the offset record of that boundary. Data and
//!   offset therefore become visible atomically, and a restart resumes exactly after it.
//! * Anything that goes wrong while a transaction is open ends in an abort (or, when fenced,
//!   in nothing at all) and a restart from the committed offset.
//!
//! All librdkafka calls run on this module's own OS thread, never on the async executor.

pub(crate) mod claim;
pub(crate) mod classify;
pub(crate) mod client_roles;
pub(crate) mod context_headers;
mod counts;
mod further_topics;
mod heartbeat;
pub(crate) mod identity;
mod interval;
pub(crate) mod login_watch;
pub(crate) mod native_produce;
pub mod offsets;
mod offsets_set;
mod open;
mod order;
pub(crate) mod past;
pub(crate) mod patient;
pub(crate) mod producer;
pub mod reader;
mod repair;
pub(crate) mod schema_ids;
mod schema_write;
pub(crate) mod seal;
mod settings;
mod settle;
mod shape;
mod start_readers;
mod state;
pub(crate) mod topics;
pub(crate) mod txn;
mod txn_metadata;
pub(crate) mod txn_tag;
pub(crate) mod unmarked;
mod wakeup;
pub(crate) mod written;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::producer::Producer;
use tokio::sync::oneshot;

use crate::config::Delivery;
use crate::config::Format;
use crate::encode::avro::AvroEncoder;
use crate::encode::change::{RowChange, RowPos};
use crate::encode::json::{JsonEncoder, Record};
use crate::error::{Error, ErrorKind, Result};
use crate::metrics;
use crate::pipeline::{Change, Checkpoint, TableCtx, TxnMeta};
use crate::registry::{BlockingRegistry, Registry};
use offsets::OffsetRecord;
use producer::SinkProducer;
use topics::Topics;

pub use offsets_set::set_offset;
pub(crate) use settings::unmarked_scope;
pub use settings::SinkSettings;
pub use shape::{describe_shape_change, history_key};
pub use state::{Committed, HistoryEntry};

/// Counters the sink keeps; shared with whoever reports them.
#[derive(Debug, Default)]
pub struct SinkStats {
    /// Data records produced and committed.
    pub records_committed: AtomicU64,
    /// Kafka transactions committed (offset-only ones included).
    pub txns_committed: AtomicU64,
    /// Kafka transactions aborted.
    pub txns_aborted: AtomicU64,
    /// Sum of commit durations, microseconds.
    pub commit_micros_total: AtomicU64,
    /// Source commit time of the last committed position, ms since the epoch.
    pub last_source_ts_ms: AtomicU64,
    /// The offsets topic's end before this process's latest claim (see [`claim`]); a later
    /// attempt looks there for a new owner before it fences.
    pub claimed_from: std::sync::Mutex<Option<i64>>,
    /// The source transaction whose Kafka transaction last outlived 90% of the timeout, and
    /// in how many attempts in a row ([`txn::too_long`]).
    pub too_long: std::sync::Mutex<Option<(String, u32)>>,
}

/// A running sink: its thread, and the committed state it read after fencing.
pub struct SinkHandle {
    /// The sink thread; its result says how it ended.
    pub thread: std::thread::JoinHandle<Result<()>>,
    /// Resolves once the producer is fenced-in and the committed state is read.
    pub ready: oneshot::Receiver<Result<Committed>>,
}

/// Starts the sink thread. It fences, reads the committed offset (reported through `ready`),
/// then consumes `rx` until the channel closes (shutdown) or an error occurs.
pub fn start(
    settings: SinkSettings,
    rx: crate::pipeline::ChangeReceiver,
    stats: Arc<SinkStats>,
    metrics: Arc<metrics::Metrics>,
    rt: tokio::runtime::Handle,
) -> SinkHandle {
    let (ready_tx, ready) = oneshot::channel();
    // The caller's span (a process of several pipelines: `pipeline{pipeline=…}`) on every log
    // line of the sink thread.
    let span = tracing::Span::current();
    let thread = std::thread::Builder::new()
        .name("sluice-sink".into())
        .spawn(move || span.in_scope(|| run(settings, rx, stats, metrics, rt, ready_tx)))
        .unwrap_or_else(|e| {
            // Thread creation only fails when the OS is out of resources.
            std::thread::spawn(move || Err(Error::definite(format!("cannot start sink: {e}"))))
        });
    SinkHandle { thread, ready }
}

fn run(
    settings: SinkSettings,
    rx: crate::pipeline::ChangeReceiver,
    stats: Arc<SinkStats>,
    metrics: Arc<metrics::Metrics>,
    rt: tokio::runtime::Handle,
    ready_tx: oneshot::Sender<Result<Committed>>,
) -> Result<()> {
    let opened = Sink::open(settings, stats, metrics, &rt);
    let mut sink = match opened {
        Ok((sink, committed)) => {
            let _ = ready_tx.send(Ok(committed));
            sink
        }
        Err(e) => {
            let msg = e.to_string();
            let kind = e.kind();
            let _ = ready_tx.send(Err(e));
            return Err(Error::new(kind, msg));
        }
    };
    let result = match sink.consume(rx, &rt) {
        Err(e) if e.kind() == ErrorKind::Fenced => sink.resolve_fence(e.to_string()),
        other => other,
    };
    match &result {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::Fenced => {} // never touch a fenced producer's transaction
        Err(e) => sink.abort_quietly(&e.to_string()),
    }
    // A shutdown that gave up, or an abort that did not finish: the producer's state is
    // unknown, and dropping it may wait on the same dead link (see [`txn`]).
    if sink.retire || matches!(&result, Err(e) if e.kind() == ErrorKind::Unfinished) {
        let Sink { producer, .. } = sink;
        txn::retire(producer);
    }
    result
}

/// The sink's state while running.
struct Sink {
    s: SinkSettings,
    producer: SinkProducer,
    topics: Topics,
    encoder: JsonEncoder,
    avro: AvroEncoder,
    registry: Option<BlockingRegistry>,
    /// Registered schema ids per Avro table version, or why the registry refused it
    /// (`on_schema_change = "dlq"`); bounded.
    avro_ids: schema_ids::SchemaIdCache,
    /// The shape last written per table, to name the changed columns when a new shape is
    /// refused.
    last_shape: HashMap<(String, String), Arc<TableCtx>>,
    stats: Arc<SinkStats>,
    /// The pipeline's metrics.
    metrics: Arc<metrics::Metrics>,
    records: Vec<Record>,
    /// A Kafka transaction is open (exactly-once) / a batch is open (at-least-once).
    kafka_open: bool,
    kafka_started: Instant,
    /// Where `commit.max_ms` of the open transaction counts from ([`interval`]).
    interval: interval::CommitInterval,
    kafka_records: usize,
    /// A source transaction is open: no commit may happen now.
    source_open: bool,
    meta: TxnMeta,
    /// `total_order` and `data_collection_order` of the open source transaction.
    order: order::TxnOrder,
    /// Latest source boundary reached and not yet committed, with its source time.
    pending: Option<Checkpoint>,
    last_commit: Instant,
    /// Counts of the open Kafka transaction, for the metrics when it commits.
    counts: counts::TxnCounts,
    /// When the read position was last copied into the metrics.
    read_reported: Instant,
    /// Offset in the offsets topic at or before this instance's claim record: where a fenced
    /// instance looks for a newer owner's claim.
    claim_from: i64,
    /// The producer's transactional state is unknown (an abort timed out or failed): it is
    /// dropped on a thread of its own when the sink ends, never used again.
    retire: bool,
    /// The pipeline transaction of the last committed offset record; the open one is the
    /// next ([`unmarked`]).
    committed_txn: u64,
    /// The attempt of the open pipeline transaction ([`txn_tag`]).
    attempt: u64,
    /// Checks the commit markers after each commit (exactly-once).
    sealer: Option<seal::Sealer>,
    /// Debezium's transaction metadata records, when `[transaction_metadata]` is enabled.
    txn_metadata: Option<txn_metadata::TxnMetadata>,
    /// Debezium's heartbeat records, when `[heartbeat]` is enabled.
    heartbeat: Option<heartbeat::Heartbeat>,
    /// The checkpoint of the last commit, kept when heartbeats are on: an idle pipeline's
    /// heartbeat commits with it again.
    last_committed: Option<Checkpoint>,
}

impl Sink {
    /// Decides what a fence means (see [`claim`]): a takeover stays [`ErrorKind::Fenced`]; a
    /// transaction the coordinator aborted by timeout becomes a transient error, so the next
    /// attempt fences afresh and resumes from the committed offset.
    fn resolve_fence(&mut self, msg: String) -> Result<()> {
        if !self.exactly_once() {
            return Err(Error::fenced(msg));
        }
        let open_for = self.kafka_open.then(|| self.kafka_started.elapsed());
        self.kafka_open = false;
        Err(claim::resolve(msg, open_for, &self.s, self.claim_from))
    }

    /// Writes the offset record (keyed by the pipeline's name) and waits until it and every
    /// record before it are acknowledged.
    fn send_offset_record(&self, bytes: &[u8]) -> Result<()> {
        self.producer.send(
            &self.s.offsets_topic,
            Some(self.s.name.as_bytes()),
            Some(bytes),
        )?;
        self.producer.wait_delivered()
    }

    fn exactly_once(&self) -> bool {
        self.s.delivery == Delivery::ExactlyOnce
    }

    fn consume(
        &mut self,
        mut rx: crate::pipeline::ChangeReceiver,
        rt: &tokio::runtime::Handle,
    ) -> Result<()> {
        loop {
            // A change already queued as a commit ended came in while it ran ([`interval`]).
            self.interval.looked(|| !rx.is_empty());
            // A change already waiting is taken without a timer (one per change cost the
            // clock reads and the timer wheel's work of every change).
            let got = match rx.try_recv() {
                Some(change) => Ok(Some(change)),
                None => {
                    let wait = self.next_wait();
                    rt.block_on(async { tokio::time::timeout(wait, rx.recv()).await })
                }
            };
            match got {
                Err(_elapsed) => self.on_tick()?,
                Ok(None) => return self.finish(),
                Ok(Some(change)) => {
                    self.prepare_topics(&change, &mut rx)?;
                    self.on_change(change)?
                }
            }
        }
    }

    /// Before the first rows for a topic not known yet: that topic and the other unknown ones
    /// the changes at hand write to are checked and created together (one metadata request,
    /// one creation request, one wait for leaders), not one after the other as each one's
    /// first rows come. Only topics about to be written are created (as ever: no topic for a
    /// table without rows, nor for skipped operations).
    fn prepare_topics(
        &mut self,
        change: &Change,
        rx: &mut crate::pipeline::ChangeReceiver,
    ) -> Result<()> {
        let Some(topic) = rows_topic(change) else {
            return Ok(());
        };
        if self.topics.is_known(topic) {
            return Ok(());
        }
        // The batches queued behind this one count too: a snapshot sends one table's chunk
        // per batch, so the rest of a batch alone showed one table at a time.
        rx.look_further(crate::pipeline::CHANNEL_CAPACITY);
        let wanted: Vec<&str> = std::iter::once(topic)
            .chain(rx.ahead().filter_map(rows_topic))
            .filter(|t| !self.topics.is_known(t))
            .collect();
        for created in self.topics.ensure_data_topics(&wanted)? {
            // A new topic: the producer learns its leaders now, not at its first record.
            self.producer.connect(&created);
        }
        Ok(())
    }

    /// How long to wait for the next change before a time-based commit is due.
    fn next_wait(&self) -> Duration {
        let wait = self.commit_wait();
        match &self.heartbeat {
            Some(hb) if !self.kafka_open => wait.min(hb.due_in().max(Duration::from_millis(1))),
            _ => wait,
        }
    }

    /// How long to wait for the next change before a commit is due by `[commit]`.
    fn commit_wait(&self) -> Duration {
        let max = Duration::from_millis(self.s.commit_max_ms);
        if self.kafka_open && !self.source_open && self.s.commit_eager {
            // A change already waiting is taken; none: the transaction commits now.
            return Duration::ZERO;
        }
        if self.kafka_open && !self.source_open {
            return self
                .interval
                .due_in(max, Instant::now())
                .max(Duration::from_millis(1));
        }
        if !self.kafka_open && self.pending.is_some() {
            let idle = Duration::from_millis(self.s.idle_offset_ms);
            return idle
                .saturating_sub(self.last_commit.elapsed())
                .max(Duration::from_millis(1));
        }
        Duration::from_secs(1)
    }

    /// `commit.max_ms` has passed for the open transaction.
    fn commit_due(&self) -> bool {
        let max = Duration::from_millis(self.s.commit_max_ms);
        self.interval.due(max, Instant::now())
    }

    fn on_tick(&mut self) -> Result<()> {
        self.producer.inner.poll(Duration::ZERO);
        if self.kafka_open && !self.source_open {
            if self.s.commit_eager || self.commit_due() {
                self.commit()?;
            }
        } else if !self.kafka_open
            && self.pending.is_some()
            && self.last_commit.elapsed() >= Duration::from_millis(self.s.idle_offset_ms)
        {
            self.begin()?;
            self.commit()?;
        } else if self.kafka_open && self.source_open {
            self.check_txn_age()?;
        } else if self.heartbeat_wanted() {
            self.begin()?;
            self.commit()?;
        }
        Ok(())
    }

    fn begin(&mut self) -> Result<()> {
        if self.kafka_open {
            return Ok(());
        }
        if self.exactly_once() {
            self.producer
                .inner
                .begin_transaction()
                .map_err(|e| self.producer.classify("begin_transaction", &e))?;
            self.attempt =
                settle::begin_attempt(&mut self.producer, &self.s.name, self.committed_txn + 1);
        }
        self.kafka_open = true;
        self.kafka_started = Instant::now();
        self.interval.began(self.kafka_started);
        self.kafka_records = 0;
        Ok(())
    }

    fn on_change(&mut self, change: Change) -> Result<()> {
        match change {
            Change::Begin(meta) => {
                self.begin()?;
                self.source_open = true;
                if let Some(c) = self.producer.context.as_mut() {
                    c.set_connector(meta.connector);
                }
                self.meta = meta;
                self.order.begin();
                if let Some(tm) = self.txn_metadata.as_mut() {
                    tm.reset();
                }
            }
            Change::Rows {
                table,
                kind,
                rows,
                pos,
                ts_us,
                marks,
            } => {
                if !self.source_open {
                    return Err(Error::definite(format!(
                        "internal: rows for {}.{} outside a transaction at {}:{pos}",
                        table.schema.db, table.schema.table, self.meta.file
                    )));
                }
                self.metrics
                    .add_read(&table.label, counts::op_label(kind), rows.len() as u64);
                self.write_rows(&table, kind, &rows, pos, ts_us, marks)?;
                self.check_txn_age()?;
            }
            Change::Schema(ev) if ev.record.is_none() && !self.source_open => {
                // History-only (the start's table definitions): commits with the next offset.
                self.begin()?;
                self.write_schema_event(&ev)?;
            }
            Change::Schema(ev) => {
                if !self.source_open {
                    return Err(Error::definite(format!(
                        "internal: schema change of {}.{} outside a transaction at {}",
                        ev.db, ev.table, self.meta.file
                    )));
                }
                self.write_schema_event(&ev)?;
            }
            Change::Commit(cp) => {
                self.txn_metadata_end(cp.ts_ms)?;
                self.source_open = false;
                self.report_read(&cp);
                self.pending = Some(cp);
                if self.kafka_records >= self.s.commit_max_events || self.commit_due() {
                    self.commit()?;
                }
            }
            Change::Progress(cp) => {
                self.report_read(&cp);
                self.pending = Some(cp);
            }
        }
        Ok(())
    }

    fn write_rows(
        &mut self,
        table: &Arc<TableCtx>,
        kind: crate::model::RowsKind,
        rows: &[crate::model::RowImage],
        pos: u64,
        ts_us: u64,
        marks: crate::model::ReadMarks,
    ) -> Result<()> {
        if table.route.rules.skipped.skips(kind) {
            // `skipped_operations`: no records, no transaction metadata (as Debezium, whose
            // skipped events never reach its transaction monitor); the offset still advances
            // with the transaction's commit.
            return Ok(());
        }
        if self.topics.ensure_data_topic(&table.route.topic)? {
            // A new topic: the producer learns its leaders now, not at its first record.
            self.producer.connect(&table.route.topic);
        }
        let ids = match table.route.format {
            Format::Json => None,
            Format::Avro => Some(self.schema_ids(table)?),
        };
        let dlq_reason = match &ids {
            Some(Err(reason)) => Some(reason.clone()),
            _ => None,
        };
        if dlq_reason.is_some() {
            self.topics.ensure_data_topic(&self.s.dlq_topic)?;
        }
        self.txn_metadata_begin(kind)?;
        let (mut written, mut dead, mut bytes) = (0u64, 0u64, 0u64);
        for (i, row) in rows.iter().enumerate() {
            self.records.clear();
            let order = self.order.upcoming(&table.label);
            let at = |e: Error| {
                e.context(format!(
                    "writing {}.{} (binlog {}:{pos})",
                    table.schema.db, table.schema.table, self.meta.file
                ))
            };
            let change = RowChange {
                table,
                meta: &self.meta,
                kind,
                row,
                row_pos: RowPos {
                    pos,
                    row: i as u32,
                    total_order: order.0,
                    data_collection_order: order.1,
                    snapshot: marks.at(i, rows.len()),
                    source_ts_us: ts_us,
                },
            };
            match &ids {
                Some(Ok(ids)) => self
                    .avro
                    .encode(&change, *ids, &mut self.records)
                    .map_err(at)?,
                _ => self.encoder.encode(&change, &mut self.records),
            }
            for rec in &self.records {
                let key_len = rec.key.as_ref().map_or(0, Vec::len) as u64;
                match &dlq_reason {
                    None => {
                        let header = rec.header.as_ref().map(|(n, v)| (*n, v.as_slice()));
                        self.producer
                            .send_with_header(
                                &table.route.topic,
                                rec.key.as_deref(),
                                rec.value.as_deref(),
                                header,
                            )
                            .map_err(at)?;
                        bytes += key_len + rec.value.as_ref().map_or(0, Vec::len) as u64;
                        written += u64::from(rec.value.is_some());
                    }
                    Some(reason) => {
                        let value = counts::dead_letter(&table.route.topic, reason, rec);
                        self.producer
                            .send(&self.s.dlq_topic, rec.key.as_deref(), Some(&value))
                            .map_err(at)?;
                        bytes += key_len + value.len() as u64;
                        dead += 1;
                    }
                }
                self.kafka_records += 1;
            }
            let events = self.records.iter().filter(|r| r.value.is_some()).count();
            self.order.advance(&table.label, events as u64);
            self.txn_metadata_count(&table.label);
        }
        self.counts
            .add_written(&table.label, counts::op_label(kind), written);
        self.counts.add_dead_letters(&table.label, dead);
        self.counts.bytes += bytes;
        Ok(())
    }

    /// A Kafka transaction open for 90% of `kafka.transaction_timeout_ms` inside a source
    /// transaction is given up before the coordinator aborts it behind our back. Usually a
    /// stall (of the source link, of Kafka, of this process) made it so: a transient error,
    /// the next attempt reads the transaction again. Only when the same source transaction
    /// fails so in [`txn::TOO_LONG_ATTEMPTS`] attempts in a row is it too long to fit in
    /// one Kafka transaction: a definite error that says what to raise.
    fn check_txn_age(&self) -> Result<()> {
        let limit = Duration::from_millis(self.s.transaction_timeout_ms * 9 / 10);
        if !self.exactly_once() || self.kafka_started.elapsed() <= limit {
            return Ok(());
        }
        let id = self.meta.id();
        let mut last = self
            .stats
            .too_long
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let attempts = txn::too_long(last.as_ref(), &id);
        *last = Some((id.clone(), attempts));
        if attempts >= txn::TOO_LONG_ATTEMPTS {
            return Err(Error::definite(format!(
                "source transaction {id} did not finish within 90% of the Kafka transaction \
                 timeout ({} ms) in {attempts} attempts in a row: raise \
                 `kafka.transaction_timeout_ms` (and the broker's `transaction.max.timeout.ms`) \
                 so one source transaction fits in one Kafka transaction \
                 (`transaction.timeout.ms`)",
                self.s.transaction_timeout_ms
            )));
        }
        Err(Error::transient(format!(
            "the Kafka transaction of source transaction {id} was open for {} ms, 90% of \
             `kafka.transaction_timeout_ms` ({} ms), before the source transaction ended (a \
             stall of the source, of Kafka or of this process?): reading it again from the \
             committed offset (attempt {attempts} of {} before it counts as too long)",
            self.kafka_started.elapsed().as_millis(),
            self.s.transaction_timeout_ms,
            txn::TOO_LONG_ATTEMPTS
        )))
    }

    /// Writes the offset record and commits the open Kafka transaction (or batch).
    fn commit(&mut self) -> Result<()> {
        if !self.kafka_open || self.source_open {
            return Ok(());
        }
        if self.s.shutdown.commits_refused() {
            // Cluster mode, assignment lost: another member may own the pipeline already.
            // The open transaction is aborted on the way out (`run`).
            return Err(Error::unfinished(
                "the cluster group reported this member's assignment of the pipeline lost:                  stopping without committing (the open Kafka transaction is aborted; the new                  owner resumes after the last committed offset)",
            ));
        }
        let started = Instant::now();
        let Some(cp) = self.pending.clone() else {
            // Nothing reached a boundary yet; cannot happen with a closed source transaction.
            return Ok(());
        };
        if self.heartbeat.is_some() {
            self.last_committed = Some(cp.clone());
        }
        self.heartbeat_if_due()?;
        let ts_ms = cp.ts_ms;
        let mut rec = OffsetRecord::new(&self.s.name, cp.position, ts_ms);
        rec.xa_prepared = cp.xa_prepared;
        if self.exactly_once() {
            rec.txn = self.committed_txn + 1;
            rec.attempt = txn_tag::attempt_text(self.attempt);
        }
        // Done tables leave the record (only counted): it stays small with many tables.
        rec.snapshot = cp
            .snapshot
            .as_deref()
            .map(crate::snapshot::progress::SnapshotProgress::for_record);
        let snapshot = cp.snapshot;
        let bytes = rec.to_bytes();
        let delivered;
        if self.exactly_once() {
            self.send_offset_record(&bytes)?;
            // Every record of the transaction acknowledged, and no delivery error, before the
            // commit: a record librdkafka failed must abort the transaction, never be left out
            // of a committed one. (Seen once on the test bed: the first two records written to
            // a topic created in the same transaction were missing from a committed
            // transaction, with nothing logged; librdkafka has had such cases before, e.g.
            // locally timed-out messages.) commit_transaction waits for the same
            // acknowledgements, so this adds no wait of its own.
            self.producer.wait_delivered()?;
            delivered = started.elapsed();
            txn::commit(&self.producer, &self.s.shutdown)?;
            self.committed_txn = rec.txn;
            *self
                .stats
                .too_long
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = None;
        } else {
            // At-least-once: the offset is written only after all data is acknowledged.
            self.producer.wait_delivered()?;
            delivered = started.elapsed();
            self.send_offset_record(&bytes)?;
        }
        let micros = started.elapsed().as_micros() as u64;
        self.stats
            .records_committed
            .fetch_add(self.kafka_records as u64, Ordering::Relaxed);
        self.stats.txns_committed.fetch_add(1, Ordering::Relaxed);
        self.stats
            .commit_micros_total
            .fetch_add(micros, Ordering::Relaxed);
        self.stats.last_source_ts_ms.store(ts_ms, Ordering::Relaxed);
        let m = &self.metrics;
        m.committed(&metrics::CommitStats {
            written: &self.counts.written,
            dead_letters: &self.counts.dead_letters,
            records: self.kafka_records as u64,
            bytes: self.counts.bytes,
            duration: started.elapsed(),
            position: &rec.position,
            source_ts_ms: ts_ms,
            snapshot: snapshot.as_deref(),
        });
        m.read_position(&rec.position);
        self.read_reported = Instant::now();
        match snapshot.as_deref() {
            Some(p) if !p.done() => m.streaming_state("snapshotting"),
            _ => m.streaming_state("streaming"),
        }
        self.counts.clear();
        let records = std::mem::take(&mut self.kafka_records);
        self.kafka_open = false;
        self.pending = None;
        self.last_commit = Instant::now();
        self.interval.committed(started);
        // The markers of every partition it wrote are there before anything else is written.
        let own = (self.committed_txn, self.attempt);
        if let Some(sealer) = self.sealer.as_ref() {
            settle::after_commit(sealer, &self.producer, &self.s, own, &self.metrics)?;
        }
        // The phases: every record acknowledged, then (exactly-once) the offset record and
        // the EndTxn, (at-least-once) the offset record; then the markers checked.
        tracing::debug!(
            records,
            micros,
            delivered_us = delivered.as_micros() as u64,
            sealed_us = self.last_commit.elapsed().as_micros() as u64,
            position = %rec.position,
            "committed"
        );
        Ok(())
    }

    /// Channel closed: commit what ends at a boundary, abort a half source transaction.
    fn finish(&mut self) -> Result<()> {
        if self.kafka_open && self.source_open {
            tracing::info!("shutting down inside a source transaction: aborting it");
            self.abort_quietly("the source stopped inside a source transaction");
            return Ok(());
        }
        if self.kafka_open || self.pending.is_some() {
            self.begin()?;
            self.commit()?;
        }
        Ok(())
    }

    fn abort_quietly(&mut self, reason: &str) {
        // Never touch the transaction of a fenced producer: the new owner already aborted it.
        if self.producer.inner.client().fatal_error().is_some() {
            self.kafka_open = false;
            return;
        }
        if self.kafka_open && self.exactly_once() {
            // Bounded (see [`txn`]): a few seconds, and within the shutdown budget.
            let wait = self
                .s
                .shutdown
                .cut(txn::abort_wait(self.s.transaction_timeout_ms));
            let outcome = txn::abort(&self.producer, wait);
            match &outcome {
                txn::Aborted::Done => {
                    self.stats.txns_aborted.fetch_add(1, Ordering::Relaxed);
                    self.metrics.aborted();
                    tracing::info!(
                        reason,
                        records = self.kafka_records,
                        "aborted the open Kafka transaction"
                    );
                }
                txn::Aborted::TimedOut(wait) => tracing::warn!(
                    reason,
                    waited = ?wait,
                    "abort_transaction did not finish; the producer is dropped, and the next \
                     producer's init_transactions fences it and aborts its transaction"
                ),
                txn::Aborted::Failed(e) => tracing::warn!(
                    reason,
                    error = %e,
                    "abort_transaction failed; the producer is dropped, and the next \
                     producer's init_transactions fences it and aborts its transaction"
                ),
            }
            self.retire |= outcome.must_retire();
        }
        self.kafka_open = false;
        self.counts.clear();
    }

    /// Copies the read position into the metrics, at most every
    /// [`metrics::READ_POSITION_EVERY`].
    fn report_read(&mut self, cp: &Checkpoint) {
        if self.read_reported.elapsed() >= metrics::READ_POSITION_EVERY {
            self.metrics.read_position(&cp.position);
            self.read_reported = Instant::now();
        }
    }
}

/// The topic a change writes records to: rows whose operation the route does not skip.
fn rows_topic(change: &Change) -> Option<&str> {
    match change {
        Change::Rows { table, kind, .. } if !table.route.rules.skipped.skips(*kind) => {
            Some(table.route.topic.as_str())
        }
        _ => None,
    }
}
