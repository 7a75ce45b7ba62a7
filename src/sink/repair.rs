//! Records of the *committed* transaction that Kafka left without a marker: aborted and
//! written again, so that no later abort marker can take them.
//!
//! **Why.** Such records stay open on their partition and the partition counts them as the
//! open transaction of the pipeline's producer id: its next marker there decides them. Left
//! alone, a commit there makes them visible (right), but an abort there — the next attempt
//! failing while it wrote there, or an operator's `kafka-transactions.sh abort` — loses them
//! while the offset record says they were written. Nothing the pipeline does can promise that
//! its next transaction on that partition commits. What it can do is decide them itself.
//!
//! **How** (at start, after [`super::unmarked`] found them, before anything else is written),
//! in three steps that each leave a state the next start goes on from:
//! 1. *Intent.* A transaction writes only an offset record: the same position, the next
//!    pipeline transaction, and the ranges to write again ([`RepairRange`]: partition,
//!    offsets, the tag of the records). It commits (no marker reaches the held partitions)
//!    and its own markers are checked ([`super::seal`]).
//! 2. *Abort.* An [`unmarked::abort_probe`] on each partition: its abort marker ends the held
//!    records as aborted. `read_committed` consumers never saw them (they were behind the
//!    last stable offset) and never will.
//! 3. *Copy.* One transaction reads each range with a `read_uncommitted` consumer (aborted
//!    records stay in the log), writes every record with the range's tag again to the same
//!    partition — key, value, timestamp and headers unchanged but the tag — and an offset
//!    record without ranges. Its markers are checked too.
//!
//! A start that finds ranges in the committed offset record (a stop between the steps)
//! repeats 2 (a partition already ended needs no probe) and 3. Before 1 commits nothing has
//! changed: the next start finds the records still held. Copies are written only after the
//! originals are aborted, and only in the transaction that also removes the ranges, so the
//! records are visible exactly once.

use std::time::{Duration, Instant};

use rdkafka::error::KafkaError;
use rdkafka::message::{Header, Headers, Message, OwnedHeaders};
use rdkafka::producer::Producer;
use rdkafka::{Offset, TopicPartitionList};

use super::offsets::{OffsetRecord, RepairRange};
use super::producer::SinkProducer;
use super::seal::{self, Sealer};
use super::txn_tag::{self, Tag, TXN_HEADER};
use super::unmarked::{self, Held};
use super::{reader, txn, SinkSettings};
use crate::error::{Error, Result};

/// How long copying one range may take.
const COPY_DEADLINE: Duration = Duration::from_secs(120);

/// The ranges of the committed attempt's held partitions `held`.
pub fn ranges_of(held: &[Held]) -> Vec<RepairRange> {
    held.iter()
        .filter_map(|h| {
            let tag = h.first.as_ref()?;
            Some(RepairRange {
                topic: h.topic.clone(),
                partition: h.partition,
                from: h.lso,
                to: h.high,
                tag: String::from_utf8_lossy(&tag.value()).into_owned(),
            })
        })
        .collect()
}

