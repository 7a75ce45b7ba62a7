//! How one column is stored in a row image ([`Cell`], chosen per column by the plan) and
//! [`decode_cell`], which reads one non-null value of that storage into a [`Value`].
//!
//! Invariant: `decode_cell` never panics and never reads past the data; when it succeeds it
//! has advanced the position past exactly the value's bytes, otherwise it returns a
//! [`Problem`]. `BINARY(n)` values are right-padded with zero bytes to `n` bytes, as MySQL
//! returns them (the binlog strips trailing zeros).

use super::decimal::decode_decimal;
use super::jsonb::jsonb_to_json;
use super::read::{be_uint, fixed, length_prefix, take, Problem};
use super::temporal::{datetime_value, decode_datetime2, decode_time2, frac_micros};
use crate::value::Value;

/// How one column is stored in a row image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cell {
    I8,
    U8,
    I16,
    U16,
    I24,
    U24,
    I32,
    U32,
    I64,
    U64,
    Float,
    Double,
    Decimal {
        precision: u8,
        scale: u8,
        size: u8,
    },
    Date,
    TimeOld,
    Time2 {
        fsp: u8,
    },
    DateTimeOld,
    DateTime2 {
        fsp: u8,
    },
    TimestampOld,
    Timestamp2 {
        fsp: u8,
    },
    Year,
    /// VARCHAR/CHAR text or VARBINARY: 1- or 2-byte length prefix.
    Str {
        prefix: u8,
    },
    /// BINARY(n): like `Str` but zero-padded to `pad_to` bytes.
    FixedBinary {
        prefix: u8,
        pad_to: u16,
    },
    Blob {
        prefix: u8,
    },
    Json {
        prefix: u8,
    },
    Geometry {
        prefix: u8,
    },
    Vector {
        prefix: u8,
    },
    Enum {
        size: u8,
    },
    Set {
        size: u8,
    },
    Bit {
        bits: u16,
    },
}

