//! Fast decoding of binlog rows events (WRITE/UPDATE/DELETE_ROWS) into [`Value`](crate::value::Value)s.
//!
//! Two steps:
//!
//! 1. [`parse_rows_event`] splits a raw rows-event body (the bytes after the 19-byte
//!    common header, checksum already stripped) into a [`RowsEventHeader`]: table id,
//!    flags, kind, columns-present bitmap(s) and the rows data.  It handles MySQL v1
//!    (23/24/25), v2 (30/31/32, extra-data block skipped), MySQL
//!    `PARTIAL_UPDATE_ROWS_EVENT` (39) and MariaDB's zlib-compressed rows events
//!    (166/167/168 = v1 layout, 169/170/171 = v2 layout; the rows data is inflated
//!    into an owned buffer).  Whether the v2 extra-data block is present follows
//!    from the event type; the post-header length only selects a 4- or 6-byte
//!    table id.
//! 2. A [`RowDecoder`], built once per `TABLE_MAP`, holds a per-column plan (storage
//!    format, length-prefix widths, decimal sizes, fsp byte counts, signedness ...)
//!    and decodes every row of an event in one tight loop.
//!
//! Invariants:
//!
//! * no input can make this module panic: every read is bounds-checked and
//!   malformed data yields a [`RowsError`] naming `db.table`, the column and the
//!   byte offset within the rows data;
//! * each decoded image has exactly one [`Value`](crate::value::Value) per table column, in table order;
//!   columns absent from the event's columns-present bitmap are [`Value::Missing`](crate::value::Value::Missing);
//! * `BINARY(n)` values are right-padded with zero bytes to `n` bytes, as MySQL
//!   returns them (the binlog strips trailing zeros);
//! * JSON columns logged as partial updates (`binlog_row_value_options=PARTIAL_JSON`)
//!   are rebuilt into the full new document by applying the logged diffs to the
//!   before image's document (see `super::json_diff`); when that is impossible (the
//!   before image lacks the document, or a diff does not fit it) the row fails with
//!   [`RowsError::PartialJson`] rather than being guessed at.
//!
//! The parts, each file using only files listed before it:
//!
//! * `error`: [`RowsError`];
//! * `header`: [`parse_rows_event`] and the [`RowsEventHeader`] it yields;
//! * `read`: bounds-checked reads of one value's bytes, and the `Problem` a bad value is;
//! * `decimal`, `temporal`: binary DECIMAL, and the temporal formats with fractional seconds;
//! * `jsonb`: MySQL binary JSON rendered as JSON text ([`jsonb_to_json`]), which
//!   `super::json_diff` builds on;
//! * `cell`: how one column is stored (`Cell`) and the reading of one value of it;
//! * `plan`: the [`RowDecoder`] built from a `TABLE_MAP`, with its per-column plan;
//! * `decoder`: [`RowDecoder::decode`], the row images of one event.

mod cell;
mod decimal;
mod decoder;
mod error;
mod header;
mod jsonb;
mod plan;
mod read;
mod temporal;
#[cfg(test)]
mod tests;

pub use self::error::RowsError;
pub use self::header::{is_rows_event, parse_rows_event, RowsEventHeader, RowsKind, STMT_END_F};
#[cfg(test)]
pub(crate) use self::jsonb::test_jsonb_varlen;
pub use self::jsonb::{jsonb_to_json, push_mysql_json_double};
pub(super) use self::jsonb::{le_uint, render_jsonb, MAX_JSON_DEPTH};
pub(crate) use self::jsonb::{JsonbContainer, JsonbSlot};
pub use self::plan::RowDecoder;
pub use crate::model::row::RowImage;

// The decoder rebuilds partial JSON updates with `super::json_diff`.
use super::json_diff;
