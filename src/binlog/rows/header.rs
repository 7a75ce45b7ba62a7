//! The rows-event header: [`parse_rows_event`] splits a raw rows-event body (the bytes after
//! the 19-byte common header, checksum already stripped) into a [`RowsEventHeader`]: table
//! id, flags, [`RowsKind`], columns-present bitmap(s) and the rows data.
//!
//! It handles MySQL v1 (23/24/25), v2 (30/31/32, extra-data block skipped), MySQL
//! `PARTIAL_UPDATE_ROWS_EVENT` (39) and MariaDB's zlib-compressed rows events
//! (166/167/168 = v1 layout, 169/170/171 = v2 layout; the rows data is inflated into an
//! owned buffer). Whether the v2 extra-data block is present follows from the event type;
//! the post-header length only selects a 4- or 6-byte table id.
//!
//! Invariant: no body makes it panic; a truncated or inconsistent header is a
//! [`RowsError`], and compressed rows data is accepted only when it inflates to exactly the
//! length its header declares (at most 1 GiB).

use std::borrow::Cow;
use std::io::Read;

use super::error::RowsError;
pub use crate::model::row::RowsKind;

/// `STMT_END_F`: the last rows event of a statement.
pub const STMT_END_F: u16 = 0x0001;

/// Largest decompressed MariaDB rows payload accepted (MariaDB's own limit is
/// `max_allowed_packet`, at most 1 GiB).
const MAX_UNCOMPRESSED: u64 = 1 << 30;

/// A rows event split into its parts; borrows the event body unless the rows data
/// had to be decompressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowsEventHeader<'a> {
    /// The binlog event type byte.
    pub event_type: u8,
    /// The table id (refers to the preceding `TABLE_MAP`).
    pub table_id: u64,
    /// Rows-event flags (see [`STMT_END_F`]).
    pub flags: u16,
    /// Insert, update or delete.
    pub kind: RowsKind,
    /// True for MySQL `PARTIAL_UPDATE_ROWS_EVENT` (after images carry value options).
    pub partial_update: bool,
    /// Number of table columns the event was written for.
    pub column_count: usize,
    /// Columns-present bitmap of before images (UPDATE, DELETE), LSB first.
    pub columns_before: Option<&'a [u8]>,
    /// Columns-present bitmap of after images (INSERT, UPDATE), LSB first.
    pub columns_after: Option<&'a [u8]>,
    /// The row images (owned if it was decompressed).
    pub rows: Cow<'a, [u8]>,
}

impl RowsEventHeader<'_> {
    /// The first row image whose columns-present bitmap leaves out some of the table's
    /// columns, as (`"before"` or `"after"`, columns left out). Such images come from a session
    /// that wrote with `binlog_row_image` MINIMAL or NOBLOB: a change record built from them
    /// would show absent columns as NULL, so the stream refuses them.
    pub fn incomplete_image(&self) -> Option<(&'static str, usize)> {
        let absent = |bits: &[u8]| {
            (0..self.column_count)
                .filter(|i| bits.get(i / 8).is_none_or(|b| b & (1 << (i % 8)) == 0))
                .count()
        };
        [
            ("before", self.columns_before),
            ("after", self.columns_after),
        ]
        .into_iter()
        .find_map(|(which, bits)| {
            let n = absent(bits?);
            (n > 0).then_some((which, n))
        })
    }

    /// True if `STMT_END_F` is set (last rows event of the statement).
    pub fn is_stmt_end(&self) -> bool {
        self.flags & STMT_END_F != 0
    }

    /// The row images.
    pub fn rows_data(&self) -> &[u8] {
        &self.rows
    }
}

/// True if `event_type` is a rows event [`parse_rows_event`] understands.
pub fn is_rows_event(event_type: u8) -> bool {
    matches!(event_type, 23..=25 | 30..=32 | 39 | 166..=171)
}

