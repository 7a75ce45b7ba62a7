//! The sink's writing of Debezium's further topics into the open Kafka transaction: the
//! transaction metadata records ([`super::txn_metadata`]) around a source transaction's rows,
//! and the heartbeat ([`super::heartbeat`]) with an offset record.

use crate::encode::json::Record;
use crate::error::Result;
use crate::model::RowsKind;

use super::heartbeat::{self, Heartbeat};
use super::txn_metadata::{self, TxnMetadata};
use super::Sink;

impl Sink {
    /// Before the first event of the open source transaction: its `BEGIN` record (Avro
    /// schemas registered first). Snapshot reads get none.
    pub(super) fn txn_metadata_begin(&mut self, kind: RowsKind) -> Result<()> {
        if kind == RowsKind::Read || self.txn_metadata.as_ref().is_none_or(TxnMetadata::started) {
            return Ok(());
        }
        self.register_txn_metadata()?;
        let ts_ms = self.meta.ts_us / 1000;
        let id = self.meta.id();
        let Some(tm) = self.txn_metadata.as_mut() else {
            return Ok(());
        };
        let rec = tm.begin(id, ts_ms);
        self.send_txn_metadata(&rec)
    }

    /// Counts the envelopes (not the tombstones) of one row change of table `label`.
    pub(super) fn txn_metadata_count(&mut self, label: &str) {
        if let Some(tm) = self.txn_metadata.as_mut() {
            let events = self.records.iter().filter(|r| r.value.is_some()).count();
            tm.count(label, events as u64);
        }
    }

    /// At the source commit (`commit_event_ts_ms`: the commit event's header time): the `END`
    /// record of the transaction, if it had events.
    pub(super) fn txn_metadata_end(&mut self, commit_event_ts_ms: u64) -> Result<()> {
        let ts_ms = end_ts_ms(self.meta.connector, self.meta.ts_us, commit_event_ts_ms);
        let Some(rec) = self.txn_metadata.as_mut().and_then(|tm| tm.end(ts_ms)) else {
            return Ok(());
        };
        self.send_txn_metadata(&rec)
    }

    fn send_txn_metadata(&mut self, rec: &Record) -> Result<()> {
        let Some(tm) = self.txn_metadata.as_ref() else {
            return Ok(());
        };
        self.topics.ensure_ordered_topic(&tm.topic)?;
        self.producer
            .send_with_header(&tm.topic, rec.key.as_deref(), rec.value.as_deref(), None)
            .map_err(|e| {
                e.context(format!(
                    "writing the transaction metadata topic {}",
                    tm.topic
                ))
            })?;
        self.kafka_records += 1;
        self.counts.bytes +=
            (rec.key.as_ref().map_or(0, Vec::len) + rec.value.as_ref().map_or(0, Vec::len)) as u64;
        Ok(())
    }

    /// Registers the Avro key and value schemas of the records once (see
    /// [`Sink::register_fixed`]).
    fn register_txn_metadata(&mut self) -> Result<()> {
        let Some(tm) = self.txn_metadata.as_ref().filter(|tm| tm.needs_ids()) else {
            return Ok(());
        };
        let topic = tm.topic.clone();
        let ids = self.register_fixed(
            "transaction_metadata",
            &topic,
            (txn_metadata::KEY_SCHEMA, txn_metadata::KEY_NAME),
            (txn_metadata::VALUE_SCHEMA, txn_metadata::VALUE_NAME),
        )?;
        if let Some(tm) = self.txn_metadata.as_mut() {
            tm.set_ids(ids);
        }
        Ok(())
    }
}

impl Sink {
    /// Writes a heartbeat into the open Kafka transaction if one is due (before its offset
    /// record).
    pub(super) fn heartbeat_if_due(&mut self) -> Result<()> {
        let Some(hb) = self.heartbeat.as_ref().filter(|hb| hb.due()) else {
            return Ok(());
        };
        if hb.needs_ids() {
            let topic = hb.topic.clone();
            let ids = self.register_fixed(
                "heartbeat",
                &topic,
                (heartbeat::KEY_SCHEMA, heartbeat::KEY_NAME),
                (heartbeat::VALUE_SCHEMA, heartbeat::VALUE_NAME),
            )?;
            if let Some(hb) = self.heartbeat.as_mut() {
                hb.set_ids(ids);
            }
        }
        let Some(hb) = self.heartbeat.as_mut() else {
            return Ok(());
        };
        let rec = hb.beat(crate::model::clock::now_ms());
        let topic = hb.topic.clone();
        self.topics.ensure_ordered_topic(&topic)?;
        self.producer
            .send_with_header(&topic, rec.key.as_deref(), rec.value.as_deref(), None)
            .map_err(|e| e.context(format!("writing the heartbeat topic {topic}")))?;
        self.kafka_records += 1;
        Ok(())
    }

    /// On an idle pipeline (no Kafka transaction open), whether a heartbeat is due; if so the
    /// checkpoint to commit it with is pending (the last committed one again when nothing
    /// newer is).
    pub(super) fn heartbeat_wanted(&mut self) -> bool {
        if self.kafka_open || !self.heartbeat.as_ref().is_some_and(Heartbeat::due) {
            return false;
        }
        if self.pending.is_none() {
            self.pending = self.last_committed.clone();
        }
        self.pending.is_some()
    }
}

/// The `END` record's `ts_ms`, as Debezium's connectors give it: on MySQL the transaction's
/// commit time (`txn_ts_us`, from the GTID event's `original_commit_timestamp`, so with
/// milliseconds; the header's seconds where the server logs none), on MariaDB the commit
/// event's header time (whole seconds: its binlog has no finer time).
fn end_ts_ms(connector: &str, txn_ts_us: u64, commit_event_ts_ms: u64) -> u64 {
    if connector == "mysql" {
        txn_ts_us / 1000
    } else {
        commit_event_ts_ms
    }
}

#[cfg(test)]
mod tests {
    use super::end_ts_ms;

    #[test]
    fn end_time_is_the_commit_time_at_the_sources_resolution() {
        // MySQL: the GTID event's commit time in µs, not the XID header's whole second.
        assert_eq!(
            end_ts_ms("mysql", 1_709_288_430_123_456, 1_709_288_430_000),
            1_709_288_430_123
        );
        // MariaDB: the commit event's own second (a transaction may span a second boundary).
        assert_eq!(
            end_ts_ms("mariadb", 1_709_288_430_000_000, 1_709_288_431_000),
            1_709_288_431_000
        );
    }
}
