//! One decoded cell of a binlog row image.
//!
//! [`Value`] is the owned, schema-independent result of decoding a single column
//! of a MySQL/MariaDB row image (see `crate::binlog::rows`).  It is deliberately
//! small (32 bytes) and cheap to move: fixed-width types are stored inline, only
//! strings, blobs, decimals, JSON and geometry own a heap buffer.
//!
//! Invariants kept by the decoder:
//!
//! * a value's variant always matches the column's [`crate::schema::ColumnKind`]
//!   (e.g. an `INT UNSIGNED` column yields [`Value::UInt`], `DATETIME` yields
//!   [`Value::DateTime`]) except for [`Value::Null`] and [`Value::Missing`], which
//!   can appear for any column;
//! * temporal fields are range-checked (month ≤ 12, day ≤ 31, hour ≤ 23 for
//!   `DATETIME`, minute/second ≤ 59, micros < 1 000 000); the "zero" date/datetime
//!   (`0000-00-00`) is represented with all fields zero;
//! * [`Value::Decimal`] holds canonical decimal text with exactly `scale` digits
//!   after the point and no superfluous leading zeros;
//! * [`Value::Json`] holds syntactically valid JSON text.

/// One decoded column value, owned.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// SQL `NULL`.
    Null,
    /// A signed integer column (`TINYINT` .. `BIGINT` without `UNSIGNED`).
    Int(i64),
    /// An unsigned integer column (`TINYINT UNSIGNED` .. `BIGINT UNSIGNED`), exact.
    UInt(u64),
    /// A `FLOAT` column (IEEE-754 single precision as stored).
    Float(f32),
    /// A `DOUBLE` column (IEEE-754 double precision as stored).
    Double(f64),
    /// A `DECIMAL(p,s)` column as exact decimal text keeping the scale,
    /// e.g. `"-12.3400"` for `DECIMAL(10,4)`; `"0"` / `"0.00"` for zero.
    Decimal(String),
    /// Raw bytes of a `CHAR`/`VARCHAR`/`TEXT`/`BINARY`/`VARBINARY`/`BLOB` column
    /// (and MariaDB's `JSON`, which is a `LONGTEXT`).  The column's charset says
    /// how to interpret them; `BINARY(n)` values are right-padded with `0x00` to
    /// `n` bytes (the binlog strips trailing zero bytes).
    Bytes(Vec<u8>),
    /// A `DATE`; `0000-00-00` is all zeros.
    Date {
        /// Year, 0..=9999.
        year: u16,
        /// Month, 0..=12 (0 only in zero/partial-zero dates).
        month: u8,
        /// Day of month, 0..=31 (0 only in zero/partial-zero dates).
        day: u8,
    },
    /// A `TIME` (a signed duration, up to ±838:59:59.999999).
    Time {
        /// True for negative durations; the other fields hold the magnitude.
        negative: bool,
        /// Hours, 0..=838 (may exceed 23).
        hours: u32,
        /// Minutes, 0..=59.
        minutes: u8,
        /// Seconds, 0..=59.
        seconds: u8,
        /// Microseconds, 0..=999_999.
        micros: u32,
    },
    /// A `DATETIME` (wall-clock, no time zone); `0000-00-00 00:00:00` is all zeros.
    DateTime {
        /// Year, 0..=9999.
        year: u16,
        /// Month, 0..=12.
        month: u8,
        /// Day of month, 0..=31.
        day: u8,
        /// Hour, 0..=23.
        hour: u8,
        /// Minute, 0..=59.
        minute: u8,
        /// Second, 0..=59.
        second: u8,
        /// Microseconds, 0..=999_999.
        micros: u32,
    },
    /// A `TIMESTAMP` as seconds since the UTC epoch plus microseconds; the zero
    /// timestamp (`0000-00-00 00:00:00`) is `secs == 0 && micros == 0`.
    Timestamp {
        /// Seconds since 1970-01-01T00:00:00Z (MySQL stores 0..=2^32-1).
        secs: i64,
        /// Microseconds, 0..=999_999.
        micros: u32,
    },
    /// A `YEAR`: 1901..=2155, or 0 for the zero year.
    Year(u16),
    /// A `BIT(n)` value, right-aligned (bit 0 is the least significant bit);
    /// the column gives the width `n` (1..=64).
    Bit(u64),
    /// An `ENUM` as its 1-based index into the column's values; 0 is the empty
    /// string MySQL stores for invalid values.
    Enum(u16),
    /// A `SET` as a bitmask: bit `i` set means the `i`-th (0-based) member is present.
    Set(u64),
    /// A MySQL `JSON` column rendered from MySQL's binary JSON to JSON text.
    Json(String),
    /// A spatial value as stored: 4-byte little-endian SRID followed by WKB.
    Geometry(Vec<u8>),
    /// The column is not part of this (partial, `binlog_row_image=MINIMAL/NOBLOB`)
    /// row image; distinct from [`Value::Null`].
    Missing,
}

impl Value {
    /// True for [`Value::Null`].
    #[inline]
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// True for [`Value::Missing`] (column absent from a partial row image).
    #[inline]
    pub fn is_missing(&self) -> bool {
        matches!(self, Value::Missing)
    }

    /// About the memory the value holds: its own size plus what it owns on the heap. Used to
    /// bound buffers by bytes (the source → sink channel, snapshot chunks).
    #[inline]
    pub fn approx_bytes(&self) -> usize {
        std::mem::size_of::<Value>()
            + match self {
                Value::Decimal(s) | Value::Json(s) => s.len(),
                Value::Bytes(b) | Value::Geometry(b) => b.len(),
                _ => 0,
            }
    }
}

/// About the memory a row of values holds ([`Value::approx_bytes`] of each).
pub fn row_bytes(row: &[Value]) -> usize {
    row.iter().map(Value::approx_bytes).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_is_small() {
        assert!(std::mem::size_of::<Value>() <= 32);
    }

    #[test]
    fn approx_bytes_count_the_heap() {
        let base = std::mem::size_of::<Value>();
        assert_eq!(Value::Int(5).approx_bytes(), base);
        assert_eq!(Value::Bytes(vec![0; 1000]).approx_bytes(), base + 1000);
        assert_eq!(Value::Json("{}".into()).approx_bytes(), base + 2);
        assert_eq!(
            row_bytes(&[Value::Null, Value::Geometry(vec![1; 25])]),
            2 * base + 25
        );
    }

    #[test]
    fn predicates() {
        assert!(Value::Null.is_null());
        assert!(!Value::Null.is_missing());
        assert!(Value::Missing.is_missing());
        assert!(!Value::Int(0).is_null());
    }
}