/// Writes again the held records of the committed attempt (`held`) and finishes a repair
/// the committed offset record names. Returns the offset record it committed last, if it
/// committed any. Blocking; at start, after [`unmarked::settle_data_partitions`].
pub fn run(
    producer: &mut SinkProducer,
    s: &SinkSettings,
    sealer: &Sealer,
    committed: Option<&OffsetRecord>,
    held: &[Held],
) -> Result<Option<OffsetRecord>> {
    let Some(base) = committed else {
        return Ok(None);
    };
    let mut ranges = base.repair.clone();
    // The same records may be held with another end offset by now: one range per partition
    // and tag, or they would be copied twice.
    let fresh: Vec<RepairRange> = ranges_of(held)
        .into_iter()
        .filter(|r| {
            !ranges
                .iter()
                .any(|o| (&o.topic, o.partition, &o.tag) == (&r.topic, r.partition, &r.tag))
        })
        .collect();
    if ranges.is_empty() && fresh.is_empty() {
        return Ok(None);
    }
    let mut current = base.clone();
    if !fresh.is_empty() {
        ranges.extend(fresh);
        let mut intent = next_record(&current);
        intent.repair = ranges.clone();
        commit_record(producer, s, sealer, &intent, |_, _| Ok(()))?;
        current = intent;
    }
    let wait = txn::abort_wait(s.transaction_timeout_ms);
    for r in &ranges {
        abort_originals(producer, s, r, wait)?;
    }
    let mut done = next_record(&current);
    done.repair.clear();
    let mut copied = 0u64;
    commit_record(producer, s, sealer, &done, |p, tag| {
        for r in &ranges {
            copied += copy_range(p, s, r, tag)?;
        }
        Ok(())
    })?;
    tracing::warn!(
        ranges = ?ranges,
        records = copied,
        committed_transaction = done.txn,
        "wrote again the records of a committed transaction that Kafka left without a \
         transaction marker (a broker had no leader for the partition while the coordinator \
         committed): the originals were aborted first, so each is visible once"
    );
    Ok(Some(done))
}

/// The offset record of the next pipeline transaction at the same position.
fn next_record(current: &OffsetRecord) -> OffsetRecord {
    let mut next = current.clone();
    next.txn = current.txn + 1;
    next.attempt = txn_tag::attempt_text(txn_tag::new_attempt());
    next.committed_at_ms = super::offsets::now_ms();
    next.instance = super::claim::instance_id().to_string();
    next.written_by = "pipeline".to_string();
    next
}

/// One pipeline transaction: `body`, then `rec` on the offsets topic; committed and its
/// markers checked.
fn commit_record(
    producer: &mut SinkProducer,
    s: &SinkSettings,
    sealer: &Sealer,
    rec: &OffsetRecord,
    body: impl FnOnce(&SinkProducer, &[u8]) -> Result<()>,
) -> Result<()> {
    let attempt = txn_tag::parse_attempt(&rec.attempt).unwrap_or_default();
    let tag_value = Tag::txn_value(&s.name, rec.txn, attempt);
    let own = Tag::parse(&tag_value).ok_or_else(|| Error::definite("internal: own tag"))?;
    producer.take_written();
    producer
        .inner
        .begin_transaction()
        .map_err(|e| producer.classify("begin_transaction (writing records again)", &e))?;
    producer.tag = Some(tag_value.clone());
    body(producer, &tag_value)?;
    producer.send(
        &s.offsets_topic,
        Some(s.name.as_bytes()),
        Some(&rec.to_bytes()),
    )?;
    producer.wait_delivered()?;
    txn::commit(producer, &s.shutdown)?;
    let written = producer.take_written();
    sealer.verify(
        &written,
        &own,
        seal::deadline(s.transaction_timeout_ms),
        &s.shutdown,
    )?;
    Ok(())
}

/// Ends the range's originals as aborted when they are still open.
fn abort_originals(
    producer: &SinkProducer,
    s: &SinkSettings,
    r: &RepairRange,
    wait: Duration,
) -> Result<()> {
    let Some(before) = unmarked::held_partition(&s.client, &r.topic, r.partition)? else {
        return Ok(());
    };
    if before.lso >= r.to {
        return Ok(());
    }
    unmarked::abort_probe(producer, &r.topic, r.partition, wait)?;
    match unmarked::held_partition(&s.client, &r.topic, r.partition)? {
        Some(after) if after.lso == before.lso && after.lso < r.to => {
            Err(Error::transient(format!(
                "`{}` partition {}: the records from offset {} to {} are still open after this \
                 pipeline aborted its own open records there (another producer's transaction \
                 holds the partition); the next attempt tries again",
                r.topic, r.partition, after.lso, after.high
            )))
        }
        _ => Ok(()),
    }
}

