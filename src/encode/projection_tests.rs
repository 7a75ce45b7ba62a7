//! Projection tests. Expected masks and digests are what Debezium 3.5.0's own
//! `MaskStrings` (`column.mask.with.8.chars`, `column.mask.hash.v2.SHA-256.with.salt.
//! CzQMA0cB5K`, `...v2.MD5.with.salt.salt`) returned for the same inputs.

use std::sync::Arc;

use serde_json::{json, Value as J};

use crate::config::route::RouteTarget;
use crate::config::route_rules::{
    BigintUnsigned, ColumnHashConfig, ColumnMaskConfig, RouteRules, RulesInput,
};
use crate::config::{Format, Secret};
use crate::encode::change::{Record, RowChange, RowPos};
use crate::encode::connect_schema::ConnectSchemas;
use crate::encode::json::JsonEncoder;
use crate::encode::table_ctx::TableCtx;
use crate::model::{RowImage, RowsKind, TxnMeta};
use crate::schema::{Column, ColumnKind, TableSchema};
use crate::value::Value;

fn col(name: &str, kind: ColumnKind, nullable: bool) -> Column {
    Column {
        name: name.into(),
        kind,
        nullable,
    }
}

fn varchar(chars: u16) -> ColumnKind {
    ColumnKind::String {
        charset: 255, // utf8mb4_0900_ai_ci
        binary: false,
        fixed: false,
        max_bytes: chars * 4,
    }
}

fn schema() -> Arc<TableSchema> {
    Arc::new(TableSchema {
        db: "shop".into(),
        table: "users".into(),
        columns: vec![
            col("id", ColumnKind::BigInt { unsigned: true }, false),
            col("email", varchar(255), true),
            col("code", varchar(10), true),
            col(
                "tags",
                ColumnKind::Set {
                    values: vec!["a".into(), "b".into(), "c".into()],
                },
                true,
            ),
            col("age", ColumnKind::Int { unsigned: false }, true),
            col("ssn", varchar(11), true),
        ],
        primary_key: vec![0],
    })
}

fn rules(
    bigint: BigintUnsigned,
    exclude: &[&str],
    mask: &[&str],
    hash: &[(&str, &str, &str)],
) -> RouteRules {
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let exclude = strings(exclude);
    let mask = if mask.is_empty() {
        vec![]
    } else {
        vec![ColumnMaskConfig {
            columns: strings(mask),
            chars: 8,
        }]
    };
    let hash: Vec<ColumnHashConfig> = hash
        .iter()
        .map(|(c, a, s)| ColumnHashConfig {
            columns: vec![c.to_string()],
            algorithm: a.to_string(),
            salt: Secret::new(s.to_string()),
            salt_file: String::new(),
        })
        .collect();
    let input = RulesInput {
        key_change_headers: true,
        bigint_unsigned: bigint,
        skipped_operations: &[],
        column_exclude: &exclude,
        column_mask: &mask,
        column_hash: &hash,
    };
    let mut problems = Vec::new();
    crate::config::route_rules::compile(0, &input, &mut problems).expect("valid rules")
}

fn ctx(rules: RouteRules, format: Format) -> crate::error::Result<TableCtx> {
    let route = RouteTarget {
        topic: "shop.users".into(),
        format,
        key_columns: vec![],
        tombstones: true,
        on_schema_change: Default::default(),
        avro: Default::default(),
        json_schemas: false,
        rules,
    };
    TableCtx::new(schema(), route, vec![0])
}

fn row() -> Vec<Value> {
    vec![
        Value::UInt(u64::MAX),
        Value::Bytes(b"hello".to_vec()),
        Value::Bytes(b"hello".to_vec()),
        Value::Set(0b110),
        Value::Int(42),
        Value::Null,
    ]
}

fn after_of(table: &TableCtx, row: Vec<Value>) -> (J, J) {
    let meta = TxnMeta {
        gtid: None,
        file: "b.000001".into(),
        pos: 4,
        ts_us: 0,
        server_id: 1,
        thread: None,
        connector: "mysql",
    };
    let image = RowImage {
        before: None,
        after: Some(row),
    };
    let change = RowChange {
        table,
        meta: &meta,
        kind: RowsKind::Insert,
        row: &image,
        row_pos: RowPos {
            source_ts_us: meta.ts_us,
            pos: 4,
            row: 0,
            total_order: 1,
            data_collection_order: 1,
            snapshot: crate::model::SnapshotMark::False,
        },
    };
    let mut out: Vec<Record> = Vec::new();
    JsonEncoder::new("p").encode(&change, &mut out);
    let key = serde_json::from_slice(out[0].key.as_deref().unwrap()).unwrap();
    let value: J = serde_json::from_slice(out[0].value.as_deref().unwrap()).unwrap();
    (key, value["after"].clone())
}

