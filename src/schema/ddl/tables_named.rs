//! Best-effort table names of an unparsable statement: patterns on the head of a (normalized)
//! DDL statement find the tables it names, so a statement that cannot be parsed can still be
//! ignored when those tables are excluded.
//!
//! Invariant: the names found are qualified (an unqualified name takes the default database,
//! and is left out without one) and listed once each, in the order the statement names them.

use regex::Regex;
use std::sync::OnceLock;

use crate::schema::tracked::TableName;

const IDENT: &str = r"(?:`(?:[^`]|``)+`|[0-9A-Za-z_$\x{80}-\x{10FFFF}]+)";

fn name_pattern() -> String {
    format!(r"{IDENT}(?:\s*\.\s*{IDENT})?")
}

struct HeadPatterns {
    single: Vec<Regex>,
    list: Vec<Regex>,
    name: Regex,
}

fn head_patterns() -> &'static HeadPatterns {
    static P: OnceLock<HeadPatterns> = OnceLock::new();
    P.get_or_init(|| {
        let n = name_pattern();
        let re = |s: String| Regex::new(&format!("(?is){s}")).ok();
        HeadPatterns {
            single: [
                format!(
                    r"^CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMPORARY\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?({n})"
                ),
                format!(r"^ALTER\s+(?:ONLINE\s+)?(?:IGNORE\s+)?TABLE\s+(?:IF\s+EXISTS\s+)?({n})"),
                format!(r"^TRUNCATE\s+(?:TABLE\s+)?({n})"),
                format!(r"^(?:CREATE|DROP)\s[^`]*?\bINDEX\b.*?\sON\s+({n})"),
                format!(r"^CREATE\s+(?:OR\s+REPLACE\s+)?SEQUENCE\s+(?:IF\s+NOT\s+EXISTS\s+)?({n})"),
            ]
            .into_iter()
            .filter_map(re)
            .collect(),
            list: [
                format!(
                    r"^DROP\s+(?:TEMPORARY\s+)?(?:TABLES?|SEQUENCE)\s+(?:IF\s+EXISTS\s+)?({n}(?:\s*,\s*{n})*)"
                ),
                format!(
                    r"^RENAME\s+TABLES?\s+(?:IF\s+EXISTS\s+)?({n}\s+TO\s+{n}(?:\s*,\s*{n}\s+TO\s+{n})*)"
                ),
            ]
            .into_iter()
            .filter_map(re)
            .collect(),
            name: Regex::new(&format!("(?i)({IDENT})(?:\\s*\\.\\s*({IDENT}))?"))
                .unwrap_or_else(|_| Regex::new("$^").expect("trivial regex")),
        }
    })
}

fn unquote(s: &str) -> String {
    match s.strip_prefix('`').and_then(|r| r.strip_suffix('`')) {
        Some(inner) => inner.replace("``", "`"),
        None => s.to_owned(),
    }
}

/// The tables a (normalized) DDL statement names, found by patterns on its head.
pub(super) fn tables_named(text: &str, default_db: Option<&str>) -> Vec<TableName> {
    let pats = head_patterns();
    let mut found: Vec<String> = Vec::new();
    for re in &pats.single {
        if let Some(m) = re.captures(text).and_then(|c| c.get(1)) {
            found.push(m.as_str().to_owned());
            break;
        }
    }
    if found.is_empty() {
        for re in &pats.list {
            if let Some(m) = re.captures(text).and_then(|c| c.get(1)) {
                for c in pats.name.captures_iter(m.as_str()) {
                    let whole = c.get(0).map_or("", |m| m.as_str());
                    if whole.eq_ignore_ascii_case("TO") {
                        continue;
                    }
                    found.push(whole.to_owned());
                }
                break;
            }
        }
    }
    let mut out = Vec::new();
    for f in found {
        let Some(c) = pats.name.captures(&f) else {
            continue;
        };
        let first = c.get(1).map_or("", |m| m.as_str());
        let name = match c.get(2) {
            Some(t) => Some(TableName::new(unquote(first), unquote(t.as_str()))),
            None => default_db.map(|db| TableName::new(db, unquote(first))),
        };
        if let Some(n) = name {
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    out
}
