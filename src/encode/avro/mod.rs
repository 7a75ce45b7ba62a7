//! Avro encoding of row changes in the Confluent wire format, with Debezium's envelope.
//!
//! Each key and value is `0x00`, the 4-byte big-endian schema id, then the Avro binary datum
//! of the table's key schema / envelope schema ([`AvroTable`], derived once per table
//! version). The records a change becomes (delete + tombstone, key change → delete +
//! tombstone + create) are decided by [`crate::encode::change::encode_change`], shared with
//! the JSON encoder.
//!
//! The binary writer is hand-written and follows the per-column plan of the [`AvroTable`]:
//! no generic Avro value is built and no schema is looked at per row.
//!
//! Values (see also the README's Avro section):
//!
//! | column                 | Avro                                                            |
//! |------------------------|-----------------------------------------------------------------|
//! | TINYINT..MEDIUMINT, INT | `int`; INT UNSIGNED and BIGINT: `long`                         |
//! | BIGINT UNSIGNED        | `bytes` `decimal(20,0)` (exact)                                 |
//! | DECIMAL(p,s)           | `bytes` `decimal(p,s)`: minimal big-endian two's complement     |
//! | DATE                   | `int` `date`, always nullable: zero / partial-zero dates → null |
//! | DATETIME(n)            | `long` `local-timestamp-micros`, always nullable, zero → null   |
//! | TIMESTAMP(n)           | `long` `timestamp-micros` (zero timestamp → 0, as JSON's epoch) |
//! | TIME                   | `long` microseconds, negative allowed (`io.debezium.time.MicroTime`) |
//! | BIT(1) / BIT(n)        | `boolean` / `bytes`, ⌈n/8⌉ bytes least significant first        |
//! | GEOMETRY               | record `io.debezium.data.geometry.Geometry` {`wkb`, `srid`}     |
//! | POINT                  | record `io.debezium.data.geometry.Point` {`x`, `y`, `wkb`, `srid`} |
//! | VECTOR                 | `array` of `float`                                              |
//!
//! A value the schema cannot hold (NULL in a NOT NULL column, a value of the wrong type for
//! its column, an invalid ENUM index with `enum_as_avro_enum`, malformed decimal text) is a
//! definite error naming the table and column: nothing is written as something it is not.

pub(crate) mod schema;
mod wire;

use std::sync::Arc;

pub use schema::{AvroDoc, AvroOptions, AvroTable};
use schema::{ColPlan, Enc};
pub use wire::{put_bytes, put_header, put_long, put_str};

use crate::encode::change::{encode_change, Envelope, EnvelopeWriter, Op, Record, RowChange};
use crate::encode::envelope::EventTime;
use crate::encode::json_value::{days_from_civil, seconds_from_civil};
use crate::encode::projection::Projection;
use crate::encode::table_ctx::TableCtx;
use crate::error::{Error, Result};
use crate::schema::{charset_kind, decode_text, CharsetKind};
use crate::value::Value;

/// Registry ids of a table's schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchemaIds {
    /// Id of the key schema; `None` only for tables without key columns.
    pub key: Option<u32>,
    /// Id of the value (envelope) schema.
    pub value: u32,
}

/// Encodes row changes to Avro (Confluent wire format).
pub struct AvroEncoder {
    /// `source.version`, encoded.
    version: Vec<u8>,
    /// `source.name`, encoded.
    name: Vec<u8>,
}

impl AvroEncoder {
    /// An encoder for the pipeline `name` (written as `source.name`).
    pub fn new(name: &str) -> Self {
        let mut version = Vec::new();
        put_str(&mut version, env!("CARGO_PKG_VERSION"));
        let mut n = Vec::new();
        put_str(&mut n, name);
        AvroEncoder { version, name: n }
    }

    /// Encodes one row change into its records (written with the schema ids `ids`), appended
    /// to `out`. On error the row's records are not all there; the caller discards them.
    pub fn encode(
        &self,
        change: &RowChange<'_>,
        ids: SchemaIds,
        out: &mut Vec<Record>,
    ) -> Result<()> {
        encode_change(&WithIds { enc: self, ids }, change, out)
    }

