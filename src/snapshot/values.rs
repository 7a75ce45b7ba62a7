//! Snapshot values: `SELECT` results converted to exactly the [`Value`]s the binlog row decoder
//! yields for the same stored values.
//!
//! How each column type is read (the expression from [`select_expr`], the binary-protocol value
//! that comes back, and the [`Value`] it becomes):
//!
//! | column                         | selected as                 | returned as          | value                                   |
//! |--------------------------------|-----------------------------|----------------------|-----------------------------------------|
//! | TINYINT..BIGINT \[UNSIGNED\]   | the column                  | `Int` / `UInt`       | `Int` / `UInt` (range-checked)          |
//! | FLOAT / DOUBLE                 | the column                  | `Float` / `Double`   | the same bits                           |
//! | DECIMAL(p,s)                   | the column                  | text                 | `Decimal`: canonical text, `s` decimals |
//! | DATE / DATETIME(n)             | the column                  | `Date(..)`           | `Date` / `DateTime`; zero dates as zeros |
//! | TIMESTAMP(n)                   | the column, UTC session     | `Date(..)` in UTC    | `Timestamp{secs, micros}`; zero → 0     |
//! | TIME(n)                        | the column                  | `Time(neg, days, ..)`| `Time` (hours = days × 24 + hours)      |
//! | YEAR                           | the column                  | `Int` / `UInt`       | `Year` (0 for the zero year)            |
//! | BIT(n)                         | the column                  | ⌈n/8⌉ bytes, big-endian | `Bit`                                |
//! | ENUM / SET                     | `CAST(`c` AS UNSIGNED)`     | integer              | `Enum(index)` / `Set(bitmask)`          |
//! | BINARY(n) (and MariaDB UUID, INET6, INET4) | `CAST(`c` AS BINARY(n))` | `n` bytes  | `Bytes`, stored bytes, zero-padded (UUID, INET: exactly `n`) |
//! | CHAR, VARCHAR, TEXT, VARBINARY, BLOB, MariaDB JSON | the column | stored bytes     | `Bytes`                                 |
//! | MySQL JSON                     | the column                  | the server's text    | `Json`: the text made compact ([`compact_json`]) |
//! | GEOMETRY                       | the column                  | SRID + WKB           | `Geometry`                              |
//! | VECTOR                         | the column                  | packed `f32`s        | `Bytes`                                 |
//!
//! Why some columns need an expression:
//!
//! * ENUM and SET come back as member strings, which would have to be matched to members under
//!   the column's collation (and an invalid ENUM value is the empty string, index 0). Cast to
//!   `UNSIGNED` they are the index and the bitmask the binlog logs. (The usual `c+0` is not
//!   exact: MySQL 9 returns it as a DOUBLE, and both servers return a SET's bitmask as a
//!   *signed* BIGINT, negative for member 64.)
//! * MariaDB's UUID, INET6 and INET4 are logged as `BINARY(16)`/`BINARY(4)` (the table map does
//!   not name them) holding their stored bytes, but a `SELECT` returns their text form
//!   (`123e4567-…`, `::1`). `CAST(c AS BINARY(n))` returns the stored bytes for them and is the
//!   identity for a real `BINARY(n)`; nothing in a table map tells the two apart, so every fixed
//!   binary string is read this way.
//!
//! MySQL returns a JSON column as its own text rendering of the binary document (`{"a": 1.0}`);
//! the binlog decoder renders the binary document itself, to the same text without the blanks
//! after `,` and `:` (`crate::binlog::rows::jsonb_to_json`, which writes numbers and opaque values
//! as the server does). [`compact_json`] removes those blanks and re-escapes strings the way the
//! decoder does, keeping every number token as the server wrote it.

use mysql_async::Value as Sql;

use crate::encode::json_value::{seconds_from_civil, write_json_string};
use crate::error::{Error, Result};
use crate::schema::{Column, ColumnKind, TableSchema};
use crate::value::Value;

/// Statements a snapshot connection runs before reading, so that values come back as stored.
///
/// * `time_zone = '+00:00'`: `TIMESTAMP` values are stored as UTC seconds and returned converted
///   to the session time zone; in UTC the conversion back to epoch seconds is exact (a zone with
///   daylight saving time repeats an hour, which no conversion back can tell apart).
/// * `character_set_results = NULL`: text is returned in the column's own charset, byte for
///   byte as the binlog logs it (otherwise the server converts it to the connection charset,
///   replacing what that charset cannot hold with `?`).
/// * `sql_mode = ''`: no mode changes how a stored value is returned. Modes that would:
///   `PAD_CHAR_TO_FULL_LENGTH` (MySQL, MariaDB) pads `CHAR` values with spaces where the binlog
///   logs them without; `ANSI_QUOTES` and MariaDB's `ORACLE`/`MSSQL`/... modes change how the
///   statement itself is parsed. Zero dates (`0000-00-00`) are returned whatever the mode;
///   clearing `NO_ZERO_DATE`/`NO_ZERO_IN_DATE` and strict mode just keeps them from turning into
///   warnings or errors in expressions over such columns.
pub const SESSION_SETUP: &[&str] = &[
    "SET time_zone = '+00:00'",
    "SET character_set_results = NULL",
    "SET sql_mode = ''",
];

