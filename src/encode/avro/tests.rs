//! Tests of the Avro schemas and encoder: decoded with apache-avro against the derived
//! schema, compared with expectations written from the type mapping (not from the encoder),
//! and with what the JSON encoder writes for the same rows.

use std::sync::Arc;

use apache_avro::reader::datum::GenericDatumReader;
use apache_avro::types::Value as AV;
use apache_avro::{Decimal, Schema};
use base64::Engine as _;
use num_bigint::BigInt;
use proptest::prelude::*;
use serde_json::{json, Value as J};

use super::*;
use crate::config::route::RouteTarget;
use crate::config::Format;
use crate::encode::change::RowPos;
use crate::encode::json::JsonEncoder;
use crate::model::{RowImage, RowsKind, TxnMeta};
use crate::schema::{Column, ColumnKind, TableSchema};

// ---------------------------------------------------------------------------------------------
// helpers

fn col(name: &str, kind: ColumnKind, nullable: bool) -> Column {
    Column {
        name: name.into(),
        kind,
        nullable,
    }
}

fn route(topic: &str, format: Format, opts: AvroOptions) -> RouteTarget {
    RouteTarget {
        on_schema_change: Default::default(),
        topic: topic.into(),
        format,
        key_columns: vec![],
        tombstones: true,
        avro: opts,
        json_schemas: false,
        rules: Default::default(),
    }
}

fn ctx_with(columns: Vec<Column>, key: Vec<usize>, opts: AvroOptions) -> TableCtx {
    let schema = TableSchema {
        db: "shop".into(),
        table: "t".into(),
        columns,
        primary_key: key.clone(),
    };
    TableCtx::new(Arc::new(schema), route("shop.t", Format::Avro, opts), key).unwrap()
}

fn ctx(columns: Vec<Column>, key: Vec<usize>) -> TableCtx {
    ctx_with(columns, key, AvroOptions::default())
}

fn meta() -> TxnMeta {
    TxnMeta {
        gtid: Some("3e11fa47-71ca-11e1-9e33-c80aa9429562:23".into()),
        file: "mysql-bin.000003".into(),
        pos: 100,
        ts_us: 1_709_288_430_123_456,
        server_id: 7,
        thread: Some(17),
        connector: "mysql",
    }
}

const RP: RowPos = RowPos {
    source_ts_us: 1_709_288_430_123_456,
    pos: 1234,
    row: 2,
    total_order: 3,
    data_collection_order: 1,
    snapshot: crate::model::SnapshotMark::False,
};

/// The processing time the tests write envelopes at.
const NS: u64 = 99_123_456_789;

/// The envelope of a row at [`RP`], written at `ts_ns` (ns since the epoch).
fn input<'a>(
    table: &'a TableCtx,
    meta: &'a TxnMeta,
    op: Op,
    before: Option<&'a [Value]>,
    after: Option<&'a [Value]>,
    ts_ns: u64,
) -> Envelope<'a> {
    Envelope {
        table,
        meta,
        op,
        before,
        after,
        row_pos: RP,
        ts: EventTime { ns: ts_ns },
    }
}

/// Strips and checks the wire-format header, then decodes with apache-avro; every byte must
/// be used.
pub(crate) fn decode(schema_json: &str, id: u32, bytes: &[u8]) -> AV {
    let schema = Schema::parse_str(schema_json).unwrap();
    assert_eq!(bytes.first(), Some(&0), "magic byte");
    assert_eq!(bytes.get(1..5), Some(&id.to_be_bytes()[..]), "schema id");
    let mut rest = &bytes[5..];
    let v = GenericDatumReader::builder(&schema)
        .build()
        .unwrap()
        .read_value(&mut rest)
        .unwrap();
    assert!(rest.is_empty(), "{} bytes left over", rest.len());
    assert!(v.validate(&schema));
    v
}

fn fields(v: AV) -> Vec<(String, AV)> {
    match v {
        AV::Record(f) => f,
        other => panic!("not a record: {other:?}"),
    }
}

fn field(v: &[(String, AV)], name: &str) -> AV {
    v.iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| panic!("no field {name}"))
}

/// The decoded envelope of `after = row` (create).
fn envelope_of(
    t: &TableCtx,
    before: Option<&[Value]>,
    after: Option<&[Value]>,
) -> Vec<(String, AV)> {
    let op = match (before, after) {
        (None, _) => Op::Create,
        (_, None) => Op::Delete,
        _ => Op::Update,
    };
    let bytes = AvroEncoder::new("shop")
        .envelope(42, &input(t, &meta(), op, before, after, NS))
        .unwrap();
    fields(decode(
        &t.avro.as_ref().unwrap().value.schema_json,
        42,
        &bytes,
    ))
}

/// The decoded `after` record's fields of a one-row create.
fn after_of(t: &TableCtx, row: &[Value]) -> Vec<(String, AV)> {
    match field(&envelope_of(t, None, Some(row)), "after") {
        AV::Union(1, r) => fields(*r),
        other => panic!("after is {other:?}"),
    }
}

/// The decoded value of a single-column table.
fn one(kind: ColumnKind, nullable: bool, v: Value) -> AV {
    let t = ctx(vec![col("c", kind, nullable)], vec![]);
    field(&after_of(&t, &[v]), "c")
}

fn enc_err(kind: ColumnKind, nullable: bool, v: Value) -> String {
    let t = ctx(vec![col("c", kind, nullable)], vec![]);
    AvroEncoder::new("p")
        .envelope(1, &input(&t, &meta(), Op::Create, None, Some(&[v]), 0))
        .unwrap_err()
        .to_string()
}

fn some(v: AV) -> AV {
    AV::Union(1, Box::new(v))
}

fn null() -> AV {
    AV::Union(0, Box::new(AV::Null))
}

fn dec(text: &str) -> AV {
    AV::Decimal(Decimal::from(big(text).to_signed_bytes_be()))
}

/// Decimal text → unscaled integer (the digits without the point).
fn big(text: &str) -> BigInt {
    BigInt::parse_bytes(text.replace('.', "").as_bytes(), 10).unwrap()
}

fn utf8() -> ColumnKind {
    ColumnKind::String {
        charset: 255,
        binary: false,
        fixed: false,
        max_bytes: 400,
    }
}

fn varbinary() -> ColumnKind {
    ColumnKind::String {
        charset: 63,
        binary: true,
        fixed: false,
        max_bytes: 400,
    }
}

fn latin1_text() -> ColumnKind {
    ColumnKind::Blob {
        charset: 8,
        binary: false,
    }
}

/// Days since 1970-01-01, counted year by year (independent of the encoder's calendar).
fn naive_days(y: i64, m: u8, d: u8) -> i64 {
    let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let year_len = |y: i64| if leap(y) { 366 } else { 365 };
    let mut days: i64 = if y >= 1970 {
        (1970..y).map(year_len).sum()
    } else {
        -(y..1970).map(year_len).sum::<i64>()
    };
    let months = [
        31,
        if leap(y) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    days += months[..usize::from(m) - 1].iter().sum::<i64>();
    days + i64::from(d) - 1
}

fn days_in_month(y: u16, m: u8) -> u8 {
    let y = i64::from(y);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ][usize::from(m) - 1]
}

// ---------------------------------------------------------------------------------------------
// expected Avro values, from the type mapping

