//! `sluice offsets set`: an operator's position, committed by the pipeline's own
//! transactional id after fencing, with the records Kafka left without a marker settled
//! first.

use std::time::Duration;

use rdkafka::producer::Producer;

use super::offsets::{read_own_committed, OffsetRecord};
use super::{classify, producer::SinkProducer, topics::Topics, unmarked};
use crate::error::Result;
use crate::position::SourcePosition;

/// `sluice offsets set`: fences any running instance (same transactional id), then commits an
/// operator-chosen position in a transaction of its own. Blocking.
pub fn set_offset(s: &crate::sink::SinkSettings, position: SourcePosition) -> Result<()> {
    let mut topics = Topics::new(&s.client, s.topics.clone())?;
    topics.ensure_offsets_topic(&s.offsets_topic)?;
    let producer = SinkProducer::create(
        &s.client,
        Some(&s.transactional_id),
        s.transaction_timeout_ms,
        s.max_buffer_kbytes,
    )?;
    producer
        .inner
        .init_transactions(Duration::from_secs(60))
        .map_err(|e| classify::classify("init_transactions (fencing)", &e))?;
    // Records the pipeline left without a marker are settled against the offset being
    // replaced, before the new one is written (see [`crate::sink::unmarked`]).
    let wait = super::txn::abort_wait(s.transaction_timeout_ms);
    unmarked::settle_offsets_topic(&producer, &s.client, &s.offsets_topic, &s.name, wait)?;
    // The sequence goes on from the committed record, so records Kafka left without a marker
    // are still told apart after an operator's change (see [`crate::sink::unmarked`]); held
    // records of the committed transaction are written again first ([`super::repair`]).
    let previous = read_own_committed(s)?;
    let held = unmarked::settle_data_partitions(
        &producer,
        unmarked::held_data_partitions(&super::unmarked_scope(s))?,
        &s.client,
        &s.name,
        unmarked::CommittedTxn {
            txn: previous.as_ref().map_or(0, |p| p.txn),
            attempt: previous
                .as_ref()
                .and_then(|p| super::txn_tag::parse_attempt(&p.attempt)),
        },
        &s.bootstrap,
        wait,
    )?;
    let mut producer = producer;
    let sealer = super::seal::Sealer::new(&s.client, &s.offsets_topic)?;
    let repaired = super::repair::run(&mut producer, s, &sealer, previous.as_ref(), &held)?;
    let committed_txn = repaired.or(previous).map_or(0, |p| p.txn);
    producer
        .inner
        .begin_transaction()
        .map_err(|e| classify::classify("begin_transaction", &e))?;
    let mut rec = OffsetRecord::new(&s.name, position, 0);
    rec.written_by = "operator".into();
    rec.txn = committed_txn + 1;
    let attempt = super::settle::begin_attempt(&mut producer, &s.name, rec.txn);
    rec.attempt = super::txn_tag::attempt_text(attempt);
    producer.send(
        &s.offsets_topic,
        Some(s.name.as_bytes()),
        Some(&rec.to_bytes()),
    )?;
    producer.wait_delivered()?;
    producer
        .inner
        .commit_transaction(Duration::from_secs(60))
        .map_err(|e| classify::classify("commit_transaction", &e))?;
    Ok(())
}
