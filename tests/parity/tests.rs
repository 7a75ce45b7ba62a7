//! The parity comparison's self-check: matching, flattening, what is not compared, verdicts
//! and the report, on hand-made records (no services).

use serde_json::{json, Value};

use super::compare::*;
use super::deliberate::DELIBERATE;

fn rec(key: Value, value: Value) -> Record {
    Record {
        key: Some(key),
        value: (!value.is_null()).then_some(value),
        headers: Vec::new(),
    }
}

fn change(op: &str, id: i64, after: Value, file: &str) -> Record {
    rec(
        json!({"id": id}),
        json!({"before": null, "after": after, "op": op, "ts_ms": rand_ts(),
               "source": {"version": "x", "file": file, "pos": 4, "snapshot": "false"}}),
    )
}

/// A different processing time on every call: never compared.
fn rand_ts() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(1_700_000_000_000);
    N.fetch_add(7, Ordering::Relaxed)
}

#[test]
fn records_are_matched_by_key_op_and_occurrence() {
    let s = vec![
        change("c", 1, json!({"id": 1}), "f"),
        change("c", 1, json!({"id": 1}), "f"),
        rec(json!({"id": 1}), Value::Null),
        change("d", 2, json!(null), "f"),
    ];
    let d = vec![
        rec(json!({"id": 1}), Value::Null),
        change("c", 1, json!({"id": 1}), "f"),
        change("u", 3, json!({"id": 3}), "f"),
    ];
    let (pairs, only_s, only_d) = match_records(&s, &d);
    assert_eq!(pairs, vec![(0, 1), (2, 0)]);
    assert_eq!(
        only_s,
        vec![1, 3],
        "the second create of key 1 and the delete of 2"
    );
    assert_eq!(only_d, vec![2]);
    assert_eq!(op_of(&s[2]), "tombstone");
}

#[test]
fn connect_schemas_are_unwrapped_and_compared_as_fields() {
    let r = rec(
        json!({"schema": {"type": "struct"}, "payload": {"id": 7}}),
        json!({"schema": {"name": "E"}, "payload": {"before": null, "after": {"id": 7, "x": "a"},
               "op": "c", "source": {"db": "d"}, "transaction": null}}),
    );
    let f = fields(&r);
    assert_eq!(f["key.id"], json!(7));
    assert_eq!(f["key.schema"], json!({"type": "struct"}));
    assert_eq!(f["value.schema"], json!({"name": "E"}));
    assert_eq!(f["after.x"], json!("a"));
    assert_eq!(f["after.x"], json!("a"));
    assert_eq!(f["before"], Value::Null);
    assert_eq!(f["source.db"], json!("d"));
    assert_eq!(f["transaction"], Value::Null);
    assert_eq!(op_of(&r), "c");
}

#[test]
fn headers_are_fields_and_sluices_own_header_is_not_compared() {
    let mut s = change("d", 1, json!(null), "f");
    s.headers = vec![
        ("sluice.txn".into(), Some("p:1".into())),
        ("__debezium.newkey".into(), Some("{\"id\":2}".into())),
    ];
    let mut d = change("d", 1, json!(null), "f");
    d.headers = vec![("__debezium.newkey".into(), Some("Struct{id=2}".into()))];
    let mut out = Outcome::default();
    compare_table(&mut out, "t", &[s], &[d]);
    let newkey = &out.envelope["header.__debezium.newkey"];
    assert_eq!((newkey.equal, newkey.differ), (0, 1));
    assert!(out.envelope["header.sluice.txn"].inherent.is_some());
    assert_eq!(out.envelope["header.sluice.txn"].equal, 0);
}

#[test]
fn clocks_and_snapshot_positions_are_not_compared_but_streamed_positions_are() {
    let mut out = Outcome::default();
    compare_table(
        &mut out,
        "t",
        &[
            change("r", 1, json!({"id": 1}), "a"),
            change("c", 2, json!({"id": 2}), "a"),
        ],
        &[
            change("r", 1, json!({"id": 1}), "b"),
            change("c", 2, json!({"id": 2}), "b"),
        ],
    );
    let file = &out.envelope["source.file"];
    assert_eq!(
        (file.equal, file.differ),
        (0, 1),
        "only the streamed create counts"
    );
    assert!(file.inherent.is_some());
    assert_eq!(
        out.envelope["ts_ms"].equal + out.envelope["ts_ms"].differ,
        0
    );
    assert_eq!(out.envelope["source.version"].differ, 0);
    assert_eq!(out.envelope["source.pos"].equal, 1);
    assert_eq!(
        out.columns["t.id"].equal, 4,
        "key.id and after.id of both records"
    );
    assert_eq!(verdict(file, "mariadb", None), Verdict::Differs);
    assert_eq!(
        verdict(&out.envelope["ts_ms"], "mariadb", None),
        Verdict::Inherent("processing time: each side's own clock")
    );
}

