//! Replication positions: binlog file coordinates, MySQL GTID sets and MariaDB
//! GTID lists, the [`SourcePosition`] sluice commits alongside its Kafka output,
//! and the [`StartSpec`] a user configures.
//!
//! Everything here is pure data (no I/O, no protocol crates). Invariants: all
//! values are canonical — parsing normalizes (sorted, coalesced, lowercase) so
//! derived equality is semantic equality, and `Display` output parses back to an
//! equal value.

mod file_pos;
mod mariadb_gtid;
mod mysql_gtid;
mod text;

pub use file_pos::FilePos;
pub use mariadb_gtid::{GtidList, MariadbGtid};
pub use mysql_gtid::{Gtid, GtidSet, Uuid16, MAX_GNO};
pub(crate) use text::serde_via_str;
pub use text::PositionError;

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The source offset sluice commits with each transaction's output.
///
/// Serialized as a flat JSON object tagged by `kind`, GTID state as its text form:
/// `{"kind":"mysql_gtid","gtid_set":"uuid:1-5","file":"mysql-bin.000003","pos":1234}`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SourcePosition {
    /// File/position replication (no GTIDs).
    FilePos(FilePos),
    /// MySQL GTID replication.
    MysqlGtid {
        /// All transactions applied so far.
        gtid_set: GtidSet,
        /// Informative: where the committed transaction ended.
        file_pos: Option<FilePos>,
    },
    /// MariaDB GTID replication.
    MariadbGtid {
        /// Last transaction applied per domain.
        gtid_list: GtidList,
        /// Informative: where the committed transaction ended.
        file_pos: Option<FilePos>,
    },
}

impl SourcePosition {
    /// The `kind` tag used in JSON: `file`, `mysql_gtid` or `mariadb_gtid`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::FilePos(_) => "file",
            Self::MysqlGtid { .. } => "mysql_gtid",
            Self::MariadbGtid { .. } => "mariadb_gtid",
        }
    }

    /// The binlog coordinates, if known.
    pub fn file_pos(&self) -> Option<&FilePos> {
        match self {
            Self::FilePos(fp) => Some(fp),
            Self::MysqlGtid { file_pos, .. } | Self::MariadbGtid { file_pos, .. } => {
                file_pos.as_ref()
            }
        }
    }

    /// Compares replication progress: file positions by binlog order, GTID
    /// states by inclusion (ignoring the informative file position). `None`
    /// when kinds differ or the GTID states are incomparable.
    pub fn partial_cmp_progress(&self, other: &Self) -> Option<Ordering> {
        match (self, other) {
            (Self::FilePos(a), Self::FilePos(b)) => Some(a.cmp(b)),
            (Self::MysqlGtid { gtid_set: a, .. }, Self::MysqlGtid { gtid_set: b, .. }) => {
                a.partial_cmp(b)
            }
            (Self::MariadbGtid { gtid_list: a, .. }, Self::MariadbGtid { gtid_list: b, .. }) => {
                a.partial_cmp(b)
            }
            _ => None,
        }
    }

    /// The [`StartSpec`] that resumes replication right after this position.
    pub fn to_start_spec(&self) -> StartSpec {
        match self {
            Self::FilePos(fp) => StartSpec::FilePos(fp.clone()),
            Self::MysqlGtid { gtid_set, .. } => StartSpec::MysqlGtid(gtid_set.clone()),
            Self::MariadbGtid { gtid_list, .. } => StartSpec::MariadbGtid(gtid_list.clone()),
        }
    }
}

impl fmt::Display for SourcePosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::FilePos(fp) => write!(f, "file:{fp}"),
            Self::MysqlGtid { gtid_set, .. } => write!(f, "gtid:{gtid_set}"),
            Self::MariadbGtid { gtid_list, .. } => write!(f, "gtid:{gtid_list}"),
        }
    }
}

