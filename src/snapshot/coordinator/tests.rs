//! Tests of the coordinator: ranges planned, read in parallel and emitted in key order; a
//! range read to its limit; a DDL that cancels a table's chunks; requests and signals that
//! add tables and commit with their transaction.

use super::*;
use crate::capture::Tracker;
use crate::model::{RowImage, RowsKind};
use crate::mysql::server::Flavor;
use crate::pipeline::Change;
use crate::position::FilePos;
use crate::schema::{Column, ColumnKind};
use crate::snapshot::adhoc::{AdhocRequest, Rejected};
use crate::snapshot::reader::{ChunkRead, Read, ReadOutcome, ReadRequest};

fn config() -> crate::config::Config {
    let text = r#"
name = "t"
[source]
url = "mysql://u:p@127.0.0.1"
server_id = 9
include = ["d\\..*"]
[kafka]
bootstrap_servers = "127.0.0.1:9092"
[snapshot]
chunk_size = 10
parallelism = 2
signal_table = "d.sig"
"#;
    crate::config::Config::from_str_with_env(text, Vec::new()).unwrap()
}

fn info() -> ServerInfo {
    ServerInfo {
        flavor: Flavor::MariaDb,
        version: "11".into(),
        server_id: 1,
        log_bin: true,
        binlog_format: "ROW".into(),
        binlog_row_image: "FULL".into(),
        binlog_row_metadata: "FULL".into(),
        gtid_mode: true,
        gtid_mode_value: String::new(),
        binlog_row_value_options: String::new(),
        binlog_transaction_compression: false,
        binlog_expire_seconds: 0,
    }
}

fn snapshotter(tables: &[&str]) -> Snapshotter {
    let cfg = config();
    let router = Arc::new(Router::new(&cfg).unwrap());
    let progress = SnapshotProgress {
        started_ms: 1,
        then_stop: false,
        tables: tables
            .iter()
            .map(|t| TableProgress::new("d", t, 0))
            .collect(),
        finished_tables: 0,
        finished_rows: 0,
        finished_requests: Vec::new(),
    };
    Snapshotter::new(
        Some(progress),
        &ConnectOptions::from_config(&cfg.source),
        &info(),
        &cfg.snapshot,
        router,
        None,
    )
}

fn schema(table: &str, cols: &[&str]) -> Arc<TableSchema> {
    Arc::new(TableSchema {
        db: "d".into(),
        table: table.into(),
        columns: cols
            .iter()
            .map(|c| Column {
                name: (*c).into(),
                kind: if *c == "id" {
                    ColumnKind::Int { unsigned: false }
                } else {
                    ColumnKind::String {
                        charset: 45,
                        binary: false,
                        fixed: false,
                        max_bytes: 400,
                    }
                },
                nullable: false,
            })
            .collect(),
        primary_key: vec![0],
    })
}

fn chunk(seq: u64, ids: std::ops::RangeInclusive<i64>, full: bool, at: u64) -> ReadOutcome {
    let rows: Vec<Vec<Value>> = ids.clone().map(|i| vec![Value::Int(i)]).collect();
    ReadOutcome::Chunk(ChunkRead {
        seq,
        schema: schema("t", &["id"]),
        key_names: vec!["id".into()],
        key_idx: vec![0],
        last_key: Some(vec![KeyValue::Int(*ids.end())]),
        rows,
        watermark: Watermark::Exact(FilePos {
            file: "b.000001".into(),
            pos: at,
        }),
        full,
        complete: false,
    })
}

fn tracker(pos: u64) -> Tracker {
    Tracker {
        file: "b.000001".into(),
        pos,
        mysql: None,
        mariadb: None,
        xa_prepared: Default::default(),
    }
}

/// (ids of each emitted chunk, the progress `after` committed with it).
fn emitted(changes: &[Change]) -> Vec<(Vec<i64>, Option<Vec<KeyValue>>)> {
    let mut out = Vec::new();
    let mut ids = Vec::new();
    for c in changes {
        match c {
            Change::Rows { rows, kind, .. } => {
                assert_eq!(*kind, RowsKind::Read);
                ids.extend(rows.iter().map(|r| match r.after.as_deref() {
                    Some([Value::Int(i)]) => *i,
                    other => panic!("{other:?}"),
                }))
            }
            Change::Commit(cp) | Change::Progress(cp) => {
                let p = cp.snapshot.as_ref().expect("progress");
                out.push((std::mem::take(&mut ids), p.tables[0].after.clone()));
            }
            _ => {}
        }
    }
    out
}

