//! The rows decoder: a TABLE_MAP (the schema and the decoder's plan) and a rows event decoded
//! with it, as the assembler decodes every rows event.
//!
//! Input: byte 0 picks the mode. Structured (even): the target writes a TABLE_MAP with full
//! metadata from column specs in the input (type, metadata bytes, nullability, signedness,
//! ENUM/SET members, primary key), then a rows event of a chosen type with the rest of the input
//! as its rows data. Raw (odd): a 2-byte length, a TABLE_MAP body of that length, a rows event
//! type and post-header length, the rows event body.
//!
//! Properties: no panic; allocation bounded; every decoded image has exactly one value per
//! column; DECIMAL text is a decimal number; JSON text is valid JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice::fuzz_entry::rows_event;
use sluice::schema::ServerFlavor;
use sluice::value::Value;

/// (type code, metadata bytes) of the column types the decoder supports.
const TYPES: [(u8, usize); 22] = [
    (1, 0),   // TINY
    (2, 0),   // SHORT
    (9, 0),   // INT24
    (3, 0),   // LONG
    (8, 0),   // LONGLONG
    (4, 1),   // FLOAT
    (5, 1),   // DOUBLE
    (246, 2), // NEWDECIMAL (precision, scale)
    (10, 0),  // DATE
    (19, 1),  // TIME2
    (18, 1),  // DATETIME2
    (17, 1),  // TIMESTAMP2
    (13, 0),  // YEAR
    (15, 2),  // VARCHAR
    (16, 2),  // BIT
    (252, 1), // BLOB
    (254, 2), // STRING / ENUM / SET (real type, length)
    (245, 1), // JSON
    (255, 1), // GEOMETRY
    (7, 0),   // TIMESTAMP
    (12, 0),  // DATETIME
    (11, 0),  // TIME
];

const ROWS_TYPES: [u8; 7] = [23, 24, 25, 30, 31, 32, 39];

fn lenenc(out: &mut Vec<u8>, v: usize) {
    if v < 251 {
        out.push(v as u8);
    } else {
        out.push(252);
        out.extend_from_slice(&(v as u16).to_le_bytes());
    }
}

fn tlv(out: &mut Vec<u8>, t: u8, v: &[u8]) {
    out.push(t);
    lenenc(out, v.len());
    out.extend_from_slice(v);
}

struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
}

