//! Renders decoded column values as JSON text the way Debezium's `JsonConverter`
//! (`schemas.enable=false`) writes them, appending straight into a byte buffer.
//!
//! Connector settings this matches: `decimal.handling.mode=string`,
//! `time.precision.mode=adaptive_time_microseconds`, `binary.handling.mode=base64`,
//! except that `BIGINT UNSIGNED` is always written as the exact unsigned number.
//!
//! | column / value                       | JSON                                                        |
//! |--------------------------------------|-------------------------------------------------------------|
//! | NULL, column missing from the image  | `null`                                                      |
//! | integers (signed / unsigned)         | number (exact)                                              |
//! | FLOAT / DOUBLE                       | number (shortest round-trip form; non-finite → `null`)      |
//! | DECIMAL                              | string with the exact text, e.g. `"1.5000"`                 |
//! | DATE                                 | days since 1970-01-01 (proleptic Gregorian); zero → `null`  |
//! | DATETIME(0..3) / DATETIME(4..6)      | epoch milliseconds / microseconds (as UTC); zero → `null`   |
//! | TIME                                 | microseconds (negative allowed)                             |
//! | TIMESTAMP(fsp)                       | `"2024-03-01T10:20:30Z"`, fraction padded to fsp digits     |
//! | YEAR                                 | number                                                      |
//! | BIT(1) / BIT(n > 1)                  | `true`/`false` / base64 of ⌈n/8⌉ **little-endian** bytes    |
//! | CHAR / VARCHAR / TEXT                | string decoded from the column charset                      |
//! | BINARY / VARBINARY / BLOB            | base64 string (standard alphabet, padded)                   |
//! | ENUM / SET                           | member string / comma-separated members in definition order |
//! | JSON (MySQL and MariaDB)             | string containing the JSON text                             |
//! | GEOMETRY                             | `{"wkb": base64, "srid": int or null}`                      |
//! | POINT                                | `{"x": num, "y": num, "wkb": base64, "srid": int or null}`  |
//! | VECTOR                               | array of numbers                                            |
//!
//! Charsets: utf8/utf8mb3/utf8mb4/ascii are copied with invalid UTF-8 replaced by
//! U+FFFD; latin1 (collations 5, 8, 15, 31, 47, 48, 49, 94) is decoded as MySQL's
//! cp1252 variant; ucs2/utf16/utf16le/utf32 are decoded; any other charset is
//! treated as lossy UTF-8 (non-ASCII text in e.g. gbk or sjis will be mangled).
//!
//! Invariant: every function here appends exactly one syntactically valid JSON
//! value (or, for [`write_json_string`], one JSON string) to `out`, whatever the
//! input, and never panics.

use base64::Engine as _;