/// The Avro value a column value must decode to (with its nullable union if any).
fn expected(c: &Column, v: &Value, opts: AvroOptions) -> AV {
    let always_nullable = matches!(c.kind, ColumnKind::Date | ColumnKind::DateTime { .. });
    let wrap = |x: AV| {
        if c.nullable || always_nullable {
            some(x)
        } else {
            x
        }
    };
    let inner = match (&c.kind, v) {
        (_, Value::Null) => return null(),
        (ColumnKind::Date, Value::Date { month: 0, .. } | Value::Date { day: 0, .. }) => {
            return null()
        }
        (
            ColumnKind::DateTime { .. },
            Value::DateTime { month: 0, .. } | Value::DateTime { day: 0, .. },
        ) => return null(),
        (ColumnKind::BigInt { unsigned: true }, Value::UInt(u)) => {
            AV::Decimal(Decimal::from(BigInt::from(*u).to_signed_bytes_be()))
        }
        (ColumnKind::BigInt { .. }, Value::Int(i)) => AV::Long(*i),
        (ColumnKind::Int { unsigned: true }, Value::UInt(u)) => AV::Long(*u as i64),
        (_, Value::Int(i)) => AV::Int(i32::try_from(*i).unwrap()),
        (_, Value::UInt(u)) => AV::Int(i32::try_from(*u).unwrap()),
        (ColumnKind::Decimal { scale, .. }, Value::Decimal(text)) => {
            let frac = text.split_once('.').map_or(0, |(_, f)| f.len());
            let unscaled = big(text) * BigInt::from(10).pow(u32::from(*scale) - frac as u32);
            AV::Decimal(Decimal::from(unscaled.to_signed_bytes_be()))
        }
        (_, Value::Float(f)) => AV::Float(*f),
        (_, Value::Double(d)) => AV::Double(*d),
        (_, Value::Date { year, month, day }) => {
            AV::Date(naive_days(i64::from(*year), *month, *day) as i32)
        }
        (
            _,
            Value::DateTime {
                year,
                month,
                day,
                hour,
                minute,
                second,
                micros,
            },
        ) => AV::LocalTimestampMicros(
            ((naive_days(i64::from(*year), *month, *day) * 24 + i64::from(*hour)) * 60
                + i64::from(*minute))
                * 60_000_000
                + i64::from(*second) * 1_000_000
                + i64::from(*micros),
        ),
        (
            _,
            Value::Time {
                negative,
                hours,
                minutes,
                seconds,
                micros,
            },
        ) => {
            let us = ((i64::from(*hours) * 60 + i64::from(*minutes)) * 60 + i64::from(*seconds))
                * 1_000_000
                + i64::from(*micros);
            AV::Long(if *negative { -us } else { us })
        }
        (_, Value::Timestamp { secs, micros }) => {
            AV::TimestampMicros(secs * 1_000_000 + i64::from(*micros))
        }
        (_, Value::Year(y)) => AV::Int(i32::from(*y)),
        (ColumnKind::Uuid, Value::Bytes(b)) => AV::String(
            String::from_utf8(crate::encode::uuid_text::uuid_text(b).unwrap().to_vec()).unwrap(),
        ),
        (ColumnKind::Inet6, Value::Bytes(b)) => AV::String(
            String::from_utf8(
                crate::encode::inet_text::inet6_text(b)
                    .unwrap()
                    .as_bytes()
                    .to_vec(),
            )
            .unwrap(),
        ),
        (ColumnKind::Inet4, Value::Bytes(b)) => AV::String(
            String::from_utf8(
                crate::encode::inet_text::inet4_text(b)
                    .unwrap()
                    .as_bytes()
                    .to_vec(),
            )
            .unwrap(),
        ),
        (ColumnKind::Vector { .. }, Value::Bytes(b)) => AV::Array(
            b.chunks_exact(4)
                .map(|c| AV::Float(f32::from_le_bytes(c.try_into().unwrap())))
                .collect(),
        ),
        (k, Value::Bytes(b)) => match k.charset() {
            Some(63) | None => AV::Bytes(b.clone()),
            Some(cs) => AV::String(crate::schema::decode_text(cs, b).into_owned()),
        },
        (ColumnKind::Enum { values }, Value::Enum(i)) => {
            let i = usize::from(*i);
            if opts.enum_as_avro_enum {
                AV::Enum(i as u32 - 1, values[i - 1].clone())
            } else {
                AV::String(if i >= 1 && i <= values.len() {
                    values[i - 1].clone()
                } else {
                    String::new()
                })
            }
        }
        (ColumnKind::Set { values }, Value::Set(mask)) => AV::Array(
            values
                .iter()
                .enumerate()
                .filter(|(i, _)| *i < 64 && mask >> i & 1 == 1)
                .map(|(_, s)| AV::String(s.clone()))
                .collect(),
        ),
        (_, Value::Json(s)) => AV::String(s.clone()),
        (ColumnKind::Bit { bits: 1 }, Value::Bit(b)) => AV::Boolean(*b != 0),
        (ColumnKind::Bit { bits }, Value::Bit(b)) => {
            let n = usize::from(*bits).div_ceil(8);
            AV::Bytes((0..n).map(|i| (b >> (8 * i)) as u8).collect())
        }
        (ColumnKind::Point, Value::Geometry(g)) => {
            let srid = i32::from_le_bytes(g[..4].try_into().unwrap());
            let coord = |at: usize| f64::from_le_bytes(g[at..at + 8].try_into().unwrap());
            AV::Record(vec![
                ("x".into(), AV::Double(coord(9))),
                ("y".into(), AV::Double(coord(17))),
                ("wkb".into(), some(AV::Bytes(g[4..].to_vec()))),
                (
                    "srid".into(),
                    if srid == 0 {
                        null()
                    } else {
                        some(AV::Int(srid))
                    },
                ),
            ])
        }
        (_, Value::Geometry(g)) => {
            let srid = i32::from_le_bytes(g[..4].try_into().unwrap());
            AV::Record(vec![
                ("wkb".into(), AV::Bytes(g[4..].to_vec())),
                (
                    "srid".into(),
                    if srid == 0 {
                        null()
                    } else {
                        some(AV::Int(srid))
                    },
                ),
            ])
        }
        (k, v) => panic!("no expectation for {k:?} / {v:?}"),
    };
    wrap(inner)
}

// ---------------------------------------------------------------------------------------------
// strategies: column kinds and values that the row decoder can produce for them

fn arb_kind() -> impl Strategy<Value = ColumnKind> {
    prop_oneof![
        any::<bool>().prop_map(|unsigned| ColumnKind::TinyInt { unsigned }),
        any::<bool>().prop_map(|unsigned| ColumnKind::SmallInt { unsigned }),
        any::<bool>().prop_map(|unsigned| ColumnKind::MediumInt { unsigned }),
        any::<bool>().prop_map(|unsigned| ColumnKind::Int { unsigned }),
        any::<bool>().prop_map(|unsigned| ColumnKind::BigInt { unsigned }),
        (1u8..=65)
            .prop_flat_map(|p| (Just(p), 0..=p.min(30)))
            .prop_map(|(precision, scale)| ColumnKind::Decimal { precision, scale }),
        Just(ColumnKind::Float),
        Just(ColumnKind::Double),
        Just(ColumnKind::Date),
        (0u8..=6).prop_map(|fsp| ColumnKind::Time { fsp }),
        (0u8..=6).prop_map(|fsp| ColumnKind::DateTime { fsp }),
        (0u8..=6).prop_map(|fsp| ColumnKind::Timestamp { fsp }),
        Just(ColumnKind::Year),
        Just(utf8()),
        Just(varbinary()),
        Just(latin1_text()),
        Just(ColumnKind::Blob {
            charset: 63,
            binary: true
        }),
        Just(ColumnKind::Enum {
            values: vec!["small".into(), "medium".into(), "x-large".into()]
        }),
        Just(ColumnKind::Set {
            values: vec!["a".into(), "b,c".into(), "d".into()]
        }),
        Just(ColumnKind::Json),
        (1u16..=64).prop_map(|bits| ColumnKind::Bit { bits }),
        Just(ColumnKind::Geometry),
        Just(ColumnKind::Point),
        Just(ColumnKind::Uuid),
        Just(ColumnKind::Inet6),
        Just(ColumnKind::Inet4),
        Just(ColumnKind::Vector { dimensions: None }),
    ]
}

fn arb_date() -> impl Strategy<Value = (u16, u8, u8)> {
    (0u16..=9999, 1u8..=12).prop_flat_map(|(y, m)| (Just(y), Just(m), 1..=days_in_month(y, m)))
}

fn arb_decimal(precision: u8, scale: u8) -> impl Strategy<Value = String> {
    let int_digits = usize::from(precision - scale);
    (
        any::<bool>(),
        proptest::collection::vec(0u8..10, 0..=int_digits),
        proptest::collection::vec(0u8..10, usize::from(scale)),
    )
        .prop_map(|(neg, int, frac)| {
            let digit = |d: &u8| char::from(b'0' + d);
            let mut int: String = int.iter().map(digit).collect();
            let int = int.split_off(int.find(|c| c != '0').unwrap_or(int.len()));
            let frac: String = frac.iter().map(digit).collect();
            let zero = int.is_empty() && frac.chars().all(|c| c == '0');
            let mut s = String::new();
            if neg && !zero {
                s.push('-');
            }
            s.push_str(if int.is_empty() { "0" } else { &int });
            if !frac.is_empty() {
                s.push('.');
                s.push_str(&frac);
            }
            s
        })
}

fn finite_f32() -> impl Strategy<Value = f32> {
    any::<u32>()
        .prop_map(f32::from_bits)
        .prop_filter("finite", |f| f.is_finite())
}

