//! The type matrix: every column type family goes through insert, update and delete (plus a row
//! of NULLs) on the real server, and every value sluice writes is compared with the value read
//! back from the server with a plain `SELECT`.
//!
//! The oracle is independent of sluice's decoders: the `SELECT` computes each value's canonical
//! form on the server (days since the epoch with `DATEDIFF`, microseconds with `TIMESTAMPDIFF`,
//! `HEX` of bytes, `ST_AsWKB` of geometries, ...), and the test turns what it consumed from Kafka
//! into the same canonical form with the documented rendering of each format.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine as _;
use mysql_async::prelude::*;
use serde_json::{json, Value as J};
use support::matrix::*;
use support::*;

/// The server-side expression giving column `c`'s canonical form as text (NULL stays NULL).
fn oracle(c: &Col) -> String {
    let n = c.name;
    match c.fam {
        Fam::Int | Fam::Decimal | Fam::Str | Fam::Enum | Fam::Set => format!("CAST({n} AS CHAR)"),
        Fam::Float | Fam::Double => n.to_string(),
        Fam::Bit1 | Fam::Bits => format!("CAST({n} + 0 AS CHAR)"),
        Fam::Bin | Fam::FloatVec => format!("HEX({n})"),
        Fam::Json => format!("CAST({n} AS CHAR)"),
        Fam::Date => format!("CAST(DATEDIFF({n}, '1970-01-01') AS CHAR)"),
        Fam::Time => format!(
            "CAST(IF({n} < TIME'00:00:00', -1, 1) * ((HOUR({n}) * 3600 + MINUTE({n}) * 60 + \
             SECOND({n})) * 1000000 + MICROSECOND({n})) AS CHAR)"
        ),
        Fam::DateTime(_) | Fam::Timestamp(_) => format!(
            "CAST(IF(MONTH({n}) = 0, NULL, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', {n})) AS CHAR)"
        ),
        Fam::Year => format!("CAST({n} + 0 AS CHAR)"),
        Fam::Geom => format!("CONCAT(ST_SRID({n}), ':', HEX(ST_AsWKB({n})))"),
        // x and y as the exact doubles' bits are compared: printed with 17 digits.
        Fam::Point => format!(
            "CONCAT(ST_SRID({n}), ':', HEX(ST_AsWKB({n})), ':', ST_X({n}), ':', ST_Y({n}))"
        ),
        Fam::Inet => format!("CAST({n} AS CHAR)"),
        Fam::Uuid => format!("CAST({n} AS CHAR)"),
    }
}

/// Canonical JSON of a `SELECT` result cell.
fn canon_select(fam: Fam, v: &mysql_async::Value) -> J {
    use mysql_async::Value as V;
    let text = |v: &V| -> Option<String> {
        match v {
            V::NULL => None,
            V::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
            V::Int(i) => Some(i.to_string()),
            V::UInt(u) => Some(u.to_string()),
            other => Some(format!("{other:?}")),
        }
    };
    if *v == V::NULL {
        return J::Null;
    }
    match fam {
        Fam::Float => match v {
            V::Float(f) => json!(f.to_bits()),
            V::Double(d) => json!((*d as f32).to_bits()),
            V::Bytes(b) => json!(String::from_utf8_lossy(b)
                .parse::<f32>()
                .expect("float")
                .to_bits()),
            other => panic!("FLOAT as {other:?}"),
        },
        Fam::Double => match v {
            V::Double(d) => json!(d.to_bits()),
            V::Bytes(b) => json!(String::from_utf8_lossy(b)
                .parse::<f64>()
                .expect("double")
                .to_bits()),
            other => panic!("DOUBLE as {other:?}"),
        },
        Fam::Bit1 => json!(text(v).as_deref() == Some("1")),
        Fam::Json => serde_json::from_str(&text(v).unwrap_or_default()).expect("JSON from SELECT"),
        Fam::Set => {
            let t = text(v).unwrap_or_default();
            J::Array(
                t.split(',')
                    .filter(|s| !s.is_empty())
                    .map(|s| json!(s))
                    .collect(),
            )
        }
        Fam::Geom => {
            let t = text(v).unwrap_or_default();
            let (srid, wkb) = t.split_once(':').expect("srid:wkb");
            json!({"srid": srid.parse::<i64>().expect("srid"), "wkb": wkb.to_ascii_uppercase()})
        }
        Fam::Point => {
            let t = text(v).unwrap_or_default();
            let parts: Vec<&str> = t.split(':').collect();
            let [srid, wkb, x, y] = parts[..] else {
                panic!("srid:wkb:x:y {t}")
            };
            point_canon(
                srid.parse().expect("srid"),
                wkb.to_ascii_uppercase(),
                x.parse().expect("x"),
                y.parse().expect("y"),
            )
        }
        Fam::Int
        | Fam::Decimal
        | Fam::Str
        | Fam::Enum
        | Fam::Bits
        | Fam::Bin
        | Fam::FloatVec
        | Fam::Inet
        | Fam::Uuid
        | Fam::Date
        | Fam::Time
        | Fam::DateTime(_)
        | Fam::Timestamp(_)
        | Fam::Year => match text(v) {
            Some(t) => json!(t),
            None => J::Null,
        },
    }
}

