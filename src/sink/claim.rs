//! Ownership claims: telling a takeover from a transaction the coordinator aborted by timeout.
//!
//! Both end the same way for the old producer: the coordinator bumps the producer epoch and
//! librdkafka reports a fatal `_FENCED`. A takeover means another instance owns the pipeline
//! now and this one must stop (exit 3); a timeout (a broker or network stalled a commit past
//! `kafka.transaction_timeout_ms`) means nobody else is there and the pipeline must go on.
//!
//! Invariant: every instance, right after `init_transactions` fenced its predecessors, commits
//! a *claim record* (key [`claim_key`], value [`ClaimRecord`] naming its instance id) to the
//! offsets topic, before it reads the committed offset. Hence, once an instance `A` was fenced
//! by a new owner `B`, `B`'s committed claim is in the offsets topic after `A`'s own claim. On
//! `_FENCED`, [`decide_by_facts`] applies:
//!
//! 1. The open transaction had been open for less than `kafka.transaction_timeout_ms`: the
//!    coordinator cannot have aborted it by timeout (its clock for the transaction started
//!    after ours), so it was a takeover.
//! 2. Otherwise the offsets topic is read (read_committed) from `A`'s own claim on for
//!    [`CLAIM_GRACE`]: a claim by another instance, an offset record of another instance or of
//!    one that names none (an older sluice, which writes no claim), or an operator's
//!    `sluice offsets set`, is a takeover.
//! 3. Otherwise the fence was a timeout: the attempt ends with a transient error, and the next
//!    attempt creates a new producer, fences (harmless: nobody else is there), re-reads the
//!    committed offset and resumes — exactly as after a crash.
//!
//! Repeated timeout-fences are not a takeover by themselves: a broker that stalls commits
//! again and again (seen: two EndTxn stalls 20 s apart) must not leave the pipeline down.
//! They go through the normal backoff; the attempt that follows each is not healthy until it
//! has committed, so the delay grows while the stalls go on.
//!
//! Recovering wrongly is safe for the data: the next attempt's `init_transactions` fences the
//! real new owner, which then stops (its own transaction was young: rule 1), and exactly one
//! instance writes at any time, resuming from the committed offset.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::Producer;
use rdkafka::{Offset, TopicPartitionList};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::sink::patient;
use crate::sink::producer::SinkProducer;
use crate::sink::SinkSettings;

/// How long a fenced instance watches the offsets topic for a new owner's claim.
pub const CLAIM_GRACE: Duration = Duration::from_secs(10);

/// This process's instance id: random, fixed for the process's life.
pub fn instance_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| format!("{:016x}", rand::random::<u64>()))
}

/// The key of `pipeline`'s claim records in the offsets topic (pipeline names are
/// `[A-Za-z0-9._-]`, so no offset key has a `/`).
pub fn claim_key(pipeline: &str) -> String {
    format!("{pipeline}/claim")
}

/// The value of a claim record (JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimRecord {
    /// The pipeline claimed.
    pub pipeline: String,
    /// The claiming instance ([`instance_id`]).
    pub instance: String,
    /// Wall-clock time of the claim, ms since the epoch.
    pub claimed_at_ms: u64,
}

/// What a fenced instance decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Another instance (or an operator) owns the pipeline: stop, exit 3. Says why.
    TakenOver(String),
    /// The coordinator aborted the transaction by timeout: recover. Says why.
    TimedOut(String),
}

/// What [`decide_by_facts`] knows about the fence.
pub struct FenceFacts {
    /// How long the Kafka transaction had been open when the fence was seen (`None`: none was).
    pub open_for: Option<Duration>,
    /// `kafka.transaction_timeout_ms`.
    pub timeout: Duration,
}

/// Rule 1 (no Kafka needed): `Some` when the facts alone decide.
pub fn decide_by_facts(f: &FenceFacts) -> Option<Verdict> {
    match f.open_for {
        None => {
            return Some(Verdict::TakenOver(
                "fenced with no transaction open: only a new owner fences an idle producer".into(),
            ))
        }
        Some(age) if age < f.timeout => {
            return Some(Verdict::TakenOver(format!(
                "the transaction had been open for {} ms, less than kafka.transaction_timeout_ms \
                 ({} ms), so the coordinator did not abort it by timeout",
                age.as_millis(),
                f.timeout.as_millis()
            )))
        }
        Some(_) => {}
    }
    None
}

