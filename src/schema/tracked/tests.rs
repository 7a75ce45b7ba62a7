//! Tests of tracked definitions: `ALTER TABLE` operations and their errors, charset resolution,
//! the type-text helpers, agreement, and the JSON and Avro forms of schema-change records.

use super::*;

fn def() -> TableDef {
    let mut t = TableDef::new("shop", "orders");
    t.columns = vec![
        ColumnDef {
            nullable: false,
            ..ColumnDef::new("id", "bigint unsigned")
        },
        ColumnDef::new("name", "varchar(20)"),
        ColumnDef::new("note", "text"),
    ];
    t.primary_key = vec!["id".into()];
    t.default_charset = Some("latin1".into());
    t
}

fn names(t: &TableDef) -> Vec<&str> {
    t.columns.iter().map(|c| c.name.as_str()).collect()
}

#[test]
fn add_drop_modify_change_rename() {
    let mut t = def();
    t.apply(&AlterOp::AddColumn {
        def: ColumnDef::new("w", "int"),
        position: ColumnPosition::After("id".into()),
        if_not_exists: false,
    })
    .unwrap();
    t.apply(&AlterOp::AddColumn {
        def: ColumnDef::new("c", "char(3)"),
        position: ColumnPosition::First,
        if_not_exists: false,
    })
    .unwrap();
    assert_eq!(names(&t), ["c", "id", "w", "name", "note"]);
    assert_eq!(
        t.columns[0].charset.as_deref(),
        Some("latin1"),
        "table default"
    );
    t.apply(&AlterOp::DropColumn {
        name: "W".into(),
        if_exists: false,
    })
    .unwrap();
    t.apply(&AlterOp::ModifyColumn {
        def: ColumnDef::new("NAME", "varchar(40)"),
        position: ColumnPosition::Last,
        if_exists: false,
    })
    .unwrap();
    assert_eq!(
        names(&t),
        ["c", "id", "NAME", "note"],
        "MODIFY takes the new spelling"
    );
    t.apply(&AlterOp::ChangeColumn {
        old: "id".into(),
        def: ColumnDef::new("order_id", "bigint unsigned"),
        position: ColumnPosition::After("note".into()),
        if_exists: false,
    })
    .unwrap();
    assert_eq!(names(&t), ["c", "NAME", "note", "order_id"]);
    assert_eq!(t.primary_key, ["order_id"], "the key follows the rename");
    assert!(!t.columns[3].nullable, "key columns are NOT NULL");
    t.apply(&AlterOp::RenameColumn {
        old: "note".into(),
        new: "remark".into(),
    })
    .unwrap();
    t.apply(&AlterOp::DropColumn {
        name: "order_id".into(),
        if_exists: false,
    })
    .unwrap();
    assert!(t.primary_key.is_empty());
    t.apply(&AlterOp::AddPrimaryKey(vec!["c".into(), "name".into()]))
        .unwrap();
    assert_eq!(t.primary_key, ["c", "NAME"]);
    t.apply(&AlterOp::DropPrimaryKey).unwrap();
    assert!(t.primary_key.is_empty());
    t.apply(&AlterOp::RenameTo(TableName::new("shop", "o2")))
        .unwrap();
    assert_eq!(t.name(), TableName::new("shop", "o2"));
}

