//! A value does not depend on how it was read: the same rows, read from the binlog by sluice's
//! row decoder and read with a snapshot `SELECT` (`sluice::snapshot::values`), encode to the same
//! bytes with the JSON and the Avro encoder, column by column, on both servers.
//!
//! Each flavour gets its own database with the type matrix (`support::matrix`: rows A, B and a
//! row of NULLs per table) and extra tables for the edges (zero and partial dates, negative and
//! fractional TIME, TIMESTAMP(0..6) bounds, 64-member SETs, invalid ENUMs, padded CHAR/BINARY,
//! ZEROFILL, UTF-16/32 text, JSON documents with every kind of number and opaque value, SRIDs,
//! MySQL VECTOR, MariaDB UUID/INET6/INET4). The binlog side reads the inserts' events in process
//! (the schema of each table is the one of its TABLE_MAP, as the stream builds it); the snapshot
//! side runs `SESSION_SETUP` and `SELECT {select_list} FROM t WHERE id >= ?` as a prepared
//! statement and converts each row with `decode_row`.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use mysql_async::prelude::*;
use mysql_async::BinlogStreamRequest;
use mysql_common::binlog::events::EventData;

use sluice::binlog::rows::{is_rows_event, parse_rows_event, RowDecoder, RowImage};
use sluice::config::route::RouteTarget;
use sluice::config::Format;
use sluice::encode::avro::{column_datum, AvroEncoder, AvroOptions};
use sluice::encode::change::{Envelope, Op, RowPos};
use sluice::encode::json::JsonEncoder;
use sluice::encode::json_value::write_json_value;
use sluice::pipeline::{TableCtx, TxnMeta};
use sluice::schema::{ServerFlavor, TableSchema};
use sluice::snapshot::{decode_row, select_list, SESSION_SETUP};
use sluice::value::Value;
use support::matrix::{create_tables, matrix};
use support::*;

per_flavor!(
    snapshot_values_equal_binlog_values,
    matrix_through_the_pipeline_reads_as_it_streams
);

/// An extra table: name, column definitions (after `id INT PRIMARY KEY`), rows of literals
/// (one per column; the row id is added).
struct Extra {
    name: &'static str,
    cols: Vec<(&'static str, &'static str)>,
    rows: Vec<Vec<String>>,
}

fn s(v: &str) -> String {
    v.to_string()
}

/// A JSON literal for the `JSON` column (MariaDB: any text; MySQL: stored as binary JSON).
fn js(doc: &str) -> String {
    format!("'{}'", doc.replace('\\', "\\\\").replace('\'', "''"))
}

