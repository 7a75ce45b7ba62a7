//! Binlog event byte fixtures for tests, for server versions that cannot run in the test
//! environment (MySQL 5.7, 8.0, 8.4) and for features that need special server settings.
//!
//! Every fixture is **constructed** from the documented event layouts (MySQL's
//! `libbinlogevents` / `libs/mysql/binlog/event` headers: `control_events.h`,
//! `rows_event.h`, `statement_events.h`, `binlog_event.h`) — none is a capture of a real
//! server. The constants that differ between versions (the FORMAT_DESCRIPTION post-header
//! length table, v2 rows extra data, optional TABLE_MAP metadata) are spelled out with the
//! name of the MySQL constant they come from.

use std::io::Write;

use mysql_common::binlog::consts::BinlogVersion;
use mysql_common::binlog::events::{Event, FormatDescriptionEvent};

use crate::binlog::events::types;

/// A 19-byte common header: timestamp, type, server id, event size, end position, flags.
pub fn header(etype: u8, size: u32, log_pos: u32) -> [u8; 19] {
    let mut h = [0u8; 19];
    h[0..4].copy_from_slice(&1_700_000_000u32.to_le_bytes());
    h[4] = etype;
    h[5..9].copy_from_slice(&1u32.to_le_bytes());
    h[9..13].copy_from_slice(&size.to_le_bytes());
    h[13..17].copy_from_slice(&log_pos.to_le_bytes());
    h
}

/// Header + body, as one raw event without checksum.
pub fn raw(etype: u8, log_pos: u32, body: &[u8]) -> Vec<u8> {
    let size = 19 + body.len() as u32;
    let mut v = header(etype, size, log_pos).to_vec();
    v.extend_from_slice(body);
    v
}

/// Post-header lengths of MySQL 5.7 (`Format_description_event` constructor, 5.7
/// libbinlogevents): START_V3 56, QUERY 13, STOP 0, ROTATE 8, INTVAR 0, LOAD 18, (slave) 0,
/// CREATE_FILE 4, APPEND_BLOCK 4, EXEC_LOAD 4, DELETE_FILE 4, NEW_LOAD 18, RAND 0, USER_VAR 0,
/// FORMAT_DESCRIPTION 95 (= 56 + 1 + 38 event types), XID 0, BEGIN_LOAD_QUERY 4,
/// EXECUTE_LOAD_QUERY 26, TABLE_MAP 8, three PRE_GA rows 0, v1 rows 8 ×3, INCIDENT 2,
/// HEARTBEAT 0, IGNORABLE 0, ROWS_QUERY 0, v2 rows 10 ×3, GTID 42, ANONYMOUS_GTID 42,
/// PREVIOUS_GTIDS 0, TRANSACTION_CONTEXT 18, VIEW_CHANGE 52, XA_PREPARE 0 — 38 entries.
pub const POST_HEADER_5_7: [u8; 38] = [
    56, 13, 0, 8, 0, 18, 0, 4, 4, 4, 4, 18, 0, 0, 95, 0, 4, 26, 8, 0, 0, 0, 8, 8, 8, 2, 0, 0, 0,
    10, 10, 10, 42, 42, 0, 18, 52, 0,
];

/// Post-header lengths of MySQL 8.0 (8.0.26+): START_V3's slot and the removed LOAD-family
/// slots are 0, FORMAT_DESCRIPTION is 98 (= 57 + 41), and PARTIAL_UPDATE_ROWS 10,
/// TRANSACTION_PAYLOAD, HEARTBEAT_V2 follow XA_PREPARE — 41 entries. The TRANSACTION_PAYLOAD
/// entry is left 0 here: readers parse that event's self-describing fields from the start of
/// its body and never look at it.
pub const POST_HEADER_8_0: [u8; 41] = [
    0, 13, 0, 8, 0, 0, 0, 0, 4, 0, 4, 0, 0, 0, 98, 0, 4, 26, 8, 0, 0, 0, 8, 8, 8, 2, 0, 0, 0, 10,
    10, 10, 42, 42, 0, 18, 52, 0, 10, 0, 0,
];

/// A FORMAT_DESCRIPTION body: binlog version 4, 50-byte server version, create timestamp,
/// header length 19, the post-header table, then the checksum algorithm byte (0 = off, so the
/// events of the fixtures carry no CRC) — and the FDE's own 4 checksum bytes, which MySQL
/// always writes after the algorithm byte.
pub fn fde_body(server_version: &str, post_header: &[u8]) -> Vec<u8> {
    let mut b = 4u16.to_le_bytes().to_vec();
    let mut v = [0u8; 50];
    v[..server_version.len()].copy_from_slice(server_version.as_bytes());
    b.extend_from_slice(&v);
    b.extend_from_slice(&0u32.to_le_bytes());
    b.push(19);
    b.extend_from_slice(post_header);
    b.push(0);
    b.extend_from_slice(&[0, 0, 0, 0]);
    b
}

