//! Tests of building a [`TableSchema`] from table maps: full metadata, the flavors' charset
//! layouts, signedness, malformed input, and table maps completed by a tracked definition.

use super::map_metadata::signedness;
use super::tracked::TableDef;
use super::*;
use crate::binlog::table_map::RawTableMap;
use crate::binlog::table_map_builder::*;

fn sample() -> TableMapBuilder {
    let cols = vec![
        ColSpec::new("id", 8, &[]).unsigned().not_null(),
        ColSpec::new("name", 15, &[0x90, 0x01]).charset(255),
        ColSpec::new("price", 246, &[10, 2]),
        ColSpec::new("created", 18, &[6]),
        ColSpec::new("mood", 254, &[247, 1]).members(&["happy", "sad"]),
        ColSpec::new("tags", 254, &[248, 1]).members(&["a", "b", "c"]),
        ColSpec::new("bin", 254, &[254, 16]).charset(63),
        ColSpec::new("body", 252, &[2]).charset(8),
        ColSpec::new("doc", 245, &[4]),
        ColSpec::new("flags", 16, &[2, 1]),
        ColSpec::new("y", 13, &[]),
        ColSpec::new("small", 2, &[]),
        ColSpec::new("shape", 255, &[4]),
    ];
    let mut b = TableMapBuilder::new("shop", "orders", cols);
    b.pk = vec![0];
    b
}

#[test]
fn full_metadata_schema() {
    let b = sample();
    let s = TableSchema::from_table_map(&b.event()).unwrap();
    assert_eq!(s.db, "shop");
    assert_eq!(s.table, "orders");
    assert_eq!(s.key_columns(), &[0]);
    let kinds: Vec<_> = s.columns.iter().map(|c| c.kind.clone()).collect();
    assert_eq!(kinds[0], ColumnKind::BigInt { unsigned: true });
    assert_eq!(
        kinds[1],
        ColumnKind::String {
            charset: 255,
            binary: false,
            fixed: false,
            max_bytes: 400
        }
    );
    assert_eq!(
        kinds[2],
        ColumnKind::Decimal {
            precision: 10,
            scale: 2
        }
    );
    assert_eq!(kinds[3], ColumnKind::DateTime { fsp: 6 });
    assert_eq!(
        kinds[4],
        ColumnKind::Enum {
            values: vec!["happy".into(), "sad".into()]
        }
    );
    assert_eq!(
        kinds[5],
        ColumnKind::Set {
            values: vec!["a".into(), "b".into(), "c".into()]
        }
    );
    assert_eq!(
        kinds[6],
        ColumnKind::String {
            charset: 63,
            binary: true,
            fixed: true,
            max_bytes: 16
        }
    );
    assert_eq!(
        kinds[7],
        ColumnKind::Blob {
            charset: 8,
            binary: false
        }
    );
    assert_eq!(kinds[8], ColumnKind::Json);
    assert_eq!(kinds[9], ColumnKind::Bit { bits: 10 });
    assert_eq!(kinds[10], ColumnKind::Year);
    assert_eq!(kinds[11], ColumnKind::SmallInt { unsigned: false });
    assert_eq!(kinds[12], ColumnKind::Geometry);
    assert!(!s.columns[0].nullable);
    assert!(s.columns[1].nullable);
    assert_eq!(s.column_index("doc"), Some(8));
}

#[test]
fn column_charset_form_and_mariadb_geometry() {
    let cols = vec![
        ColSpec::new("g", 255, &[4]).charset(63),
        ColSpec::new("a", 15, &[40, 0]).charset(8),
        ColSpec::new("b", 15, &[40, 0]).charset(33),
    ];
    for default_form in [true, false] {
        let mut b = TableMapBuilder::new("d", "t", cols.clone());
        b.mariadb = true;
        b.default_charset_form = default_form;
        let s = TableSchema::from_table_map(&b.event()).unwrap();
        assert_eq!(s.columns[1].kind.charset(), Some(8), "form {default_form}");
        assert_eq!(s.columns[2].kind.charset(), Some(33), "form {default_form}");
        let s = TableSchema::from_table_map_with_flavor(&b.event(), ServerFlavor::MariaDb).unwrap();
        assert_eq!(s.columns[1].kind.charset(), Some(8));
        b.mariadb = false;
        let s = TableSchema::from_table_map(&b.event()).unwrap();
        assert_eq!(s.columns[1].kind.charset(), Some(8));
        assert_eq!(s.columns[2].kind.charset(), Some(33));
    }
}

