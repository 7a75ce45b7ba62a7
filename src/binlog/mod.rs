//! The binlog's bytes, read without any server: every event checked before it is decoded, the
//! events that `mysql_common` has no types for, TRANSACTION_PAYLOAD streamed, the `TABLE_MAP`
//! parser and its bounds-checked reader, and the rows events decoded into row images
//! (`rows`, with MySQL's partial JSON updates applied by `json_diff`).
//!
//! Nothing here does I/O; no input can make it panic.

pub(crate) mod events;
#[cfg(test)]
pub(crate) mod fixtures;
pub(crate) mod json_diff;
pub(crate) mod payload;
pub(crate) mod reader;
pub mod rows;
pub(crate) mod table_map;
#[cfg(test)]
pub(crate) mod table_map_builder;
pub(crate) mod verify;