/// Splits a raw rows-event body into its parts.
///
/// `body` is the event after the 19-byte common header with the checksum removed.
/// `post_header_len` (from the FORMAT_DESCRIPTION event; 6, 8 or 10) only selects
/// the table-id width: 4 bytes when it is 6, else 6 bytes.  Whether an extra-data
/// block follows the flags is decided by the event type, as the servers' FDEs do:
/// v2 types (30/31/32, 39, MariaDB 169/170/171) have one (a 2-byte length that
/// includes itself, then data, skipped here); v1 types (23/24/25, 166/167/168) do not.
/// MariaDB compressed events (166..=171) have their rows data inflated here.
pub fn parse_rows_event(
    event_type: u8,
    post_header_len: u8,
    body: &[u8],
) -> Result<RowsEventHeader<'_>, RowsError> {
    // (kind, rows data zlib-compressed, v2 layout with extra-data block, partial update)
    let (kind, compressed, v2, partial_update) = match event_type {
        23 => (RowsKind::Insert, false, false, false),
        24 => (RowsKind::Update, false, false, false),
        25 => (RowsKind::Delete, false, false, false),
        30 => (RowsKind::Insert, false, true, false),
        31 => (RowsKind::Update, false, true, false),
        32 => (RowsKind::Delete, false, true, false),
        39 => (RowsKind::Update, false, true, true),
        166 => (RowsKind::Insert, true, false, false),
        167 => (RowsKind::Update, true, false, false),
        168 => (RowsKind::Delete, true, false, false),
        169 => (RowsKind::Insert, true, true, false),
        170 => (RowsKind::Update, true, true, false),
        171 => (RowsKind::Delete, true, true, false),
        t => return Err(RowsError::UnsupportedEventType(t)),
    };
    let header_err = |detail: String| RowsError::Header { event_type, detail };
    let mut r = crate::binlog::reader::Reader::new(body);
    let table_id = match post_header_len {
        6 => r.uint_le(4),
        8 | 10 => r.uint_le(6),
        _ => {
            return Err(RowsError::PostHeaderLen {
                event_type,
                post_header_len,
            })
        }
    }
    .map_err(|e| header_err(format!("table id: {e}")))?;
    let flags = r
        .uint_le(2)
        .map_err(|e| header_err(format!("flags: {e}")))? as u16;
    if v2 {
        let len = r
            .uint_le(2)
            .map_err(|e| header_err(format!("extra-data length: {e}")))?;
        let payload = usize::try_from(len)
            .ok()
            .and_then(|l| l.checked_sub(2))
            .ok_or_else(|| header_err(format!("extra-data length {len} < 2")))?;
        r.skip(payload)
            .map_err(|e| header_err(format!("extra data: {e}")))?;
    }
    let column_count = r
        .lenenc_usize()
        .map_err(|e| header_err(format!("column count: {e}")))?;
    let bitmap_len = column_count.div_ceil(8);
    let mut bitmap = |what: &str| {
        r.take(bitmap_len)
            .map_err(|e| header_err(format!("{what} columns bitmap: {e}")))
    };
    let columns_before = match kind {
        RowsKind::Update | RowsKind::Delete => Some(bitmap("before-image")?),
        RowsKind::Insert | RowsKind::Read => None,
    };
    let columns_after = match kind {
        RowsKind::Update | RowsKind::Insert | RowsKind::Read => Some(bitmap("after-image")?),
        RowsKind::Delete => None,
    };
    let rest = r.rest();
    let rows = if compressed {
        Cow::Owned(
            mariadb_uncompress(rest)
                .map_err(|detail| RowsError::Decompress { event_type, detail })?,
        )
    } else {
        Cow::Borrowed(rest)
    };
    Ok(RowsEventHeader {
        event_type,
        table_id,
        flags,
        kind,
        partial_update,
        column_count,
        columns_before,
        columns_after,
        rows,
    })
}

/// Inflates MariaDB's compressed rows data (`binlog_buf_uncompress`): one header
/// byte `0x80 | algorithm << 4 | n` (algorithm 0 = zlib, n = 1..=4), then the
/// uncompressed length in `n` big-endian bytes, then the zlib stream.
fn mariadb_uncompress(data: &[u8]) -> Result<Vec<u8>, String> {
    let (&head, rest) = data
        .split_first()
        .ok_or_else(|| "empty compressed payload".to_owned())?;
    if head & 0xe0 != 0x80 {
        return Err(format!("bad compression header byte {head:#04x}"));
    }
    let algorithm = (head & 0x70) >> 4;
    if algorithm != 0 {
        return Err(format!("unsupported compression algorithm {algorithm}"));
    }
    let len_len = usize::from(head & 0x07);
    if !(1..=4).contains(&len_len) {
        return Err(format!("bad length-of-length {len_len}"));
    }
    let (len_bytes, stream) = rest
        .split_at_checked(len_len)
        .ok_or_else(|| "truncated uncompressed length".to_owned())?;
    let expected = len_bytes
        .iter()
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
    if expected > MAX_UNCOMPRESSED {
        return Err(format!("uncompressed length {expected} too large"));
    }
    // zlib cannot expand more than ~1032:1; do not trust the header for capacity.
    let cap = usize::try_from(expected)
        .unwrap_or(0)
        .min(stream.len().saturating_mul(1032));
    let mut out = Vec::with_capacity(cap);
    flate2::read::ZlibDecoder::new(stream)
        .take(expected + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("zlib: {e}"))?;
    if out.len() as u64 != expected {
        return Err(format!(
            "inflated {} bytes, header says {expected}",
            out.len()
        ));
    }
    Ok(out)
}
