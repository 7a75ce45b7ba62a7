//! The documented deliberate differences from Debezium (README, "Output"), each with its reason
//! and a test that a difference really is that one: `scripts/parity` reports a differing field
//! as deliberate only when every differing value of it fits its entry here.

use serde_json::Value;

/// One deliberate difference.
#[derive(Debug)]
pub struct Deliberate {
    /// Flavors it applies to (`mariadb`, `mysql`); empty: both.
    pub flavors: &'static [&'static str],
    /// The column's SQL type as the type matrix declares it.
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
    /// Whether the entry covers column type `ty` on `flavor`.
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

/// The same JSON document, numbers compared as doubles: only how a double is printed differs.
fn same_json_document(s: Option<&Value>, d: Option<&Value>) -> bool {
    fn doc(v: Option<&Value>) -> Option<Value> {
        serde_json::from_str(v?.as_str()?).ok()
    }
    fn same(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
            (Value::Array(x), Value::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
            }
            (Value::Object(x), Value::Object(y)) => {
                x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
            }
            _ => a == b,
        }
    }
    matches!((doc(s), doc(d)), (Some(a), Some(b)) if same(&a, &b))
}

/// The zero YEAR: sluice writes 0, Debezium 1900... or 2000 (its year conversion of 0).
fn zero_year(s: Option<&Value>, _d: Option<&Value>) -> bool {
    s.and_then(Value::as_i64) == Some(0)
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
        reason: "the same document; sluice prints MySQL's binary JSON doubles as the server \
                 prints them, Debezium as Java does",
        fits: same_json_document,
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
    assert!(!unsigned_wrap(Some(&v("18446744073709551615")), Some(&v("-2"))));
    assert!(!unsigned_wrap(Some(&v("5")), Some(&v("5"))));
    assert!(!unsigned_wrap(None, Some(&v("-1"))));
}

#[test]
fn a_json_document_differs_deliberately_only_in_how_numbers_are_printed() {
    let s = |t: &str| Value::String(t.into());
    assert!(same_json_document(
        Some(&s(r#"{"k":[1,2.5e0,"ü"],"n":{"x":-1}}"#)),
        Some(&s(r#"{"n": {"x": -1}, "k": [1, 2.5, "ü"]}"#))
    ));
    assert!(same_json_document(Some(&s("[1e300]")), Some(&s("[1.0E300]"))));
    assert!(!same_json_document(Some(&s("[1]")), Some(&s("[2]"))));
    assert!(!same_json_document(Some(&s(r#"{"a":1}"#)), Some(&s(r#"{"a":1,"b":2}"#))));
    assert!(!same_json_document(Some(&s("[")), Some(&s("["))));
}
