use mysql_common::binlog::events::{GtidEvent, QueryEvent, TableMapEvent};
use proptest::prelude::*;

use super::*;
use crate::binlog::fixtures::{self as fx, POST_HEADER_8_0};

/// `raw` (an event without checksum) with its size grown by 4 and its CRC32 appended.
fn with_crc(mut raw: Vec<u8>) -> Vec<u8> {
    let size = raw.len() as u32 + 4;
    raw[9..13].copy_from_slice(&size.to_le_bytes());
    let c = crc32(&[&raw]);
    raw.extend_from_slice(&c.to_le_bytes());
    raw
}

/// A format description of `version` announcing `alg`, checksummed as the servers do (the
/// in-use flag set after the checksum was computed without it).
fn fde(version: &str, alg: u8, in_use: bool) -> Vec<u8> {
    let mut body = fx::fde_body(version, &POST_HEADER_8_0);
    body.truncate(body.len() - 4);
    *body.last_mut().unwrap() = alg;
    let mut ev = with_crc(fx::raw(types::FORMAT_DESCRIPTION, 120, &body));
    if in_use {
        ev[17] |= BINLOG_IN_USE;
    }
    ev
}

fn fake_rotate(file: &str) -> Vec<u8> {
    let mut body = 4u64.to_le_bytes().to_vec();
    body.extend_from_slice(file.as_bytes());
    let mut raw = fx::raw(types::ROTATE, 0, &body);
    raw[17] = 0x20; // LOG_EVENT_ARTIFICIAL_F
    with_crc(raw)
}

/// A checksummed stream: fake ROTATE, format description (CRC32, in use), QUERY, XID.
fn stream() -> Vec<Vec<u8>> {
    vec![
        fake_rotate("binlog.000007"),
        fde("8.0.36-log", ALG_CRC32, true),
        with_crc(fx::raw(
            types::QUERY,
            300,
            &fx::query_body("db", "INSERT INTO t VALUES (1, 'some value')"),
        )),
        with_crc(fx::raw(types::XID, 331, &fx::xid_body(77))),
    ]
}

/// A decoder that has read the stream's first `n` events.
fn after(n: usize) -> EventDecoder {
    let mut d = EventDecoder::new();
    for ev in &stream()[..n] {
        d.decode(ev).expect("valid prefix");
    }
    d
}

#[test]
fn a_checksummed_stream_decodes_without_its_checksums() {
    let mut d = EventDecoder::new();
    let evs: Vec<Event> = stream()
        .iter()
        .map(|e| d.decode(e).expect("valid event"))
        .collect();
    assert_eq!(d.checksum(), Checksum::Crc32);
    let q = &evs[2];
    assert_eq!(q.header().event_type_raw(), types::QUERY);
    let body = fx::query_body("db", "INSERT INTO t VALUES (1, 'some value')");
    assert_eq!(q.data(), &body[..], "the CRC is not part of the data");
    assert_eq!(evs[3].data(), 77u64.to_le_bytes());
}

#[test]
fn an_event_before_the_format_description_must_carry_the_announced_crc32() {
    // sluice announces CRC32: a fake ROTATE without one is refused.
    let mut body = 4u64.to_le_bytes().to_vec();
    body.extend_from_slice(b"binlog.000007");
    let plain = fx::raw(types::ROTATE, 0, &body);
    let e = EventDecoder::new().decode(&plain).unwrap_err();
    assert!(e.detail.contains("CRC32 mismatch"), "{e}");
}

#[test]
fn a_binlog_without_checksums_has_only_its_lengths_checked() {
    let mut d = EventDecoder::new();
    d.decode(&fake_rotate("binlog.000001")).unwrap();
    d.decode(&fde("10.11.9-MariaDB-log", ALG_OFF, false))
        .unwrap();
    assert_eq!(d.checksum(), Checksum::Off);
    let q = fx::raw(types::XID, 40, &fx::xid_body(5));
    assert_eq!(d.decode(&q).unwrap().data(), 5u64.to_le_bytes());
    // A later file with CRC32 turns verification back on.
    d.decode(&fde("10.11.9-MariaDB-log", ALG_CRC32, false))
        .unwrap();
    assert_eq!(d.checksum(), Checksum::Crc32);
    assert!(d.decode(&q).is_err());
}

