//! The one field list of Debezium 3.5's change-event envelope ([`ENVELOPE_FIELDS`]) and of its
//! `source` block ([`SOURCE_FIELDS`]), and the instant type its times are written from
//! ([`EventTime`]).
//!
//! Invariant: the orders are Debezium 3.5.0.Final's (its envelope schema, with `transaction`
//! right after `source` as its binlog connectors define it, and the common source fields
//! followed by the binlog connectors' own). The JSON encoder, the Avro schema and the Kafka
//! Connect schema write their fields in these orders; each one's tests compare what it
//! writes with these lists, so a field added here fails those tests until every format
//! writes it.
//!
//! Times: the envelope's `ts_ms`/`ts_us`/`ts_ns` are processing time, one clock reading per
//! row change, so `ts_ms = ts_ns / 10^6` and `ts_us = ts_ns / 10^3` (truncated); the `source`
//! block's three are the row's source time at µs resolution in the same relation: the
//! transaction's commit time where the server logs one (MySQL 8.0.1+), else the rows event's
//! header second (as Debezium), the snapshot read's time for snapshot rows.
//! A leaf module.

/// One top-level field of the envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvelopeField {
    /// The row before the change (`null` for inserts and reads).
    Before,
    /// The row after the change (`null` for deletes).
    After,
    /// The `source` block ([`SOURCE_FIELDS`]).
    Source,
    /// The `transaction` block (`id`, `total_order`, `data_collection_order`).
    Transaction,
    /// The operation code.
    Op,
    /// Processing time, ms since the epoch.
    TsMs,
    /// Processing time, µs since the epoch.
    TsUs,
    /// Processing time, ns since the epoch.
    TsNs,
}

/// The envelope's fields in the order they are written.
pub const ENVELOPE_FIELDS: [EnvelopeField; 8] = [
    EnvelopeField::Before,
    EnvelopeField::After,
    EnvelopeField::Source,
    EnvelopeField::Transaction,
    EnvelopeField::Op,
    EnvelopeField::TsMs,
    EnvelopeField::TsUs,
    EnvelopeField::TsNs,
];

impl EnvelopeField {
    /// The field's name.
    pub fn name(self) -> &'static str {
        match self {
            EnvelopeField::Before => "before",
            EnvelopeField::After => "after",
            EnvelopeField::Source => "source",
            EnvelopeField::Transaction => "transaction",
            EnvelopeField::Op => "op",
            EnvelopeField::TsMs => "ts_ms",
            EnvelopeField::TsUs => "ts_us",
            EnvelopeField::TsNs => "ts_ns",
        }
    }
}

/// One field of the `source` block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceField {
    /// sluice's version.
    Version,
    /// `mysql` or `mariadb`.
    Connector,
    /// The pipeline name (Debezium's topic prefix).
    Name,
    /// Source commit time, ms since the epoch.
    TsMs,
    /// `true` for snapshot reads, else `false`.
    Snapshot,
    /// Database of the table.
    Db,
    /// Always `null`: Debezium's binlog connectors write no sequence.
    Sequence,
    /// Source commit time, µs since the epoch.
    TsUs,
    /// Source commit time, ns since the epoch (µs resolution).
    TsNs,
    /// Table name.
    Table,
    /// Source server id.
    ServerId,
    /// GTID of the transaction, if any.
    Gtid,
    /// Binlog file.
    File,
    /// Binlog position of the rows event.
    Pos,
    /// Row index within the rows event.
    Row,
    /// Connection id, when known.
    Thread,
    /// The statement text; sluice writes `null`.
    Query,
}

/// The `source` block's fields in the order they are written.
pub const SOURCE_FIELDS: [SourceField; 17] = [
    SourceField::Version,
    SourceField::Connector,
    SourceField::Name,
    SourceField::TsMs,
    SourceField::Snapshot,
    SourceField::Db,
    SourceField::Sequence,
    SourceField::TsUs,
    SourceField::TsNs,
    SourceField::Table,
    SourceField::ServerId,
    SourceField::Gtid,
    SourceField::File,
    SourceField::Pos,
    SourceField::Row,
    SourceField::Thread,
    SourceField::Query,
];

impl SourceField {
    /// The field's name.
    pub fn name(self) -> &'static str {
        match self {
            SourceField::Version => "version",
            SourceField::Connector => "connector",
            SourceField::Name => "name",
            SourceField::TsMs => "ts_ms",
            SourceField::Snapshot => "snapshot",
            SourceField::Db => "db",
            SourceField::Sequence => "sequence",
            SourceField::TsUs => "ts_us",
            SourceField::TsNs => "ts_ns",
            SourceField::Table => "table",
            SourceField::ServerId => "server_id",
            SourceField::Gtid => "gtid",
            SourceField::File => "file",
            SourceField::Pos => "pos",
            SourceField::Row => "row",
            SourceField::Thread => "thread",
            SourceField::Query => "query",
        }
    }
}

/// One instant at three resolutions, all from one reading: `ms = us / 1000`,
/// `ns = us * 1000` or the clock's own nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventTime {
    /// Nanoseconds since the epoch.
    pub ns: u64,
}

impl EventTime {
    /// The instant `us` microseconds after the epoch.
    pub fn from_us(us: u64) -> EventTime {
        EventTime {
            ns: us.saturating_mul(1000),
        }
    }

    /// Milliseconds since the epoch (truncated).
    pub fn ms(self) -> u64 {
        self.ns / 1_000_000
    }

    /// Microseconds since the epoch (truncated).
    pub fn us(self) -> u64 {
        self.ns / 1000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_are_debezium_3_5s() {
        let names: Vec<_> = ENVELOPE_FIELDS.iter().map(|f| f.name()).collect();
        assert_eq!(
            names,
            [
                "before",
                "after",
                "source",
                "transaction",
                "op",
                "ts_ms",
                "ts_us",
                "ts_ns"
            ]
        );
        let names: Vec<_> = SOURCE_FIELDS.iter().map(|f| f.name()).collect();
        assert_eq!(
            names,
            [
                "version",
                "connector",
                "name",
                "ts_ms",
                "snapshot",
                "db",
                "sequence",
                "ts_us",
                "ts_ns",
                "table",
                "server_id",
                "gtid",
                "file",
                "pos",
                "row",
                "thread",
                "query"
            ]
        );
    }

    #[test]
    fn resolutions_truncate_one_reading() {
        let t = EventTime {
            ns: 1_709_288_430_123_456_789,
        };
        assert_eq!(t.us(), 1_709_288_430_123_456);
        assert_eq!(t.ms(), 1_709_288_430_123);
        let t = EventTime::from_us(1_709_288_430_123_456);
        assert_eq!(
            (t.ms(), t.us(), t.ns),
            (
                1_709_288_430_123,
                1_709_288_430_123_456,
                1_709_288_430_123_456_000
            )
        );
        assert_eq!(EventTime::from_us(u64::MAX).ns, u64::MAX);
    }
}