/// A backquoted identifier (`` ` `` doubled inside).
pub fn quote_ident(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// The `SELECT` expression of one column, aliased to its name (see the module documentation).
pub fn select_expr(col: &Column) -> String {
    let name = quote_ident(&col.name);
    match &col.kind {
        ColumnKind::Enum { .. } | ColumnKind::Set { .. } => {
            format!("CAST({name} AS UNSIGNED) AS {name}")
        }
        ColumnKind::String {
            binary: true,
            fixed: true,
            max_bytes,
            ..
        } => format!("CAST({name} AS BINARY({max_bytes})) AS {name}"),
        ColumnKind::Uuid | ColumnKind::Inet6 => format!("CAST({name} AS BINARY(16)) AS {name}"),
        ColumnKind::Inet4 => format!("CAST({name} AS BINARY(4)) AS {name}"),
        _ => name,
    }
}

/// The `SELECT` list of a table: one expression per column, in table order, so that the
/// `i`-th result is the `i`-th column (what [`decode_row`] expects).
pub fn select_list(schema: &TableSchema) -> String {
    schema
        .columns
        .iter()
        .map(select_expr)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Converts one row of `SELECT {select_list(schema)} FROM …`, read with the binary protocol (a
/// prepared statement: `conn.exec`), into one [`Value`] per column, exactly as the binlog row
/// decoder yields them for the same stored row. Columns after the select list (a chunk reader
/// appends the raw key columns) are left alone.
///
/// A result of another shape than the column's type gives (fewer columns, a value of
/// another kind, a value out of the column type's range) is a definite error naming the table,
/// the column, what was found and what was expected.
pub fn decode_row(schema: &TableSchema, mut row: mysql_async::Row) -> Result<Vec<Value>> {
    if row.len() < schema.columns.len() {
        return Err(Error::definite(format!(
            "snapshot of `{}`.`{}`: a result row has {} values for the table's {} columns (it \
             must be read with the snapshot's select list)",
            schema.db,
            schema.table,
            row.len(),
            schema.columns.len()
        )));
    }
    let mut out = Vec::with_capacity(schema.columns.len());
    for (i, col) in schema.columns.iter().enumerate() {
        let cell: Option<Sql> = row.take(i);
        let Some(cell) = cell else {
            return Err(Error::definite(format!(
                "snapshot of `{}`.`{}`: column `{}` has no value in the result row",
                schema.db, schema.table, col.name
            )));
        };
        let v = decode_value(&col.kind, cell).map_err(|(found, expected)| {
            let result_type = row
                .columns_ref()
                .get(i)
                .map(|c| format!(" (result type {:?})", c.column_type()))
                .unwrap_or_default();
            Error::definite(format!(
                "snapshot of `{}`.`{}`: column `{}` ({}): found {found}{result_type}, expected \
                 {expected}",
                schema.db,
                schema.table,
                col.name,
                col.kind.type_name()
            ))
        })?;
        out.push(v);
    }
    Ok(out)
}

/// What was found and what was expected.
type Mismatch = (String, String);

/// What a cell held, kept cheaply (no allocation) for the message of a mismatch: the cell
/// itself is consumed by the conversion.
enum Found {
    Bytes { len: usize, head: [u8; 64] },
    Other(Sql),
}

impl Found {
    fn of(v: &Sql) -> Found {
        match v {
            Sql::Bytes(b) => {
                let mut head = [0u8; 64];
                let n = b.len().min(64);
                head[..n].copy_from_slice(&b[..n]);
                Found::Bytes { len: b.len(), head }
            }
            other => Found::Other(other.clone()),
        }
    }

    fn describe(&self) -> String {
        match self {
            Found::Other(Sql::NULL) => "NULL".to_owned(),
            Found::Bytes { len, head } => match head.get(..*len).map(std::str::from_utf8) {
                Some(Ok(s)) => format!("bytes {s:?}"),
                _ => format!("{len} bytes"),
            },
            Found::Other(other) => format!("{other:?}"),
        }
    }
}

/// Inclusive range of an integer kind.
fn int_range(kind: &ColumnKind) -> Option<(i128, i128)> {
    let bits = match kind {
        ColumnKind::TinyInt { .. } => 8,
        ColumnKind::SmallInt { .. } => 16,
        ColumnKind::MediumInt { .. } => 24,
        ColumnKind::Int { .. } => 32,
        ColumnKind::BigInt { .. } => 64,
        _ => return None,
    };
    Some(if kind.is_unsigned() {
        (0, (1i128 << bits) - 1)
    } else {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    })
}

fn decode_value(kind: &ColumnKind, v: Sql) -> std::result::Result<Value, Mismatch> {
    if v == Sql::NULL {
        return Ok(Value::Null);
    }
    let found = Found::of(&v);
    let fail = |expected: String| -> Mismatch { (found.describe(), expected) };
    let integer = |v: &Sql| -> Option<i128> {
        match v {
            Sql::Int(i) => Some(i128::from(*i)),
            Sql::UInt(u) => Some(i128::from(*u)),
            _ => None,
        }
    };
    if let Some((lo, hi)) = int_range(kind) {
        let n = integer(&v)
            .filter(|n| (lo..=hi).contains(n))
            .ok_or_else(|| fail(format!("an integer in {lo}..={hi}")))?;
        return Ok(if kind.is_unsigned() {
            Value::UInt(u64::try_from(n).map_err(|_| fail("an unsigned integer".into()))?)
        } else {
            Value::Int(i64::try_from(n).map_err(|_| fail("a signed integer".into()))?)
        });
    }
    match (kind, v) {
        (ColumnKind::Float, Sql::Float(f)) => Ok(Value::Float(f)),
        (ColumnKind::Double, Sql::Double(d)) => Ok(Value::Double(d)),
        (ColumnKind::Decimal { scale, .. }, Sql::Bytes(b)) => canonical_decimal(&b, *scale)
            .map(Value::Decimal)
            .map_err(|e| fail(format!("decimal text with {scale} decimals ({e})"))),
        (ColumnKind::Date, Sql::Date(y, m, d, 0, 0, 0, 0)) => {
            check_date(y, m, d).map_err(|e| fail(format!("a DATE ({e})")))?;
            Ok(Value::Date {
                year: y,
                month: m,
                day: d,
            })
        }
        (ColumnKind::DateTime { .. }, Sql::Date(y, m, d, hh, mi, ss, us)) => {
            check_date(y, m, d)
                .and_then(|()| check_time_of_day(hh, mi, ss, us))
                .map_err(|e| fail(format!("a DATETIME ({e})")))?;
            Ok(Value::DateTime {
                year: y,
                month: m,
                day: d,
                hour: hh,
                minute: mi,
                second: ss,
                micros: us,
            })
        }
        (ColumnKind::Timestamp { .. }, Sql::Date(y, m, d, hh, mi, ss, us)) => {
            timestamp(y, m, d, hh, mi, ss, us)
                .map_err(|e| fail(format!("a TIMESTAMP in UTC ({e})")))
        }
        (ColumnKind::Time { .. }, Sql::Time(neg, days, hh, mi, ss, us)) => {
            let hours = days
                .checked_mul(24)
                .and_then(|h| h.checked_add(u32::from(hh)))
                .filter(|_| hh < 24 && mi <= 59 && ss <= 59 && us < 1_000_000)
                .ok_or_else(|| fail("a TIME".into()))?;
            let zero = hours == 0 && mi == 0 && ss == 0 && us == 0;
            Ok(Value::Time {
                // The binlog has no negative zero.
                negative: neg && !zero,
                hours,
                minutes: mi,
                seconds: ss,
                micros: us,
            })
        }
        (ColumnKind::Year, v) => integer(&v)
            .filter(|y| *y == 0 || (1901..=2155).contains(y))
            .and_then(|y| u16::try_from(y).ok())
            .map(Value::Year)
            .ok_or_else(|| fail("a YEAR: 0 or 1901..=2155".into())),
        (ColumnKind::Bit { bits }, Sql::Bytes(b)) => {
            let width = usize::from(*bits).div_ceil(8);
            if b.is_empty() || b.len() > 8 || b.len() > width.max(1) {
                return Err(fail(format!("{width} big-endian bytes of a BIT({bits})")));
            }
            let x = b.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
            if *bits < 64 && x >> bits != 0 {
                return Err(fail(format!("a value of at most {bits} bits")));
            }
            Ok(Value::Bit(x))
        }
        (ColumnKind::Enum { .. }, v) => integer(&v)
            .and_then(|i| u16::try_from(i).ok())
            .map(Value::Enum)
            .ok_or_else(|| {
                fail("the ENUM index (CAST AS UNSIGNED): an integer in 0..=65535".into())
            }),
        (ColumnKind::Set { values }, v) => {
            // Should a 64-member SET's bitmask come back as a negative BIGINT: the same 64 bits.
            let mask = match v {
                Sql::UInt(u) => Some(u),
                Sql::Int(i) => Some(i as u64),
                _ => None,
            }
            .filter(|m| values.len() >= 64 || values.is_empty() || m >> values.len() == 0)
            .ok_or_else(|| {
                fail(format!(
                    "the SET bitmask (CAST AS UNSIGNED) of at most {} members",
                    values.len()
                ))
            })?;
            Ok(Value::Set(mask))
        }
        (
            ColumnKind::String {
                binary: true,
                fixed: true,
                max_bytes,
                ..
            },
            Sql::Bytes(mut b),
        ) => {
            let n = usize::from(*max_bytes);
            if b.len() > n {
                return Err(fail(format!("at most {n} bytes of a BINARY({n})")));
            }
            b.resize(n, 0);
            Ok(Value::Bytes(b))
        }
        (ColumnKind::String { .. } | ColumnKind::Blob { .. }, Sql::Bytes(b)) => Ok(Value::Bytes(b)),
        (ColumnKind::Uuid, Sql::Bytes(b)) if b.len() == 16 => Ok(Value::Bytes(b)),
        (ColumnKind::Uuid, Sql::Bytes(_)) => Err(fail("the 16 stored bytes of a UUID".into())),
        (ColumnKind::Inet6, Sql::Bytes(b)) if b.len() == 16 => Ok(Value::Bytes(b)),
        (ColumnKind::Inet6, Sql::Bytes(_)) => Err(fail("the 16 stored bytes of an INET6".into())),
        (ColumnKind::Inet4, Sql::Bytes(b)) if b.len() == 4 => Ok(Value::Bytes(b)),
        (ColumnKind::Inet4, Sql::Bytes(_)) => Err(fail("the 4 stored bytes of an INET4".into())),
        (ColumnKind::Json, Sql::Bytes(b)) => compact_json(&b)
            .map(Value::Json)
            .map_err(|e| fail(format!("JSON text ({e})"))),
        (ColumnKind::Geometry | ColumnKind::Point, Sql::Bytes(b)) => Ok(Value::Geometry(b)),
        (ColumnKind::Vector { .. }, Sql::Bytes(b)) => {
            if b.len() % 4 != 0 {
                return Err(fail("packed 4-byte floats".into()));
            }
            Ok(Value::Bytes(b))
        }
        (kind, _) => Err(fail(format!(
            "a binary-protocol {} value (read rows with a prepared statement and the \
             snapshot's select list)",
            expected_shape(kind)
        ))),
    }
}

/// The binary-protocol value a kind is read as, for error messages.
fn expected_shape(kind: &ColumnKind) -> &'static str {
    match kind {
        ColumnKind::Float => "FLOAT",
        ColumnKind::Double => "DOUBLE",
        ColumnKind::Date | ColumnKind::DateTime { .. } | ColumnKind::Timestamp { .. } => {
            "DATE/DATETIME"
        }
        ColumnKind::Time { .. } => "TIME",
        ColumnKind::TinyInt { .. }
        | ColumnKind::SmallInt { .. }
        | ColumnKind::MediumInt { .. }
        | ColumnKind::Int { .. }
        | ColumnKind::BigInt { .. }
        | ColumnKind::Year
        | ColumnKind::Enum { .. }
        | ColumnKind::Set { .. } => "integer",
        ColumnKind::Decimal { .. }
        | ColumnKind::String { .. }
        | ColumnKind::Blob { .. }
        | ColumnKind::Bit { .. }
        | ColumnKind::Json
        | ColumnKind::Geometry
        | ColumnKind::Point
        | ColumnKind::Uuid
        | ColumnKind::Inet6
        | ColumnKind::Inet4
        | ColumnKind::Vector { .. } => "string (bytes)",
    }
}

fn check_date(y: u16, m: u8, d: u8) -> std::result::Result<(), String> {
    if y > 9999 || m > 12 || d > 31 {
        return Err(format!("{y:04}-{m:02}-{d:02} is out of range"));
    }
    Ok(())
}

fn check_time_of_day(hh: u8, mi: u8, ss: u8, us: u32) -> std::result::Result<(), String> {
    if hh > 23 || mi > 59 || ss > 59 || us >= 1_000_000 {
        return Err(format!("{hh:02}:{mi:02}:{ss:02}.{us:06} is out of range"));
    }
    Ok(())
}

/// A `TIMESTAMP` returned in UTC as epoch seconds; the zero timestamp is 0 (as it is stored).
fn timestamp(
    y: u16,
    m: u8,
    d: u8,
    hh: u8,
    mi: u8,
    ss: u8,
    us: u32,
) -> std::result::Result<Value, String> {
    check_time_of_day(hh, mi, ss, us)?;
    if (y, m, d, hh, mi, ss, us) == (0, 0, 0, 0, 0, 0, 0) {
        return Ok(Value::Timestamp { secs: 0, micros: 0 });
    }
    if y > 9999 || !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return Err(format!("{y:04}-{m:02}-{d:02} is not a timestamp date"));
    }
    let secs = seconds_from_civil(i64::from(y), m, d, hh, mi, ss);
    if !(0..=i64::from(u32::MAX)).contains(&secs) {
        return Err(format!("{secs} seconds since the epoch is out of range"));
    }
    Ok(Value::Timestamp { secs, micros: us })
}

/// Decimal text as the binlog decoder writes it: optional `-` (never on zero), the integer part
/// without leading zeros (`0` if none), and exactly `scale` decimals. The server writes a
/// DECIMAL with exactly its scale (`ZEROFILL` columns with leading zeros, which go).
fn canonical_decimal(text: &[u8], scale: u8) -> std::result::Result<String, String> {
    let s = std::str::from_utf8(text).map_err(|_| "not UTF-8".to_owned())?;
    let (negative, body) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    let digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || !digits(int) || !digits(frac) {
        return Err("not a plain decimal number".to_owned());
    }
    if frac.len() != usize::from(scale) || (scale == 0 && body.contains('.')) {
        return Err(format!("{} decimals", frac.len()));
    }
    let int = int.trim_start_matches('0');
    let int = if int.is_empty() { "0" } else { int };
    let zero = int == "0" && frac.bytes().all(|b| b == b'0');
    let mut out = String::with_capacity(body.len() + 1);
    if negative && !zero {
        out.push('-');
    }
    out.push_str(int);
    if scale > 0 {
        out.push('.');
        out.push_str(frac);
    }
    Ok(out)
}

/// MySQL's JSON text (as `SELECT` returns a JSON column) in the binlog decoder's form: the
/// blanks between tokens removed, strings re-escaped the way the decoder escapes them
/// (`write_json_string`), numbers and literals copied as the server wrote them.
///
/// The text must be one JSON value; control characters inside strings are accepted as the
/// server may leave them unescaped. The result is checked to be valid JSON.
pub fn compact_json(text: &[u8]) -> std::result::Result<String, String> {
    let mut out: Vec<u8> = Vec::with_capacity(text.len());
    let mut i = 0usize;
    while let Some(&b) = text.get(i) {
        match b {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'{' | b'}' | b'[' | b']' | b':' | b',' => {
                out.push(b);
                i += 1;
            }
            b'"' => {
                let (s, next) = json_string(text, i + 1)?;
                write_json_string(&mut out, &s);
                i = next;
            }
            b'-' | b'0'..=b'9' | b'a'..=b'z' => {
                let start = i;
                while text
                    .get(i)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'+' | b'-'))
                {
                    i += 1;
                }
                out.extend_from_slice(&text[start..i]);
            }
            other => return Err(format!("unexpected byte {other:#04x} at offset {i}")),
        }
    }
    let s = String::from_utf8(out).map_err(|e| e.to_string())?;
    serde_json::from_str::<serde::de::IgnoredAny>(&s).map_err(|e| format!("invalid JSON: {e}"))?;
    Ok(s)
}