/// Commits this instance's claim of the pipeline (see the [module documentation](self)) right after fencing; returns
/// the offsets topic's end before it, where a later fence looks for newer claims.
pub fn write(producer: &mut SinkProducer, s: &SinkSettings) -> Result<i64> {
    let from = patient::watermarks(
        producer.inner.client(),
        &s.offsets_topic,
        0,
        patient::DEADLINE,
    )
    .map(|(_, high)| high)
    .map_err(|e| Error::transient(format!("reading the end of `{}`: {e}", s.offsets_topic)))?;
    let record = ClaimRecord {
        pipeline: s.name.clone(),
        instance: instance_id().to_string(),
        claimed_at_ms: crate::model::clock::now_ms(),
    };
    let value = serde_json::to_vec(&record).unwrap_or_default();
    let key = claim_key(&s.name);
    producer.tag = Some(crate::sink::unmarked::Tag::claim_value(&s.name));
    producer
        .inner
        .begin_transaction()
        .map_err(|e| producer.classify("begin_transaction (claim)", &e))?;
    producer.send(&s.offsets_topic, Some(key.as_bytes()), Some(&value))?;
    producer.wait_delivered()?;
    producer
        .inner
        .commit_transaction(producer.wait_limit)
        .map_err(|e| producer.classify("commit_transaction (claim)", &e))?;
    // The claim's tag stays until the first pipeline transaction sets its own: a migration
    // from the shared topics (`state::read`) writes under it, so records of that transaction
    // left without a marker are still told as this pipeline's (`unmarked`).
    tracing::info!(instance = instance_id(), topic = %s.offsets_topic, "claimed the pipeline");
    Ok(from)
}

/// What a fence means for this instance, as the error that ends the attempt: [`ErrorKind::Fenced`](crate::error::ErrorKind::Fenced)
/// for a takeover, transient for a transaction the coordinator aborted by timeout.
/// `open_for`: how long the Kafka transaction had been open.
pub fn resolve(
    msg: String,
    open_for: Option<Duration>,
    s: &SinkSettings,
    claim_from: i64,
) -> Error {
    let timeout = Duration::from_millis(s.transaction_timeout_ms);
    let facts = FenceFacts { open_for, timeout };
    let verdict = match decide_by_facts(&facts) {
        Some(v) => v,
        None => {
            tracing::warn!(grace = ?CLAIM_GRACE, "fenced after the transaction outlived kafka.transaction_timeout_ms: looking for a new owner's claim");
            match watch_for_foreign_owner(
                &s.client,
                &s.offsets_topic,
                &s.name,
                claim_from,
                CLAIM_GRACE,
            ) {
                Err(e) => return e.context("after a fence, looking for a new owner"),
                Ok(Some(owner)) => Verdict::TakenOver(owner),
                Ok(None) => Verdict::TimedOut(format!(
                    "the Kafka transaction was open for {} ms, past kafka.transaction_timeout_ms \
                     ({} ms): the coordinator aborted it and bumped the producer epoch (a stalled \
                     broker or network?); no other instance claimed the pipeline within {} s",
                    open_for.unwrap_or_default().as_millis(),
                    timeout.as_millis(),
                    CLAIM_GRACE.as_secs()
                )),
            }
        }
    };
    match verdict {
        Verdict::TakenOver(why) => Error::fenced(format!("{msg}; {why}")),
        Verdict::TimedOut(why) => {
            tracing::warn!(reason = %why, "not a takeover: recovering");
            Error::transient(format!(
                "{why}; starting again from the committed offset with a new producer (nothing \
                 was lost: the aborted transaction is invisible to read_committed consumers)"
            ))
        }
    }
}

