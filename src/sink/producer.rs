//! The Kafka producer sluice writes through: configuration that exactly-once depends on,
//! delivery-report bookkeeping, and produce with backpressure.
//!
//! Invariant: every record is produced with `acks=all` by an idempotent producer; in
//! exactly-once mode also inside a transaction. A delivery failure is remembered and surfaces
//! before the transaction (or, at-least-once, the offset record) is committed, so an offset is
//! never written past data that did not reach Kafka.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::client::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::OwnedHeaders;
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};

use crate::error::{Error, Result};
use crate::sink::classify::classify;
use crate::sink::native_produce;
use crate::sink::wakeup::Wakeup;

/// Delivery reports and fatal errors seen by librdkafka's callbacks.
#[derive(Default)]
pub struct DeliveryState {
    /// The first delivery error since it was last taken.
    pub first_error: Mutex<Option<KafkaError>>,
    /// Records acknowledged by the broker.
    pub delivered: AtomicU64,
    /// The last acknowledged offset per topic and partition since it was last taken: where
    /// the records of the open transaction end ([`crate::sink::seal`]).
    pub written: Mutex<crate::sink::written::Written>,
}

/// The producer context: records delivery results and fatal errors.
#[derive(Clone, Default)]
pub struct SinkContext {
    /// Shared with the sink, which checks it before committing.
    pub state: Arc<DeliveryState>,
}

impl ClientContext for SinkContext {
    fn error(&self, error: KafkaError, reason: &str) {
        // Fatal errors (fencing among them) are read back with `fatal_error()` where they
        // matter; here they are only logged.
        tracing::warn!(%error, reason, "kafka client error");
    }
}

impl ProducerContext for SinkContext {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(m) => {
                self.state.delivered.fetch_add(1, Ordering::Relaxed);
                use rdkafka::message::Message;
                if let Ok(mut w) = self.state.written.lock() {
                    w.note(m.topic(), m.partition(), m.offset());
                }
            }
            Err((err, _)) => {
                if let Ok(mut e) = self.state.first_error.lock() {
                    if e.is_none() {
                        *e = Some(err.clone());
                    }
                }
            }
        }
    }
}

/// The producer plus the limits that apply to waiting on it.
pub struct SinkProducer {
    /// The librdkafka producer.
    pub inner: BaseProducer<SinkContext>,
    /// Callback state.
    pub ctx: SinkContext,
    /// How long one produce may wait for queue space, or a flush for acknowledgements.
    pub wait_limit: Duration,
    /// Records produced since delivery reports were last served.
    unpolled: std::sync::atomic::AtomicU32,
    /// Once shutdown was requested, waiting for queue space or acknowledgements stops at the
    /// shutdown budget's `finish_by` ([`ErrorKind::Unfinished`](crate::error::ErrorKind::Unfinished)).
    pub stop: crate::shutdown::ShutdownClock,
    /// The [`crate::sink::txn_tag::TXN_HEADER`] value every record gets while it is set:
    /// `<pipeline>:<txn>` inside a pipeline transaction (exactly-once only).
    pub tag: Option<Vec<u8>>,
    /// Debezium's context headers (`kafka.context_headers`), put on the records written with
    /// [`SinkProducer::send_with_header`] (those of Debezium's shape) when set.
    pub context: Option<crate::sink::context_headers::ContextHeaders>,
    /// Wakes the waits for delivery reports.
    wakeup: Wakeup,
    /// The topic handles records are produced with ([`native_produce`]).
    handles: native_produce::TopicHandles,
}

impl Drop for SinkProducer {
    fn drop(&mut self) {
        // librdkafka writes to the pipe no more before it is closed (the fields drop after).
        self.wakeup.disable(self.inner.client());
        // The topic handles go before the client they belong to.
        self.handles.destroy_all();
    }
}

/// At most this many delivery-report events are served in one go.
const SERVE_MAX: usize = 1024;

/// The longest sleep between two looks at the delivery reports while waiting for them: the
/// pipe wakes the wait at once; this bounds it should a signal be missed (an event left in
/// the queue that served no report).
const REPORT_WAIT: Duration = Duration::from_millis(5);

/// Delivery reports are served every this many records (each poll reads the clock and takes
/// librdkafka's queue lock; serving them per record cost a tenth of the CPU of a snapshot).
const POLL_EVERY: u32 = 64;

impl SinkProducer {
    /// Brings up the producer's connection to a broker of the cluster (not only to the
    /// bootstrap address, which librdkafka replaces by the broker behind it after the first
    /// answer). `init_transactions` on a producer with no broker up finds no one to ask for
    /// its transaction coordinator and tries again on a 500 ms timer: half a second of a
    /// start, about one start in four. Errors are left to the call that follows.
    pub fn connect(&self, topic: &str) {
        super::reader::warm_up(self.inner.client(), topic);
    }

