//! The event parser: a replication stream of events, each checked by the event decoder (length,
//! CRC32) and then assembled into changes by the capture stage's assembler.
//!
//! Input: byte 0 picks the flavor; then chunks of `[type selector, length, body...]`. The target
//! writes each event's 19-byte header (with the real size and a growing end position) and its
//! CRC32, after a valid FORMAT_DESCRIPTION, so the fuzzer spends its time on the bodies; a
//! selector bit leaves the checksum wrong or the size claim raw to exercise the checks too.
//!
//! Properties: no panic; allocation bounded (libFuzzer's malloc limit; decompressed data is
//! capped at 1 MiB here); an event that fails its checks is never assembled.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice::fuzz_entry::binlog_stream;
use sluice::model::Flavor;

/// The event types sluice reads (MySQL and MariaDB); other selectors are used as the type.
const TYPES: [u8; 33] = [
    2, 4, 15, 16, 19, 23, 24, 25, 27, 30, 31, 32, 33, 34, 35, 38, 39, 40, 42, 160, 161, 162, 163,
    165, 166, 167, 168, 169, 170, 171, 2, 19, 30,
];

/// MySQL 8.0's post-header lengths.
const POST_HEADER_8_0: [u8; 41] = [
    0, 13, 0, 8, 0, 0, 0, 0, 4, 0, 4, 0, 0, 0, 98, 0, 4, 26, 8, 0, 0, 0, 8, 8, 8, 2, 0, 0, 0, 10,
    10, 10, 42, 42, 0, 18, 52, 0, 10, 0, 0,
];

fn event(etype: u8, log_pos: u32, body: &[u8], crc_ok: bool, fde: bool) -> Vec<u8> {
    let size = (19 + body.len() + 4) as u32;
    let mut v = Vec::with_capacity(size as usize);
    v.extend_from_slice(&1_700_000_000u32.to_le_bytes());
    v.push(etype);
    v.extend_from_slice(&1u32.to_le_bytes());
    v.extend_from_slice(&size.to_le_bytes());
    v.extend_from_slice(&log_pos.to_le_bytes());
    v.extend_from_slice(&0u16.to_le_bytes());
    v.extend_from_slice(body);
    let mut h = crc32fast::Hasher::new();
    if fde {
        let mut c = v.clone();
        c[17] &= !1;
        h.update(&c);
    } else {
        h.update(&v);
    }
    let crc = h.finalize() ^ u32::from(!crc_ok);
    v.extend_from_slice(&crc.to_le_bytes());
    v
}

fn fde_body(version: &str) -> Vec<u8> {
    let mut b = 4u16.to_le_bytes().to_vec();
    let mut v = [0u8; 50];
    v[..version.len()].copy_from_slice(version.as_bytes());
    b.extend_from_slice(&v);
    b.extend_from_slice(&0u32.to_le_bytes());
    b.push(19);
    b.extend_from_slice(&POST_HEADER_8_0);
    b.push(1); // CRC32
    b
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, mut rest)) = data.split_first() else {
        return;
    };
    let (flavor, version) = if first & 1 == 0 {
        (Flavor::MySql, "8.0.36")
    } else {
        (Flavor::MariaDb, "10.11.6-MariaDB-log")
    };
    let mut events = Vec::new();
    let mut pos = 4u32;
    let fde = event(15, 0, &fde_body(version), true, true);
    pos += fde.len() as u32;
    events.push(fde);
    while rest.len() >= 3 && events.len() < 64 {
        let sel = rest[0];
        let len = usize::from(u16::from_le_bytes([rest[1], rest[2]]));
        let body = &rest[3..(3 + len).min(rest.len())];
        rest = &rest[3 + body.len()..];
        let etype = TYPES.get(usize::from(sel & 0x3f)).copied().unwrap_or(sel);
        let mut ev = event(
            etype,
            pos.wrapping_add(body.len() as u32 + 23),
            body,
            sel & 0x80 == 0,
            etype == 15,
        );
        if sel & 0xc0 == 0xc0 {
            // Keep the body as written, size claim included: the raw event.
            ev = body.to_vec();
        }
        pos = pos.wrapping_add(ev.len() as u32);
        events.push(ev);
    }
    let refs: Vec<&[u8]> = events.iter().map(|e| &e[..]).collect();
    let seen = binlog_stream(flavor, &refs, 1 << 20);
    assert!(seen.accepted <= seen.decoded && seen.decoded <= refs.len());
});
