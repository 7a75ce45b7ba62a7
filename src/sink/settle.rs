//! The sink's side of records Kafka left without a transaction marker: settled at start
//! ([`super::unmarked`], [`super::repair`]) and kept from arising unseen while it runs
//! ([`super::seal`]).

use super::producer::SinkProducer;
use super::seal::{self, Sealer};
use super::state::Committed;
use super::{repair, txn, txn_tag, unmarked, SinkSettings};
use crate::error::Result;
use crate::metrics::Metrics;

/// What the start looks at beside the committed state read, after fencing (exactly-once
/// only): the held data partitions, and the marker checker. The look waits on its own round
/// trips, so it runs at the same time as that read.
pub struct Looked {
    sealer: Sealer,
    held: Vec<unmarked::Held>,
}

/// [`Looked`], timed on the start-up timeline; the marker checker reads with `seal` (a pair
/// connected ahead, else its own). Blocking; after `init_transactions`.
pub fn look_at_start(s: &SinkSettings, seal: Option<super::start_readers::Pair>) -> Result<Looked> {
    let held = s.startup.step("sink: data partitions looked at", || {
        unmarked::held_data_partitions(&super::unmarked_scope(s))
    })?;
    let sealer = match seal {
        Some(pair) => Sealer::of_pair(pair),
        None => Sealer::new(&s.client, &s.offsets_topic)?,
    };
    Ok(Looked { sealer, held })
}

/// At start, after fencing and reading the committed state (`committed`, updated when a
/// repair commits): settles this pipeline's held data partitions (`looked`) and returns the
/// marker checker. Blocking.
pub fn at_start(
    producer: &mut SinkProducer,
    s: &SinkSettings,
    looked: Looked,
    committed: &mut Committed,
) -> Result<Sealer> {
    let Looked { sealer, held } = looked;
    let last = committed.offset.as_ref();
    let held = unmarked::settle_data_partitions(
        producer,
        held,
        &s.client,
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
    Ok(sealer)
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
