//! The Avro binary primitives the encoder writes with (zig-zag varints, strings, bytes) and
//! the Confluent wire-format header. Pure; a leaf of `avro`.

/// Confluent wire-format header: magic byte 0 and the big-endian schema id.
#[inline]
pub fn put_header(out: &mut Vec<u8>, id: u32) {
    out.push(0);
    out.extend_from_slice(&id.to_be_bytes());
}

/// Appends an Avro `int`/`long` (zig-zag varint).
#[inline]
pub fn put_long(out: &mut Vec<u8>, v: i64) {
    let mut n = ((v << 1) ^ (v >> 63)) as u64;
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Appends an Avro `string`.
#[inline]
pub fn put_str(out: &mut Vec<u8>, s: &str) {
    put_bytes(out, s.as_bytes());
}

/// Appends an Avro `bytes`.
#[inline]
pub fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_long(out, b.len() as i64);
    out.extend_from_slice(b);
}
