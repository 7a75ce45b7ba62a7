//! What flows between the stages, as plain data: [`row`] (row images and what made them),
//! [`txn`] (a source transaction's metadata, the checkpoint after it, a schema change),
//! [`clock`] (the wall clock in ms) and [`flavor`] (MySQL or MariaDB). Nothing here does
//! I/O; the stages depend on this module, never the other way round.

pub mod clock;
pub mod flavor;
pub mod row;
pub mod snapshot_mark;
pub mod txn;

pub use flavor::Flavor;
pub use row::{RowImage, RowsKind};
pub use snapshot_mark::{ReadMarks, ReadPlace, SnapshotMark};
pub use txn::{Checkpoint, HistoryUpdate, SchemaEvent, TxnMeta};