fn read_of(r: &ReadRequest) -> (Option<Vec<KeyValue>>, Option<Vec<KeyValue>>) {
    match &r.what {
        Read::Chunk { after, upto } => (after.clone(), upto.clone()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn ranges_are_planned_read_in_parallel_and_emitted_in_key_order() {
    let mut s = snapshotter(&["t"]);
    let split = s.next_request(0, None).unwrap();
    assert!(
        matches!(
            split.what,
            Read::Split {
                after: None,
                count: 4,
                estimate: true
            }
        ),
        "{split:?}"
    );
    assert!(s.next_request(0, None).is_none(), "one split at a time");
    s.on_result(ReadOutcome::Split {
        seq: split.seq,
        key_names: vec!["id".into()],
        bounds: vec![vec![KeyValue::Int(10)], vec![KeyValue::Int(20)]],
        end: true,
        estimate: Some(30),
    })
    .unwrap();
    let k = |i| Some(vec![KeyValue::Int(i)]);
    let a = s.next_request(0, None).unwrap();
    let b = s.next_request(0, None).unwrap();
    let c = s.next_request(0, None).unwrap();
    assert_eq!(read_of(&a), (None, k(10)));
    assert_eq!(read_of(&b), (k(10), k(20)));
    assert_eq!(read_of(&c), (k(20), None));
    assert!(
        s.next_request(0, None).is_none(),
        "the table is planned to its end"
    );
    assert!(s.plans[0].planned_all);
    assert_eq!(s.progress.tables[0].estimate, 30);

    // The second range arrives first: it waits for the first.
    s.on_result(chunk(b.seq, 11..=20, false, 100)).unwrap();
    assert!(s.try_emit(&tracker(500)).unwrap().is_none());
    s.on_result(chunk(a.seq, 1..=10, false, 90)).unwrap();
    // Not before the stream passed the watermarks.
    assert!(s
        .try_emit(&tracker(95))
        .unwrap()
        .is_some_and(|c| emitted(&c).len() == 1));
    let out = s.try_emit(&tracker(500)).unwrap().unwrap();
    assert_eq!(emitted(&out), vec![((11..=20).collect(), k(20))]);

    // The open-ended last range comes back full: the rest is another chunk after its
    // last row, and the table is done only when a read comes back short.
    s.on_result(chunk(c.seq, 21..=30, true, 100)).unwrap();
    let d = s.next_request(0, None).unwrap();
    assert_eq!(read_of(&d), (k(30), None));
    let out = s.try_emit(&tracker(500)).unwrap().unwrap();
    assert_eq!(emitted(&out), vec![((21..=30).collect(), k(30))]);
    assert!(!s.finished());
    let ReadOutcome::Chunk(mut last) = chunk(d.seq, 31..=33, false, 100) else {
        unreachable!()
    };
    last.complete = true;
    s.on_result(ReadOutcome::Chunk(last)).unwrap();
    let out = s.try_emit(&tracker(500)).unwrap().unwrap();
    assert_eq!(emitted(&out), vec![((31..=33).collect(), k(33))]);
    assert!(s.finished());
    assert_eq!(s.progress.tables[0].rows, 33);
    assert_eq!(s.progress.tables[0].chunks, 4);
}

#[test]
fn a_bounded_range_read_to_its_limit_leaves_the_rest_for_another_chunk() {
    let mut s = snapshotter(&["t"]);
    let split = s.next_request(0, None).unwrap();
    s.on_result(ReadOutcome::Split {
        seq: split.seq,
        key_names: vec!["id".into()],
        bounds: vec![vec![KeyValue::Int(100)]],
        end: true,
        estimate: None,
    })
    .unwrap();
    let a = s.next_request(0, None).unwrap();
    let _tail = s.next_request(0, None).unwrap();
    s.on_result(chunk(a.seq, 1..=20, true, 10)).unwrap();
    let rest = s.next_request(0, None).unwrap();
    let k = |i| Some(vec![KeyValue::Int(i)]);
    assert_eq!(read_of(&rest), (k(20), k(100)));
    let out = s.try_emit(&tracker(500)).unwrap().unwrap();
    // Progress reaches the last row read, not the range's planned end.
    assert_eq!(emitted(&out), vec![((1..=20).collect(), k(20))]);
}

#[test]
fn a_ddl_cancels_the_tables_chunks_and_plans_them_again() {
    let mut s = snapshotter(&["t"]);
    let split = s.next_request(0, None).unwrap();
    s.on_result(ReadOutcome::Split {
        seq: split.seq,
        key_names: vec!["id".into()],
        bounds: vec![vec![KeyValue::Int(10)]],
        end: false,
        estimate: None,
    })
    .unwrap();
    let a = s.next_request(0, None).unwrap();
    let mut ddl = Change::Schema(crate::pipeline::SchemaEvent {
        db: "d".into(),
        table: "t".into(),
        record: Some(Vec::new()),
        history: Vec::new(),
    });
    s.observe(&mut ddl);
    // The cancelled chunk's result is dropped; planning starts again with a split.
    s.on_result(chunk(a.seq, 1..=10, false, 10)).unwrap();
    assert!(s.try_emit(&tracker(500)).unwrap().is_none());
    let again = s.next_request(0, None).unwrap();
    assert!(
        matches!(again.what, Read::Split { after: None, .. }),
        "{again:?}"
    );
    assert!(again.fresh, "the reader reads the new shape");
}

#[test]
fn requests_and_signals_add_tables_and_commit_with_their_transaction() {
    let mut s = snapshotter(&[]);
    assert!(s.progress().is_none());
    let req = |tables: &[&str], id: Option<&str>| AdhocRequest {
        tables: tables.iter().map(|t| t.to_string()).collect(),
        filter: Some("id > 5".into()),
        id: id.map(String::from),
    };
    assert!(matches!(
        s.accept(req(&["other.t"], None)),
        Err(Rejected::Invalid(m)) if m.contains("not captured")
    ));
    assert!(matches!(
        s.accept(req(&[], None)),
        Err(Rejected::Invalid(_))
    ));
    let a = s.accept(req(&["d.t", "d.t", "d.u"], Some("r1"))).unwrap();
    assert_eq!(a.tables, ["d.t", "d.u"]);
    assert!(matches!(
        s.accept(req(&["d.t"], Some("r1"))),
        Err(Rejected::Invalid(m)) if m.contains("still running")
    ));
    let p = s.progress().unwrap();
    assert_eq!(p.tables.len(), 2);
    assert_eq!(p.tables[0].request.as_deref(), Some("r1"));
    assert_eq!(p.tables[0].filter.as_deref(), Some("id > 5"));

    // A signal row acts when its transaction commits, and that commit carries it.
    let sig = schema("sig", &["id", "type", "data"]);
    let target = s.router.route("d", "sig").unwrap().unwrap();
    let ctx = Arc::new(TableCtx::new(sig, target, vec![0]).unwrap());
    let row = vec![
        Value::Bytes(b"s1".to_vec()),
        Value::Bytes(b"execute-snapshot".to_vec()),
        Value::Bytes(br#"{"data-collections": ["d.v"]}"#.to_vec()),
    ];
    let mut rows = Change::Rows {
        table: ctx,
        kind: RowsKind::Insert,
        rows: vec![RowImage {
            before: None,
            after: Some(row),
        }],
        pos: 10,
        ts_us: 0,
        marks: crate::model::ReadMarks::STREAM,
    };
    s.observe(&mut rows);
    assert_eq!(s.progress.tables.len(), 2, "not before the commit");
    let mut commit = Change::Commit(tracker(20).checkpoint(0));
    s.observe(&mut commit);
    let Change::Commit(cp) = commit else {
        unreachable!()
    };
    let p = cp.snapshot.expect("the commit carries the request");
    assert_eq!(p.tables.len(), 3);
    assert_eq!(p.tables[2].table, "v");
    assert_eq!(p.tables[2].request.as_deref(), Some("s1"));

    // stop-snapshot ends them where they got.
    s.signalled.push(Signal::StopSnapshot {
        id: "s2".into(),
        tables: vec!["d.t".into()],
    });
    s.take_signals();
    assert!(s.progress.tables[0].done);
    assert!(!s.progress.tables[1].done);
}
