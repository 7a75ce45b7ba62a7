//! Encoding cost per row change (an insert: one key and one envelope) for a representative
//! 11-column table: the JSON encoder, the Avro encoder, and, for comparison, apache-avro's
//! generic path (an `apache_avro::types::Value` built per row, then written with the schema),
//! once with a writer set up per row (`to_avro_datum`) and once with one writer reused.
//!
//! `cargo bench --bench encode`; each iteration encodes one row, so the times are per row.

use std::sync::Arc;
use std::time::Duration;

use apache_avro::types::Value as AV;
use apache_avro::{Decimal, Schema};
use criterion::{criterion_group, criterion_main, Criterion};

use sluice::binlog::rows::{RowImage, RowsKind};
use sluice::config::route::RouteTarget;
use sluice::config::Format;
use sluice::encode::avro::{AvroEncoder, AvroOptions, SchemaIds};
use sluice::encode::json::JsonEncoder;
use sluice::encode::json_value::days_from_civil;
use sluice::pipeline::{TableCtx, TxnMeta};
use sluice::schema::{Column, ColumnKind, TableSchema};
use sluice::value::Value;

fn col(name: &str, kind: ColumnKind, nullable: bool) -> Column {
    Column {
        name: name.into(),
        kind,
        nullable,
    }
}

fn utf8(max_bytes: u16) -> ColumnKind {
    ColumnKind::String {
        charset: 255,
        binary: false,
        fixed: false,
        max_bytes,
    }
}

fn table(format: Format) -> TableCtx {
    table_with(format, false)
}

fn table_with(format: Format, json_schemas: bool) -> TableCtx {
    let schema = TableSchema {
        db: "shop".into(),
        table: "orders".into(),
        columns: vec![
            col("id", ColumnKind::BigInt { unsigned: false }, false),
            col("customer_id", ColumnKind::Int { unsigned: false }, false),
            col("external_ref", ColumnKind::BigInt { unsigned: true }, true),
            col(
                "total",
                ColumnKind::Decimal {
                    precision: 12,
                    scale: 2,
                },
                false,
            ),
            col("customer_name", utf8(400), false),
            col("created_at", ColumnKind::DateTime { fsp: 6 }, false),
            col("updated_at", ColumnKind::Timestamp { fsp: 0 }, false),
            col("attributes", ColumnKind::Json, true),
            col(
                "status",
                ColumnKind::Enum {
                    values: vec!["new".into(), "paid".into(), "shipped".into()],
                },
                false,
            ),
            col("note", utf8(1000), true),
            col("weight", ColumnKind::Double, true),
        ],
        primary_key: vec![0],
    };
    let route = RouteTarget {
        on_schema_change: Default::default(),
        topic: "shop.orders".into(),
        format,
        key_columns: vec![],
        tombstones: true,
        avro: AvroOptions::default(),
        json_schemas,
        rules: Default::default(),
    };
    TableCtx::new(Arc::new(schema), route, vec![0]).expect("table")
}

fn rows(n: usize) -> Vec<RowImage> {
    (0..n)
        .map(|i| {
            let i64v = i as i64;
            let after = vec![
                Value::Int(1_000_000 + i64v),
                Value::Int(4242 + i64v % 100),
                if i % 4 == 0 {
                    Value::Null
                } else {
                    Value::UInt(u64::MAX - i as u64)
                },
                Value::Decimal(format!("{}.{:02}", 100 + i * 7, i % 100)),
                Value::Bytes(format!("Customer Name {i}").into_bytes()),
                Value::DateTime {
                    year: 2024,
                    month: 3,
                    day: 1 + (i % 28) as u8,
                    hour: 10,
                    minute: 20,
                    second: (i % 60) as u8,
                    micros: (i as u32 * 1013) % 1_000_000,
                },
                Value::Timestamp {
                    secs: 1_709_288_430 + i64v,
                    micros: 0,
                },
                if i % 3 == 0 {
                    Value::Null
                } else {
                    Value::Json(format!(
                        "{{\"gift\":{},\"tags\":[\"a\",\"b\"],\"n\":{i}}}",
                        i % 2 == 0
                    ))
                },
                Value::Enum(1 + (i % 3) as u16),
                if i % 2 == 0 {
                    Value::Null
                } else {
                    Value::Bytes(b"leave at the door, ring twice".to_vec())
                },
                if i % 5 == 0 {
                    Value::Null
                } else {
                    Value::Double(1.25 * i as f64)
                },
            ];
            RowImage {
                before: None,
                after: Some(after),
            }
        })
        .collect()
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

/// A column value as apache-avro's generic value of the derived schema.
fn generic(kind: &ColumnKind, nullable: bool, v: &Value) -> AV {
    let inner = match (kind, v) {
        (_, Value::Null) => return AV::Union(0, Box::new(AV::Null)),
        (ColumnKind::BigInt { unsigned: false }, Value::Int(i)) => AV::Long(*i),
        (_, Value::Int(i)) => AV::Int(*i as i32),
        (ColumnKind::BigInt { unsigned: true }, Value::UInt(u)) => {
            let mut be = vec![0u8];
            be.extend(u.to_be_bytes());
            AV::Decimal(Decimal::from(be))
        }
        (ColumnKind::Decimal { .. }, Value::Decimal(s)) => {
            let unscaled: i128 = s.replace('.', "").parse().expect("decimal");
            // minimal two's complement (the values here are positive)
            let be = unscaled.to_be_bytes();
            let mut start = 0;
            while start + 1 < be.len() && be[start] == 0 && be[start + 1] < 0x80 {
                start += 1;
            }
            AV::Decimal(Decimal::from(&be[start..]))
        }
        (_, Value::Bytes(b)) => AV::String(String::from_utf8_lossy(b).into_owned()),
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
        ) => {
            let secs = days_from_civil(i64::from(*year), *month, *day) * 86_400
                + i64::from(*hour) * 3600
                + i64::from(*minute) * 60
                + i64::from(*second);
            return AV::Union(
                1,
                Box::new(AV::LocalTimestampMicros(
                    secs * 1_000_000 + i64::from(*micros),
                )),
            );
        }
        (_, Value::Timestamp { secs, micros }) => {
            AV::TimestampMicros(secs * 1_000_000 + i64::from(*micros))
        }
        (_, Value::Json(s)) => AV::String(s.clone()),
        (ColumnKind::Enum { values }, Value::Enum(i)) => {
            AV::String(values[usize::from(*i) - 1].clone())
        }
        (_, Value::Double(d)) => AV::Double(*d),
        (k, v) => panic!("{k:?} {v:?}"),
    };
    if nullable {
        AV::Union(1, Box::new(inner))
    } else {
        inner
    }
}