#[test]
fn errors_name_table_and_column() {
    let mut t = def();
    let e = t
        .apply(&AlterOp::DropColumn {
            name: "nope".into(),
            if_exists: false,
        })
        .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("`shop`.`orders`") && msg.contains("`nope`"),
        "{msg}"
    );
    assert!(t
        .apply(&AlterOp::DropColumn {
            name: "nope".into(),
            if_exists: true,
        })
        .is_ok());
    let e = t
        .apply(&AlterOp::AddColumn {
            def: ColumnDef::new("ID", "int"),
            position: ColumnPosition::Last,
            if_not_exists: false,
        })
        .unwrap_err();
    assert!(matches!(e, DdlError::DuplicateColumn { .. }), "{e}");
    let e = t
        .apply(&AlterOp::AddColumn {
            def: ColumnDef::new("x", "int"),
            position: ColumnPosition::After("ghost".into()),
            if_not_exists: false,
        })
        .unwrap_err();
    assert!(e.to_string().contains("`ghost`"), "{e}");
    let e = t
        .apply(&AlterOp::ModifyColumn {
            def: ColumnDef::new("name", "int"),
            position: ColumnPosition::After("ghost".into()),
            if_exists: false,
        })
        .unwrap_err();
    assert!(e.to_string().contains("`ghost`"), "{e}");
    assert_eq!(
        names(&t),
        ["id", "name", "note"],
        "a failed op leaves the columns"
    );
    let mut one = TableDef::new("d", "t");
    one.columns = vec![ColumnDef::new("a", "int")];
    assert!(matches!(
        one.apply(&AlterOp::DropColumn {
            name: "a".into(),
            if_exists: false
        }),
        Err(DdlError::LastColumn { .. })
    ));
}

#[test]
fn convert_charset_grows_text() {
    let mut t = def();
    t.fill_default_charset("utf8mb4", None);
    assert_eq!(t.columns[1].charset.as_deref(), Some("latin1"));
    t.apply(&AlterOp::ConvertCharset {
        charset: "utf8mb4".into(),
        collation: None,
    })
    .unwrap();
    assert_eq!(t.columns[2].sql_type, "mediumtext");
    assert_eq!(t.columns[1].sql_type, "varchar(20)");
    assert_eq!(t.columns[1].charset.as_deref(), Some("utf8mb4"));
    assert_eq!(t.columns[0].charset, None, "not a character column");
    assert_eq!(t.default_charset.as_deref(), Some("utf8mb4"));
}

#[test]
fn binary_charset_makes_binary_types() {
    for (ty, want) in [
        ("char(4)", "binary(4)"),
        ("varchar(9)", "varbinary(9)"),
        ("text", "blob"),
        ("enum('a')", "enum('a')"),
    ] {
        let mut c = ColumnDef::new("c", ty);
        c.charset = Some("binary".into());
        c.resolve_charset(None, None);
        assert_eq!(c.sql_type, want);
    }
    let mut c = ColumnDef::new("c", "varchar(3)");
    c.collation = Some("utf8mb4_bin".into());
    c.resolve_charset(Some("latin1"), None);
    assert_eq!(c.charset.as_deref(), Some("utf8mb4"), "from the collation");
}

#[test]
fn type_text_helpers() {
    assert_eq!(base_type("decimal(10,2) unsigned"), "decimal");
    assert_eq!(type_args("decimal(10,2) unsigned"), [10, 2]);
    assert_eq!(type_args("enum('1','2')"), Vec::<u64>::new());
    let members = vec!["a".to_string(), "it's".into(), "c,d".into(), "x\\y".into()];
    let ty = format!("enum({})", quote_members(&members));
    assert_eq!(ColumnDef::new("e", ty).members, members);
    assert_eq!(charset_of_collation("utf8_general_ci"), Some("utf8mb3"));
    assert_eq!(charset_of_collation("uca1400_ai_ci"), None);
    assert_eq!(charset_id("UTF8"), 33);
    assert_eq!(mb_max_len("nope"), 4);
}

#[test]
fn agreement_reads_absent_collations_as_unstated() {
    let a = def();
    let mut b = def();
    assert!(a.agrees_with(&b));
    b.columns[1].collation = Some("latin1_swedish_ci".into());
    b.default_collation = Some("latin1_swedish_ci".into());
    assert!(a.agrees_with(&b) && b.agrees_with(&a));
    let mut c = b.clone();
    c.columns[1].collation = Some("latin1_bin".into());
    assert!(!c.agrees_with(&b));
    let mut c = b.clone();
    c.columns[1].charset = Some("utf8mb4".into());
    assert!(!c.agrees_with(&b), "charsets must be equal");
    let mut c = b.clone();
    c.columns[2].sql_type = "mediumtext".into();
    assert!(!c.agrees_with(&b));
    let mut c = b;
    c.primary_key.clear();
    assert!(!c.agrees_with(&a));
}

