//! The signal table: ad-hoc snapshot requests written as rows of a table on the source, in
//! Debezium's shape, and read from the binlog like any other change (`snapshot.signal_table`).
//!
//! The table has three columns found by name (ASCII case-insensitive): `id` (the signal's id),
//! `type` (what to do) and `data` (JSON parameters). Debezium's suggested definition:
//!
//! ```sql
//! CREATE TABLE debezium_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL,
//!                               data VARCHAR(2048) NULL);
//! ```
//!
//! Types sluice acts on:
//!
//! * `execute-snapshot`, data `{"data-collections": ["db.t", ...], "type": "incremental",
//!   "additional-conditions": [{"data-collection": "db.t", "filter": "id > 10"}]}`, or with
//!   the older `"additional-condition": "id > 10"` (one condition for every table). `type` is
//!   optional; `"blocking"` is accepted and run as an incremental snapshot (sluice never
//!   pauses the stream). Debezium's `surrogate-key` is ignored: sluice picks the chunk key
//!   itself, and the key does not change which rows are emitted.
//! * `stop-snapshot`, data `{"type": "incremental", "data-collections": ["db.t"]}`; without
//!   `data-collections` (or with an empty list) every ad-hoc request stops.
//!
//! Where Debezium takes regular expressions in `data-collections` (and in an additional
//! condition's `data-collection`), sluice takes plain `db.table` names only, as
//! [`super::adhoc::parse_table_name`] reads them.
//!
//! What [`parse_signal`] returns for a row:
//!
//! * `Ok(Some(Signal::ExecuteSnapshot { .. }))` / `Ok(Some(Signal::StopSnapshot { .. }))`;
//! * `Ok(Some(Signal::Ignored { .. }))` for the other signal types Debezium defines that sluice
//!   does not perform ([`IGNORED_KINDS`]: `log`, `pause-snapshot`, `resume-snapshot`,
//!   `schema-changes`): the caller logs that it ignored them;
//! * `Ok(None)` for Debezium's own watermark rows ([`WATERMARK_KINDS`]:
//!   `snapshot-window-open`/`-close`, written by a Debezium connector sharing the table):
//!   nothing was asked of sluice, nothing to log;
//! * `Err(message)` for anything else (an unknown type, bad JSON, a missing field, a name that
//!   is not `db.table`): the message names the signal's id, what was found and what is
//!   expected. The caller logs it; a bad signal never stops the pipeline.

use serde_json::{Map, Value as Json};

use super::adhoc::{parse_table_name, AdhocRequest};
use super::filter::RowFilter;
use crate::schema::{charset_kind, decode_text, CharsetKind, ColumnKind, TableSchema};
use crate::value::Value;

/// `type` of a snapshot request.
pub const EXECUTE_SNAPSHOT: &str = "execute-snapshot";
/// `type` of a request to stop ad-hoc snapshots.
pub const STOP_SNAPSHOT: &str = "stop-snapshot";
/// Signal types Debezium defines that sluice does not perform: [`Signal::Ignored`].
pub const IGNORED_KINDS: &[&str] = &["log", "pause-snapshot", "resume-snapshot", "schema-changes"];
/// Rows a Debezium connector writes into its own signal table around each chunk: `Ok(None)`.
pub const WATERMARK_KINDS: &[&str] = &["snapshot-window-open", "snapshot-window-close"];

/// A signal read from the signal table.
#[derive(Debug, Clone, PartialEq)]
pub enum Signal {
    /// Snapshot tables (`execute-snapshot`).
    ExecuteSnapshot {
        /// The signal row's `id`.
        id: String,
        /// One request per distinct filter, in the order of `data-collections`: the tables
        /// without a condition share one (filter `None`), tables with the same condition
        /// share one. The first request's id is the signal's id, the n-th's (n ≥ 2)
        /// `<signal id>-<n>`.
        requests: Vec<AdhocRequest>,
    },
    /// Stop ad-hoc snapshots (`stop-snapshot`).
    StopSnapshot {
        /// The signal row's `id`.
        id: String,
        /// Tables as `db.table` whose ad-hoc snapshot stops; empty: all of them.
        tables: Vec<String>,
    },
    /// A signal type Debezium defines that sluice does not perform ([`IGNORED_KINDS`]).
    Ignored {
        /// The signal row's `id`.
        id: String,
        /// Its `type`, as written.
        kind: String,
    },
}