use crate::schema::{charset_kind, decode_text, CharsetKind, Column, ColumnKind};
use crate::value::Value;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// Appends `v` (a value of column `col`) as Debezium-compatible JSON.
pub fn write_json_value(out: &mut Vec<u8>, col: &Column, v: &Value) {
    match v {
        Value::Null | Value::Missing => out.extend_from_slice(b"null"),
        Value::Int(i) => push_i64(out, *i),
        Value::UInt(u) => push_u64(out, *u),
        Value::Float(f) => push_f32(out, *f),
        Value::Double(d) => push_f64(out, *d),
        Value::Decimal(s) => write_json_string(out, s),
        Value::Bytes(b) => write_bytes(out, &col.kind, b),
        Value::Date { year, month, day } => {
            if *month == 0 || *day == 0 {
                out.extend_from_slice(b"null");
            } else {
                push_i64(out, days_from_civil(i64::from(*year), *month, *day));
            }
        }
        Value::DateTime {
            year,
            month,
            day,
            hour,
            minute,
            second,
            micros,
        } => {
            if *month == 0 || *day == 0 {
                out.extend_from_slice(b"null");
            } else {
                let secs =
                    seconds_from_civil(i64::from(*year), *month, *day, *hour, *minute, *second);
                if col.kind.fsp() <= 3 {
                    push_i64(out, secs * 1000 + i64::from(*micros / 1000));
                } else {
                    push_i64(out, secs * 1_000_000 + i64::from(*micros));
                }
            }
        }
        Value::Time {
            negative,
            hours,
            minutes,
            seconds,
            micros,
        } => {
            // i128: a hand-built Value may carry up to u32::MAX hours.
            let mag =
                (i128::from(*hours) * 3600 + i128::from(*minutes) * 60 + i128::from(*seconds))
                    * 1_000_000
                    + i128::from(*micros);
            let us = if *negative { -mag } else { mag };
            push_i64(
                out,
                i64::try_from(us).unwrap_or(if *negative { i64::MIN } else { i64::MAX }),
            );
        }
        Value::Timestamp { secs, micros } => {
            write_zoned_timestamp(out, *secs, *micros, col.kind.fsp());
        }
        Value::Year(y) => push_u64(out, u64::from(*y)),
        Value::Bit(bits) => match col.kind {
            ColumnKind::Bit { bits: 1 } => {
                out.extend_from_slice(if *bits != 0 { b"true" } else { b"false" })
            }
            ColumnKind::Bit { bits: width } => {
                let n = usize::from(width).div_ceil(8).clamp(1, 8);
                let le = bits.to_le_bytes();
                write_base64(out, le.get(..n).unwrap_or(&le));
            }
            _ => push_u64(out, *bits),
        },
        Value::Enum(idx) => match &col.kind {
            ColumnKind::Enum { values } => {
                let s = usize::from(*idx)
                    .checked_sub(1)
                    .and_then(|i| values.get(i))
                    .map_or("", String::as_str);
                write_json_string(out, s);
            }
            _ => push_u64(out, u64::from(*idx)),
        },
        Value::Set(mask) => match &col.kind {
            ColumnKind::Set { values } => {
                let mut s = String::new();
                for (i, name) in values.iter().enumerate().take(64) {
                    if mask & (1u64 << i) != 0 {
                        if !s.is_empty() {
                            s.push(',');
                        }
                        s.push_str(name);
                    }
                }
                write_json_string(out, &s);
            }
            _ => push_u64(out, *mask),
        },
        Value::Json(text) => write_json_string(out, text),
        Value::Geometry(bytes) if col.kind == ColumnKind::Point => write_point(out, bytes),
        Value::Geometry(bytes) => write_geometry(out, bytes),
    }
}

/// Appends `s` as a JSON string literal (quotes, backslash and control characters
/// escaped; everything else, including U+2028/U+2029, copied as UTF-8).
pub fn write_json_string(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(s.len() + 2);
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(bytes.get(start..i).unwrap_or(&[]));
        if esc.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
        } else {
            out.extend_from_slice(esc);
        }
        start = i + 1;
    }
    out.extend_from_slice(bytes.get(start..).unwrap_or(&[]));
    out.push(b'"');
}

/// Appends a signed integer in decimal.
pub fn push_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    push_u64(out, v.unsigned_abs());
}

/// Appends an unsigned integer in decimal.
pub fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        if let Some(slot) = buf.get_mut(i) {
            *slot = b'0' + (v % 10) as u8;
        }
        v /= 10;
        if v == 0 || i == 0 {
            break;
        }
    }
    out.extend_from_slice(buf.get(i..).unwrap_or(&[]));
}

/// Appends a double as a JSON number (shortest round-trip form); `null` if not finite.
pub fn push_f64(out: &mut Vec<u8>, d: f64) {
    use std::io::Write as _;
    if d.is_finite() {
        // Debug formatting is the shortest round-trip representation and is valid
        // JSON for finite values ("1.0", "1e20", "-2.5e-7").
        let _ = write!(out, "{d:?}");
    } else {
        out.extend_from_slice(b"null");
    }
}

/// Appends a float as a JSON number (shortest round-trip form); `null` if not finite.
pub fn push_f32(out: &mut Vec<u8>, f: f32) {
    use std::io::Write as _;
    if f.is_finite() {
        let _ = write!(out, "{f:?}");
    } else {
        out.extend_from_slice(b"null");
    }
}

/// Appends `bytes` as a base64 (standard alphabet, padded) JSON string.
pub fn write_base64(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
    let start = out.len();
    out.resize(start + bytes.len().div_ceil(3) * 4, 0);
    let written = out
        .get_mut(start..)
        .and_then(|dst| B64.encode_slice(bytes, dst).ok())
        .unwrap_or(0);
    out.truncate(start + written);
    out.push(b'"');
}