#[test]
fn a_difference_is_deliberate_only_when_every_value_fits_the_documented_one() {
    let biu = |s: &str, d: &str| {
        let mut out = Outcome::default();
        let v = |t: &str| serde_json::from_str::<Value>(t).unwrap();
        compare_table(
            &mut out,
            "ints",
            &[change("c", 1, json!({"id": 1, "biu": v(s)}), "f")],
            &[change("c", 1, json!({"id": 1, "biu": v(d)}), "f")],
        );
        out.columns["ints.biu"].clone()
    };
    let wrapped = biu("18446744073709551615", "-1");
    let v = verdict(&wrapped, "mysql", Some("BIGINT UNSIGNED"));
    assert_eq!(v, Verdict::Deliberate(&DELIBERATE[0]));
    assert_eq!(
        verdict(&wrapped, "mysql", Some("BIGINT")),
        Verdict::Differs,
        "another type: not covered"
    );
    let other = biu("18446744073709551615", "-2");
    assert_eq!(
        verdict(&other, "mysql", Some("BIGINT UNSIGNED")),
        Verdict::Differs
    );
    let same = biu("5", "5");
    assert_eq!(
        verdict(&same, "mysql", Some("BIGINT UNSIGNED")),
        Verdict::Equal
    );
    let json_doc = Tally {
        differ: 1,
        diffs: vec![(Some(json!("[1e300]")), Some(json!("[1.0E300]")))],
        ..Tally::default()
    };
    assert!(matches!(
        verdict(&json_doc, "mysql", Some("JSON")),
        Verdict::Deliberate(_)
    ));
    assert_eq!(
        verdict(&json_doc, "mariadb", Some("JSON")),
        Verdict::Differs,
        "documented for MySQL only"
    );
}

#[test]
fn the_report_counts_findings_and_shows_one_example_of_each_value() {
    let mut out = Outcome::default();
    compare_table(
        &mut out,
        "t",
        &[
            change("c", 1, json!({"id": 1, "a": "x|y", "b": 1}), "f"),
            change("c", 2, json!({"id": 2, "a": "z", "b": 1}), "f"),
        ],
        &[change("c", 1, json!({"id": 1, "a": "x", "b": 1}), "f")],
    );
    let cols = |n: &str, ty: &str| Column {
        table: "t".into(),
        name: n.into(),
        ty: ty.into(),
    };
    let (md, findings) = report(
        &out,
        "mariadb",
        &[
            cols("id", "INT"),
            cols("a", "TEXT"),
            cols("b", "INT"),
            cols("c", "INT"),
        ],
    );
    // a differs, one record only sluice wrote; c is in no record of either side.
    assert_eq!(findings, 2, "{md}");
    assert!(md.contains("| t.a | TEXT | **differs** (1 of 1 values) | t c {\"id\":1}, after.a | `\"x\\|y\"` | `\"x\"` |"), "{md}");
    assert!(md.contains("| t.b | INT | equal (1 values) |"), "{md}");
    assert!(md.contains("| t.c | INT | absent on both sides |"), "{md}");
    assert!(md.contains("- only sluice: t `c` key `{\"id\":2}`"), "{md}");
    assert_eq!(cell(Some(&json!("abcdef")), 3), "`\"ab…`");
    assert_eq!(cell(None, 3), "(absent)");
}

#[test]
fn transaction_topics_are_paired_by_id_and_status_without_debeziums_empty_frames() {
    let txn = |status: &str, id: &str, count: Value| {
        rec(
            json!({"id": id}),
            json!({"status": status, "id": id, "event_count": count, "data_collections": null}),
        )
    };
    let mut s = vec![txn("BEGIN", "g1", Value::Null), txn("END", "g1", json!(3))];
    let tables = |order: [&str; 2]| {
        json!(order.map(|t| json!({"data_collection": t, "event_count": t.len()})))
    };
    s[1].value.as_mut().unwrap()["data_collections"] = tables(["d.a", "d.bb"]);
    let d = vec![
        txn("BEGIN", "other", Value::Null),
        txn("END", "other", json!(0)),
        txn("BEGIN", "g1", Value::Null),
        {
            let mut end = txn("END", "g1", json!(2));
            end.value.as_mut().unwrap()["data_collections"] = tables(["d.bb", "d.a"]);
            end
        },
        txn("BEGIN", "g2", Value::Null),
        txn("END", "g2", json!(1)),
    ];
    let mut out = Outcome::default();
    compare_transaction_topic(&mut out, &s, &d);
    assert_eq!(out.matched, 2);
    let count = &out.envelope["txn_topic.event_count"];
    assert_eq!((count.equal, count.differ), (1, 1));
    assert_eq!(out.envelope["txn_topic.status"].equal, 2);
    let tables = &out.envelope["txn_topic.data_collections"];
    assert_eq!(
        (tables.equal, tables.differ),
        (2, 0),
        "the same tables in another order"
    );
    assert!(out.only_sluice.is_empty());
    let only: Vec<(&str, &str)> = out
        .only_dbz
        .iter()
        .map(|(_, st, id)| (st.as_str(), id.as_str()))
        .collect();
    assert_eq!(
        only,
        [("\"BEGIN\"", "\"g2\""), ("\"END\"", "\"g2\"")],
        "g2 has rows (END event_count 1); the empty frame of `other` is left out"
    );
}