/// The format description event mysql_common builds from [`fde_body`].
pub fn fde(server_version: &str, post_header: &[u8]) -> FormatDescriptionEvent<'static> {
    let raw = raw(
        types::FORMAT_DESCRIPTION,
        0,
        &fde_body(server_version, post_header),
    );
    let ev = Event::read(
        &FormatDescriptionEvent::new(BinlogVersion::Version4),
        &raw[..],
    )
    .expect("fixture FDE");
    let footer = ev.footer();
    ev.read_event::<FormatDescriptionEvent<'_>>()
        .expect("fixture FDE body")
        .into_owned()
        .with_footer(footer)
}

/// The FDE of a MySQL 8.0 server.
pub fn fde_8_0() -> FormatDescriptionEvent<'static> {
    fde("8.0.36-log", &POST_HEADER_8_0)
}

/// The FDE of a MySQL 5.7 server.
pub fn fde_5_7() -> FormatDescriptionEvent<'static> {
    fde("5.7.44-log", &POST_HEADER_5_7)
}

/// An event as mysql_common reads it under `fde`.
pub fn event(fde: &FormatDescriptionEvent<'_>, etype: u8, log_pos: u32, body: &[u8]) -> Event {
    Event::read(fde, &raw(etype, log_pos, body)[..]).expect("fixture event")
}

/// A QUERY body: thread id, exec time, db length, error code, status vars length (0), db,
/// NUL, statement.
pub fn query_body(db: &str, sql: &str) -> Vec<u8> {
    let mut b = 7u32.to_le_bytes().to_vec();
    b.extend_from_slice(&0u32.to_le_bytes());
    b.push(db.len() as u8);
    b.extend_from_slice(&0u16.to_le_bytes());
    b.extend_from_slice(&0u16.to_le_bytes());
    b.extend_from_slice(db.as_bytes());
    b.push(0);
    b.extend_from_slice(sql.as_bytes());
    b
}

/// An XID body: the 8-byte xid.
pub fn xid_body(xid: u64) -> Vec<u8> {
    xid.to_le_bytes().to_vec()
}

/// A GTID (or, with `gno` 0 and a zero UUID, ANONYMOUS_GTID) body as MySQL 5.7.4+ writes it:
/// flags, uuid, gno, logical-timestamp typecode 2, last_committed, sequence_number. MySQL
/// 8.0.1+ appends the commit timestamps (7 bytes, top bit = original follows), 8.0.2+ the
/// transaction length (packed integer) and 8.0.14+ the server version (4 bytes).
pub fn gtid_body(uuid: [u8; 16], gno: u64, v8: bool) -> Vec<u8> {
    let mut b = vec![1u8];
    b.extend_from_slice(&uuid);
    b.extend_from_slice(&gno.to_le_bytes());
    b.push(2);
    b.extend_from_slice(&3u64.to_le_bytes());
    b.extend_from_slice(&4u64.to_le_bytes());
    if v8 {
        b.extend_from_slice(&1_700_000_000_000_000u64.to_le_bytes()[..7]);
        b.push(200); // transaction length, 1-byte packed integer
        b.extend_from_slice(&80036u32.to_le_bytes());
    }
    b
}

/// A uuid and its `[start, end)` intervals.
pub type SidIntervals<'a> = ([u8; 16], &'a [(u64, u64)]);

/// A PREVIOUS_GTIDS body: the untagged `Gtid_set::encode` form — n_sids u64, then per uuid
/// the 16 bytes, n_intervals u64 and `[start, end)` u64 pairs.
pub fn previous_gtids_body(sets: &[SidIntervals<'_>]) -> Vec<u8> {
    let mut b = (sets.len() as u64).to_le_bytes().to_vec();
    for (uuid, ivs) in sets {
        b.extend_from_slice(uuid);
        b.extend_from_slice(&(ivs.len() as u64).to_le_bytes());
        for (s, e) in *ivs {
            b.extend_from_slice(&s.to_le_bytes());
            b.extend_from_slice(&e.to_le_bytes());
        }
    }
    b
}

/// A v2 rows event body (WRITE/UPDATE/DELETE_ROWS_EVENT, post-header 10): table id (6
/// bytes), flags (STMT_END_F), extra-data length (2 = none, counting itself) and the extra
/// data, column count, the columns-present bitmap(s), the rows.
pub fn rows_v2_body(table_id: u64, ncols: u8, images: u8, extra: &[u8], rows: &[u8]) -> Vec<u8> {
    let mut b = table_id.to_le_bytes()[..6].to_vec();
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&(2 + extra.len() as u16).to_le_bytes());
    b.extend_from_slice(extra);
    b.push(ncols);
    let bitmap = vec![0xffu8; usize::from(ncols).div_ceil(8)];
    for _ in 0..images {
        b.extend_from_slice(&bitmap);
    }
    b.extend_from_slice(rows);
    b
}

