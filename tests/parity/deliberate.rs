//! The documented deliberate differences from Debezium (README, "Output"), each with its reason
//! and a test that a difference really is that one: `scripts/parity` reports a differing field
//! as deliberate only when every differing value of it fits its entry here.

#[cfg(test)]
use serde_json::json;
use serde_json::Value;

/// One deliberate difference.
#[derive(Debug)]
pub struct Deliberate {
    /// Flavors it applies to (`mariadb`, `mysql`); empty: both.
    pub flavors: &'static [&'static str],
    /// The column's SQL type as the type matrix declares it, or an envelope field's path
    /// (`txn_topic.ts_ms`).
    pub ty: &'static str,
    /// Why sluice differs.
    pub reason: &'static str,
    /// Whether a differing pair (sluice's value, Debezium's) is this difference.
    pub fits: fn(Option<&Value>, Option<&Value>) -> bool,
}

/// Entries are told apart by what they cover (the check is a function).
impl PartialEq for Deliberate {
    fn eq(&self, other: &Self) -> bool {
        (self.flavors, self.ty, self.reason) == (other.flavors, other.ty, other.reason)
    }
}

impl Deliberate {
    /// Whether the entry covers column type (or envelope field path) `ty` on `flavor`.
    pub fn covers(&self, flavor: &str, ty: Option<&str>) -> bool {
        (self.flavors.is_empty() || self.flavors.contains(&flavor)) && ty == Some(self.ty)
    }
}

/// Debezium's default `bigint.unsigned.handling.mode=long` wraps values above 2^63−1 into
/// negative numbers; sluice writes the unsigned value: they must differ by exactly 2^64.
fn unsigned_wrap(s: Option<&Value>, d: Option<&Value>) -> bool {
    match (s.and_then(Value::as_u64), d.and_then(Value::as_i64)) {
        (Some(s), Some(d)) => d < 0 && s == d as u64,
        _ => false,
    }
}

/// The same JSON text except how numbers are printed (each number token compared as a double;
/// everything else, whitespace included, must be the same).
fn same_json_but_numbers(s: Option<&Value>, d: Option<&Value>) -> bool {
    match (s.and_then(Value::as_str), d.and_then(Value::as_str)) {
        (Some(s), Some(d)) => numbers_normalized(s) == numbers_normalized(d),
        _ => false,
    }
}

/// JSON text with every number outside a string rewritten as its double in one notation.
fn numbers_normalized(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let (mut in_string, mut escaped) = (false, false);
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            (in_string, escaped) = match (escaped, c) {
                (true, _) => (true, false),
                (false, '\\') => (true, true),
                (false, '"') => (false, false),
                _ => (true, false),
            };
        } else if c == '-' || c.is_ascii_digit() {
            let mut number = c.to_string();
            while let Some(&n) = chars.peek() {
                if !(n.is_ascii_digit() || matches!(n, '.' | 'e' | 'E' | '+' | '-')) {
                    break;
                }
                number.push(n);
                chars.next();
            }
            match number.parse::<f64>() {
                Ok(f) => out.push_str(&format!("{f:e}")),
                Err(_) => out.push_str(&number),
            }
        } else {
            in_string = c == '"';
            out.push(c);
        }
    }
    out
}

/// MySQL JSON in a snapshot read: sluice's text is the server's `SELECT` rendering (Debezium's)
/// without the blanks after `,` and `:` outside strings, the text of the binlog's form.
fn json_without_blanks(s: Option<&Value>, d: Option<&Value>) -> bool {
    let (Some(s), Some(d)) = (s.and_then(Value::as_str), d.and_then(Value::as_str)) else {
        return false;
    };
    let mut compact = String::with_capacity(d.len());
    let (mut in_string, mut escaped, mut after_separator) = (false, false, false);
    for c in d.chars() {
        if in_string {
            (in_string, escaped) = match (escaped, c) {
                (true, _) => (true, false),
                (false, '\\') => (true, true),
                (false, '"') => (false, false),
                _ => (true, false),
            };
        } else if c == ' ' && after_separator {
            continue;
        } else {
            in_string = c == '"';
            after_separator = c == ',' || c == ':';
        }
        compact.push(c);
    }
    s != d && s == compact
}

/// The zero YEAR: sluice writes 0, Debezium 1900... or 2000 (its year conversion of 0).
fn zero_year(s: Option<&Value>, _d: Option<&Value>) -> bool {
    s.and_then(Value::as_i64) == Some(0)
}

/// Debezium 3.5 reads a MariaDB UUID in an UPDATE's before image one byte off: its text is
/// the stored value's shifted right by one byte, `00` in front and the last byte lost. sluice
/// writes the stored value (the server's own text), as in every other image.
fn uuid_one_byte_off(s: Option<&Value>, d: Option<&Value>) -> bool {
    let hex = |v: Option<&Value>| v.and_then(Value::as_str).map(|t| t.replace('-', ""));
    match (hex(s), hex(d)) {
        (Some(s), Some(d)) if s.len() == 32 && d.len() == 32 => d == format!("00{}", &s[..30]),
        _ => false,
    }
}

/// The transaction topic's `ts_ms`: Debezium's is earlier (seen on the first streamed BEGIN
/// of a MariaDB run: an earlier event's time); sluice's is the transaction's own.
fn debezium_earlier(s: Option<&Value>, d: Option<&Value>) -> bool {
    match (s.and_then(Value::as_u64), d.and_then(Value::as_u64)) {
        (Some(s), Some(d)) => d < s,
        _ => false,
    }
}

