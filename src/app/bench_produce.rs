//! `sluice bench-produce` (a hidden subcommand): the ceiling of what Kafka accepts from
//! sluice's own producer, for the benchmark.
//!
//! The records go through [`SinkProducer`] exactly as the sink writes them: the same
//! librdkafka settings ([`SinkProducer::create`] over the base settings of
//! [`super::client_config`], with sluice's default `kafka.transaction_timeout_ms` and
//! `kafka.max_buffer_kbytes`), the same produce path (delivery reports served every few
//! records, waiting for queue space while librdkafka's queue is full), and in transactional
//! mode the same transaction: `begin_transaction`, the records, each with the
//! [`TXN_HEADER`](crate::sink::txn_tag::TXN_HEADER) naming the transaction attempt, a wait for
//! every acknowledgement, then [`txn::commit`], then (unless `--check-markers false`) the
//! sink's check that the commit markers are on the partition before the next transaction
//! begins ([`crate::sink::seal`]). What the sink does besides is left out: no encoding (every
//! record has the same pre-built value; keys are `{"id":N}`, what sluice writes for an integer
//! primary key `id`), no offset record in each transaction. Without the check the next
//! transaction's first records usually reach the coordinator before it has completed the
//! commit: it answers `CONCURRENT_TRANSACTIONS` and librdkafka retries after a fixed 20 ms,
//! about half the transactions on the test bed; the sink never meets that wait.
//!
//! The idempotent mode is sluice's at-least-once producer (idempotent, `acks=all`, no
//! header): every record produced, then one wait for all acknowledgements; `--batched`, a
//! wait after every batch of a transaction's size as well (at-least-once's cadence: it waits
//! for every acknowledgement before each offset record). `--header` puts the transaction header on (or takes it off) every record whatever the
//! mode: with the two, the difference between the modes splits into the header, the waits
//! and the transaction protocol (`BENCH_PRODUCE_SPLIT=1 ./scripts/bench`).
//!
//! Everything here blocks: run it on a plain thread, not on an async runtime's.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::producer::Producer;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::sink::producer::SinkProducer;
use crate::sink::seal::{self, Sealer};
use crate::sink::topics::{TopicSettings, Topics};
use crate::sink::txn;
use crate::sink::txn_tag::{new_attempt, Tag};

/// sluice's default `kafka.transaction_timeout_ms`: the producer's transaction timeout, its
/// `message.timeout.ms`, and how long one produce may wait for queue space.
pub const TRANSACTION_TIMEOUT_MS: u64 = 60_000;

/// sluice's default `kafka.max_buffer_kbytes`: librdkafka's local queue
/// (`queue.buffering.max.kbytes`).
pub const MAX_BUFFER_KBYTES: u64 = 32_768;

/// The pipeline name in the transaction header of the records written.
const PIPELINE: &str = "bench-produce";

/// One run of the benchmark: where to write, how much, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProduceBench {
    /// Kafka bootstrap servers (`bootstrap.servers`).
    pub bootstrap: String,
    /// The topic written to. It must exist: the benchmark creates no topic.
    pub topic: String,
    /// How many records to write (at least 1).
    pub records: u64,
    /// The size of every record's value, in bytes.
    pub value_bytes: usize,
    /// Records per transaction (at least 1; transactional mode only).
    pub txn_records: u64,
    /// Milliseconds after which an open transaction is committed with fewer than
    /// `txn_records` records, checked after each record (transactional mode only); sluice's
    /// `commit.max_ms`.
    pub txn_max_ms: u64,
    /// Transactions (sluice's exactly-once mode) when true; the idempotent producer alone
    /// (sluice's at-least-once mode) when false.
    pub transactional: bool,
    /// Idempotent mode only: wait for every acknowledgement after each batch of
    /// `txn_records` records (or `txn_max_ms`), as at-least-once waits before each offset
    /// record; false: one wait at the end (the producer's streaming rate).
    pub batched: bool,
    /// Every record carries the transaction header, as in sluice's exactly-once mode
    /// (sluice's at-least-once records carry none): the header's own cost, measured apart.
    pub header: bool,
    /// Transactional mode: after each commit, wait until the commit markers are on the
    /// partition (the partition's last stable offset passed the transaction), as the sink does.
    pub check_markers: bool,
    /// Further librdkafka properties (`-X key=value`), set over the base settings and under
    /// the ones exactly-once depends on, which [`SinkProducer::create`] sets last (as
    /// `[kafka.properties]` are for `sluice run`).
    pub properties: Vec<(String, String)>,
}

