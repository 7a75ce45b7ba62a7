//! MySQL binary JSON is rendered to compact JSON text by [`jsonb_to_json`]: the text the
//! server itself gives for the document (`SELECT`, `CAST(j AS CHAR)`) without the blanks it puts
//! after `,` and `:`. So it keeps MySQL's key order, writes numbers as the server does
//! (doubles with `my_gcvt` and a `.0` for integral ones, see [`push_mysql_json_double`];
//! opaque DECIMAL as its exact text), opaque DATE/TIME/DATETIME/TIMESTAMP as strings
//! (`"2024-01-02 03:04:05.000000"`), an opaque VAR_STRING as a string and any other opaque
//! value as `"base64:type<field type>:<base64 with a newline every 76 characters>"`.
//! `crate::snapshot` turns the server's text into the same form.
//!
//! The container reader ([`JsonbContainer`]) and [`render_jsonb`] are also what
//! `binlog::json_diff` builds on to apply partial JSON updates.
//!
//! Invariant: no document makes it panic or recurse without bound: every offset and length
//! is checked against its value or container, nesting stops at [`MAX_JSON_DEPTH`], and
//! [`jsonb_to_json`] stops at a rendered size proportional to the binary size.

use super::decimal::{decimal_bin_size, decode_decimal};
use crate::encode::json_value::write_json_string;

/// Deepest JSON nesting accepted (MySQL itself allows 100).
pub(crate) const MAX_JSON_DEPTH: usize = 256;

/// Renders a MySQL binary JSON document (`json_binary`) as compact JSON text.
/// An empty document is JSON `null` (as MySQL treats it).
pub fn jsonb_to_json(doc: &[u8]) -> Result<String, String> {
    let Some((&t, rest)) = doc.split_first() else {
        return Ok("null".to_owned());
    };
    let mut out = Vec::with_capacity(doc.len() + doc.len() / 2 + 8);
    // Real documents render to a small multiple of their binary size; a budget stops
    // malformed documents whose entries share sub-values from exploding.
    let budget = doc.len().saturating_mul(64).saturating_add(4096);
    render_jsonb(t, rest, &mut out, 0, budget)?;
    String::from_utf8(out).map_err(|e| e.to_string())
}

pub(super) fn slice_at(data: &[u8], off: usize, len: usize) -> Result<&[u8], String> {
    data.get(off..).and_then(|s| s.get(..len)).ok_or_else(|| {
        format!(
            "{len} bytes at offset {off} exceed the {}-byte value",
            data.len()
        )
    })
}

pub(crate) fn le_uint(s: &[u8]) -> u64 {
    s.iter()
        .rev()
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
}

/// Reads JSONB's variable-length length (7 bits per byte, LSB first, ≤ 5 bytes).
fn jsonb_varlen(data: &[u8]) -> Result<(usize, usize), String> {
    let mut len: u64 = 0;
    for i in 0..5 {
        let b = *data
            .get(i)
            .ok_or_else(|| "truncated variable-length length".to_owned())?;
        len |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            let len = usize::try_from(len).map_err(|_| "length too large".to_owned())?;
            return Ok((len, i + 1));
        }
    }
    Err("variable-length length longer than 5 bytes".to_owned())
}

pub(crate) fn render_jsonb(
    t: u8,
    data: &[u8],
    out: &mut Vec<u8>,
    depth: usize,
    budget: usize,
) -> Result<(), String> {
    if depth > MAX_JSON_DEPTH {
        return Err("nesting too deep".to_owned());
    }
    if out.len() > budget {
        return Err("rendered document too large for its binary size".to_owned());
    }
    match t {
        0x00 => render_container(data, false, true, out, depth, budget),
        0x01 => render_container(data, true, true, out, depth, budget),
        0x02 => render_container(data, false, false, out, depth, budget),
        0x03 => render_container(data, true, false, out, depth, budget),
        0x04 => render_literal(*data.first().ok_or("truncated literal")?, out),
        0x05 => push_i64(out, i64::from(le_uint(slice_at(data, 0, 2)?) as u16 as i16)),
        0x06 => push_u64(out, le_uint(slice_at(data, 0, 2)?)),
        0x07 => push_i64(out, i64::from(le_uint(slice_at(data, 0, 4)?) as u32 as i32)),
        0x08 => push_u64(out, le_uint(slice_at(data, 0, 4)?)),
        0x09 => push_i64(out, le_uint(slice_at(data, 0, 8)?) as i64),
        0x0a => push_u64(out, le_uint(slice_at(data, 0, 8)?)),
        0x0b => {
            let d = f64::from_bits(le_uint(slice_at(data, 0, 8)?));
            push_f64(out, d);
            Ok(())
        }
        0x0c => {
            let (len, n) = jsonb_varlen(data)?;
            let s = slice_at(data, n, len)?;
            write_json_string(out, &String::from_utf8_lossy(s));
            Ok(())
        }
        0x0f => render_opaque(data, out),
        _ => Err(format!("unknown JSONB type {t:#04x}")),
    }
}