pub(super) fn decode_cell(cell: Cell, data: &[u8], pos: &mut usize) -> Result<Value, Problem> {
    Ok(match cell {
        Cell::I8 => Value::Int(i64::from(i8::from_le_bytes(fixed::<1>(data, pos)?))),
        Cell::U8 => Value::UInt(u64::from(u8::from_le_bytes(fixed::<1>(data, pos)?))),
        Cell::I16 => Value::Int(i64::from(i16::from_le_bytes(fixed::<2>(data, pos)?))),
        Cell::U16 => Value::UInt(u64::from(u16::from_le_bytes(fixed::<2>(data, pos)?))),
        Cell::I24 => {
            let [a, b, c] = fixed::<3>(data, pos)?;
            // sign-extend via the top byte
            Value::Int(i64::from(i32::from_le_bytes([0, a, b, c]) >> 8))
        }
        Cell::U24 => {
            let [a, b, c] = fixed::<3>(data, pos)?;
            Value::UInt(u64::from(u32::from_le_bytes([a, b, c, 0])))
        }
        Cell::I32 => Value::Int(i64::from(i32::from_le_bytes(fixed::<4>(data, pos)?))),
        Cell::U32 => Value::UInt(u64::from(u32::from_le_bytes(fixed::<4>(data, pos)?))),
        Cell::I64 => Value::Int(i64::from_le_bytes(fixed::<8>(data, pos)?)),
        Cell::U64 => Value::UInt(u64::from_le_bytes(fixed::<8>(data, pos)?)),
        Cell::Float => Value::Float(f32::from_le_bytes(fixed::<4>(data, pos)?)),
        Cell::Double => Value::Double(f64::from_le_bytes(fixed::<8>(data, pos)?)),
        Cell::Decimal {
            precision,
            scale,
            size,
        } => {
            let raw = take(data, pos, usize::from(size))?;
            Value::Decimal(decode_decimal(raw, precision, scale)?)
        }
        Cell::Date => {
            let [a, b, c] = fixed::<3>(data, pos)?;
            let v = u32::from_le_bytes([a, b, c, 0]);
            let (year, month, day) = (v >> 9, (v >> 5) & 15, v & 31);
            if year > 9999 || month > 12 {
                return Err(Problem::Invalid("DATE out of range"));
            }
            Value::Date {
                year: year as u16,
                month: month as u8,
                day: day as u8,
            }
        }
        Cell::TimeOld => {
            let [a, b, c] = fixed::<3>(data, pos)?;
            let v = i32::from_le_bytes([0, a, b, c]) >> 8;
            let mag = v.unsigned_abs();
            let (hours, minutes, seconds) = (mag / 10000, (mag / 100) % 100, mag % 100);
            if minutes > 59 || seconds > 59 {
                return Err(Problem::Invalid("TIME out of range"));
            }
            Value::Time {
                negative: v < 0,
                hours,
                minutes: minutes as u8,
                seconds: seconds as u8,
                micros: 0,
            }
        }
        Cell::Time2 { fsp } => decode_time2(data, pos, fsp)?,
        Cell::DateTimeOld => {
            let v = u64::from_le_bytes(fixed::<8>(data, pos)?);
            let (d, t) = (v / 1_000_000, v % 1_000_000);
            let (year, month, day) = (d / 10000, (d / 100) % 100, d % 100);
            let (hour, minute, second) = (t / 10000, (t / 100) % 100, t % 100);
            datetime_value([year, month, day, hour, minute, second], 0)?
        }
        Cell::DateTime2 { fsp } => decode_datetime2(data, pos, fsp)?,
        Cell::TimestampOld => Value::Timestamp {
            secs: i64::from(u32::from_le_bytes(fixed::<4>(data, pos)?)),
            micros: 0,
        },
        Cell::Timestamp2 { fsp } => {
            let secs = u32::from_be_bytes(fixed::<4>(data, pos)?);
            let micros = frac_micros(data, pos, fsp)?;
            Value::Timestamp {
                secs: i64::from(secs),
                micros,
            }
        }
        Cell::Year => {
            let [y] = fixed::<1>(data, pos)?;
            Value::Year(if y == 0 { 0 } else { 1900 + u16::from(y) })
        }
        Cell::Str { prefix } | Cell::Blob { prefix } => {
            let len = length_prefix(data, pos, prefix)?;
            Value::Bytes(take(data, pos, len)?.to_vec())
        }
        Cell::FixedBinary { prefix, pad_to } => {
            let len = length_prefix(data, pos, prefix)?;
            let s = take(data, pos, len)?;
            let mut v = Vec::with_capacity(s.len().max(usize::from(pad_to)));
            v.extend_from_slice(s);
            if v.len() < usize::from(pad_to) {
                v.resize(usize::from(pad_to), 0);
            }
            Value::Bytes(v)
        }
        Cell::Json { prefix } => {
            let len = length_prefix(data, pos, prefix)?;
            let doc = take(data, pos, len)?;
            Value::Json(jsonb_to_json(doc).map_err(Problem::Json)?)
        }
        Cell::Geometry { prefix } => {
            let len = length_prefix(data, pos, prefix)?;
            Value::Geometry(take(data, pos, len)?.to_vec())
        }
        Cell::Vector { prefix } => {
            let len = length_prefix(data, pos, prefix)?;
            if len % 4 != 0 {
                return Err(Problem::Invalid("VECTOR length is not a multiple of 4"));
            }
            Value::Bytes(take(data, pos, len)?.to_vec())
        }
        Cell::Enum { size } => {
            let s = take(data, pos, usize::from(size))?;
            Value::Enum(
                s.iter()
                    .rev()
                    .fold(0u16, |acc, &b| (acc << 8) | u16::from(b)),
            )
        }
        Cell::Set { size } => {
            let s = take(data, pos, usize::from(size))?;
            Value::Set(
                s.iter()
                    .rev()
                    .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)),
            )
        }
        Cell::Bit { bits } => {
            let s = take(data, pos, usize::from(bits).div_ceil(8))?;
            let v = be_uint(s);
            if bits < 64 && v >> bits != 0 {
                return Err(Problem::Invalid("BIT value wider than the column"));
            }
            Value::Bit(v)
        }
    })
}
