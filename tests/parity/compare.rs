//! The comparison of `scripts/parity` (pure code, no services): two lists of records of one
//! topic — sluice's and Debezium's — are matched record by record (key, `op`, and the how-many-th
//! such record it is), each matched pair is flattened into fields (`key.<col>`,
//! `before.<col>`, `after.<col>`, `source.<f>`, `transaction.<f>`, `op`, `header.<name>`, the
//! Connect schemas when present) and every field is compared. The results are summed per column
//! of the type matrix and per envelope field, and printed as Markdown tables.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use super::deliberate::{Deliberate, DELIBERATE};

/// One Kafka record, its key and value parsed as JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// The key (None: a null key).
    pub key: Option<Value>,
    /// The value (None: a tombstone).
    pub value: Option<Value>,
    /// Headers in order: name and value as text (None: a null header value).
    pub headers: Vec<(String, Option<String>)>,
}

/// What a record is, for matching: its `op`, or `tombstone`.
pub fn op_of(r: &Record) -> String {
    match payload(r.value.as_ref()) {
        None | Some(Value::Null) => "tombstone".into(),
        Some(v) => match &v["op"] {
            Value::String(op) => op.clone(),
            other => format!("op={other}"),
        },
    }
}

/// The payload of a key or value: with Connect schemas (`{"schema": …, "payload": …}`) the
/// payload, else the document itself.
fn payload(v: Option<&Value>) -> Option<&Value> {
    let v = v?;
    match v {
        Value::Object(m)
            if m.len() == 2 && m.contains_key("schema") && m.contains_key("payload") =>
        {
            m.get("payload")
        }
        _ => Some(v),
    }
}

/// The Connect schema of a key or value, when it has one.
fn schema(v: Option<&Value>) -> Option<&Value> {
    match v? {
        Value::Object(m) if m.len() == 2 && m.contains_key("payload") => m.get("schema"),
        _ => None,
    }
}

/// Takes `topic_prefix` off the struct names of a record's Connect schemas (`name` of the key,
/// the envelope and `before`/`after`, which carry the topic: `<prefix><topic>.Key`). The run
/// gives sluice's topics a prefix so both systems share one Kafka; the names are compared as
/// they would be on a topic of the same name.
pub fn without_topic_prefix(r: &mut Record, topic_prefix: &str) {
    fn strip(s: &mut Value, topic_prefix: &str) {
        let Value::Object(m) = s else { return };
        if let Some(Value::String(name)) = m.get_mut("name") {
            if let Some(rest) = name.strip_prefix(topic_prefix) {
                *name = rest.to_string();
            }
        }
        if let Some(Value::Array(fields)) = m.get_mut("fields") {
            for f in fields {
                strip(f, topic_prefix);
            }
        }
    }
    for v in [r.key.as_mut(), r.value.as_mut()].into_iter().flatten() {
        if let Value::Object(m) = v {
            if m.len() == 2 && m.contains_key("payload") {
                if let Some(s) = m.get_mut("schema") {
                    strip(s, topic_prefix);
                }
            }
        }
    }
}

/// Text that identifies a record among its topic's: key, op.
fn match_key(r: &Record) -> String {
    let key = payload(r.key.as_ref()).map_or("null".into(), |k| k.to_string());
    format!("{key} {}", op_of(r))
}

/// Pairs of (sluice index, Debezium index) with the same key, op and occurrence (the n-th
/// record with that key and op on each side), in sluice's order; then the sluice records with
/// no partner and the Debezium records with no partner.
pub fn match_records(
    sluice: &[Record],
    dbz: &[Record],
) -> (Vec<(usize, usize)>, Vec<usize>, Vec<usize>) {
    let mut dbz_by: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, r) in dbz.iter().enumerate() {
        dbz_by.entry(match_key(r)).or_default().push(i);
    }
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut pairs = Vec::new();
    let mut only_sluice = Vec::new();
    for (i, r) in sluice.iter().enumerate() {
        let k = match_key(r);
        let n = seen.entry(k.clone()).or_default();
        match dbz_by.get(&k).and_then(|v| v.get(*n)) {
            Some(&j) => pairs.push((i, j)),
            None => only_sluice.push(i),
        }
        *n += 1;
    }
    let mut paired: Vec<usize> = pairs.iter().map(|p| p.1).collect();
    paired.sort_unstable();
    let only_dbz = (0..dbz.len())
        .filter(|j| paired.binary_search(j).is_err())
        .collect();
    (pairs, only_sluice, only_dbz)
}