    /// Creates the producer. `transactional_id` is `Some` in exactly-once mode.
    pub fn create(
        base: &ClientConfig,
        transactional_id: Option<&str>,
        transaction_timeout_ms: u64,
        max_buffer_kbytes: u64,
    ) -> Result<Self> {
        let mut cfg = super::client_roles::for_producer(base);
        cfg.set("enable.idempotence", "true")
            .set("acks", "all")
            .set("partitioner", "murmur2_random")
            .set("queue.buffering.max.kbytes", max_buffer_kbytes.to_string())
            .set("message.timeout.ms", transaction_timeout_ms.to_string());
        if cfg.get("linger.ms").is_none() {
            cfg.set("linger.ms", "5");
        }
        // sluice creates every topic it writes with its settings; a metadata request of the
        // producer (which asks for auto-creation by default) must not create one with the
        // broker's defaults before that, as the look at the offsets topic while fencing would.
        if cfg.get("allow.auto.create.topics").is_none() {
            cfg.set("allow.auto.create.topics", "false");
        }
        if let Some(id) = transactional_id {
            cfg.set("transactional.id", id)
                .set("transaction.timeout.ms", transaction_timeout_ms.to_string());
        }
        let ctx = SinkContext::default();
        let inner: BaseProducer<SinkContext> = cfg
            .create_with_context(ctx.clone())
            .map_err(|e| Error::definite(format!("cannot create the Kafka producer: {e}")))?;
        let wakeup = Wakeup::enable(inner.client())?;
        Ok(SinkProducer {
            wakeup,
            inner,
            ctx,
            wait_limit: Duration::from_millis(transaction_timeout_ms),
            unpolled: std::sync::atomic::AtomicU32::new(0),
            stop: crate::shutdown::ShutdownClock::default(),
            tag: None,
            context: None,
            handles: native_produce::TopicHandles::default(),
        })
    }

    /// Produces one of sluice's own records (offsets, schema history, claims, dead letters),
    /// waiting (polling) while librdkafka's bounded queue is full. The record carries the
    /// [`SinkProducer::tag`] header when one is set.
    pub fn send(&self, topic: &str, key: Option<&[u8]>, value: Option<&[u8]>) -> Result<()> {
        let tag = self
            .tag
            .as_deref()
            .map(|t| (crate::sink::txn_tag::TXN_HEADER, t));
        self.produce(topic, None, key, value, [tag, None], None)
    }

    /// Produces a record of Debezium's shape (data, tombstone, transaction metadata,
    /// heartbeat, schema change): [`SinkProducer::send`] plus one more header (`None`: none)
    /// and the [`SinkProducer::context`] headers when set. A record with no header at all
    /// allocates no header list.
    pub fn send_with_header(
        &self,
        topic: &str,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        extra: Option<(&str, &[u8])>,
    ) -> Result<()> {
        let tag = self
            .tag
            .as_deref()
            .map(|t| (crate::sink::txn_tag::TXN_HEADER, t));
        self.produce(topic, None, key, value, [tag, extra], self.context.as_ref())
    }

    /// [`SinkProducer::send`] with an explicit partition (`None`: the partitioner decides)
    /// and header.
    pub fn send_to(
        &self,
        topic: &str,
        partition: Option<i32>,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        header: Option<(&str, &[u8])>,
    ) -> Result<()> {
        self.produce(topic, partition, key, value, [header, None], None)
    }

