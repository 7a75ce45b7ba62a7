//! What the position types share: their parse error, the plain-decimal parser and the
//! serde-as-text macro. Pure data, no I/O; a leaf of `position`.

use std::str::FromStr;

/// Largest valid GTID number (MySQL's `GNO_END - 1`).
pub const MAX_GNO: u64 = i64::MAX as u64 - 1;

/// Errors from parsing or validating positions; messages say what was found and what is expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PositionError {
    /// Text (or a value) that does not have the expected shape.
    #[error("invalid {what} {found:?}: expected {expected}")]
    Syntax {
        /// What was being parsed, e.g. `"GTID interval"`.
        what: &'static str,
        /// The offending text.
        found: String,
        /// The accepted form.
        expected: &'static str,
    },
    /// A MySQL transaction number outside `1..=MAX_GNO`.
    #[error("GTID number {gno} is out of range: expected 1..={max}", max = MAX_GNO)]
    GnoOutOfRange {
        /// The offending number.
        gno: u64,
    },
    /// A MariaDB GTID list naming one domain twice.
    #[error("invalid MariaDB GTID list {found:?}: more than one entry for domain {domain}, expected at most one GTID per domain")]
    DuplicateDomain {
        /// The whole list text.
        found: String,
        /// The repeated domain id.
        domain: u32,
    },
    /// A start position that is none of the accepted forms.
    #[error("invalid start position {found:?} ({reason}): expected one of `earliest`, `latest`, `initial`, `snapshot_only`, `gtid:<MySQL GTID set or MariaDB GTID list>`, `file:<binlog file>:<pos>`")]
    StartSpec {
        /// The configured text.
        found: String,
        /// Why it was rejected.
        reason: String,
    },
}

impl PositionError {
    pub(crate) fn syntax(
        what: &'static str,
        found: impl Into<String>,
        expected: &'static str,
    ) -> Self {
        Self::Syntax {
            what,
            found: found.into(),
            expected,
        }
    }
}

/// Parses a plain decimal number: ASCII digits only (no sign, no whitespace).
pub(crate) fn parse_decimal<T: FromStr>(s: &str) -> Option<T> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Implements serde for a `Display + FromStr` type as its text form.
macro_rules! serde_via_str {
    ($t:ty) => {
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}
pub(crate) use serde_via_str;