fn extras(f: Flavor) -> Vec<Extra> {
    let set64: Vec<String> = (0..64).map(|i| format!("'m{i}'")).collect();
    let set64 = Box::leak(format!("SET({})", set64.join(",")).into_boxed_str());
    let mut out = vec![
        Extra {
            name: "edges",
            cols: vec![
                ("t0", "TIME"),
                ("t1", "TIME(1)"),
                ("t3", "TIME(3)"),
                ("t6", "TIME(6)"),
                ("dt1", "DATETIME(1)"),
                ("dt2", "DATETIME(2)"),
                ("dt4", "DATETIME(4)"),
                ("dt5", "DATETIME(5)"),
                ("ts1", "TIMESTAMP(1) NULL"),
                ("ts2", "TIMESTAMP(2) NULL"),
                ("ts4", "TIMESTAMP(4) NULL"),
                ("ts5", "TIMESTAMP(5) NULL"),
                ("ts6", "TIMESTAMP(6) NULL"),
                ("d", "DATE"),
                ("y", "YEAR"),
                ("e", "ENUM('a','b')"),
                ("s64", set64),
                ("b1", "BIT(1)"),
                ("b64", "BIT(64)"),
                ("c5", "CHAR(5)"),
                ("cl", "CHAR(3) CHARACTER SET latin1"),
                ("u16", "VARCHAR(10) CHARACTER SET utf16"),
                ("u32", "VARCHAR(10) CHARACTER SET utf32"),
                ("bn", "BINARY(3)"),
                ("vb", "VARBINARY(4)"),
                ("dz", "DECIMAL(8,3) ZEROFILL"),
                ("iz", "INT(6) UNSIGNED ZEROFILL"),
                ("f", "FLOAT"),
                ("g", "GEOMETRY"),
            ],
            rows: vec![
                vec![
                    s("'-00:00:00'"),
                    s("'-00:00:00.5'"),
                    s("'-00:00:01.001'"),
                    s("'-838:59:59.000000'"),
                    s("'2024-02-29 12:00:00.9'"),
                    s("'2024-00-00 00:00:00.99'"),
                    s("'0000-00-00 00:00:00'"),
                    s("'1000-01-01 00:00:00.00001'"),
                    s("'2038-01-19 03:14:07.9'"),
                    s("'1970-01-01 00:00:01.01'"),
                    s("'1999-12-31 23:59:59.9999'"),
                    s("'2000-01-01 00:00:00.00001'"),
                    s("'2038-01-19 03:14:07.999999'"),
                    s("'2024-00-15'"),
                    s("0"),
                    s("'zzz'"),
                    s("18446744073709551615"),
                    s("b'0'"),
                    s("b'1111111111111111111111111111111111111111111111111111111111111111'"),
                    s("'ab   '"),
                    s("'é'"),
                    s("'A😀'"),
                    s("'A😀'"),
                    s("X'000000'"),
                    s("X'01000000'"),
                    s("12.5"),
                    s("42"),
                    s("-0.0"),
                    s("ST_GeomFromText('POINT(1 2)', 4326)"),
                ],
                vec![
                    s("'00:00:00'"),
                    s("'838:59:59.9'"),
                    s("'-00:00:00.001'"),
                    s("'-00:00:00.999999'"),
                    s("'9999-12-31 23:59:59.9'"),
                    s("'1970-01-01 00:00:00.01'"),
                    s("'2024-03-01 10:20:30.1234'"),
                    s("'2024-03-01 10:20:30.12345'"),
                    s("'0000-00-00 00:00:00'"),
                    s("'0000-00-00 00:00:00'"),
                    s("'2024-03-01 10:20:30.0001'"),
                    s("'2024-03-01 10:20:30.99999'"),
                    s("'0000-00-00 00:00:00'"),
                    s("'0000-00-00'"),
                    s("2000"),
                    s("''"),
                    s("'m0,m63'"),
                    s("b'1'"),
                    s("b'0'"),
                    s("''"),
                    s("'ÿ€'"),
                    s("''"),
                    s("'𝄞'"),
                    s("X'FF'"),
                    s("X''"),
                    s("-0.001"),
                    s("0"),
                    s("3.4028235e38"),
                    s("ST_GeomFromText('GEOMETRYCOLLECTION(POINT(1 1), LINESTRING(0 0, 1 1))')"),
                ],
            ],
        },
        Extra {
            name: "jdocs",
            cols: vec![("j", "JSON")],
            rows: [
                js("[1.0, 0.1, 1e300, -0.0, 0.0, 1e-7, 1e14, 1e15, 1e16, 1e21, 123456789012345.6, 5e-324, 1.7976931348623157e308, -2.2250738585072014e-308, 100, 18446744073709551615, -9223372036854775808, 9223372036854775807, 2.5e-16, 1e-15, 0.000001, 3.141592653589793, -1.5]"),
                // MySQL: opaque DECIMAL, DATE, TIME, DATETIME and binary values, a FLOAT as a
                // double, BIT as an opaque value (MariaDB has no CAST AS JSON).
                format!(
                    "JSON_OBJECT('b', 1, 'a', 2, 'aa', CAST(1.50 AS DECIMAL(5,2)), 'neg', \
                     CAST(-0.05 AS DECIMAL(4,3)), 'd', CAST('2024-01-02' AS DATE), 't', \
                     CAST('-12:34:56.5' AS TIME(1)), 'dt', CAST('2024-01-02 03:04:05.123' AS \
                     DATETIME(3)), 'x', CAST(REPEAT('a', 100) AS BINARY), 'f', CAST(1.1 AS \
                     FLOAT){})",
                    if f.mysql {
                        ", 'bit', CAST(b'101' AS JSON)"
                    } else {
                        ""
                    }
                ),
                js(r#"{"s": "a\"b\\c\n/é😀\t\u0001\u001f\u007f", "": "", "k\"ey": [[], {}], "nested": {"z": [1, [2, [3, {"deep": null}]]]}}"#),
                js(r#""just a string""#),
                js("null"),
                js("true"),
                js("{}"),
                js("[]"),
                js("-0"),
                js("12345678901234567890123"),
                js(r#"{"a": 1, "a": 2, "b": {"x": 1, "x": [2]}}"#),
                s("JSON_ARRAY(REPEAT('x', 70000), 1, JSON_OBJECT('big', REPEAT('y', 70000)))"),
                s("JSON_OBJECT('dt6', CAST('9999-12-31 23:59:59.999999' AS DATETIME(6)), 't', CAST('838:59:59' AS TIME), 'neg', CAST('-838:59:59.000001' AS TIME(6)), 'date0', CAST('1000-01-01' AS DATE))"),
            ]
            .into_iter()
            .map(|v| vec![v])
            .collect(),
        },
    ];
    if f.mysql {
        out.push(Extra {
            name: "vec",
            cols: vec![("v", "VECTOR(3)")],
            rows: vec![
                vec![s("TO_VECTOR('[1.5, -2, 3e38]')")],
                vec![s("TO_VECTOR('[0, -0, 0.1]')")],
            ],
        });
    } else {
        out.push(Extra {
            name: "maria_extra",
            cols: vec![("u", "UUID"), ("i6", "INET6"), ("i4", "INET4")],
            rows: vec![
                vec![
                    s("'6ccd780c-baba-4026-9564-5b8c656024db'"),
                    s("'::'"),
                    s("'0.0.0.0'"),
                ],
                vec![
                    s("'ffffffff-ffff-7fff-bfff-ffffffffffff'"),
                    s("'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'"),
                    s("'255.255.255.255'"),
                ],
                vec![
                    s("'01890a5d-ac96-774b-bcce-b302099a8057'"),
                    s("'fe80::1'"),
                    s("'192.0.2.1'"),
                ],
            ],
        });
    }
    out
}

/// The end of the server's last binlog.
async fn binlog_end(c: &mut mysql_async::Conn) -> (String, u64) {
    let rows: Vec<mysql_async::Row> = c.query("SHOW BINARY LOGS").await.expect("SHOW BINARY LOGS");
    let last = rows.last().expect("binary logging is on");
    (
        last.get::<String, _>(0).expect("log name"),
        last.get::<u64, _>(1).expect("log size"),
    )
}

/// Rows of one table as decoded from the binlog: the schema of its (last) TABLE_MAP and the
/// after images of its inserts.
struct Logged {
    schema: Arc<TableSchema>,
    rows: Vec<Vec<Value>>,
}

/// Decodes the inserts into `db` from `from` to the end of the binlog with sluice's decoder.
async fn read_binlog(f: Flavor, from: &(String, u64), db: &str) -> BTreeMap<String, Logged> {
    let conn = root(f.port).await;
    let request = BinlogStreamRequest::new(20_000 + rand::random::<u32>() % 40_000)
        .with_filename(from.0.as_bytes())
        .with_pos(from.1)
        .with_non_blocking();
    let mut stream = conn
        .get_binlog_stream(request)
        .await
        .expect("binlog stream");
    let flavor = if f.mysql {
        ServerFlavor::MySql
    } else {
        ServerFlavor::MariaDb
    };
    let mut decoders: BTreeMap<u64, RowDecoder> = BTreeMap::new();
    let mut out: BTreeMap<String, Logged> = BTreeMap::new();
    let read = async {
        while let Some(ev) = stream.next().await {
            let ev = ev.expect("binlog event");
            let etype = ev.header().event_type_raw();
            if is_rows_event(etype) {
                let post_header_len = ev
                    .fde()
                    .event_type_header_lengths()
                    .get(usize::from(etype).saturating_sub(1))
                    .copied()
                    .filter(|l| *l == 6 || *l == 8)
                    .unwrap_or(8);
                let hdr = parse_rows_event(etype, post_header_len, ev.data()).expect("rows event");
                let Some(dec) = decoders.get(&hdr.table_id) else {
                    continue;
                };
                let mut images: Vec<RowImage> = Vec::new();
                dec.decode(&hdr, &mut images).expect("decode rows");
                let entry = out
                    .entry(dec.schema().table.clone())
                    .or_insert_with(|| Logged {
                        schema: dec.schema().clone(),
                        rows: Vec::new(),
                    });
                entry.schema = dec.schema().clone();
                for img in images {
                    entry.rows.push(img.after.expect("insert after image"));
                }
                continue;
            }
            if let Ok(Some(EventData::TableMapEvent(tme))) = ev.read_data() {
                if tme.database_name() == db {
                    let schema = TableSchema::from_table_map_with_flavor(&tme, flavor)
                        .expect("FULL metadata");
                    let dec = RowDecoder::new(Arc::new(schema), &tme).expect("decoder");
                    decoders.insert(tme.table_id(), dec);
                }
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("binlog read within 60 s");
    out
}

/// Reads a table the snapshot way: a fresh session with `SESSION_SETUP`, then the select list
/// through a prepared statement (binary protocol).
async fn read_select(c: &mut mysql_async::Conn, db: &str, schema: &TableSchema) -> Vec<Vec<Value>> {
    for stmt in SESSION_SETUP {
        c.query_drop(*stmt)
            .await
            .unwrap_or_else(|e| panic!("{stmt}: {e}"));
    }
    let sql = format!(
        "SELECT {} FROM `{db}`.`{}` WHERE `id` >= ? ORDER BY `id`",
        select_list(schema),
        schema.table
    );
    let rows: Vec<mysql_async::Row> = c
        .exec(&sql, (0,))
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows.into_iter()
        .map(|r| decode_row(schema, r).unwrap_or_else(|e| panic!("decode_row: {e}")))
        .collect()
}

fn ctx(schema: &Arc<TableSchema>, format: Format) -> TableCtx {
    let route = RouteTarget {
        on_schema_change: Default::default(),
        topic: format!("{}.{}", schema.db, schema.table),
        format,
        key_columns: vec![],
        tombstones: true,
        avro: AvroOptions::default(),
        json_schemas: false,
        rules: Default::default(),
    };
    TableCtx::new(schema.clone(), route, schema.primary_key.clone()).expect("table context")
}

fn show(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) => s.to_string(),
        Err(_) => format!("{b:02x?}"),
    }
}

/// Compares the two readings of one table; returns the number of cells compared.
fn compare(flavor: &str, logged: &Logged, selected: &[Vec<Value>]) -> usize {
    let schema = &logged.schema;
    let t = format!("{}.{}", schema.db, schema.table);
    assert_eq!(
        logged.rows.len(),
        selected.len(),
        "[{flavor}] {t}: {} rows in the binlog, {} from the SELECT",
        logged.rows.len(),
        selected.len()
    );
    let json_t = ctx(schema, Format::Json);
    let avro_t = ctx(schema, Format::Avro);
    let mut cells = 0;
    for (r, (b, s)) in logged.rows.iter().zip(selected).enumerate() {
        assert_eq!(b.len(), s.len(), "[{flavor}] {t} row {r}: widths");
        for (i, col) in schema.columns.iter().enumerate() {
            let (bv, sv) = (&b[i], &s[i]);
            let mut bj = Vec::new();
            let mut sj = Vec::new();
            write_json_value(&mut bj, col, bv);
            write_json_value(&mut sj, col, sv);
            assert!(
                bj == sj,
                "[{flavor}] {t} row {r} column `{}` ({}): JSON differs\n  binlog: {bv:?} → {}\n  \
                 select: {sv:?} → {}",
                col.name,
                col.kind.type_name(),
                show(&bj),
                show(&sj)
            );
            let ba = column_datum(&avro_t, i, b).expect("Avro of the binlog value");
            let sa = column_datum(&avro_t, i, s).expect("Avro of the selected value");
            assert!(
                ba == sa,
                "[{flavor}] {t} row {r} column `{}` ({}): Avro differs\n  binlog: {bv:?} → \
                 {ba:02x?}\n  select: {sv:?} → {sa:02x?}",
                col.name,
                col.kind.type_name()
            );
            assert_eq!(
                bv, sv,
                "[{flavor}] {t} row {r} column `{}`: same encodings, different values",
                col.name
            );
            cells += 1;
        }
        // Whole records, as a snapshot would write them.
        let meta = TxnMeta {
            connector: if flavor == "mysql" {
                "mysql"
            } else {
                "mariadb"
            },
            file: "snapshot".into(),
            ..Default::default()
        };
        let rp = RowPos {
            source_ts_us: 0,
            pos: 0,
            row: 0,
            total_order: 1,
            data_collection_order: 1,
            snapshot: sluice::model::SnapshotMark::True,
        };
        fn read<'a>(
            table: &'a TableCtx,
            meta: &'a TxnMeta,
            after: &'a [Value],
            row_pos: RowPos,
        ) -> Envelope<'a> {
            Envelope {
                table,
                meta,
                op: Op::Read,
                before: None,
                after: Some(after),
                row_pos,
                ts: sluice::encode::envelope::EventTime { ns: 1_000_000 },
            }
        }
        let json = JsonEncoder::new("snap");
        assert!(
            json.envelope(&read(&json_t, &meta, b, rp))
                == json.envelope(&read(&json_t, &meta, s, rp)),
            "[{flavor}] {t} row {r}: JSON envelopes differ"
        );
        let avro = AvroEncoder::new("snap");
        let env = |row: &[Value]| {
            avro.envelope(1, &read(&avro_t, &meta, row, rp))
                .expect("Avro envelope")
        };
        assert!(
            env(b) == env(s),
            "[{flavor}] {t} row {r}: Avro envelopes differ"
        );
    }
    cells
}

async fn snapshot_values_equal_binlog_values(f: Flavor) {
    let db = unique(&format!("snapvals_{}", f.name));
    let mut c = root(f.port).await;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {db}"),
            "SET time_zone = '+00:00'",
            "SET sql_mode = ''",
        ],
    )
    .await;
    let tables = matrix(f);
    create_tables(&mut c, &db, &tables).await;
    let extras = extras(f);
    for x in &extras {
        let defs: Vec<String> = x.cols.iter().map(|(n, t)| format!("{n} {t}")).collect();
        exec(
            &mut c,
            &[&format!(
                "CREATE TABLE {db}.{} (id INT PRIMARY KEY, {}) CHARACTER SET utf8mb4",
                x.name,
                defs.join(", ")
            )],
        )
        .await;
    }
    let from = binlog_end(&mut c).await;
    for (t, cols) in &tables {
        let names: Vec<&str> = cols.iter().map(|c| c.name).collect();
        let a: Vec<&str> = cols.iter().map(|c| c.a).collect();
        let b: Vec<&str> = cols.iter().map(|c| c.b).collect();
        exec(
            &mut c,
            &[
                &format!(
                    "INSERT INTO {db}.{t} (id, {}) VALUES (1, {})",
                    names.join(", "),
                    a.join(", ")
                ),
                &format!(
                    "INSERT INTO {db}.{t} (id, {}) VALUES (2, {})",
                    names.join(", "),
                    b.join(", ")
                ),
                &format!("INSERT INTO {db}.{t} (id) VALUES (3)"),
            ],
        )
        .await;
    }
    for x in &extras {
        let names: Vec<&str> = x.cols.iter().map(|(n, _)| *n).collect();
        for (i, row) in x.rows.iter().enumerate() {
            exec(
                &mut c,
                &[&format!(
                    "INSERT INTO {db}.{} (id, {}) VALUES ({}, {})",
                    x.name,
                    names.join(", "),
                    i + 1,
                    row.join(", ")
                )],
            )
            .await;
        }
        exec(
            &mut c,
            &[&format!(
                "INSERT INTO {db}.{} (id) VALUES ({})",
                x.name,
                x.rows.len() + 1
            )],
        )
        .await;
    }
    let logged = read_binlog(f, &from, &db).await;
    let names: Vec<&str> = tables
        .iter()
        .map(|(t, _)| *t)
        .chain(extras.iter().map(|x| x.name))
        .collect();
    // A fresh connection: the snapshot session's settings are all its own.
    let mut snap = root(f.port).await;
    let mut cells = 0;
    for t in &names {
        let l = logged
            .get(*t)
            .unwrap_or_else(|| panic!("[{}] no rows of {t} in the binlog", f.name));
        let selected = read_select(&mut snap, &db, &l.schema).await;
        cells += compare(f.name, l, &selected);
    }
    eprintln!(
        "[{}] {} tables, {cells} cells: binlog and SELECT values encode identically",
        f.name,
        names.len()
    );
    exec(&mut c, &[&format!("DROP DATABASE {db}")]).await;
}