/// A JSON array of numbers as the hex of its little-endian `f32`s (a VECTOR's stored bytes).
fn f32_hex(v: &J) -> String {
    let items = v
        .as_array()
        .unwrap_or_else(|| panic!("a VECTOR array: {v}"));
    hex(&items
        .iter()
        .flat_map(|x| (x.as_f64().expect("a number") as f32).to_le_bytes())
        .collect::<Vec<u8>>())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

fn b64(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .unwrap_or_else(|e| panic!("base64 {s:?}: {e}"))
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Microseconds since the epoch of `YYYY-MM-DDTHH:MM:SS[.f]Z`.
fn iso_micros(s: &str) -> i64 {
    let s = s
        .strip_suffix('Z')
        .unwrap_or_else(|| panic!("not UTC: {s}"));
    let (date, time) = s.split_once('T').expect("T");
    let dp: Vec<i64> = date.split('-').map(|x| x.parse().expect("date")).collect();
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let tp: Vec<i64> = hms.split(':').map(|x| x.parse().expect("time")).collect();
    let mut micros = 0i64;
    if !frac.is_empty() {
        let padded = format!("{frac:0<6}");
        micros = padded[..6].parse().expect("fraction");
    }
    (days_from_civil(dp[0], dp[1], dp[2]) * 86_400 + tp[0] * 3600 + tp[1] * 60 + tp[2]) * 1_000_000
        + micros
}

/// Canonical form of a value in sluice's JSON format (README's JSON type table).
pub fn canon_json(fam: Fam, v: &J) -> J {
    if v.is_null() {
        return J::Null;
    }
    let num = |v: &J| -> String {
        match v {
            J::Number(n) => n.to_string(),
            other => panic!("expected a number, got {other}"),
        }
    };
    match fam {
        Fam::Int | Fam::Year => json!(num(v)),
        Fam::Float => json!((v.as_f64().expect("float") as f32).to_bits()),
        Fam::Double => json!(v.as_f64().expect("double").to_bits()),
        Fam::Decimal | Fam::Str | Fam::Enum | Fam::Uuid | Fam::Inet => v.clone(),
        Fam::Bit1 => v.clone(),
        Fam::Bits => {
            // Little-endian bytes (as Debezium).
            let bytes = b64(v.as_str().expect("bits base64"));
            let mut n: u64 = 0;
            for (i, b) in bytes.iter().enumerate() {
                n |= u64::from(*b) << (8 * i);
            }
            json!(n.to_string())
        }
        Fam::Bin => json!(hex(&b64(v.as_str().expect("base64")))),
        Fam::FloatVec => json!(f32_hex(v)),
        Fam::Set => J::Array(
            v.as_str()
                .expect("set string")
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|s| json!(s))
                .collect(),
        ),
        Fam::Json => {
            serde_json::from_str(v.as_str().expect("json text")).expect("JSON text parses")
        }
        Fam::Date | Fam::Time => json!(num(v)),
        Fam::DateTime(fsp) => {
            let n: i64 = num(v).parse().expect("datetime");
            json!(if fsp <= 3 { n * 1000 } else { n }.to_string())
        }
        Fam::Timestamp(_) => json!(iso_micros(v.as_str().expect("timestamp string")).to_string()),
        Fam::Geom => {
            let wkb = b64(v["wkb"].as_str().expect("wkb"));
            json!({"srid": v["srid"].as_i64().unwrap_or(0), "wkb": hex(&wkb)})
        }
        Fam::Point => {
            // (Debezium's field order, x, y, wkb, srid, is checked by the encoder's unit test:
            // serde_json's map does not keep it.)
            assert_eq!(v.as_object().expect("point struct").len(), 4, "{v}");
            point_canon(
                v["srid"].as_i64().unwrap_or(0),
                hex(&b64(v["wkb"].as_str().expect("wkb"))),
                v["x"].as_f64().expect("x"),
                v["y"].as_f64().expect("y"),
            )
        }
    }
}

/// Canonical form of a POINT: srid (0 for none), WKB hex, and the coordinates' bits.
fn point_canon(srid: i64, wkb: String, x: f64, y: f64) -> J {
    json!({"srid": srid, "wkb": wkb, "x": x.to_bits(), "y": y.to_bits()})
}

/// The canonical values of one table row, by column name (id included).
pub type Row = BTreeMap<String, J>;

/// What the source holds at each step of a table's script.
pub struct Expected {
    /// Row A (after the insert).
    pub a: Row,
    /// Row B (after the update).
    pub b: Row,
    /// The row of NULLs.
    pub n: Row,
}

async fn select_row(c: &mut mysql_async::Conn, db: &str, t: &str, cols: &[Col], id: i32) -> Row {
    let exprs: Vec<String> = cols.iter().map(oracle).collect();
    let row: mysql_async::Row = c
        .query_first(format!(
            "SELECT {} FROM {db}.{t} WHERE id = {id}",
            exprs.join(", ")
        ))
        .await
        .expect("select")
        .expect("row exists");
    let mut out = Row::new();
    out.insert("id".into(), json!(id.to_string()));
    for (i, col) in cols.iter().enumerate() {
        let v: mysql_async::Value = row.get(i).expect("cell");
        out.insert(col.name.into(), canon_select(col.fam, &v));
    }
    out
}

/// Runs insert A, update to B, delete, insert of a NULL row on every table, returning what
/// the server held at each step.
pub async fn run_script(
    c: &mut mysql_async::Conn,
    db: &str,
    tables: &[(&str, Vec<Col>)],
) -> BTreeMap<String, Expected> {
    exec(c, &["SET time_zone = '+00:00'", "SET sql_mode = ''"]).await;
    let mut out = BTreeMap::new();
    for (t, cols) in tables {
        let names: Vec<&str> = cols.iter().map(|c| c.name).collect();
        let a: Vec<&str> = cols.iter().map(|c| c.a).collect();
        exec(
            c,
            &[&format!(
                "INSERT INTO {db}.{t} (id, {}) VALUES (1, {})",
                names.join(", "),
                a.join(", ")
            )],
        )
        .await;
        let ra = select_row(c, db, t, cols, 1).await;
        let sets: Vec<String> = cols
            .iter()
            .map(|c| format!("{} = {}", c.name, c.b))
            .collect();
        exec(
            c,
            &[&format!(
                "UPDATE {db}.{t} SET {} WHERE id = 1",
                sets.join(", ")
            )],
        )
        .await;
        let rb = select_row(c, db, t, cols, 1).await;
        exec(
            c,
            &[
                &format!("DELETE FROM {db}.{t} WHERE id = 1"),
                &format!("INSERT INTO {db}.{t} (id) VALUES (2)"),
            ],
        )
        .await;
        let rn = select_row(c, db, t, cols, 2).await;
        out.insert(
            t.to_string(),
            Expected {
                a: ra,
                b: rb,
                n: rn,
            },
        );
    }
    out
}

/// One consumed change in canonical form: op, before, after (None for a tombstone).
#[derive(Debug, Clone, PartialEq)]
pub struct Canon {
    pub key: Option<Row>,
    pub op: Option<String>,
    pub before: Option<Row>,
    pub after: Option<Row>,
}

/// Checks a table's consumed changes against what the server held.
pub fn check_table(flavor: &str, format: &str, table: &str, exp: &Expected, got: &[Canon]) {
    let key = |id: &str| {
        let mut k = Row::new();
        k.insert("id".into(), json!(id));
        Some(k)
    };
    let want = vec![
        Canon {
            key: key("1"),
            op: Some("c".into()),
            before: None,
            after: Some(exp.a.clone()),
        },
        Canon {
            key: key("1"),
            op: Some("u".into()),
            before: Some(exp.a.clone()),
            after: Some(exp.b.clone()),
        },
        Canon {
            key: key("1"),
            op: Some("d".into()),
            before: Some(exp.b.clone()),
            after: None,
        },
        Canon {
            key: key("1"),
            op: None,
            before: None,
            after: None,
        },
        Canon {
            key: key("2"),
            op: Some("c".into()),
            before: None,
            after: Some(exp.n.clone()),
        },
    ];
    assert_eq!(
        got.len(),
        want.len(),
        "[{flavor}/{format}] {table}: record count: {got:#?}"
    );
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        for (part, gr, wr) in [
            ("key", &g.key, &w.key),
            ("before", &g.before, &w.before),
            ("after", &g.after, &w.after),
        ] {
            match (gr, wr) {
                (Some(gr), Some(wr)) => {
                    for (name, wv) in wr {
                        assert_eq!(
                            gr.get(name),
                            Some(wv),
                            "[{flavor}/{format}] {table} record {i} {part}.{name}: sluice wrote \
                             {:?}, the server holds {wv}",
                            gr.get(name)
                        );
                    }
                    assert_eq!(
                        gr.len(),
                        wr.len(),
                        "[{flavor}/{format}] {table} record {i} {part} columns"
                    );
                }
                (None, None) => {}
                _ => {
                    panic!("[{flavor}/{format}] {table} record {i} {part}: got {gr:?}, want {wr:?}")
                }
            }
        }
        assert_eq!(g.op, w.op, "[{flavor}/{format}] {table} record {i} op");
    }
}

