//! The offsets store: one compacted, single-partition topic holding, per pipeline, the source
//! position that the last committed Kafka transaction ended at.
//!
//! Invariant: an offset record is only ever written inside the same Kafka transaction as the
//! data it covers (exactly-once), or after that data was acknowledged (at-least-once). It is
//! read back with a `read_committed` consumer *after* `init_transactions` has fenced older
//! producers and aborted their open transaction, up to the high watermark taken then
//! ([`reader`]), so the value read is exactly the position of the last committed data — never
//! of data that a crashed instance left uncommitted, and never an older one that a foreign
//! open transaction still hides.

use std::collections::BTreeMap;
use std::time::Duration;

use rdkafka::config::ClientConfig;
use serde::{Deserialize, Serialize};

use super::reader::{self, Until};
use crate::error::{Error, Result};
use crate::position::SourcePosition;

/// The format version of [`OffsetRecord`]; bumped on incompatible changes.
pub const OFFSET_FORMAT_VERSION: u32 = 1;

/// The value of an offset record (JSON), keyed by the pipeline name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OffsetRecord {
    /// Format version, [`OFFSET_FORMAT_VERSION`].
    pub version: u32,
    /// The pipeline name (also the record key).
    pub pipeline: String,
    /// Where the source resumes: the end of the last source transaction in committed data.
    pub position: SourcePosition,
    /// Source commit time (ms since the epoch) of that transaction, 0 when unknown.
    #[serde(default)]
    pub source_ts_ms: u64,
    /// Wall-clock time (ms since the epoch) at which the record was written.
    pub committed_at_ms: u64,
    /// Who wrote it: `pipeline` for normal operation, `operator` for `sluice offsets set`,
    /// `migration` for the record moved out of the shared offsets topic.
    #[serde(default = "default_writer")]
    pub written_by: String,
    /// Instance id of the writing process ([`crate::sink::claim::instance_id`]); empty in
    /// records of versions before claims.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub instance: String,
    /// The pipeline's Kafka transaction sequence: 1 for its first committed transaction, one
    /// more for each next (0 in records of versions before it). Every record of that
    /// transaction carries it in the [`crate::sink::unmarked::TXN_HEADER`] header, which is how
    /// records Kafka left without a marker are matched with the committed offset.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub txn: u64,
    /// The attempt of that transaction that committed (16 hex digits, in the header too):
    /// the records of other attempts of the same `txn` never committed. Empty in records of
    /// versions before attempts.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub attempt: String,
    /// Records of a committed transaction that Kafka left without a marker, being aborted and
    /// written again ([`crate::sink::repair`]): a record with ranges is committed before they
    /// are aborted, the one after their copies without them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repair: Vec<RepairRange>,
    /// Prepared, not yet committed XA transactions before `position` (xid → `file:pos` of the
    /// prepared group), so their rows can be read again at `XA COMMIT` after a restart.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub xa_prepared: BTreeMap<String, String>,
    /// Progress of the snapshot, committed with the rows of each chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<crate::snapshot::progress::SnapshotProgress>,
}

/// Records of one partition to write again: those in `[from, to)` whose
/// [`crate::sink::unmarked::TXN_HEADER`] is `tag`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepairRange {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// First offset (the last stable offset the records held).
    pub from: i64,
    /// End offset, exclusive (the high watermark then).
    pub to: i64,
    /// The header value of the records to copy.
    pub tag: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn default_writer() -> String {
    "pipeline".to_string()
}

impl OffsetRecord {
    /// A record written by the running pipeline.
    pub fn new(pipeline: &str, position: SourcePosition, source_ts_ms: u64) -> Self {
        OffsetRecord {
            version: OFFSET_FORMAT_VERSION,
            pipeline: pipeline.to_string(),
            position,
            source_ts_ms,
            committed_at_ms: now_ms(),
            written_by: default_writer(),
            instance: crate::sink::claim::instance_id().to_string(),
            txn: 0,
            attempt: String::new(),
            repair: Vec::new(),
            xa_prepared: BTreeMap::new(),
            snapshot: None,
        }
    }