/// A TABLE_MAP body and a rows event body from the structured input.
fn structured(inp: &mut Input<'_>) -> (Vec<u8>, u8, Vec<u8>, usize) {
    let n = usize::from(inp.byte() % 8) + 1;
    let mut types = Vec::new();
    let mut meta = Vec::new();
    let mut nulls = vec![0u8; n.div_ceil(8)];
    let mut signed = Vec::new();
    let mut members: [Vec<u8>; 2] = [Vec::new(), Vec::new()];
    let mut names = Vec::new();
    for i in 0..n {
        let spec = inp.byte();
        let (code, mlen) = TYPES[usize::from(spec) % TYPES.len()];
        types.push(code);
        let m: Vec<u8> = (0..mlen).map(|_| inp.byte()).collect();
        if code == 254 && matches!(m.first(), Some(247 | 248)) {
            let set = usize::from(m[0] == 248);
            let k = usize::from(inp.byte() % 4) + 1;
            lenenc(&mut members[set], k);
            for j in 0..k {
                let s = format!("m{j}");
                lenenc(&mut members[set], s.len());
                members[set].extend_from_slice(s.as_bytes());
            }
        }
        meta.extend_from_slice(&m);
        if spec & 0x80 != 0 {
            nulls[i / 8] |= 1 << (i % 8);
        }
        if matches!(code, 1 | 2 | 9 | 3 | 8 | 4 | 5 | 246 | 13) {
            signed.push(spec & 0x40 != 0);
        }
        let name = format!("c{i}");
        lenenc(&mut names, name.len());
        names.extend_from_slice(name.as_bytes());
    }
    let mut tm = Vec::new();
    tm.extend_from_slice(&42u64.to_le_bytes()[..6]);
    tm.extend_from_slice(&[1, 0]);
    tm.push(2);
    tm.extend_from_slice(b"db\0");
    tm.push(1);
    tm.extend_from_slice(b"t\0");
    lenenc(&mut tm, n);
    tm.extend_from_slice(&types);
    lenenc(&mut tm, meta.len());
    tm.extend_from_slice(&meta);
    tm.extend_from_slice(&nulls);
    if !signed.is_empty() {
        let mut v = vec![0u8; signed.len().div_ceil(8)];
        for (k, &u) in signed.iter().enumerate() {
            if u {
                v[k / 8] |= 0x80 >> (k % 8);
            }
        }
        tlv(&mut tm, 1, &v);
    }
    let charset = [255u8, 63, 33, 8][usize::from(inp.byte() % 4)];
    tlv(&mut tm, 2, &[charset]);
    tlv(&mut tm, 4, &names);
    if !members[1].is_empty() {
        tlv(&mut tm, 5, &members[1]);
    }
    if !members[0].is_empty() {
        tlv(&mut tm, 6, &members[0]);
    }
    tlv(&mut tm, 8, &[0]);

    let etype = ROWS_TYPES[usize::from(inp.byte()) % ROWS_TYPES.len()];
    let flags = inp.byte();
    let mut body = Vec::new();
    body.extend_from_slice(&42u64.to_le_bytes()[..6]);
    body.extend_from_slice(&[flags, 0]);
    if etype >= 30 {
        body.extend_from_slice(&2u16.to_le_bytes());
    }
    lenenc(&mut body, n);
    let images = if matches!(etype, 24 | 31 | 39) { 2 } else { 1 };
    for _ in 0..images {
        // Columns present: mostly all, sometimes what the input says.
        let b = inp.byte();
        for k in 0..n.div_ceil(8) {
            body.push(if b & 1 == 0 {
                0xff
            } else {
                inp.byte() | (k as u8)
            });
        }
    }
    if etype == 39 {
        // The shared-image options (PARTIAL_JSON), a varlen field after the before image.
        // Left to the rows data.
    }
    body.extend_from_slice(inp.0);
    (tm, etype, body, n)
}

fuzz_target!(|data: &[u8]| {
    let mut inp = Input(data);
    let mode = inp.byte();
    let flavor = match (mode >> 1) % 3 {
        0 => ServerFlavor::Auto,
        1 => ServerFlavor::MySql,
        _ => ServerFlavor::MariaDb,
    };
    let result = if mode & 1 == 0 {
        let (tm, etype, body, n) = structured(&mut inp);
        let r = rows_event(&tm, flavor, etype, 10, &body);
        if let Ok((cols, _)) = &r {
            assert_eq!(*cols, n);
        }
        r
    } else {
        let len = usize::from(u16::from_le_bytes([inp.byte(), inp.byte()]));
        let tm = &inp.0[..len.min(inp.0.len())];
        inp.0 = &inp.0[tm.len()..];
        let etype = inp.byte();
        let phl = [6, 8, 10, inp.byte()][usize::from(mode >> 6)];
        rows_event(tm, flavor, etype, phl, inp.0)
    };
    let Ok((cols, images)) = result else { return };
    for img in &images {
        for values in [&img.before, &img.after].into_iter().flatten() {
            assert_eq!(values.len(), cols, "one value per column");
            for v in values {
                match v {
                    Value::Decimal(d) => {
                        let digits = d.strip_prefix('-').unwrap_or(d);
                        assert!(
                            !digits.is_empty()
                                && digits.bytes().all(|c| c.is_ascii_digit() || c == b'.')
                                && digits.bytes().filter(|&c| c == b'.').count() <= 1,
                            "decimal text {d:?}"
                        );
                    }
                    Value::Json(j) => check_json(j),
                    _ => {}
                }
            }
        }
    }
});

fn check_json(j: &str) {
    if let Err(e) = serde_json::from_str::<serde_json::Value>(j) {
        assert!(
            e.to_string().contains("recursion limit"),
            "invalid JSON text {j:?}: {e}"
        );
    }
}