fn canon_json_row(cols: &[Col], v: &J) -> Option<Row> {
    if v.is_null() {
        return None;
    }
    let obj = v.as_object().expect("row object");
    let mut out = Row::new();
    for (name, val) in obj {
        let fam = if name == "id" {
            Fam::Int
        } else {
            cols.iter()
                .find(|c| c.name == name)
                .map(|c| c.fam)
                .unwrap_or_else(|| panic!("unknown column {name}"))
        };
        out.insert(name.clone(), canon_json(fam, val));
    }
    Some(out)
}

/// Creates the matrix tables, starts the pipeline, runs the script and reads every record
/// written (undecoded); returns the tables, what the server held, and the records.
async fn run_matrix(
    p: &Pipeline,
) -> (
    Vec<(&'static str, Vec<Col>)>,
    BTreeMap<String, Expected>,
    Vec<RawRec>,
) {
    let tables = matrix(p.flavor);
    let mut c = root(p.flavor.port).await;
    exec(&mut c, &[&format!("CREATE DATABASE {}", p.db)]).await;
    create_tables(&mut c, &p.db, &tables).await;
    let mut child = p.spawn();
    p.wait_started(Duration::from_secs(60));
    let expected = run_script(&mut c, &p.db, &tables).await;
    let topics: Vec<String> = tables.iter().map(|(t, _)| p.topic(t)).collect();
    let recs = consume_raw(
        &topics,
        "read_committed",
        5 * tables.len(),
        Duration::from_secs(2),
        Duration::from_secs(60),
    );
    terminate(&mut child);
    (tables, expected, recs)
}

async fn every_type_round_trips_through_json(flavor: Flavor) {
    let p = Pipeline::new(flavor, "types_json", "");
    let (tables, expected, raw) = run_matrix(&p).await;
    let recs: Vec<Rec> = raw.iter().map(RawRec::json).collect();
    let by = by_topic(&recs);
    for (t, cols) in &tables {
        let got: Vec<Canon> = by
            .get(&p.topic(t))
            .map(|v| v.as_slice())
            .unwrap_or_default()
            .iter()
            .map(|r| Canon {
                key: r.key.as_ref().and_then(|k| canon_json_row(cols, k)),
                op: r
                    .value
                    .as_ref()
                    .map(|v| v["op"].as_str().expect("op").to_string()),
                before: r
                    .value
                    .as_ref()
                    .and_then(|v| canon_json_row(cols, &v["before"])),
                after: r
                    .value
                    .as_ref()
                    .and_then(|v| canon_json_row(cols, &v["after"])),
            })
            .collect();
        check_table(flavor.name, "json", t, &expected[*t], &got);
    }
}

/// Decimal scale of a column type (`DECIMAL(p,s)`; 0 for integers).
fn scale_of(ty: &str) -> usize {
    ty.split_once(',')
        .and_then(|(_, rest)| rest.trim_end_matches(')').trim().parse().ok())
        .unwrap_or(0)
}

/// An unscaled integer with `scale` digits after the point, as exact text.
fn scaled(unscaled: &num_bigint::BigInt, scale: usize) -> String {
    let neg = unscaled.sign() == num_bigint::Sign::Minus;
    let digits = unscaled.magnitude().to_string();
    let digits = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = digits.split_at(digits.len() - scale);
    let sign = if neg { "-" } else { "" };
    if scale == 0 {
        format!("{sign}{int}")
    } else {
        format!("{sign}{int}.{frac}")
    }
}

fn le_u64(bytes: &[u8]) -> String {
    let mut n: u64 = 0;
    for (i, b) in bytes.iter().enumerate() {
        n |= u64::from(*b) << (8 * i);
    }
    n.to_string()
}

/// Canonical form of a value decoded by apache-avro's reader (with the registry's schema).
fn canon_avro(col: &Col, v: &apache_avro::types::Value) -> J {
    use apache_avro::types::Value as A;
    let v = match v {
        A::Union(_, inner) => inner.as_ref(),
        other => other,
    };
    match (col.fam, v) {
        (_, A::Null) => J::Null,
        (Fam::Int | Fam::Year, A::Int(i)) => json!(i.to_string()),
        (Fam::Int, A::Long(i)) => json!(i.to_string()),
        (Fam::Int | Fam::Decimal, A::Decimal(d)) => {
            json!(scaled(
                &num_bigint::BigInt::from(d.clone()),
                scale_of(col.ty)
            ))
        }
        (Fam::Float, A::Float(f)) => json!(f.to_bits()),
        (Fam::Double, A::Double(d)) => json!(d.to_bits()),
        (Fam::Bit1, A::Boolean(b)) => json!(b),
        (Fam::Bits, A::Bytes(b)) => json!(le_u64(b)),
        (Fam::Str | Fam::Enum | Fam::Uuid | Fam::Inet, A::String(s)) => json!(s),
        (Fam::Enum, A::Enum(_, s)) => json!(s),
        (Fam::Bin, A::Bytes(b)) => json!(hex(b)),
        (Fam::FloatVec, A::Array(items)) => json!(hex(&items
            .iter()
            .flat_map(|i| match i {
                A::Float(f) => f.to_le_bytes(),
                other => panic!("a VECTOR element {other:?}"),
            })
            .collect::<Vec<u8>>())),
        (Fam::Set, A::Array(items)) => J::Array(
            items
                .iter()
                .map(|i| match i {
                    A::String(s) => json!(s),
                    other => panic!("SET member {other:?}"),
                })
                .collect(),
        ),
        (Fam::Json, A::String(s)) => serde_json::from_str(s).expect("JSON text parses"),
        (Fam::Date, A::Date(d)) => json!(d.to_string()),
        (Fam::Time, A::Long(us)) => json!(us.to_string()),
        (Fam::DateTime(_), A::LocalTimestampMicros(us)) => json!(us.to_string()),
        (Fam::Timestamp(_), A::TimestampMicros(us)) => json!(us.to_string()),
        (Fam::Geom, A::Record(fields)) => {
            let get = |n: &str| fields.iter().find(|(k, _)| k == n).map(|(_, v)| v);
            let wkb = match get("wkb") {
                Some(A::Bytes(b)) => hex(b),
                other => panic!("geometry wkb {other:?}"),
            };
            let srid = match get("srid") {
                Some(A::Union(_, b)) => match b.as_ref() {
                    A::Int(i) => i64::from(*i),
                    _ => 0,
                },
                Some(A::Int(i)) => i64::from(*i),
                _ => 0,
            };
            json!({"srid": srid, "wkb": wkb})
        }
        (Fam::Point, A::Record(fields)) => {
            let names: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
            assert_eq!(names, ["x", "y", "wkb", "srid"]);
            let get = |n: &str| fields.iter().find(|(k, _)| k == n).map(|(_, v)| v);
            let unwrap = |v: Option<&A>| match v {
                Some(A::Union(_, b)) => Some(b.as_ref().clone()),
                other => other.cloned(),
            };
            let coord = |n: &str| match get(n) {
                Some(A::Double(d)) => *d,
                other => panic!("point {n} {other:?}"),
            };
            let wkb = match unwrap(get("wkb")) {
                Some(A::Bytes(b)) => hex(&b),
                other => panic!("point wkb {other:?}"),
            };
            let srid = match unwrap(get("srid")) {
                Some(A::Int(i)) => i64::from(i),
                _ => 0,
            };
            point_canon(srid, wkb, coord("x"), coord("y"))
        }
        (fam, other) => panic!(
            "column {} ({fam:?}): unexpected Avro value {other:?}",
            col.name
        ),
    }
}

/// Canonical form of a value as Confluent's Python deserializer renders it (see the header
/// of `scripts/lib/avro-consume`).
fn canon_py(col: &Col, v: &J) -> J {
    if v.is_null() {
        return J::Null;
    }
    let bytes = |v: &J| b64(v["$bytes"].as_str().unwrap_or_else(|| panic!("bytes {v}")));
    let iso_local = |s: &str| {
        let s = s.strip_suffix("+00:00").unwrap_or(s);
        let s = if s.contains('T') {
            s.to_string()
        } else {
            format!("{s}T00:00:00")
        };
        iso_micros(&format!("{s}Z"))
    };
    match col.fam {
        Fam::Int | Fam::Year => match v {
            J::String(s) => json!(s),
            J::Number(n) => json!(n.to_string()),
            other => panic!("int {other}"),
        },
        Fam::Decimal | Fam::Str | Fam::Enum | Fam::Uuid | Fam::Inet => v.clone(),
        Fam::Float => json!((v.as_f64().expect("float") as f32).to_bits()),
        Fam::Double => json!(v.as_f64().expect("double").to_bits()),
        Fam::Bit1 => v.clone(),
        Fam::Bits => json!(le_u64(&bytes(v))),
        Fam::Bin => json!(hex(&bytes(v))),
        Fam::FloatVec => json!(f32_hex(v)),
        Fam::Set => v.clone(),
        Fam::Json => serde_json::from_str(v.as_str().expect("json text")).expect("JSON parses"),
        Fam::Date => json!((iso_local(v.as_str().expect("date")) / 86_400_000_000).to_string()),
        Fam::Time => json!(v.as_i64().expect("time micros").to_string()),
        Fam::DateTime(_) | Fam::Timestamp(_) => {
            json!(iso_local(v.as_str().expect("timestamp")).to_string())
        }
        Fam::Geom => json!({
            "srid": v["srid"].as_i64().unwrap_or(0),
            "wkb": hex(&bytes(&v["wkb"])),
        }),
        Fam::Point => point_canon(
            v["srid"].as_i64().unwrap_or(0),
            hex(&bytes(&v["wkb"])),
            v["x"].as_f64().expect("x"),
            v["y"].as_f64().expect("y"),
        ),
    }
}

fn canon_row<T>(cols: &[Col], fields: &[(String, T)], f: impl Fn(&Col, &T) -> J) -> Row {
    let id = Col {
        name: "id",
        ty: "INT",
        fam: Fam::Int,
        a: "",
        b: "",
    };
    fields
        .iter()
        .map(|(name, v)| {
            let col = if name == "id" {
                &id
            } else {
                cols.iter()
                    .find(|c| c.name == name)
                    .unwrap_or_else(|| panic!("unknown column {name}"))
            };
            (name.clone(), f(col, v))
        })
        .collect()
}

fn avro_record(v: &apache_avro::types::Value) -> Option<&Vec<(String, apache_avro::types::Value)>> {
    use apache_avro::types::Value as A;
    match v {
        A::Record(f) => Some(f),
        A::Union(_, inner) => avro_record(inner),
        A::Null => None,
        other => panic!("expected a record, got {other:?}"),
    }
}

fn avro_field<'a>(
    fields: &'a [(String, apache_avro::types::Value)],
    name: &str,
) -> &'a apache_avro::types::Value {
    &fields
        .iter()
        .find(|(k, _)| k == name)
        .unwrap_or_else(|| panic!("no field {name}"))
        .1
}