#[test]
fn without_rules_the_projection_is_the_table() {
    let t = ctx(RouteRules::default(), Format::Json).unwrap();
    assert!(Arc::ptr_eq(&t.out.schema, &t.schema));
    let (key, after) = after_of(&t, row());
    assert_eq!(key, json!({"id": u64::MAX}));
    assert_eq!(after["id"], json!(u64::MAX));
    assert_eq!(after["email"], json!("hello"));
}

#[test]
fn bigint_unsigned_long_wraps_in_key_value_and_schemas() {
    let t = ctx(rules(BigintUnsigned::Long, &[], &[], &[]), Format::Json).unwrap();
    assert_eq!(
        t.out.schema.columns[0].kind,
        ColumnKind::BigInt { unsigned: false }
    );
    let (key, after) = after_of(&t, row());
    assert_eq!(key, json!({"id": -1}));
    assert_eq!(after["id"], json!(-1));
    let mut small = row();
    small[0] = Value::UInt(i64::MAX as u64);
    assert_eq!(after_of(&t, small).0, json!({"id": i64::MAX}));
    let connect = ConnectSchemas::new(&t.out.schema, &t.out.key_idx, "shop.users", "mysql");
    let key_schema: J = serde_json::from_str(&(connect.key_prefix.unwrap() + "null}")).unwrap();
    assert_eq!(key_schema["schema"]["fields"][0]["type"], json!("int64"));
    // Avro: `long` instead of decimal(20,0).
    let avro = ctx(rules(BigintUnsigned::Long, &[], &[], &[]), Format::Avro).unwrap();
    let key_avro = &avro
        .avro
        .as_ref()
        .unwrap()
        .key
        .as_ref()
        .unwrap()
        .schema_json;
    assert!(key_avro.contains(r#""type":"long""#), "{key_avro}");
    let exact = ctx(RouteRules::default(), Format::Avro).unwrap();
    let key_exact = &exact
        .avro
        .as_ref()
        .unwrap()
        .key
        .as_ref()
        .unwrap()
        .schema_json;
    assert!(!key_exact.contains(r#""type":"long""#), "{key_exact}");
}

#[test]
fn excluded_columns_disappear_everywhere() {
    let t = ctx(
        rules(
            BigintUnsigned::Exact,
            &[r"shop\.users\.(ssn|age)"],
            &[],
            &[],
        ),
        Format::Json,
    )
    .unwrap();
    let names: Vec<&str> = t
        .out
        .schema
        .columns
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["id", "email", "code", "tags"]);
    let (_, after) = after_of(&t, row());
    assert_eq!(
        after,
        json!({"id": u64::MAX, "email": "hello", "code": "hello", "tags": "b,c"})
    );
    let connect = ConnectSchemas::new(&t.out.schema, &t.out.key_idx, "shop.users", "mysql");
    assert!(!connect.value_prefix.contains("\"ssn\""));
    // Whole-name match: `users\.ss` does not match `ssn`, another table does not match.
    let t = ctx(
        rules(
            BigintUnsigned::Exact,
            &[r"shop\.users\.ss", r"shop\.other\.ssn"],
            &[],
            &[],
        ),
        Format::Json,
    )
    .unwrap();
    assert_eq!(t.out.schema.columns.len(), 6);
}

#[test]
fn key_columns_cannot_be_excluded_masked_or_hashed() {
    let err = ctx(
        rules(BigintUnsigned::Exact, &[r".*\.id"], &[], &[]),
        Format::Json,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("`id`") && err.contains("key column"), "{err}");
    let mut schema = (*schema()).clone();
    schema.columns[1].nullable = false;
    let route = RouteTarget {
        topic: "t".into(),
        format: Format::Json,
        key_columns: vec![],
        tombstones: true,
        on_schema_change: Default::default(),
        avro: Default::default(),
        json_schemas: false,
        rules: rules(BigintUnsigned::Exact, &[], &[r".*\.email"], &[]),
    };
    let err = TableCtx::new(Arc::new(schema), route, vec![1])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`email`") && err.contains("masked or hashed"),
        "{err}"
    );
}

#[test]
fn masks_and_hashes_are_debeziums() {
    let t = ctx(
        rules(
            BigintUnsigned::Exact,
            &[],
            &[r".*\.(ssn|age)"],
            &[
                (r".*\.email", "SHA-256", "CzQMA0cB5K"),
                (r".*\.code", "sha-256", "CzQMA0cB5K"),
                (r".*\.tags", "MD5", "salt"),
            ],
        ),
        Format::Json,
    )
    .unwrap();
    let (_, after) = after_of(&t, row());
    assert_eq!(
        after,
        json!({
            "id": u64::MAX,
            "email": "c4bf2f9ebc99b7f64add45103e81eb4ca483649064e3e1398b21f41786360c7b",
            // VARCHAR(10): cut to the column's length.
            "code": "c4bf2f9ebc",
            "tags": "a5657dac79b929b3477713c461b2741e",
            // Not a string column: unchanged, as Debezium's passthrough.
            "age": 42,
            // NULL is masked too (Debezium's mask converter ignores the value).
            "ssn": "********",
        })
    );
    // A NULL stays NULL when hashed.
    let mut nulls = row();
    nulls[1] = Value::Null;
    assert_eq!(after_of(&t, nulls).1["email"], J::Null);
    // The rewritten columns are strings in every schema.
    assert_eq!(
        t.out.schema.columns[3].kind,
        ColumnKind::String {
            charset: 45,
            binary: false,
            fixed: false,
            max_bytes: u16::MAX
        }
    );
    let avro = ctx(
        rules(BigintUnsigned::Exact, &[], &[r".*\.tags"], &[]),
        Format::Avro,
    )
    .unwrap();
    let value = &avro.avro.as_ref().unwrap().value.schema_json;
    assert!(!value.contains("EnumSet"), "{value}");
}

#[test]
fn rules_compile_problems_name_the_setting() {
    let mut problems = Vec::new();
    let bad = vec!["r".to_string(), "x".to_string()];
    let mask = vec![ColumnMaskConfig {
        columns: vec![],
        chars: 0,
    }];
    let hash = vec![ColumnHashConfig {
        columns: vec!["(".into()],
        algorithm: "SHA-999".into(),
        salt: Secret::new(String::new()),
        salt_file: String::new(),
    }];
    let input = RulesInput {
        key_change_headers: true,
        bigint_unsigned: BigintUnsigned::Exact,
        skipped_operations: &bad,
        column_exclude: &[],
        column_mask: &mask,
        column_hash: &hash,
    };
    assert!(crate::config::route_rules::compile(2, &input, &mut problems).is_none());
    let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "route[2].skipped_operations",
            "route[2].skipped_operations",
            "route[2].column_mask[0].chars",
            "route[2].column_mask[0].columns",
            "route[2].column_hash[0].algorithm",
            "route[2].column_hash[0].salt",
            "route[2].column_hash[0].columns[0]",
        ]
    );
    assert!(problems[0].found.contains("`r`"));
    assert!(problems[4].expected.contains("SHA-256"));
}