#[test]
fn geometry_between_text_columns_auto_flavor() {
    let cols = vec![
        ColSpec::new("a", 15, &[40, 0]).charset(33),
        ColSpec::new("g", 255, &[4]).charset(63),
        ColSpec::new("b", 15, &[40, 0]).charset(33),
    ];
    for mariadb in [true, false] {
        let mut b = TableMapBuilder::new("d", "t", cols.clone());
        b.mariadb = mariadb;
        let s = TableSchema::from_table_map(&b.event()).unwrap();
        assert_eq!(s.columns[0].kind.charset(), Some(33), "mariadb {mariadb}");
        assert_eq!(s.columns[2].kind.charset(), Some(33), "mariadb {mariadb}");
    }
    // COLUMN_VISIBILITY (MySQL >= 8.0.23) forces the MySQL reading
    let mut b = TableMapBuilder::new("d", "t", cols);
    let mut body = b.body();
    body.extend_from_slice(&[12, 1, 0xe0]);
    let raw = RawTableMap::parse(&body, 6).unwrap();
    let s = TableSchema::from_raw(&raw, ServerFlavor::Auto).unwrap();
    assert_eq!(s.columns[2].kind.charset(), Some(33));
    b.mariadb = true;
    let raw = RawTableMap::parse(&b.body(), 6).unwrap();
    let s = TableSchema::from_raw(&raw, ServerFlavor::MySql).unwrap();
    // explicit (wrong) flavor is obeyed
    assert_eq!(s.columns[2].kind.charset(), Some(63));
}

#[test]
fn year_has_a_signedness_bit() {
    let cols = vec![
        ColSpec::new("y", 13, &[]).unsigned(),
        ColSpec::new("a", 3, &[]),
        ColSpec::new("b", 3, &[]).unsigned(),
    ];
    let b = TableMapBuilder::new("d", "t", cols);
    // What both servers log (see `signedness`).
    assert!(b.body().windows(3).any(|w| w == [1, 1, 0xa0]));
    for flavor in [
        ServerFlavor::MySql,
        ServerFlavor::MariaDb,
        ServerFlavor::Auto,
    ] {
        let s = TableSchema::from_table_map_with_flavor(&b.event(), flavor).unwrap();
        assert!(!s.columns[1].kind.is_unsigned(), "{flavor:?}");
        assert!(s.columns[2].kind.is_unsigned(), "{flavor:?}");
    }
    // A field that only fits without YEAR is read without it.
    let cols: Vec<_> = (0..8)
        .map(|i| ColSpec::new(&format!("c{i}"), 3, &[]))
        .chain([ColSpec::new("y", 13, &[])])
        .collect();
    let raw = RawTableMap::parse(&TableMapBuilder::new("d", "t", cols).body(), 6).unwrap();
    let u = signedness(&raw, Some(&[0x01])).unwrap();
    assert_eq!(u.iter().filter(|&&x| x).count(), 1);
    assert!(u[7]);
    let e = signedness(&raw, Some(&[0, 0, 0])).unwrap_err();
    assert!(e.contains("SIGNEDNESS"), "{e}");
}

#[test]
fn mysql_counts_vector_as_a_character_column() {
    let cols = vec![
        ColSpec::new("a", 15, &[12, 0]).charset(255),
        ColSpec::new("v", 242, &[4]).charset(63),
        ColSpec::new("b", 15, &[3, 0]).charset(8),
    ];
    for default_form in [true, false] {
        let mut b = TableMapBuilder::new("d", "t", cols.clone());
        b.default_charset_form = default_form;
        for flavor in [ServerFlavor::MySql, ServerFlavor::Auto] {
            let s = TableSchema::from_table_map_with_flavor(&b.event(), flavor).unwrap();
            assert_eq!(s.columns[0].kind.charset(), Some(255));
            assert_eq!(
                s.columns[2].kind.charset(),
                Some(8),
                "{flavor:?} {default_form}"
            );
        }
    }
}