/// Looks, in records read from the offsets topic, for a sign of another owner: a claim of
/// `pipeline` by another instance, or an offset record written by an operator or by another
/// instance. `records` are (key, value) pairs in topic order after this instance's claim.
pub fn foreign_owner<'a>(
    pipeline: &str,
    instance: &str,
    records: impl IntoIterator<Item = (&'a [u8], Option<&'a [u8]>)>,
) -> Option<String> {
    let claim = claim_key(pipeline);
    for (key, value) in records {
        let Some(value) = value else { continue };
        if key == claim.as_bytes() {
            if let Ok(c) = serde_json::from_slice::<ClaimRecord>(value) {
                if c.instance != instance {
                    return Some(format!(
                        "instance {} claimed pipeline `{pipeline}` at {} ms",
                        c.instance, c.claimed_at_ms
                    ));
                }
            }
        } else if key == pipeline.as_bytes() {
            #[derive(Deserialize)]
            struct Writer {
                #[serde(default)]
                written_by: String,
                #[serde(default)]
                instance: String,
            }
            if let Ok(w) = serde_json::from_slice::<Writer>(value) {
                if w.written_by == "operator" {
                    return Some(format!(
                        "an operator set the offset of pipeline `{pipeline}` (sluice offsets set)"
                    ));
                }
                if w.instance.is_empty() {
                    // After this instance's claim, its own records always name it.
                    return Some(format!(
                        "an offset of pipeline `{pipeline}` naming no instance was committed \
                         (an older sluice, which writes no claim, is running)"
                    ));
                }
                if w.instance != instance {
                    return Some(format!(
                        "instance {} committed an offset of pipeline `{pipeline}`",
                        w.instance
                    ));
                }
            }
        }
    }
    None
}

/// Before a later attempt of this process fences: was the pipeline taken over since this
/// process's last claim (committed at `from` or later)? A commit that stalled past the
/// transaction timeout is given up without waiting for the fence, so a new owner that
/// started meanwhile is found here, and this instance stops (exit 3) instead of fencing it.
/// Reads (read_committed) up to the topic's end as it is now, for at most [`CLAIM_GRACE`].
pub fn taken_over_since(
    base: &ClientConfig,
    topic: &str,
    pipeline: &str,
    from: i64,
) -> Result<Option<String>> {
    let consumer = claim_reader(base, topic, pipeline, from)?;
    let (_, end) = patient::watermarks(consumer.client(), topic, 0, patient::DEADLINE)
        .map_err(|e| Error::transient(format!("reading the end of `{topic}`: {e}")))?;
    if end <= from {
        return Ok(None);
    }
    let deadline = Instant::now() + CLAIM_GRACE;
    let instance = instance_id();
    while Instant::now() < deadline {
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(msg)) => {
                if let Some(key) = msg.key() {
                    if let Some(found) = foreign_owner(pipeline, instance, [(key, msg.payload())]) {
                        return Ok(Some(found));
                    }
                }
                if msg.offset() + 1 >= end {
                    return Ok(None);
                }
            }
            Some(Err(e)) => tracing::debug!(error = %e, topic, "reading claims"),
            None => {
                // Past the last committed record (only markers or aborted data remain).
                let reached = consumer
                    .position()
                    .ok()
                    .and_then(|tpl| tpl.find_partition(topic, 0).map(|p| p.offset()))
                    .and_then(|o| o.to_raw())
                    .is_some_and(|o| o >= end);
                if reached {
                    return Ok(None);
                }
            }
        }
    }
    Ok(None)
}

fn claim_reader(
    base: &ClientConfig,
    topic: &str,
    pipeline: &str,
    from: i64,
) -> Result<BaseConsumer> {
    let mut cfg = super::client_roles::for_consumer(base);
    cfg.set("group.id", format!("sluice-claim-watch-{pipeline}"))
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "false")
        .set("isolation.level", "read_committed")
        .set("fetch.wait.max.ms", "100")
        .set("auto.offset.reset", "earliest");
    let consumer: BaseConsumer = cfg
        .create()
        .map_err(|e| Error::transient(format!("cannot create a reader of `{topic}`: {e}")))?;
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Offset(from.max(0)))
        .map_err(|e| Error::definite(format!("topic `{topic}`: {e}")))?;
    super::reader::assign_with_leaders(&consumer, topic, &tpl)?;
    Ok(consumer)
}