/// Reads one inserted row of the signal table (`schema` is the table's shape, `row` its
/// values in column order). See the module documentation for what each outcome means.
pub fn parse_signal(schema: &TableSchema, row: &[Value]) -> Result<Option<Signal>, String> {
    let id_text = text(schema, row, "id")?;
    let id = id_text.as_deref().map(trim).unwrap_or_default().to_string();
    let kind = text(schema, row, "type")?;
    let kind = kind.as_deref().map(trim).unwrap_or_default().to_string();
    if id.is_empty() {
        return Err(format!(
            "a signal row of {}.{} (type {kind:?}) has no id; expected a unique string in `id`, \
             e.g. a UUID",
            schema.db, schema.table
        ));
    }
    let lower = kind.to_ascii_lowercase();
    if WATERMARK_KINDS.contains(&lower.as_str()) {
        return Ok(None);
    }
    if IGNORED_KINDS.contains(&lower.as_str()) {
        return Ok(Some(Signal::Ignored { id, kind }));
    }
    if lower != EXECUTE_SNAPSHOT && lower != STOP_SNAPSHOT {
        return Err(format!(
            "signal {id:?}: unknown type {kind:?}; sluice performs \"{EXECUTE_SNAPSHOT}\" and \
             \"{STOP_SNAPSHOT}\" and ignores {}",
            IGNORED_KINDS
                .iter()
                .map(|k| format!("{k:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let data = text(schema, row, "data")?;
    let data = match data.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(d) => Some(
            serde_json::from_str::<Json>(d)
                .map_err(|e| format!("signal {id:?}: `data` is not JSON ({e}): {d:?}"))?,
        ),
    };
    let data = match data {
        None => None,
        Some(Json::Object(m)) => Some(m),
        Some(other) => {
            return Err(format!(
                "signal {id:?}: `data` is {}, expected a JSON object such as \
                 {{\"data-collections\": [\"db.table\"]}}",
                json_kind(&other)
            ))
        }
    };
    if lower == STOP_SNAPSHOT {
        let tables = match &data {
            None => Vec::new(),
            Some(d) => {
                snapshot_type(&id, d)?;
                match d.get("data-collections") {
                    None | Some(Json::Null) => Vec::new(),
                    Some(v) => names(&id, v)?,
                }
            }
        };
        return Ok(Some(Signal::StopSnapshot { id, tables }));
    }
    let Some(data) = data else {
        return Err(format!(
            "signal {id:?} (execute-snapshot) has no `data`; expected \
             {{\"data-collections\": [\"db.table\", ...]}}"
        ));
    };
    let requests = execute_snapshot(&id, &data)?;
    Ok(Some(Signal::ExecuteSnapshot { id, requests }))
}

fn trim(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || c == '\0')
}

/// The requests of an `execute-snapshot` signal's data.
fn execute_snapshot(id: &str, data: &Map<String, Json>) -> Result<Vec<AdhocRequest>, String> {
    snapshot_type(id, data)?;
    let tables = match data.get("data-collections") {
        None | Some(Json::Null) => {
            return Err(format!(
                "signal {id:?} (execute-snapshot): `data` has no \"data-collections\"; expected \
                 {{\"data-collections\": [\"db.table\", ...]}}"
            ))
        }
        Some(v) => names(id, v)?,
    };
    if tables.is_empty() {
        return Err(format!(
            "signal {id:?} (execute-snapshot): \"data-collections\" is empty; expected at least \
             one \"db.table\""
        ));
    }
    let keys = tables
        .iter()
        .map(|t| parse_table_name(t).map(|(d, n)| (d.to_lowercase(), n.to_lowercase())))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("signal {id:?}: {e}"))?;
    // The filter of each table, `None` without a condition.
    let mut filters: Vec<Option<String>> = vec![None; tables.len()];
    let old = match data.get("additional-condition") {
        None | Some(Json::Null) => None,
        Some(Json::String(s)) => Some(s.trim().to_string()).filter(|s| !s.is_empty()),
        Some(other) => {
            return Err(format!(
                "signal {id:?}: \"additional-condition\" is {}, expected a string (a condition \
                 for every table, e.g. \"id > 10\")",
                json_kind(other)
            ))
        }
    };
    let conditions = match data.get("additional-conditions") {
        None | Some(Json::Null) => Vec::new(),
        Some(Json::Array(a)) => a.clone(),
        Some(other) => {
            return Err(format!(
                "signal {id:?}: \"additional-conditions\" is {}, expected an array such as \
                 [{{\"data-collection\": \"db.table\", \"filter\": \"id > 10\"}}]",
                json_kind(other)
            ))
        }
    };
    if old.is_some() && !conditions.is_empty() {
        return Err(format!(
            "signal {id:?}: both \"additional-condition\" and \"additional-conditions\" are \
             given; expected one of them (\"additional-conditions\" names each table's filter)"
        ));
    }
    if let Some(f) = old {
        check_filter(id, &f)?;
        filters.iter_mut().for_each(|x| *x = Some(f.clone()));
    }
    for c in &conditions {
        let Json::Object(c) = c else {
            return Err(format!(
                "signal {id:?}: an entry of \"additional-conditions\" is {}, expected an object \
                 {{\"data-collection\": \"db.table\", \"filter\": \"...\"}}",
                json_kind(c)
            ));
        };
        let table = match c.get("data-collection") {
            Some(Json::String(s)) => plain_name(id, s)?,
            other => {
                return Err(format!(
                    "signal {id:?}: an entry of \"additional-conditions\" has \
                     \"data-collection\" {}, expected a \"db.table\" string",
                    other.map_or("missing".to_string(), json_kind)
                ))
            }
        };
        let filter = match c.get("filter") {
            None | Some(Json::Null) => None,
            Some(Json::String(s)) => Some(s.trim().to_string()).filter(|s| !s.is_empty()),
            Some(other) => {
                return Err(format!(
                    "signal {id:?}: the \"filter\" of {table} is {}, expected a string (an SQL \
                     condition such as \"id > 10\")",
                    json_kind(other)
                ))
            }
        };
        let key = parse_table_name(&table)
            .map(|(d, n)| (d.to_lowercase(), n.to_lowercase()))
            .map_err(|e| format!("signal {id:?}: {e}"))?;
        let Some(i) = keys.iter().position(|k| *k == key) else {
            return Err(format!(
                "signal {id:?}: \"additional-conditions\" names {table}, which is not in \
                 \"data-collections\" ({}); add it there or remove its condition",
                tables.join(", ")
            ));
        };
        if let Some(f) = &filter {
            check_filter(id, f)?;
        }
        if filters[i].is_some() {
            return Err(format!(
                "signal {id:?}: \"additional-conditions\" has two conditions for {table}; \
                 expected at most one per table (combine them with AND)"
            ));
        }
        filters[i] = filter;
    }
    // One request per distinct filter, in the order the tables were named.
    let mut requests: Vec<AdhocRequest> = Vec::new();
    for (table, filter) in tables.into_iter().zip(filters) {
        match requests.iter_mut().find(|r| r.filter == filter) {
            Some(r) => r.tables.push(table),
            None => requests.push(AdhocRequest {
                tables: vec![table],
                filter,
                id: None,
            }),
        }
    }
    for (n, r) in requests.iter_mut().enumerate() {
        r.id = Some(if n == 0 {
            id.to_string()
        } else {
            format!("{id}-{}", n + 1)
        });
    }
    Ok(requests)
}

/// Checks the snapshot `type` of a signal's data: absent, `incremental` or `blocking` (run as
/// incremental), in any case.
fn snapshot_type(id: &str, data: &Map<String, Json>) -> Result<(), String> {
    match data.get("type") {
        None | Some(Json::Null) => Ok(()),
        Some(Json::String(t))
            if t.trim().eq_ignore_ascii_case("incremental")
                || t.trim().eq_ignore_ascii_case("blocking") =>
        {
            Ok(())
        }
        Some(other) => Err(format!(
            "signal {id:?}: snapshot type {other} is not known; expected \"incremental\" or \
             \"blocking\" (sluice runs both as incremental snapshots)"
        )),
    }
}

/// A filter is a condition (the part after `WHERE`); Debezium's blocking snapshots take a
/// whole `SELECT` instead, which sluice cannot run.
fn check_filter(id: &str, filter: &str) -> Result<(), String> {
    let first = filter
        .split(|c: char| c.is_whitespace() || c == '(')
        .find(|w| !w.is_empty())
        .unwrap_or_default();
    if first.eq_ignore_ascii_case("select") {
        return Err(format!(
            "signal {id:?}: the filter {filter:?} is a SELECT statement (Debezium's blocking \
             snapshots take one); sluice takes the condition only, e.g. \"column1 = 0\", and \
             runs it as WHERE (<filter>)"
        ));
    }
    RowFilter::parse(filter)
        .map(|_| ())
        .map_err(|e| format!("signal {id:?}: the filter {filter:?} is refused: {e}"))
}

/// The names of a `data-collections` array, trimmed, each a plain `db.table`, without
/// repeats.
fn names(id: &str, v: &Json) -> Result<Vec<String>, String> {
    let Json::Array(items) = v else {
        return Err(format!(
            "signal {id:?}: \"data-collections\" is {}, expected an array of \"db.table\" \
             names, e.g. [\"shop.orders\"]",
            json_kind(v)
        ));
    };
    let mut out: Vec<String> = Vec::new();
    for item in items {
        let Json::String(s) = item else {
            return Err(format!(
                "signal {id:?}: an entry of \"data-collections\" is {}, expected a \"db.table\" \
                 string",
                json_kind(item)
            ));
        };
        let name = plain_name(id, s)?;
        if !out.contains(&name) {
            out.push(name);
        }
    }
    Ok(out)
}

/// A `db.table` name, trimmed; refuses regular expressions.
fn plain_name(id: &str, s: &str) -> Result<String, String> {
    let name = s.trim().to_string();
    if let Some(c) = regex_char(&name) {
        return Err(format!(
            "signal {id:?}: {name:?} looks like a regular expression (it has {c:?}); Debezium \
             matches data collections as regexes but sluice takes plain `db.table` names only: \
             list each table, e.g. \"shop.orders\" (in backquotes where a name has a dot or \
             such a character: `my.db`.`t`)"
        ));
    }
    parse_table_name(&name).map_err(|e| format!("signal {id:?}: {e}"))?;
    Ok(name)
}

/// The first regex metacharacter outside backquotes (`$` only as a final anchor, since it is
/// legal in unquoted MySQL names).
fn regex_char(name: &str) -> Option<char> {
    let mut quoted = false;
    let n = name.chars().count();
    for (i, c) in name.chars().enumerate() {
        match c {
            '`' => quoted = !quoted,
            _ if quoted => {}
            '*' | '+' | '?' | '(' | ')' | '[' | ']' | '{' | '}' | '|' | '^' | '\\' => {
                return Some(c)
            }
            '$' if i + 1 == n => return Some(c),
            _ => {}
        }
    }
    None
}

fn json_kind(v: &Json) -> String {
    match v {
        Json::Null => "null".into(),
        Json::Bool(b) => format!("the boolean {b}"),
        Json::Number(n) => format!("the number {n}"),
        Json::String(s) => format!("the string {s:?}"),
        Json::Array(_) => "an array".into(),
        Json::Object(_) => "an object".into(),
    }
}

/// The value of column `name` as text; `None` for NULL.
fn text(schema: &TableSchema, row: &[Value], name: &str) -> Result<Option<String>, String> {
    let table = format!("{}.{}", schema.db, schema.table);
    let Some(i) = schema
        .columns
        .iter()
        .position(|c| c.name.eq_ignore_ascii_case(name))
    else {
        return Err(format!(
            "the signal table {table} has no column `{name}` (columns: {}); expected the \
             columns id, type and data (CREATE TABLE ... (id VARCHAR(42) PRIMARY KEY, type \
             VARCHAR(32) NOT NULL, data VARCHAR(2048) NULL))",
            schema.column_list()
        ));
    };
    let column = &schema.columns[i];
    match row.get(i) {
        None | Some(Value::Missing) => Err(format!(
            "a signal row of {table} lacks column `{}` (a partial row image); the source needs \
             binlog_row_image=FULL for the signal table",
            column.name
        )),
        Some(Value::Null) => Ok(None),
        Some(Value::Json(s)) => Ok(Some(s.clone())),
        Some(Value::Int(v)) => Ok(Some(v.to_string())),
        Some(Value::UInt(v)) => Ok(Some(v.to_string())),
        Some(Value::Bytes(b)) => {
            let charset = match &column.kind {
                ColumnKind::String { charset, .. } | ColumnKind::Blob { charset, .. } => *charset,
                _ => 0,
            };
            match charset_kind(charset) {
                CharsetKind::Utf8 | CharsetKind::Binary | CharsetKind::Other => {
                    String::from_utf8(b.clone()).map(Some).map_err(|_| {
                        format!(
                            "column `{}` of a signal row of {table} is not valid UTF-8; \
                             expected text",
                            column.name
                        )
                    })
                }
                _ => Ok(Some(decode_text(charset, b).into_owned())),
            }
        }
        Some(_) => Err(format!(
            "column `{}` of the signal table {table} is {}; expected a character column \
             (VARCHAR or TEXT)",
            column.name,
            column.kind.type_name()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Column;

    fn varchar(name: &str, charset: u16) -> Column {
        Column {
            name: name.into(),
            kind: ColumnKind::String {
                charset,
                binary: false,
                fixed: false,
                max_bytes: 2048,
            },
            nullable: true,
        }
    }

    /// Debezium's suggested table: id VARCHAR(42), type VARCHAR(32), data VARCHAR(2048).
    fn schema() -> TableSchema {
        TableSchema {
            db: "ops".into(),
            table: "debezium_signal".into(),
            columns: vec![
                varchar("id", 255),
                varchar("type", 255),
                varchar("data", 255),
            ],
            primary_key: vec![0],
        }
    }

    fn row(id: &str, kind: &str, data: Option<&str>) -> Vec<Value> {
        vec![
            Value::Bytes(id.as_bytes().to_vec()),
            Value::Bytes(kind.as_bytes().to_vec()),
            data.map_or(Value::Null, |d| Value::Bytes(d.as_bytes().to_vec())),
        ]
    }

    fn parse(kind: &str, data: &str) -> Result<Option<Signal>, String> {
        parse_signal(&schema(), &row("sig-1", kind, Some(data)))
    }

    fn requests(data: &str) -> Vec<AdhocRequest> {
        match parse("execute-snapshot", data) {
            Ok(Some(Signal::ExecuteSnapshot { id, requests })) => {
                assert_eq!(id, "sig-1");
                requests
            }
            other => panic!("{data}: {other:?}"),
        }
    }

    fn req(tables: &[&str], filter: Option<&str>, id: &str) -> AdhocRequest {
        AdhocRequest {
            tables: tables.iter().map(|t| t.to_string()).collect(),
            filter: filter.map(str::to_string),
            id: Some(id.into()),
        }
    }

    fn error(kind: &str, data: &str, wanted: &[&str]) {
        let e = parse(kind, data).unwrap_err();
        assert!(e.contains("\"sig-1\""), "names the signal: {e}");
        for w in wanted {
            assert!(e.contains(w), "{data}: {e:?} lacks {w:?}");
        }
    }

    #[test]
    fn debezium_documentation_examples() {
        // The signal record example (data column).
        let s = parse_signal(
            &schema(),
            &row(
                "d139b9b7-7777-4547-917d-e1775ea61d41",
                "execute-snapshot",
                Some(r#"{"data-collections": ["public.MyFirstTable", "public.MySecondTable"]}"#),
            ),
        );
        assert_eq!(
            s,
            Ok(Some(Signal::ExecuteSnapshot {
                id: "d139b9b7-7777-4547-917d-e1775ea61d41".into(),
                requests: vec![req(
                    &["public.MyFirstTable", "public.MySecondTable"],
                    None,
                    "d139b9b7-7777-4547-917d-e1775ea61d41"
                )],
            }))
        );
        // The data of the Kafka message example.
        assert_eq!(
            requests(
                r#"{"data-collections": ["public.MyFirstTable"], "type": "INCREMENTAL", "additional-conditions":[{"data-collection": "public.MyFirstTable", "filter":"color='blue' AND brand='MyBrand'"}]}"#
            ),
            vec![req(
                &["public.MyFirstTable"],
                Some("color='blue' AND brand='MyBrand'"),
                "sig-1"
            )]
        );
        assert_eq!(
            requests(
                r#"{"data-collections": ["schema1.table1", "schema1.table2"], "type": "INCREMENTAL"}"#
            ),
            vec![req(&["schema1.table1", "schema1.table2"], None, "sig-1")]
        );
        // The stop example.
        assert_eq!(
            parse(
                "stop-snapshot",
                r#"{"type":"INCREMENTAL", "data-collections": ["public.MyFirstTable"]}"#
            ),
            Ok(Some(Signal::StopSnapshot {
                id: "sig-1".into(),
                tables: vec!["public.MyFirstTable".into()]
            }))
        );
        // The blocking example: its filters are whole SELECTs, which sluice cannot run.
        error(
            "execute-snapshot",
            r#"{"type": "blocking", "data-collections": ["schema1.table1", "schema1.table2"], "additional-conditions": [{"data-collection": "schema1.table1", "filter": "SELECT * FROM [schema1].[table1] WHERE column1 = 0 ORDER BY column2 DESC"}, {"data-collection": "schema1.table2", "filter": "SELECT * FROM [schema1].[table2] WHERE column2 > 0"}]}"#,
            &["SELECT statement", "condition only"],
        );
        // The log example, and pause/resume (no data).
        assert_eq!(
            parse_signal(
                &schema(),
                &row(
                    "924e3ff8-2245-43ca-ba77-2af9af02fa07",
                    "log",
                    Some(r#"{"message": "Signal message at offset {}"}"#)
                )
            ),
            Ok(Some(Signal::Ignored {
                id: "924e3ff8-2245-43ca-ba77-2af9af02fa07".into(),
                kind: "log".into()
            }))
        );
        for kind in ["pause-snapshot", "resume-snapshot"] {
            assert_eq!(
                parse_signal(&schema(), &row("p", kind, None)),
                Ok(Some(Signal::Ignored {
                    id: "p".into(),
                    kind: kind.into()
                }))
            );
        }
    }

    #[test]
    fn one_request_per_distinct_filter() {
        assert_eq!(
            requests(
                r#"{"data-collections": ["s.a", "s.b", "s.c", "s.d", "s.e"],
                    "additional-conditions": [
                        {"data-collection": "s.b", "filter": "id > 10"},
                        {"data-collection": "S.D", "filter": "id > 10"},
                        {"data-collection": "s.c", "filter": "x = 'y'"},
                        {"data-collection": "s.e", "filter": "  "}]}"#
            ),
            vec![
                req(&["s.a", "s.e"], None, "sig-1"),
                req(&["s.b", "s.d"], Some("id > 10"), "sig-1-2"),
                req(&["s.c"], Some("x = 'y'"), "sig-1-3"),
            ]
        );
        // The first request may be a filtered one; ids follow the order of the tables.
        assert_eq!(
            requests(
                r#"{"data-collections": ["s.a", "s.b"], "type": "blocking",
                    "additional-conditions": [{"data-collection": "s.a", "filter": "k < 5"}]}"#
            ),
            vec![
                req(&["s.a"], Some("k < 5"), "sig-1"),
                req(&["s.b"], None, "sig-1-2"),
            ]
        );
        // Repeated names count once; names are trimmed; backquoted names stay as written.
        assert_eq!(
            requests(
                r#"{"data-collections": [" s.a ", "s.a", "`my.db`.`t(1)`"], "surrogate-key": "k"}"#
            ),
            vec![req(&["s.a", "`my.db`.`t(1)`"], None, "sig-1")]
        );
    }

    #[test]
    fn the_older_single_condition_applies_to_every_table() {
        assert_eq!(
            requests(r#"{"data-collections": ["s.a", "s.b"], "additional-condition": "id > 10"}"#),
            vec![req(&["s.a", "s.b"], Some("id > 10"), "sig-1")]
        );
        assert_eq!(
            requests(r#"{"data-collections": ["s.a"], "additional-condition": ""}"#),
            vec![req(&["s.a"], None, "sig-1")]
        );
        error(
            "execute-snapshot",
            r#"{"data-collections": ["s.a"], "additional-condition": "a = 1",
                "additional-conditions": [{"data-collection": "s.a", "filter": "b = 2"}]}"#,
            &["both"],
        );
        error(
            "execute-snapshot",
            r#"{"data-collections": ["s.a"], "additional-condition": 5}"#,
            &["the number 5", "expected a string"],
        );
        error(
            "execute-snapshot",
            r#"{"data-collections": ["s.a"], "additional-condition": "select * from s.a"}"#,
            &["SELECT statement"],
        );
    }

    #[test]
    fn execute_snapshot_errors() {
        let cases: &[(&str, &[&str])] = &[
            (
                r#"{"data-collections": "s.a"}"#,
                &["the string \"s.a\"", "expected an array"],
            ),
            (r#"{"type": "incremental"}"#, &["no \"data-collections\""]),
            (r#"{"data-collections": []}"#, &["is empty"]),
            (
                r#"{"data-collections": [7]}"#,
                &["the number 7", "\"db.table\" string"],
            ),
            (
                r#"{"data-collections": ["orders"]}"#,
                &["\"orders\"", "expected `db.table`"],
            ),
            (
                r#"{"data-collections": ["s.a.b"]}"#,
                &["expected `db.table`"],
            ),
            (
                r#"{"data-collections": ["inventory\\..*"]}"#,
                &["regular expression", "plain `db.table` names only"],
            ),
            (
                r#"{"data-collections": ["s.(a|b)"]}"#,
                &["regular expression"],
            ),
            (r#"{"data-collections": ["s.a$"]}"#, &["regular expression"]),
            (
                r#"{"data-collections": ["s.a"], "type": "full"}"#,
                &["\"full\"", "\"incremental\" or"],
            ),
            (
                r#"{"data-collections": ["s.a"], "type": 1}"#,
                &["snapshot type 1"],
            ),
            (
                r#"{"data-collections": ["s.a"], "additional-conditions": {"data-collection": "s.a"}}"#,
                &["an object", "expected an array"],
            ),
            (
                r#"{"data-collections": ["s.a"], "additional-conditions": ["s.a"]}"#,
                &["expected an object"],
            ),
            (
                r#"{"data-collections": ["s.a"], "additional-conditions": [{"filter": "x"}]}"#,
                &["\"data-collection\" missing"],
            ),
            (
                r#"{"data-collections": ["s.a"], "additional-conditions": [{"data-collection": "s.*", "filter": "x"}]}"#,
                &["regular expression"],
            ),
            (
                r#"{"data-collections": ["s.a"], "additional-conditions": [{"data-collection": "s.b", "filter": "x"}]}"#,
                &["names s.b", "not in \"data-collections\""],
            ),
            (
                r#"{"data-collections": ["s.a"], "additional-conditions": [{"data-collection": "s.a", "filter": 3}]}"#,
                &["\"filter\" of s.a", "the number 3"],
            ),
            (
                r#"{"data-collections": ["s.a"], "additional-conditions": [{"data-collection": "s.a", "filter": "x"}, {"data-collection": "s.a", "filter": "y"}]}"#,
                &["two conditions for s.a"],
            ),
            ("[1]", &["an array", "expected a JSON object"]),
            ("{not json", &["not JSON", "{not json"]),
        ];
        for (data, wanted) in cases {
            error("execute-snapshot", data, wanted);
        }
        // No data at all.
        for data in [None, Some("  ")] {
            let e = parse_signal(&schema(), &row("sig-1", "execute-snapshot", data)).unwrap_err();
            assert!(
                e.contains("\"sig-1\"") && e.contains("has no `data`"),
                "{e}"
            );
        }
    }

    #[test]
    fn stop_snapshot() {
        let stop = |data: Option<&str>| parse_signal(&schema(), &row("x", "Stop-Snapshot", data));
        let all = Ok(Some(Signal::StopSnapshot {
            id: "x".into(),
            tables: vec![],
        }));
        assert_eq!(stop(None), all);
        assert_eq!(stop(Some(r#"{"type": "incremental"}"#)), all);
        assert_eq!(stop(Some(r#"{"data-collections": []}"#)), all);
        assert_eq!(stop(Some(r#"{"data-collections": null}"#)), all);
        assert_eq!(
            stop(Some(r#"{"data-collections": ["s.a", "s.b"]}"#)),
            Ok(Some(Signal::StopSnapshot {
                id: "x".into(),
                tables: vec!["s.a".into(), "s.b".into()]
            }))
        );
        let e = stop(Some(r#"{"data-collections": ["s.*"]}"#)).unwrap_err();
        assert!(
            e.contains("\"x\"") && e.contains("regular expression"),
            "{e}"
        );
        let e = stop(Some(r#"{"type": "other"}"#)).unwrap_err();
        assert!(e.contains("\"other\""), "{e}");
        let e = stop(Some(r#""all""#)).unwrap_err();
        assert!(e.contains("expected a JSON object"), "{e}");
    }

    #[test]
    fn types() {
        // Debezium's own watermark rows are not addressed to sluice.
        for kind in WATERMARK_KINDS {
            assert_eq!(
                parse_signal(&schema(), &row("w-open", kind, None)),
                Ok(None)
            );
        }
        assert_eq!(
            parse_signal(&schema(), &row("s", "schema-changes", Some("{}"))),
            Ok(Some(Signal::Ignored {
                id: "s".into(),
                kind: "schema-changes".into()
            }))
        );
        // Types are matched ignoring case and surrounding blanks.
        assert!(matches!(
            parse_signal(
                &schema(),
                &row(" a ", " EXECUTE-SNAPSHOT ", Some(r#"{"data-collections": ["s.a"]}"#))
            ),
            Ok(Some(Signal::ExecuteSnapshot { id, .. })) if id == "a"
        ));
        let e = parse("execute_snapshot", "{}").unwrap_err();
        assert!(
            e.contains("\"sig-1\"")
                && e.contains("unknown type \"execute_snapshot\"")
                && e.contains("\"execute-snapshot\""),
            "{e}"
        );
        // A row without an id.
        let e = parse_signal(&schema(), &row("", "execute-snapshot", Some("{}"))).unwrap_err();
        assert!(
            e.contains("ops.debezium_signal") && e.contains("no id"),
            "{e}"
        );
        let mut r = row("x", "log", None);
        r[0] = Value::Null;
        assert!(parse_signal(&schema(), &r).unwrap_err().contains("no id"));
    }

    #[test]
    fn columns_and_values() {
        // Columns are found by name, in any order and case; other columns are ignored.
        let mut s = schema();
        s.columns = vec![
            varchar("DATA", 255),
            varchar("extra", 255),
            varchar("Type", 255),
            varchar("ID", 255),
        ];
        let r = vec![
            Value::Bytes(br#"{"data-collections": ["s.a"]}"#.to_vec()),
            Value::Int(1),
            Value::Bytes(b"execute-snapshot".to_vec()),
            Value::UInt(42),
        ];
        assert!(matches!(
            parse_signal(&s, &r),
            Ok(Some(Signal::ExecuteSnapshot { id, .. })) if id == "42"
        ));
        // latin1 (collation 8) and a MySQL JSON data column.
        let mut s = schema();
        s.columns[0] = varchar("id", 8);
        s.columns[2] = Column {
            name: "data".into(),
            kind: ColumnKind::Json,
            nullable: true,
        };
        let r = vec![
            Value::Bytes(b"caf\xe9".to_vec()),
            Value::Bytes(b"log".to_vec()),
            Value::Json("{}".into()),
        ];
        assert_eq!(
            parse_signal(&s, &r),
            Ok(Some(Signal::Ignored {
                id: "café".into(),
                kind: "log".into()
            }))
        );
        // A missing column.
        let mut s = schema();
        s.columns[1].name = "kind".into();
        let e = parse_signal(&s, &row("x", "log", None)).unwrap_err();
        assert!(
            e.contains("no column `type`") && e.contains("columns: id, kind, data"),
            "{e}"
        );
        // A partial row image, a short row.
        let mut r = row("x", "log", None);
        r[1] = Value::Missing;
        let e = parse_signal(&schema(), &r).unwrap_err();
        assert!(e.contains("binlog_row_image=FULL"), "{e}");
        let e = parse_signal(&schema(), &r[..1]).unwrap_err();
        assert!(e.contains("lacks column `type`"), "{e}");
        // Not text.
        let mut s = schema();
        s.columns[1].kind = ColumnKind::Double;
        let mut r = row("x", "log", None);
        r[1] = Value::Double(1.0);
        let e = parse_signal(&s, &r).unwrap_err();
        assert!(e.contains("is DOUBLE; expected a character column"), "{e}");
        let mut r = row("x", "log", None);
        r[0] = Value::Bytes(vec![0xff, 0xfe]);
        let e = parse_signal(&schema(), &r).unwrap_err();
        assert!(e.contains("not valid UTF-8"), "{e}");
    }
}