    /// The key bytes (wire format with `key_id`), or `None` for tables without key columns.
    pub fn key(
        &self,
        table: &TableCtx,
        key_id: Option<u32>,
        row: Option<&[Value]>,
    ) -> Result<Option<Vec<u8>>> {
        let avro = avro_of(table)?;
        if avro.key_idx.is_empty() {
            return Ok(None);
        }
        let Some(row) = row else {
            return Ok(None);
        };
        let Some(id) = key_id else {
            return Err(Error::definite(format!(
                "table {}: no key schema id to write the Avro key with",
                avro.qualified
            )));
        };
        let mut out = Vec::with_capacity(8 + 16 * avro.key_idx.len());
        put_header(&mut out, id);
        for &i in &avro.key_idx {
            write_column(&mut out, avro, &table.out, i, row)?;
        }
        Ok(Some(out))
    }

    /// The envelope bytes (wire format with `value_id`).
    pub fn envelope(&self, value_id: u32, e: &Envelope<'_>) -> Result<Vec<u8>> {
        let Envelope {
            table,
            meta,
            op,
            before,
            after,
            row_pos: rp,
            ts,
        } = *e;
        let source_ts = EventTime::from_us(rp.source_ts_us);
        let avro = avro_of(table)?;
        let mut out = Vec::with_capacity(160 + 24 * avro.columns.len());
        put_header(&mut out, value_id);
        for image in [before, after] {
            match image {
                None => put_long(&mut out, 0),
                Some(row) => {
                    put_long(&mut out, 1);
                    for i in 0..avro.columns.len() {
                        write_column(&mut out, avro, &table.out, i, row)?;
                    }
                }
            }
        }
        // source
        out.extend_from_slice(&self.version);
        put_str(&mut out, meta.connector);
        out.extend_from_slice(&self.name);
        put_long(&mut out, u64_to_long(source_ts.ms()));
        put_str(&mut out, rp.snapshot.text());
        out.extend_from_slice(&avro.db);
        put_long(&mut out, 0); // sequence: null
        put_long(&mut out, 1);
        put_long(&mut out, u64_to_long(source_ts.us()));
        put_long(&mut out, 1);
        put_long(&mut out, u64_to_long(source_ts.ns));
        out.extend_from_slice(&avro.table);
        put_long(&mut out, i64::from(meta.server_id));
        match &meta.gtid {
            Some(g) => {
                put_long(&mut out, 1);
                put_str(&mut out, g);
            }
            None => put_long(&mut out, 0),
        }
        put_str(&mut out, &meta.file);
        put_long(&mut out, u64_to_long(rp.pos));
        put_long(&mut out, i64::from(rp.row));
        match meta.thread {
            Some(t) => {
                put_long(&mut out, 1);
                put_long(&mut out, i64::from(t));
            }
            None => put_long(&mut out, 0),
        }
        put_long(&mut out, 0); // query: null
        if op == Op::Read {
            // transaction: null, a snapshot read belongs to no source transaction (Debezium)
            put_long(&mut out, 0);
        } else {
            put_long(&mut out, 1);
            match &meta.gtid {
                Some(g) => put_str(&mut out, g),
                None => put_str(&mut out, &meta.id()),
            }
            put_long(&mut out, u64_to_long(rp.total_order));
            put_long(&mut out, u64_to_long(rp.data_collection_order));
        }
        put_str(&mut out, op.code());
        for t in [ts.ms(), ts.us(), ts.ns] {
            put_long(&mut out, 1);
            put_long(&mut out, u64_to_long(t));
        }
        Ok(out)
    }
}

/// The encoder bound to a table's schema ids, as the shared op logic sees it.
struct WithIds<'a> {
    enc: &'a AvroEncoder,
    ids: SchemaIds,
}

impl EnvelopeWriter for WithIds<'_> {
    type Error = Error;

    fn key(&self, table: &TableCtx, row: Option<&[Value]>) -> Result<Option<Vec<u8>>> {
        self.enc.key(table, self.ids.key, row)
    }

    fn envelope(&self, e: &Envelope<'_>) -> Result<Vec<u8>> {
        self.enc.envelope(self.ids.value, e)
    }
}

fn avro_of(table: &TableCtx) -> Result<&Arc<AvroTable>> {
    table.avro.as_ref().ok_or_else(|| {
        Error::definite(format!(
            "table {}.{} is not routed with format = \"avro\"",
            table.schema.db, table.schema.table
        ))
    })
}

