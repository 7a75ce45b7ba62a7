//! Assembler tests: tagged GTIDs, compressed transaction payloads (plain and damaged), older
//! servers' events (constructed fixtures), table maps with and without full metadata and
//! the schema history, and events captured from a real MySQL 9.7.4.

use super::*;
use crate::binlog::events::{self, types};
use crate::binlog::payload::PayloadReader;
use crate::error::Error;
use crate::position::GtidSet;
use crate::schema::ddl::{DdlChange, DdlParse};
use mysql_common::binlog::events::Event;

// ------------------------------------------------------------ assembling events

use crate::binlog::fixtures::{self as fx, event};
use crate::binlog::table_map_builder::{ColSpec, TableMapBuilder};
use crate::pipeline::Change;
use mysql_common::binlog::events::FormatDescriptionEvent;

const UUID_BYTES: [u8; 16] = [
    0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1, 0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95, 0x62,
];

fn router() -> Arc<Router> {
    let text = r#"
name = "t"
[source]
url = "mysql://u:p@127.0.0.1:3306"
server_id = 5401
include = ["shop\\..*", "sluice_probe\\..*"]
[kafka]
bootstrap_servers = "127.0.0.1:9092"
"#;
    let cfg = crate::config::Config::from_str_with_env(text, Vec::new()).unwrap();
    Arc::new(cfg.router().unwrap())
}

fn assembler(gtid: bool) -> Assembler {
    let tracker = Tracker {
        file: "binlog.000001".into(),
        pos: 4,
        mysql: gtid.then(GtidSet::new),
        mariadb: None,
        xa_prepared: BTreeMap::new(),
    };
    Assembler::new(Flavor::MySql, router(), tracker, SkipSet::default())
}

/// Feeds `(type, log_pos, body)` events, each of which must be accepted, into `a`.
fn feed(
    a: &mut Assembler,
    fde: &FormatDescriptionEvent<'_>,
    events: &[(u8, u32, Vec<u8>)],
    out: &mut Vec<Change>,
) {
    for (etype, pos, body) in events {
        a.on_event(&event(fde, *etype, *pos, body), out)
            .unwrap_or_else(|e| panic!("event type {etype} at {pos}: {e}"));
    }
}

fn table(db: &str, names: bool) -> TableMapBuilder {
    let mut b = TableMapBuilder::new(db, "t", vec![ColSpec::new("id", 3, &[]).not_null()]);
    b.pk = vec![0];
    b.with_names = names;
    b
}

/// BEGIN, TABLE_MAP shop.t, WRITE_ROWS (id = 7), XID, with the given end positions
/// (0 = inside a payload).
fn txn_events(fde: &FormatDescriptionEvent<'_>, pos: [u32; 4]) -> Vec<Vec<u8>> {
    let _ = fde;
    vec![
        fx::raw(types::QUERY, pos[0], &fx::query_body("shop", "BEGIN")),
        fx::raw(types::TABLE_MAP, pos[1], &table("shop", true).body()),
        fx::raw(
            types::WRITE_ROWS_V2,
            pos[2],
            &fx::rows_v2_body(42, 1, 1, &[], &[0, 7, 0, 0, 0]),
        ),
        fx::raw(types::XID, pos[3], &fx::xid_body(9)),
    ]
}

fn read(fde: &FormatDescriptionEvent<'_>, raw: &[u8]) -> Event {
    Event::read(fde, raw).unwrap()
}

/// A compact view of changes: `B <gtid>`, `R <values>`, `C <position>`, `P <position>`.
/// History-only schema events (a table's first known shape) are left out: see
/// `history_of`.
fn view(out: &[Change]) -> Vec<String> {
    out.iter()
        .filter(|c| !matches!(c, Change::Schema(ev) if ev.record.is_none()))
        .map(|c| match c {
            Change::Begin(m) => format!("B {}", m.gtid.clone().unwrap_or_default()),
            Change::Rows { rows, .. } => format!("R {:?}", rows[0].after),
            Change::Commit(cp) => format!("C {}", cp.position),
            Change::Progress(cp) => format!("P {}", cp.position),
            Change::Schema(ev) => format!("S {}.{}", ev.db, ev.table),
        })
        .collect()
}

