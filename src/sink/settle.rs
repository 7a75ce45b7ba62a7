//! The sink's side of records Kafka left without a transaction marker: settled at start
//! ([`super::unmarked`], [`super::repair`]) and kept from arising unseen while it runs
//! ([`super::seal`]).

use super::producer::SinkProducer;
use super::seal::{self, Sealer};
use super::state::Committed;
use super::{repair, txn, txn_tag, unmarked, SinkSettings};
use crate::error::Result;
use crate::metrics::Metrics;

/// At start, after fencing and reading the committed state (`committed`, updated when a
/// repair commits): settles this pipeline's held data partitions and returns the marker
/// checker — exactly-once (`eo`) only. Blocking.
pub fn at_start(
    producer: &mut SinkProducer,
    s: &SinkSettings,
    eo: bool,
    committed: &mut Committed,
) -> Result<Option<Sealer>> {
    if !eo {
        return Ok(None);
    }
    let sealer = Sealer::new(&s.client, &s.offsets_topic)?;
    let last = committed.offset.as_ref();
    let held = unmarked::settle_data_partitions(
        producer,
        &super::unmarked_scope(s),
        &s.name,
        unmarked::CommittedTxn {
            txn: last.map_or(0, |o| o.txn),
            attempt: last.and_then(|o| txn_tag::parse_attempt(&o.attempt)),
        },
        &s.bootstrap,
        txn::abort_wait(s.transaction_timeout_ms),
    )?;
    if let Some(rec) = repair::run(producer, s, &sealer, last, &held)? {
        committed.offset = Some(rec);
    }
    Ok(Some(sealer))
}

/// A Kafka transaction for pipeline transaction `txn` began: a new attempt id, the tag every
/// record gets, and the written offsets cleared. Returns the attempt.
pub fn begin_attempt(producer: &mut SinkProducer, pipeline: &str, txn: u64) -> u64 {
    let attempt = txn_tag::new_attempt();
    producer.take_written();
    producer.tag = Some(unmarked::Tag::txn_value(pipeline, txn, attempt));
    attempt
}

/// After a commit of pipeline transaction `own` (`(txn, attempt)`): its markers are on every
/// partition it wrote, or a transient error ends the attempt. Blocking.
pub fn after_commit(
    sealer: &Sealer,
    producer: &SinkProducer,
    s: &SinkSettings,
    own: (u64, u64),
    metrics: &Metrics,
) -> Result<()> {
    let tag = unmarked::Tag {
        pipeline: s.name.clone(),
        txn: Some(own.0),
        attempt: Some(own.1),
    };
    let written = producer.take_written();
    let wait = seal::deadline(s.transaction_timeout_ms);
    let sealed = sealer.verify(&written, &tag, wait, &s.shutdown)?;
    metrics.markers_checked(sealed.verified, sealed.unverified);
    Ok(())
}
