//! The SQL mode a statement is read in: the parts of the server's `sql_mode` that change how
//! DDL text reads.
//!
//! Invariant: [`SqlMode::from_bits`] reads the same bits on MySQL and MariaDB; the modes not
//! named here do not change how DDL reads.

/// The parts of a statement's SQL mode that change how DDL reads (the QUERY event's `sql_mode`
/// status variable carries them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SqlMode {
    /// `ANSI_QUOTES`: `"x"` is an identifier, not a string.
    pub ansi_quotes: bool,
    /// `REAL_AS_FLOAT`: `REAL` is `FLOAT`, not `DOUBLE`.
    pub real_as_float: bool,
}

impl SqlMode {
    /// From the `sql_mode` bit set of a QUERY event (`REAL_AS_FLOAT` = 1, `ANSI_QUOTES` = 4, the
    /// same bits on MySQL and MariaDB).
    pub fn from_bits(bits: u64) -> Self {
        SqlMode {
            real_as_float: bits & 1 != 0,
            ansi_quotes: bits & 4 != 0,
        }
    }
}