mod avro {
    //! `schemas/schema_change.avsc` describes [`SchemaChangeRecord`] exactly.

    use super::super::*;
    use super::def;
    use apache_avro::reader::datum::GenericDatumReader;
    use apache_avro::schema::Name;
    use apache_avro::writer::datum::GenericDatumWriter;
    use apache_avro::Schema;
    use std::collections::{BTreeSet, HashMap};

    const AVSC: &str = include_str!("../../../schemas/schema_change.avsc");

    fn records() -> Vec<SchemaChangeRecord> {
        let before = def();
        let mut after = before.clone();
        after.columns.push(ColumnDef {
            generated: Some(Generated::Stored),
            collation: Some("latin1_bin".into()),
            invisible: true,
            ..ColumnDef::new("e", "enum('a','b''c')")
        });
        after.default_collation = Some("latin1_bin".into());
        let source = ChangeSource {
            file: "mysql-bin.000007".into(),
            pos: 4_294_967_300,
            gtid: Some("3e11fa47-71ca-11e1-9e33-c80aa9429562:23".into()),
            server_id: u32::MAX,
            ts_ms: 1_700_000_000_000,
        };
        let rec = |kind, before: Option<TableDef>, after: Option<TableDef>| SchemaChangeRecord {
            source: source.clone(),
            db: "shop".into(),
            table: "orders".into(),
            ddl: "ALTER TABLE orders ADD e ENUM('a','b''c')".into(),
            kind,
            before,
            after,
        };
        vec![
            rec(ChangeKind::Create, None, Some(before.clone())),
            rec(ChangeKind::Alter, Some(before.clone()), Some(after)),
            rec(ChangeKind::Drop, Some(before.clone()), None),
            rec(
                ChangeKind::Rename,
                Some(before.clone()),
                Some(before.clone()),
            ),
            SchemaChangeRecord {
                source: ChangeSource {
                    gtid: None,
                    ..source.clone()
                },
                ..rec(ChangeKind::Truncate, Some(before.clone()), Some(before))
            },
        ]
    }

    /// Every named type of the schema, so references resolve wherever they are met.
    fn collect(s: &Schema, named: &mut HashMap<Name, Schema>) {
        match s {
            Schema::Record(r) => {
                named.insert(r.name.clone(), s.clone());
                for f in &r.fields {
                    collect(&f.schema, named);
                }
            }
            Schema::Enum(e) => {
                named.insert(e.name.clone(), s.clone());
            }
            Schema::Array(a) => collect(&a.items, named),
            Schema::Union(u) => u.variants().iter().for_each(|v| collect(v, named)),
            _ => {}
        }
    }