/// Bytes of a string/blob column: text per charset, or base64 for binary data.
fn write_bytes(out: &mut Vec<u8>, kind: &ColumnKind, b: &[u8]) {
    match kind {
        ColumnKind::String { charset, .. } | ColumnKind::Blob { charset, .. } => {
            match charset_kind(*charset) {
                CharsetKind::Binary => write_base64(out, b),
                CharsetKind::Utf8 | CharsetKind::Other => match std::str::from_utf8(b) {
                    Ok(s) => write_json_string(out, s),
                    Err(_) => write_json_string(out, &String::from_utf8_lossy(b)),
                },
                _ => write_json_string(out, &decode_text(*charset, b)),
            }
        }
        ColumnKind::Vector { .. } => {
            out.push(b'[');
            for (i, c) in b.chunks_exact(4).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let f = <[u8; 4]>::try_from(c)
                    .map(f32::from_le_bytes)
                    .unwrap_or(0.0);
                push_f32(out, f);
            }
            out.push(b']');
        }
        ColumnKind::Json => write_json_string(out, &String::from_utf8_lossy(b)),
        ColumnKind::Uuid => {
            let text = crate::encode::uuid_text::uuid_text(b);
            write_ascii_or_base64(out, text.as_ref().map(|t| t.as_slice()), b)
        }
        ColumnKind::Inet6 => {
            let text = crate::encode::inet_text::inet6_text(b);
            write_ascii_or_base64(out, text.as_ref().map(|t| t.as_bytes()), b)
        }
        ColumnKind::Inet4 => {
            let text = crate::encode::inet_text::inet4_text(b);
            write_ascii_or_base64(out, text.as_ref().map(|t| t.as_bytes()), b)
        }
        _ => write_base64(out, b),
    }
}

/// A column whose stored bytes have a text form (MariaDB's UUID, INET6, INET4): the text (ASCII,
/// nothing to escape) as a JSON string; without one (a length the server never stores) the
/// bytes in base64 rather than a made-up text.
fn write_ascii_or_base64(out: &mut Vec<u8>, text: Option<&[u8]>, bytes: &[u8]) {
    match text {
        Some(text) => {
            out.push(b'"');
            out.extend_from_slice(text);
            out.push(b'"');
        }
        None => write_base64(out, bytes),
    }
}

/// Debezium's `io.debezium.data.geometry.Geometry` struct: WKB after the 4-byte
/// little-endian SRID; SRID 0 is written as `null` (as Debezium does).
fn write_geometry(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(b"{\"wkb\":");
    match bytes.split_first_chunk::<4>() {
        Some((srid, wkb)) => {
            write_base64(out, wkb);
            out.extend_from_slice(b",\"srid\":");
            let srid = i32::from_le_bytes(*srid);
            if srid == 0 {
                out.extend_from_slice(b"null");
            } else {
                push_i64(out, i64::from(srid));
            }
        }
        None => {
            write_base64(out, bytes);
            out.extend_from_slice(b",\"srid\":null");
        }
    }
    out.push(b'}');
}

/// Debezium's `io.debezium.data.geometry.Point` struct `{"x","y","wkb","srid"}`; `null` for
/// a value that is not a 2D point ([`crate::encode::point`]).
fn write_point(out: &mut Vec<u8>, bytes: &[u8]) {
    let Some(p) = crate::encode::point::parse_point(bytes) else {
        out.extend_from_slice(b"null");
        return;
    };
    out.extend_from_slice(b"{\"x\":");
    push_f64(out, p.x);
    out.extend_from_slice(b",\"y\":");
    push_f64(out, p.y);
    out.extend_from_slice(b",\"wkb\":");
    write_base64(out, p.wkb);
    out.extend_from_slice(b",\"srid\":");
    match p.srid {
        Some(srid) => push_i64(out, i64::from(srid)),
        None => out.extend_from_slice(b"null"),
    }
    out.push(b'}');
}