/// A TRANSACTION_PAYLOAD body: header fields as `(type, length, value)` length-encoded
/// integers — compression type (2), uncompressed size (3, zstd only), payload size (1) —
/// the end mark 0, then the payload: `inner` (concatenated raw inner events) compressed
/// with zstd, or as is when `zstd` is false (compression type 255 = none).
pub fn payload_body(inner: &[u8], zstd: bool) -> Vec<u8> {
    let payload = if zstd {
        let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).expect("zstd");
        enc.write_all(inner).expect("zstd");
        enc.finish().expect("zstd")
    } else {
        inner.to_vec()
    };
    payload_body_raw(if zstd { 0 } else { 255 }, inner.len() as u64, &payload)
}

/// A TRANSACTION_PAYLOAD body with the given header values and payload bytes.
pub fn payload_body_raw(ctype: u64, uncompressed: u64, payload: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    let field = |b: &mut Vec<u8>, t: u8, v: u64| {
        let mut val = Vec::new();
        put_lenenc(&mut val, v);
        b.push(t);
        b.push(val.len() as u8);
        b.extend(val);
    };
    field(&mut b, 2, ctype);
    if ctype == 0 {
        field(&mut b, 3, uncompressed);
    }
    field(&mut b, 1, payload.len() as u64);
    b.push(0);
    b.extend_from_slice(payload);
    b
}

fn put_lenenc(out: &mut Vec<u8>, v: u64) {
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

/// Test-side writer of MySQL's serialization-library varlen integers, written from the
/// format description in `libs/mysql/serialization/readme.md`.
pub fn varlen(out: &mut Vec<u8>, v: u64) {
    // 1 byte holds 7 bits, each further byte 7 more, up to 8 bytes (56 bits); larger values
    // take 9 bytes: 0xff and the raw value.
    let bits = 64 - v.leading_zeros() as usize;
    let n = if bits > 56 {
        9
    } else {
        bits.max(1).div_ceil(7)
    };
    if n == 9 {
        out.push(0xff);
        out.extend(v.to_le_bytes());
        return;
    }
    let marker = (1u64 << (n - 1)) - 1;
    let enc = (v << n) | marker;
    out.extend(&enc.to_le_bytes()[..n]);
}

pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Builds a GTID_TAGGED_LOG_EVENT body the way MySQL's `Gtid_event` serializer lays it out
/// (field ids 0..=11, optional fields left out when equal to their defaults).
pub fn tagged_gtid_body(uuid: [u8; 16], tag: &str, gno: i64, extra: &[u8]) -> Vec<u8> {
    let mut fields = Vec::new();
    let mut field = |id: u64, data: &[u8]| {
        varlen(&mut fields, id);
        fields.extend_from_slice(data);
    };
    let v = |x: u64| {
        let mut b = Vec::new();
        varlen(&mut b, x);
        b
    };
    field(0, &v(0));
    let mut u = Vec::new();
    for b in uuid {
        varlen(&mut u, u64::from(b));
    }
    field(1, &u);
    field(2, &v(zigzag(gno)));
    let mut t = v(tag.len() as u64);
    t.extend(tag.as_bytes());
    field(3, &t);
    field(4, &v(zigzag(7)));
    field(5, &v(zigzag(8)));
    field(6, &v(1_722_000_000_123_456));
    field(8, &v(312));
    field(9, &v(90_700));
    fields.extend_from_slice(extra);
    // last non-ignorable field id + 1: every Gtid_event field is non-ignorable.
    let lnif = 10u64;
    // The size counts the version byte, itself and the lnif byte.
    let mut size = 1 + 1 + 1 + fields.len() as u64;
    if size >= 128 {
        size += 1;
    }
    let mut body = v(1);
    varlen(&mut body, size);
    varlen(&mut body, lnif);
    body.extend(fields);
    body
}