/// Decodes with the registry's writer schema and apache-avro's reader (through
/// schema_registry_converter, which fetches the schema by the id in each record).
async fn decode_with_registry(cols: &[Col], recs: &[RawRec]) -> Vec<Canon> {
    use schema_registry_converter::async_impl::easy_avro::EasyAvroDecoder;
    use schema_registry_converter::async_impl::schema_registry::SrSettings;
    let decoder = EasyAvroDecoder::new(SrSettings::new(registry_url()));
    let mut out = Vec::new();
    for r in recs {
        for b in [&r.key, &r.value].into_iter().flatten() {
            assert_eq!(
                b.as_slice().get(..1),
                Some(&[0u8][..]),
                "Confluent magic byte"
            );
        }
        let key = match &r.key {
            Some(k) => Some(decoder.decode(Some(k)).await.expect("decode key").value),
            None => None,
        };
        let value = match &r.value {
            Some(v) => Some(decoder.decode(Some(v)).await.expect("decode value").value),
            None => None,
        };
        let row =
            |v: &apache_avro::types::Value| avro_record(v).map(|f| canon_row(cols, f, canon_avro));
        out.push(Canon {
            key: key.as_ref().and_then(row),
            op: value.as_ref().map(
                |v| match avro_field(avro_record(v).expect("envelope"), "op") {
                    apache_avro::types::Value::String(s) => s.clone(),
                    other => panic!("op {other:?}"),
                },
            ),
            before: value
                .as_ref()
                .and_then(|v| row(avro_field(avro_record(v).expect("envelope"), "before"))),
            after: value
                .as_ref()
                .and_then(|v| row(avro_field(avro_record(v).expect("envelope"), "after"))),
        });
    }
    out
}