/// `YYYY-MM-DDTHH:MM:SS[.f{fsp}]Z` for a UTC instant (Debezium `ZonedTimestamp`).
fn write_zoned_timestamp(out: &mut Vec<u8>, secs: i64, micros: u32, fsp: u8) {
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    out.push(b'"');
    if (0..=9999).contains(&y) {
        push_padded(out, y as u64, 4);
    } else {
        push_i64(out, y);
    }
    out.push(b'-');
    push_padded(out, u64::from(m), 2);
    out.push(b'-');
    push_padded(out, u64::from(d), 2);
    out.push(b'T');
    push_padded(out, (sod / 3600) as u64, 2);
    out.push(b':');
    push_padded(out, (sod / 60 % 60) as u64, 2);
    out.push(b':');
    push_padded(out, (sod % 60) as u64, 2);
    let fsp = usize::from(fsp.min(6));
    if fsp > 0 {
        out.push(b'.');
        let scaled = u64::from(micros.min(999_999)) / 10u64.pow(6 - fsp as u32);
        push_padded(out, scaled, fsp);
    }
    out.extend_from_slice(b"Z\"");
}

/// Appends `v` zero-padded to at least `width` digits.
fn push_padded(out: &mut Vec<u8>, v: u64, width: usize) {
    let mut digits = 1;
    let mut x = v;
    while x >= 10 {
        x /= 10;
        digits += 1;
    }
    for _ in digits..width {
        out.push(b'0');
    }
    push_u64(out, v);
}