/// What one run measured: the line `sluice bench-produce` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProduceResult {
    /// `transactional` or `idempotent`.
    pub mode: &'static str,
    /// Records written (and acknowledged; in transactional mode, committed).
    pub records: u64,
    /// Wall time from just before the first transaction began (idempotent: the first
    /// produce) to the end of the last commit (idempotent: of the wait for the last
    /// acknowledgement), in seconds.
    pub seconds: f64,
    /// `records` / `seconds`.
    pub records_per_s: f64,
    /// CPU time (user and system, every thread of the process) over the same span, in
    /// seconds; `None` where the system does not tell.
    pub cpu_s: Option<f64>,
    /// Transactions committed (0 in idempotent mode).
    pub transactions: u64,
    /// Waits for every acknowledgement: one per transaction or batch, one in the idempotent
    /// mode's streaming run.
    pub ack_waits: u64,
    /// Whether every record carried the transaction header.
    pub header: bool,
    /// Whether each commit's markers were waited for before the next transaction.
    pub markers_checked: bool,
    /// The size of every record's value, in bytes.
    pub value_bytes: usize,
}

/// Parses one `-X key=value` librdkafka property.
pub fn parse_property(text: &str) -> std::result::Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!("expected key=value, got {text:?}")),
    }
}

/// Writes the key of the record with primary key `id` into `buf` (emptied first): `{"id":N}`,
/// as sluice's JSON keys are for an integer primary key column `id`.
pub fn key_into(buf: &mut String, id: u64) {
    buf.clear();
    // Writing to a String cannot fail.
    let _ = write!(buf, "{{\"id\":{id}}}");
}

/// `len` pseudo-random letters and digits (fixed seed: the same text on every call), so that
/// a compressor shrinks them like text, not like a run of one byte.
pub fn filler_text(len: usize) -> Vec<u8> {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            // xorshift64: cheap and good enough to defeat a compressor's run detection.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ALPHABET[(state % ALPHABET.len() as u64) as usize]
        })
        .collect()
}

/// The value every record carries: exactly `len` bytes, a JSON object `{"v":"…"}` whose
/// string is [`filler_text`], so that with `compression.type` set it shrinks like text. Below
/// 8 bytes, the letters and digits alone.
pub fn filler_value(len: usize) -> Vec<u8> {
    const OPEN: &[u8] = b"{\"v\":\"";
    const CLOSE: &[u8] = b"\"}";
    let frame = OPEN.len() + CLOSE.len();
    if len < frame {
        return filler_text(len);
    }
    let mut value = Vec::with_capacity(len);
    value.extend_from_slice(OPEN);
    value.extend(filler_text(len - frame));
    value.extend_from_slice(CLOSE);
    value
}

/// Whether the open transaction is committed now, after its `in_txn`-th record, open for
/// `elapsed`: once it holds `txn_records` records, or once `txn_max` has passed (a
/// transaction holds at least one record).
pub fn commit_due(in_txn: u64, txn_records: u64, elapsed: Duration, txn_max: Duration) -> bool {
    in_txn > 0 && (in_txn >= txn_records || elapsed >= txn_max)
}

/// A transactional id no other producer uses: `sluice-bench-produce-<16 hex digits>`.
pub fn transactional_id() -> String {
    format!("sluice-bench-produce-{:016x}", rand::random::<u64>())
}

/// The CPU time the process has used so far (user and system, every thread), in seconds.
pub(crate) fn cpu_seconds() -> Option<f64> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: `getrusage` writes a whole `rusage` to the pointer it is given, which points to
    // memory of that size and alignment; it is read only after a success.
    let usage = unsafe {
        if libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) != 0 {
            return None;
        }
        usage.assume_init()
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(secs(usage.ru_utime) + secs(usage.ru_stime))
}

