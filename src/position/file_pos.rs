//! Binlog file coordinates: [`FilePos`], a binlog file name plus a byte offset.
//!
//! Invariants: the file name is non-empty and contains no `:` (so the text
//! form `<file>:<pos>` is unambiguous). Ordering follows the binlog sequence:
//! the numeric suffix after the last `.` (`mysql-bin.000010` > `mysql-bin.000009`),
//! then the file name, then the offset.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use super::text::{parse_decimal, PositionError};

/// A position inside the binary log: file name and byte offset within it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FilePos {
    /// Binlog file name, e.g. `mysql-bin.000003`; non-empty, without `:`.
    pub file: String,
    /// Byte offset within the file.
    pub pos: u64,
}

const EXPECTED: &str = "`<file>:<pos>` such as `mysql-bin.000003:4`, with a non-empty file name \
                        without `:` and a decimal byte offset";

impl FilePos {
    /// Builds a position, rejecting an empty file name or one containing `:`.
    pub fn new(file: impl Into<String>, pos: u64) -> Result<Self, PositionError> {
        let file = file.into();
        if file.is_empty() || file.contains(':') {
            return Err(PositionError::syntax("binlog file name", file, EXPECTED));
        }
        Ok(Self { file, pos })
    }

    /// Sequence number of the binlog file: the decimal suffix after the last `.`
    /// (`mysql-bin.000010` → `Some(10)`), or `None` if there is none.
    pub fn file_index(&self) -> Option<u64> {
        self.file
            .rsplit_once('.')
            .and_then(|(_, suffix)| parse_decimal(suffix))
    }
}

impl Ord for FilePos {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.file_index(), &self.file, self.pos).cmp(&(other.file_index(), &other.file, other.pos))
    }
}

impl PartialOrd for FilePos {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for FilePos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.pos)
    }
}

impl FromStr for FilePos {
    type Err = PositionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || PositionError::syntax("binlog file position", s, EXPECTED);
        let (file, pos) = s.rsplit_once(':').ok_or_else(err)?;
        let pos = parse_decimal(pos).ok_or_else(err)?;
        if file.is_empty() || file.contains(':') {
            return Err(err());
        }
        Ok(Self {
            file: file.to_owned(),
            pos,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Arbitrary valid file positions.
    pub(crate) fn arb_file_pos() -> impl Strategy<Value = FilePos> {
        ("[a-z][a-z0-9_-]{0,8}\\.[0-9]{6,7}", any::<u64>())
            .prop_map(|(file, pos)| FilePos { file, pos })
    }

    #[test]
    fn parse_and_display() {
        let p: FilePos = "mysql-bin.000003:1234".parse().unwrap();
        assert_eq!(p, FilePos::new("mysql-bin.000003", 1234).unwrap());
        assert_eq!(p.to_string(), "mysql-bin.000003:1234");
        assert_eq!(p.file_index(), Some(3));
        assert_eq!(FilePos::new("binlog", 4).unwrap().file_index(), None);
    }

    #[test]
    fn rejects_bad_input() {
        for bad in [
            "",
            "mysql-bin.000003",
            ":4",
            "a:b:4",
            "f:",
            "f:x1",
            "f:+1",
            "f:-1",
            "f: 1",
        ] {
            let err = bad.parse::<FilePos>().unwrap_err().to_string();
            assert!(err.contains("expected `<file>:<pos>`"), "{bad}: {err}");
        }
        assert!(FilePos::new("", 4).is_err());
        assert!(FilePos::new("a:b", 4).is_err());
    }

    #[test]
    fn orders_by_file_sequence_then_pos() {
        let p = |s: &str| s.parse::<FilePos>().unwrap();
        assert!(p("mysql-bin.000010:4") > p("mysql-bin.000009:999"));
        assert!(p("mysql-bin.999999:4") < p("mysql-bin.1000000:4"));
        assert!(p("mysql-bin.000009:5") > p("mysql-bin.000009:4"));
    }

    proptest! {
        #[test]
        fn display_parse_round_trip(p in arb_file_pos()) {
            prop_assert_eq!(p.to_string().parse::<FilePos>().unwrap(), p);
        }

        #[test]
        fn later_file_is_greater(a in 0u64..1_000_000, b in 0u64..1_000_000, pa: u64, pb: u64) {
            prop_assume!(a != b);
            let fa = FilePos::new(format!("bin.{a:06}"), pa).unwrap();
            let fb = FilePos::new(format!("bin.{b:06}"), pb).unwrap();
            prop_assert_eq!(fa.cmp(&fb), a.cmp(&b));
        }
    }
}
