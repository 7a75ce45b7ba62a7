//! Records Kafka leaves without a transaction marker: found after fencing, matched with the
//! committed offset, and aborted when their transaction never committed.
//!
//! **What Kafka does.** When the transaction coordinator finishes a commit or an abort it
//! sends a marker to every partition of the transaction; for a partition its metadata shows
//! *no leader* for, it logs "Couldn't find leader endpoint for partitions ... these
//! partitions are likely deleted already and hence can be skipped" and completes the
//! transaction without that marker (Kafka 4's metadata cache answers "unknown" both for a
//! deleted partition and for one whose leader is none). A partition has no leader while all
//! of its in-sync replicas are down: on the one-broker test bed, during the controlled
//! shutdown of a broker restart. The records stay open on the partition and hold its last
//! stable offset (LSO) back, and the partition still counts them as the open transaction of
//! that producer id: the *next* marker of the same transactional id there ends them too, in
//! the way of its own transaction. That is right only by chance. If the coordinator had
//! aborted them (the offset record of their transaction never committed), the pipeline
//! resumes before their changes, writes them again, and the next commit marker makes both
//! copies visible (seen in a chaos run: 2 duplicates). If it had committed them, an abort
//! marker — or an operator's `kafka-transactions.sh abort` — loses them (seen: 5 changes).
//!
//! **How sluice tells the two apart.** Every record of a pipeline transaction carries the
//! [`TXN_HEADER`] `<pipeline>:<txn>/<attempt>`, where `txn` counts the pipeline's Kafka
//! transactions and `attempt` is new for every Kafka transaction begun; both are stored in
//! the offset record committed with them ([`super::offsets::OffsetRecord`]), so two attempts
//! of one `txn` (one dropped unfinished, its retry committed) are never confused. After
//! `init_transactions` (so none of this pipeline's transactions is still in progress), each
//! partition whose LSO is below its high watermark is looked at: the record at the LSO is the
//! first record of the oldest open transaction there. [`decide`] then says:
//! - not this pipeline's (no header, another pipeline): left alone and reported — only that
//!   producer's own next marker ends it;
//! - this pipeline's, of an attempt that did not commit (`txn` above the committed one, or
//!   the committed `txn` with another attempt): aborted now ([`abort_probe`]: a transaction
//!   that writes one record to that partition and aborts, whose abort marker ends every open
//!   record of this producer id there; a `read_committed` consumer sees none of them) —
//!   before the pipeline writes anything;
//! - this pipeline's, of the committed attempt: aborted and written again
//!   ([`super::repair`]), so that no later abort marker can take them;
//! - this pipeline's, of a transaction before the committed one (left by versions before
//!   attempts and [`super::seal`]): left for the next transaction there to commit, reported.
//!
//! While the pipeline runs, [`super::seal`] keeps a partition from holding records of more
//! than one of its transactions: after each commit it waits for the markers before the next
//! transaction writes.
//!
//! On the pipeline's own offsets topic the look comes first, before the claim record is
//! committed (whose marker would commit them): the committed offset is not known yet, so
//! this pipeline's own open records there are always aborted. If their transaction had in
//! fact committed, its changes are written again (a duplicate, never a loss). The schema
//! history topic is left to its reader, which waits and names the record holding it.

use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Headers, Message};
use rdkafka::producer::Producer;
use rdkafka::{Offset, TopicPartitionList};
use regex::RegexSet;

use super::producer::SinkProducer;
use super::reader::{self, ReaderContext};
use super::{patient, txn};
use crate::error::{Error, Result};

pub use super::txn_tag::{Tag, TXN_HEADER};

/// The header of the one record an [`abort_probe`] writes (and aborts).
pub const PROBE_HEADER: &str = "sluice.probe";

/// The key of that record (compacted topics refuse records without a key).
pub const PROBE_KEY: &[u8] = b"__sluice_abort_probe";

/// How long the record at a held partition's LSO is waited for.
const FIRST_RECORD_WAIT: Duration = Duration::from_secs(10);