/// The string whose content starts at `i` (after the opening quote): its text and the offset
/// after the closing quote.
fn json_string(text: &[u8], mut i: usize) -> std::result::Result<(String, usize), String> {
    let mut raw: Vec<u8> = Vec::new();
    loop {
        let Some(&b) = text.get(i) else {
            return Err("unterminated string".to_owned());
        };
        i += 1;
        match b {
            b'"' => break,
            b'\\' => {
                let Some(&e) = text.get(i) else {
                    return Err("unterminated escape".to_owned());
                };
                i += 1;
                match e {
                    b'"' | b'\\' | b'/' => raw.push(e),
                    b'b' => raw.push(0x08),
                    b'f' => raw.push(0x0c),
                    b'n' => raw.push(b'\n'),
                    b'r' => raw.push(b'\r'),
                    b't' => raw.push(b'\t'),
                    b'u' => {
                        let hi = hex4(text, i)?;
                        i += 4;
                        let c = if (0xD800..0xDC00).contains(&hi)
                            && text.get(i) == Some(&b'\\')
                            && text.get(i + 1) == Some(&b'u')
                        {
                            let lo = hex4(text, i + 2)?;
                            if (0xDC00..0xE000).contains(&lo) {
                                i += 6;
                                char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))
                            } else {
                                None
                            }
                        } else {
                            char::from_u32(hi)
                        };
                        let mut buf = [0u8; 4];
                        raw.extend_from_slice(
                            c.unwrap_or(char::REPLACEMENT_CHARACTER)
                                .encode_utf8(&mut buf)
                                .as_bytes(),
                        );
                    }
                    other => return Err(format!("bad escape \\{}", char::from(other))),
                }
            }
            _ => raw.push(b),
        }
    }
    // The decoder reads binary JSON strings as lossy UTF-8; so does this.
    Ok((String::from_utf8_lossy(&raw).into_owned(), i))
}

