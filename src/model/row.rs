//! Row changes as every stage sees them: a [`RowImage`] (before and after values, one per
//! table column) and the [`RowsKind`] of the event or snapshot read that produced it. Pure
//! data; the binlog decoder (`binlog::rows`) and the snapshot reader make them, the encoders
//! read them.

use crate::value::Value;

/// What a rows event does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowsKind {
    /// WRITE_ROWS: after images only.
    Insert,
    /// UPDATE_ROWS / PARTIAL_UPDATE_ROWS: before and after images.
    Update,
    /// DELETE_ROWS: before images only.
    Delete,
    /// A row read by a snapshot (`op = "r"`): after images only; never from the binlog.
    Read,
}

/// One decoded row change.
#[derive(Debug, Clone, PartialEq)]
pub struct RowImage {
    /// Before image (UPDATE, DELETE); one value per table column.
    pub before: Option<Vec<Value>>,
    /// After image (INSERT, UPDATE); one value per table column.
    pub after: Option<Vec<Value>>,
}