#[test]
fn tagged_gtid_transaction_carries_and_records_the_tag() {
    let fde = fx::fde_8_0();
    let mut a = assembler(true);
    let mut out = Vec::new();
    let g = fx::tagged_gtid_body(UUID_BYTES, "mytag", 42, &[]);
    a.on_event(&event(&fde, types::GTID_TAGGED, 200, &g), &mut out)
        .unwrap();
    for raw in txn_events(&fde, [300, 400, 500, 531]) {
        a.on_event(&read(&fde, &raw), &mut out).unwrap();
    }
    let v = view(&out);
    assert_eq!(v[0], "B 3e11fa47-71ca-11e1-9e33-c80aa9429562:mytag:42");
    assert!(v[1].starts_with("R "), "{v:?}");
    assert_eq!(v.len(), 3);
    let set = a.tracker().mysql.clone().unwrap();
    assert_eq!(
        set.to_string(),
        "3e11fa47-71ca-11e1-9e33-c80aa9429562:mytag:42"
    );
    assert!(v[2].contains(":mytag:42"), "{v:?}");
}

#[test]
fn malformed_tagged_gtid_is_a_definite_error() {
    let fde = fx::fde_8_0();
    let mut a = assembler(true);
    let g = fx::tagged_gtid_body(UUID_BYTES, "mytag", 42, &[]);
    let e = a
        .on_event(
            &event(&fde, types::GTID_TAGGED, 200, &g[..10]),
            &mut Vec::new(),
        )
        .unwrap_err();
    assert_eq!(e.kind(), crate::error::ErrorKind::Definite);
    assert!(e.to_string().contains("binlog.000001:"), "{e}");
    // An upper-case tag is not a valid MySQL tag (the server lowercases them).
    let g = fx::tagged_gtid_body(UUID_BYTES, "Bad-Tag", 42, &[]);
    assert!(a
        .on_event(&event(&fde, types::GTID_TAGGED, 200, &g), &mut Vec::new())
        .is_err());
}

/// Runs GTID + the transaction as plain events, and GTID + the same transaction as one
/// TRANSACTION_PAYLOAD ending where the plain XID ended.
fn plain_and_payload(zstd: bool) -> (Vec<String>, Vec<String>, Assembler, Vec<Vec<u8>>) {
    let fde = fx::fde_8_0();
    let gtid = fx::gtid_body(UUID_BYTES, 5, true);
    let mut plain = assembler(true);
    let mut out = Vec::new();
    plain
        .on_event(&event(&fde, types::GTID, 200, &gtid), &mut out)
        .unwrap();
    for raw in txn_events(&fde, [300, 400, 500, 531]) {
        plain.on_event(&read(&fde, &raw), &mut out).unwrap();
    }
    let plain_view = view(&out);

    let inner = txn_events(&fde, [0; 4]);
    let body = fx::payload_body(&inner.concat(), zstd);
    let mut a = assembler(true);
    let mut out = Vec::new();
    a.on_event(&event(&fde, types::GTID, 200, &gtid), &mut out)
        .unwrap();
    a.on_event(
        &event(&fde, types::TRANSACTION_PAYLOAD, 531, &body),
        &mut out,
    )
    .unwrap();
    (plain_view, view(&out), a, inner)
}

#[test]
fn payload_yields_the_same_changes_as_plain_events() {
    for zstd in [true, false] {
        let (plain, payload, mut a, inner) = plain_and_payload(zstd);
        assert_eq!(plain, payload, "zstd {zstd}");
        assert_eq!(plain.len(), 3);
        assert!(plain[2].ends_with(":5"), "{plain:?}");
        assert_eq!(inner.len(), 4);
        assert_eq!(a.tracker().pos, 531);
        // The replication connection yields the payload once, never its inner events
        // again: the next event is the next transaction.
        let fde = fx::fde_8_0();
        let mut out = Vec::new();
        let gtid = fx::gtid_body(UUID_BYTES, 6, true);
        a.on_event(&event(&fde, types::GTID, 600, &gtid), &mut out)
            .unwrap();
        for raw in txn_events(&fde, [700, 800, 900, 931]) {
            a.on_event(&read(&fde, &raw), &mut out).unwrap();
        }
        let v = view(&out);
        assert_eq!(v.len(), 3, "{v:?}");
        assert!(v[2].ends_with(":5-6"), "{v:?}");
        assert_eq!(a.tracker().pos, 931);
    }
}

fn payload_error(body: &[u8]) -> Error {
    let fde = fx::fde_8_0();
    let mut a = assembler(true);
    let mut out = Vec::new();
    let gtid = fx::gtid_body(UUID_BYTES, 5, true);
    a.on_event(&event(&fde, types::GTID, 200, &gtid), &mut out)
        .unwrap();
    let e = a
        .on_event(
            &event(&fde, types::TRANSACTION_PAYLOAD, 900, body),
            &mut out,
        )
        .unwrap_err();
    // No commit came out of a damaged payload.
    assert!(!out.iter().any(|c| matches!(c, Change::Commit(_))));
    assert_eq!(e.kind(), crate::error::ErrorKind::Definite, "{e}");
    let text = e.to_string();
    assert!(text.contains("binlog_transaction_compression"), "{text}");
    assert!(text.contains("binlog.000001:"), "{text}");
    e
}

