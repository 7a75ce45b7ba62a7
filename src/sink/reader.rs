//! Reading sluice's own compacted topics (offsets, schema history) back with `read_committed`.
//!
//! Under `read_committed` a consumer reads up to the partition's *last stable offset* (LSO):
//! the first offset of the oldest transaction still open on it. "End of partition" is
//! reported there, not at the high watermark. On a topic that other producers write to, one
//! open transaction of theirs therefore hides everything after it — also committed records of
//! this pipeline — and a reader that stopped at the first end would resume from an older
//! record and write data again.
//!
//! So the reader takes the high watermark *after* `init_transactions` (every record this
//! pipeline ever wrote is below it, and none of its own transactions is still open) and
//! accepts what it read only once the consumer's position has reached that mark: every record
//! below it is then decided and read. Records of aborted transactions and control markers are
//! skipped by the consumer, so no message may carry offset `high - 1`; the position (which
//! also moves over skipped markers) is what counts. While a foreign transaction holds the LSO
//! below the mark the reader waits; at its timeout it fails with a transient error that names
//! the topic, the offset it is stuck at, the key of the record there, and how to find and
//! abort a hanging transaction.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rdkafka::client::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

use super::{classify, patient};
use crate::error::{Error, Result};

/// How long a read loop waits for a message before it looks at the consumer's position again.
const POLL: Duration = Duration::from_millis(10);

/// How far a read must get before its result is accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    /// The position must reach the high watermark taken at the start: the committed state.
    /// Use it after `init_transactions`, to resume from.
    CapturedHigh,
    /// The first end of partition (the LSO) is enough: an advisory look before fencing
    /// (preflight), never used to resume from.
    FirstEnd,
}

/// Consumer context that treats end-of-partition as the normal event it is here.
pub(crate) struct ReaderContext;

impl ClientContext for ReaderContext {
    fn error(&self, error: KafkaError, reason: &str) {
        if error.rdkafka_error_code() != Some(RDKafkaErrorCode::PartitionEOF) {
            tracing::warn!(%error, reason, "reader error");
        }
    }
}

impl ConsumerContext for ReaderContext {}

/// A consumer of sluice's own reading, closed on a thread of its own when dropped.
///
/// Closing a consumer that has a `group.id` (librdkafka needs one to assign partitions) waits
/// for librdkafka's close event in 100 ms polls, and the first poll mostly sleeps its whole
/// 100 ms: each reader dropped on the way to the first record cost a tenth of a second. The
/// reader holds no group membership and commits nothing, so nothing waits on its close.
pub(crate) struct Reader(Option<BaseConsumer<ReaderContext>>);

impl std::ops::Deref for Reader {
    type Target = BaseConsumer<ReaderContext>;

    fn deref(&self) -> &Self::Target {
        self.0
            .as_ref()
            .expect("a reader holds its consumer until it is dropped")
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            // Should no thread be had, the closure (and the consumer with it) is dropped
            // here: closed on this thread, as before.
            let _ = std::thread::Builder::new()
                .name("sluice-reader-close".into())
                .spawn(move || drop(c));
        }
    }
}

/// Brings up a new client's connection to a broker of the cluster before its first real
/// request: librdkafka replaces the bootstrap connection by one to the broker behind it after
/// the first answer, and a request that finds no broker up waits for a retry timer (seen as
/// 500–700 ms stalls of the reads at start-up). Two metadata requests for `topic` leave a
/// broker connection up; their errors are left to the requests that follow, which have their
/// own deadlines. Nothing is done for an empty `topic` (the metadata of every topic of a
/// large cluster costs more than it saves).
pub(crate) fn warm_up<C: rdkafka::client::ClientContext>(
    client: &rdkafka::client::Client<C>,
    topic: &str,
) {
    if topic.is_empty() {
        return;
    }
    for _ in 0..2 {
        let _ = client.fetch_metadata(Some(topic), patient::FIRST_TRY);
    }
}

/// [`warm_up`] of two clients at the same time: each waits on its own connection (over TLS,
/// a handshake each), so two in a row cost twice one.
pub(crate) fn warm_up_both<C: ConsumerContext>(
    a: &BaseConsumer<C>,
    b: &BaseConsumer<C>,
    topic: &str,
) where
    BaseConsumer<C>: Sync,
{
    if topic.is_empty() {
        return;
    }
    std::thread::scope(|scope| {
        scope.spawn(|| warm_up(a.client(), topic));
        warm_up(b.client(), topic);
    });
}