/// The type matrix end to end: rows A, B and an all-defaults row arrive as `r` records of an
/// initial snapshot, then the same stored values are copied by `INSERT ... SELECT` under other
/// ids and arrive as `c` records from the binlog. Apart from the id, each `r` record's `after`
/// equals its copy's, column by column, as the JSON the pipeline wrote.
async fn matrix_through_the_pipeline_reads_as_it_streams(flavor: Flavor) {
    let p = Pipeline::new(flavor, "matrixsnap", "");
    p.edit_config("start = \"latest\"", "start = \"initial\"");
    let db = p.db.clone();
    let tables = matrix(flavor);
    let mut c = root(flavor.port).await;
    exec(&mut c, &[&format!("CREATE DATABASE {db}")]).await;
    create_tables(&mut c, &db, &tables).await;
    exec(&mut c, &["SET time_zone = '+00:00'", "SET sql_mode = ''"]).await;
    for (t, cols) in &tables {
        let names: Vec<&str> = cols.iter().map(|c| c.name).collect();
        let a: Vec<&str> = cols.iter().map(|c| c.a).collect();
        let b: Vec<&str> = cols.iter().map(|c| c.b).collect();
        exec(
            &mut c,
            &[
                &format!(
                    "INSERT INTO {db}.{t} (id, {}) VALUES (1, {}), (2, {})",
                    names.join(", "),
                    a.join(", "),
                    b.join(", ")
                ),
                &format!("INSERT INTO {db}.{t} (id) VALUES (3)"),
            ],
        )
        .await;
    }
    let mut child = p.spawn();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let (code, out) = p.command(&["offsets", "show"]);
        if code == 0 && out.contains("\"snapshot\"") && !out.contains("\"done\": false") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "snapshot did not finish; log:\n{}",
            p.log()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    for (t, cols) in &tables {
        let names: Vec<&str> = cols.iter().map(|c| c.name).collect();
        exec(
            &mut c,
            &[&format!(
                "INSERT INTO {db}.{t} (id, {n}) SELECT id + 100, {n} FROM {db}.{t} WHERE id <= 3",
                n = names.join(", ")
            )],
        )
        .await;
    }
    let topics: Vec<String> = tables.iter().map(|(t, _)| p.topic(t)).collect();
    let recs = consume(
        &topics,
        "read_committed",
        tables.len() * 6,
        Duration::from_secs(2),
        Duration::from_secs(120),
    );
    terminate(&mut child);
    let mut cells = 0;
    for (t, cols) in &tables {
        let mut by_id: BTreeMap<i64, (String, serde_json::Value)> = BTreeMap::new();
        for r in recs.iter().filter(|r| r.topic == p.topic(t)) {
            let v = r.value.as_ref().expect("value");
            let mut after = v["after"].clone();
            let id = after["id"].as_i64().expect("id");
            after
                .as_object_mut()
                .expect("after is an object")
                .remove("id");
            by_id.insert(id, (v["op"].as_str().unwrap_or("").to_string(), after));
        }
        for id in 1..=3 {
            let (op_r, read) = by_id
                .get(&id)
                .unwrap_or_else(|| panic!("[{}] {t}: no record of id {id}", flavor.name));
            let (op_c, streamed) = by_id
                .get(&(id + 100))
                .unwrap_or_else(|| panic!("[{}] {t}: no record of id {}", flavor.name, id + 100));
            assert_eq!(
                (op_r.as_str(), op_c.as_str()),
                ("r", "c"),
                "[{}] {t}",
                flavor.name
            );
            for col in cols {
                assert_eq!(
                    read[col.name], streamed[col.name],
                    "[{}] {t}.{} of row {id}: the snapshot read differs from the binlog",
                    flavor.name, col.name
                );
                cells += 1;
            }
        }
    }
    eprintln!(
        "[{}] {cells} cells equal through the pipeline (snapshot vs binlog)",
        flavor.name
    );
}