    /// Serializes to the JSON value stored in Kafka.
    pub fn to_bytes(&self) -> Vec<u8> {
        // Serializing plain data with string keys cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Parses a stored record, refusing versions this build does not know.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let rec: OffsetRecord = serde_json::from_slice(bytes).map_err(|e| {
            Error::definite(format!(
                "the offsets topic holds a record sluice cannot read ({e}); \
                 fix it with `sluice offsets set --position <pos>`"
            ))
        })?;
        if rec.version > OFFSET_FORMAT_VERSION {
            return Err(Error::definite(format!(
                "the committed offset has format version {} but this sluice reads up to {}; \
                 run a newer sluice",
                rec.version, OFFSET_FORMAT_VERSION
            )));
        }
        Ok(rec)
    }
}

pub use crate::model::clock::now_ms;

/// The pipeline's own committed offset record, read after fencing (up to the high watermark
/// captured after `init_transactions`) from its offsets topic. Blocking.
pub(crate) fn read_own_committed(s: &crate::sink::SinkSettings) -> Result<Option<OffsetRecord>> {
    read_committed_offset(
        &s.client,
        &s.offsets_topic,
        &s.name,
        Until::CapturedHigh,
        s.read_timeout,
    )
}

/// [`read_own_committed`] with the start's offsets topic pair, connected ahead.
pub(crate) fn read_own_committed_on(
    s: &crate::sink::SinkSettings,
    pair: &crate::sink::start_readers::Pair,
) -> Result<Option<OffsetRecord>> {
    let latest = reader::read_committed_latest_on(
        pair,
        &s.client,
        &s.offsets_topic,
        |key| key == s.name.as_bytes(),
        Until::CapturedHigh,
        s.read_timeout,
    )?;
    record_of(&latest, &s.name)
}

/// Reads the last committed offset record of `pipeline` from `topic` with a `read_committed`
/// consumer (see [`reader`] for what `until` means). Blocking: call it from a blocking thread;
/// with [`Until::CapturedHigh`], after `init_transactions`.
pub fn read_committed_offset(
    base: &ClientConfig,
    topic: &str,
    pipeline: &str,
    until: Until,
    timeout: Duration,
) -> Result<Option<OffsetRecord>> {
    let latest = reader::read_committed_latest(
        base,
        topic,
        &format!("sluice-offsets-reader-{pipeline}"),
        |key| key == pipeline.as_bytes(),
        until,
        timeout,
    )?;
    record_of(&latest, pipeline)
}

/// The offset record of `pipeline` among the latest records read, if there is one.
fn record_of(
    latest: &std::collections::BTreeMap<Vec<u8>, Vec<u8>>,
    pipeline: &str,
) -> Result<Option<OffsetRecord>> {
    latest
        .get(pipeline.as_bytes())
        .map(|bytes| OffsetRecord::from_bytes(bytes))
        .transpose()
}

