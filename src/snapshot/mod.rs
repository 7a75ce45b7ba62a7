//! Snapshots: the rows a table already holds, read with plain `SELECT`s and emitted as
//! `op = "r"` records through the same encoders as binlog rows, while the binlog streams.
//!
//! No lock is taken and sluice writes nothing to the source: each chunk is placed in the
//! binlog by read-only watermarks ([`window`]), read by [`reader`] in key order ([`chunk`]) and
//! emitted by [`coordinator`] inside the stream; its progress ([`progress`]) commits with the
//! chunk's rows, so a crash resumes after the last committed chunk. The algorithm and why it
//! is correct: `docs/snapshots.md`.
//!
//! The one rule of this module: **a value does not depend on how it was read**. For every
//! column type, [`values`] turns what a `SELECT` returns into exactly the [`crate::value::Value`]
//! the binlog row decoder (`crate::binlog::rows`) yields for the same stored value, so the JSON
//! and Avro encoders write the same bytes for a snapshot row as for the insert that wrote it:
//!
//! * the session is set up first ([`SESSION_SETUP`]: UTC, results in the stored bytes, an
//!   `sql_mode` that changes nothing on the way out);
//! * each column is selected with an expression whose result converts exactly
//!   ([`select_list`]: ENUM/SET as their index/bitmask, fixed binary strings as their stored
//!   bytes, ...);
//! * rows are read with the binary protocol (a prepared statement), which carries integers,
//!   floats and temporal values in binary, and converted by [`decode_row`].
//!
//! `tests/snapshot_values.rs` checks this against both servers: every family of the type
//! matrix, read from the binlog and with a `SELECT`, encoded with both encoders, byte for byte.

pub mod adhoc;
pub(crate) mod chunk;
pub(crate) mod coordinator;
pub mod filter;
pub(crate) mod pool;
pub mod progress;
pub(crate) mod reader;
pub(crate) mod signal;
pub mod values;
pub(crate) mod window;

pub use values::{compact_json, decode_row, quote_ident, select_expr, select_list, SESSION_SETUP};