    /// Whether a JSON value is a value of the schema: every field present with a value of
    /// its type, and no other field.
    fn check(
        v: &serde_json::Value,
        s: &Schema,
        named: &HashMap<Name, Schema>,
        at: &str,
    ) -> Result<(), String> {
        let fail = |what: &str| Err(format!("{at}: {what}, found {v}"));
        match s {
            Schema::Ref { name } => match named.get(name) {
                Some(s) => check(v, s, named, at),
                None => fail("unresolved reference"),
            },
            Schema::Null if v.is_null() => Ok(()),
            Schema::Boolean if v.is_boolean() => Ok(()),
            Schema::String if v.is_string() => Ok(()),
            Schema::Long if v.as_i64().is_some() => Ok(()),
            Schema::Int if v.as_i64().is_some_and(|x| i32::try_from(x).is_ok()) => Ok(()),
            Schema::Array(a) => match v.as_array() {
                Some(items) => items
                    .iter()
                    .enumerate()
                    .try_for_each(|(i, x)| check(x, &a.items, named, &format!("{at}[{i}]"))),
                None => fail("an array"),
            },
            Schema::Enum(e) => match v.as_str() {
                Some(sym) if e.symbols.iter().any(|x| x == sym) => Ok(()),
                _ => fail("an enum symbol"),
            },
            Schema::Record(r) => {
                let Some(obj) = v.as_object() else {
                    return fail("an object");
                };
                let fields: BTreeSet<&str> = r.fields.iter().map(|f| f.name.as_str()).collect();
                let keys: BTreeSet<&str> = obj.keys().map(String::as_str).collect();
                if fields != keys {
                    return Err(format!(
                        "{at}: record {} has fields {fields:?}, the JSON has {keys:?}",
                        r.name
                    ));
                }
                r.fields.iter().try_for_each(|f| {
                    check(&obj[&f.name], &f.schema, named, &format!("{at}.{}", f.name))
                })
            }
            Schema::Union(u) => {
                if u.variants()
                    .iter()
                    .any(|variant| check(v, variant, named, at).is_ok())
                {
                    Ok(())
                } else {
                    fail("a value of a union branch")
                }
            }
            _ => fail(&format!("a value of {s:?}")),
        }
    }

    #[test]
    fn json_records_match_the_avsc() {
        let schema = Schema::parse_str(AVSC).expect("schemas/schema_change.avsc parses");
        let mut named = HashMap::new();
        collect(&schema, &mut named);
        for rec in records() {
            let json = serde_json::to_value(&rec).unwrap();
            check(&json, &schema, &named, "record").unwrap();
            let back: SchemaChangeRecord = serde_json::from_value(json).unwrap();
            assert_eq!(back, rec);
        }
        // The check notices an extra field, a missing one and a wrong type.
        let mut json = serde_json::to_value(&records()[1]).unwrap();
        json["extra"] = 1.into();
        assert!(check(&json, &schema, &named, "r").is_err());
        let mut json = serde_json::to_value(&records()[1]).unwrap();
        json["after"]["columns"][0]
            .as_object_mut()
            .unwrap()
            .remove("invisible");
        assert!(check(&json, &schema, &named, "r").is_err());
        let mut json = serde_json::to_value(&records()[1]).unwrap();
        json["source"]["pos"] = "4".into();
        assert!(check(&json, &schema, &named, "r").is_err());
    }

    #[test]
    fn records_round_trip_through_avro_binary() {
        let schema = Schema::parse_str(AVSC).unwrap();
        for rec in records() {
            // The JSON form, read as Avro values of the schema (numbers, strings, maps,
            // nulls resolved into longs, enums, records and union branches).
            let json = serde_json::to_value(&rec).unwrap();
            let value = apache_avro::types::Value::try_from(json)
                .unwrap()
                .resolve(&schema)
                .unwrap_or_else(|e| panic!("{:?}: {e}", rec.kind));
            let bytes = GenericDatumWriter::builder(&schema)
                .build()
                .unwrap()
                .write_value_to_vec(value)
                .unwrap();
            let read = GenericDatumReader::builder(&schema)
                .build()
                .unwrap()
                .read_value(&mut &bytes[..])
                .unwrap();
            let back: SchemaChangeRecord = apache_avro::from_value(&read).unwrap();
            assert_eq!(back, rec);
        }
    }
}

#[test]
fn defs_round_trip_as_json() {
    let t = def();
    let j = serde_json::to_string(&t).unwrap();
    assert_eq!(serde_json::from_str::<TableDef>(&j).unwrap(), t);
    let mut c = ColumnDef::new("g", "int");
    c.generated = Some(Generated::Virtual);
    assert!(serde_json::to_string(&c).unwrap().contains("\"VIRTUAL\""));
}