/// Positions and counters are far below 2^63; clamp rather than wrap if one is not.
fn u64_to_long(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Appends big-endian two's complement bytes as Avro `bytes`, minus redundant sign bytes.
fn put_minimal(out: &mut Vec<u8>, be: &[u8]) {
    let mut start = 0;
    while start + 1 < be.len() {
        let (b, next) = (be[start], be[start + 1]);
        if (b == 0x00 && next & 0x80 == 0) || (b == 0xFF && next & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    put_bytes(out, &be[start..]);
}

/// An unsigned 64-bit integer as `decimal(20,0)` bytes.
pub fn put_u64_decimal(out: &mut Vec<u8>, v: u64) {
    let mut be = [0u8; 9];
    be[1..].copy_from_slice(&v.to_be_bytes());
    put_minimal(out, &be);
}

/// Exact decimal text (`-12.340`) as `decimal(_, scale)` bytes: the unscaled value in
/// minimal big-endian two's complement. Fewer fraction digits than `scale` are padded;
/// more, or anything but `[-+]digits[.digits]`, is an error (never rounded).
pub fn put_decimal_text(
    out: &mut Vec<u8>,
    text: &str,
    scale: u8,
) -> std::result::Result<(), String> {
    let bad = || format!("decimal text {text:?} is not a number with at most {scale} decimals");
    let b = text.as_bytes();
    let (negative, digits) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        Some(b'+') => (false, &b[1..]),
        _ => (false, b),
    };
    let (int_part, frac_part) = match digits.iter().position(|&c| c == b'.') {
        Some(p) => (&digits[..p], &digits[p + 1..]),
        None => (digits, &digits[digits.len()..]),
    };
    if (int_part.is_empty() && frac_part.is_empty())
        || frac_part.len() > usize::from(scale)
        || !int_part.iter().chain(frac_part).all(u8::is_ascii_digit)
    {
        return Err(bad());
    }
    let pad = usize::from(scale) - frac_part.len();
    let ndigits = int_part.len() + frac_part.len() + pad;
    let all = int_part
        .iter()
        .chain(frac_part)
        .copied()
        .chain(std::iter::repeat_n(b'0', pad));
    if ndigits <= 38 {
        // Fast path: fits an i128.
        let mut v: i128 = 0;
        for c in all {
            v = v * 10 + i128::from(c - b'0');
        }
        if negative {
            v = -v;
        }
        put_minimal(out, &v.to_be_bytes());
        return Ok(());
    }
    // 256-bit little-endian limbs; DECIMAL(65) needs 216 bits.
    let mut limbs = [0u64; 4];
    for c in all {
        let mut carry = u128::from(c - b'0');
        for l in &mut limbs {
            let x = u128::from(*l) * 10 + carry;
            *l = x as u64;
            carry = x >> 64;
        }
        if carry != 0 || limbs[3] >> 63 != 0 {
            return Err(format!("decimal text {text:?} has too many digits"));
        }
    }
    if negative {
        let mut carry = 1u128;
        for l in &mut limbs {
            let x = u128::from(!*l) + carry;
            *l = x as u64;
            carry = x >> 64;
        }
    }
    let mut be = [0u8; 32];
    for (i, l) in limbs.iter().rev().enumerate() {
        be[i * 8..i * 8 + 8].copy_from_slice(&l.to_be_bytes());
    }
    put_minimal(out, &be);
    Ok(())
}

/// Column `i` of `row` as the envelope writes it (a field of the `before`/`after` record):
/// for comparing single values, e.g. a snapshot read with the binlog's. The table must be
/// routed with `format = "avro"`.
pub fn column_datum(table: &TableCtx, i: usize, row: &[Value]) -> Result<Vec<u8>> {
    let avro = avro_of(table)?;
    let mut out = Vec::new();
    write_column(&mut out, avro, &table.out, i, row)?;
    Ok(out)
}

/// Writes written column `i` (of the route's [`Projection`]) of `row` as a field of a
/// record.
#[inline]
fn write_column(
    out: &mut Vec<u8>,
    avro: &AvroTable,
    projection: &Projection,
    i: usize,
    row: &[Value],
) -> Result<()> {
    let (Some(plan), Some(v)) = (avro.columns.get(i), projection.cell(row, i)) else {
        return Err(Error::definite(format!(
            "table {}: a row image has {} values for {} columns",
            avro.qualified,
            row.len(),
            avro.columns.len()
        )));
    };
    write_field(out, plan, &v).map_err(|e| {
        Error::definite(format!(
            "cannot write column `{}` of {} as Avro: {e}",
            plan.name, avro.qualified
        ))
    })
}

/// Writes one value as the (possibly nullable) type of its column.
fn write_field(out: &mut Vec<u8>, plan: &ColPlan, v: &Value) -> std::result::Result<(), String> {
    if matches!(v, Value::Null | Value::Missing) {
        if plan.nullable {
            put_long(out, 0);
            return Ok(());
        }
        return Err("NULL in a NOT NULL column".into());
    }
    // Zero dates: null (the type is always nullable for these); a POINT column's value that
    // is not a 2D point: null if the column is nullable.
    match (&plan.enc, v) {
        (Enc::Point, Value::Geometry(b)) if crate::encode::point::parse_point(b).is_none() => {
            if plan.nullable {
                put_long(out, 0);
                return Ok(());
            }
            return Err("a value that is not a 2D point in a NOT NULL POINT column".into());
        }
        (Enc::Date, Value::Date { month, day, .. })
        | (Enc::DateTime, Value::DateTime { month, day, .. })
            if *month == 0 || *day == 0 =>
        {
            put_long(out, 0);
            return Ok(());
        }
        _ => {}
    }
    if plan.nullable {
        put_long(out, 1);
    }
    write_value(out, &plan.enc, v)
}

/// Writes a non-null value as `enc`.
fn write_value(out: &mut Vec<u8>, enc: &Enc, v: &Value) -> std::result::Result<(), String> {
    let range = |what: &str| format!("{v:?} is out of range for {what}");
    match (enc, v) {
        (Enc::Int, Value::Int(i)) => {
            let x = i32::try_from(*i).map_err(|_| range("int"))?;
            put_long(out, i64::from(x));
        }
        (Enc::Int, Value::UInt(u)) => {
            let x = i32::try_from(*u).map_err(|_| range("int"))?;
            put_long(out, i64::from(x));
        }
        (Enc::Long, Value::Int(i)) => put_long(out, *i),
        (Enc::Long, Value::UInt(u)) => put_long(out, i64::try_from(*u).map_err(|_| range("long"))?),
        (Enc::U64Decimal, Value::UInt(u)) => put_u64_decimal(out, *u),
        (Enc::Decimal { scale, .. }, Value::Decimal(text)) => put_decimal_text(out, text, *scale)?,
        (Enc::Float, Value::Float(f)) => out.extend_from_slice(&f.to_le_bytes()),
        (Enc::Double, Value::Double(d)) => out.extend_from_slice(&d.to_le_bytes()),
        (Enc::Date, Value::Date { year, month, day }) => {
            put_long(out, days_from_civil(i64::from(*year), *month, *day));
        }
        (
            Enc::DateTime,
            Value::DateTime {
                year,
                month,
                day,
                hour,
                minute,
                second,
                micros,
            },
        ) => {
            let secs = seconds_from_civil(i64::from(*year), *month, *day, *hour, *minute, *second);
            put_long(out, secs * 1_000_000 + i64::from(*micros));
        }
        (
            Enc::Time,
            Value::Time {
                negative,
                hours,
                minutes,
                seconds,
                micros,
            },
        ) => {
            let mag =
                (i128::from(*hours) * 3600 + i128::from(*minutes) * 60 + i128::from(*seconds))
                    * 1_000_000
                    + i128::from(*micros);
            let us = i64::try_from(if *negative { -mag } else { mag })
                .map_err(|_| range("long microseconds"))?;
            put_long(out, us);
        }
        (Enc::Timestamp, Value::Timestamp { secs, micros }) => {
            let us = secs
                .checked_mul(1_000_000)
                .and_then(|s| s.checked_add(i64::from(*micros)))
                .ok_or_else(|| range("timestamp-micros"))?;
            put_long(out, us);
        }
        (Enc::Year, Value::Year(y)) => put_long(out, i64::from(*y)),
        (Enc::Text { charset }, Value::Bytes(b)) => match charset_kind(*charset) {
            CharsetKind::Utf8 | CharsetKind::Other | CharsetKind::Binary => {
                match std::str::from_utf8(b) {
                    Ok(s) => put_str(out, s),
                    Err(_) => put_str(out, &String::from_utf8_lossy(b)),
                }
            }
            _ => put_str(out, &decode_text(*charset, b)),
        },
        (Enc::Bytes, Value::Bytes(b)) => put_bytes(out, b),
        (Enc::EnumString { values }, Value::Enum(idx)) => {
            let s = usize::from(*idx)
                .checked_sub(1)
                .and_then(|i| values.get(i))
                .map_or("", String::as_str);
            put_str(out, s);
        }
        (Enc::EnumSymbol { values }, Value::Enum(idx)) => {
            let i = usize::from(*idx)
                .checked_sub(1)
                .filter(|&i| i < values.len())
                .ok_or_else(|| {
                    format!(
                        "ENUM index {idx} is MySQL's invalid-value empty string (or out of \
                         range), which has no Avro enum symbol; turn `enum_as_avro_enum` off to \
                         write ENUMs as strings"
                    )
                })?;
            put_long(out, i as i64);
        }
        (Enc::Set { values }, Value::Set(mask)) => {
            let n = values.len().min(64);
            let present = |i: usize| mask & (1u64 << i) != 0;
            let count = (0..n).filter(|&i| present(i)).count();
            if count > 0 {
                put_long(out, count as i64);
                for (i, name) in values.iter().enumerate().take(n) {
                    if present(i) {
                        put_str(out, name);
                    }
                }
            }
            put_long(out, 0);
        }
        (Enc::Json, Value::Json(text)) => put_str(out, text),
        (Enc::Json, Value::Bytes(b)) => put_str(out, &String::from_utf8_lossy(b)),
        (Enc::Uuid, Value::Bytes(b)) => {
            let text = crate::encode::uuid_text::uuid_text(b)
                .ok_or_else(|| format!("{} bytes where a UUID has 16", b.len()))?;
            put_bytes(out, &text);
        }
        (Enc::Inet6, Value::Bytes(b)) => {
            let text = crate::encode::inet_text::inet6_text(b)
                .ok_or_else(|| format!("{} bytes where an INET6 has 16", b.len()))?;
            put_bytes(out, text.as_bytes());
        }
        (Enc::Inet4, Value::Bytes(b)) => {
            let text = crate::encode::inet_text::inet4_text(b)
                .ok_or_else(|| format!("{} bytes where an INET4 has 4", b.len()))?;
            put_bytes(out, text.as_bytes());
        }
        (Enc::Bool, Value::Bit(bits)) => out.push(u8::from(*bits != 0)),
        (Enc::Bits { bits }, Value::Bit(x)) => {
            let n = usize::from(*bits).div_ceil(8).clamp(1, 8);
            put_bytes(out, &x.to_le_bytes()[..n]);
        }
        (Enc::Point, Value::Geometry(bytes)) => {
            let p = crate::encode::point::parse_point(bytes)
                .ok_or_else(|| "not a 2D point".to_string())?;
            out.extend_from_slice(&p.x.to_le_bytes());
            out.extend_from_slice(&p.y.to_le_bytes());
            put_long(out, 1);
            put_bytes(out, p.wkb);
            match p.srid {
                Some(srid) => {
                    put_long(out, 1);
                    put_long(out, i64::from(srid));
                }
                None => put_long(out, 0),
            }
        }
        (Enc::Geometry, Value::Geometry(bytes)) => match bytes.split_first_chunk::<4>() {
            Some((srid, wkb)) => {
                put_bytes(out, wkb);
                match i32::from_le_bytes(*srid) {
                    0 => put_long(out, 0),
                    srid => {
                        put_long(out, 1);
                        put_long(out, i64::from(srid));
                    }
                }
            }
            None => {
                put_bytes(out, bytes);
                put_long(out, 0);
            }
        },
        (Enc::Vector, Value::Bytes(b)) => {
            let n = b.len() / 4;
            if n > 0 {
                put_long(out, n as i64);
                // Avro floats are little-endian IEEE 754, as VECTOR stores them.
                out.extend_from_slice(&b[..n * 4]);
            }
            put_long(out, 0);
        }
        (enc, v) => {
            return Err(format!(
                "value {v:?} does not fit the column's Avro type {enc:?}"
            ))
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests;