fn key_change(table: &TableCtx) -> Vec<Record> {
    let meta = TxnMeta {
        gtid: None,
        file: "b.000001".into(),
        pos: 4,
        ts_us: 0,
        server_id: 1,
        thread: None,
        connector: "mysql",
    };
    let mut after = row();
    after[0] = Value::UInt(7);
    let image = RowImage {
        before: Some(row()),
        after: Some(after),
    };
    let change = RowChange {
        table,
        meta: &meta,
        kind: RowsKind::Update,
        row: &image,
        row_pos: RowPos {
            source_ts_us: meta.ts_us,
            pos: 4,
            row: 0,
            total_order: 1,
            data_collection_order: 1,
            snapshot: crate::model::SnapshotMark::False,
        },
    };
    let mut out = Vec::new();
    match table.route.format {
        Format::Json => JsonEncoder::new("p").encode(&change, &mut out),
        Format::Avro => {
            let ids = crate::encode::avro::SchemaIds {
                key: Some(1),
                value: 2,
            };
            crate::encode::avro::AvroEncoder::new("p")
                .encode(&change, ids, &mut out)
                .unwrap()
        }
    }
    out
}

/// Debezium marks the delete and its tombstone with the new key and the create with the
/// old key, as `SimpleHeaderConverter` writes the key struct (`{"id":7}`), in every format.
#[test]
fn key_change_records_carry_debeziums_headers() {
    let old = format!("{{\"id\":{}}}", u64::MAX).into_bytes();
    for format in [Format::Json, Format::Avro] {
        let t = ctx(RouteRules::default(), format).unwrap();
        let headers: Vec<_> = key_change(&t).into_iter().map(|r| r.header).collect();
        assert_eq!(
            headers,
            [
                Some(("__debezium.newkey", b"{\"id\":7}".to_vec())),
                Some(("__debezium.newkey", b"{\"id\":7}".to_vec())),
                Some(("__debezium.oldkey", old.clone())),
            ],
            "{format:?}"
        );
        let off = RouteRules {
            key_change_headers: false,
            ..RouteRules::default()
        };
        let t = ctx(off, format).unwrap();
        let records = key_change(&t);
        assert_eq!(records.len(), 3);
        assert!(records.iter().all(|r| r.header.is_none()), "{format:?}");
    }
    // With `bigint_unsigned = "long"` the header shows the key as written.
    let t = ctx(rules(BigintUnsigned::Long, &[], &[], &[]), Format::Json).unwrap();
    assert_eq!(
        key_change(&t)[2].header,
        Some(("__debezium.oldkey", b"{\"id\":-1}".to_vec()))
    );
}
