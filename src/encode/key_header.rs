//! The record key as a JSON document ([`json_key`]), and the headers Debezium puts on the
//! records of a key change ([`KEY_CHANGE_NEWKEY`], [`KEY_CHANGE_OLDKEY`]), whose value is
//! that key as Kafka Connect's default `SimpleHeaderConverter` writes a key struct
//! ([`connect_header_text`]).
//!
//! `SimpleHeaderConverter` writes a struct as `{"field":value,...}` with strings quoted and
//! only `"` and `\` escaped: control characters and non-ASCII text are written as they are,
//! where JSON escapes control characters. Everything else (numbers, booleans, `null`,
//! base64 bytes) is as in the JSON key.

use crate::encode::json_value::write_json_value;
use crate::encode::table_ctx::TableCtx;
use crate::value::Value;

/// The header on the delete (and its tombstone) of a key change: the new key.
pub const KEY_CHANGE_NEWKEY: &str = "__debezium.newkey";
/// The header on the create of a key change: the old key.
pub const KEY_CHANGE_OLDKEY: &str = "__debezium.oldkey";

/// The key document of `row` (`{"<key column>": value, ...}`, the written columns of the
/// route), or `None` for tables without key columns.
pub fn json_key(table: &TableCtx, row: &[Value]) -> Option<Vec<u8>> {
    if table.out.key_idx.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(32);
    out.push(b'{');
    for (n, &i) in table.out.key_idx.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        write_field(&mut out, table, row, i);
    }
    out.push(b'}');
    Some(out)
}

/// Appends `"name":value` of written column `i` of `row`.
pub fn write_field(out: &mut Vec<u8>, table: &TableCtx, row: &[Value], i: usize) {
    let columns = &table.out.schema.columns;
    if let (Some(name), Some(col)) = (table.json_names.get(i), columns.get(i)) {
        out.extend_from_slice(name.as_bytes());
        match table.out.cell(row, i) {
            Some(v) => write_json_value(out, col, &v),
            None => out.extend_from_slice(b"null"),
        }
    }
}

/// A JSON document as `SimpleHeaderConverter` writes the same struct: the escapes of JSON
/// strings other than `\"` and `\\` are replaced by the characters they stand for. The
/// input must be JSON as [`crate::encode::json_value`] writes it (escapes `\n`, `\r`, `\t`,
/// `\b`, `\f`, `\u00XX` only); anything else is copied.
pub fn connect_header_text(json: Vec<u8>) -> Vec<u8> {
    if !json.contains(&b'\\') {
        return json;
    }
    let mut out = Vec::with_capacity(json.len());
    let mut i = 0;
    while let Some(&b) = json.get(i) {
        if b != b'\\' {
            out.push(b);
            i += 1;
            continue;
        }
        let next = json.get(i + 1).copied();
        let (raw, len): (Option<u8>, usize) = match next {
            Some(b'n') => (Some(b'\n'), 2),
            Some(b'r') => (Some(b'\r'), 2),
            Some(b't') => (Some(b'\t'), 2),
            Some(b'b') => (Some(0x08), 2),
            Some(b'f') => (Some(0x0c), 2),
            Some(b'u') => (
                json.get(i + 2..i + 6)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .filter(|c| *c < 0x20),
                6,
            ),
            _ => (None, 2),
        };
        match raw {
            Some(c) => out.push(c),
            // `\"`, `\\` and anything unexpected: kept as written.
            None => out.extend_from_slice(json.get(i..i + len).unwrap_or(&json[i..])),
        }
        i += len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::connect_header_text;

    #[test]
    fn plain_keys_are_unchanged() {
        let key = br#"{"id":5,"s":"a\"b\\c","n":null,"b":"AQL/"}"#.to_vec();
        assert_eq!(connect_header_text(key.clone()), key);
    }

    /// Expected bytes: what Kafka Connect 4.4's `SimpleHeaderConverter.fromConnectHeader`
    /// wrote for a struct {id: 5, s: "é\n\u{1}/"} (observed with the test bed's Kafka jars).
    #[test]
    fn control_characters_are_written_raw_as_simple_header_converter() {
        let mut json = Vec::new();
        json.extend_from_slice(b"{\"id\":5,\"s\":");
        crate::encode::json_value::write_json_string(&mut json, "é\n\u{1}/");
        json.push(b'}');
        assert_eq!(
            connect_header_text(json),
            "{\"id\":5,\"s\":\"é\n\u{1}/\"}".as_bytes()
        );
        let mut json = Vec::new();
        crate::encode::json_value::write_json_string(&mut json, "q\"\\\t\r\u{8}\u{c}\u{1f}");
        assert_eq!(
            connect_header_text(json),
            "\"q\\\"\\\\\t\r\u{8}\u{c}\u{1f}\"".as_bytes()
        );
    }
}