/// Rounds to microseconds, so the printed figures carry no digits beyond what was measured.
pub(crate) fn micros(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

impl ProduceBench {
    /// The librdkafka settings every client of the run is created from: those of
    /// [`super::client_config`] for a pipeline with these bootstrap servers and no further
    /// properties, then [`ProduceBench::properties`].
    pub fn client_config(&self) -> ClientConfig {
        let mut c = ClientConfig::new();
        c.set("bootstrap.servers", &self.bootstrap);
        c.set("reconnect.backoff.ms", "10");
        for (k, v) in &self.properties {
            c.set(k, v);
        }
        c
    }

    /// Checks the settings and the topic, creates the producer, writes every record and
    /// reports what it measured. Blocking.
    pub fn run(&self) -> Result<ProduceResult> {
        if self.records == 0 {
            return Err(Error::definite("--records must be at least 1"));
        }
        if (self.transactional || self.batched) && self.txn_records == 0 {
            return Err(Error::definite("--txn-records must be at least 1"));
        }
        if self.transactional && self.batched {
            return Err(Error::definite(
                "--batched applies to --idempotent only (transactions are batches already)",
            ));
        }
        let base = self.client_config();
        self.check_topic(&base)?;
        let id = self.transactional.then(transactional_id);
        let mut producer = SinkProducer::create(
            &base,
            id.as_deref(),
            TRANSACTION_TIMEOUT_MS,
            MAX_BUFFER_KBYTES,
        )?;
        producer.connect(&self.topic);
        let value = filler_value(self.value_bytes);
        let (started, cpu_before, transactions, ack_waits) = if self.transactional {
            producer
                .inner
                .init_transactions(Duration::from_millis(TRANSACTION_TIMEOUT_MS))
                .map_err(|e| producer.classify("init_transactions", &e))?;
            // The marker checker's consumers are made before the clock starts.
            let sealer = self
                .check_markers
                .then(|| Sealer::new(&base, &self.topic))
                .transpose()?;
            let (started, cpu) = (Instant::now(), cpu_seconds());
            let transactions = self.write_transactions(&mut producer, &value, sealer.as_ref())?;
            (started, cpu, transactions, transactions)
        } else {
            let (started, cpu) = (Instant::now(), cpu_seconds());
            let waits = self.write_idempotent(&mut producer, &value)?;
            (started, cpu, 0, waits)
        };
        let seconds = started.elapsed().as_secs_f64();
        let cpu_s = cpu_seconds()
            .zip(cpu_before)
            .map(|(after, before)| micros(after - before));
        Ok(ProduceResult {
            mode: match (self.transactional, self.batched) {
                (true, _) => "transactional",
                (false, true) => "idempotent, batched",
                (false, false) => "idempotent",
            },
            records: self.records,
            seconds: micros(seconds),
            records_per_s: (self.records as f64 / seconds.max(1e-9)).round(),
            cpu_s,
            transactions,
            ack_waits,
            header: self.header,
            markers_checked: self.transactional && self.check_markers,
            value_bytes: self.value_bytes,
        })
    }

    /// Fails with an error that names the topic when it does not exist (a metadata request
    /// that asks the broker not to create it).
    fn check_topic(&self, base: &ClientConfig) -> Result<()> {
        let mut cfg = base.clone();
        cfg.set("allow.auto.create.topics", "false");
        let settings = TopicSettings {
            partitions: 1,
            replication_factor: -1,
            config: Default::default(),
        };
        match Topics::new(&cfg, settings)?.partition_count(&self.topic)? {
            Some(_) => Ok(()),
            None => Err(Error::definite(format!(
                "topic `{}` does not exist at {}: create it first (bench-produce creates no \
                 topic)",
                self.topic, self.bootstrap
            ))),
        }
    }

    /// Idempotent mode: every record, then a wait until all are acknowledged; batched, a wait
    /// after each batch as well ([`commit_due`]). Returns the waits.
    fn write_idempotent(&self, producer: &mut SinkProducer, value: &[u8]) -> Result<u64> {
        let mut key = String::with_capacity(32);
        let (mut written, mut waits) = (0u64, 0u64);
        while written < self.records {
            self.tag(producer, waits + 1, new_attempt());
            let opened = Instant::now();
            let mut in_batch = 0u64;
            while written < self.records {
                written += 1;
                in_batch += 1;
                key_into(&mut key, written);
                producer.send(&self.topic, Some(key.as_bytes()), Some(value))?;
                if self.batched
                    && commit_due(in_batch, self.txn_records, opened.elapsed(), self.txn_max())
                {
                    break;
                }
            }
            producer.wait_delivered()?;
            waits += 1;
        }
        Ok(waits)
    }

    /// Sets (or, without [`ProduceBench::header`], clears) the header of the records of
    /// transaction or batch `n`, attempt `attempt`.
    fn tag(&self, producer: &mut SinkProducer, n: u64, attempt: u64) {
        producer.tag = self.header.then(|| Tag::txn_value(PIPELINE, n, attempt));
    }

    fn txn_max(&self) -> Duration {
        Duration::from_millis(self.txn_max_ms)
    }

    /// Transactional mode: transactions of [`ProduceBench::txn_records`] records (fewer when
    /// [`ProduceBench::txn_max_ms`] passes first), each committed as the sink commits. A
    /// transaction that fails is aborted (within a few seconds) before the error is returned,
    /// so it holds no reader of the topic back. Returns the transactions committed.
    fn write_transactions(
        &self,
        producer: &mut SinkProducer,
        value: &[u8],
        sealer: Option<&Sealer>,
    ) -> Result<u64> {
        let mut key = String::with_capacity(32);
        let (mut written, mut transactions) = (0u64, 0u64);
        while written < self.records {
            producer
                .inner
                .begin_transaction()
                .map_err(|e| producer.classify("begin_transaction", &e))?;
            let attempt = new_attempt();
            self.tag(producer, transactions + 1, attempt);
            producer.take_written();
            if let Err(e) = self.fill_and_commit(producer, &mut written, &mut key, value) {
                let _ = txn::abort(producer, txn::abort_wait(TRANSACTION_TIMEOUT_MS));
                return Err(e);
            }
            transactions += 1;
            if let Some(sealer) = sealer {
                let own = Tag {
                    pipeline: PIPELINE.to_string(),
                    txn: Some(transactions),
                    attempt: Some(attempt),
                };
                let wait = seal::deadline(TRANSACTION_TIMEOUT_MS);
                sealer.verify(&producer.take_written(), &own, wait, &producer.stop)?;
            }
        }
        Ok(transactions)
    }

    /// Writes the records after the first `written` (counting them there) into the open
    /// transaction until [`commit_due`] or the last record, then waits for every
    /// acknowledgement and commits, as the sink does.
    fn fill_and_commit(
        &self,
        producer: &SinkProducer,
        written: &mut u64,
        key: &mut String,
        value: &[u8],
    ) -> Result<()> {
        let txn_max = self.txn_max();
        let opened = Instant::now();
        let mut in_txn = 0u64;
        while *written < self.records {
            *written += 1;
            in_txn += 1;
            key_into(key, *written);
            producer.send(&self.topic, Some(key.as_bytes()), Some(value))?;
            if commit_due(in_txn, self.txn_records, opened.elapsed(), txn_max) {
                break;
            }
        }
        producer.wait_delivered()?;
        txn::commit(producer, &producer.stop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_sluice_json_keys_of_an_integer_id() {
        let mut buf = String::from("left over");
        key_into(&mut buf, 1);
        assert_eq!(buf, r#"{"id":1}"#);
        key_into(&mut buf, 1_000_000);
        assert_eq!(buf, r#"{"id":1000000}"#);
        let parsed: serde_json::Value = serde_json::from_str(&buf).unwrap();
        assert_eq!(parsed, serde_json::json!({"id": 1_000_000}));
    }

    #[test]
    fn the_value_is_exactly_as_long_as_asked() {
        for len in [0, 1, 7, 8, 9, 200, 640, 10_000] {
            assert_eq!(filler_value(len).len(), len, "length {len}");
        }
        let v = filler_value(640);
        let parsed: serde_json::Value = serde_json::from_slice(&v).unwrap();
        assert_eq!(parsed["v"].as_str().unwrap().len(), 640 - 8);
        assert_eq!(filler_value(8), br#"{"v":""}"#);
        // The same on every call, and not one byte repeated.
        assert_eq!(filler_value(640), v);
        let distinct: std::collections::HashSet<u8> = v.iter().copied().collect();
        assert!(distinct.len() > 40, "{distinct:?}");
    }

    #[test]
    fn a_transaction_commits_at_its_record_count_or_its_age() {
        let max = Duration::from_millis(100);
        let young = Duration::from_millis(5);
        assert!(!commit_due(999, 1000, young, max));
        assert!(commit_due(1000, 1000, young, max));
        assert!(commit_due(1001, 1000, young, max));
        assert!(!commit_due(1, 1000, Duration::from_millis(99), max));
        assert!(commit_due(1, 1000, max, max));
        assert!(commit_due(1, 1000, Duration::from_secs(5), max));
        // An empty transaction is never committed, however old; one record per transaction.
        assert!(!commit_due(0, 1000, Duration::from_secs(5), max));
        assert!(commit_due(1, 1, young, max));
        assert!(commit_due(1, 1000, young, Duration::ZERO));
    }

    #[test]
    fn properties_are_key_equals_value() {
        assert_eq!(
            parse_property("linger.ms=20"),
            Ok(("linger.ms".to_string(), "20".to_string()))
        );
        assert_eq!(
            parse_property("sasl.password=a=b"),
            Ok(("sasl.password".to_string(), "a=b".to_string()))
        );
        assert_eq!(
            parse_property("compression.type="),
            Ok(("compression.type".to_string(), String::new()))
        );
        assert!(parse_property("linger.ms").is_err());
        assert!(parse_property("=5").is_err());
    }

    #[test]
    fn transactional_ids_are_unique_and_named() {
        let (a, b) = (transactional_id(), transactional_id());
        assert_ne!(a, b);
        assert!(a.starts_with("sluice-bench-produce-"), "{a}");
        assert_eq!(a.len(), "sluice-bench-produce-".len() + 16);
    }

    fn bench(properties: Vec<(String, String)>) -> ProduceBench {
        ProduceBench {
            bootstrap: "127.0.0.1:9092".into(),
            topic: "t".into(),
            records: 10,
            value_bytes: 10,
            txn_records: 5,
            txn_max_ms: 100,
            transactional: true,
            batched: false,
            header: true,
            check_markers: true,
            properties,
        }
    }

    #[test]
    fn the_client_settings_are_those_of_sluice_run() {
        let toml = r#"
name = "shop"
[source]
url = "mysql://sluice:sluice@127.0.0.1:3306"
server_id = 5401
[kafka]
bootstrap_servers = "127.0.0.1:9092"
"#;
        let cfg = crate::config::Config::from_str_with_env(toml, Vec::new()).unwrap();
        let run = crate::app::client_config(&cfg);
        let ours = bench(Vec::new()).client_config();
        assert_eq!(ours.config_map(), run.config_map());
        assert_eq!(cfg.kafka.transaction_timeout_ms, TRANSACTION_TIMEOUT_MS);
        assert_eq!(cfg.kafka.max_buffer_kbytes, MAX_BUFFER_KBYTES);
        // Further properties go over the base settings.
        let more = bench(vec![("reconnect.backoff.ms".into(), "50".into())]).client_config();
        assert_eq!(more.get("reconnect.backoff.ms"), Some("50"));
    }

    #[test]
    fn nothing_to_write_is_refused_before_connecting() {
        let none = ProduceBench {
            records: 0,
            ..bench(Vec::new())
        };
        assert!(none.run().unwrap_err().to_string().contains("--records"));
        let empty_txn = ProduceBench {
            txn_records: 0,
            ..bench(Vec::new())
        };
        assert!(empty_txn
            .run()
            .unwrap_err()
            .to_string()
            .contains("--txn-records"));
        let batched_txn = ProduceBench {
            batched: true,
            ..bench(Vec::new())
        };
        assert!(batched_txn
            .run()
            .unwrap_err()
            .to_string()
            .contains("--batched applies to --idempotent only"));
    }

    #[test]
    fn cpu_time_is_read_and_grows() {
        let before = cpu_seconds().unwrap();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        assert!(x != 1);
        assert!(cpu_seconds().unwrap() >= before);
    }
}