/// A record flattened into `path → value` (a value absent from the record is absent here).
pub fn fields(r: &Record) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    match payload(r.key.as_ref()) {
        Some(Value::Object(m)) => {
            for (k, v) in m {
                out.insert(format!("key.{k}"), v.clone());
            }
        }
        other => {
            out.insert("key".into(), other.cloned().unwrap_or(Value::Null));
        }
    }
    if let Some(s) = schema(r.key.as_ref()) {
        flatten_schema(&mut out, "key.schema", s, &[]);
    }
    if let Some(s) = schema(r.value.as_ref()) {
        flatten_schema(
            &mut out,
            "value.schema",
            s,
            &["before", "after", "source", "transaction"],
        );
    }
    match payload(r.value.as_ref()) {
        Some(Value::Object(m)) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("before" | "after" | "source" | "transaction", Value::Object(inner)) => {
                        for (f, fv) in inner {
                            out.insert(format!("{k}.{f}"), fv.clone());
                        }
                    }
                    _ => {
                        out.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        other => {
            out.insert("value".into(), other.cloned().unwrap_or(Value::Null));
        }
    }
    for (name, v) in &r.headers {
        let v = v.as_ref().map_or(Value::Null, |s| Value::String(s.clone()));
        out.insert(format!("header.{name}"), v);
    }
    out
}

/// A Connect STRUCT schema flattened: `prefix` holds its own attributes (with `fields` as the
/// list of field names, so their order is compared), `prefix.<field>` each field's schema; the
/// STRUCT fields named in `nested` are flattened the same way (the envelope's `before`,
/// `after`, `source`, `transaction`), so a difference points at one column or field.
fn flatten_schema(out: &mut BTreeMap<String, Value>, prefix: &str, s: &Value, nested: &[&str]) {
    let Some(fields) = s.get("fields").and_then(Value::as_array) else {
        out.insert(prefix.into(), s.clone());
        return;
    };
    let mut own = s.clone();
    own["fields"] = fields.iter().map(|f| f["field"].clone()).collect();
    out.insert(prefix.into(), own);
    for f in fields {
        let name = f["field"].as_str().unwrap_or_default();
        let path = format!("{prefix}.{name}");
        if nested.contains(&name) {
            flatten_schema(out, &path, f, &[]);
        } else {
            out.insert(path, f.clone());
        }
    }
}

/// Why a field is not compared: it cannot be equal by nature (a clock reading, a version, the
/// moment each side took its own snapshot). `snapshot` says the record is a snapshot read.
pub fn inherent(path: &str, snapshot: bool) -> Option<&'static str> {
    match path {
        "ts_ms" | "ts_us" | "ts_ns" => Some("processing time: each side's own clock"),
        "source.version" => Some("the software's version"),
        "header.sluice.txn" => {
            Some("sluice's own exactly-once header (the Kafka transaction it was written in)")
        }
        "header.__debezium.context.runId" => Some("Debezium's id of the task's run: random"),
        "source.file" | "source.pos" | "source.gtid" | "source.ts_ms" | "source.ts_us"
        | "source.ts_ns" | "source.row" | "source.thread"
            if snapshot =>
        {
            Some("snapshot reads: each side takes its own snapshot, at its own moment and binlog position")
        }
        _ => None,
    }
}

/// The result of one field (a column, or an envelope field) over all compared values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    /// Values that were equal.
    pub equal: usize,
    /// Values that differed.
    pub differ: usize,
    /// Values compared but not counted (inherent), with the reason.
    pub inherent: Option<&'static str>,
    /// The first difference: where (record), sluice's value, Debezium's (None: absent).
    pub example: Option<(String, Option<Value>, Option<Value>)>,
    /// Every differing pair (sluice's value, Debezium's), to check them against the
    /// deliberate differences.
    pub diffs: Vec<(Option<Value>, Option<Value>)>,
}

impl Tally {
    fn add(&mut self, at: &str, s: Option<&Value>, d: Option<&Value>) {
        if s == d {
            self.equal += 1;
        } else {
            self.differ += 1;
            self.diffs.push((s.cloned(), d.cloned()));
            if self.example.is_none() {
                self.example = Some((at.to_string(), s.cloned(), d.cloned()));
            }
        }
    }
}

/// A column of the type matrix: its table, name and SQL type.
#[derive(Debug, Clone)]
pub struct Column {
    /// Table.
    pub table: String,
    /// Column name.
    pub name: String,
    /// SQL type as declared.
    pub ty: String,
}

/// Everything one comparison run found.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Per column (`table.column`, including the key column `id`).
    pub columns: BTreeMap<String, Tally>,
    /// Per envelope field (`source.file`, `op`, `header.…`, …), over all tables.
    pub envelope: BTreeMap<String, Tally>,
    /// Records matched on both sides.
    pub matched: usize,
    /// Records only sluice wrote: (table, op, key).
    pub only_sluice: Vec<(String, String, String)>,
    /// Records only Debezium wrote.
    pub only_dbz: Vec<(String, String, String)>,
}