#[test]
fn long_char_metadata() {
    // CHAR(255) utf8mb4 = 1020 bytes: byte0 = 0xfe ^ ((1020 >> 4) & 0x30)
    let len: u16 = 1020;
    let b0 = 0xfe ^ (((len >> 4) & 0x30) as u8);
    let b1 = (len & 0xff) as u8;
    let b = TableMapBuilder::new("d", "t", vec![ColSpec::new("c", 254, &[b0, b1])]);
    let s = TableSchema::from_table_map(&b.event()).unwrap();
    assert_eq!(
        s.columns[0].kind,
        ColumnKind::String {
            charset: 255,
            binary: false,
            fixed: true,
            max_bytes: 1020
        }
    );
}

#[test]
fn no_full_metadata_error_mentions_setting() {
    let mut b = sample();
    b.with_names = false;
    let e = TableSchema::from_table_map(&b.event()).unwrap_err();
    assert!(matches!(e, SchemaError::NoFullMetadata { .. }));
    let msg = e.to_string();
    assert!(msg.contains("binlog_row_metadata=FULL"), "{msg}");
    assert!(msg.contains("`shop`.`orders`"), "{msg}");
}

#[test]
fn unsupported_type_is_named() {
    let b = TableMapBuilder::new("d", "t", vec![ColSpec::new("old", 0, &[])]);
    let e = TableSchema::from_table_map(&b.event()).unwrap_err();
    assert!(e.to_string().contains("`old`"), "{e}");
}

#[test]
fn signedness_is_per_numeric_column_msb_first() {
    let cols: Vec<_> = (0..10)
        .map(|i| {
            let c = ColSpec::new(&format!("c{i}"), 3, &[]);
            if i % 3 == 0 {
                c.unsigned()
            } else {
                c
            }
        })
        .chain([
            ColSpec::new("y", 13, &[]),
            ColSpec::new("z", 3, &[]).unsigned(),
        ])
        .collect();
    let b = TableMapBuilder::new("d", "t", cols);
    let s = TableSchema::from_table_map(&b.event()).unwrap();
    for (i, c) in s.columns.iter().enumerate().take(10) {
        assert_eq!(c.kind.is_unsigned(), i % 3 == 0, "column {i}");
    }
    assert!(s.columns[11].kind.is_unsigned());
}

#[test]
fn malformed_inputs_error_not_panic() {
    let body = sample().body();
    for cut in 0..body.len() {
        let _ = RawTableMap::parse(&body[..cut], 6)
            .and_then(|raw| TableSchema::from_raw(&raw, ServerFlavor::Auto));
    }
    // flipping bytes never panics
    for i in 0..body.len() {
        let mut b = body.clone();
        b[i] ^= 0xff;
        let _ = RawTableMap::parse(&b, 6)
            .and_then(|raw| TableSchema::from_raw(&raw, ServerFlavor::Auto));
    }
}