/// Writes again the records of `r` tagged with its tag, tagged `tag`. Blocking.
fn copy_range(
    producer: &SinkProducer,
    s: &SinkSettings,
    r: &RepairRange,
    tag: &[u8],
) -> Result<u64> {
    let c = reader::consumer(&s.client, "sluice-repair", "read_uncommitted", &r.topic)?;
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(&r.topic, r.partition, Offset::Offset(r.from))
        .map_err(|e| Error::transient(format!("reading `{}` [{}]: {e}", r.topic, r.partition)))?;
    reader::assign_with_leaders(&c, &r.topic, &tpl)?;
    let started = Instant::now();
    let mut copied = 0;
    loop {
        if started.elapsed() > COPY_DEADLINE {
            return Err(Error::transient(format!(
                "`{}` partition {}: offsets {} to {} could not be read within {COPY_DEADLINE:?} \
                 to write their records again",
                r.topic, r.partition, r.from, r.to
            )));
        }
        s.shutdown.check("writing records again")?;
        match c.poll(Duration::from_millis(200)) {
            Some(Ok(m)) => {
                if m.offset() >= r.to {
                    return Ok(copied);
                }
                if is_tagged(&m, r.tag.as_bytes()) {
                    producer.send_copy(
                        &r.topic,
                        r.partition,
                        m.key(),
                        m.payload(),
                        retagged(&m, tag),
                        m.timestamp().to_millis(),
                    )?;
                    copied += 1;
                }
                if m.offset() + 1 >= r.to {
                    return Ok(copied);
                }
            }
            Some(Err(KafkaError::PartitionEOF(_)))
                if reader::position(&c, &r.topic, r.partition) >= r.to =>
            {
                return Ok(copied);
            }
            Some(Err(e)) => {
                tracing::debug!(error = %e, topic = %r.topic, "reading records to write again");
            }
            None => {}
        }
    }
}

fn is_tagged<M: Message>(m: &M, tag: &[u8]) -> bool {
    m.headers().is_some_and(|h| {
        h.iter()
            .any(|h| h.key == TXN_HEADER && h.value == Some(tag))
    })
}

/// The record's headers with the tag replaced by `tag`.
fn retagged<M: Message>(m: &M, tag: &[u8]) -> OwnedHeaders {
    let mut out = OwnedHeaders::new();
    if let Some(h) = m.headers() {
        for h in h.iter().filter(|h| h.key != TXN_HEADER) {
            out = out.insert(Header {
                key: h.key,
                value: h.value,
            });
        }
    }
    out.insert(Header {
        key: TXN_HEADER,
        value: Some(tag),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_carry_the_exact_header_of_the_held_records() {
        let held = |first: Option<Tag>| Held {
            topic: "t".into(),
            partition: 2,
            lso: 10,
            high: 14,
            first,
        };
        let with_attempt = Tag::parse(&Tag::txn_value("orders", 7, 0xab)).unwrap();
        let legacy = Tag::parse(b"orders:7").unwrap();
        let r = ranges_of(&[held(Some(with_attempt)), held(Some(legacy)), held(None)]);
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(r[0].tag, "orders:7/00000000000000ab");
        assert_eq!(r[1].tag, "orders:7");
        assert_eq!((r[0].from, r[0].to, r[0].partition), (10, 14, 2));
    }

    #[test]
    fn the_next_record_keeps_the_position_and_counts_on() {
        let pos = crate::position::SourcePosition::FilePos(crate::position::FilePos {
            file: "mysql-bin.000001".into(),
            pos: 4,
        });
        let mut rec = OffsetRecord::new("orders", pos, 5);
        rec.txn = 9;
        rec.attempt = txn_tag::attempt_text(1);
        let next = next_record(&rec);
        assert_eq!(next.position, rec.position);
        assert_eq!(next.txn, 10);
        assert_ne!(next.attempt, rec.attempt);
        assert!(txn_tag::parse_attempt(&next.attempt).is_some());
    }
}