/// A non-null value of `kind`, as the row decoder produces it.
fn arb_value(kind: &ColumnKind, avro_enum: bool) -> BoxedStrategy<Value> {
    use ColumnKind as K;
    match kind.clone() {
        K::TinyInt { unsigned: false } => (-128i64..=127).prop_map(Value::Int).boxed(),
        K::TinyInt { unsigned: true } => (0u64..=255).prop_map(Value::UInt).boxed(),
        K::SmallInt { unsigned: false } => (-32768i64..=32767).prop_map(Value::Int).boxed(),
        K::SmallInt { unsigned: true } => (0u64..=65535).prop_map(Value::UInt).boxed(),
        K::MediumInt { unsigned: false } => {
            (-8_388_608i64..=8_388_607).prop_map(Value::Int).boxed()
        }
        K::MediumInt { unsigned: true } => (0u64..=16_777_215).prop_map(Value::UInt).boxed(),
        K::Int { unsigned: false } => any::<i32>().prop_map(|i| Value::Int(i.into())).boxed(),
        K::Int { unsigned: true } => any::<u32>().prop_map(|u| Value::UInt(u.into())).boxed(),
        K::BigInt { unsigned: false } => any::<i64>().prop_map(Value::Int).boxed(),
        K::BigInt { unsigned: true } => any::<u64>().prop_map(Value::UInt).boxed(),
        K::Decimal { precision, scale } => arb_decimal(precision, scale)
            .prop_map(Value::Decimal)
            .boxed(),
        K::Float => finite_f32().prop_map(Value::Float).boxed(),
        K::Double => any::<u64>()
            .prop_map(f64::from_bits)
            .prop_filter("finite", |d| d.is_finite())
            .prop_map(Value::Double)
            .boxed(),
        K::Date => prop_oneof![
            4 => arb_date().prop_map(|(year, month, day)| Value::Date { year, month, day }),
            1 => Just(Value::Date { year: 0, month: 0, day: 0 }),
            1 => Just(Value::Date { year: 2024, month: 5, day: 0 }),
        ]
        .boxed(),
        K::Time { fsp } => (any::<bool>(), 0u32..=838, 0u8..60, 0u8..60, 0u32..1_000_000)
            .prop_map(move |(negative, hours, minutes, seconds, us)| Value::Time {
                negative,
                hours,
                minutes,
                seconds,
                micros: us - us % 10u32.pow(6 - u32::from(fsp)),
            })
            .boxed(),
        K::DateTime { fsp } => prop_oneof![
            4 => (arb_date(), 0u8..24, 0u8..60, 0u8..60, 0u32..1_000_000).prop_map(
                move |((year, month, day), hour, minute, second, us)| Value::DateTime {
                    year,
                    month,
                    day,
                    hour,
                    minute,
                    second,
                    micros: us - us % 10u32.pow(6 - u32::from(fsp)),
                }
            ),
            1 => Just(Value::DateTime {
                year: 0,
                month: 0,
                day: 0,
                hour: 0,
                minute: 0,
                second: 0,
                micros: 0
            }),
        ]
        .boxed(),
        K::Timestamp { fsp } => (0i64..=i64::from(u32::MAX), 0u32..1_000_000)
            .prop_map(move |(secs, us)| Value::Timestamp {
                secs,
                micros: us - us % 10u32.pow(6 - u32::from(fsp)),
            })
            .boxed(),
        K::Year => prop_oneof![Just(0u16), 1901u16..=2155]
            .prop_map(Value::Year)
            .boxed(),
        K::String { charset: 63, .. } | K::Blob { charset: 63, .. } => {
            proptest::collection::vec(any::<u8>(), 0..40)
                .prop_map(Value::Bytes)
                .boxed()
        }
        K::String { charset: 8, .. } | K::Blob { charset: 8, .. } => {
            proptest::collection::vec(any::<u8>(), 0..40)
                .prop_map(Value::Bytes)
                .boxed()
        }
        K::String { .. } | K::Blob { .. } => any::<String>()
            .prop_map(|s| Value::Bytes(s.into_bytes()))
            .boxed(),
        K::Enum { values } => {
            let lo = if avro_enum { 1 } else { 0 };
            (lo..=values.len() as u16).prop_map(Value::Enum).boxed()
        }
        K::Set { values } => (0u64..(1 << values.len())).prop_map(Value::Set).boxed(),
        K::Json => prop_oneof![
            Just(Value::Json("{}".into())),
            Just(Value::Json("{\"a\":[1,2.5,\"x\"]}".into())),
            any::<String>().prop_map(|s| Value::Json(serde_json::to_string(&s).unwrap())),
        ]
        .boxed(),
        K::Bit { bits } => any::<u64>()
            .prop_map(move |b| Value::Bit(if bits == 64 { b } else { b & ((1 << bits) - 1) }))
            .boxed(),
        K::Uuid | K::Inet6 => proptest::array::uniform16(any::<u8>())
            .prop_map(|b| Value::Bytes(b.to_vec()))
            .boxed(),
        K::Inet4 => any::<[u8; 4]>()
            .prop_map(|b| Value::Bytes(b.to_vec()))
            .boxed(),
        K::Point => (
            prop_oneof![Just(0i32), Just(3857), any::<i32>()],
            any::<f64>().prop_filter("finite", |d| d.is_finite()),
            any::<f64>().prop_filter("finite", |d| d.is_finite()),
        )
            .prop_map(|(srid, x, y)| Value::Geometry(stored_point(srid, x, y)))
            .boxed(),
        K::Geometry => (
            prop_oneof![Just(0u32), Just(4326), any::<u32>()],
            proptest::collection::vec(any::<u8>(), 0..40),
        )
            .prop_map(|(srid, wkb)| {
                let mut g = srid.to_le_bytes().to_vec();
                g.extend(wkb);
                Value::Geometry(g)
            })
            .boxed(),
        K::Vector { .. } => proptest::collection::vec(finite_f32(), 0..8)
            .prop_map(|v| Value::Bytes(v.iter().flat_map(|f| f.to_le_bytes()).collect()))
            .boxed(),
    }
}