/// Decodes with Confluent's own Python client (`scripts/lib/avro-consume`).
fn decode_with_python(cols: &[Col], topic: &str, expect: usize) -> Vec<Canon> {
    let row = |v: &J| -> Option<Row> {
        let obj = v.as_object()?;
        let fields: Vec<(String, J)> = obj.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        Some(canon_row(cols, &fields, canon_py))
    };
    avro_consume(topic, expect)
        .iter()
        .map(|rec| {
            let value = &rec["value"];
            Canon {
                key: row(&rec["key"]),
                op: value["op"].as_str().map(str::to_string),
                before: if value.is_null() {
                    None
                } else {
                    row(&value["before"])
                },
                after: if value.is_null() {
                    None
                } else {
                    row(&value["after"])
                },
            }
        })
        .collect()
}

async fn every_type_round_trips_through_avro(flavor: Flavor) {
    let p = Pipeline::new_avro(flavor, "types_avro", "");
    let (tables, expected, recs) = run_matrix(&p).await;
    for (t, cols) in &tables {
        let topic = p.topic(t);
        let mine: Vec<RawRec> = recs.iter().filter(|r| r.topic == topic).cloned().collect();
        let got = decode_with_registry(cols, &mine).await;
        check_table(
            flavor.name,
            "avro (apache-avro reader)",
            t,
            &expected[*t],
            &got,
        );
        let got = decode_with_python(cols, &topic, mine.len());
        check_table(
            flavor.name,
            "avro (Confluent Python client)",
            t,
            &expected[*t],
            &got,
        );
    }
}