impl Serialize for SourcePosition {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("kind", self.kind())?;
        match self {
            Self::FilePos(_) => {}
            Self::MysqlGtid { gtid_set, .. } => map.serialize_entry("gtid_set", gtid_set)?,
            Self::MariadbGtid { gtid_list, .. } => map.serialize_entry("gtid_list", gtid_list)?,
        }
        if let Some(fp) = self.file_pos() {
            map.serialize_entry("file", &fp.file)?;
            map.serialize_entry("pos", &fp.pos)?;
        }
        map.end()
    }
}

/// The JSON shape of [`SourcePosition`], before validation.
#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum WirePosition {
    File {
        file: String,
        pos: u64,
    },
    MysqlGtid {
        gtid_set: GtidSet,
        file: Option<String>,
        pos: Option<u64>,
    },
    MariadbGtid {
        gtid_list: GtidList,
        file: Option<String>,
        pos: Option<u64>,
    },
}

fn optional_file_pos(
    file: Option<String>,
    pos: Option<u64>,
) -> Result<Option<FilePos>, PositionError> {
    match (file, pos) {
        (Some(file), Some(pos)) => FilePos::new(file, pos).map(Some),
        (None, None) => Ok(None),
        (file, pos) => Err(PositionError::syntax(
            "source position file/pos pair",
            format!("file={file:?} pos={pos:?}"),
            "both `file` and `pos`, or neither",
        )),
    }
}

impl<'de> Deserialize<'de> for SourcePosition {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let position = match WirePosition::deserialize(d)? {
            WirePosition::File { file, pos } => FilePos::new(file, pos).map(Self::FilePos),
            WirePosition::MysqlGtid {
                gtid_set,
                file,
                pos,
            } => {
                optional_file_pos(file, pos).map(|file_pos| Self::MysqlGtid { gtid_set, file_pos })
            }
            WirePosition::MariadbGtid {
                gtid_list,
                file,
                pos,
            } => optional_file_pos(file, pos).map(|file_pos| Self::MariadbGtid {
                gtid_list,
                file_pos,
            }),
        };
        position.map_err(serde::de::Error::custom)
    }
}

/// Where to start replicating when there is no committed position, from the config.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StartSpec {
    /// `earliest`: the oldest binlog still on the server.
    Earliest,
    /// `latest`: the server's current position.
    Latest,
    /// `initial`: snapshot the tables, then stream from the snapshot's position.
    Initial,
    /// `snapshot_only`: snapshot the tables and stop.
    SnapshotOnly,
    /// `gtid:<set>` with a non-empty MySQL GTID set.
    MysqlGtid(GtidSet),
    /// `gtid:<list>` with a non-empty MariaDB GTID list.
    MariadbGtid(GtidList),
    /// `file:<name>:<pos>`.
    FilePos(FilePos),
}

impl fmt::Display for StartSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Earliest => f.write_str("earliest"),
            Self::Latest => f.write_str("latest"),
            Self::Initial => f.write_str("initial"),
            Self::SnapshotOnly => f.write_str("snapshot_only"),
            Self::MysqlGtid(set) => write!(f, "gtid:{set}"),
            Self::MariadbGtid(list) => write!(f, "gtid:{list}"),
            Self::FilePos(fp) => write!(f, "file:{fp}"),
        }
    }
}

/// True if `text` looks like a MariaDB GTID list: its first entry has only
/// digits and `-` (a MySQL entry has a hex uuid followed by `:`).
fn looks_like_mariadb(text: &str) -> bool {
    let first = text.split(',').next().unwrap_or_default().trim();
    !first.is_empty() && first.bytes().all(|b| b.is_ascii_digit() || b == b'-')
}

impl FromStr for StartSpec {
    type Err = PositionError;