#[test]
fn a_schema_difference_points_at_its_column_or_envelope_field() {
    let int = |name: &str, ty: &str| json!({"type": ty, "optional": false, "field": name});
    let value_schema = |biu: &str, order: [&str; 2]| {
        let value = json!({"type": "struct", "name": "d.t.Value", "optional": true,
            "fields": order.map(|c| if c == "biu" { int("biu", biu) } else { int(c, "int32") })});
        let mut before = value.clone();
        before["field"] = json!("before");
        let mut after = value;
        after["field"] = json!("after");
        json!({"type": "struct", "name": "d.t.Envelope", "version": 2, "fields": [
            before, after,
            {"type": "struct", "field": "source", "fields": [int("pos", "int64")]},
            {"type": "string", "optional": false, "field": "op"}]})
    };
    let record = |biu: &str, order: [&str; 2]| {
        rec(
            json!({"schema": {"type": "struct", "name": "d.t.Key",
                               "fields": [int("id", "int32")]}, "payload": {"id": 1}}),
            json!({"schema": value_schema(biu, order), "payload": {"before": null,
                   "after": {"id": 1, "biu": 5}, "source": {"pos": 4}, "op": "c"}}),
        )
    };
    let mut out = Outcome::default();
    compare_table(
        &mut out,
        "t",
        &[record("int64", ["id", "biu"])],
        &[record("string", ["biu", "id"])],
    );
    assert_eq!(out.columns["t.biu"].equal, 1, "its value");
    let biu = &out.columns["t.biu (schema)"];
    assert_eq!(
        (biu.equal, biu.differ),
        (0, 2),
        "its schema in before and after"
    );
    let (at, s, d) = biu.example.clone().unwrap();
    assert_eq!(at, "t c {\"id\":1}, value.schema.after.biu");
    assert_eq!(
        (s.unwrap()["type"].clone(), d.unwrap()["type"].clone()),
        (json!("int64"), json!("string"))
    );
    assert_eq!(out.columns["t.id"].equal, 2, "key and after values");
    let id = &out.columns["t.id (schema)"];
    assert_eq!(
        (id.equal, id.differ),
        (3, 0),
        "key schema, before and after schemas"
    );
    let cols = |n: &str, ty: &str| Column {
        table: "t".into(),
        name: n.into(),
        ty: ty.into(),
    };
    let (md, _) = report(
        &out,
        "mysql",
        &[cols("id", "INT"), cols("biu", "BIGINT UNSIGNED")],
    );
    assert!(
        md.contains("| t.biu | BIGINT UNSIGNED | equal (1 values) |"),
        "{md}"
    );
    assert!(
        md.contains("| t.biu (schema) | BIGINT UNSIGNED | **differs** (2 of 2 values) |"),
        "{md}"
    );
    assert!(
        md.contains("| t.id (schema) | INT | equal (3 values) |"),
        "{md}"
    );
    let order = &out.envelope["value.schema.after"];
    assert_eq!(order.differ, 1, "the field order differs");
    assert_eq!(out.envelope["value.schema.source.pos"].equal, 1);
    assert_eq!(out.envelope["value.schema.op"].equal, 1);
    assert_eq!(out.envelope["value.schema"].equal, 1);
    assert_eq!(out.envelope["key.schema"].equal, 1);
}

#[test]
fn the_runs_topic_prefix_is_taken_off_schema_names_only() {
    let key_schema = |name: &str| json!({"type": "struct", "name": name, "fields": []});
    let mut r = rec(
        json!({"schema": key_schema("sluice_d.d.t.Key"), "payload": {"id": 1}}),
        json!({"schema": {"type": "struct", "name": "sluice_d.d.t.Envelope", "fields": [
                {"type": "struct", "name": "sluice_d.d.t.Value", "field": "before", "fields": []},
                {"type": "string", "name": "io.debezium.data.Json", "field": "j"}]},
               "payload": {"after": {"s": "sluice_kept"}}}),
    );
    without_topic_prefix(&mut r, "sluice_");
    let key = r.key.as_ref().unwrap();
    assert_eq!(key["schema"]["name"], "d.d.t.Key");
    let value = r.value.as_ref().unwrap();
    assert_eq!(value["schema"]["name"], "d.d.t.Envelope");
    assert_eq!(value["schema"]["fields"][0]["name"], "d.d.t.Value");
    assert_eq!(
        value["schema"]["fields"][1]["name"],
        "io.debezium.data.Json"
    );
    assert_eq!(
        value["payload"]["after"]["s"], "sluice_kept",
        "payloads are data"
    );
    // Without Connect schemas nothing changes.
    let mut plain = rec(json!({"id": 1}), json!({"name": "sluice_x"}));
    let before = plain.clone();
    without_topic_prefix(&mut plain, "sluice_");
    assert_eq!(plain, before);
}