per_flavor!(
    all:
    every_type_round_trips_through_json,
    every_type_round_trips_through_avro
);

/// MariaDB's INET6 and INET4 are written as the text the server prints: addresses that hit
/// every rule of its IPv6 form (the longest zero run compressed, the first of equal runs, a
/// run of one group, runs at either end, IPv4-compatible and IPv4-mapped addresses) are read
/// by the snapshot (rows before the start) and streamed (rows after it), and each value is
/// compared with the server's own `CAST(c AS CHAR)`.
async fn inet_values_are_the_servers_text(flavor: Flavor) {
    const V6: &[&str] = &[
        "::",
        "::1",
        "1::",
        "::2:0",
        "1:0:2:3:4:5:6:7",
        "1:2:3:4:5:6:7:0",
        "2001:db8::ff00:42:8329",
        "2001:db8:0:0:1:0:0:1",
        "1:0:0:2:0:0:0:3",
        "1:0:0:0:2:0:0:0",
        "a:0:0:b:0:0:c:d",
        "0:0:1::",
        "::ffff:192.0.2.1",
        "::ffff:0.0.0.0",
        "::1.2.3.4",
        "::ffff:0:102:304",
        "fe80:abcd:ef01:2345:6789:abcd:ef01:2345",
        "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
    ];
    const V4: &[&str] = &[
        "0.0.0.0",
        "255.255.255.255",
        "1.20.100.9",
        "192.0.2.1",
        "10.0.0.0",
    ];
    let p = Pipeline::new(flavor, "inet", "");
    p.edit_config("start = \"latest\"", "start = \"initial\"");
    let db = &p.db;
    let mut c = root(flavor.port).await;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {db}"),
            &format!("CREATE TABLE {db}.ips (id INT PRIMARY KEY, a INET6, b INET4)"),
        ],
    )
    .await;
    // Every address twice: once before the start (snapshot), once after (streamed); one row of
    // NULLs each time.
    let rows = |from: usize| -> String {
        let mut values: Vec<String> = V6
            .iter()
            .enumerate()
            .map(|(i, a)| format!("({}, '{a}', '{}')", from + i, V4[i % V4.len()]))
            .collect();
        values.push(format!("({}, NULL, NULL)", from + V6.len()));
        format!("INSERT INTO {db}.ips VALUES {}", values.join(", "))
    };
    let per_pass = V6.len() + 1;
    exec(&mut c, &[&rows(1)]).await;
    let mut child = p.spawn();
    p.wait_started(Duration::from_secs(60));
    // The second pass once the snapshot is committed: a chunk read after it would read its rows
    // too (as `r`, after their `c`).
    p.wait_snapshot_committed(Duration::from_secs(60));
    exec(&mut c, &[&rows(1 + per_pass)]).await;
    let recs = consume_raw(
        &[p.topic("ips")],
        "read_committed",
        2 * per_pass,
        Duration::from_secs(2),
        Duration::from_secs(60),
    );
    terminate(&mut child);
    let want: Vec<(i32, Option<String>, Option<String>)> = c
        .query(format!(
            "SELECT id, CAST(a AS CHAR), CAST(b AS CHAR) FROM {db}.ips ORDER BY id"
        ))
        .await
        .expect("select the server's text");
    let mut got = BTreeMap::new();
    for r in recs.iter().map(RawRec::json) {
        let v = r.value.expect("a value");
        let after = &v["after"];
        let text = |f: &str| after[f].as_str().map(str::to_string);
        let id = after["id"].as_i64().expect("id") as i32;
        let op = v["op"].as_str().expect("op").to_string();
        got.insert(id, (op, text("a"), text("b")));
    }
    assert_eq!(
        got.len(),
        want.len(),
        "[{}] one record per row",
        flavor.name
    );
    for (id, a, b) in want {
        let op = if (id as usize) <= per_pass { "r" } else { "c" };
        assert_eq!(
            got.get(&id),
            Some(&(op.to_string(), a, b)),
            "[{}] row {id}",
            flavor.name
        );
    }
}

// MariaDB's types: both MariaDB servers.
per_flavor!(@module inet_mariadb, MARIADB, inet_values_are_the_servers_text);
per_flavor!(@module inet_mariadb11, MARIADB11, inet_values_are_the_servers_text);