/// A consumer of sluice's own reading: no group commits, end-of-partition events on.
pub(crate) fn consumer(
    base: &ClientConfig,
    group: &str,
    isolation: &str,
    topic: &str,
) -> Result<Reader> {
    let reader = cold_consumer(base, group, isolation, topic)?;
    warm_up(reader.client(), topic);
    Ok(reader)
}

/// The `read_uncommitted` and the `read_committed` consumer of sluice's own reading of
/// `topic`, their connections brought up together ([`warm_up_both`]).
pub(crate) fn consumer_pair(
    base: &ClientConfig,
    group: &str,
    topic: &str,
) -> Result<(Reader, Reader)> {
    let uncommitted = cold_consumer(base, group, "read_uncommitted", topic)?;
    let committed = cold_consumer(base, group, "read_committed", topic)?;
    warm_up_both(&uncommitted, &committed, topic);
    Ok((uncommitted, committed))
}

/// [`consumer`] without the connection brought up.
fn cold_consumer(base: &ClientConfig, group: &str, isolation: &str, topic: &str) -> Result<Reader> {
    let mut cfg = super::client_roles::for_consumer(base);
    cfg.set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("enable.partition.eof", "true")
        // Reads that end at the partition's end: a fetch there comes back after 10 ms, so the
        // position passes the last transaction's marker that much sooner.
        .set("fetch.wait.max.ms", "10")
        .set("auto.offset.reset", "earliest")
        .set("isolation.level", isolation);
    cfg.create_with_context(ReaderContext)
        .map(|c: BaseConsumer<ReaderContext>| Reader(Some(c)))
        .map_err(|e| Error::definite(format!("cannot create a reader of `{topic}`: {e}")))
}

/// Assigns `tpl` (partitions of `topic`) to `c` once `c` knows their leaders.
///
/// A consumer that does not know a partition's leader when it is assigned retries the first
/// offset lookup and fetch on a timer (about 500 ms in librdkafka), which made every read of
/// sluice's own topics at start-up half a second slower than the broker. One metadata request
/// first (its failure is left to the read that follows, which has its own deadline) puts the
/// leaders in the consumer's cache, and the fetch starts at once.
pub(crate) fn assign_with_leaders<C: ConsumerContext>(
    c: &BaseConsumer<C>,
    topic: &str,
    tpl: &TopicPartitionList,
) -> Result<()> {
    let _ = c.fetch_metadata(Some(topic), patient::FIRST_TRY);
    c.assign(tpl)
        .map_err(|e| Error::transient(format!("assigning topic `{topic}`: {e}")))
}