    /// Parses `earliest`, `latest`, `initial`, `snapshot_only` (any case),
    /// `gtid:<MySQL set or MariaDB list>` (by shape) or `file:<name>:<pos>`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim();
        let err = |reason: String| PositionError::StartSpec {
            found: s.to_owned(),
            reason,
        };
        let wrap = |e: PositionError| err(e.to_string());
        let (prefix, rest) = text.split_once(':').unwrap_or((text, ""));
        let spec = match (
            prefix.to_ascii_lowercase().as_str(),
            prefix.len() < text.len(),
        ) {
            ("earliest", false) => Self::Earliest,
            ("latest", false) => Self::Latest,
            ("initial", false) => Self::Initial,
            ("snapshot_only", false) => Self::SnapshotOnly,
            ("gtid", _) if looks_like_mariadb(rest) => {
                Self::MariadbGtid(rest.parse().map_err(wrap)?)
            }
            ("gtid", _) => Self::MysqlGtid(rest.parse().map_err(wrap)?),
            ("file", _) => Self::FilePos(rest.parse().map_err(wrap)?),
            ("earliest" | "latest" | "initial" | "snapshot_only", true) => {
                return Err(err(format!("`{prefix}` takes no argument")))
            }
            _ => return Err(err("unknown form".into())),
        };
        match &spec {
            Self::MysqlGtid(set) if set.is_empty() => Err(err(EMPTY_GTID.into())),
            Self::MariadbGtid(list) if list.is_empty() => Err(err(EMPTY_GTID.into())),
            _ => Ok(spec),
        }
    }
}

const EMPTY_GTID: &str = "empty GTID set; use `earliest` to start from the beginning";

serde_via_str!(StartSpec);

#[cfg(test)]
mod tests {
    use super::file_pos::tests::arb_file_pos;
    use super::mariadb_gtid::tests::arb_gtid_list;
    use super::mysql_gtid::tests::arb_gtid_set;
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const A: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562";

    fn arb_source_position() -> impl Strategy<Value = SourcePosition> {
        prop_oneof![
            arb_file_pos().prop_map(SourcePosition::FilePos),
            (arb_gtid_set(), proptest::option::of(arb_file_pos()))
                .prop_map(|(gtid_set, file_pos)| SourcePosition::MysqlGtid { gtid_set, file_pos }),
            (arb_gtid_list(), proptest::option::of(arb_file_pos())).prop_map(
                |(gtid_list, file_pos)| SourcePosition::MariadbGtid {
                    gtid_list,
                    file_pos
                }
            ),
        ]
    }

    fn arb_start_spec() -> impl Strategy<Value = StartSpec> {
        prop_oneof![
            Just(StartSpec::Earliest),
            Just(StartSpec::Latest),
            Just(StartSpec::Initial),
            Just(StartSpec::SnapshotOnly),
            arb_gtid_set()
                .prop_filter("non-empty", |s| !s.is_empty())
                .prop_map(StartSpec::MysqlGtid),
            arb_gtid_list()
                .prop_filter("non-empty", |l| !l.is_empty())
                .prop_map(StartSpec::MariadbGtid),
            arb_file_pos().prop_map(StartSpec::FilePos),
        ]
    }

    #[test]
    fn source_position_json_shape() {
        let fp = FilePos::new("mysql-bin.000003", 1234).unwrap();
        let mysql = SourcePosition::MysqlGtid {
            gtid_set: format!("{A}:1-5").parse().unwrap(),
            file_pos: Some(fp.clone()),
        };
        let expected = json!({"kind": "mysql_gtid", "gtid_set": format!("{A}:1-5"), "file": "mysql-bin.000003", "pos": 1234});
        assert_eq!(serde_json::to_value(&mysql).unwrap(), expected);
        assert_eq!(mysql.to_string(), format!("gtid:{A}:1-5"));
        let maria = SourcePosition::MariadbGtid {
            gtid_list: "0-1-42".parse().unwrap(),
            file_pos: None,
        };
        assert_eq!(
            serde_json::to_value(&maria).unwrap(),
            json!({"kind": "mariadb_gtid", "gtid_list": "0-1-42"})
        );
        let file = SourcePosition::FilePos(fp);
        assert_eq!(
            serde_json::to_value(&file).unwrap(),
            json!({"kind": "file", "file": "mysql-bin.000003", "pos": 1234})
        );
        assert_eq!(file.to_string(), "file:mysql-bin.000003:1234");
    }