/// Parses the `--position` of `sluice offsets set`: `gtid:<set>`, `gtid:<list>` or
/// `file:<name>:<pos>` (not `earliest`/`latest`, which are not positions).
pub fn parse_operator_position(text: &str) -> Result<SourcePosition> {
    use crate::position::StartSpec;
    let spec: StartSpec = text
        .parse()
        .map_err(|e| Error::definite(format!("--position: {e}")))?;
    match spec {
        StartSpec::FilePos(fp) => Ok(SourcePosition::FilePos(fp)),
        StartSpec::MysqlGtid(gtid_set) => Ok(SourcePosition::MysqlGtid {
            gtid_set,
            file_pos: None,
        }),
        StartSpec::MariadbGtid(gtid_list) => Ok(SourcePosition::MariadbGtid {
            gtid_list,
            file_pos: None,
        }),
        other => Err(Error::definite(format!(
            "--position `{other}` is not a position: give gtid:<set>, gtid:<list> or \
             file:<name>:<pos> (to start over from `source.start`, use a new pipeline name)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::position::FilePos;
    use std::collections::BTreeSet;

    #[test]
    fn record_round_trips() {
        let pos = SourcePosition::FilePos(FilePos {
            file: "mysql-bin.000003".into(),
            pos: 1234,
        });
        let rec = OffsetRecord::new("shop", pos, 17);
        let back = OffsetRecord::from_bytes(&rec.to_bytes()).unwrap();
        assert_eq!(rec, back);
    }

    /// Checks a JSON document against an Avro schema: every member is a field of the record,
    /// every field is present with a value of its type or has a default.
    fn conforms(
        schema: &apache_avro::Schema,
        v: &serde_json::Value,
        path: &str,
    ) -> Result<(), String> {
        use apache_avro::Schema as S;
        use serde_json::Value as J;
        let bad = || Err(format!("{path}: {v} does not fit {schema:?}"));
        match (schema, v) {
            (S::Record(r), J::Object(o)) => {
                for k in o.keys() {
                    if !r.lookup.contains_key(k) {
                        return Err(format!("{path}.{k}: not in the schema"));
                    }
                }
                for f in &r.fields {
                    match o.get(&f.name) {
                        Some(x) => conforms(&f.schema, x, &format!("{path}.{}", f.name))?,
                        None if f.default.is_some() => {}
                        None => return Err(format!("{path}.{}: missing, no default", f.name)),
                    }
                }
                Ok(())
            }
            (S::Union(u), J::Null) if u.variants().iter().any(|s| matches!(s, S::Null)) => Ok(()),
            (S::Union(u), _) => {
                if u.variants()
                    .iter()
                    .any(|s| !matches!(s, S::Null) && conforms(s, v, path).is_ok())
                {
                    Ok(())
                } else {
                    bad()
                }
            }
            (S::String, J::String(_)) => Ok(()),
            (S::Long, J::Number(n)) if n.is_i64() => Ok(()),
            (S::Int, J::Number(n)) if n.as_i64().is_some_and(|i| i32::try_from(i).is_ok()) => {
                Ok(())
            }
            (S::Enum(e), J::String(s)) if e.symbols.contains(s) => Ok(()),
            (S::Boolean, J::Bool(_)) => Ok(()),
            (S::Double, J::Number(_)) => Ok(()),
            // u_int: a JSON number of any size that fits a u64.
            (S::String, J::Number(n)) if path.ends_with(".u_int") && n.is_u64() => Ok(()),
            (S::Array(a), J::Array(items)) => {
                for (i, x) in items.iter().enumerate() {
                    conforms(&a.items, x, &format!("{path}[{i}]"))?;
                }
                Ok(())
            }
            (S::Map(m), J::Object(o)) => {
                for (k, x) in o {
                    conforms(&m.types, x, &format!("{path}[{k}]"))?;
                }
                Ok(())
            }
            _ => bad(),
        }
    }

    /// Field paths of a JSON document (objects only; map entries count as their map).
    fn paths(v: &serde_json::Value, prefix: &str, out: &mut BTreeSet<String>) {
        if let serde_json::Value::Object(o) = v {
            for (k, x) in o {
                let p = format!("{prefix}.{k}");
                out.insert(p.clone());
                // Maps and the snapshot progress are checked by `conforms`, not path by path.
                if k != "xa_prepared" && k != "snapshot" {
                    paths(x, &p, out);
                }
            }
        }
    }

    #[test]
    fn offset_records_match_offset_avsc() {
        let text = include_str!("../../schemas/offset.avsc");
        let schema = apache_avro::Schema::parse_str(text).unwrap();
        let positions = [
            r#"{"kind":"file","file":"mysql-bin.000003","pos":1234}"#,
            r#"{"kind":"mysql_gtid","gtid_set":"3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5","file":"mysql-bin.000003","pos":4}"#,
            r#"{"kind":"mysql_gtid","gtid_set":"3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"}"#,
            r#"{"kind":"mariadb_gtid","gtid_list":"0-1-42,1-2-7"}"#,
            r#"{"kind":"mariadb_gtid","gtid_list":"0-1-42","file":"mysql-bin.000009","pos":77}"#,
        ];
        let mut seen = BTreeSet::new();
        for (i, p) in positions.iter().enumerate() {
            let position: SourcePosition = serde_json::from_str(p).unwrap();
            let mut rec = OffsetRecord::new("shop", position, 17);
            if i == 1 {
                rec.xa_prepared
                    .insert("x'01',x'',1".into(), "mysql-bin.000003:4".into());
                rec.written_by = "operator".into();
                rec.txn = 12;
            }
            if i == 2 {
                use crate::snapshot::progress::{KeyValue, SnapshotProgress, TableProgress};
                let mut t = TableProgress::new("shop", "orders", 1000);
                t.key = vec!["id".into(), "k".into(), "d".into(), "t".into()];
                t.after = Some(vec![
                    KeyValue::Int(-4),
                    KeyValue::UInt(u64::MAX),
                    KeyValue::double(0.5),
                    KeyValue::Hex("00ff".into()),
                    KeyValue::Date(2024, 5, 1, 0, 0, 0, 0),
                    KeyValue::Time(true, 1, 2, 3, 4, 5),
                ]);
                t.rows = 8192;
                t.chunks = 1;
                let mut done = TableProgress::new("shop", "users", 5);
                done.done = true;
                done.rows = 5;
                done.request = Some("r1".into());
                // As the sink writes it: the done table only counted.
                let p = SnapshotProgress {
                    started_ms: 1,
                    then_stop: true,
                    tables: vec![t, TableProgress::new("shop", "items", 0), done],
                    finished_tables: 0,
                    finished_rows: 0,
                    finished_requests: Vec::new(),
                }
                .for_record();
                assert_eq!(
                    (p.tables.len(), p.finished_tables, p.finished_rows),
                    (2, 1, 5)
                );
                assert_eq!(p.finished_requests, ["r1"]);
                rec.snapshot = Some(p);
            }
            let doc: serde_json::Value = serde_json::from_slice(&rec.to_bytes()).unwrap();
            conforms(&schema, &doc, "offset").unwrap_or_else(|e| panic!("{doc}: {e}"));
            paths(&doc, "", &mut seen);
        }
        // Every field of the schema is written by some record, and nothing else is.
        let mut want = BTreeSet::new();
        let mut fields = |prefix: &str, s: &apache_avro::Schema| {
            if let apache_avro::Schema::Record(r) = s {
                for f in &r.fields {
                    want.insert(format!("{prefix}.{}", f.name));
                }
            }
        };
        fields("", &schema);
        if let apache_avro::Schema::Record(r) = &schema {
            let position = r.fields.iter().find(|f| f.name == "position").unwrap();
            fields(".position", &position.schema);
        }
        assert_eq!(seen, want);
        // A record that leaves out defaulted fields (as old writers did) still conforms.
        let old = serde_json::json!({"version": 1, "pipeline": "p",
            "position": {"kind": "file", "file": "f.000001", "pos": 4}, "committed_at_ms": 1});
        conforms(&schema, &old, "offset").unwrap();
        // and extra fields are caught
        let extra = serde_json::json!({"version": 1, "pipeline": "p", "x": 1,
            "position": {"kind": "file", "file": "f.000001", "pos": 4}, "committed_at_ms": 1});
        assert!(conforms(&schema, &extra, "offset").is_err());
    }

    #[test]
    fn newer_versions_are_refused() {
        let text = br#"{"version":99,"pipeline":"p","position":{"kind":"file","file":"f.000001","pos":4},"committed_at_ms":1}"#;
        let err = OffsetRecord::from_bytes(text).unwrap_err();
        assert!(err.to_string().contains("format version 99"));
    }
}
