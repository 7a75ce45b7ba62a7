//! The MySQL 5.6+ temporal formats with fractional seconds: TIME2 ([`decode_time2`]),
//! DATETIME2 ([`decode_datetime2`]) and the fractional part they share with TIMESTAMP2
//! ([`frac_micros`]). DATE, YEAR and the older formats are read in `cell`.
//!
//! Invariant: a decoded value is in range (minutes and seconds below 60, microseconds below
//! 1,000,000; for DATETIME2 hours below 24 and years up to 9999, never negative) or the read
//! is a [`Problem::Invalid`].

use super::read::{be_uint, fixed, Problem};
use crate::value::Value;

/// Fractional seconds stored big-endian in `(fsp + 1) / 2` bytes, as microseconds.
#[inline]
pub(super) fn frac_micros(data: &[u8], pos: &mut usize, fsp: u8) -> Result<u32, Problem> {
    let micros = match fsp {
        1 | 2 => u32::from(fixed::<1>(data, pos)?[0]) * 10_000,
        3 | 4 => u32::from(u16::from_be_bytes(fixed::<2>(data, pos)?)) * 100,
        5 | 6 => {
            let [a, b, c] = fixed::<3>(data, pos)?;
            u32::from_be_bytes([0, a, b, c])
        }
        _ => 0,
    };
    if micros >= 1_000_000 {
        return Err(Problem::Invalid("fractional seconds out of range"));
    }
    Ok(micros)
}

/// MySQL 5.6+ DATETIME2: 40-bit big-endian packed value offset by 2^39.
pub(super) fn decode_datetime2(data: &[u8], pos: &mut usize, fsp: u8) -> Result<Value, Problem> {
    let raw = be_uint(&fixed::<5>(data, pos)?) as i64;
    let int_part = raw - 0x80_0000_0000;
    if int_part < 0 {
        return Err(Problem::Invalid("negative DATETIME"));
    }
    let micros = frac_micros(data, pos, fsp)?;
    let ymd = int_part >> 17;
    let ym = ymd >> 5;
    let hms = int_part & 0x1_FFFF;
    let (year, month, day) = (ym / 13, ym % 13, ymd & 31);
    let (hour, minute, second) = (hms >> 12, (hms >> 6) & 63, hms & 63);
    // Every part is non-negative: `int_part` is, and the parts are its bit fields.
    datetime_value(
        [year, month, day, hour, minute, second].map(|part| part as u64),
        micros,
    )
}

/// A DATETIME of its decoded parts (year, month, day, hour, minute, second), checked against
/// the type's range (a zero month or day stays: MySQL's zero dates).
pub(super) fn datetime_value(parts: [u64; 6], micros: u32) -> Result<Value, Problem> {
    let [year, month, day, hour, minute, second] = parts;
    if year > 9999 || month > 12 || day > 31 || hour > 23 || minute > 59 || second > 59 {
        return Err(Problem::Invalid("DATETIME out of range"));
    }
    Ok(Value::DateTime {
        year: year as u16,
        month: month as u8,
        day: day as u8,
        hour: hour as u8,
        minute: minute as u8,
        second: second as u8,
        micros,
    })
}

/// MySQL 5.6+ TIME2 (`my_time_packed_from_binary`).
pub(super) fn decode_time2(data: &[u8], pos: &mut usize, fsp: u8) -> Result<Value, Problem> {
    const TIMEF_INT_OFS: i64 = 0x80_0000;
    const TIMEF_OFS: i64 = 0x8000_0000_0000;
    let packed: i64 = match fsp {
        1 | 2 => {
            let [a, b, c, f] = fixed::<4>(data, pos)?;
            let mut int_part = be_uint(&[a, b, c]) as i64 - TIMEF_INT_OFS;
            let mut frac = i64::from(f);
            if int_part < 0 && frac != 0 {
                int_part += 1;
                frac -= 0x100;
            }
            (int_part << 24) + frac * 10_000
        }
        3 | 4 => {
            let [a, b, c, f1, f2] = fixed::<5>(data, pos)?;
            let mut int_part = be_uint(&[a, b, c]) as i64 - TIMEF_INT_OFS;
            let mut frac = i64::from(u16::from_be_bytes([f1, f2]));
            if int_part < 0 && frac != 0 {
                int_part += 1;
                frac -= 0x10000;
            }
            (int_part << 24) + frac * 100
        }
        5 | 6 => be_uint(&fixed::<6>(data, pos)?) as i64 - TIMEF_OFS,
        _ => {
            let raw = fixed::<3>(data, pos)?;
            (be_uint(&raw) as i64 - TIMEF_INT_OFS) << 24
        }
    };
    let negative = packed < 0;
    let mag = packed.unsigned_abs();
    let hms = mag >> 24;
    let micros = mag & 0xFF_FFFF;
    let (hours, minutes, seconds) = ((hms >> 12) & 0x3FF, (hms >> 6) & 63, hms & 63);
    if micros >= 1_000_000 || minutes > 59 || seconds > 59 {
        return Err(Problem::Invalid("TIME out of range"));
    }
    Ok(Value::Time {
        negative,
        hours: hours as u32,
        minutes: minutes as u8,
        seconds: seconds as u8,
        micros: micros as u32,
    })
}