/// Every documented deliberate difference.
pub const DELIBERATE: &[Deliberate] = &[
    Deliberate {
        flavors: &[],
        ty: "BIGINT UNSIGNED",
        reason: "sluice writes the exact unsigned number; Debezium's default \
                 (`bigint.unsigned.handling.mode=long`) turns values above 2^63−1 negative",
        fits: unsigned_wrap,
    },
    Deliberate {
        flavors: &["mysql"],
        ty: "JSON",
        reason: "the same text but for numbers: sluice prints the doubles of MySQL's binary \
                 JSON as the server prints them, Debezium as Java does",
        fits: same_json_but_numbers,
    },
    Deliberate {
        flavors: &["mysql"],
        ty: "JSON",
        reason: "snapshot reads: sluice writes the same text as for the binlog's form of the \
                 value (no blanks after `,` and `:`, as Debezium's binlog reader does too); \
                 Debezium's snapshot passes on the server's `SELECT` rendering, with the blanks",
        fits: json_without_blanks,
    },
    Deliberate {
        flavors: &["mariadb"],
        ty: "UUID",
        reason: "Debezium's error: its UPDATE before image reads a UUID one byte off (`00` \
                 in front, the last byte lost); sluice writes the stored value, the server's text",
        fits: uuid_one_byte_off,
    },
    Deliberate {
        flavors: &["mariadb"],
        ty: "txn_topic.ts_ms",
        reason: "Debezium's side: the first streamed BEGIN carries an earlier event's time; \
                 sluice's is the transaction's own",
        fits: debezium_earlier,
    },
    Deliberate {
        flavors: &[],
        ty: "YEAR",
        reason: "the zero YEAR is 0 in sluice (the stored value)",
        fits: zero_year,
    },
];

#[test]
fn an_unsigned_wrap_is_a_difference_of_exactly_two_to_the_64() {
    let v = |t: &str| serde_json::from_str::<Value>(t).unwrap();
    assert!(unsigned_wrap(
        Some(&v("18446744073709551615")),
        Some(&v("-1"))
    ));
    assert!(unsigned_wrap(
        Some(&v("9223372036854775808")),
        Some(&v("-9223372036854775808"))
    ));
    assert!(!unsigned_wrap(
        Some(&v("18446744073709551615")),
        Some(&v("-2"))
    ));
    assert!(!unsigned_wrap(Some(&v("5")), Some(&v("5"))));
    assert!(!unsigned_wrap(None, Some(&v("-1"))));
}

#[test]
fn a_json_text_differs_deliberately_only_in_how_numbers_are_printed() {
    let s = |t: &str| Value::String(t.into());
    let fits = |a: &str, b: &str| same_json_but_numbers(Some(&s(a)), Some(&s(b)));
    assert!(fits(r#"{"k": [1, 2.5e0, "ü"]}"#, r#"{"k": [1, 2.5, "ü"]}"#));
    assert!(fits("[1e300, -0.5]", "[1.0E300, -5.0E-1]"));
    assert!(fits(r#"["a\"1", 1]"#, r#"["a\"1", 1.0]"#));
    assert!(
        !fits(r#"{"k":[1]}"#, r#"{"k": [1]}"#),
        "whitespace is not a number"
    );
    assert!(
        !fits(r#"{"a": 1, "b": 2}"#, r#"{"b": 2, "a": 1}"#),
        "nor is key order"
    );
    assert!(
        !fits(r#"["1"]"#, r#"["1.0"]"#),
        "digits inside strings are text"
    );
    assert!(!fits("[1]", "[2]"));
    assert!(!same_json_but_numbers(Some(&json!(1)), Some(&json!(1.0))));
}

#[test]
fn a_snapshot_json_text_differs_deliberately_only_in_the_blanks_of_the_servers_rendering() {
    let s = |t: &str| Value::String(t.into());
    let fits = |a: &str, b: &str| json_without_blanks(Some(&s(a)), Some(&s(b)));
    assert!(fits(
        r#"{"k":[1,2.5,"ü, x: y",null],"n":{"x":-1}}"#,
        r#"{"k": [1, 2.5, "ü, x: y", null], "n": {"x": -1}}"#
    ));
    assert!(
        !fits(r#"["a,b"]"#, r#"["a, b"]"#),
        "blanks inside strings are text"
    );
    assert!(!fits(r#"[1,2]"#, r#"[1,2]"#), "equal is not a difference");
    assert!(!fits(r#"[1,3]"#, r#"[1, 2]"#));
    assert!(
        !fits(r#"{"a":1}"#, r#"{"a" : 1}"#),
        "only the server's blanks after `,` and `:`"
    );
}

#[test]
fn a_uuid_differs_deliberately_only_when_debezium_read_it_one_byte_off() {
    let s = |t: &str| Value::String(t.into());
    let fits = |a: &str, b: &str| uuid_one_byte_off(Some(&s(a)), Some(&s(b)));
    assert!(fits(
        "123e4567-e89b-12d3-a456-426614174000",
        "00123e45-67e8-9b12-d3a4-564266141740"
    ));
    assert!(!fits(
        "123e4567-e89b-12d3-a456-426614174000",
        "123e4567-e89b-12d3-a456-426614174000"
    ));
    assert!(!fits(
        "123e4567-e89b-12d3-a456-426614174000",
        "01123e45-67e8-9b12-d3a4-564266141740"
    ));
    assert!(!uuid_one_byte_off(None, Some(&s("00"))));
}

#[test]
fn a_transaction_time_differs_deliberately_only_when_debeziums_is_earlier() {
    assert!(debezium_earlier(Some(&json!(1000)), Some(&json!(999))));
    assert!(!debezium_earlier(Some(&json!(1000)), Some(&json!(1001))));
    assert!(!debezium_earlier(Some(&json!(1000)), None));
}