fn render_literal(b: u8, out: &mut Vec<u8>) -> Result<(), String> {
    out.extend_from_slice(match b {
        0 => b"null".as_slice(),
        1 => b"true",
        2 => b"false",
        _ => return Err(format!("unknown JSONB literal {b}")),
    });
    Ok(())
}

fn push_i64(out: &mut Vec<u8>, v: i64) -> Result<(), String> {
    crate::encode::json_value::push_i64(out, v);
    Ok(())
}

fn push_u64(out: &mut Vec<u8>, v: u64) -> Result<(), String> {
    crate::encode::json_value::push_u64(out, v);
    Ok(())
}

fn push_f64(out: &mut Vec<u8>, d: f64) {
    push_mysql_json_double(out, d);
}

/// Appends a JSON double the way MySQL's JSON text rendering writes it
/// (`Json_wrapper::to_string`: `my_gcvt(d, MY_GCVT_ARG_DOUBLE, MY_GCVT_MAX_FIELD_WIDTH)`, then
/// `.0` if that has neither a point nor an exponent), so that a document decoded from the
/// binlog reads exactly as `SELECT` returns it.
///
/// `my_gcvt` takes the shortest round-trip digits (dtoa mode 4 with a 34-character width,
/// wider than any shortest form) and writes them in fixed notation when the decimal exponent
/// `decpt` (the value is `0.DIGITS × 10^decpt`) is at least -14 and the number is either at
/// most 15 digits before the point or not an integer (`MAX_DECPT_FOR_F_FORMAT` = 15: `1e-7` is
/// `0.0000001`, `1e15` is `1e15`, `1e14` is `100000000000000.0`); otherwise in exponent
/// notation without `+` or leading zeros (`1e300`, `1.5e-16`, `5e-324`). Non-finite values
/// (which MySQL JSON cannot hold) are `null`.
pub fn push_mysql_json_double(out: &mut Vec<u8>, d: f64) {
    if !d.is_finite() {
        out.extend_from_slice(b"null");
        return;
    }
    // Shortest round-trip digits and exponent: "-1.2345e-7", "0e0".
    let sci = format!("{d:e}");
    let (negative, body) = match sci.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, sci.as_str()),
    };
    let (mantissa, exp) = body.split_once('e').unwrap_or((body, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    let len = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    let decpt = exp + 1;
    let start = out.len();
    if negative {
        out.push(b'-');
    }
    if decpt >= -14 && (decpt <= 15 || len > decpt) {
        if decpt <= 0 {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat_n(b'0', decpt.unsigned_abs() as usize));
            out.extend_from_slice(&digits);
        } else if decpt < len {
            let (int, frac) = digits.split_at(decpt as usize);
            out.extend_from_slice(int);
            out.push(b'.');
            out.extend_from_slice(frac);
        } else {
            out.extend_from_slice(&digits);
            out.extend(std::iter::repeat_n(b'0', (decpt - len) as usize));
        }
    } else {
        let (first, rest) = digits
            .split_first()
            .map_or((b'0', &[][..]), |(f, r)| (*f, r));
        out.push(first);
        if !rest.is_empty() {
            out.push(b'.');
            out.extend_from_slice(rest);
        }
        out.push(b'e');
        crate::encode::json_value::push_i64(out, i64::from(exp));
    }
    if !out[start..].iter().any(|&b| b == b'.' || b == b'e') {
        out.extend_from_slice(b".0");
    }
}