    #[test]
    fn source_position_json_rejects() {
        for bad in [
            json!({"kind": "file", "file": "", "pos": 4}),
            json!({"kind": "mysql_gtid", "gtid_set": "", "file": "f.1"}),
            json!({"kind": "mysql_gtid", "gtid_set": "nope"}),
            json!({"kind": "mariadb_gtid", "gtid_list": "0-1-2,0-1-3"}),
            json!({"kind": "binlog", "file": "f.1", "pos": 4}),
        ] {
            assert!(
                serde_json::from_value::<SourcePosition>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn progress_comparison() {
        let p = |s: &str| match s.parse::<StartSpec>().unwrap() {
            StartSpec::MysqlGtid(gtid_set) => SourcePosition::MysqlGtid {
                gtid_set,
                file_pos: None,
            },
            StartSpec::MariadbGtid(gtid_list) => SourcePosition::MariadbGtid {
                gtid_list,
                file_pos: None,
            },
            StartSpec::FilePos(fp) => SourcePosition::FilePos(fp),
            other => panic!("{other}"),
        };
        let cmp = |a: &str, b: &str| p(a).partial_cmp_progress(&p(b));
        assert_eq!(
            cmp("file:b.000002:4", "file:b.000001:900"),
            Some(Ordering::Greater)
        );
        assert_eq!(
            cmp(&format!("gtid:{A}:1-3"), &format!("gtid:{A}:1-5")),
            Some(Ordering::Less)
        );
        assert_eq!(cmp("gtid:0-1-5", "gtid:0-1-5"), Some(Ordering::Equal));
        assert_eq!(cmp("gtid:0-1-5", "gtid:1-1-5"), None);
        assert_eq!(cmp("gtid:0-1-5", "file:b.000001:4"), None);
    }

    #[test]
    fn start_spec_forms() {
        let parse = |s: &str| s.parse::<StartSpec>().unwrap();
        assert_eq!(parse(" Earliest "), StartSpec::Earliest);
        assert_eq!(parse("snapshot_only"), StartSpec::SnapshotOnly);
        assert!(matches!(parse("gtid:0-1-42, 1-2-3"), StartSpec::MariadbGtid(l) if l.len() == 2));
        assert!(matches!(
            parse(&format!("gtid:{A}:1-5,\n")),
            StartSpec::MysqlGtid(_)
        ));
        assert_eq!(
            parse("file:mysql-bin.000003:4"),
            StartSpec::FilePos(FilePos::new("mysql-bin.000003", 4).unwrap())
        );
        for (bad, needle) in [
            ("beginning", "unknown form"),
            ("latest:1", "takes no argument"),
            ("gtid:", "empty GTID set"),
            ("gtid: ,\n", "empty GTID set"),
            ("gtid:0-1", "MariaDB GTID"),
            ("gtid:3e11fa47:1", "server UUID"),
            ("gtid:0-1-2,0-1-3", "domain 0"),
            ("file:mysql-bin.000003", "binlog file position"),
        ] {
            let err = bad.parse::<StartSpec>().unwrap_err().to_string();
            assert!(
                err.contains(needle) && err.contains("expected one of `earliest`"),
                "{bad}: {err}"
            );
            assert!(err.contains(&format!("{bad:?}")), "{err}");
        }
    }

    proptest! {
        #[test]
        fn source_position_json_round_trip(p in arb_source_position()) {
            let json = serde_json::to_string(&p).unwrap();
            prop_assert_eq!(serde_json::from_str::<SourcePosition>(&json).unwrap(), p);
        }

        #[test]
        fn start_spec_round_trip(spec in arb_start_spec()) {
            prop_assert_eq!(spec.to_string().parse::<StartSpec>().unwrap(), spec.clone());
            let json = serde_json::to_string(&spec).unwrap();
            prop_assert_eq!(serde_json::from_str::<StartSpec>(&json).unwrap(), spec);
        }

        #[test]
        fn resume_spec_matches_position(p in arb_source_position()) {
            let spec = p.to_start_spec();
            if !matches!(&p, SourcePosition::MysqlGtid { gtid_set, .. } if gtid_set.is_empty())
                && !matches!(&p, SourcePosition::MariadbGtid { gtid_list, .. } if gtid_list.is_empty())
            {
                prop_assert_eq!(spec.to_string(), p.to_string());
            }
        }
    }
}