#[test]
fn damaged_payloads_are_definite_errors() {
    let fde = fx::fde_8_0();
    let inner = txn_events(&fde, [0; 4]).concat();
    let good = fx::payload_body(&inner, true);
    let hdr = crate::binlog::payload::parse_payload_header(&good).unwrap();
    let compressed = good[hdr.payload_at..].to_vec();

    // Corrupted compressed bytes (zstd's frame checks or the size check catch it).
    let mut bad = compressed.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0xff;
    bad[mid + 1] ^= 0x55;
    payload_error(&fx::payload_body_raw(0, inner.len() as u64, &bad));
    // Not zstd at all.
    payload_error(&fx::payload_body_raw(
        0,
        inner.len() as u64,
        b"not zstd data",
    ));
    // Truncated compressed data.
    payload_error(&fx::payload_body_raw(
        0,
        inner.len() as u64,
        &compressed[..compressed.len() - 5],
    ));
    // Uncompressed size field too small / too large.
    payload_error(&fx::payload_body_raw(
        0,
        inner.len() as u64 - 1,
        &compressed,
    ));
    payload_error(&fx::payload_body_raw(
        0,
        inner.len() as u64 + 1,
        &compressed,
    ));
    // An inner event cut short (uncompressed payload ends inside it).
    payload_error(&fx::payload_body(&inner[..inner.len() - 3], true));
    payload_error(&fx::payload_body(&inner[..inner.len() - 3], false));
    // Unknown compression type.
    let e = payload_error(&fx::payload_body_raw(7, inner.len() as u64, &inner));
    assert!(e.to_string().contains("compression type 7"), "{e}");
    // Payload size field disagreeing with the event.
    let mut b = fx::payload_body(&inner, false);
    b.push(0);
    payload_error(&b);
}

#[test]
fn payload_reader_holds_one_inner_event_at_a_time() {
    // 2000 rows events: the reader hands them out one by one, each read into the same
    // buffer; nothing holds the decompressed transaction.
    let fde = fx::fde_8_0();
    let row = fx::raw(
        types::WRITE_ROWS_V2,
        0,
        &fx::rows_v2_body(42, 1, 1, &[], &[0, 7, 0, 0, 0]),
    );
    let inner = row.repeat(2000);
    let body = fx::payload_body(&inner, true);
    let ev = event(&fde, types::TRANSACTION_PAYLOAD, 100_000, &body);
    let mut rd = PayloadReader::open(&ev, "binlog.000001:4".into(), 1 << 30).unwrap();
    let mut n = 0;
    while let Some(e) = rd.next_event().unwrap() {
        assert_eq!(e.header().event_type_raw(), types::WRITE_ROWS_V2);
        assert_eq!(e.data().len(), row.len() - 19);
        n += 1;
    }
    assert_eq!(n, 2000);
    assert!(rd.next_event().unwrap().is_none());
}

// ------------------------------------------------ older servers (constructed fixtures)

#[test]
fn mysql_5_7_format_description_and_events() {
    let fde = fx::fde_5_7();
    // 38 post-header lengths; v2 rows have 10, GTID 42.
    assert_eq!(fde.event_type_header_lengths().len(), 38);
    assert_eq!(
        fde.event_type_header_lengths()[usize::from(types::WRITE_ROWS_V2) - 1],
        10
    );
    assert_eq!(
        fde.event_type_header_lengths()[usize::from(types::GTID) - 1],
        42
    );
    let mut a = assembler(true);
    let mut out = Vec::new();
    feed(
        &mut a,
        &fde,
        &[
            (
                types::FORMAT_DESCRIPTION,
                0,
                fx::fde_body("5.7.44-log", &fx::POST_HEADER_5_7),
            ),
            // PREVIOUS_GTIDS is informational: the tracker keeps its own set.
            (
                types::PREVIOUS_GTIDS,
                194,
                fx::previous_gtids_body(&[(UUID_BYTES, &[(1, 5)])]),
            ),
            // A 5.7 GTID event (no commit timestamps, length or server version).
            (types::GTID, 259, fx::gtid_body(UUID_BYTES, 5, false)),
            (types::QUERY, 331, fx::query_body("shop", "BEGIN")),
        ],
        &mut out,
    );
    // 5.7 has no binlog_row_metadata=FULL: the TABLE_MAP of an included table has no
    // column names, which sluice needs; it stops and names the setting.
    let e = a
        .on_event(
            &event(&fde, types::TABLE_MAP, 380, &table("shop", false).body()),
            &mut out,
        )
        .unwrap_err();
    assert_eq!(e.kind(), crate::error::ErrorKind::Definite);
    assert!(e.to_string().contains("binlog_row_metadata"), "{e}");
    assert!(e.to_string().contains("shop"), "{e}");
}