/// A partition whose last stable offset is below its high watermark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// The last stable offset: the first record of the oldest open transaction.
    pub lso: i64,
    /// The high watermark.
    pub high: i64,
    /// The [`TXN_HEADER`] of the record at the LSO, if it has one sluice wrote.
    pub first: Option<Tag>,
}

/// The pipeline transaction of the committed offset record: its number and the attempt
/// that committed it (`None` in records of versions before attempts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommittedTxn {
    /// The pipeline transaction.
    pub txn: u64,
    /// Its committing attempt.
    pub attempt: Option<u64>,
}

/// What to do with the open records of a held partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Not this pipeline's: left alone, reported.
    Foreign,
    /// This pipeline's, of the attempt that committed: aborted and written again
    /// ([`super::repair`]), so no later abort marker can take them.
    Committed,
    /// This pipeline's, of a transaction before the committed one (only a version before
    /// attempts and commit-marker checks leaves these): left for its next transaction there
    /// to commit, reported.
    Older,
    /// This pipeline's, of an attempt that never committed: aborted now.
    Abort,
}

/// The verdict for a held partition whose record at the LSO has tag `first`. `committed`:
/// the pipeline transaction of the committed offset record, `None` while it is not known
/// yet (the pipeline's own offsets topic, looked at before anything is read).
pub fn decide(first: Option<&Tag>, pipeline: &str, committed: Option<CommittedTxn>) -> Verdict {
    let Some(tag) = first.filter(|t| t.pipeline == pipeline) else {
        return Verdict::Foreign;
    };
    let (Some(t), Some(c)) = (tag.txn, committed) else {
        // A claim carries no data; an own record on the offsets topic is aborted (see the
        // module documentation: a duplicate, never a loss).
        return Verdict::Abort;
    };
    match (t.cmp(&c.txn), tag.attempt, c.attempt) {
        (std::cmp::Ordering::Greater, _, _) => Verdict::Abort,
        (std::cmp::Ordering::Less, _, _) => Verdict::Older,
        // Another attempt of the committed transaction: aborted, or dropped unfinished.
        (std::cmp::Ordering::Equal, Some(a), Some(ca)) if a != ca => Verdict::Abort,
        (std::cmp::Ordering::Equal, _, _) => Verdict::Committed,
    }
}

impl Held {
    /// Where the held records are, the commands that show their transaction, and what to do.
    pub fn advice(&self, pipeline: &str, bootstrap: &str) -> String {
        let (t, p, lso) = (&self.topic, self.partition, self.lso);
        let (by, todo) = match &self.first {
            Some(Tag {
                pipeline: writer,
                txn: Some(n),
                ..
            }) if writer == pipeline => (
                format!("pipeline `{writer}`, transaction {n}"),
                "it committed, and this pipeline's next transaction there commits these \
                 records: do not abort them (that loses them)"
                    .to_string(),
            ),
            first => (
                match first {
                    Some(tag) => format!("pipeline `{}`", tag.pipeline),
                    None => "a producer that is not this pipeline".to_string(),
                },
                format!(
                    "only that producer's next transaction there ends it; if it hangs, end it \
                     with `kafka-transactions.sh --bootstrap-server {bootstrap} abort --topic \
                     {t} --partition {p} --start-offset {lso}`"
                ),
            ),
        };
        format!(
            "`{t}` partition {p}: records from offset {lso} (its last stable offset) to {high} \
             belong to a transaction that is still open, written by {by}; see it with \
             `kafka-transactions.sh --bootstrap-server {bootstrap} find-hanging --topic {t} \
             --partition {p}` (or `describe-producers --topic {t} --partition {p}`); {todo}",
            high = self.high
        )
    }
}

/// Where the look goes: the data topics and the pipeline's further topics.
pub struct Scope {
    /// librdkafka client config.
    pub client: ClientConfig,
    /// Names the routes can expand to.
    pub patterns: RegexSet,
    /// The pipeline's own further topics (schema changes, dead letters).
    pub own_topics: Vec<String>,
    /// Topics left out (the offsets and schema history topics), even when a route's pattern
    /// matches their names.
    pub skip: Vec<String>,
}

/// How long the look after an abort waits for the partition's last stable offset to move
/// (the abort's markers) before it leaves the records to another producer's marker.
const MARKERS_WAIT: Duration = Duration::from_secs(5);

