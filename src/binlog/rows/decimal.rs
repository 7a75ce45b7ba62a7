//! MySQL's binary DECIMAL (`bin2decimal`): its size ([`decimal_bin_size`]) and its
//! decoding into canonical text ([`decode_decimal`]).
//!
//! Invariant: the text keeps exactly the column's scale (1.5 in a `DECIMAL(10,4)` is
//! `1.5000`), has no leading zeros and no negative zero; a value of the wrong size or with a
//! digit group out of range is a [`Problem`], never garbage.

use super::read::Problem;

/// Bytes needed for `d` (0..=9) decimal digits.
#[inline]
pub(super) fn dig2bytes(d: usize) -> usize {
    match d {
        0 => 0,
        1 | 2 => 1,
        3 | 4 => 2,
        5 | 6 => 3,
        _ => 4,
    }
}

/// Size in bytes of MySQL's binary DECIMAL(precision, scale) (`decimal_bin_size`).
pub(crate) fn decimal_bin_size(precision: u8, scale: u8) -> usize {
    let intg = usize::from(precision.saturating_sub(scale));
    let frac = usize::from(scale);
    (intg / 9) * 4 + dig2bytes(intg % 9) + (frac / 9) * 4 + dig2bytes(frac % 9)
}

pub(super) const POW10: [u32; 10] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
];

/// Appends `v` with exactly `width` digits (zero-padded; `v < 10^width`).
#[inline]
fn push_padded(out: &mut String, v: u32, width: usize) {
    let mut buf = [b'0'; 9];
    let mut x = v;
    for slot in buf.iter_mut().take(width).rev() {
        *slot = b'0' + (x % 10) as u8;
        x /= 10;
    }
    for &b in buf.iter().take(width) {
        out.push(char::from(b));
    }
}

/// Decodes MySQL's binary DECIMAL (`bin2decimal`) into canonical text keeping
/// exactly `scale` fractional digits.
pub(super) fn decode_decimal(raw: &[u8], precision: u8, scale: u8) -> Result<String, Problem> {
    let intg = usize::from(precision.saturating_sub(scale));
    let frac = usize::from(scale);
    if raw.len() != decimal_bin_size(precision, scale) || raw.is_empty() {
        return Err(Problem::Invalid("DECIMAL has the wrong size"));
    }
    let negative = raw.first().is_some_and(|b| b & 0x80 == 0);
    let mask: u8 = if negative { 0xff } else { 0 };
    let mut p = 0usize;
    // Reads a big-endian group of `len` bytes, undoing sign flip and inversion.
    let mut group = |len: usize, digits: usize| -> Result<u32, Problem> {
        let mut v: u32 = 0;
        for k in 0..len {
            let mut b = raw.get(p + k).copied().unwrap_or(0) ^ mask;
            if p + k == 0 {
                b ^= 0x80;
            }
            v = (v << 8) | u32::from(b);
        }
        p += len;
        let limit = POW10.get(digits).copied().unwrap_or(u32::MAX);
        if digits < 10 && v >= limit {
            return Err(Problem::Invalid("DECIMAL digit group out of range"));
        }
        Ok(v)
    };
    let mut out = String::with_capacity(usize::from(precision) + 3);
    if negative {
        out.push('-');
    }
    let mut started = false;
    let mut all_zero = true;
    let lead = intg % 9;
    if lead > 0 {
        let v = group(dig2bytes(lead), lead)?;
        if v != 0 {
            push_unpadded(&mut out, v);
            started = true;
            all_zero = false;
        }
    }
    for _ in 0..intg / 9 {
        let v = group(4, 9)?;
        if started {
            push_padded(&mut out, v, 9);
        } else if v != 0 {
            push_unpadded(&mut out, v);
            started = true;
            all_zero = false;
        }
    }
    if !started {
        out.push('0');
    }
    if frac > 0 {
        out.push('.');
        for _ in 0..frac / 9 {
            let v = group(4, 9)?;
            all_zero &= v == 0;
            push_padded(&mut out, v, 9);
        }
        let tail = frac % 9;
        if tail > 0 {
            let v = group(dig2bytes(tail), tail)?;
            all_zero &= v == 0;
            push_padded(&mut out, v, tail);
        }
    }
    if negative && all_zero {
        out.remove(0);
    }
    Ok(out)
}

#[inline]
fn push_unpadded(out: &mut String, v: u32) {
    let mut buf = [0u8; 10];
    let mut i = buf.len();
    let mut x = v;
    loop {
        i -= 1;
        if let Some(slot) = buf.get_mut(i) {
            *slot = b'0' + (x % 10) as u8;
        }
        x /= 10;
        if x == 0 || i == 0 {
            break;
        }
    }
    for &b in buf.iter().skip(i) {
        out.push(char::from(b));
    }
}