/// Compares one table's records (`sluice` and `dbz` in the order they were written).
pub fn compare_table(out: &mut Outcome, table: &str, sluice: &[Record], dbz: &[Record]) {
    let (pairs, only_s, only_d) = match_records(sluice, dbz);
    let describe = |r: &Record| {
        let key = payload(r.key.as_ref()).map_or("null".into(), |k| k.to_string());
        (table.to_string(), op_of(r), key)
    };
    out.only_sluice
        .extend(only_s.iter().map(|&i| describe(&sluice[i])));
    out.only_dbz
        .extend(only_d.iter().map(|&j| describe(&dbz[j])));
    out.matched += pairs.len();
    for (i, j) in pairs {
        let (s, d) = (fields(&sluice[i]), fields(&dbz[j]));
        let op = op_of(&sluice[i]);
        let (_, _, key) = describe(&sluice[i]);
        let at = format!("{table} {op} {key}");
        let mut paths: Vec<&String> = s.keys().chain(d.keys()).collect();
        paths.sort();
        paths.dedup();
        for path in paths {
            // A column's values; with Connect schemas, apart, its field schema in the key and
            // in `before`/`after`; the key's and the envelope's own attributes are envelope
            // fields.
            let schema_of = ["key.schema.", "value.schema.before.", "value.schema.after."]
                .iter()
                .find_map(|p| path.strip_prefix(p));
            let value_of = ["key.", "before.", "after."]
                .iter()
                .find_map(|p| path.strip_prefix(p))
                .filter(|c| *c != "schema");
            let tally = match (schema_of, value_of) {
                (Some(c), _) => out
                    .columns
                    .entry(format!("{table}.{c} (schema)"))
                    .or_default(),
                (None, Some(c)) => out.columns.entry(format!("{table}.{c}")).or_default(),
                (None, None) => out.envelope.entry(path.clone()).or_default(),
            };
            if let Some(why) = inherent(path, op == "r") {
                tally.inherent = Some(why);
                continue;
            }
            tally.add(&format!("{at}, {path}"), s.get(path), d.get(path));
        }
    }
}

/// Compares the transaction-metadata topics: BEGIN and END records paired by transaction id
/// and status, every field compared (as `txn_topic.<field>` envelope fields; `data_collections`
/// in any order, as Debezium's is a hash map's). Debezium also
/// frames transactions without captured rows (`event_count` 0, other tests' transactions on
/// the same server): those are left out unless sluice has the same id.
pub fn compare_transaction_topic(out: &mut Outcome, sluice: &[Record], dbz: &[Record]) {
    let id_status = |r: &Record| {
        let mut v = payload(r.value.as_ref()).cloned().unwrap_or(Value::Null);
        // Debezium lists a transaction's tables in a HashMap's order: compared as a set.
        if let Some(Value::Array(tables)) = v.get_mut("data_collections") {
            tables.sort_by_key(|t| t["data_collection"].to_string());
        }
        (v["id"].to_string(), v["status"].to_string(), v)
    };
    let sl: Vec<(String, String, Value)> = sluice.iter().map(id_status).collect();
    let sluice_ids: Vec<&String> = sl.iter().map(|(id, _, _)| id).collect();
    let db: Vec<(String, String, Value)> = dbz.iter().map(id_status).collect();
    let captured: Vec<String> = db
        .iter()
        .filter(|(_, _, v)| v["event_count"].as_u64().is_some_and(|n| n > 0))
        .map(|(id, _, _)| id.clone())
        .collect();
    let db: Vec<(String, String, Value)> = db
        .into_iter()
        .filter(|(id, _, _)| sluice_ids.contains(&id) || captured.contains(id))
        .collect();
    for (id, status, v) in &sl {
        let Some((_, _, w)) = db.iter().find(|(i, s, _)| i == id && s == status) else {
            out.only_sluice
                .push(("(transaction topic)".into(), status.clone(), id.clone()));
            continue;
        };
        out.matched += 1;
        let keys = |x: &Value| {
            x.as_object()
                .map(|m| m.keys().cloned().collect::<Vec<_>>())
                .unwrap_or_default()
        };
        let mut names = keys(v);
        names.extend(keys(w));
        names.sort();
        names.dedup();
        for name in names {
            out.envelope
                .entry(format!("txn_topic.{name}"))
                .or_default()
                .add(&format!("{status} {id}"), v.get(&name), w.get(&name));
        }
    }
    for (id, status, _) in &db {
        if !sl.iter().any(|(i, s, _)| i == id && s == status) {
            out.only_dbz
                .push(("(transaction topic)".into(), status.clone(), id.clone()));
        }
    }
}