/// Key and envelope as generic values.
/// The records apache-avro's generic writer makes of `row`, processed at `ts_ns`.
fn generic_records(t: &TableCtx, m: &TxnMeta, row: &[Value], ts_ns: u64) -> (AV, AV) {
    let cols = &t.schema.columns;
    let after: Vec<(String, AV)> = cols
        .iter()
        .zip(row)
        .map(|(c, v)| (c.name.clone(), generic(&c.kind, c.nullable, v)))
        .collect();
    let key = AV::Record(vec![(
        cols[0].name.clone(),
        generic(&cols[0].kind, false, &row[0]),
    )]);
    let some = |v: AV| AV::Union(1, Box::new(v));
    let source = AV::Record(vec![
        (
            "version".into(),
            AV::String(env!("CARGO_PKG_VERSION").into()),
        ),
        ("connector".into(), AV::String(m.connector.into())),
        ("name".into(), AV::String("shop".into())),
        ("ts_ms".into(), AV::Long((m.ts_us / 1000) as i64)),
        ("snapshot".into(), AV::String("false".into())),
        ("db".into(), AV::String(t.schema.db.clone())),
        ("sequence".into(), AV::Union(0, Box::new(AV::Null))),
        ("ts_us".into(), some(AV::Long(m.ts_us as i64))),
        ("ts_ns".into(), some(AV::Long(m.ts_us as i64 * 1000))),
        ("table".into(), AV::String(t.schema.table.clone())),
        ("server_id".into(), AV::Long(i64::from(m.server_id))),
        (
            "gtid".into(),
            some(AV::String(m.gtid.clone().unwrap_or_default())),
        ),
        ("file".into(), AV::String(m.file.to_string())),
        ("pos".into(), AV::Long(1234)),
        ("row".into(), AV::Int(0)),
        ("thread".into(), some(AV::Long(17))),
        ("query".into(), AV::Union(0, Box::new(AV::Null))),
    ]);
    let value = AV::Record(vec![
        ("before".into(), AV::Union(0, Box::new(AV::Null))),
        ("after".into(), some(AV::Record(after))),
        ("source".into(), source),
        (
            "transaction".into(),
            some(AV::Record(vec![
                ("id".into(), AV::String(m.id())),
                ("total_order".into(), AV::Long(1)),
                ("data_collection_order".into(), AV::Long(1)),
            ])),
        ),
        ("op".into(), AV::String("c".into())),
        ("ts_ms".into(), some(AV::Long((ts_ns / 1_000_000) as i64))),
        ("ts_us".into(), some(AV::Long((ts_ns / 1000) as i64))),
        ("ts_ns".into(), some(AV::Long(ts_ns as i64))),
    ]);
    (key, value)
}

fn framed(id: u32, mut datum: Vec<u8>) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + datum.len());
    out.push(0);
    out.extend_from_slice(&id.to_be_bytes());
    out.append(&mut datum);
    out
}