#[test]
fn a_format_description_algorithm_byte_flipped_to_none_is_caught() {
    let mut ev = fde("8.0.36-log", ALG_CRC32, false);
    let alg_at = ev.len() - 5;
    ev[alg_at] = ALG_OFF;
    let e = EventDecoder::new().decode(&ev).unwrap_err();
    assert!(e.detail.contains("algorithm byte"), "{e}");
    // Unknown algorithms, other binlog versions and header lengths are refused.
    for (at, v) in [(alg_at, 2u8), (alg_at, 0xFF), (19, 3), (19 + 56, 13)] {
        let mut ev = fde("8.0.36-log", ALG_CRC32, false);
        ev[at] = v;
        assert!(EventDecoder::new().decode(&ev).is_err(), "byte {at} = {v}");
    }
}

#[test]
fn truncated_events_are_refused() {
    for (i, ev) in stream().iter().enumerate() {
        for cut in 0..ev.len() {
            let mut d = after(i);
            let e = d
                .decode(&ev[..cut])
                .expect_err("a truncated event is refused");
            assert!(!e.detail.is_empty());
        }
    }
}

#[test]
fn wrong_length_claims_are_refused() {
    for (i, ev) in stream().iter().enumerate() {
        for claim in [
            0u32,
            1,
            18,
            19,
            ev.len() as u32 - 1,
            ev.len() as u32 + 1,
            1 << 30,
            u32::MAX,
        ] {
            let mut bad = ev.clone();
            bad[9..13].copy_from_slice(&claim.to_le_bytes());
            let e = after(i).decode(&bad).expect_err("a wrong size is refused");
            assert!(
                e.detail.contains("claims") || e.detail.contains("CRC32"),
                "{claim}: {e}"
            );
        }
    }
    // Shorter than a header, and a header alone under CRC32.
    assert!(EventDecoder::new().decode(&[]).is_err());
    assert!(EventDecoder::new().decode(&[0; 18]).is_err());
    let bare = fx::header(types::XID, 19, 50);
    let e = after(2).decode(&bare).unwrap_err();
    assert!(e.detail.contains("too short"), "{e}");
    // A format description too short for its fixed part.
    let short = with_crc(fx::raw(types::FORMAT_DESCRIPTION, 0, &[4, 0, 1, 2, 3]));
    assert!(EventDecoder::new().decode(&short).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any byte of any event of a checksummed stream, changed in any way, makes the event an
    /// error: never a panic, never an event with a wrong value. (The format description's
    /// in-use flag bit is outside its checksum by definition and is not used.)
    #[test]
    fn any_damaged_byte_is_an_error(which in 0usize..4, at in any::<prop::sample::Index>(), xor in 1u8..=255) {
        let ev = &stream()[which];
        let at = at.index(ev.len());
        let mut bad = ev.clone();
        bad[at] ^= xor;
        let in_use_bit = which == 1 && at == 17 && xor == BINLOG_IN_USE;
        if !in_use_bit {
            let r = after(which).decode(&bad);
            prop_assert!(r.is_err(), "byte {} ^ {:#04x} of event {} was accepted", at, xor, which);
        }
    }

    /// Arbitrary bytes, with a consistent size, under every checksum setting: an event or an
    /// error, never a panic (the length checks run before the client library's decoder).
    #[test]
    fn arbitrary_events_never_panic(
        etype in prop::sample::select(vec![
            types::QUERY, types::ROTATE, types::FORMAT_DESCRIPTION, types::XID,
            types::TABLE_MAP, types::WRITE_ROWS_V2, types::GTID, types::PREVIOUS_GTIDS,
            types::TRANSACTION_PAYLOAD, types::HEARTBEAT, 0, 200,
        ]),
        body in prop::collection::vec(any::<u8>(), 0..200),
        checksums_on in any::<bool>(),
    ) {
        let mut d = EventDecoder::new();
        if !checksums_on {
            d.decode(&fde("8.0.36-log", ALG_OFF, false)).unwrap();
        }
        let ev = fx::raw(etype, 500, &body);
        // What the stream then parses with the client library (rows and the other events
        // are parsed by sluice's own bounds-checked code).
        if let Ok(e) = d.decode(&ev) {
            match e.header().event_type_raw() {
                types::QUERY => drop(e.read_event::<QueryEvent<'_>>()),
                types::GTID => drop(e.read_event::<GtidEvent>()),
                types::TABLE_MAP => drop(e.read_event::<TableMapEvent<'_>>()),
                _ => {}
            }
        }
        let _ = d.decode(&with_crc(ev));
    }
}