/// The tracked definition of [`sample`]'s table.
fn sample_def() -> TableDef {
    let d = ddl::parse_ddl(
        Some("shop"),
        "CREATE TABLE orders (id BIGINT UNSIGNED NOT NULL, name VARCHAR(100) CHARACTER SET \
         latin1, price DECIMAL(10,2), created DATETIME(6), mood ENUM('happy','sad'), tags \
         SET('a','b','c'), `bin` BINARY(16), body TEXT CHARACTER SET utf8mb4, doc JSON, \
         flags BIT(10), y YEAR, small SMALLINT, shape GEOMETRY, PRIMARY KEY (id))",
    );
    match d {
        ddl::DdlParse::Changes(mut c) => match c.remove(0) {
            ddl::DdlChange::CreateTable { def, .. } => def,
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

#[test]
fn tracked_def_supplies_what_the_map_lacks() {
    let def = sample_def();
    let full = TableSchema::from_table_map(&sample().event()).unwrap();
    // MINIMAL: types, signedness and charsets logged; names, members, key from the def.
    let mut b = sample();
    b.with_names = false;
    let s = TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::MySql, &def).unwrap();
    let mut want = full.clone();
    // The sample map logs utf8mb4 (255) for `name`; the def's latin1 is not used.
    assert_eq!(s, want, "MINIMAL + def gives the FULL schema");
    // No optional metadata at all: signedness and charsets come from the def too.
    b.no_optional = true;
    let s = TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::MySql, &def).unwrap();
    want.columns[1].kind = ColumnKind::String {
        charset: 8,
        binary: false,
        fixed: false,
        max_bytes: 400,
    };
    want.columns[7].kind = ColumnKind::Blob {
        charset: 45,
        binary: false,
    };
    want.columns[4].kind = ColumnKind::Enum {
        values: vec!["happy".into(), "sad".into()],
    };
    assert_eq!(s, want);
    assert!(
        s.columns[0].kind.is_unsigned(),
        "BIGINT UNSIGNED from the def"
    );
    assert_eq!(s.key_columns(), &[0]);
    // FULL: the map wins, and still agrees with the def.
    let s =
        TableSchema::from_table_map_with_def(&sample().event(), ServerFlavor::MySql, &def).unwrap();
    assert_eq!(s, full);
}

#[test]
fn tracked_def_mismatches_are_explained() {
    let def = sample_def();
    let mut b = sample();
    b.with_names = false;
    // A type the map does not have.
    let mut d = def.clone();
    d.columns[1] = tracked::ColumnDef::new("name", "int");
    let e = TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::Auto, &d).unwrap_err();
    assert!(
        matches!(&e, SchemaMismatch::ColumnType(m) if m.index == 1),
        "{e:?}"
    );
    let msg = e.to_string();
    for part in [
        "`shop`.`orders`",
        "#1 `name`",
        "tracked as `int`",
        "VARCHAR",
        "binlog_row_metadata=FULL",
    ] {
        assert!(msg.contains(part), "{part}: {msg}");
    }
    // Signedness logged (MINIMAL) and different.
    let mut d = def.clone();
    d.columns[0] = tracked::ColumnDef::new("id", "bigint");
    let e = TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::Auto, &d).unwrap_err();
    assert!(e.to_string().contains("BIGINT UNSIGNED"), "{e}");
    // Without signedness in the map the def decides.
    b.no_optional = true;
    let s = TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::Auto, &d).unwrap();
    assert!(!s.columns[0].kind.is_unsigned());
    // DECIMAL precision, DATETIME precision, BIT width, ENUM/SET size.
    for (i, ty) in [
        (2, "decimal(12,2)"),
        (3, "datetime(3)"),
        (9, "bit(9)"),
        (5, "set('a','b','c','d','e','f','g','h','i')"),
    ] {
        let mut d = def.clone();
        d.columns[i] = tracked::ColumnDef::new(def.columns[i].name.clone(), ty);
        let e =
            TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::Auto, &d).unwrap_err();
        assert!(
            matches!(e, SchemaMismatch::ColumnType { .. }),
            "{ty}: {e:?}"
        );
    }
    let mut d = def.clone();
    let many: Vec<String> = (0..300).map(|i| format!("m{i}")).collect();
    d.columns[4] =
        tracked::ColumnDef::new("mood", format!("enum({})", tracked::quote_members(&many)));
    assert!(TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::Auto, &d).is_err());
    // Column count.
    let mut d = def.clone();
    d.columns.pop();
    let e = TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::Auto, &d).unwrap_err();
    assert!(
        matches!(
            e,
            SchemaMismatch::ColumnCount {
                logged: 13,
                tracked: 12,
                ..
            }
        ),
        "{e:?}"
    );
    // Names are checked when logged (case-insensitively).
    let mut d = def.clone();
    d.columns[1].name = "NAME".into();
    assert!(
        TableSchema::from_table_map_with_def(&sample().event(), ServerFlavor::Auto, &d).is_ok()
    );
    d.columns[1].name = "title".into();
    let e = TableSchema::from_table_map_with_def(&sample().event(), ServerFlavor::Auto, &d)
        .unwrap_err();
    assert!(
        e.to_string().contains("`name` in the binlog but `title`"),
        "{e}"
    );
    // Another table's definition.
    let mut d = def.clone();
    d.table = "other".into();
    assert!(matches!(
        TableSchema::from_table_map_with_def(&sample().event(), ServerFlavor::Auto, &d),
        Err(SchemaMismatch::Table { .. })
    ));
    // A key column that does not exist.
    let mut d = def;
    d.primary_key = vec!["ghost".into()];
    let e = TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::Auto, &d).unwrap_err();
    assert!(e.to_string().contains("`ghost`"), "{e}");
}