/// MySQL's `base64_encode` (used for opaque JSON values): standard alphabet, padded, with a
/// newline after every 76 characters of output.
fn mysql_base64(data: &[u8]) -> String {
    use base64::Engine as _;
    let plain = base64::engine::general_purpose::STANDARD.encode(data);
    let mut out = String::with_capacity(plain.len() + plain.len() / 76);
    for (i, c) in plain.chars().enumerate() {
        if i > 0 && i % 76 == 0 {
            out.push('\n');
        }
        out.push(c);
    }
    out
}

/// The header of a binary JSON object or array (`json_binary.cc`): entry count and the key
/// and value entry tables, checked against the container's size.
pub(crate) struct JsonbContainer<'a> {
    data: &'a [u8],
    large: bool,
    /// Number of members or elements.
    pub(crate) count: usize,
    osz: usize,
    keys_at: usize,
    values_at: usize,
    header: usize,
}

/// Where a container entry's value is: inline in the entry, or at an offset in the container.
pub(crate) enum JsonbSlot<'a> {
    /// Literal, INT16, UINT16 (and INT32, UINT32 in large containers): the entry's inline bytes.
    Inline(&'a [u8]),
    /// Any other type: the container's bytes from the value's offset on.
    At(&'a [u8]),
}

impl<'a> JsonbContainer<'a> {
    const KEY_LEN_SIZE: usize = 2;

    /// Parses the header of a container (`large`: 4-byte offsets and sizes, else 2-byte).
    pub(crate) fn parse(data: &'a [u8], large: bool, object: bool) -> Result<Self, String> {
        let osz = if large { 4 } else { 2 };
        let count = usize::try_from(le_uint(slice_at(data, 0, osz)?)).map_err(|e| e.to_string())?;
        let size =
            usize::try_from(le_uint(slice_at(data, osz, osz)?)).map_err(|e| e.to_string())?;
        let data = slice_at(data, 0, size)?;
        let keys_at = 2 * osz;
        let values_at = keys_at
            + if object {
                count.saturating_mul(osz + Self::KEY_LEN_SIZE)
            } else {
                0
            };
        let header = values_at.saturating_add(count.saturating_mul(1 + osz));
        if header > size {
            return Err(format!(
                "header of {count} entries exceeds container size {size}"
            ));
        }
        Ok(JsonbContainer {
            data,
            large,
            count,
            osz,
            keys_at,
            values_at,
            header,
        })
    }

    /// The key bytes of member `i` of an object.
    pub(crate) fn key(&self, i: usize) -> Result<&'a [u8], String> {
        let entry_len = self.osz + Self::KEY_LEN_SIZE;
        let e = slice_at(self.data, self.keys_at + i * entry_len, entry_len)?;
        let key_off =
            usize::try_from(le_uint(slice_at(e, 0, self.osz)?)).map_err(|e| e.to_string())?;
        let key_len = usize::try_from(le_uint(slice_at(e, self.osz, Self::KEY_LEN_SIZE)?))
            .map_err(|e| e.to_string())?;
        slice_at(self.data, key_off, key_len)
    }

    /// The type byte and the value of entry `i`.
    pub(crate) fn value(&self, i: usize) -> Result<(u8, JsonbSlot<'a>), String> {
        let entry_len = 1 + self.osz;
        let e = slice_at(self.data, self.values_at + i * entry_len, entry_len)?;
        let t = *e.first().ok_or("truncated value entry")?;
        let inline = slice_at(e, 1, self.osz)?;
        let is_inline = matches!(t, 0x04..=0x06) || (self.large && matches!(t, 0x07 | 0x08));
        if is_inline {
            return Ok((t, JsonbSlot::Inline(inline)));
        }
        let off = usize::try_from(le_uint(inline)).map_err(|e| e.to_string())?;
        let size = self.data.len();
        if off < self.header || off >= size {
            return Err(format!(
                "value offset {off} outside container of size {size}"
            ));
        }
        Ok((t, JsonbSlot::At(self.data.get(off..).unwrap_or(&[]))))
    }
}

