//! The TRANSACTION_PAYLOAD reader: a compressed transaction's header parsed, its payload
//! decompressed as a stream and its inner events handed out one at a time.
//!
//! Input: byte 0 picks the mode. Raw (0, 3): the rest is the event body. Built (1: zstd,
//! 2: not compressed): chunks of `[type, length, body...]` become inner events with correct
//! headers, the target writes the payload header (mode 3 with the input's uncompressed size).
//!
//! Properties: no panic; allocation bounded (inner events over 1 MiB refused before their
//! buffer grows); a payload read to its end hands out events adding up to exactly its
//! uncompressed size, each within the limit; a payload the target built is read back as built.
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;
use sluice::fuzz_entry::transaction_payload;

const MAX: u64 = 1 << 20;

fn lenenc(out: &mut Vec<u8>, v: u64) {
    if v < 251 {
        out.push(v as u8);
    } else if v < 1 << 16 {
        out.push(252);
        out.extend_from_slice(&(v as u16).to_le_bytes());
    } else if v < 1 << 24 {
        out.push(253);
        out.extend_from_slice(&v.to_le_bytes()[..3]);
    } else {
        out.push(254);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

fn field(b: &mut Vec<u8>, t: u8, v: u64) {
    let mut val = Vec::new();
    lenenc(&mut val, v);
    b.push(t);
    b.push(val.len() as u8);
    b.extend(val);
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, mut rest)) = data.split_first() else {
        return;
    };
    let mode = mode % 4;
    if mode == 0 {
        check(transaction_payload(rest, MAX), None);
        return;
    }
    let claimed = if mode == 3 && rest.len() >= 4 {
        let c = u64::from(u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]));
        rest = &rest[4..];
        Some(c)
    } else {
        None
    };
    let mut inner = Vec::new();
    let mut sizes = Vec::new();
    while rest.len() >= 2 {
        let (etype, len) = (rest[0], usize::from(rest[1]));
        let body = &rest[2..(2 + len).min(rest.len())];
        rest = &rest[2 + body.len()..];
        let size = 19 + body.len() as u32;
        inner.extend_from_slice(&0u32.to_le_bytes());
        inner.push(etype);
        inner.extend_from_slice(&1u32.to_le_bytes());
        inner.extend_from_slice(&size.to_le_bytes());
        inner.extend_from_slice(&0u32.to_le_bytes());
        inner.extend_from_slice(&0u16.to_le_bytes());
        inner.extend_from_slice(body);
        sizes.push(u64::from(size));
    }
    inner.extend_from_slice(rest);
    let zstd = mode != 2;
    let payload = if zstd {
        let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 1).expect("zstd");
        enc.write_all(&inner).expect("zstd");
        enc.finish().expect("zstd")
    } else {
        inner.clone()
    };
    let mut body = Vec::new();
    field(&mut body, 2, if zstd { 0 } else { 255 });
    let uncompressed = claimed.unwrap_or(inner.len() as u64);
    if zstd {
        field(&mut body, 3, uncompressed);
    }
    field(&mut body, 1, payload.len() as u64);
    body.push(0);
    body.extend_from_slice(&payload);
    let seen = transaction_payload(&body, MAX);
    let exact = claimed.is_none() && rest.is_empty();
    check(seen, exact.then_some(sizes));
});

fn check(seen: sluice::fuzz_entry::PayloadOutcome, built: Option<Vec<u64>>) {
    assert!(seen.inner_sizes.iter().all(|&s| (19..=MAX).contains(&s)));
    if seen.complete {
        let total: u64 = seen.inner_sizes.iter().sum();
        assert_eq!(
            Some(total),
            seen.uncompressed_size,
            "inner events add up to the payload"
        );
    }
    if let Some(sizes) = built {
        // Inner events the client library cannot read are an error; the rest read as built.
        if seen.complete {
            assert_eq!(seen.inner_sizes, sizes, "read back as built");
        }
    }
}