#[test]
fn tracked_def_special_types() {
    // MariaDB UUID/INET6/INET4 are fixed binary strings; its JSON is a LONGTEXT.
    let cols = vec![
        ColSpec::new("u", 254, &[254, 16]),
        ColSpec::new("i4", 254, &[254, 4]),
        ColSpec::new("j", 252, &[4]),
        ColSpec::new("v", 242, &[4]),
    ];
    let mut b = TableMapBuilder::new("d", "t", cols);
    b.no_optional = true;
    let mut def = TableDef::new("d", "t");
    def.columns = vec![
        tracked::ColumnDef::new("u", "uuid"),
        tracked::ColumnDef::new("i4", "inet4"),
        tracked::ColumnDef::new("j", "json"),
        tracked::ColumnDef::new("v", "vector(3)"),
    ];
    let s = TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::MariaDb, &def).unwrap();
    // The UUID behind its logged BINARY(16) is known from the definition only (and is kept in
    // the definition recorded from the schema), as is the INET4 behind its BINARY(4).
    assert_eq!(s.columns[0].kind, ColumnKind::Uuid);
    assert_eq!(s.columns[1].kind, ColumnKind::Inet4);
    let again = TableDef::from_schema(&s);
    assert_eq!(again.columns[0].sql_type, "uuid");
    assert_eq!(again.columns[1].sql_type, "inet4");
    let s2 =
        TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::MariaDb, &again).unwrap();
    assert_eq!(s2.columns[0].kind, ColumnKind::Uuid);
    assert_eq!(s2.columns[1].kind, ColumnKind::Inet4);
    // A definition that says BINARY(4) keeps the bytes.
    let mut plain = TableDef::new("d", "t");
    plain.columns = vec![
        tracked::ColumnDef::new("u", "binary(16)"),
        tracked::ColumnDef::new("i4", "binary(4)"),
        tracked::ColumnDef::new("j", "json"),
        tracked::ColumnDef::new("v", "vector(3)"),
    ];
    let bare =
        TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::MariaDb, &plain).unwrap();
    assert!(matches!(
        bare.columns[1].kind,
        ColumnKind::String {
            binary: true,
            fixed: true,
            max_bytes: 4,
            ..
        }
    ));
    assert!(matches!(
        s.columns[2].kind,
        ColumnKind::Blob { binary: false, .. }
    ));
    assert_eq!(
        s.columns[3].kind,
        ColumnKind::Vector {
            dimensions: Some(3)
        }
    );
    def.columns[0] = tracked::ColumnDef::new("u", "inet4");
    assert!(TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::MariaDb, &def).is_err());
}