fn render_container(
    data: &[u8],
    large: bool,
    object: bool,
    out: &mut Vec<u8>,
    depth: usize,
    budget: usize,
) -> Result<(), String> {
    let c = JsonbContainer::parse(data, large, object)?;
    out.push(if object { b'{' } else { b'[' });
    for i in 0..c.count {
        if i > 0 {
            out.push(b',');
        }
        if object {
            write_json_string(out, &String::from_utf8_lossy(c.key(i)?));
            out.push(b':');
        }
        match c.value(i)? {
            (0x04, JsonbSlot::Inline(v)) => {
                render_literal(*v.first().ok_or("truncated literal")?, out)?
            }
            (0x05, JsonbSlot::Inline(v)) => {
                push_i64(out, i64::from(le_uint(slice_at(v, 0, 2)?) as u16 as i16))?
            }
            (0x06, JsonbSlot::Inline(v)) => push_u64(out, le_uint(slice_at(v, 0, 2)?))?,
            (0x07, JsonbSlot::Inline(v)) => push_i64(out, i64::from(le_uint(v) as u32 as i32))?,
            (0x08, JsonbSlot::Inline(v)) => push_u64(out, le_uint(v))?,
            (t, JsonbSlot::Inline(_)) => return Err(format!("inline value of type {t}")),
            (t, JsonbSlot::At(v)) => render_jsonb(t, v, out, depth + 1, budget)?,
        }
    }
    out.push(if object { b'}' } else { b']' });
    Ok(())
}

/// MySQL's packed temporal value (`TIME_to_longlong_*_packed`) split into parts.
fn unpack_packed_datetime(v: i64) -> (bool, i64, i64, i64, i64, i64, i64, i64) {
    let negative = v < 0;
    let mag = v.unsigned_abs() as i64;
    let frac = mag & 0xFF_FFFF;
    let ymdhms = mag >> 24;
    let ymd = ymdhms >> 17;
    let ym = ymd >> 5;
    let hms = ymdhms & 0x1_FFFF;
    (
        negative,
        ym / 13,
        ym % 13,
        ymd & 31,
        hms >> 12,
        (hms >> 6) & 63,
        hms & 63,
        frac,
    )
}

fn render_opaque(data: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    let (&field_type, rest) = data.split_first().ok_or("truncated opaque value")?;
    let (len, n) = jsonb_varlen(rest)?;
    let v = slice_at(rest, n, len)?;
    use std::fmt::Write as _;
    let mut s = String::new();
    match field_type {
        246 => {
            let (&precision, r) = v.split_first().ok_or("truncated opaque DECIMAL")?;
            let (&scale, r) = r.split_first().ok_or("truncated opaque DECIMAL")?;
            if precision == 0 || precision > 65 || scale > precision {
                return Err("opaque DECIMAL precision/scale out of range".to_owned());
            }
            let size = decimal_bin_size(precision, scale);
            let raw = slice_at(r, 0, size)?;
            let text = decode_decimal(raw, precision, scale).map_err(|p| p.describe())?;
            out.extend_from_slice(text.as_bytes());
            return Ok(());
        }
        10 | 7 | 12 | 11 => {
            let packed = le_uint(slice_at(v, 0, 8)?) as i64;
            let (neg, year, month, day, hour, minute, second, frac) =
                unpack_packed_datetime(packed);
            let _ = match field_type {
                10 => write!(s, "{year:04}-{month:02}-{day:02}"),
                11 => {
                    // TIME packs hours in the 10 bits above minutes (no date part).
                    let hms = packed.unsigned_abs() >> 24;
                    let h = (hms >> 12) & 0x3FF;
                    write!(
                        s,
                        "{}{h:02}:{minute:02}:{second:02}.{frac:06}",
                        if neg { "-" } else { "" }
                    )
                }
                _ => write!(
                    s,
                    "{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}:{second:02}.{frac:06}"
                ),
            };
        }
        // MySQL renders an opaque VAR_STRING as the string itself (`wrapper_to_string`).
        253 => s.push_str(&String::from_utf8_lossy(v)),
        _ => {
            let _ = write!(s, "base64:type{field_type}:{}", mysql_base64(v));
        }
    }
    write_json_string(out, &s);
    Ok(())
}

/// Appends `n` as a binary-JSON variable-length integer (7 bits per byte, low first); for
/// tests that build binary JSON.
#[cfg(test)]
pub(crate) fn test_jsonb_varlen(mut n: usize, out: &mut Vec<u8>) {
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}