/// The lookers: a `read_uncommitted` consumer (high watermark, the record at the LSO) and a
/// `read_committed` one (the LSO).
struct Lookers {
    uncommitted: reader::Reader,
    committed: reader::Reader,
    /// Both consumers have a broker connection up ([`reader::warm_up`]).
    warm: std::cell::Cell<bool>,
}

impl Lookers {
    fn new(client: &ClientConfig) -> Result<Self> {
        Ok(Lookers {
            uncommitted: reader::consumer(client, "sluice-unmarked-look", "read_uncommitted", "")?,
            committed: reader::consumer(client, "sluice-unmarked-look", "read_committed", "")?,
            warm: std::cell::Cell::new(false),
        })
    }

    /// Lookers of a [`reader::consumer_pair`] whose connections are up.
    fn of_pair(pair: (reader::Reader, reader::Reader)) -> Self {
        Lookers {
            uncommitted: pair.0,
            committed: pair.1,
            warm: std::cell::Cell::new(true),
        }
    }

    /// Whether the last stable offset of `topic` / `partition` moves from `lso` within `wait`:
    /// the coordinator writes an abort's markers after the abort returned, so one look right
    /// after it can still find the old LSO (seen under load).
    fn lso_moved(&self, topic: &str, partition: i32, lso: i64, wait: Duration) -> Result<bool> {
        if !self.warm.replace(true) {
            reader::warm_up_both(&self.uncommitted, &self.committed, topic);
        }
        let deadline = std::time::Instant::now() + wait;
        loop {
            match reader::watermarks(&self.committed, topic, partition)? {
                Some((_, now)) if now == lso => {}
                _ => return Ok(true),
            }
            if std::time::Instant::now() >= deadline {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The partition, if it is held.
    fn held(&self, topic: &str, partition: i32) -> Result<Option<Held>> {
        if !self.warm.replace(true) {
            reader::warm_up_both(&self.uncommitted, &self.committed, topic);
        }
        let Some((_, high)) = reader::watermarks(&self.uncommitted, topic, partition)? else {
            return Ok(None);
        };
        let Some((_, lso)) = reader::watermarks(&self.committed, topic, partition)? else {
            return Ok(None);
        };
        if lso >= high {
            return Ok(None);
        }
        Ok(Some(Held {
            topic: topic.to_string(),
            partition,
            lso,
            high,
            first: tag_at(&self.uncommitted, topic, partition, lso)?,
        }))
    }
}

/// The tag of the record at `offset` of `topic` / `partition`, if it is there and has one,
/// read with `reader` (a `read_uncommitted` consumer, which it assigns). Blocking.
pub(crate) fn tag_at(
    reader: &BaseConsumer<ReaderContext>,
    topic: &str,
    partition: i32,
    offset: i64,
) -> Result<Option<Tag>> {
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, partition, Offset::Offset(offset))
        .map_err(|e| Error::transient(format!("reading `{topic}` [{partition}]: {e}")))?;
    reader::assign_with_leaders(reader, topic, &tpl)?;
    let deadline = std::time::Instant::now() + FIRST_RECORD_WAIT;
    while std::time::Instant::now() < deadline {
        match reader.poll(Duration::from_millis(200)) {
            Some(Ok(m)) if m.topic() == topic && m.partition() == partition => {
                if m.offset() != offset {
                    return Ok(None);
                }
                return Ok(header_tag(&m));
            }
            _ => continue,
        }
    }
    Err(Error::transient(format!(
        "the record at offset {offset} of `{topic}` partition {partition} (the first of an \
         open transaction) could not be read within {FIRST_RECORD_WAIT:?}"
    )))
}

/// The [`TXN_HEADER`] of a record, if it has one sluice wrote.
pub(crate) fn header_tag<M: Message>(m: &M) -> Option<Tag> {
    m.headers().and_then(|h| {
        h.iter()
            .find(|h| h.key == TXN_HEADER)
            .and_then(|h| h.value.and_then(Tag::parse))
    })
}

/// The held partitions of the data topics the pipeline writes (and of its further topics).
/// Blocking.
pub fn held_data_partitions(scope: &Scope) -> Result<Vec<Held>> {
    let lookers = Lookers::new(&scope.client)?;
    let probe = &lookers.uncommitted;
    let md = patient::retrying(patient::DEADLINE, |t| probe.fetch_metadata(None, t), || {})
        .map_err(|e| Error::transient(format!("Kafka metadata request failed: {e}")))?;
    let mut held = Vec::new();
    for t in md.topics() {
        let name = t.name();
        if scope.skip.iter().any(|s| s == name) {
            continue;
        }
        if !(scope.patterns.is_match(name) || scope.own_topics.iter().any(|o| o == name)) {
            continue;
        }
        match t.error() {
            None => {}
            // Deleted meanwhile: nothing of it is left to hold anything back.
            Some(rdkafka::types::RDKafkaRespErr::RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) => {
                continue
            }
            // A topic it could not look at may hold this pipeline's open records: the look is
            // not skipped, the attempt ends and the next one looks again.
            Some(e) => {
                return Err(Error::transient(format!(
                    "looking for records Kafka left without a transaction marker: the metadata \
                     of `{name}` has the error {e:?}; trying again"
                )))
            }
        }
        for p in t.partitions() {
            held.extend(lookers.held(name, p.id())?);
        }
    }
    held.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    Ok(held)
}

/// Aborts this producer id's open records on `topic` / `partition`: a transaction that
/// writes one record there ([`PROBE_KEY`], no value) and aborts; the abort marker ends every
/// open record of this producer id on the partition. Blocking.
pub fn abort_probe(
    producer: &SinkProducer,
    topic: &str,
    partition: i32,
    wait: Duration,
) -> Result<()> {
    producer
        .inner
        .begin_transaction()
        .map_err(|e| producer.classify("begin_transaction (abort probe)", &e))?;
    producer.send_to(
        topic,
        Some(partition),
        Some(PROBE_KEY),
        None,
        Some((PROBE_HEADER, b"aborts records Kafka left without a marker")),
    )?;
    producer.wait_delivered()?;
    match txn::abort(producer, wait) {
        txn::Aborted::Done => Ok(()),
        other => Err(Error::transient(format!(
            "aborting the records Kafka left without a marker on `{topic}` partition \
             {partition}: the abort did not finish ({other:?}); the next attempt fences and \
             looks again"
        ))),
    }
}

/// The pipeline's own offsets topic, before the claim: this pipeline's open records there
/// are aborted ([`decide`] with no committed transaction). Blocking; after
/// `init_transactions`.
pub fn settle_offsets_topic(
    producer: &SinkProducer,
    client: &ClientConfig,
    topic: &str,
    pipeline: &str,
    wait: Duration,
) -> Result<()> {
    settle_offsets_topic_with(producer, Lookers::new(client)?, topic, pipeline, wait).map(drop)
}

/// [`settle_offsets_topic`] looking with `pair` (a [`reader::consumer_pair`] connected ahead),
/// which it gives back for the offset read that follows.
pub fn settle_offsets_topic_on(
    producer: &SinkProducer,
    pair: (reader::Reader, reader::Reader),
    topic: &str,
    pipeline: &str,
    wait: Duration,
) -> Result<(reader::Reader, reader::Reader)> {
    let lookers =
        settle_offsets_topic_with(producer, Lookers::of_pair(pair), topic, pipeline, wait)?;
    // A look at an open transaction's first record left the reader assigned there.
    let _ = lookers.uncommitted.unassign();
    Ok((lookers.uncommitted, lookers.committed))
}

fn settle_offsets_topic_with(
    producer: &SinkProducer,
    lookers: Lookers,
    topic: &str,
    pipeline: &str,
    wait: Duration,
) -> Result<Lookers> {
    let Some(held) = lookers.held(topic, 0)? else {
        return Ok(lookers);
    };
    if decide(held.first.as_ref(), pipeline, None) == Verdict::Abort {
        abort_probe(producer, topic, 0, wait)?;
        tracing::warn!(
            topic,
            offset = held.lso,
            "aborted this pipeline's records that Kafka left without a transaction marker on \
             its offsets topic (a broker had no leader for the partition while the coordinator \
             ended their transaction); if that transaction had committed, its changes are \
             written again"
        );
    }
    Ok(lookers)
}

/// The held data partitions (`held`, [`held_data_partitions`] after `init_transactions`), once
/// the committed offset is known (`committed`): aborts this pipeline's open records of
/// attempts that never committed, reports what is not this pipeline's, and returns the
/// partitions holding records of the committed attempt, for [`super::repair`]. Blocking;
/// before the pipeline writes.
pub fn settle_data_partitions(
    producer: &SinkProducer,
    held: Vec<Held>,
    client: &ClientConfig,
    pipeline: &str,
    committed: CommittedTxn,
    bootstrap: &str,
    wait: Duration,
) -> Result<Vec<Held>> {
    let mut reported = Vec::new();
    let mut committed_held = Vec::new();
    for h in held {
        match decide(h.first.as_ref(), pipeline, Some(committed)) {
            Verdict::Abort => {
                abort_probe(producer, &h.topic, h.partition, wait)?;
                let moved = Lookers::new(client)?.lso_moved(
                    &h.topic,
                    h.partition,
                    h.lso,
                    wait.min(MARKERS_WAIT),
                )?;
                if !moved {
                    // Tagged as this pipeline's, yet another producer id holds them: only
                    // that producer's marker can end them.
                    reported.push(h);
                    continue;
                }
                tracing::warn!(
                    topic = %h.topic,
                    partition = h.partition,
                    from_offset = h.lso,
                    to_offset = h.high,
                    transaction = ?h.first.as_ref().and_then(|t| t.txn),
                    committed_transaction = committed.txn,
                    "aborted this pipeline's records that Kafka left without a transaction \
                     marker (a broker had no leader for the partition while the coordinator \
                     ended their transaction); their transaction never committed, so the \
                     pipeline writes their changes again from the committed offset"
                );
            }
            Verdict::Committed => committed_held.push(h),
            Verdict::Older | Verdict::Foreign => reported.push(h),
        }
    }
    if !reported.is_empty() {
        tracing::warn!(
            partitions = reported.len(),
            committed_transaction = committed.txn,
            "{}",
            warning(&reported, pipeline, bootstrap)
        );
    }
    Ok(committed_held)
}

/// The partition, if it is held. Blocking.
pub fn held_partition(client: &ClientConfig, topic: &str, partition: i32) -> Result<Option<Held>> {
    Lookers::new(client)?.held(topic, partition)
}

/// The warning for held partitions left alone.
pub fn warning(held: &[Held], pipeline: &str, bootstrap: &str) -> String {
    let list: Vec<String> = held.iter().map(|h| h.advice(pipeline, bootstrap)).collect();
    format!(
        "{} partition(s) this pipeline writes to are held back by an open transaction after \
         fencing: {}",
        held.len(),
        list.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag(p: &str, t: Option<u64>) -> Tag {
        Tag {
            pipeline: p.into(),
            txn: t,
            attempt: None,
        }
    }

    fn at(t: u64, attempt: Option<u64>) -> Option<CommittedTxn> {
        Some(CommittedTxn { txn: t, attempt })
    }

    #[test]
    fn tags_round_trip() {
        let with = |p: &str, t: u64, a: u64| Tag {
            pipeline: p.into(),
            txn: Some(t),
            attempt: Some(a),
        };
        assert_eq!(
            Tag::parse(&Tag::txn_value("orders", 42, 0xdead_beef)),
            Some(with("orders", 42, 0xdead_beef))
        );
        assert_eq!(
            Tag::parse(&Tag::txn_value("orders", 0, u64::MAX)),
            Some(with("orders", 0, u64::MAX))
        );
        assert_eq!(
            Tag::parse(&Tag::claim_value("orders")),
            Some(tag("orders", None))
        );
        // A pipeline name may hold the separator: the last one counts.
        assert_eq!(
            Tag::parse(&Tag::txn_value("a:b", 7, 1)),
            Some(with("a:b", 7, 1))
        );
        // Records of versions before attempts.
        assert_eq!(Tag::parse(b"orders:7"), Some(tag("orders", Some(7))));
    }

    proptest::proptest! {
        #[test]
        fn any_tag_round_trips(name in "[A-Za-z0-9._-]{1,40}", txn: u64, attempt: u64) {
            let parsed = Tag::parse(&Tag::txn_value(&name, txn, attempt));
            proptest::prop_assert_eq!(parsed, Some(Tag { pipeline: name, txn: Some(txn), attempt: Some(attempt) }));
        }

        #[test]
        fn no_bytes_panic_the_parser(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let _ = Tag::parse(&bytes);
        }
    }

    #[test]
    fn foreign_or_malformed_headers_are_no_tag() {
        for bad in [
            &b""[..],
            b"orders",
            b":5",
            b"orders:",
            b"orders:-1",
            b"orders:1x",
            b"orders:99999999999999999999999",
            b"\xff\xfe:1",
            b"orders:5/",
            b"orders:5/123",
            b"orders:5/0123456789abcdefg",
            b"orders:5/0123456789abcdef0",
            b"orders:/0123456789abcdef",
            b"orders:claim/0123456789abcdef",
        ] {
            assert_eq!(Tag::parse(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn records_of_a_transaction_that_never_committed_are_aborted() {
        let t = tag("orders", Some(8));
        assert_eq!(decide(Some(&t), "orders", at(7, Some(1))), Verdict::Abort);
        assert_eq!(decide(Some(&t), "orders", at(0, None)), Verdict::Abort);
    }

    #[test]
    fn another_attempt_of_the_committed_transaction_is_aborted() {
        // The attempt that was dropped unfinished (its records left open) and the one that
        // committed carry the same transaction number: only the attempt tells them apart.
        let dropped = Tag {
            attempt: Some(0xa),
            ..tag("orders", Some(7))
        };
        assert_eq!(
            decide(Some(&dropped), "orders", at(7, Some(0xb))),
            Verdict::Abort
        );
        assert_eq!(
            decide(Some(&dropped), "orders", at(7, Some(0xa))),
            Verdict::Committed
        );
    }

    #[test]
    fn records_of_the_committed_transaction_are_written_again_and_older_ones_reported() {
        let t = tag("orders", Some(7));
        // Without attempts (older versions) the number decides.
        assert_eq!(
            decide(Some(&t), "orders", at(7, Some(3))),
            Verdict::Committed
        );
        assert_eq!(decide(Some(&t), "orders", at(7, None)), Verdict::Committed);
        assert_eq!(decide(Some(&t), "orders", at(9, Some(3))), Verdict::Older);
    }

    #[test]
    fn other_producers_are_left_alone() {
        assert_eq!(decide(None, "orders", at(3, None)), Verdict::Foreign);
        let other = tag("billing", Some(9));
        assert_eq!(
            decide(Some(&other), "orders", at(3, None)),
            Verdict::Foreign
        );
        assert_eq!(decide(Some(&other), "orders", None), Verdict::Foreign);
    }

    #[test]
    fn own_records_on_the_offsets_topic_and_claims_are_aborted() {
        assert_eq!(
            decide(Some(&tag("orders", Some(3))), "orders", None),
            Verdict::Abort
        );
        assert_eq!(
            decide(Some(&tag("orders", None)), "orders", at(3, None)),
            Verdict::Abort
        );
    }

    #[test]
    fn the_advice_names_the_writer() {
        let h = Held {
            topic: "t".into(),
            partition: 2,
            lso: 10,
            high: 14,
            first: Some(tag("orders", Some(5))),
        };
        let a = h.advice("orders", "k:9092");
        assert!(a.contains("pipeline `orders`, transaction 5"), "{a}");
        assert!(a.contains("--topic t --partition 2"), "{a}");
        assert!(a.contains("do not abort them"), "{a}");
        assert!(!a.contains(" abort --topic"), "{a}");
        let foreign = Held {
            first: None,
            ..h.clone()
        };
        let f = foreign.advice("orders", "k");
        assert!(f.contains("not this pipeline"), "{f}");
        assert!(
            f.contains("abort --topic t --partition 2 --start-offset 10"),
            "{f}"
        );
        let other = h.advice("billing", "k");
        assert!(other.contains("abort --topic t"), "{other}");
    }
}