fn hex4(text: &[u8], i: usize) -> std::result::Result<u32, String> {
    let h = text
        .get(i..i + 4)
        .and_then(|h| std::str::from_utf8(h).ok())
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .ok_or_else(|| "bad \\u escape".to_owned())?;
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mysql_async::consts::{ColumnFlags, ColumnType};
    use std::sync::Arc;

    fn col(name: &str, kind: ColumnKind) -> Column {
        Column {
            name: name.into(),
            kind,
            nullable: true,
        }
    }

    fn members(m: &[&str]) -> Vec<String> {
        m.iter().map(|s| s.to_string()).collect()
    }

    fn every_kind() -> TableSchema {
        let s = |binary: bool, fixed: bool, max_bytes: u16| ColumnKind::String {
            charset: if binary { 63 } else { 255 },
            binary,
            fixed,
            max_bytes,
        };
        TableSchema {
            db: "d".into(),
            table: "t".into(),
            columns: vec![
                col("ti", ColumnKind::TinyInt { unsigned: false }),
                col("biu", ColumnKind::BigInt { unsigned: true }),
                col("f", ColumnKind::Float),
                col("dd", ColumnKind::Double),
                col(
                    "dec",
                    ColumnKind::Decimal {
                        precision: 10,
                        scale: 2,
                    },
                ),
                col("dt", ColumnKind::Date),
                col("t6", ColumnKind::Time { fsp: 6 }),
                col("dt3", ColumnKind::DateTime { fsp: 3 }),
                col("ts6", ColumnKind::Timestamp { fsp: 6 }),
                col("y", ColumnKind::Year),
                col("c", s(false, true, 40)),
                col("vb", s(true, false, 10)),
                col("bn", s(true, true, 4)),
                col(
                    "tx",
                    ColumnKind::Blob {
                        charset: 8,
                        binary: false,
                    },
                ),
                col(
                    "e",
                    ColumnKind::Enum {
                        values: members(&["a", "b"]),
                    },
                ),
                col(
                    "s",
                    ColumnKind::Set {
                        values: members(&["x", "y", "z"]),
                    },
                ),
                col("b9", ColumnKind::Bit { bits: 9 }),
                col("j", ColumnKind::Json),
                col("g", ColumnKind::Geometry),
                col(
                    "v",
                    ColumnKind::Vector {
                        dimensions: Some(2),
                    },
                ),
                col("we`ird", ColumnKind::Int { unsigned: false }),
            ],
            primary_key: vec![0],
        }
    }

    #[test]
    fn select_list_per_kind() {
        let list = select_list(&every_kind());
        let exprs: Vec<&str> = list.split(", ").collect();
        assert_eq!(
            exprs,
            [
                "`ti`",
                "`biu`",
                "`f`",
                "`dd`",
                "`dec`",
                "`dt`",
                "`t6`",
                "`dt3`",
                "`ts6`",
                "`y`",
                "`c`",
                "`vb`",
                "CAST(`bn` AS BINARY(4)) AS `bn`",
                "`tx`",
                "CAST(`e` AS UNSIGNED) AS `e`",
                "CAST(`s` AS UNSIGNED) AS `s`",
                "`b9`",
                "`j`",
                "`g`",
                "`v`",
                "`we``ird`",
            ]
        );
        assert_eq!(
            select_expr(&col("u", ColumnKind::Uuid)),
            "CAST(`u` AS BINARY(16)) AS `u`"
        );
        assert_eq!(quote_ident("a`b``"), "`a``b`````");
        assert!(SESSION_SETUP.contains(&"SET time_zone = '+00:00'"));
    }

    fn row(values: Vec<Sql>) -> mysql_async::Row {
        let columns: Arc<[mysql_async::Column]> = values
            .iter()
            .map(|_| {
                mysql_async::Column::new(ColumnType::MYSQL_TYPE_STRING)
                    .with_flags(ColumnFlags::empty())
            })
            .collect();
        mysql_common::row::new_row(values, columns)
    }

    fn one(kind: ColumnKind, v: Sql) -> Result<Value> {
        let schema = TableSchema {
            db: "d".into(),
            table: "t".into(),
            columns: vec![col("c", kind)],
            primary_key: vec![],
        };
        decode_row(&schema, row(vec![v])).map(|mut r| r.remove(0))
    }

    #[test]
    fn integers_keep_range_and_signedness() {
        let bu = ColumnKind::BigInt { unsigned: true };
        assert_eq!(
            one(bu.clone(), Sql::UInt(u64::MAX)).unwrap(),
            Value::UInt(u64::MAX)
        );
        assert_eq!(one(bu.clone(), Sql::Int(7)).unwrap(), Value::UInt(7));
        assert!(one(bu, Sql::Int(-1)).is_err());
        let b = ColumnKind::BigInt { unsigned: false };
        assert_eq!(
            one(b.clone(), Sql::Int(i64::MIN)).unwrap(),
            Value::Int(i64::MIN)
        );
        assert!(one(b, Sql::UInt(u64::MAX)).is_err());
        let t = ColumnKind::TinyInt { unsigned: false };
        assert_eq!(one(t.clone(), Sql::Int(-128)).unwrap(), Value::Int(-128));
        assert!(one(t.clone(), Sql::Int(128)).is_err());
        let tu = ColumnKind::MediumInt { unsigned: true };
        assert_eq!(
            one(tu.clone(), Sql::Int(16_777_215)).unwrap(),
            Value::UInt(16_777_215)
        );
        let e = one(t, Sql::Bytes(b"5".to_vec())).unwrap_err().to_string();
        assert!(e.contains("`d`.`t`") && e.contains("column `c`"), "{e}");
        assert!(e.contains("found bytes \"5\""), "{e}");
        assert!(e.contains("expected an integer in -128..=127"), "{e}");
        assert_eq!(
            one(ColumnKind::Int { unsigned: false }, Sql::NULL).unwrap(),
            Value::Null
        );
    }

    #[test]
    fn floats_are_bit_exact() {
        let f = f32::from_bits(0x0080_0001);
        assert_eq!(
            one(ColumnKind::Float, Sql::Float(f)).unwrap(),
            Value::Float(f)
        );
        assert_eq!(
            one(ColumnKind::Double, Sql::Double(-0.0)).unwrap(),
            Value::Double(-0.0)
        );
        assert!(one(ColumnKind::Float, Sql::Double(1.5)).is_err());
    }

    #[test]
    fn decimals_are_canonical() {
        let d = |p, s| ColumnKind::Decimal {
            precision: p,
            scale: s,
        };
        let ok = |k: ColumnKind, t: &str| one(k, Sql::Bytes(t.as_bytes().to_vec())).unwrap();
        assert_eq!(
            ok(d(10, 2), "-12345678.90"),
            Value::Decimal("-12345678.90".into())
        );
        assert_eq!(ok(d(10, 2), "0.05"), Value::Decimal("0.05".into()));
        assert_eq!(ok(d(10, 2), "0000012.30"), Value::Decimal("12.30".into()));
        assert_eq!(ok(d(10, 2), "-0.00"), Value::Decimal("0.00".into()));
        assert_eq!(ok(d(1, 0), "-9"), Value::Decimal("-9".into()));
        assert_eq!(ok(d(5, 0), "0"), Value::Decimal("0".into()));
        for bad in ["1.5", "1.500", "abc", "", "-", "1e5", "1.", "1.0"] {
            assert!(one(d(10, 2), Sql::Bytes(bad.into())).is_err(), "{bad}");
        }
        assert!(one(d(5, 0), Sql::Bytes("1.0".into())).is_err());
        assert!(one(d(5, 0), Sql::Bytes("1.".into())).is_err());
    }

    #[test]
    fn temporal_edges() {
        assert_eq!(
            one(ColumnKind::Date, Sql::Date(0, 0, 0, 0, 0, 0, 0)).unwrap(),
            Value::Date {
                year: 0,
                month: 0,
                day: 0
            }
        );
        assert_eq!(
            one(
                ColumnKind::DateTime { fsp: 6 },
                Sql::Date(9999, 12, 31, 23, 59, 59, 999_999)
            )
            .unwrap(),
            Value::DateTime {
                year: 9999,
                month: 12,
                day: 31,
                hour: 23,
                minute: 59,
                second: 59,
                micros: 999_999
            }
        );
        assert_eq!(
            one(
                ColumnKind::DateTime { fsp: 0 },
                Sql::Date(0, 0, 0, 0, 0, 0, 0)
            )
            .unwrap(),
            Value::DateTime {
                year: 0,
                month: 0,
                day: 0,
                hour: 0,
                minute: 0,
                second: 0,
                micros: 0
            }
        );
        let ts = ColumnKind::Timestamp { fsp: 6 };
        assert_eq!(
            one(ts.clone(), Sql::Date(2038, 1, 19, 3, 14, 7, 999_999)).unwrap(),
            Value::Timestamp {
                secs: 2_147_483_647,
                micros: 999_999
            }
        );
        assert_eq!(
            one(ts.clone(), Sql::Date(1970, 1, 1, 0, 0, 1, 0)).unwrap(),
            Value::Timestamp { secs: 1, micros: 0 }
        );
        assert_eq!(
            one(ts.clone(), Sql::Date(0, 0, 0, 0, 0, 0, 0)).unwrap(),
            Value::Timestamp { secs: 0, micros: 0 }
        );
        assert!(one(ts.clone(), Sql::Date(2024, 0, 1, 0, 0, 0, 0)).is_err());
        assert!(one(ts, Sql::Date(1969, 12, 31, 23, 59, 59, 0)).is_err());
        let t = ColumnKind::Time { fsp: 6 };
        assert_eq!(
            one(t.clone(), Sql::Time(true, 34, 22, 59, 59, 0)).unwrap(),
            Value::Time {
                negative: true,
                hours: 838,
                minutes: 59,
                seconds: 59,
                micros: 0
            }
        );
        assert_eq!(
            one(t.clone(), Sql::Time(true, 0, 0, 0, 0, 1)).unwrap(),
            Value::Time {
                negative: true,
                hours: 0,
                minutes: 0,
                seconds: 0,
                micros: 1
            }
        );
        assert_eq!(
            one(t.clone(), Sql::Time(true, 0, 0, 0, 0, 0)).unwrap(),
            Value::Time {
                negative: false,
                hours: 0,
                minutes: 0,
                seconds: 0,
                micros: 0
            }
        );
        assert!(one(t, Sql::Time(false, 0, 0, 60, 0, 0)).is_err());
        assert_eq!(one(ColumnKind::Year, Sql::Int(0)).unwrap(), Value::Year(0));
        assert_eq!(
            one(ColumnKind::Year, Sql::UInt(2155)).unwrap(),
            Value::Year(2155)
        );
        assert!(one(ColumnKind::Year, Sql::Int(1900)).is_err());
        assert!(one(ColumnKind::Date, Sql::Bytes(b"2024-01-01".to_vec())).is_err());
    }

    #[test]
    fn bits_enums_sets() {
        assert_eq!(
            one(ColumnKind::Bit { bits: 1 }, Sql::Bytes(vec![1])).unwrap(),
            Value::Bit(1)
        );
        assert_eq!(
            one(ColumnKind::Bit { bits: 64 }, Sql::Bytes(vec![0xff; 8])).unwrap(),
            Value::Bit(u64::MAX)
        );
        assert_eq!(
            one(ColumnKind::Bit { bits: 9 }, Sql::Bytes(vec![1, 1])).unwrap(),
            Value::Bit(257)
        );
        assert!(one(ColumnKind::Bit { bits: 9 }, Sql::Bytes(vec![2, 1])).is_err());
        assert!(one(ColumnKind::Bit { bits: 9 }, Sql::Bytes(vec![0, 0, 1])).is_err());
        let e = ColumnKind::Enum {
            values: members(&["a", "b"]),
        };
        assert_eq!(one(e.clone(), Sql::Int(2)).unwrap(), Value::Enum(2));
        assert_eq!(one(e.clone(), Sql::Int(0)).unwrap(), Value::Enum(0));
        assert!(one(e, Sql::Bytes(b"a".to_vec())).is_err());
        let s = ColumnKind::Set {
            values: members(&["x", "y", "z"]),
        };
        assert_eq!(one(s.clone(), Sql::Int(5)).unwrap(), Value::Set(5));
        assert!(one(s, Sql::Int(8)).is_err());
        let s64 = ColumnKind::Set {
            values: (0..64).map(|i| format!("m{i}")).collect(),
        };
        assert_eq!(one(s64, Sql::Int(-1)).unwrap(), Value::Set(u64::MAX));
    }

    #[test]
    fn strings_and_binary_padding() {
        let bn = ColumnKind::String {
            charset: 63,
            binary: true,
            fixed: true,
            max_bytes: 4,
        };
        assert_eq!(
            one(bn.clone(), Sql::Bytes(vec![0, 0xff])).unwrap(),
            Value::Bytes(vec![0, 0xff, 0, 0])
        );
        assert!(one(bn, Sql::Bytes(vec![1; 5])).is_err());
        let l1 = ColumnKind::String {
            charset: 8,
            binary: false,
            fixed: false,
            max_bytes: 20,
        };
        assert_eq!(
            one(l1, Sql::Bytes(b"caf\xe9".to_vec())).unwrap(),
            Value::Bytes(b"caf\xe9".to_vec())
        );
        assert!(one(
            ColumnKind::Vector { dimensions: None },
            Sql::Bytes(vec![0; 6])
        )
        .is_err());
        let stored: Vec<u8> = (1..=16).collect();
        assert_eq!(
            one(ColumnKind::Uuid, Sql::Bytes(stored.clone())).unwrap(),
            Value::Bytes(stored)
        );
        assert!(one(ColumnKind::Uuid, Sql::Bytes(vec![0; 15])).is_err());
        assert_eq!(
            one(ColumnKind::Inet6, Sql::Bytes(vec![7; 16])).unwrap(),
            Value::Bytes(vec![7; 16])
        );
        assert_eq!(
            one(ColumnKind::Inet4, Sql::Bytes(vec![7; 4])).unwrap(),
            Value::Bytes(vec![7; 4])
        );
        // A text form (the column read without its CAST) is refused, not taken for bytes.
        assert!(one(ColumnKind::Inet4, Sql::Bytes(b"1.2.3.4".to_vec())).is_err());
        assert!(one(ColumnKind::Inet6, Sql::Bytes(b"::1".to_vec())).is_err());
        assert_eq!(
            one(ColumnKind::Geometry, Sql::Bytes(vec![0, 0, 0, 0, 1])).unwrap(),
            Value::Geometry(vec![0, 0, 0, 0, 1])
        );
    }

    #[test]
    fn json_text_is_made_compact() {
        let c = |t: &str| compact_json(t.as_bytes());
        assert_eq!(
            c(r#"{"a": 2, "b": [1.0, 0.0000001, 1e15, -5, true, null], "c": {}}"#).unwrap(),
            r#"{"a":2,"b":[1.0,0.0000001,1e15,-5,true,null],"c":{}}"#
        );
        assert_eq!(c(r#""x \"y\" \\ \/ é""#).unwrap(), r#""x \"y\" \\ / é""#);
        assert_eq!(
            c(r#""\u001f\u00e9\ud83d\ude00""#).unwrap(),
            "\"\\u001fé😀\""
        );
        assert_eq!(c("\"a\u{1}b\"").unwrap(), r#""a\u0001b""#);
        assert_eq!(c("\"a\nb\"").unwrap(), r#""a\nb""#);
        assert_eq!(c(" null ").unwrap(), "null");
        assert_eq!(
            c("[1.50, 18446744073709551615]").unwrap(),
            "[1.50,18446744073709551615]"
        );
        for bad in [
            "",
            "{",
            r#"{"a": }"#,
            "\"abc",
            "[1,]",
            "@",
            "nul",
            r#""\q""#,
        ] {
            assert!(c(bad).is_err(), "{bad:?}");
        }
        let e = one(ColumnKind::Json, Sql::Bytes(b"{".to_vec()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected JSON text"), "{e}");
    }

    #[test]
    fn row_width_is_checked() {
        let schema = every_kind();
        let e = decode_row(&schema, row(vec![Sql::Int(1)]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("1 values for the table's 21 columns"), "{e}");
    }
}