/// Reads `topic` (read_committed) from `from` for up to `grace`, returning as soon as
/// [`foreign_owner`] finds another owner. Blocking: call it from the sink's thread.
pub fn watch_for_foreign_owner(
    base: &ClientConfig,
    topic: &str,
    pipeline: &str,
    from: i64,
    grace: Duration,
) -> Result<Option<String>> {
    let consumer = claim_reader(base, topic, pipeline, from)?;
    let deadline = Instant::now() + grace;
    let instance = instance_id();
    while Instant::now() < deadline {
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(msg)) => {
                let Some(key) = msg.key() else { continue };
                if let Some(found) = foreign_owner(pipeline, instance, [(key, msg.payload())]) {
                    return Ok(Some(found));
                }
            }
            Some(Err(e)) => {
                tracing::debug!(error = %e, topic, "reading claims");
            }
            None => {}
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(open_ms: Option<u64>) -> FenceFacts {
        FenceFacts {
            open_for: open_ms.map(Duration::from_millis),
            timeout: Duration::from_millis(5000),
        }
    }

    #[test]
    fn a_young_transaction_means_a_takeover() {
        assert!(matches!(
            decide_by_facts(&facts(Some(4999))),
            Some(Verdict::TakenOver(_))
        ));
        assert!(matches!(
            decide_by_facts(&facts(None)),
            Some(Verdict::TakenOver(_))
        ));
    }

    #[test]
    fn an_old_transaction_needs_the_topic_even_when_it_recurs() {
        assert_eq!(decide_by_facts(&facts(Some(5000))), None);
        assert_eq!(decide_by_facts(&facts(Some(60_000))), None);
        // A second stall right after recovering from one is still decided by the topic.
        assert_eq!(decide_by_facts(&facts(Some(9000))), None);
    }

    #[test]
    fn foreign_claims_and_operators_are_found_own_records_are_not() {
        let me = "aaaa";
        let own = serde_json::to_vec(&ClaimRecord {
            pipeline: "p".into(),
            instance: me.into(),
            claimed_at_ms: 1,
        })
        .unwrap();
        let other = serde_json::to_vec(&ClaimRecord {
            pipeline: "p".into(),
            instance: "bbbb".into(),
            claimed_at_ms: 2,
        })
        .unwrap();
        let key = claim_key("p");
        let own_offset =
            br#"{"version":1,"pipeline":"p","instance":"aaaa","written_by":"pipeline"}"#;
        let old_offset = br#"{"version":1,"pipeline":"p","written_by":"pipeline"}"#;
        let operator = br#"{"version":1,"pipeline":"p","written_by":"operator"}"#;
        let records: Vec<(&[u8], Option<&[u8]>)> = vec![
            (key.as_bytes(), Some(&own)),
            (b"p", Some(own_offset)),
            (b"p", None),
            // another pipeline's claim on a shared topic
            (b"q/claim", Some(&other)),
        ];
        assert_eq!(foreign_owner("p", me, records.clone()), None);
        let mut with_claim = records.clone();
        with_claim.push((key.as_bytes(), Some(&other)));
        assert!(foreign_owner("p", me, with_claim).unwrap().contains("bbbb"));
        let mut with_old = records.clone();
        with_old.push((b"p", Some(old_offset)));
        assert!(foreign_owner("p", me, with_old)
            .unwrap()
            .contains("older sluice"));
        let mut with_operator = records;
        with_operator.push((b"p", Some(operator)));
        assert!(foreign_owner("p", me, with_operator)
            .unwrap()
            .contains("operator"));
    }

    #[test]
    fn instance_ids_are_stable_and_distinct_from_claim_keys() {
        assert_eq!(instance_id(), instance_id());
        assert_eq!(instance_id().len(), 16);
        assert_eq!(claim_key("shop"), "shop/claim");
    }
}