/// Columns (kind, nullable) and two rows for them.
fn arb_table() -> impl Strategy<Value = (Vec<Column>, Vec<Value>, Vec<Value>, usize)> {
    proptest::collection::vec((arb_kind(), any::<bool>()), 1..10).prop_flat_map(|cols| {
        let columns: Vec<Column> = cols
            .iter()
            .enumerate()
            .map(|(i, (k, n))| col(&format!("c{i}"), k.clone(), *n))
            .collect();
        let row = |columns: &[Column]| {
            columns
                .iter()
                .map(|c| {
                    let v = arb_value(&c.kind, false);
                    if c.nullable {
                        prop_oneof![1 => Just(Value::Null), 4 => v].boxed()
                    } else {
                        v
                    }
                })
                .collect::<Vec<_>>()
        };
        let nkey = 0..=columns.len().min(2);
        (Just(columns.clone()), row(&columns), row(&columns), nkey)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Random tables and rows: encoded, decoded by apache-avro with the derived schema, equal
    /// to the values the type mapping prescribes — for before, after and the key.
    #[test]
    fn round_trip((columns, before, after, nkey) in arb_table()) {
        let t = ctx(columns.clone(), (0..nkey).collect());
        let env = envelope_of(&t, Some(&before), Some(&after));
        for (name, row) in [("before", &before), ("after", &after)] {
            let AV::Union(1, rec) = field(&env, name) else { panic!("{name} missing") };
            let got = fields(*rec);
            prop_assert_eq!(got.len(), columns.len());
            for ((c, v), (fname, g)) in columns.iter().zip(row.iter()).zip(got) {
                prop_assert_eq!(&fname, &c.name);
                prop_assert_eq!(g, expected(c, v, AvroOptions::default()), "column {:?} value {:?}", c, v);
            }
        }
        let avro = t.avro.as_ref().unwrap();
        let key = AvroEncoder::new("p").key(&t, Some(5), Some(&after)).unwrap();
        match (&avro.key, key) {
            (None, None) => prop_assert_eq!(nkey, 0),
            (Some(doc), Some(bytes)) => {
                let got = fields(decode(&doc.schema_json, 5, &bytes));
                prop_assert_eq!(got.len(), nkey);
                for (i, (_, g)) in got.into_iter().enumerate() {
                    prop_assert_eq!(g, expected(&columns[i], &after[i], AvroOptions::default()));
                }
            }
            (doc, key) => prop_assert!(false, "key schema {doc:?} vs key {key:?}"),
        }
    }

    /// The same rows through the JSON encoder and the Avro encoder give corresponding values.
    #[test]
    fn json_and_avro_agree((columns, before, after, nkey) in arb_table()) {
        agree(&columns, &before, &after, nkey);
    }

    #[test]
    fn decimals_are_minimal_twos_complement(
        (p, s, text) in (1u8..=65).prop_flat_map(|p| (Just(p), 0..=p.min(30)))
            .prop_flat_map(|(p, s)| (Just(p), Just(s), arb_decimal(p, s)))
    ) {
        let _ = p;
        let mut out = Vec::new();
        put_decimal_text(&mut out, &text, s).unwrap();
        let want = big(&text).to_signed_bytes_be();
        let mut expect = Vec::new();
        put_long(&mut expect, want.len() as i64);
        expect.extend(want);
        prop_assert_eq!(out, expect);
    }

    #[test]
    fn any_avro_enum_value_round_trips(i in 1u16..=3) {
        let kind = ColumnKind::Enum { values: vec!["a".into(), "b".into(), "c".into()] };
        let t = ctx_with(vec![col("e", kind.clone(), false)], vec![0], AvroOptions { enum_as_avro_enum: true });
        let got = field(&after_of(&t, &[Value::Enum(i)]), "e");
        prop_assert_eq!(got, expected(&col("e", kind, false), &Value::Enum(i), AvroOptions { enum_as_avro_enum: true }));
    }
}

// ---------------------------------------------------------------------------------------------
// JSON ↔ Avro correspondence

/// An Avro value as the JSON encoder writes the same column value.
fn as_json(kind: &ColumnKind, v: &AV) -> J {
    let b64 = |b: &[u8]| J::String(base64::engine::general_purpose::STANDARD.encode(b));
    let float = |f: f32| serde_json::from_str::<J>(&format!("{f:?}")).unwrap();
    match v {
        AV::Null => J::Null,
        AV::Union(_, x) => as_json(kind, x),
        AV::Boolean(b) => json!(b),
        AV::Int(i) => json!(i),
        AV::Long(l) => json!(l),
        AV::Float(f) => float(*f),
        AV::Double(d) => serde_json::from_str(&format!("{d:?}")).unwrap(),
        AV::Bytes(b) => b64(b),
        AV::String(s) => json!(s),
        AV::Enum(_, s) => json!(s),
        AV::Date(d) => json!(d),
        AV::Decimal(d) => {
            let bytes: Vec<u8> = d.try_into().unwrap();
            let n = BigInt::from_signed_bytes_be(&bytes);
            match kind {
                ColumnKind::BigInt { unsigned: true } => {
                    json!(n.to_string().parse::<u64>().unwrap())
                }
                ColumnKind::Decimal { scale, .. } => {
                    let scale = usize::from(*scale);
                    let neg = n.sign() == num_bigint::Sign::Minus;
                    let digits = n.magnitude().to_string();
                    let digits = format!("{digits:0>width$}", width = scale + 1);
                    let (int, frac) = digits.split_at(digits.len() - scale);
                    let mut s = if neg { "-".to_string() } else { String::new() };
                    s.push_str(int);
                    if scale > 0 {
                        s.push('.');
                        s.push_str(frac);
                    }
                    json!(s)
                }
                k => panic!("decimal for {k:?}"),
            }
        }
        AV::LocalTimestampMicros(us) => {
            if kind.fsp() <= 3 {
                json!(us.div_euclid(1000))
            } else {
                json!(us)
            }
        }
        AV::TimestampMicros(us) => {
            let secs = us.div_euclid(1_000_000);
            let micros = us.rem_euclid(1_000_000);
            let (y, m, d) = crate::encode::json_value::civil_from_days(secs.div_euclid(86_400));
            let sod = secs.rem_euclid(86_400);
            let mut s = format!(
                "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
                sod / 3600,
                sod / 60 % 60,
                sod % 60
            );
            let fsp = usize::from(kind.fsp());
            if fsp > 0 {
                s.push('.');
                s.push_str(&format!("{micros:06}")[..fsp]);
            }
            s.push('Z');
            json!(s)
        }
        AV::Array(items) => match kind {
            ColumnKind::Set { .. } => json!(items
                .iter()
                .map(|i| match i {
                    AV::String(s) => s.as_str(),
                    other => panic!("set member {other:?}"),
                })
                .collect::<Vec<_>>()
                .join(",")),
            _ => J::Array(items.iter().map(|i| as_json(kind, i)).collect()),
        },
        AV::Record(f) => J::Object(
            f.iter()
                .map(|(n, x)| (n.clone(), as_json(kind, x)))
                .collect(),
        ),
        other => panic!("unexpected {other:?}"),
    }
}

/// A decoded record whose fields are columns, as JSON.
fn row_as_json(columns: &[Column], v: &AV) -> J {
    match v {
        AV::Union(0, _) => J::Null,
        AV::Union(1, r) => row_as_json(columns, r),
        AV::Record(f) => J::Object(
            f.iter()
                .zip(columns)
                .map(|((n, x), c)| (n.clone(), as_json(&c.kind, x)))
                .collect(),
        ),
        other => panic!("not a row: {other:?}"),
    }
}

/// A decoded non-row value (source, transaction) as JSON.
fn plain_json(v: &AV) -> J {
    as_json(&ColumnKind::Json, v)
}

fn agree(columns: &[Column], before: &[Value], after: &[Value], nkey: usize) {
    let key: Vec<usize> = (0..nkey).collect();
    let avro_t = ctx(columns.to_vec(), key.clone());
    let json_t = {
        let schema = TableSchema {
            db: "shop".into(),
            table: "t".into(),
            columns: columns.to_vec(),
            primary_key: key.clone(),
        };
        TableCtx::new(
            Arc::new(schema),
            route("shop.t", Format::Json, AvroOptions::default()),
            key,
        )
        .unwrap()
    };
    let json_doc: J = serde_json::from_slice(&JsonEncoder::new("shop").envelope(&input(
        &json_t,
        &meta(),
        Op::Update,
        Some(before),
        Some(after),
        NS,
    )))
    .unwrap();
    let env = envelope_of(&avro_t, Some(before), Some(after));
    for name in ["before", "after"] {
        assert_eq!(
            row_as_json(columns, &field(&env, name)),
            json_doc[name],
            "{name}"
        );
    }
    for name in ["source", "transaction", "op", "ts_ms", "ts_us", "ts_ns"] {
        assert_eq!(plain_json(&field(&env, name)), json_doc[name], "{name}");
    }
    let json_key = JsonEncoder::new("shop").key(&json_t, Some(after));
    let avro_key = AvroEncoder::new("shop")
        .key(&avro_t, Some(1), Some(after))
        .unwrap();
    match (json_key, avro_key, &avro_t.avro.as_ref().unwrap().key) {
        (None, None, None) => {}
        (Some(j), Some(a), Some(doc)) => {
            let j: J = serde_json::from_slice(&j).unwrap();
            let key_cols: Vec<Column> = columns[..nkey].to_vec();
            assert_eq!(row_as_json(&key_cols, &decode(&doc.schema_json, 1, &a)), j);
        }
        other => panic!("keys differ: {other:?}"),
    }
}

fn matrix() -> Vec<Column> {
    vec![
        col("ti", ColumnKind::TinyInt { unsigned: false }, false),
        col("tiu", ColumnKind::TinyInt { unsigned: true }, true),
        col("si", ColumnKind::SmallInt { unsigned: false }, true),
        col("siu", ColumnKind::SmallInt { unsigned: true }, true),
        col("mi", ColumnKind::MediumInt { unsigned: false }, true),
        col("miu", ColumnKind::MediumInt { unsigned: true }, true),
        col("i", ColumnKind::Int { unsigned: false }, true),
        col("iu", ColumnKind::Int { unsigned: true }, true),
        col("bi", ColumnKind::BigInt { unsigned: false }, true),
        col("biu", ColumnKind::BigInt { unsigned: true }, true),
        col(
            "d",
            ColumnKind::Decimal {
                precision: 65,
                scale: 30,
            },
            true,
        ),
        col("f", ColumnKind::Float, true),
        col("db", ColumnKind::Double, true),
        col("dt", ColumnKind::Date, false),
        col("tm", ColumnKind::Time { fsp: 6 }, true),
        col("dtm3", ColumnKind::DateTime { fsp: 3 }, true),
        col("dtm6", ColumnKind::DateTime { fsp: 6 }, false),
        col("ts0", ColumnKind::Timestamp { fsp: 0 }, true),
        col("ts6", ColumnKind::Timestamp { fsp: 6 }, true),
        col("y", ColumnKind::Year, true),
        col("s", utf8(), true),
        col("l1", latin1_text(), true),
        col("vb", varbinary(), true),
        col(
            "e",
            ColumnKind::Enum {
                values: vec!["S".into(), "M".into()],
            },
            true,
        ),
        col(
            "st",
            ColumnKind::Set {
                values: vec!["a".into(), "b".into(), "c".into()],
            },
            true,
        ),
        col("j", ColumnKind::Json, true),
        col("b1", ColumnKind::Bit { bits: 1 }, true),
        col("b64", ColumnKind::Bit { bits: 64 }, true),
        col("g", ColumnKind::Geometry, true),
        col(
            "v",
            ColumnKind::Vector {
                dimensions: Some(2),
            },
            true,
        ),
    ]
}

#[test]
fn json_and_avro_agree_on_the_type_matrix() {
    let columns = matrix();
    let mut point = 4326i32.to_le_bytes().to_vec();
    point.extend([1, 1, 0, 0, 0]);
    let typical = vec![
        Value::Int(-5),
        Value::UInt(200),
        Value::Int(-300),
        Value::UInt(65535),
        Value::Int(-8_388_608),
        Value::UInt(16_777_215),
        Value::Int(i64::from(i32::MIN)),
        Value::UInt(u64::from(u32::MAX)),
        Value::Int(i64::MIN),
        Value::UInt(u64::MAX),
        Value::Decimal(format!("-{}.{}", "9".repeat(35), "9".repeat(30))),
        Value::Float(1.5),
        Value::Double(-2.25e300),
        Value::Date {
            year: 2024,
            month: 2,
            day: 29,
        },
        Value::Time {
            negative: true,
            hours: 838,
            minutes: 59,
            seconds: 59,
            micros: 500_000,
        },
        Value::DateTime {
            year: 2024,
            month: 3,
            day: 1,
            hour: 10,
            minute: 20,
            second: 30,
            micros: 123_000,
        },
        Value::DateTime {
            year: 1000,
            month: 1,
            day: 1,
            hour: 0,
            minute: 0,
            second: 0,
            micros: 1,
        },
        Value::Timestamp {
            secs: 1_709_288_430,
            micros: 0,
        },
        Value::Timestamp {
            secs: 1_709_288_430,
            micros: 120_001,
        },
        Value::Year(2155),
        Value::Bytes("😀 \"q\"".as_bytes().to_vec()),
        Value::Bytes(b"caf\xe9 \x80".to_vec()),
        Value::Bytes(vec![0, 1, 2, 255]),
        Value::Enum(2),
        Value::Set(0b101),
        Value::Json("{\"k\":[1,2]}".into()),
        Value::Bit(1),
        Value::Bit(u64::MAX),
        Value::Geometry(point),
        Value::Bytes(
            [1.5f32, -2.0]
                .iter()
                .flat_map(|f| f.to_le_bytes())
                .collect(),
        ),
    ];
    let mut edge: Vec<Value> = columns
        .iter()
        .map(|c| {
            if c.nullable {
                Value::Null
            } else {
                Value::Int(0)
            }
        })
        .collect();
    edge[13] = Value::Date {
        year: 0,
        month: 0,
        day: 0,
    };
    edge[16] = Value::DateTime {
        year: 0,
        month: 0,
        day: 0,
        hour: 0,
        minute: 0,
        second: 0,
        micros: 0,
    };
    agree(&columns, &typical, &edge, 1);
    agree(&columns, &edge, &typical, 2);
    let mut empties = typical.clone();
    empties[20] = Value::Bytes(vec![]);
    empties[22] = Value::Bytes(vec![]);
    empties[23] = Value::Enum(0);
    empties[24] = Value::Set(0);
    empties[28] = Value::Geometry(vec![0, 0, 0, 0]);
    empties[29] = Value::Bytes(vec![]);
    agree(&columns, &empties, &typical, 0);
}

// ---------------------------------------------------------------------------------------------
// edge values per type

#[test]
fn integers_at_their_limits() {
    use ColumnKind as K;
    let cases: Vec<(ColumnKind, Value, AV)> = vec![
        (
            K::TinyInt { unsigned: false },
            Value::Int(-128),
            AV::Int(-128),
        ),
        (
            K::TinyInt { unsigned: true },
            Value::UInt(255),
            AV::Int(255),
        ),
        (
            K::SmallInt { unsigned: false },
            Value::Int(-32768),
            AV::Int(-32768),
        ),
        (
            K::SmallInt { unsigned: true },
            Value::UInt(65535),
            AV::Int(65535),
        ),
        (
            K::MediumInt { unsigned: false },
            Value::Int(8_388_607),
            AV::Int(8_388_607),
        ),
        (
            K::MediumInt { unsigned: true },
            Value::UInt(16_777_215),
            AV::Int(16_777_215),
        ),
        (
            K::Int { unsigned: false },
            Value::Int(i32::MIN.into()),
            AV::Int(i32::MIN),
        ),
        (
            K::Int { unsigned: false },
            Value::Int(i32::MAX.into()),
            AV::Int(i32::MAX),
        ),
        (
            K::Int { unsigned: true },
            Value::UInt(u32::MAX.into()),
            AV::Long(u32::MAX.into()),
        ),
        (
            K::BigInt { unsigned: false },
            Value::Int(i64::MIN),
            AV::Long(i64::MIN),
        ),
        (
            K::BigInt { unsigned: false },
            Value::Int(i64::MAX),
            AV::Long(i64::MAX),
        ),
        (
            K::BigInt { unsigned: true },
            Value::UInt(u64::MAX),
            dec("18446744073709551615"),
        ),
        (K::BigInt { unsigned: true }, Value::UInt(0), dec("0")),
        (K::Year, Value::Year(0), AV::Int(0)),
        (K::Year, Value::Year(2155), AV::Int(2155)),
    ];
    for (kind, v, want) in cases {
        assert_eq!(one(kind.clone(), false, v.clone()), want, "{kind:?} {v:?}");
    }
    // BIGINT UNSIGNED max: 0x00 then eight 0xFF (the sign byte keeps it positive).
    let mut out = Vec::new();
    put_u64_decimal(&mut out, u64::MAX);
    assert_eq!(out, [18, 0, 255, 255, 255, 255, 255, 255, 255, 255]);
    out.clear();
    put_u64_decimal(&mut out, 127);
    assert_eq!(out, [2, 127]);
    out.clear();
    put_u64_decimal(&mut out, 128);
    assert_eq!(out, [4, 0, 128]);
}

#[test]
fn decimals() {
    let k = |precision, scale| ColumnKind::Decimal { precision, scale };
    let sixty_five = format!("-{}", "9".repeat(65));
    assert_eq!(
        one(k(65, 0), false, Value::Decimal(sixty_five.clone())),
        dec(&sixty_five)
    );
    let scale30 = format!("-{}.{}", "9".repeat(35), "9".repeat(30));
    assert_eq!(
        one(k(65, 30), false, Value::Decimal(scale30.clone())),
        dec(&scale30)
    );
    let tiny = format!("0.{}1", "0".repeat(29));
    assert_eq!(
        one(k(30, 30), false, Value::Decimal(tiny.clone())),
        dec(&tiny)
    );
    assert_eq!(
        one(k(10, 4), true, Value::Decimal("-12.3400".into())),
        some(dec("-123400"))
    );
    assert_eq!(
        one(k(10, 2), false, Value::Decimal("0.00".into())),
        dec("0")
    );
    // fewer fraction digits than the scale are padded, never rounded
    assert_eq!(
        one(k(10, 2), false, Value::Decimal("1.5".into())),
        dec("150")
    );
    // bytes: minimal two's complement
    let enc = |t: &str, s: u8| {
        let mut out = Vec::new();
        put_decimal_text(&mut out, t, s).unwrap();
        out[1..].to_vec()
    };
    assert_eq!(enc("0", 0), [0x00]);
    assert_eq!(enc("-0.00", 2), [0x00]);
    assert_eq!(enc("127", 0), [0x7f]);
    assert_eq!(enc("128", 0), [0x00, 0x80]);
    assert_eq!(enc("-128", 0), [0x80]);
    assert_eq!(enc("-129", 0), [0xff, 0x7f]);
    assert_eq!(enc("-1.28", 2), [0x80]);
    assert_eq!(enc(&sixty_five, 0), big(&sixty_five).to_signed_bytes_be());
    assert_eq!(enc(&sixty_five, 0).len(), 28); // 10^65 needs 216 bits plus the sign
    for bad in ["", "-", ".", "1.234", "1e5", "12a", "--1", "1.2.3"] {
        let mut out = Vec::new();
        assert!(put_decimal_text(&mut out, bad, 2).is_err(), "{bad:?}");
    }
    let err = enc_err(k(10, 2), false, Value::Decimal("1.234".into()));
    assert!(err.contains("column `c` of shop.t"), "{err}");
}

#[test]
fn temporal() {
    use ColumnKind as K;
    let neg_time = Value::Time {
        negative: true,
        hours: 838,
        minutes: 59,
        seconds: 59,
        micros: 0,
    };
    assert_eq!(
        one(K::Time { fsp: 0 }, false, neg_time),
        AV::Long(-3_020_399_000_000)
    );
    let frac = Value::Time {
        negative: true,
        hours: 0,
        minutes: 0,
        seconds: 1,
        micros: 500_000,
    };
    assert_eq!(one(K::Time { fsp: 6 }, false, frac), AV::Long(-1_500_000));
    let max = Value::Time {
        negative: false,
        hours: 838,
        minutes: 59,
        seconds: 59,
        micros: 999_999,
    };
    assert_eq!(
        one(K::Time { fsp: 6 }, true, max),
        some(AV::Long(3_020_399_999_999))
    );

    let dt = Value::DateTime {
        year: 2024,
        month: 3,
        day: 1,
        hour: 10,
        minute: 20,
        second: 30,
        micros: 123_456,
    };
    assert_eq!(
        one(K::DateTime { fsp: 6 }, false, dt),
        some(AV::LocalTimestampMicros(1_709_288_430_123_456))
    );
    let first = Value::DateTime {
        year: 1000,
        month: 1,
        day: 1,
        hour: 0,
        minute: 0,
        second: 0,
        micros: 0,
    };
    assert_eq!(
        one(K::DateTime { fsp: 0 }, false, first),
        some(AV::LocalTimestampMicros(
            naive_days(1000, 1, 1) * 86_400_000_000
        ))
    );
    for fsp in 0..=6u8 {
        let us = 999_999 - 999_999 % 10u32.pow(6 - u32::from(fsp));
        let ts = Value::Timestamp {
            secs: 1_709_288_430,
            micros: us,
        };
        assert_eq!(
            one(K::Timestamp { fsp }, false, ts),
            AV::TimestampMicros(1_709_288_430_000_000 + i64::from(us)),
            "fsp {fsp}"
        );
    }
    let ts_max = Value::Timestamp {
        secs: u32::MAX.into(),
        micros: 999_999,
    };
    assert_eq!(
        one(K::Timestamp { fsp: 6 }, false, ts_max),
        AV::TimestampMicros(4_294_967_295_999_999)
    );
    // The zero TIMESTAMP is the epoch, as in JSON (MySQL's own range starts 1 s later).
    assert_eq!(
        one(
            K::Timestamp { fsp: 0 },
            false,
            Value::Timestamp { secs: 0, micros: 0 }
        ),
        AV::TimestampMicros(0)
    );
    assert_eq!(
        one(
            K::Date,
            false,
            Value::Date {
                year: 1969,
                month: 12,
                day: 31
            }
        ),
        some(AV::Date(-1))
    );
    assert_eq!(
        one(
            K::Date,
            false,
            Value::Date {
                year: 9999,
                month: 12,
                day: 31
            }
        ),
        some(AV::Date(2_932_896))
    );
}

#[test]
fn zero_dates_are_null_even_in_not_null_columns() {
    use ColumnKind as K;
    for v in [
        Value::Date {
            year: 0,
            month: 0,
            day: 0,
        },
        Value::Date {
            year: 2024,
            month: 0,
            day: 0,
        },
        Value::Date {
            year: 2024,
            month: 5,
            day: 0,
        },
    ] {
        assert_eq!(one(K::Date, false, v), null());
    }
    let zero_dt = Value::DateTime {
        year: 0,
        month: 0,
        day: 0,
        hour: 0,
        minute: 0,
        second: 0,
        micros: 0,
    };
    assert_eq!(one(K::DateTime { fsp: 6 }, false, zero_dt), null());
    // and their schema says so
    let t = ctx(
        vec![
            col("d", K::Date, false),
            col("dt", K::DateTime { fsp: 0 }, false),
            col("ts", K::Timestamp { fsp: 0 }, false),
        ],
        vec![],
    );
    let schema: J = serde_json::from_str(&t.avro.as_ref().unwrap().value.schema_json).unwrap();
    let value_fields = &schema["fields"][0]["type"][1]["fields"];
    assert_eq!(value_fields[0]["type"][0], json!("null"));
    assert_eq!(value_fields[0]["default"], J::Null);
    assert_eq!(value_fields[1]["type"][0], json!("null"));
    assert_eq!(
        value_fields[2]["type"]["logicalType"],
        json!("timestamp-micros")
    );
}

#[test]
fn bits_strings_enums_sets() {
    use ColumnKind as K;
    assert_eq!(
        one(K::Bit { bits: 1 }, false, Value::Bit(1)),
        AV::Boolean(true)
    );
    assert_eq!(
        one(K::Bit { bits: 1 }, true, Value::Bit(0)),
        some(AV::Boolean(false))
    );
    assert_eq!(
        one(
            K::Bit { bits: 64 },
            false,
            Value::Bit(0x0102_0304_0506_0708)
        ),
        AV::Bytes(vec![8, 7, 6, 5, 4, 3, 2, 1])
    );
    assert_eq!(
        one(K::Bit { bits: 10 }, false, Value::Bit(0x201)),
        AV::Bytes(vec![1, 2])
    );
    assert_eq!(
        one(utf8(), false, Value::Bytes(vec![])),
        AV::String(String::new())
    );
    assert_eq!(
        one(varbinary(), false, Value::Bytes(vec![])),
        AV::Bytes(vec![])
    );
    assert_eq!(
        one(utf8(), false, Value::Bytes(b"a\xffb".to_vec())),
        AV::String("a\u{FFFD}b".into())
    );
    assert_eq!(
        one(latin1_text(), false, Value::Bytes(b"caf\xe9 \x80".to_vec())),
        AV::String("café €".into())
    );
    let e = K::Enum {
        values: vec!["small".into(), "large".into()],
    };
    assert_eq!(
        one(e.clone(), false, Value::Enum(2)),
        AV::String("large".into())
    );
    assert_eq!(
        one(e.clone(), false, Value::Enum(0)),
        AV::String(String::new())
    );
    let s = K::Set {
        values: vec!["a".into(), "b".into(), "c".into(), "d".into()],
    };
    assert_eq!(
        one(s.clone(), false, Value::Set(0b1011)),
        AV::Array(vec![
            AV::String("a".into()),
            AV::String("b".into()),
            AV::String("d".into())
        ])
    );
    assert_eq!(one(s.clone(), true, Value::Set(0)), some(AV::Array(vec![])));
    // bits beyond the members are ignored, as in JSON
    assert_eq!(
        one(s, false, Value::Set(1 << 40 | 1)),
        AV::Array(vec![AV::String("a".into())])
    );
    assert_eq!(
        one(K::Json, false, Value::Json("{\"a\":1}".into())),
        AV::String("{\"a\":1}".into())
    );
    assert_eq!(one(K::Json, true, Value::Null), null());
}

#[test]
fn avro_enums() {
    let opts = AvroOptions {
        enum_as_avro_enum: true,
    };
    let e = ColumnKind::Enum {
        values: vec!["small".into(), "large".into()],
    };
    let t = ctx_with(
        vec![col("size", e.clone(), true), col("other", e.clone(), false)],
        vec![1],
        opts,
    );
    let row = [Value::Enum(2), Value::Enum(1)];
    let got = after_of(&t, &row);
    assert_eq!(field(&got, "size"), some(AV::Enum(1, "large".into())));
    assert_eq!(field(&got, "other"), AV::Enum(0, "small".into()));
    let avro = t.avro.as_ref().unwrap();
    assert!(avro.value.schema_json.contains(r#""name":"size_enum""#));
    let key = AvroEncoder::new("p")
        .key(&t, Some(3), Some(&row))
        .unwrap()
        .unwrap();
    assert_eq!(
        fields(decode(&avro.key.as_ref().unwrap().schema_json, 3, &key)),
        vec![("other".to_string(), AV::Enum(0, "small".into()))]
    );
    // MySQL's invalid-value index 0 has no symbol
    let err = AvroEncoder::new("p")
        .envelope(
            1,
            &input(
                &t,
                &meta(),
                Op::Create,
                None,
                Some(&[Value::Enum(0), Value::Enum(1)]),
                0,
            ),
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("ENUM index 0") && err.contains("`size`"),
        "{err}"
    );
    // members that are not symbols are refused when the schema is derived
    let schema = TableSchema {
        db: "shop".into(),
        table: "t".into(),
        columns: vec![col(
            "size",
            ColumnKind::Enum {
                values: vec!["x-large".into()],
            },
            false,
        )],
        primary_key: vec![],
    };
    let err = AvroTable::new(&schema, &[], "shop.t", opts)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("x-large") && err.contains("shop.t") && err.contains("`size`"),
        "{err}"
    );
    // as strings they are fine
    assert!(AvroTable::new(&schema, &[], "shop.t", AvroOptions::default()).is_ok());
}

#[test]
fn geometry_and_vectors() {
    let mut point = 4326i32.to_le_bytes().to_vec();
    point.extend([1, 1, 0, 0, 0]);
    let t = ctx(
        vec![
            col("g1", ColumnKind::Geometry, false),
            col("g2", ColumnKind::Geometry, true),
            col(
                "v",
                ColumnKind::Vector {
                    dimensions: Some(2),
                },
                false,
            ),
        ],
        vec![0],
    );
    let vector: Vec<u8> = [1.5f32, -2.0]
        .iter()
        .flat_map(|f| f.to_le_bytes())
        .collect();
    let got = after_of(
        &t,
        &[
            Value::Geometry(point),
            Value::Geometry(vec![0, 0, 0, 0, 9]),
            Value::Bytes(vector),
        ],
    );
    assert_eq!(
        field(&got, "g1"),
        AV::Record(vec![
            ("wkb".into(), AV::Bytes(vec![1, 1, 0, 0, 0])),
            ("srid".into(), some(AV::Int(4326)))
        ])
    );
    assert_eq!(
        field(&got, "g2"),
        some(AV::Record(vec![
            ("wkb".into(), AV::Bytes(vec![9])),
            ("srid".into(), null())
        ]))
    );
    assert_eq!(
        field(&got, "v"),
        AV::Array(vec![AV::Float(1.5), AV::Float(-2.0)])
    );
    // the named geometry record is defined once per document
    let value = &t.avro.as_ref().unwrap().value.schema_json;
    assert_eq!(value.matches(r#""name":"Geometry""#).count(), 1);
    let key = &t.avro.as_ref().unwrap().key.as_ref().unwrap().schema_json;
    assert_eq!(key.matches(r#""name":"Geometry""#).count(), 1);
}

#[test]
fn nulls_and_type_mismatches_are_errors_not_guesses() {
    let err = enc_err(ColumnKind::Int { unsigned: false }, false, Value::Null);
    assert!(
        err.contains("NULL in a NOT NULL column") && err.contains("`c`"),
        "{err}"
    );
    let err = enc_err(
        ColumnKind::Int { unsigned: false },
        false,
        Value::Bytes(vec![1]),
    );
    assert!(err.contains("does not fit"), "{err}");
    let err = enc_err(
        ColumnKind::Int { unsigned: false },
        false,
        Value::Int(1 << 40),
    );
    assert!(err.contains("out of range"), "{err}");
    // Missing in a nullable column is null, as in JSON
    assert_eq!(
        one(ColumnKind::Int { unsigned: false }, true, Value::Missing),
        null()
    );
    // a JSON-routed table has no Avro plan
    let schema = TableSchema {
        db: "shop".into(),
        table: "t".into(),
        columns: vec![col("a", utf8(), true)],
        primary_key: vec![],
    };
    let t = TableCtx::new(
        Arc::new(schema),
        route("shop.t", Format::Json, AvroOptions::default()),
        vec![],
    )
    .unwrap();
    assert!(t.avro.is_none());
    assert!(AvroEncoder::new("p").key(&t, None, None).is_err());
}

// ---------------------------------------------------------------------------------------------
// envelope, records, schema

#[test]
fn envelope_source_and_transaction() {
    let t = ctx(
        vec![col("id", ColumnKind::Int { unsigned: false }, false)],
        vec![0],
    );
    let env = envelope_of(&t, Some(&[Value::Int(1)]), None);
    assert_eq!(field(&env, "after"), null());
    assert_eq!(field(&env, "op"), AV::String("d".into()));
    assert_eq!(field(&env, "ts_ms"), some(AV::Long(99_123)));
    assert_eq!(field(&env, "ts_us"), some(AV::Long(99_123_456)));
    assert_eq!(field(&env, "ts_ns"), some(AV::Long(99_123_456_789)));
    assert_eq!(
        field(&env, "source"),
        AV::Record(vec![
            (
                "version".into(),
                AV::String(env!("CARGO_PKG_VERSION").into())
            ),
            ("connector".into(), AV::String("mysql".into())),
            ("name".into(), AV::String("shop".into())),
            ("ts_ms".into(), AV::Long(1_709_288_430_123)),
            ("snapshot".into(), AV::String("false".into())),
            ("db".into(), AV::String("shop".into())),
            ("sequence".into(), null()),
            ("ts_us".into(), some(AV::Long(1_709_288_430_123_456))),
            ("ts_ns".into(), some(AV::Long(1_709_288_430_123_456_000))),
            ("table".into(), AV::String("t".into())),
            ("server_id".into(), AV::Long(7)),
            (
                "gtid".into(),
                some(AV::String("3e11fa47-71ca-11e1-9e33-c80aa9429562:23".into()))
            ),
            ("file".into(), AV::String("mysql-bin.000003".into())),
            ("pos".into(), AV::Long(1234)),
            ("row".into(), AV::Int(2)),
            ("thread".into(), some(AV::Long(17))),
            ("query".into(), null()),
        ])
    );
    assert_eq!(
        field(&env, "transaction"),
        some(AV::Record(vec![
            (
                "id".into(),
                AV::String("3e11fa47-71ca-11e1-9e33-c80aa9429562:23".into())
            ),
            ("total_order".into(), AV::Long(3)),
            ("data_collection_order".into(), AV::Long(1)),
        ]))
    );
    // without GTID and thread
    let m = TxnMeta {
        gtid: None,
        thread: None,
        ..meta()
    };
    let bytes = AvroEncoder::new("shop")
        .envelope(
            42,
            &input(&t, &m, Op::Create, None, Some(&[Value::Int(1)]), NS),
        )
        .unwrap();
    let env = fields(decode(
        &t.avro.as_ref().unwrap().value.schema_json,
        42,
        &bytes,
    ));
    let AV::Record(src) = field(&env, "source") else {
        panic!()
    };
    assert_eq!(field(&src, "gtid"), null());
    assert_eq!(field(&src, "thread"), null());
    let AV::Union(1, tx) = field(&env, "transaction") else {
        panic!()
    };
    assert_eq!(
        field(&fields(*tx), "id"),
        AV::String("mysql-bin.000003:100".into())
    );
}

#[test]
fn snapshot_read_has_a_null_transaction() {
    let t = ctx(
        vec![col("id", ColumnKind::Int { unsigned: false }, false)],
        vec![0],
    );
    let bytes = AvroEncoder::new("shop")
        .envelope(
            42,
            &Envelope {
                row_pos: RowPos {
                    snapshot: crate::model::SnapshotMark::FirstInDataCollection,
                    ..RP
                },
                ..input(&t, &meta(), Op::Read, None, Some(&[Value::Int(1)]), NS)
            },
        )
        .unwrap();
    let env = fields(decode(
        &t.avro.as_ref().unwrap().value.schema_json,
        42,
        &bytes,
    ));
    assert_eq!(field(&env, "op"), AV::String("r".into()));
    assert_eq!(field(&env, "transaction"), null());
    // The read's place in the snapshot, as `source.snapshot`.
    assert_eq!(
        field(&fields(field(&env, "source")), "snapshot"),
        AV::String("first_in_data_collection".into())
    );
}

#[test]
fn records_follow_the_shared_op_logic() {
    let t = ctx(
        vec![
            col("id", ColumnKind::Int { unsigned: false }, false),
            col("name", utf8(), true),
        ],
        vec![0],
    );
    let ids = SchemaIds {
        key: Some(7),
        value: 8,
    };
    let enc = AvroEncoder::new("shop");
    let row = |id: i64| vec![Value::Int(id), Value::Bytes(b"x".to_vec())];
    let run = |kind, image: RowImage| {
        let mut out = Vec::new();
        enc.encode(
            &RowChange {
                table: &t,
                meta: &meta(),
                kind,
                row: &image,
                row_pos: RowPos {
                    source_ts_us: meta().ts_us,
                    pos: 1,
                    row: 0,
                    total_order: 1,
                    data_collection_order: 1,
                    snapshot: crate::model::SnapshotMark::False,
                },
            },
            ids,
            &mut out,
        )
        .unwrap();
        out.into_iter()
            .map(|r| {
                let key = r.key.map(|k| {
                    fields(decode(
                        &t.avro.as_ref().unwrap().key.as_ref().unwrap().schema_json,
                        7,
                        &k,
                    ))
                });
                let op = r.value.map(|v| {
                    field(
                        &fields(decode(&t.avro.as_ref().unwrap().value.schema_json, 8, &v)),
                        "op",
                    )
                });
                (key, op)
            })
            .collect::<Vec<_>>()
    };
    let k = |id: i32| Some(vec![("id".to_string(), AV::Int(id))]);
    let op = |c: &str| Some(AV::String(c.into()));
    assert_eq!(
        run(
            RowsKind::Insert,
            RowImage {
                before: None,
                after: Some(row(1))
            }
        ),
        vec![(k(1), op("c"))]
    );
    assert_eq!(
        run(
            RowsKind::Delete,
            RowImage {
                before: Some(row(1)),
                after: None
            }
        ),
        vec![(k(1), op("d")), (k(1), None)]
    );
    assert_eq!(
        run(
            RowsKind::Update,
            RowImage {
                before: Some(row(1)),
                after: Some(row(1))
            }
        ),
        vec![(k(1), op("u"))]
    );
    assert_eq!(
        run(
            RowsKind::Update,
            RowImage {
                before: Some(row(1)),
                after: Some(row(2))
            }
        ),
        vec![(k(1), op("d")), (k(1), None), (k(2), op("c"))]
    );
    // a table with key columns needs a key schema id
    let mut out = Vec::new();
    let err = enc
        .encode(
            &RowChange {
                table: &t,
                meta: &meta(),
                kind: RowsKind::Insert,
                row: &RowImage {
                    before: None,
                    after: Some(row(1)),
                },
                row_pos: RowPos {
                    source_ts_us: meta().ts_us,
                    pos: 1,
                    row: 0,
                    total_order: 1,
                    data_collection_order: 1,
                    snapshot: crate::model::SnapshotMark::False,
                },
            },
            SchemaIds {
                key: None,
                value: 8,
            },
            &mut out,
        )
        .unwrap_err();
    assert!(err.to_string().contains("no key schema id"), "{err}");
}

#[test]
fn schemas_parse_and_are_named_after_the_topic() {
    let columns = matrix();
    let schema = TableSchema {
        db: "shop".into(),
        table: "t".into(),
        columns,
        primary_key: vec![0, 5],
    };
    let avro = AvroTable::new(
        &schema,
        &[0, 5],
        "cdc.shop-1.9orders",
        AvroOptions::default(),
    )
    .unwrap();
    assert_eq!(avro.namespace, "cdc.shop_1._9orders");
    assert_eq!(avro.value.full_name, "cdc.shop_1._9orders.Envelope");
    let key = avro.key.as_ref().unwrap();
    assert_eq!(key.full_name, "cdc.shop_1._9orders.Key");
    let v = Schema::parse_str(&avro.value.schema_json).unwrap();
    assert_eq!(v.name().unwrap().fullname(None), avro.value.full_name);
    let k = Schema::parse_str(&key.schema_json).unwrap();
    assert_eq!(k.name().unwrap().fullname(None), key.full_name);
    // deterministic text
    let again = AvroTable::new(
        &schema,
        &[0, 5],
        "cdc.shop-1.9orders",
        AvroOptions::default(),
    )
    .unwrap();
    assert_eq!(again.value, avro.value);
    assert_eq!(again.key, avro.key);
    // envelope fields in Debezium 3.5's order, as the JSON encoder writes them
    let doc: J = serde_json::from_str(&avro.value.schema_json).unwrap();
    let names: Vec<&str> = doc["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        crate::encode::envelope::ENVELOPE_FIELDS.map(|f| f.name())
    );
    assert_eq!(
        doc["fields"][1]["type"],
        json!(["null", "cdc.shop_1._9orders.Value"])
    );
}

#[test]
fn type_mapping_in_the_schema() {
    let t = ctx(matrix(), vec![]);
    let doc: J = serde_json::from_str(&t.avro.as_ref().unwrap().value.schema_json).unwrap();
    let fields = doc["fields"][0]["type"][1]["fields"]
        .as_array()
        .unwrap()
        .clone();
    let ty = |name: &str| {
        let f = fields.iter().find(|f| f["name"] == name).unwrap();
        match &f["type"] {
            J::Array(u) => u[1].clone(),
            t => t.clone(),
        }
    };
    assert_eq!(ty("ti"), json!("int"));
    assert_eq!(ty("miu"), json!("int"));
    assert_eq!(ty("i"), json!("int"));
    assert_eq!(ty("iu"), json!("long"));
    assert_eq!(ty("bi"), json!("long"));
    assert_eq!(
        ty("biu"),
        json!({"type": "bytes", "logicalType": "decimal", "precision": 20, "scale": 0})
    );
    assert_eq!(
        ty("d"),
        json!({"type": "bytes", "logicalType": "decimal", "precision": 65, "scale": 30})
    );
    assert_eq!(ty("f"), json!("float"));
    assert_eq!(ty("db"), json!("double"));
    assert_eq!(ty("dt"), json!({"type": "int", "logicalType": "date"}));
    assert_eq!(
        ty("tm"),
        json!({"type": "long", "connect.version": 1, "connect.name": "io.debezium.time.MicroTime"})
    );
    assert_eq!(
        ty("dtm6"),
        json!({"type": "long", "logicalType": "local-timestamp-micros"})
    );
    assert_eq!(
        ty("ts0"),
        json!({"type": "long", "logicalType": "timestamp-micros"})
    );
    assert_eq!(ty("y"), json!("int"));
    assert_eq!(ty("s"), json!("string"));
    assert_eq!(ty("vb"), json!("bytes"));
    assert_eq!(ty("e"), json!("string"));
    assert_eq!(ty("st"), json!({"type": "array", "items": "string"}));
    assert_eq!(
        ty("j"),
        json!({"type": "string", "connect.version": 1, "connect.name": "io.debezium.data.Json"})
    );
    assert_eq!(ty("b1"), json!("boolean"));
    assert_eq!(ty("b64")["type"], json!("bytes"));
    assert_eq!(ty("g")["name"], json!("Geometry"));
    assert_eq!(ty("v")["items"], json!("float"));
    // NOT NULL stays non-null, nullable is ["null", T] with default null
    let ti = fields.iter().find(|f| f["name"] == "ti").unwrap();
    assert_eq!(ti["type"], json!("int"));
    assert!(ti.get("default").is_none());
    let tiu = fields.iter().find(|f| f["name"] == "tiu").unwrap();
    assert_eq!(tiu["type"], json!(["null", "int"]));
    assert_eq!(tiu["default"], J::Null);
}

#[test]
fn names_are_sanitized_and_collisions_refused() {
    assert_eq!(schema::avro_name("order id"), "order_id");
    assert_eq!(schema::avro_name("1st"), "_1st");
    assert_eq!(schema::avro_name("prix€"), "prix_");
    assert_eq!(schema::avro_name(""), "_");
    assert_eq!(schema::avro_namespace("a..b"), "a._.b");
    assert_eq!(schema::avro_namespace("my-topic"), "my_topic");
    let t = ctx(
        vec![col("order id", utf8(), true), col("1st", utf8(), true)],
        vec![],
    );
    let got = after_of(&t, &[Value::Null, Value::Bytes(b"x".to_vec())]);
    assert_eq!(got[0].0, "order_id");
    assert_eq!(got[1].0, "_1st");
    let schema = TableSchema {
        db: "shop".into(),
        table: "t".into(),
        columns: vec![col("a-b", utf8(), true), col("a b", utf8(), true)],
        primary_key: vec![],
    };
    let err = AvroTable::new(&schema, &[], "shop.t", AvroOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`a-b`")
            && err.contains("`a b`")
            && err.contains("shop.t")
            && err.contains("`a_b`"),
        "{err}"
    );
    // and TableCtx::new reports it
    let r = TableCtx::new(
        Arc::new(schema),
        route("shop.t", Format::Avro, AvroOptions::default()),
        vec![],
    );
    assert!(r.is_err());
}

#[test]
fn keyless_tables_have_no_key_schema_and_null_keys() {
    let t = ctx(vec![col("a", utf8(), true)], vec![]);
    assert!(t.avro.as_ref().unwrap().key.is_none());
    assert_eq!(
        AvroEncoder::new("p")
            .key(&t, None, Some(&[Value::Null]))
            .unwrap(),
        None
    );
}

#[test]
fn embedded_fixed_schemas_equal_the_files() {
    let source_file = include_str!("../../../schemas/source.avsc");
    let transaction_file = include_str!("../../../schemas/transaction.avsc");
    for (file, code) in [
        (source_file, schema::SOURCE_SCHEMA),
        (transaction_file, schema::TRANSACTION_SCHEMA),
    ] {
        // Same JSON document (attributes and defaults included) and the same Avro schema.
        assert_eq!(
            serde_json::from_str::<J>(file).unwrap(),
            serde_json::from_str::<J>(code).unwrap()
        );
        assert_eq!(
            Schema::parse_str(file).unwrap(),
            Schema::parse_str(code).unwrap()
        );
    }
    let source: J = serde_json::from_str(source_file).unwrap();
    let names: Vec<&str> = source["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        crate::encode::envelope::SOURCE_FIELDS.map(|f| f.name())
    );
    // and they are what every envelope schema embeds
    let t = ctx(
        vec![col("id", ColumnKind::Int { unsigned: false }, false)],
        vec![0],
    );
    let doc: J = serde_json::from_str(&t.avro.as_ref().unwrap().value.schema_json).unwrap();
    assert_eq!(doc["fields"][2]["name"], json!("source"));
    assert_eq!(
        doc["fields"][2]["type"],
        serde_json::from_str::<J>(source_file).unwrap()
    );
    assert_eq!(doc["fields"][3]["name"], json!("transaction"));
    assert_eq!(
        doc["fields"][3]["type"],
        json!(["null", serde_json::from_str::<J>(transaction_file).unwrap()])
    );
}

/// SRID + little-endian WKB of a 2D point, as the server stores it.
fn stored_point(srid: i32, x: f64, y: f64) -> Vec<u8> {
    let mut v = srid.to_le_bytes().to_vec();
    v.push(1);
    v.extend(1u32.to_le_bytes());
    v.extend(x.to_le_bytes());
    v.extend(y.to_le_bytes());
    v
}

/// POINT: Debezium's `io.debezium.data.geometry.Point` record (x, y, optional wkb, optional
/// srid, in that order); a value that is not a 2D point is null in a nullable column and an
/// error in a NOT NULL one.
#[test]
fn point_is_debeziums_point_record() {
    let p = stored_point(3857, 1.5, -2.25);
    assert_eq!(
        one(ColumnKind::Point, false, Value::Geometry(p.clone())),
        AV::Record(vec![
            ("x".into(), AV::Double(1.5)),
            ("y".into(), AV::Double(-2.25)),
            ("wkb".into(), some(AV::Bytes(p[4..].to_vec()))),
            ("srid".into(), some(AV::Int(3857))),
        ])
    );
    assert_eq!(
        one(
            ColumnKind::Point,
            true,
            Value::Geometry(stored_point(0, 0.0, 0.0))
        ),
        some(AV::Record(vec![
            ("x".into(), AV::Double(0.0)),
            ("y".into(), AV::Double(0.0)),
            (
                "wkb".into(),
                some(AV::Bytes(stored_point(0, 0.0, 0.0)[4..].to_vec()))
            ),
            ("srid".into(), null()),
        ]))
    );
    let line = stored_point(0, 1.0, 1.0)[..20].to_vec();
    assert_eq!(
        one(ColumnKind::Point, true, Value::Geometry(line.clone())),
        null()
    );
    let err = enc_err(ColumnKind::Point, false, Value::Geometry(line));
    assert!(err.contains("not a 2D point"), "{err}");
    // Two POINT columns: the record is defined once, then named.
    let t = ctx(
        vec![
            col("a", ColumnKind::Point, true),
            col("b", ColumnKind::Point, true),
        ],
        vec![],
    );
    let schema = &t.avro.as_ref().unwrap().value.schema_json;
    assert_eq!(schema.matches(r#""name":"Point""#).count(), 1, "{schema}");
    assert!(schema.contains(r#""connect.name":"io.debezium.data.geometry.Point""#));
}