/// The verdict on one tally, given the run's flavor and the column's SQL type (None: an
/// envelope field): deliberate only when every differing value fits a documented difference.
pub fn verdict(t: &Tally, flavor: &str, ty: Option<&str>) -> Verdict {
    if t.differ == 0 {
        return if t.equal == 0 && t.inherent.is_some() {
            Verdict::Inherent(t.inherent.unwrap_or_default())
        } else {
            Verdict::Equal
        };
    }
    let fits = |d: &Deliberate| {
        d.covers(flavor, ty)
            && t.diffs
                .iter()
                .all(|(s, v)| (d.fits)(s.as_ref(), v.as_ref()))
    };
    match DELIBERATE.iter().find(|d| fits(d)) {
        Some(d) => Verdict::Deliberate(d),
        None => Verdict::Differs,
    }
}

/// What the run concludes about a field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// Every value equal.
    Equal,
    /// Not compared: cannot be equal by nature.
    Inherent(&'static str),
    /// Differs, as documented.
    Deliberate(&'static Deliberate),
    /// Differs, not documented: a finding.
    Differs,
}

/// A value for a Markdown cell: compact JSON, at most `max` characters, `|` escaped; a value
/// the record does not have is `(absent)`.
pub fn cell(v: Option<&Value>, max: usize) -> String {
    let Some(v) = v else {
        return "(absent)".into();
    };
    let text = v.to_string();
    let short: String = if text.chars().count() > max {
        let mut s: String = text.chars().take(max).collect();
        s.push('…');
        s
    } else {
        text
    };
    format!("`{}`", short.replace('|', "\\|").replace('`', "'"))
}

fn verdict_text(v: Verdict, t: &Tally) -> String {
    match v {
        Verdict::Equal => format!("equal ({} values)", t.equal),
        Verdict::Inherent(why) => format!("not compared: {why}"),
        Verdict::Deliberate(d) => format!(
            "deliberate ({} of {} values): {}",
            t.differ,
            t.differ + t.equal,
            d.reason
        ),
        Verdict::Differs => format!(
            "**differs** ({} of {} values)",
            t.differ,
            t.differ + t.equal
        ),
    }
}

fn example_cells(t: &Tally) -> (String, String, String) {
    match &t.example {
        Some((at, s, d)) => (at.clone(), cell(s.as_ref(), 60), cell(d.as_ref(), 60)),
        None => (String::new(), String::new(), String::new()),
    }
}

/// The Markdown report of a run: the per-column table, the envelope table and the records
/// found on one side only; and the number of undocumented differences (findings).
pub fn report(out: &Outcome, flavor: &str, columns: &[Column]) -> (String, usize) {
    let mut md = String::new();
    let mut findings = 0;
    md.push_str("| column | type | result | first difference | sluice | Debezium |\n");
    md.push_str("| --- | --- | --- | --- | --- | --- |\n");
    for c in columns {
        let field = format!("{}.{}", c.table, c.name);
        // In no record of either side (a column both exclude): the same behaviour. A column
        // only one side writes is a difference of the records that have it.
        let Some(t) = out.columns.get(&field) else {
            let _ = writeln!(md, "| {field} | {} | absent on both sides | | | |", c.ty);
            continue;
        };
        let v = verdict(t, flavor, Some(&c.ty));
        findings += usize::from(v == Verdict::Differs);
        let (at, s, d) = example_cells(t);
        let _ = writeln!(
            md,
            "| {field} | {} | {} | {at} | {s} | {d} |",
            c.ty,
            verdict_text(v, t)
        );
        // Its Connect schema (with --schemas): no deliberate difference covers a schema.
        if let Some(t) = out.columns.get(&format!("{field} (schema)")) {
            let v = verdict(t, flavor, None);
            findings += usize::from(v == Verdict::Differs);
            let (at, s, d) = example_cells(t);
            let text = verdict_text(v, t);
            let _ = writeln!(
                md,
                "| {field} (schema) | {} | {text} | {at} | {s} | {d} |",
                c.ty
            );
        }
    }
    md.push_str("\n| envelope field | result | first difference | sluice | Debezium |\n");
    md.push_str("| --- | --- | --- | --- | --- |\n");
    for (field, t) in &out.envelope {
        let v = verdict(t, flavor, Some(field));
        findings += usize::from(v == Verdict::Differs);
        let (at, s, d) = example_cells(t);
        let _ = writeln!(
            md,
            "| {field} | {} | {at} | {s} | {d} |",
            verdict_text(v, t)
        );
    }
    let _ = writeln!(
        md,
        "\nRecords matched (same table, key, op and occurrence): {}; only sluice wrote: {}; only \
         Debezium wrote: {}.",
        out.matched,
        out.only_sluice.len(),
        out.only_dbz.len()
    );
    for (side, list) in [("sluice", &out.only_sluice), ("Debezium", &out.only_dbz)] {
        for (table, op, key) in list.iter().take(10) {
            let _ = writeln!(md, "- only {side}: {table} `{op}` key `{key}`");
        }
    }
    findings += out.only_sluice.len() + out.only_dbz.len();
    (md, findings)
}