/// The tracked definition of `shop.t` from a `CREATE TABLE` body.
fn shop_def(body: &str) -> TableDef {
    match crate::schema::ddl::parse_ddl(Some("shop"), &format!("CREATE TABLE t {body}")) {
        DdlParse::Changes(c) => match c.into_iter().next() {
            Some(DdlChange::CreateTable { def, .. }) => def,
            other => panic!("not a CREATE TABLE: {other:?}"),
        },
        other => panic!("not parsed: {other:?}"),
    }
}

/// One transaction writing shop.t (id = 7) with a table map with or without names.
fn shop_txn(names: bool) -> Vec<(u8, u32, Vec<u8>)> {
    vec![
        (types::ANONYMOUS_GTID, 200, fx::gtid_body([0; 16], 0, true)),
        (types::QUERY, 300, fx::query_body("shop", "BEGIN")),
        (types::TABLE_MAP, 400, table("shop", names).body()),
        (
            types::WRITE_ROWS_V2,
            500,
            fx::rows_v2_body(42, 1, 1, &[], &[0, 7, 0, 0, 0]),
        ),
        (types::XID, 531, fx::xid_body(1)),
    ]
}

/// History-only schema events (`H db.table: columns`).
fn history_of(out: &[Change]) -> Vec<String> {
    out.iter()
        .filter_map(|c| match c {
            Change::Schema(ev) if ev.record.is_none() => Some(
                ev.history
                    .iter()
                    .map(|h| {
                        let (d, t) = (&h.db, &h.table);
                        let def: TableDef =
                            serde_json::from_slice(h.shape.as_deref().unwrap()).unwrap();
                        let cols: Vec<&str> = def.columns.iter().map(|c| c.name.as_str()).collect();
                        format!("H {d}.{t}: {}", cols.join(","))
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
            _ => None,
        })
        .collect()
}

#[test]
fn a_table_first_seen_with_full_metadata_goes_into_the_schema_history_once() {
    let fde = fx::fde_8_0();
    let mut a = assembler(false);
    let mut out = Vec::new();
    feed(&mut a, &fde, &shop_txn(true), &mut out);
    assert_eq!(history_of(&out), ["H shop.t: id"]);
    // Written in the transaction, before its rows.
    let kinds: Vec<&str> = out
        .iter()
        .map(|c| match c {
            Change::Begin(_) => "B",
            Change::Schema(_) => "S",
            Change::Rows { .. } => "R",
            Change::Commit(_) => "C",
            Change::Progress(_) => "P",
        })
        .collect();
    assert_eq!(kinds, ["B", "S", "R", "C"]);
    out.clear();
    feed(&mut a, &fde, &shop_txn(true), &mut out);
    assert!(history_of(&out).is_empty(), "once: {:?}", view(&out));
}

#[test]
fn a_table_map_without_names_is_decoded_with_the_tracked_definition() {
    let fde = fx::fde_8_0();
    let mut a = assembler(false);
    a.set_defs([shop_def("(id INT NOT NULL PRIMARY KEY)")]);
    let mut out = Vec::new();
    feed(&mut a, &fde, &shop_txn(false), &mut out);
    let rows: Vec<&Change> = out
        .iter()
        .filter(|c| matches!(c, Change::Rows { .. }))
        .collect();
    let [Change::Rows { table, .. }] = rows.as_slice() else {
        panic!("one rows change: {:?}", view(&out));
    };
    assert_eq!(table.schema.columns[0].name, "id");
    assert_eq!(table.key_idx, [0], "key from the tracked definition");
    assert_eq!(view(&out)[1], "R Some([Int(7)])");
    assert!(history_of(&out).is_empty(), "the history already has it");
}

#[test]
fn a_table_map_without_names_that_disagrees_with_the_tracked_definition_stops() {
    let fde = fx::fde_8_0();
    let mut a = assembler(false);
    a.set_defs([shop_def("(id INT NOT NULL PRIMARY KEY, extra INT)")]);
    let mut out = Vec::new();
    let events = shop_txn(false);
    feed(&mut a, &fde, &events[..2], &mut out);
    let (etype, pos, body) = &events[2];
    let e = a
        .on_event(&event(&fde, *etype, *pos, body), &mut out)
        .unwrap_err();
    assert_eq!(e.kind(), crate::error::ErrorKind::Definite);
    let msg = e.to_string();
    assert!(
        msg.contains("`shop`.`t` has 1 columns but the tracked schema has 2")
            && msg.contains("binlog_row_metadata"),
        "{msg}"
    );
    assert!(!out.iter().any(|c| matches!(c, Change::Rows { .. })));
}

#[test]
fn without_names_or_a_tracked_definition_the_error_says_where_it_was_lost() {
    let fde = fx::fde_8_0();
    let mut a = assembler(false);
    a.set_defs([shop_def("(id INT NOT NULL PRIMARY KEY)")]);
    let mut out = Vec::new();
    feed(
        &mut a,
        &fde,
        &[(
            types::QUERY,
            250,
            fx::query_body("shop", "CREATE OR REPLACE TABLE t AS SELECT 7 AS id"),
        )],
        &mut out,
    );
    let events = shop_txn(false);
    feed(&mut a, &fde, &events[..2], &mut out);
    let (etype, pos, body) = &events[2];
    let msg = a
        .on_event(&event(&fde, *etype, *pos, body), &mut out)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("has no column names") && msg.contains("CREATE TABLE ... SELECT"),
        "{msg}"
    );
}

#[test]
fn a_full_table_map_corrects_a_tracked_definition_that_disagrees() {
    let fde = fx::fde_8_0();
    let mut a = assembler(false);
    a.set_defs([shop_def("(id INT NOT NULL PRIMARY KEY, gone INT)")]);
    let mut out = Vec::new();
    feed(&mut a, &fde, &shop_txn(true), &mut out);
    assert_eq!(history_of(&out), ["H shop.t: id"]);
    assert_eq!(a.defs().next().map(|d| d.columns.len()), Some(1));
}

#[test]
fn table_map_without_metadata_of_an_excluded_table_is_fine() {
    let fde = fx::fde_5_7();
    let mut a = assembler(false);
    let mut out = Vec::new();
    feed(
        &mut a,
        &fde,
        &[
            (types::ANONYMOUS_GTID, 200, fx::gtid_body([0; 16], 0, false)),
            (types::QUERY, 300, fx::query_body("other", "BEGIN")),
            (types::TABLE_MAP, 400, table("other", false).body()),
            (
                types::WRITE_ROWS_V2,
                500,
                fx::rows_v2_body(42, 1, 1, &[], &[0, 7, 0, 0, 0]),
            ),
            (types::XID, 531, fx::xid_body(1)),
        ],
        &mut out,
    );
    assert!(!out.iter().any(|c| matches!(c, Change::Begin(_))));
    assert_eq!(a.tracker().pos, 531);
}

#[test]
fn anonymous_gtid_and_v2_rows_with_extra_data() {
    // gtid_mode OFF on 8.0: ANONYMOUS_GTID opens the transaction; a v2 rows event may
    // carry an extra-data block (e.g. NDB info), which is skipped by its length.
    let fde = fx::fde_8_0();
    let mut a = assembler(false);
    let mut out = Vec::new();
    let extra = [0u8, 3, 1, 2, 3];
    feed(
        &mut a,
        &fde,
        &[
            (types::ANONYMOUS_GTID, 200, fx::gtid_body([0; 16], 0, true)),
            (types::QUERY, 300, fx::query_body("shop", "BEGIN")),
            (types::TABLE_MAP, 400, table("shop", true).body()),
            (
                types::WRITE_ROWS_V2,
                500,
                fx::rows_v2_body(42, 1, 1, &extra, &[0, 7, 0, 0, 0]),
            ),
            (
                types::WRITE_ROWS_V2,
                560,
                fx::rows_v2_body(42, 1, 1, &[], &[0, 8, 0, 0, 0]),
            ),
            (types::XID, 591, fx::xid_body(1)),
        ],
        &mut out,
    );
    let v = view(&out);
    assert_eq!(v.len(), 4, "{v:?}");
    assert_eq!(v[0], "B ");
    assert!(v[1].contains('7') && v[2].contains('8'), "{v:?}");
    assert_eq!(v[3], "C file:binlog.000001:591");
}
// ------------------------------------------------ captured from a real MySQL 9.7.4

/// The body (checksum stripped) of a GTID_TAGGED_LOG_EVENT written by MySQL 9.7.4 for
/// `SET gtid_next='AUTOMATIC:mytag'` (server_uuid 7bc8473e-ec97-11f1-9482-02fc00000001,
/// the set's 4th `mytag` transaction), read through the replication protocol.
const MYSQL_9_7_TAGGED_GTID: [u8; 58] = [
    0x02, 0x74, 0x00, 0x00, 0x00, 0x02, 0xf6, 0x21, 0x03, 0x8e, 0x7c, 0xb1, 0x03, 0x5d, 0x02, 0x22,
    0xc5, 0x03, 0x51, 0x02, 0x09, 0x02, 0x04, 0xf1, 0x03, 0x00, 0x00, 0x00, 0x02, 0x04, 0x10, 0x06,
    0x0a, 0x6d, 0x79, 0x74, 0x61, 0x67, 0x08, 0x54, 0x0a, 0x58, 0x0c, 0x7f, 0xe9, 0x70, 0x06, 0x7d,
    0x7a, 0x61, 0x06, 0x10, 0xc1, 0x14, 0x12, 0x83, 0x12, 0x0b,
];

/// The body (checksum stripped) of a TRANSACTION_PAYLOAD written by MySQL 9.7.4 with
/// `binlog_transaction_compression=ON` for `INSERT INTO sluice_probe.t VALUES (1000,
/// 'untagged')` (table `t (id INT PRIMARY KEY, v VARCHAR(20))`, binlog_row_metadata=FULL):
/// zstd, 211 bytes uncompressed — BEGIN, TABLE_MAP, WRITE_ROWS, XID.
const MYSQL_9_7_PAYLOAD: [u8; 175] = [
    0x02, 0x01, 0x00, 0x03, 0x01, 0xd3, 0x01, 0x01, 0xa5, 0x00, 0x28, 0xb5, 0x2f, 0xfd, 0x20, 0xd3,
    0xe5, 0x04, 0x00, 0x32, 0x08, 0x1f, 0x2a, 0x80, 0x6b, 0x1a, 0x03, 0xb0, 0x23, 0x63, 0x06, 0x56,
    0x8a, 0xe2, 0x89, 0x18, 0x58, 0xfa, 0x5d, 0x06, 0xee, 0x40, 0x84, 0x86, 0x44, 0x08, 0x80, 0xe5,
    0xb4, 0x7a, 0x78, 0x97, 0x35, 0x80, 0x44, 0x50, 0x3c, 0x6d, 0xcd, 0xf1, 0xb7, 0xb6, 0xa5, 0x4c,
    0x01, 0xff, 0x2f, 0x81, 0x0c, 0x82, 0x0b, 0xcb, 0xb2, 0x49, 0x77, 0xf1, 0xe2, 0xc3, 0xcf, 0x73,
    0xdf, 0x07, 0x12, 0xe1, 0xd1, 0x69, 0x8d, 0x1c, 0xbd, 0xb4, 0x95, 0xa2, 0x67, 0x08, 0xee, 0xaa,
    0x7b, 0x64, 0x03, 0x70, 0xef, 0x74, 0x8c, 0x82, 0xd9, 0x64, 0x24, 0x58, 0x45, 0xf3, 0x2c, 0xdc,
    0xb4, 0x6a, 0xde, 0x51, 0xd8, 0xa8, 0xea, 0x83, 0x3c, 0x1a, 0xd6, 0xe2, 0x27, 0xe1, 0xb9, 0x5c,
    0x46, 0x57, 0xc7, 0x41, 0x80, 0xd5, 0x39, 0xa1, 0x1f, 0x56, 0x1c, 0x67, 0xfc, 0x70, 0x37, 0xaa,
    0xfa, 0x02, 0x0d, 0x00, 0xa0, 0x04, 0xc4, 0x05, 0x55, 0xc0, 0xa0, 0x0f, 0x8c, 0x7d, 0x09, 0xa6,
    0x41, 0x73, 0xe0, 0x42, 0x23, 0xec, 0x60, 0x59, 0x0f, 0x88, 0x06, 0x4a, 0x1e, 0x80, 0x17,
];

#[test]
fn real_mysql_9_7_tagged_gtid() {
    let g = events::parse_gtid_tagged(&MYSQL_9_7_TAGGED_GTID).unwrap();
    assert_eq!(
        Uuid16(g.uuid).to_string(),
        "7bc8473e-ec97-11f1-9482-02fc00000001"
    );
    assert_eq!(g.tag.as_deref(), Some("mytag"));
    assert_eq!(g.gno, 4);
}

#[test]
fn real_mysql_9_7_payload() {
    let fde = fx::fde_8_0();
    let ev = event(&fde, types::TRANSACTION_PAYLOAD, 22314, &MYSQL_9_7_PAYLOAD);
    let mut rd = PayloadReader::open(&ev, "mysql-bin.000002:22116".into(), 1 << 30).unwrap();
    let mut seen = Vec::new();
    while let Some(e) = rd.next_event().unwrap() {
        seen.push((e.header().event_type_raw(), e.header().log_pos()));
    }
    let types_seen: Vec<u8> = seen.iter().map(|s| s.0).collect();
    assert_eq!(
        types_seen,
        [
            types::QUERY,
            types::TABLE_MAP,
            types::WRITE_ROWS_V2,
            types::XID
        ]
    );
    assert!(
        seen.iter().all(|s| s.1 == 0),
        "inner events carry log_pos 0"
    );

    let mut a = assembler(true);
    let mut out = Vec::new();
    let gtid = fx::gtid_body(UUID_BYTES, 5, true);
    a.on_event(&event(&fde, types::GTID, 22116, &gtid), &mut out)
        .unwrap();
    a.on_event(&ev, &mut out).unwrap();
    let v = view(&out);
    assert_eq!(v.len(), 3, "{v:?}");
    assert!(v[1].contains("1000"), "{v:?}");
    assert_eq!(a.tracker().pos, 22314);
    // A damaged copy of the real payload is refused.
    let mut bad = MYSQL_9_7_PAYLOAD;
    let n = bad.len();
    bad[n - 20] ^= 0x5a;
    let mut a = assembler(true);
    a.on_event(&event(&fde, types::GTID, 22116, &gtid), &mut Vec::new())
        .unwrap();
    let e = a.on_event(
        &event(&fde, types::TRANSACTION_PAYLOAD, 22314, &bad),
        &mut Vec::new(),
    );
    assert!(e.is_err());
}

// ------------------------------------------------------------ MariaDB two-phase ALTER

/// A MariaDB GTID event body: seq_no, domain 0, flags2 STANDALONE | DDL, `flags_extra`
/// with the START ALTER's sequence number for COMMIT/ROLLBACK ALTER (as 11.8 writes them).
fn maria_gtid(seq: u64, extra: u8, sa_seq: Option<u64>) -> Vec<u8> {
    let mut b = seq.to_le_bytes().to_vec();
    b.extend(0u32.to_le_bytes());
    b.extend([0x29, extra]);
    if let Some(s) = sa_seq {
        b.extend(s.to_le_bytes());
    }
    b.extend([0; 4]);
    b
}

fn maria_assembler() -> Assembler {
    let tracker = Tracker {
        file: "mysql-bin.000001".into(),
        pos: 4,
        mysql: None,
        mariadb: Some(crate::position::GtidList::new()),
        xa_prepared: BTreeMap::new(),
    };
    let mut a = Assembler::new(Flavor::MariaDb, router(), tracker, SkipSet::default());
    a.set_defs([shop_def("(id INT NOT NULL PRIMARY KEY)")]);
    a
}

fn shop_columns(a: &Assembler) -> Vec<String> {
    let def = a.defs().find(|d| d.db == "shop" && d.table == "t").unwrap();
    def.columns.iter().map(|c| c.name.clone()).collect()
}

/// `binlog_alter_two_phase=ON` logs an ALTER twice, each time with its full text: as START
/// ALTER when it begins, then as COMMIT ALTER (or ROLLBACK ALTER when it fails). The
/// tracked definition changes once, at COMMIT ALTER, with one schema-change record; a
/// ROLLBACK ALTER changes nothing. Both groups still advance the position.
#[test]
fn a_two_phase_alter_is_applied_once_at_commit_alter_and_never_on_rollback() {
    use events::gtid_flags_extra::{COMMIT_ALTER, ROLLBACK_ALTER, START_ALTER};
    let fde = fx::fde_8_0();
    let alter = |sql: &str| fx::query_body("shop", sql);
    let mut a = maria_assembler();
    let mut out = Vec::new();
    let add_c = "ALTER TABLE t ADD COLUMN c INT";
    feed(
        &mut a,
        &fde,
        &[
            (types::MARIA_GTID, 100, maria_gtid(5, START_ALTER, None)),
            (types::QUERY, 200, alter(add_c)),
        ],
        &mut out,
    );
    assert_eq!(shop_columns(&a), ["id"], "not applied at START ALTER");
    assert!(
        !view(&out)
            .iter()
            .any(|v| v.starts_with('B') || v.starts_with('S')),
        "nothing emitted for START ALTER: {:?}",
        view(&out)
    );
    // ... but its group is read past.
    assert_eq!(a.tracker.pos, 200);
    assert_eq!(a.tracker.mariadb.as_ref().unwrap().to_string(), "0-1-5");
    out.clear();
    feed(
        &mut a,
        &fde,
        &[
            (types::MARIA_GTID, 300, maria_gtid(6, COMMIT_ALTER, Some(5))),
            (types::QUERY, 400, alter(add_c)),
        ],
        &mut out,
    );
    assert_eq!(shop_columns(&a), ["id", "c"], "applied at COMMIT ALTER");
    assert_eq!(
        view(&out),
        ["B 0-1-6", "S shop.t", "C gtid:0-1-6"],
        "{:?}",
        view(&out)
    );

    // A failed ALTER: START ALTER, then ROLLBACK ALTER; neither applies it.
    out.clear();
    let add_d = "ALTER TABLE t ADD COLUMN d INT";
    feed(
        &mut a,
        &fde,
        &[
            (types::MARIA_GTID, 500, maria_gtid(7, START_ALTER, None)),
            (types::QUERY, 600, alter(add_d)),
            (
                types::MARIA_GTID,
                700,
                maria_gtid(8, ROLLBACK_ALTER, Some(7)),
            ),
            (types::QUERY, 800, alter(add_d)),
        ],
        &mut out,
    );
    assert_eq!(
        shop_columns(&a),
        ["id", "c"],
        "a rolled-back ALTER changes nothing"
    );
    assert!(
        !view(&out).iter().any(|v| v.starts_with('S')),
        "{:?}",
        view(&out)
    );
    assert_eq!(a.tracker.mariadb.as_ref().unwrap().to_string(), "0-1-8");
}

/// `raw` with the header's timestamp set to `secs`.
fn at_second(mut raw: Vec<u8>, secs: u32) -> Vec<u8> {
    raw[0..4].copy_from_slice(&secs.to_le_bytes());
    raw
}

/// The source time of each Rows change in `out`.
fn row_times(out: &[Change]) -> Vec<u64> {
    out.iter()
        .filter_map(|c| match c {
            Change::Rows { ts_us, .. } => Some(*ts_us),
            _ => None,
        })
        .collect()
}

/// Without a commit timestamp (MariaDB, MySQL before 8.0.1) each rows event carries its own
/// header second, as Debezium writes `source.ts_ms`: a transaction whose statements span a
/// second boundary has rows of both seconds. With one (MySQL 8.0.1+ GTID events) every row
/// carries the commit time.
#[test]
fn rows_carry_their_event_second_unless_the_server_logs_a_commit_time() {
    let fde = fx::fde_8_0();
    let rows = |pos: u32, id: u8| {
        fx::raw(
            types::WRITE_ROWS_V2,
            pos,
            &fx::rows_v2_body(42, 1, 1, &[], &[0, id, 0, 0, 0]),
        )
    };
    let txn = |gtid: Option<Vec<u8>>| {
        let mut v = Vec::new();
        if let Some(g) = gtid {
            v.push(at_second(fx::raw(types::GTID, 200, &g), 1_700_000_000));
        }
        v.extend([
            at_second(
                fx::raw(types::QUERY, 300, &fx::query_body("shop", "BEGIN")),
                1_700_000_000,
            ),
            at_second(
                fx::raw(types::TABLE_MAP, 400, &table("shop", true).body()),
                1_700_000_003,
            ),
            at_second(rows(500, 7), 1_700_000_003),
            at_second(rows(600, 8), 1_700_000_004),
            at_second(fx::raw(types::XID, 631, &fx::xid_body(9)), 1_700_000_004),
        ]);
        v
    };
    let run = |gtid: bool, events: Vec<Vec<u8>>| {
        let mut a = assembler(gtid);
        let mut out = Vec::new();
        for raw in events {
            a.on_event(&read(&fde, &raw), &mut out).unwrap();
        }
        row_times(&out)
    };
    assert_eq!(
        run(false, txn(None)),
        [1_700_000_003_000_000, 1_700_000_004_000_000]
    );
    // The GTID event's original_commit_timestamp (1_700_000_000_000_000 µs) for every row.
    assert_eq!(
        run(true, txn(Some(fx::gtid_body(UUID_BYTES, 1, true)))),
        [1_700_000_000_000_000, 1_700_000_000_000_000]
    );
}