/// The `(low, high)` watermarks of one partition as `c` sees them (under `read_committed`
/// the high one is the LSO), or `None` when the topic does not exist.
pub(crate) fn watermarks(
    c: &BaseConsumer<ReaderContext>,
    topic: &str,
    partition: i32,
) -> Result<Option<(i64, i64)>> {
    match patient::watermarks(c.client(), topic, partition, patient::DEADLINE) {
        Ok(w) => Ok(Some(w)),
        Err(e)
            if matches!(
                e.rdkafka_error_code(),
                Some(
                    RDKafkaErrorCode::UnknownTopicOrPartition | RDKafkaErrorCode::UnknownPartition
                )
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(Error::transient(format!(
            "reading the end of `{topic}` partition {partition}: {e}"
        ))),
    }
}

/// The consumer's position in `topic` / `partition` (the next offset it will read, past
/// skipped markers and aborted records), -1 when it has none yet.
pub(crate) fn position(c: &BaseConsumer<ReaderContext>, topic: &str, partition: i32) -> i64 {
    c.position()
        .ok()
        .and_then(|tpl| {
            tpl.find_partition(topic, partition)
                .map(|p| match p.offset() {
                    Offset::Offset(n) => n,
                    _ => -1,
                })
        })
        .unwrap_or(-1)
}

/// Reads the latest committed value of every key accepted by `accept` from partition 0 of
/// the compacted `topic` (a tombstone removes the key) with a `read_committed` consumer.
/// Blocking: call it from a blocking thread; with [`Until::CapturedHigh`], after
/// `init_transactions`.
pub fn read_committed_latest(
    base: &ClientConfig,
    topic: &str,
    group: &str,
    accept: impl Fn(&[u8]) -> bool,
    until: Until,
    timeout: Duration,
) -> Result<BTreeMap<Vec<u8>, Vec<u8>>> {
    let pair = consumer_pair(base, group, topic)?;
    read_committed_latest_on(&pair, base, topic, accept, until, timeout)
}

/// [`read_committed_latest`] with a [`consumer_pair`] already made (`read_uncommitted`,
/// `read_committed`), connected ahead of the read. The `read_committed` one is left without
/// an assignment (it fetches nothing further).
pub(crate) fn read_committed_latest_on(
    pair: &(Reader, Reader),
    base: &ClientConfig,
    topic: &str,
    accept: impl Fn(&[u8]) -> bool,
    until: Until,
    timeout: Duration,
) -> Result<BTreeMap<Vec<u8>, Vec<u8>>> {
    let read = read_latest(&pair.0, &pair.1, base, topic, accept, until, timeout);
    let _ = pair.1.unassign();
    read
}

fn read_latest(
    probe: &BaseConsumer<ReaderContext>,
    reader: &BaseConsumer<ReaderContext>,
    base: &ClientConfig,
    topic: &str,
    accept: impl Fn(&[u8]) -> bool,
    until: Until,
    timeout: Duration,
) -> Result<BTreeMap<Vec<u8>, Vec<u8>>> {
    let mut latest = BTreeMap::new();
    let Some((low, high)) = watermarks(probe, topic, 0)? else {
        return Ok(latest);
    };
    if high <= low {
        return Ok(latest);
    }
    // From the low watermark just read: no offset lookup before the first fetch (should it
    // move on meanwhile, `auto.offset.reset = earliest` starts at the new one).
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Offset(low))
        .map_err(|e| Error::definite(format!("topic `{topic}`: {e}")))?;
    assign_with_leaders(reader, topic, &tpl)?;

    let started = Instant::now();
    // Tell the operator early that the read waits on a transaction; fail at the timeout.
    let warn_after = (timeout / 4).min(Duration::from_secs(5));
    let mut warned = false;
    let mut last_error = None;
    loop {
        // Short polls: the position passes the last transaction's marker without a message
        // to wake a longer one.
        match reader.poll(POLL) {
            Some(Ok(msg)) => {
                if let Some(key) = msg.key().filter(|k| accept(k)) {
                    match msg.payload() {
                        // A tombstone removes the key (e.g. an operator's offset reset).
                        None => {
                            latest.remove(key);
                        }
                        Some(p) => {
                            latest.insert(key.to_vec(), p.to_vec());
                        }
                    }
                }
            }
            Some(Err(KafkaError::PartitionEOF(_))) if until == Until::FirstEnd => {
                return Ok(latest)
            }
            Some(Err(KafkaError::PartitionEOF(_))) | None => {}
            // One broker of several unreachable, a leader moving: the consumer goes on with
            // the others (the context has logged it); the deadline below still holds.
            Some(Err(e)) if classify::consumer_recovers(&e) => last_error = Some(e),
            Some(Err(e)) => return Err(Error::transient(format!("reading `{topic}`: {e}"))),
        }
        let at = position(reader, topic, 0);
        if at >= high {
            return Ok(latest);
        }
        let timed_out = started.elapsed() >= timeout;
        if timed_out || (!warned && started.elapsed() >= warn_after) {
            let stuck = Stuck::diagnose(base, reader, probe, topic, at, high);
            if timed_out {
                return Err(Error::transient(with_last_error(
                    stuck.message(started.elapsed()),
                    last_error.as_ref(),
                )));
            }
            if stuck.lso.is_some_and(|lso| lso < high && at >= lso) {
                tracing::warn!(topic, lso = ?stuck.lso, high, "{}", stuck.message(started.elapsed()));
                warned = true;
            }
        }
    }
}

/// Why a read did not reach its captured high watermark.
struct Stuck {
    topic: String,
    /// The consumer's position.
    at: i64,
    /// The captured high watermark.
    high: i64,
    /// The partition's last stable offset, when it could be read.
    lso: Option<i64>,
    /// The key of the record at the LSO (the first record of the open transaction).
    key: Option<String>,
    /// The partition leader's broker id.
    leader: Option<i32>,
    bootstrap: String,
}

impl Stuck {
    fn diagnose(
        base: &ClientConfig,
        reader: &BaseConsumer<ReaderContext>,
        probe: &BaseConsumer<ReaderContext>,
        topic: &str,
        at: i64,
        high: i64,
    ) -> Stuck {
        let lso = watermarks(reader, topic, 0).ok().flatten().map(|(_, h)| h);
        let key = lso
            .filter(|&l| l < high)
            .and_then(|l| key_at(probe, topic, l));
        let leader = probe
            .fetch_metadata(Some(topic), Duration::from_secs(5))
            .ok()
            .and_then(|md| {
                md.topics()
                    .iter()
                    .find(|t| t.name() == topic)
                    .and_then(|t| t.partitions().iter().find(|p| p.id() == 0))
                    .map(|p| p.leader())
            });
        Stuck {
            topic: topic.to_string(),
            at,
            high,
            lso,
            key,
            leader,
            bootstrap: base
                .get("bootstrap.servers")
                .unwrap_or_default()
                .to_string(),
        }
    }