/// Seconds since 1970-01-01 00:00:00 of a proleptic Gregorian date and time of day (no time
/// zone: the wall clock as it is).
pub fn seconds_from_civil(year: i64, month: u8, day: u8, hour: u8, minute: u8, second: u8) -> i64 {
    days_from_civil(year, month, day) * 86_400
        + i64::from(hour) * 3600
        + i64::from(minute) * 60
        + i64::from(second)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm;
/// out-of-range days simply roll over).
pub fn days_from_civil(year: i64, month: u8, day: u8) -> i64 {
    let m = i64::from(month);
    let y = if m <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Inverse of [`days_from_civil`]: (year, month, day).
pub fn civil_from_days(days: i64) -> (i64, u8, u8) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u8;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{json, Value as J};

    fn col(kind: ColumnKind) -> Column {
        Column {
            name: "c".into(),
            kind,
            nullable: true,
        }
    }

    fn render(kind: ColumnKind, v: Value) -> J {
        let mut out = Vec::new();
        write_json_value(&mut out, &col(kind), &v);
        serde_json::from_slice(&out)
            .unwrap_or_else(|e| panic!("invalid JSON {:?}: {e}", String::from_utf8_lossy(&out)))
    }

    fn text(cs: u16) -> ColumnKind {
        ColumnKind::String {
            charset: cs,
            binary: cs == 63,
            fixed: false,
            max_bytes: 400,
        }
    }

    #[test]
    fn integers_and_floats() {
        assert_eq!(
            render(ColumnKind::Int { unsigned: false }, Value::Int(-5)),
            json!(-5)
        );
        assert_eq!(
            render(ColumnKind::BigInt { unsigned: true }, Value::UInt(u64::MAX)),
            json!(18446744073709551615u64)
        );
        assert_eq!(
            render(ColumnKind::Int { unsigned: true }, Value::UInt(4294967295)),
            json!(4294967295u64)
        );
        assert_eq!(
            render(ColumnKind::BigInt { unsigned: false }, Value::Int(i64::MIN)),
            json!(i64::MIN)
        );
        assert_eq!(render(ColumnKind::Float, Value::Float(2.75)), json!(2.75));
        assert_eq!(
            render(ColumnKind::Double, Value::Double(1e300)),
            json!(1e300)
        );
        assert_eq!(render(ColumnKind::Double, Value::Double(f64::NAN)), J::Null);
        assert_eq!(
            render(ColumnKind::Float, Value::Float(f32::INFINITY)),
            J::Null
        );
        let mut out = Vec::new();
        push_u64(&mut out, 0);
        assert_eq!(out, b"0");
    }

    #[test]
    fn decimals_are_strings() {
        let k = ColumnKind::Decimal {
            precision: 10,
            scale: 4,
        };
        assert_eq!(
            render(k, Value::Decimal("-12.3400".into())),
            json!("-12.3400")
        );
    }

    #[test]
    fn temporal() {
        assert_eq!(
            render(
                ColumnKind::Date,
                Value::Date {
                    year: 1970,
                    month: 1,
                    day: 2
                }
            ),
            json!(1)
        );
        assert_eq!(
            render(
                ColumnKind::Date,
                Value::Date {
                    year: 1969,
                    month: 12,
                    day: 31
                }
            ),
            json!(-1)
        );
        assert_eq!(
            render(
                ColumnKind::Date,
                Value::Date {
                    year: 2024,
                    month: 3,
                    day: 1
                }
            ),
            json!(19783)
        );
        assert_eq!(
            render(
                ColumnKind::Date,
                Value::Date {
                    year: 0,
                    month: 0,
                    day: 0
                }
            ),
            J::Null
        );
        let dt = Value::DateTime {
            year: 2024,
            month: 3,
            day: 1,
            hour: 10,
            minute: 20,
            second: 30,
            micros: 123_456,
        };
        assert_eq!(
            render(ColumnKind::DateTime { fsp: 6 }, dt.clone()),
            json!(1_709_288_430_123_456i64)
        );
        assert_eq!(
            render(ColumnKind::DateTime { fsp: 3 }, dt),
            json!(1_709_288_430_123i64)
        );
        assert_eq!(
            render(
                ColumnKind::DateTime { fsp: 0 },
                Value::DateTime {
                    year: 0,
                    month: 0,
                    day: 0,
                    hour: 0,
                    minute: 0,
                    second: 0,
                    micros: 0
                }
            ),
            J::Null
        );
        assert_eq!(
            render(
                ColumnKind::Time { fsp: 6 },
                Value::Time {
                    negative: true,
                    hours: 838,
                    minutes: 59,
                    seconds: 59,
                    micros: 0
                }
            ),
            json!(-3_020_399_000_000i64)
        );
        assert_eq!(
            render(
                ColumnKind::Time { fsp: 3 },
                Value::Time {
                    negative: false,
                    hours: 1,
                    minutes: 2,
                    seconds: 3,
                    micros: 400_000
                }
            ),
            json!(3_723_400_000i64)
        );
        let ts = Value::Timestamp {
            secs: 1_709_288_430,
            micros: 120_000,
        };
        assert_eq!(
            render(ColumnKind::Timestamp { fsp: 0 }, ts.clone()),
            json!("2024-03-01T10:20:30Z")
        );
        assert_eq!(
            render(ColumnKind::Timestamp { fsp: 3 }, ts.clone()),
            json!("2024-03-01T10:20:30.120Z")
        );
        assert_eq!(
            render(ColumnKind::Timestamp { fsp: 6 }, ts),
            json!("2024-03-01T10:20:30.120000Z")
        );
        assert_eq!(
            render(
                ColumnKind::Timestamp { fsp: 0 },
                Value::Timestamp { secs: 0, micros: 0 }
            ),
            json!("1970-01-01T00:00:00Z")
        );
        assert_eq!(
            render(
                ColumnKind::Timestamp { fsp: 0 },
                Value::Timestamp {
                    secs: u32::MAX.into(),
                    micros: 0
                }
            ),
            json!("2106-02-07T06:28:15Z")
        );
        assert_eq!(render(ColumnKind::Year, Value::Year(2024)), json!(2024));
    }

    #[test]
    fn bits() {
        assert_eq!(
            render(ColumnKind::Bit { bits: 1 }, Value::Bit(1)),
            json!(true)
        );
        assert_eq!(
            render(ColumnKind::Bit { bits: 1 }, Value::Bit(0)),
            json!(false)
        );
        // b'1000000001' = 0x0201 -> little-endian [0x01, 0x02]
        assert_eq!(
            render(ColumnKind::Bit { bits: 10 }, Value::Bit(0x201)),
            json!("AQI=")
        );
        assert_eq!(
            render(ColumnKind::Bit { bits: 64 }, Value::Bit(u64::MAX)),
            json!("//////////8=")
        );
    }

    #[test]
    fn strings_and_binaries() {
        assert_eq!(
            render(
                text(255),
                Value::Bytes("😀 \"q\" \\ \n\u{1}\u{2028}".as_bytes().to_vec())
            ),
            json!("😀 \"q\" \\ \n\u{1}\u{2028}")
        );
        assert_eq!(
            render(text(8), Value::Bytes(b"caf\xe9 \x80".to_vec())),
            json!("café €")
        );
        assert_eq!(
            render(text(33), Value::Bytes(b"a\xffb".to_vec())),
            json!("a\u{FFFD}b")
        );
        assert_eq!(
            render(text(63), Value::Bytes(vec![0, 1, 2, 255])),
            json!("AAEC/w==")
        );
        assert_eq!(
            render(
                ColumnKind::Blob {
                    charset: 63,
                    binary: true
                },
                Value::Bytes(vec![])
            ),
            json!("")
        );
        assert_eq!(
            render(
                ColumnKind::Blob {
                    charset: 45,
                    binary: false
                },
                Value::Bytes(b"{\"a\":1}".to_vec())
            ),
            json!("{\"a\":1}")
        );
    }

    #[test]
    fn enums_sets_json_geometry() {
        let e = ColumnKind::Enum {
            values: vec!["small".into(), "large".into()],
        };
        assert_eq!(render(e.clone(), Value::Enum(2)), json!("large"));
        assert_eq!(render(e.clone(), Value::Enum(0)), json!(""));
        assert_eq!(render(e, Value::Enum(9)), json!(""));
        let s = ColumnKind::Set {
            values: vec!["a".into(), "b".into(), "c".into()],
        };
        assert_eq!(render(s.clone(), Value::Set(0b101)), json!("a,c"));
        assert_eq!(render(s, Value::Set(0)), json!(""));
        assert_eq!(
            render(ColumnKind::Json, Value::Json("{\"k\":[1,2]}".into())),
            json!("{\"k\":[1,2]}")
        );
        let mut point = 4326i32.to_le_bytes().to_vec();
        point.extend([1, 1, 0, 0, 0]);
        assert_eq!(
            render(ColumnKind::Geometry, Value::Geometry(point)),
            json!({"wkb": "AQEAAAA=", "srid": 4326})
        );
        assert_eq!(
            render(ColumnKind::Geometry, Value::Geometry(vec![0, 0, 0, 0, 1])),
            json!({"wkb": "AQ==", "srid": null})
        );
        assert_eq!(
            render(ColumnKind::Geometry, Value::Geometry(vec![1])),
            json!({"wkb": "AQ==", "srid": null})
        );
        let mut v = 1.5f32.to_le_bytes().to_vec();
        v.extend((-2.0f32).to_le_bytes());
        assert_eq!(
            render(
                ColumnKind::Vector {
                    dimensions: Some(2)
                },
                Value::Bytes(v)
            ),
            json!([1.5, -2.0])
        );
        assert_eq!(render(ColumnKind::Json, Value::Null), J::Null);
        assert_eq!(render(ColumnKind::Json, Value::Missing), J::Null);
        let uuid = [
            0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3, 0xa4, 0x56, 0x42, 0x66, 0x14, 0x17,
            0x40, 0x00,
        ];
        assert_eq!(
            render(ColumnKind::Uuid, Value::Bytes(uuid.to_vec())),
            json!("123e4567-e89b-12d3-a456-426614174000")
        );
        // Never from MariaDB; the bytes, not a made-up text.
        assert_eq!(
            render(ColumnKind::Uuid, Value::Bytes(vec![1, 2])),
            json!("AQI=")
        );
        assert_eq!(render(ColumnKind::Uuid, Value::Null), J::Null);
        let mut v6 = [0u8; 16];
        v6[10] = 0xff;
        v6[11] = 0xff;
        v6[12..].copy_from_slice(&[192, 0, 2, 1]);
        assert_eq!(
            render(ColumnKind::Inet6, Value::Bytes(v6.to_vec())),
            json!("::ffff:192.0.2.1")
        );
        assert_eq!(
            render(ColumnKind::Inet4, Value::Bytes(vec![10, 0, 0, 255])),
            json!("10.0.0.255")
        );
        assert_eq!(
            render(ColumnKind::Inet4, Value::Bytes(vec![1, 2])),
            json!("AQI=")
        );
        assert_eq!(render(ColumnKind::Inet6, Value::Null), J::Null);
    }

    #[test]
    fn calendar_roundtrip() {
        for days in [-719_468i64, -1, 0, 1, 19_783, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(days_from_civil(0, 1, 1), -719_528);
    }

    fn arb_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            Just(Value::Missing),
            any::<i64>().prop_map(Value::Int),
            any::<u64>().prop_map(Value::UInt),
            any::<u32>().prop_map(|b| Value::Float(f32::from_bits(b))),
            any::<u64>().prop_map(|b| Value::Double(f64::from_bits(b))),
            ".*".prop_map(Value::Decimal),
            proptest::collection::vec(any::<u8>(), 0..40).prop_map(Value::Bytes),
            (any::<u16>(), any::<u8>(), any::<u8>()).prop_map(|(year, month, day)| Value::Date {
                year,
                month,
                day
            }),
            (
                any::<bool>(),
                any::<u32>(),
                any::<u8>(),
                any::<u8>(),
                any::<u32>()
            )
                .prop_map(|(negative, hours, minutes, seconds, micros)| Value::Time {
                    negative,
                    hours,
                    minutes,
                    seconds,
                    micros
                }),
            (
                any::<u16>(),
                any::<u8>(),
                any::<u8>(),
                any::<u8>(),
                any::<u32>()
            )
                .prop_map(|(year, month, day, hour, micros)| Value::DateTime {
                    year,
                    month,
                    day,
                    hour,
                    minute: hour,
                    second: day,
                    micros
                }),
            (any::<i64>(), any::<u32>())
                .prop_map(|(secs, micros)| Value::Timestamp { secs, micros }),
            any::<u16>().prop_map(Value::Year),
            any::<u64>().prop_map(Value::Bit),
            any::<u16>().prop_map(Value::Enum),
            any::<u64>().prop_map(Value::Set),
            ".*".prop_map(Value::Json),
            proptest::collection::vec(any::<u8>(), 0..40).prop_map(Value::Geometry),
        ]
    }

    fn arb_kind() -> impl Strategy<Value = ColumnKind> {
        prop_oneof![
            Just(ColumnKind::Int { unsigned: false }),
            Just(ColumnKind::Float),
            Just(ColumnKind::Date),
            (0u8..=9).prop_map(|fsp| ColumnKind::DateTime { fsp }),
            (0u8..=9).prop_map(|fsp| ColumnKind::Timestamp { fsp }),
            any::<u16>().prop_map(text),
            any::<u16>().prop_map(|bits| ColumnKind::Bit { bits }),
            Just(ColumnKind::Enum {
                values: vec!["a".into()]
            }),
            Just(ColumnKind::Set {
                values: vec!["a".into(), "\"\\".into()]
            }),
            Just(ColumnKind::Json),
            Just(ColumnKind::Geometry),
            Just(ColumnKind::Point),
            Just(ColumnKind::Uuid),
            Just(ColumnKind::Vector { dimensions: None }),
        ]
    }

    proptest! {
        #[test]
        fn any_value_any_kind_is_valid_json(v in arb_value(), k in arb_kind()) {
            let mut out = Vec::new();
            write_json_value(&mut out, &col(k), &v);
            prop_assert!(serde_json::from_slice::<J>(&out).is_ok(), "{}", String::from_utf8_lossy(&out));
        }

        #[test]
        fn json_string_roundtrips(s in any::<String>()) {
            let mut out = Vec::new();
            write_json_string(&mut out, &s);
            let back: String = serde_json::from_slice(&out).unwrap();
            prop_assert_eq!(back, s);
        }

        #[test]
        fn any_bytes_in_any_charset_are_valid_json(b in proptest::collection::vec(any::<u8>(), 0..64),
                                                   cs in prop_oneof![Just(8u16), Just(33), Just(63), Just(54), Just(56), Just(60), Just(28)]) {
            let mut out = Vec::new();
            write_json_value(&mut out, &col(text(cs)), &Value::Bytes(b));
            prop_assert!(serde_json::from_slice::<J>(&out).is_ok());
        }

        #[test]
        fn floats_are_valid_json(bits in any::<u64>()) {
            let d = f64::from_bits(bits);
            let mut out = Vec::new();
            push_f64(&mut out, d);
            // valid JSON, and (for finite values) exactly round-trippable text
            prop_assert!(serde_json::from_slice::<J>(&out).is_ok());
            if d.is_finite() {
                let text = std::str::from_utf8(&out).unwrap();
                prop_assert_eq!(text.parse::<f64>().unwrap(), d);
            }
        }

        #[test]
        fn timestamps_are_iso(secs in 0i64..=u32::MAX as i64, micros in 0u32..1_000_000, fsp in 0u8..=6) {
            let mut out = Vec::new();
            write_zoned_timestamp(&mut out, secs, micros, fsp);
            let s: String = serde_json::from_slice(&out).unwrap();
            prop_assert_eq!(s.len(), 20 + if fsp > 0 { 1 + usize::from(fsp) } else { 0 });
            prop_assert!(s.ends_with('Z'));
        }
    }
}