    /// Produces a copy of a record read back from Kafka to `partition`, with `headers` and
    /// its original `timestamp` ([`crate::sink::repair`]), waiting while the queue is full.
    pub fn send_copy(
        &self,
        topic: &str,
        partition: i32,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: OwnedHeaders,
        timestamp: Option<i64>,
    ) -> Result<()> {
        let started = Instant::now();
        loop {
            let mut rec: BaseRecord<'_, [u8], [u8]> = BaseRecord::to(topic)
                .partition(partition)
                .headers(headers.clone());
            if let Some(k) = key {
                rec = rec.key(k);
            }
            if let Some(v) = value {
                rec = rec.payload(v);
            }
            if let Some(ts) = timestamp {
                rec = rec.timestamp(ts);
            }
            match self.inner.send(rec) {
                Ok(()) => return Ok(()),
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                    self.wait_for_queue_space(topic, started)?;
                }
                Err((e, _)) => return Err(self.classify(&format!("produce to `{topic}`"), &e)),
            }
        }
    }

    /// librdkafka's queue is full: serves delivery reports for a moment, unless the shutdown
    /// budget or the wait limit (counted from `started`) is used up.
    fn wait_for_queue_space(&self, topic: &str, started: Instant) -> Result<()> {
        self.stop
            .check(&format!("waiting for producer queue space for `{topic}`"))?;
        if started.elapsed() > self.wait_limit {
            return Err(Error::transient(format!(
                "the Kafka producer queue stayed full for {:?} while writing to `{topic}`",
                self.wait_limit
            )));
        }
        if !self.serve_reports() {
            self.wakeup.wait(REPORT_WAIT);
        }
        Ok(())
    }

    /// Serves the delivery reports that arrived, without waiting: rust-rdkafka's `poll`
    /// serves one event per call, and a `poll` with a timeout spins for its last millisecond
    /// (see [`super::wakeup`]), so waits here are `poll(0)` and [`Wakeup::wait`]. Returns
    /// whether any report was served.
    fn serve_reports(&self) -> bool {
        let mut before = self.inner.in_flight_count();
        let mut served = false;
        for _ in 0..SERVE_MAX {
            if before == 0 {
                break;
            }
            self.inner.poll(Duration::ZERO);
            let after = self.inner.in_flight_count();
            if after >= before {
                break;
            }
            served = true;
            before = after;
        }
        served
    }

    fn produce(
        &self,
        topic: &str,
        partition: Option<i32>,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: [Option<(&str, &[u8])>; 2],
        context: Option<&crate::sink::context_headers::ContextHeaders>,
    ) -> Result<()> {
        let started = Instant::now();
        let rk = self.inner.client().native_ptr();
        let mut list: [(&str, &[u8]); native_produce::MAX_HEADERS] =
            [("", &[]); native_produce::MAX_HEADERS];
        let mut count = 0;
        let context_pairs = context.into_iter().flat_map(|c| c.pairs());
        let pairs = headers.into_iter().flatten();
        for pair in pairs.chain(context_pairs.map(|(name, value)| (name as &str, value))) {
            let slot = list.get_mut(count).ok_or_else(|| {
                Error::definite(format!(
                    "a record for `{topic}` would carry more than {} headers",
                    native_produce::MAX_HEADERS
                ))
            })?;
            *slot = pair;
            count += 1;
        }
        loop {
            let rec = native_produce::Record {
                topic,
                partition,
                key,
                value,
                headers: &list[..count],
            };
            // SAFETY: `rk` is this producer's live client, `self.handles` its topic handles
            // (destroyed only when the producer is dropped).
            match unsafe { native_produce::produce(rk, &self.handles, rec) } {
                Ok(()) => {
                    use std::sync::atomic::Ordering::Relaxed;
                    if self.unpolled.fetch_add(1, Relaxed) + 1 >= POLL_EVERY {
                        self.unpolled.store(0, Relaxed);
                        self.inner.poll(Duration::ZERO);
                    }
                    return Ok(());
                }
                Err(KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull)) => {
                    self.wait_for_queue_space(topic, started)?;
                }
                Err(e) => return Err(self.classify(&format!("produce to `{topic}`"), &e)),
            }
        }
    }

    /// Takes the last acknowledged offset per partition noted since the last take
    /// ([`crate::sink::seal`]); a transaction begins with a take.
    pub fn take_written(&self) -> Vec<(String, i32, i64)> {
        self.ctx
            .state
            .written
            .lock()
            .map(|mut w| w.take())
            .unwrap_or_default()
    }

    /// Waits until every produced record is acknowledged (short polls: no 100 ms floor), then
    /// surfaces the first delivery error, if any.
    pub fn wait_delivered(&self) -> Result<()> {
        let started = Instant::now();
        loop {
            self.serve_reports();
            if self.inner.in_flight_count() == 0 {
                break;
            }
            self.stop
                .check("waiting for the acknowledgement of produced records")?;
            if started.elapsed() > self.wait_limit {
                return Err(Error::transient(format!(
                    "records not acknowledged within {:?} (`kafka.transaction_timeout_ms`)",
                    self.wait_limit
                )));
            }
            self.wakeup.wait(REPORT_WAIT);
        }
        self.check_errors()
    }

    /// Classifies an error of this producer. A fatal producer error wins: librdkafka reports
    /// the fence behind a generic "fatal" code, and a fenced instance must stop, not retry.
    pub fn classify(&self, what: &str, err: &KafkaError) -> Error {
        self.fatal(what).unwrap_or_else(|| classify(what, err))
    }

    /// The producer's fatal error, if librdkafka raised one: fenced, or definite.
    fn fatal(&self, what: &str) -> Option<Error> {
        let (code, reason) = self.inner.client().fatal_error()?;
        let detail = format!("{what}: {reason}");
        Some(if crate::sink::classify::is_fence_code(code) {
            Error::fenced(crate::sink::classify::fenced_message(&detail))
        } else {
            Error::definite(format!("Kafka producer fatal error: {detail}"))
        })
    }

    /// Returns the first delivery or fatal error seen since the last call.
    pub fn check_errors(&self) -> Result<()> {
        if let Some(e) = self.fatal("delivery") {
            return Err(e);
        }
        let first = self
            .ctx
            .state
            .first_error
            .lock()
            .ok()
            .and_then(|mut e| e.take());
        match first {
            Some(e) => Err(self.classify("delivery", &e)),
            None => Ok(()),
        }
    }
}