    fn message(&self, waited: Duration) -> String {
        let Stuck {
            topic,
            at,
            high,
            lso,
            key,
            leader,
            bootstrap,
        } = self;
        let waited = waited.as_secs();
        match lso {
            Some(lso) if lso < high => {
                let key = match key {
                    Some(k) => format!(" (its first record has key `{k}`)"),
                    None => String::new(),
                };
                let broker =
                    leader.map_or("<leader of partition 0>".to_string(), |b| b.to_string());
                format!(
                    "cannot read the committed state of `{topic}`: the last stable offset of \
                     partition 0 stays at {lso}, below {high}, the end this read must reach (the \
                     high watermark taken after fencing), after {waited} s. A transaction another \
                     producer opened on the topic at offset {lso}{key} is still open; nothing after \
                     it can be read under read_committed, and resuming from the records before it \
                     could write data again, so sluice waits and retries. If that producer is gone \
                     (a hanging transaction), find it with `kafka-transactions.sh \
                     --bootstrap-server {bootstrap} find-hanging --broker-id {broker}` and abort it \
                     with `kafka-transactions.sh --bootstrap-server {bootstrap} abort --topic \
                     {topic} --partition 0 --start-offset {lso}`. A pipeline's default topics \
                     (`_sluice_offsets.<name>`, `_sluice_schema_history.<name>`) are written by \
                     that pipeline alone"
                )
            }
            Some(lso) => format!(
                "timed out after {waited} s reading `{topic}`: at offset {at} of {high} (last \
                 stable offset {lso}); the brokers answer too slowly"
            ),
            None => format!(
                "timed out after {waited} s reading `{topic}`: at offset {at} of {high}, and its \
                 last stable offset cannot be read; check that the brokers are up"
            ),
        }
    }
}

/// A timed-out read's message, with the last error the consumer went on past, if any.
fn with_last_error(message: String, last: Option<&KafkaError>) -> String {
    match last {
        Some(e) => format!("{message} (the last client error: {e})"),
        None => message,
    }
}

/// The key of the record at `offset` (read uncommitted), for naming who holds a transaction.
fn key_at(probe: &BaseConsumer<ReaderContext>, topic: &str, offset: i64) -> Option<String> {
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Offset(offset))
        .ok()?;
    assign_with_leaders(probe, topic, &tpl).ok()?;
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut found = None;
    while Instant::now() < deadline {
        match probe.poll(Duration::from_millis(100)) {
            Some(Ok(m)) if m.offset() >= offset => {
                found = Some(match m.key() {
                    Some(k) => {
                        let text = String::from_utf8_lossy(k);
                        text.chars().take(200).collect()
                    }
                    None => "(no key)".to_string(),
                });
                break;
            }
            Some(Err(KafkaError::PartitionEOF(_))) => break,
            _ => {}
        }
    }
    let _ = probe.unassign();
    found
}

/// Whether `topic` holds at least one committed record (read with `read_committed`), given
/// its partitions' `(partition, high watermark)` with records below the mark. Blocking.
pub fn holds_committed_records(
    base: &ClientConfig,
    topic: &str,
    partitions: &[(i32, i64)],
    timeout: Duration,
) -> Result<bool> {
    if partitions.is_empty() {
        return Ok(false);
    }
    let reader = consumer(base, "sluice-past-reader", "read_committed", topic)?;
    let mut tpl = TopicPartitionList::new();
    for (p, _) in partitions {
        tpl.add_partition_offset(topic, *p, Offset::Beginning)
            .map_err(|e| Error::definite(format!("topic `{topic}`: {e}")))?;
    }
    assign_with_leaders(&reader, topic, &tpl)?;
    let started = Instant::now();
    let mut last_error = None;
    loop {
        match reader.poll(POLL) {
            Some(Ok(_)) => return Ok(true),
            Some(Err(KafkaError::PartitionEOF(_))) | None => {}
            Some(Err(e)) if classify::consumer_recovers(&e) => last_error = Some(e),
            Some(Err(e)) => return Err(Error::transient(format!("reading `{topic}`: {e}"))),
        }
        if partitions
            .iter()
            .all(|(p, high)| position(&reader, topic, *p) >= *high)
        {
            return Ok(false);
        }
        if started.elapsed() >= timeout {
            return Err(Error::transient(with_last_error(
                format!(
                    "cannot tell within {} s whether `{topic}` holds committed records: a \
                     transaction on it stays open (see `kafka-transactions.sh find-hanging`)",
                    timeout.as_secs()
                ),
                last_error.as_ref(),
            )));
        }
    }
}
