//! [`RowsError`]: why a rows event could not be parsed or decoded.
//!
//! Invariant: every failure that concerns a table names it as `db`.`table` (and the column
//! and the byte offset within the rows data where there is one), so a failed event says
//! where it failed; the messages are matched by tests and read by operators, byte for byte.

/// Why a rows event could not be parsed or decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RowsError {
    /// The event type is not a rows event handled here.
    #[error("binlog event type {0} is not a supported rows event")]
    UnsupportedEventType(u8),
    /// The post-header length (from the FORMAT_DESCRIPTION event) is not 6, 8 or 10.
    #[error("rows event type {event_type}: unsupported post-header length {post_header_len} (expected 6, 8 or 10)")]
    PostHeaderLen {
        /// Event type byte.
        event_type: u8,
        /// The post-header length given.
        post_header_len: u8,
    },
    /// The fixed part of the event is truncated or inconsistent.
    #[error("rows event type {event_type}: malformed header: {detail}")]
    Header {
        /// Event type byte.
        event_type: u8,
        /// What was wrong.
        detail: String,
    },
    /// MariaDB compressed rows could not be inflated.
    #[error("compressed rows event type {event_type}: {detail}")]
    Decompress {
        /// Event type byte.
        event_type: u8,
        /// What was wrong.
        detail: String,
    },
    /// The table map could not be parsed.
    #[error(transparent)]
    Schema(#[from] crate::schema::SchemaError),
    /// The schema given to [`RowDecoder::new`](super::RowDecoder::new) does not describe the table map.
    #[error("`{db}`.`{table}`: schema does not match the TABLE_MAP: {detail}")]
    SchemaMismatch {
        /// Database name.
        db: String,
        /// Table name.
        table: String,
        /// What differs.
        detail: String,
    },
    /// The rows event is for another table id than the decoder's table map.
    #[error("`{db}`.`{table}`: decoder built for table id {expected} got a rows event for table id {actual}")]
    TableIdMismatch {
        /// Database name.
        db: String,
        /// Table name.
        table: String,
        /// The decoder's table id.
        expected: u64,
        /// The event's table id.
        actual: u64,
    },
    /// The rows event has another column count than the table map.
    #[error("`{db}`.`{table}`: rows event has {actual} columns but the TABLE_MAP has {expected}")]
    ColumnCount {
        /// Database name.
        db: String,
        /// Table name.
        table: String,
        /// Table map column count.
        expected: usize,
        /// Rows event column count.
        actual: usize,
    },
    /// A row image ended early or its bitmaps are truncated.
    #[error(
        "`{db}`.`{table}`: row image truncated at byte offset {offset} of the rows data: {detail}"
    )]
    Truncated {
        /// Database name.
        db: String,
        /// Table name.
        table: String,
        /// Offset within the rows data.
        offset: usize,
        /// What was being read.
        detail: String,
    },
    /// A column value is malformed.
    #[error(
        "`{db}`.`{table}`.`{column}`: bad value at byte offset {offset} of the rows data: {detail}"
    )]
    Value {
        /// Database name.
        db: String,
        /// Table name.
        table: String,
        /// Column name.
        column: String,
        /// Offset of the value within the rows data.
        offset: usize,
        /// What was wrong.
        detail: String,
    },
    /// A JSON column was logged as a partial update (a diff) that cannot be turned
    /// back into the full new document.
    #[error(
        "`{db}`.`{table}`.`{column}`: cannot rebuild the JSON document from a partial \
         update (binlog_row_value_options=PARTIAL_JSON): {detail}; set \
         binlog_row_value_options='' (empty) on the source server to log full JSON \
         documents, or keep binlog_row_image=FULL so that before images carry the \
         document the diff applies to"
    )]
    PartialJson {
        /// Database name.
        db: String,
        /// Table name.
        table: String,
        /// Column name.
        column: String,
        /// Why the document cannot be rebuilt.
        detail: String,
    },
}