fn bench(c: &mut Criterion) {
    let rows = rows(64);
    let m = meta();
    let mut g = c.benchmark_group("encode_insert_per_row");

    let json_t = table(Format::Json);
    let json = JsonEncoder::new("shop");
    let mut out = Vec::with_capacity(4);
    let mut i = 0usize;
    g.bench_function("json", |b| {
        b.iter(|| {
            out.clear();
            let row = &rows[i % rows.len()];
            i += 1;
            json.encode(&insert(&json_t, &m, row), &mut out);
            std::hint::black_box(&out);
        })
    });

    // The same with the Connect schemas: the per-table prefix is copied, not recomputed.
    let schemas_t = table_with(Format::Json, true);
    g.bench_function("json_schemas", |b| {
        b.iter(|| {
            out.clear();
            let row = &rows[i % rows.len()];
            i += 1;
            json.encode(&insert(&schemas_t, &m, row), &mut out);
            std::hint::black_box(&out);
        })
    });

    let avro_t = table(Format::Avro);
    let avro = AvroEncoder::new("shop");
    let ids = SchemaIds {
        key: Some(1),
        value: 2,
    };
    g.bench_function("avro", |b| {
        b.iter(|| {
            out.clear();
            let row = &rows[i % rows.len()];
            i += 1;
            avro.encode(&insert(&avro_t, &m, row), ids, &mut out)
                .expect("encode");
            std::hint::black_box(&out);
        })
    });

    let doc = avro_t.avro.as_ref().expect("avro plan");
    let key_schema =
        Schema::parse_str(&doc.key.as_ref().expect("key").schema_json).expect("key schema");
    let value_schema = Schema::parse_str(&doc.value.schema_json).expect("value schema");
    // The generic path must write exactly what the hand-written encoder writes.
    {
        let ts = 1_709_288_430_123_456_789;
        let row = rows[1].after.as_deref().expect("row");
        let (k, v) = generic_records(&avro_t, &m, row, ts);
        #[allow(deprecated)]
        let generic_value = framed(
            2,
            apache_avro::to_avro_datum(&value_schema, v).expect("generic value"),
        );
        let rp = sluice::encode::change::RowPos {
            source_ts_us: 1_709_288_430_123_456,
            pos: 1234,
            row: 0,
            total_order: 1,
            data_collection_order: 1,
            snapshot: sluice::model::SnapshotMark::False,
        };
        let ours = avro
            .envelope(
                2,
                &sluice::encode::change::Envelope {
                    table: &avro_t,
                    meta: &m,
                    op: sluice::encode::change::Op::Create,
                    before: None,
                    after: Some(row),
                    row_pos: rp,
                    ts: sluice::encode::envelope::EventTime { ns: ts },
                },
            )
            .expect("envelope");
        assert_eq!(
            generic_value, ours,
            "generic and hand-written values differ"
        );
        #[allow(deprecated)]
        let generic_key = framed(1, apache_avro::to_avro_datum(&key_schema, k).expect("key"));
        assert_eq!(
            Some(generic_key),
            avro.key(&avro_t, Some(1), Some(row)).expect("key")
        );
    }

    g.bench_function("apache_avro_value_to_avro_datum", |b| {
        b.iter(|| {
            let row = rows[i % rows.len()].after.as_deref().expect("row");
            i += 1;
            let (k, v) = generic_records(&avro_t, &m, row, 1_709_288_430_123_456_789);
            #[allow(deprecated)]
            let key = framed(1, apache_avro::to_avro_datum(&key_schema, k).expect("key"));
            #[allow(deprecated)]
            let value = framed(
                2,
                apache_avro::to_avro_datum(&value_schema, v).expect("value"),
            );
            std::hint::black_box((key, value));
        })
    });

    let key_writer = apache_avro::writer::datum::GenericDatumWriter::builder(&key_schema)
        .build()
        .expect("key writer");
    let value_writer = apache_avro::writer::datum::GenericDatumWriter::builder(&value_schema)
        .build()
        .expect("value writer");
    g.bench_function("apache_avro_value_reused_writer", |b| {
        b.iter(|| {
            let row = rows[i % rows.len()].after.as_deref().expect("row");
            i += 1;
            let (k, v) = generic_records(&avro_t, &m, row, 1_709_288_430_123_456_789);
            let key = framed(1, key_writer.write_value_to_vec(k).expect("key"));
            let value = framed(2, value_writer.write_value_to_vec(v).expect("value"));
            std::hint::black_box((key, value));
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    targets = bench
}
criterion_main!(benches);

/// The change an insert of `row` at binlog position 1234 is (the first row of its event and
/// of its transaction).
fn insert<'a>(
    table: &'a TableCtx,
    meta: &'a TxnMeta,
    row: &'a RowImage,
) -> sluice::encode::change::RowChange<'a> {
    sluice::encode::change::RowChange {
        table,
        meta,
        kind: RowsKind::Insert,
        row,
        row_pos: sluice::encode::change::RowPos {
            source_ts_us: meta.ts_us,
            pos: 1234,
            row: 0,
            total_order: 1,
            data_collection_order: 1,
            snapshot: sluice::model::SnapshotMark::False,
        },
    }
}