/// POINT columns are told apart from the table map's GEOMETRY_TYPE (1 = POINT, logged by
/// MySQL and MariaDB with full metadata) or, without it, from the tracked type.
#[test]
fn point_columns_from_geometry_type_or_the_tracked_type() {
    let cols = || {
        vec![
            ColSpec::new("id", 3, &[]).not_null(),
            ColSpec::new("g", 255, &[4]),
            ColSpec::new("p", 255, &[4]),
        ]
    };
    let kinds = |s: &TableSchema| s.columns.iter().map(|c| c.kind.clone()).collect::<Vec<_>>();
    let mut b = TableMapBuilder::new("geo", "t", cols());
    b.geometry_types = vec![0, 1];
    let s = TableSchema::from_table_map(&b.event()).unwrap();
    assert_eq!(kinds(&s)[1..], [ColumnKind::Geometry, ColumnKind::Point]);
    // Without GEOMETRY_TYPE: GEOMETRY, unless the tracked definition says POINT.
    let b = TableMapBuilder::new("geo", "t", cols());
    let s = TableSchema::from_table_map(&b.event()).unwrap();
    assert_eq!(kinds(&s)[1..], [ColumnKind::Geometry, ColumnKind::Geometry]);
    let def = match ddl::parse_ddl(
        Some("geo"),
        "CREATE TABLE t (id INT NOT NULL, g GEOMETRY, p POINT)",
    ) {
        ddl::DdlParse::Changes(mut c) => match c.remove(0) {
            ddl::DdlChange::CreateTable { def, .. } => def,
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    };
    let mut b = TableMapBuilder::new("geo", "t", cols());
    b.with_names = false;
    let s = TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::MySql, &def).unwrap();
    assert_eq!(kinds(&s)[1..], [ColumnKind::Geometry, ColumnKind::Point]);
    // The definition sluice records from a table map keeps POINT.
    let mut b = TableMapBuilder::new("geo", "t", cols());
    b.geometry_types = vec![0, 1];
    let s = TableSchema::from_table_map(&b.event()).unwrap();
    let again = TableDef::from_schema(&s);
    let mut b = TableMapBuilder::new("geo", "t", cols());
    b.with_names = false;
    let s = TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::MySql, &again).unwrap();
    assert_eq!(kinds(&s)[2], ColumnKind::Point);
}

/// MariaDB 11.8 logs `VECTOR(3)` as VARCHAR of 12 bytes in the binary charset (its table map
/// of `(id INT, v VECTOR(3))`: types 3, 15, metadata `0c 00`, COLUMN_CHARSET 63): the tracked
/// `vector(3)` agrees with it (no history correction), `vector(4)` does not, and the column
/// is a VECTOR(3) (Debezium's `io.debezium.data.FloatVector`), as on MySQL.
#[test]
fn mariadb_vector_is_logged_as_varbinary_of_four_bytes_per_dimension() {
    let cols = vec![
        ColSpec::new("id", 3, &[]).not_null(),
        ColSpec::new("v", 15, &[12, 0]).charset(63),
    ];
    let mut b = TableMapBuilder::new("d", "t", cols);
    b.no_optional = true;
    let mut def = TableDef::new("d", "t");
    def.columns = vec![
        tracked::ColumnDef::new("id", "int"),
        tracked::ColumnDef::new("v", "vector(3)"),
    ];
    let s = TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::MariaDb, &def).unwrap();
    assert_eq!(
        s.columns[1].kind,
        ColumnKind::Vector {
            dimensions: Some(3)
        }
    );
    assert_eq!(TableDef::from_schema(&s).columns[1].sql_type, "vector(3)");
    // A snapshot's schema (from the definition alone) is the table map's.
    let logged =
        TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::MariaDb, &def).unwrap();
    let loaded = TableSchema::from_def(&def, &[(0, 4), (63, 12)], ServerFlavor::MariaDb).unwrap();
    assert_eq!(loaded.columns[1].kind, logged.columns[1].kind);
    // MySQL logs the type itself.
    let mysql = TableSchema::from_def(&def, &[(0, 4), (63, 12)], ServerFlavor::MySql).unwrap();
    assert_eq!(
        mysql.columns[1].kind,
        ColumnKind::Vector {
            dimensions: Some(3)
        }
    );
    def.columns[1] = tracked::ColumnDef::new("v", "vector(4)");
    assert!(TableSchema::from_table_map_with_def(&b.event(), ServerFlavor::MariaDb, &def).is_err());
}
