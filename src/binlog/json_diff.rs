//! MySQL partial JSON updates (`binlog_row_value_options=PARTIAL_JSON`).
//!
//! With that setting MySQL logs an UPDATE that changes a JSON column only through
//! `JSON_SET` / `JSON_REPLACE` / `JSON_REMOVE` as a `PARTIAL_UPDATE_ROWS_EVENT`
//! whose after image holds, for that column, a list of changes ("diffs") instead of
//! the new document.  This module rebuilds the full new document from the before
//! image's document and that list, so that downstream sees exactly the text a
//! full-image UPDATE would have produced.
//!
//! Wire format of a partial column value (the server's `Json_diff_vector` binary
//! form, written in place of the column's usual length-prefixed value):
//!
//! ```text
//! u32 LE  total length N of the diffs that follow
//! N bytes, a sequence of:
//!     u8            operation: 0 = REPLACE, 1 = INSERT, 2 = REMOVE
//!     lenenc + text path (MySQL JSON path syntax, e.g. `$.a[1]."b c"`)
//!     lenenc + doc  new value as MySQL binary JSON (absent for REMOVE)
//! ```
//!
//! Semantics follow the server's own applier (`apply_json_diffs`): paths hold only
//! member names and array positions (no wildcards, no auto-wrapping); REPLACE
//! needs an existing value; INSERT adds an object member that must not exist yet
//! or inserts into an array at a position (clamped to the array's end, shifting
//! later elements); REMOVE deletes an existing member or in-bounds array element.
//! A path naming the document root is never logged by the server and is refused.
//!
//! Objects keep MySQL's key order (shorter keys first, equal lengths bytewise), which
//! is the order the binary format stores and [`super::rows::jsonb_to_json`] renders,
//! so an inserted member lands where a full image would place it.  Scalars are
//! rendered by the same code as the full-image path, so numbers, opaque DECIMALs and
//! temporal values come out byte-identical.

use super::rows::{le_uint, render_jsonb, JsonbContainer, JsonbSlot, MAX_JSON_DEPTH};
use crate::encode::json_value::write_json_string;

/// A decoded JSON document: containers as trees, scalars already rendered.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum JsonNode {
    /// A scalar as compact JSON text, exactly as the full-image path renders it.
    Scalar(String),
    /// An array.
    Array(Vec<JsonNode>),
    /// An object: raw key bytes and values in MySQL's key order.
    Object(Vec<(Vec<u8>, JsonNode)>),
}

/// One step of a JSON path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Leg {
    /// `.name` or `."quoted name"`.
    Member(String),
    /// `[n]`: position `n` from the start.
    Index(usize),
    /// `[last]` (0) or `[last-n]` (n): position counted from the end.
    FromEnd(usize),
}

/// A diff's operation (`enum_json_diff_operation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// Replace an existing value.
    Replace,
    /// Add an object member or insert into an array.
    Insert,
    /// Remove an object member or array element.
    Remove,
}

/// One decoded diff; the value stays binary JSON until it is applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Diff<'a> {
    /// What to do.
    pub op: Op,
    /// The path as logged (for error messages).
    pub path_text: String,
    /// The parsed path.
    pub path: Vec<Leg>,
    /// New value (binary JSON); `None` for REMOVE.
    pub value: Option<&'a [u8]>,
}

/// Parses a JSON path as MySQL logs it (`Json_path::to_string`): `$`, then legs
/// `.name`, `."quoted name"` (JSON string escapes), `[n]`, `[last]`, `[last-n]`,
/// with optional whitespace between tokens.  Wildcards, `**` and ranges are refused:
/// the server never logs them in a diff.
pub(crate) fn parse_path(text: &str) -> Result<Vec<Leg>, String> {
    let bad = |why: &str| format!("JSON path {text:?}: {why}");
    let b = text.as_bytes();
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'$') {
        return Err(bad("does not start with '$'"));
    }
    i += 1;
    let mut legs = Vec::new();
    loop {
        i = skip_ws(b, i);
        match b.get(i) {
            None => return Ok(legs),
            Some(b'.') => {
                i = skip_ws(b, i + 1);
                match b.get(i) {
                    Some(b'"') => {
                        let end = closing_quote(b, i + 1)
                            .ok_or_else(|| bad("unterminated quoted member name"))?;
                        let quoted = text
                            .get(i..=end)
                            .ok_or_else(|| bad("bad quoted member name"))?;
                        let name: String = serde_json::from_str(quoted)
                            .map_err(|e| bad(&format!("bad quoted member name: {e}")))?;
                        legs.push(Leg::Member(name));
                        i = end + 1;
                    }
                    Some(b'*') => return Err(bad("wildcards are not allowed in a diff path")),
                    _ => {
                        let start = i;
                        while let Some(&c) = b.get(i) {
                            if c == b'.' || c == b'[' || c == b'*' || c.is_ascii_whitespace() {
                                break;
                            }
                            i += 1;
                        }
                        if i == start {
                            return Err(bad("empty member name"));
                        }
                        let name = text.get(start..i).ok_or_else(|| bad("bad member name"))?;
                        legs.push(Leg::Member(name.to_owned()));
                    }
                }
            }
            Some(b'[') => {
                i = skip_ws(b, i + 1);
                let leg = if b.get(i..i + 4) == Some(b"last".as_slice()) {
                    i = skip_ws(b, i + 4);
                    if b.get(i) == Some(&b'-') {
                        i = skip_ws(b, i + 1);
                        let (n, next) = digits(b, i).ok_or_else(|| bad("bad `last-N` index"))?;
                        i = next;
                        Leg::FromEnd(n)
                    } else {
                        Leg::FromEnd(0)
                    }
                } else {
                    let (n, next) = digits(b, i).ok_or_else(|| {
                        bad("array index is not a number (wildcards and ranges are not allowed)")
                    })?;
                    i = next;
                    Leg::Index(n)
                };
                i = skip_ws(b, i);
                if b.get(i) != Some(&b']') {
                    return Err(bad("expected ']' (ranges are not allowed in a diff path)"));
                }
                i += 1;
                legs.push(leg);
            }
            Some(_) => return Err(bad(&format!("unexpected character at byte {i}"))),
        }
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
        i += 1;
    }
    i
}

/// Index of the unescaped `"` closing a quoted name whose content starts at `i`.
fn closing_quote(b: &[u8], mut i: usize) -> Option<usize> {
    loop {
        match b.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
}

/// A decimal number starting at `i`: (value, index after it).
fn digits(b: &[u8], mut i: usize) -> Option<(usize, usize)> {
    let start = i;
    let mut n: usize = 0;
    while let Some(&c) = b.get(i) {
        if !c.is_ascii_digit() {
            break;
        }
        n = n.checked_mul(10)?.checked_add(usize::from(c - b'0'))?;
        i += 1;
    }
    (i > start).then_some((n, i))
}

/// Reads a `net_field_length` integer (the server's `net_field_length_checked`).
fn net_length(data: &[u8], pos: &mut usize) -> Result<usize, String> {
    let first = *data
        .get(*pos)
        .ok_or_else(|| "truncated length".to_owned())?;
    let (width, skip) = match first {
        0..=250 => {
            *pos += 1;
            return Ok(usize::from(first));
        }
        252 => (2, 1),
        253 => (3, 1),
        254 => (8, 1),
        _ => return Err(format!("invalid length byte {first:#04x}")),
    };
    let bytes = data
        .get(*pos + skip..)
        .and_then(|s| s.get(..width))
        .ok_or_else(|| "truncated length".to_owned())?;
    *pos += skip + width;
    usize::try_from(le_uint(bytes)).map_err(|_| "length too large".to_owned())
}

/// Splits the diff list (the `N` bytes after the 4-byte length) into diffs.
pub(crate) fn parse_diffs(data: &[u8]) -> Result<Vec<Diff<'_>>, String> {
    let mut pos = 0usize;
    let mut out = Vec::new();
    while pos < data.len() {
        let at = pos;
        let op = match data.get(pos) {
            Some(0) => Op::Replace,
            Some(1) => Op::Insert,
            Some(2) => Op::Remove,
            Some(x) => return Err(format!("diff at byte {at}: unknown operation {x}")),
            None => return Err(format!("diff at byte {at}: truncated")),
        };
        pos += 1;
        let path_len =
            net_length(data, &mut pos).map_err(|e| format!("diff at byte {at}: path {e}"))?;
        let path_raw = data
            .get(pos..)
            .and_then(|s| s.get(..path_len))
            .ok_or_else(|| format!("diff at byte {at}: path of {path_len} bytes is truncated"))?;
        pos += path_len;
        let path_text = std::str::from_utf8(path_raw)
            .map_err(|_| format!("diff at byte {at}: path is not UTF-8"))?
            .to_owned();
        let path = parse_path(&path_text).map_err(|e| format!("diff at byte {at}: {e}"))?;
        let value = if op == Op::Remove {
            None
        } else {
            let len =
                net_length(data, &mut pos).map_err(|e| format!("diff at byte {at}: value {e}"))?;
            let v = data
                .get(pos..)
                .and_then(|s| s.get(..len))
                .ok_or_else(|| format!("diff at byte {at}: value of {len} bytes is truncated"))?;
            pos += len;
            Some(v)
        };
        out.push(Diff {
            op,
            path_text,
            path,
            value,
        });
    }
    Ok(out)
}

/// Decodes a MySQL binary JSON document into a [`JsonNode`] tree.  An empty
/// document is JSON `null`, as for [`super::rows::jsonb_to_json`].
pub(crate) fn jsonb_to_node(doc: &[u8]) -> Result<JsonNode, String> {
    let Some((&t, rest)) = doc.split_first() else {
        return Ok(JsonNode::Scalar("null".to_owned()));
    };
    // Same bound as the renderer: entries sharing sub-values must not explode.
    let mut budget = doc.len().saturating_mul(64).saturating_add(4096);
    node_from(t, rest, 0, &mut budget)
}

fn spend(budget: &mut usize, n: usize) -> Result<(), String> {
    *budget = budget
        .checked_sub(n)
        .ok_or_else(|| "document too large for its binary size".to_owned())?;
    Ok(())
}

fn scalar(t: u8, data: &[u8], depth: usize, budget: &mut usize) -> Result<JsonNode, String> {
    let mut out = Vec::new();
    render_jsonb(t, data, &mut out, depth, usize::MAX)?;
    spend(budget, out.len() + 1)?;
    String::from_utf8(out)
        .map(JsonNode::Scalar)
        .map_err(|e| e.to_string())
}

fn node_from(t: u8, data: &[u8], depth: usize, budget: &mut usize) -> Result<JsonNode, String> {
    if depth > MAX_JSON_DEPTH {
        return Err("nesting too deep".to_owned());
    }
    match t {
        0x00..=0x03 => container(data, t & 1 == 1, t < 2, depth, budget),
        _ => scalar(t, data, depth, budget),
    }
}

/// Builds a container's node (the tree form of `render_container` in `rows.rs`).
fn container(
    data: &[u8],
    large: bool,
    object: bool,
    depth: usize,
    budget: &mut usize,
) -> Result<JsonNode, String> {
    let c = JsonbContainer::parse(data, large, object)?;
    spend(budget, 2)?;
    let mut keys = Vec::new();
    let mut values = Vec::with_capacity(c.count.min(data.len()));
    for i in 0..c.count {
        if object {
            let key = c.key(i)?;
            spend(budget, key.len() + 4)?;
            keys.push(key.to_vec());
        }
        let v = match c.value(i)? {
            (t, JsonbSlot::Inline(inline)) => scalar(t, inline, depth + 1, budget)?,
            (t, JsonbSlot::At(v)) => node_from(t, v, depth + 1, budget)?,
        };
        values.push(v);
    }
    Ok(if object {
        JsonNode::Object(keys.into_iter().zip(values).collect())
    } else {
        JsonNode::Array(values)
    })
}

/// Renders a node as compact JSON, byte-identical to [`super::rows::jsonb_to_json`]
/// on the document the node was decoded from.
pub(crate) fn render_node(node: &JsonNode, out: &mut Vec<u8>) {
    match node {
        JsonNode::Scalar(s) => out.extend_from_slice(s.as_bytes()),
        JsonNode::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                render_node(v, out);
            }
            out.push(b']');
        }
        JsonNode::Object(members) => {
            out.push(b'{');
            for (i, (k, v)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_json_string(out, &String::from_utf8_lossy(k));
                out.push(b':');
                render_node(v, out);
            }
            out.push(b'}');
        }
    }
}

/// Array position of `leg` in an array of `len` elements (`Json_array_index`):
/// (position clamped to `0..=len`, whether the leg names an existing element).
fn array_position(leg: &Leg, len: usize) -> Option<(usize, bool)> {
    match *leg {
        Leg::Index(i) => Some((i.min(len), i < len)),
        Leg::FromEnd(n) => Some((if n < len { len - 1 - n } else { 0 }, n < len)),
        Leg::Member(_) => None,
    }
}

/// MySQL's key order: shorter keys first, equal lengths bytewise.
fn key_order(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// The node at `path` (exact match, no auto-wrapping), like `seek_exact_path`.
fn seek<'n>(mut node: &'n mut JsonNode, path: &[Leg]) -> Option<&'n mut JsonNode> {
    for leg in path {
        node = match (node, leg) {
            (JsonNode::Array(items), Leg::Index(_) | Leg::FromEnd(_)) => {
                let len = items.len();
                match array_position(leg, len)? {
                    (p, true) => items.get_mut(p)?,
                    (_, false) => return None,
                }
            }
            (JsonNode::Object(members), Leg::Member(name)) => members
                .iter_mut()
                .find(|(k, _)| k.as_slice() == name.as_bytes())
                .map(|(_, v)| v)?,
            _ => return None,
        };
    }
    Some(node)
}

/// Applies one diff to `root`, as the server's applier would; errors say why the
/// diff does not fit the document.
pub(crate) fn apply_diff(root: &mut JsonNode, diff: &Diff<'_>) -> Result<(), String> {
    let fail = |why: &str| {
        let op = match diff.op {
            Op::Replace => "REPLACE",
            Op::Insert => "INSERT",
            Op::Remove => "REMOVE",
        };
        format!("{op} at {}: {why}", diff.path_text)
    };
    let Some((last, parent_path)) = diff.path.split_last() else {
        return Err(fail("a diff cannot target the document root"));
    };
    let value = match diff.value {
        Some(v) => {
            Some(jsonb_to_node(v).map_err(|e| fail(&format!("invalid binary JSON value: {e}")))?)
        }
        None => None,
    };
    let parent =
        seek(root, parent_path).ok_or_else(|| fail("path not found in the before image"))?;
    match (diff.op, parent, last) {
        (Op::Replace, parent, _) => {
            let target = seek(parent, std::slice::from_ref(last))
                .ok_or_else(|| fail("path not found in the before image"))?;
            *target = value.ok_or_else(|| fail("missing value"))?;
        }
        (Op::Insert, JsonNode::Object(members), Leg::Member(name)) => {
            let key = name.as_bytes();
            if members.iter().any(|(k, _)| k.as_slice() == key) {
                return Err(fail("member already exists in the before image"));
            }
            let at = members
                .iter()
                .position(|(k, _)| key_order(k, key).is_gt())
                .unwrap_or(members.len());
            members.insert(
                at,
                (key.to_vec(), value.ok_or_else(|| fail("missing value"))?),
            );
        }
        (Op::Insert, JsonNode::Array(items), Leg::Index(_) | Leg::FromEnd(_)) => {
            let (at, _) = array_position(last, items.len()).ok_or_else(|| fail("bad position"))?;
            items.insert(at, value.ok_or_else(|| fail("missing value"))?);
        }
        (Op::Remove, JsonNode::Object(members), Leg::Member(name)) => {
            let at = members
                .iter()
                .position(|(k, _)| k.as_slice() == name.as_bytes())
                .ok_or_else(|| fail("member not found in the before image"))?;
            members.remove(at);
        }
        (Op::Remove, JsonNode::Array(items), Leg::Index(_) | Leg::FromEnd(_)) => {
            match array_position(last, items.len()) {
                Some((at, true)) => {
                    items.remove(at);
                }
                _ => return Err(fail("array index out of bounds in the before image")),
            }
        }
        (Op::Insert | Op::Remove, _, _) => {
            return Err(fail("the parent value's type does not match the path leg"))
        }
    }
    Ok(())
}

/// Rebuilds the new document: applies the diff list `diffs` (the bytes after the
/// 4-byte length) to the before image's binary document `before`, and renders it.
pub(crate) fn rebuild(before: &[u8], diffs: &[u8]) -> Result<String, RebuildError> {
    let list = parse_diffs(diffs).map_err(RebuildError::Malformed)?;
    let mut root = jsonb_to_node(before)
        .map_err(|e| RebuildError::Malformed(format!("before image: invalid binary JSON: {e}")))?;
    for d in &list {
        apply_diff(&mut root, d).map_err(RebuildError::DoesNotApply)?;
    }
    let mut out = Vec::with_capacity(before.len() + before.len() / 2 + 16);
    render_node(&root, &mut out);
    String::from_utf8(out).map_err(|e| RebuildError::Malformed(e.to_string()))
}

/// Why [`rebuild`] failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RebuildError {
    /// The diff bytes or the before document are not well formed.
    Malformed(String),
    /// A well-formed diff does not fit the before document.
    DoesNotApply(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binlog::rows::jsonb_to_json;
    use proptest::prelude::*;

    // ---- a small model of JSON documents with a MySQL binary JSON encoder ----

    #[derive(Debug, Clone, PartialEq)]
    enum M {
        Null,
        Bool(bool),
        Int(i64),
        Dbl(f64),
        Str(String),
        Arr(Vec<M>),
        /// Members in any order; the encoder sorts them the way MySQL stores them.
        Obj(Vec<(String, M)>),
    }

    use crate::binlog::rows::test_jsonb_varlen as varlen;

    /// Encodes `m` as a MySQL binary JSON document (type byte + value).
    fn enc(m: &M, large: bool) -> Vec<u8> {
        let (t, body) = enc_value(m, large);
        let mut out = vec![t];
        out.extend(body);
        out
    }

    fn enc_value(m: &M, large: bool) -> (u8, Vec<u8>) {
        match m {
            M::Null => (4, vec![0]),
            M::Bool(true) => (4, vec![1]),
            M::Bool(false) => (4, vec![2]),
            M::Int(i) => {
                if let Ok(x) = i16::try_from(*i) {
                    (5, x.to_le_bytes().to_vec())
                } else if let Ok(x) = i32::try_from(*i) {
                    (7, x.to_le_bytes().to_vec())
                } else {
                    (9, i.to_le_bytes().to_vec())
                }
            }
            M::Dbl(d) => (0x0b, d.to_le_bytes().to_vec()),
            M::Str(s) => {
                let mut b = Vec::new();
                varlen(s.len(), &mut b);
                b.extend_from_slice(s.as_bytes());
                (0x0c, b)
            }
            M::Arr(items) => (
                if large { 3 } else { 2 },
                enc_container(None, items.iter().collect(), large),
            ),
            M::Obj(members) => {
                let mut sorted: Vec<&(String, M)> = members.iter().collect();
                // MySQL's order, written out independently of `key_order`
                sorted.sort_by(|a, b| a.0.len().cmp(&b.0.len()).then_with(|| a.0.cmp(&b.0)));
                let keys = sorted.iter().map(|(k, _)| k.as_str()).collect();
                let vals = sorted.iter().map(|(_, v)| v).collect();
                (
                    if large { 1 } else { 0 },
                    enc_container(Some(keys), vals, large),
                )
            }
        }
    }

    fn put(out: &mut Vec<u8>, v: usize, large: bool) {
        if large {
            out.extend((v as u32).to_le_bytes());
        } else {
            out.extend((v as u16).to_le_bytes());
        }
    }

    fn enc_container(keys: Option<Vec<&str>>, vals: Vec<&M>, large: bool) -> Vec<u8> {
        let osz = if large { 4 } else { 2 };
        let n = vals.len();
        let header = 2 * osz + keys.as_ref().map_or(0, |_| n * (osz + 2)) + n * (1 + osz);
        let mut tail = Vec::new();
        let mut key_entries = Vec::new();
        if let Some(keys) = &keys {
            for k in keys {
                put(&mut key_entries, header + tail.len(), large);
                key_entries.extend((k.len() as u16).to_le_bytes());
                tail.extend(k.as_bytes());
            }
        }
        let mut value_entries = Vec::new();
        for v in vals {
            let (t, body) = enc_value(v, large);
            value_entries.push(t);
            let inline = matches!(t, 4..=6) || (large && matches!(t, 7 | 8));
            if inline {
                let mut b = body.clone();
                b.resize(osz, 0);
                value_entries.extend(b);
            } else {
                put(&mut value_entries, header + tail.len(), large);
                tail.extend(body);
            }
        }
        let mut out = Vec::new();
        put(&mut out, n, large);
        put(&mut out, header + tail.len(), large);
        out.extend(key_entries);
        out.extend(value_entries);
        out.extend(tail);
        out
    }

    fn lenenc(n: usize, out: &mut Vec<u8>) {
        if n < 251 {
            out.push(n as u8);
        } else if n < 1 << 16 {
            out.push(0xfc);
            out.extend((n as u16).to_le_bytes());
        } else {
            out.push(0xfd);
            out.extend(&(n as u32).to_le_bytes()[..3]);
        }
    }

    /// Encodes one diff the way the server writes it.
    fn enc_diff(op: Op, path: &str, value: Option<&M>, out: &mut Vec<u8>) {
        out.push(match op {
            Op::Replace => 0,
            Op::Insert => 1,
            Op::Remove => 2,
        });
        lenenc(path.len(), out);
        out.extend(path.as_bytes());
        if let Some(v) = value {
            let doc = enc(v, false);
            lenenc(doc.len(), out);
            out.extend(doc);
        }
    }

    fn path_text(legs: &[Leg]) -> String {
        let mut s = "$".to_owned();
        for leg in legs {
            match leg {
                Leg::Member(name) => {
                    let ident = !name.is_empty()
                        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                        && !name.starts_with(|c: char| c.is_ascii_digit());
                    s.push('.');
                    if ident {
                        s.push_str(name);
                    } else {
                        s.push_str(&serde_json::to_string(name).unwrap());
                    }
                }
                Leg::Index(i) => s.push_str(&format!("[{i}]")),
                Leg::FromEnd(0) => s.push_str("[last]"),
                Leg::FromEnd(n) => s.push_str(&format!("[last-{n}]")),
            }
        }
        s
    }

    fn rebuilt(before: &M, diffs: &[u8]) -> Result<String, RebuildError> {
        rebuild(&enc(before, false), diffs)
    }

    fn text(m: &M) -> String {
        jsonb_to_json(&enc(m, false)).unwrap()
    }

    fn s(x: &str) -> M {
        M::Str(x.to_owned())
    }

    fn obj(members: &[(&str, M)]) -> M {
        M::Obj(
            members
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
        )
    }

    // ---- path parsing ------------------------------------------------------

    #[test]
    fn paths_as_the_server_logs_them() {
        use Leg::*;
        assert_eq!(parse_path("$").unwrap(), vec![]);
        assert_eq!(
            parse_path("$.a[1].b_c").unwrap(),
            vec![Member("a".into()), Index(1), Member("b_c".into())]
        );
        assert_eq!(
            parse_path(r#"$."a b"."x\"y"."\u00e9\\""#).unwrap(),
            vec![
                Member("a b".into()),
                Member("x\"y".into()),
                Member("é\\".into())
            ]
        );
        assert_eq!(
            parse_path("$[last][last-2][ 3 ]").unwrap(),
            vec![FromEnd(0), FromEnd(2), Index(3)]
        );
        assert_eq!(
            parse_path(" $ . a [ last - 1 ] ").unwrap(),
            vec![Member("a".into()), FromEnd(1)]
        );
        assert_eq!(parse_path("$.été").unwrap(), vec![Member("été".into())]);
        for bad in [
            "",
            "a",
            "$.",
            "$.*",
            "$[*]",
            "$**.a",
            "$[1 to 3]",
            "$[",
            "$[1",
            "$[x]",
            "$.\"a",
            "$a",
            "$[last-]",
            "$[99999999999999999999999]",
        ] {
            assert!(parse_path(bad).is_err(), "{bad:?} should be refused");
        }
    }

    // ---- diff decoding -----------------------------------------------------

    #[test]
    fn diffs_decode_from_bytes() {
        // REPLACE $.a with true; INSERT $.b[0] with "x"; REMOVE $."c d"
        let bytes: Vec<u8> = [
            &[0u8, 3][..],
            b"$.a",
            &[2, 4, 1],
            &[1, 6],
            b"$.b[0]",
            &[3, 0x0c, 1, b'x'],
            &[2, 7],
            b"$.\"c d\"",
        ]
        .concat();
        let d = parse_diffs(&bytes).unwrap();
        assert_eq!(d.len(), 3);
        assert_eq!(d[0].op, Op::Replace);
        assert_eq!(d[0].path, vec![Leg::Member("a".into())]);
        assert_eq!(d[0].value, Some(&[4u8, 1][..]));
        assert_eq!(d[1].op, Op::Insert);
        assert_eq!(d[1].path_text, "$.b[0]");
        assert_eq!(d[1].value, Some(&[0x0c, 1, b'x'][..]));
        assert_eq!(d[2].op, Op::Remove);
        assert_eq!(d[2].path, vec![Leg::Member("c d".into())]);
        assert_eq!(d[2].value, None);
        assert!(parse_diffs(&[]).unwrap().is_empty());

        // a 300-byte value uses a 3-byte length (0xfc + u16)
        let long = s(&"v".repeat(300));
        let mut bytes = Vec::new();
        enc_diff(Op::Replace, "$[0]", Some(&long), &mut bytes);
        let d = parse_diffs(&bytes).unwrap();
        assert_eq!(d[0].value.map(<[u8]>::len), Some(enc(&long, false).len()));

        // malformed: every truncation and bad bytes error out, never panic
        for cut in 0..bytes.len() {
            let _ = parse_diffs(&bytes[..cut]);
        }
        assert!(parse_diffs(&[3, 1, b'$']).is_err(), "unknown operation");
        assert!(parse_diffs(&[0, 0xfb]).is_err(), "NULL length");
        assert!(parse_diffs(&[0, 5, b'$']).is_err(), "truncated path");
        assert!(
            parse_diffs(&[2, 3, b'$', b'.', 0xff]).is_err(),
            "path not UTF-8"
        );
        assert!(parse_diffs(&[0, 1, b'$']).is_err(), "value length missing");
    }

    // ---- apply semantics ---------------------------------------------------

    fn one(op: Op, path: &str, value: Option<&M>) -> Vec<u8> {
        let mut b = Vec::new();
        enc_diff(op, path, value, &mut b);
        b
    }

    #[test]
    fn replace_insert_remove_on_objects_and_arrays() {
        let before = obj(&[
            ("a", M::Int(1)),
            ("b", M::Arr(vec![M::Int(10), M::Int(20), M::Int(30)])),
            ("nested", obj(&[("k", s("v")), ("list", M::Arr(vec![]))])),
        ]);
        let cases: Vec<(Vec<u8>, M)> = vec![
            (
                one(Op::Replace, "$.a", Some(&s("new"))),
                obj(&[
                    ("a", s("new")),
                    ("b", M::Arr(vec![M::Int(10), M::Int(20), M::Int(30)])),
                    ("nested", obj(&[("k", s("v")), ("list", M::Arr(vec![]))])),
                ]),
            ),
            (
                one(Op::Replace, "$.b[last]", Some(&M::Null)),
                obj(&[
                    ("a", M::Int(1)),
                    ("b", M::Arr(vec![M::Int(10), M::Int(20), M::Null])),
                    ("nested", obj(&[("k", s("v")), ("list", M::Arr(vec![]))])),
                ]),
            ),
            (
                // new member lands in MySQL key order: shorter keys first
                one(Op::Insert, "$.zz", Some(&M::Bool(true))),
                obj(&[
                    ("a", M::Int(1)),
                    ("b", M::Arr(vec![M::Int(10), M::Int(20), M::Int(30)])),
                    ("zz", M::Bool(true)),
                    ("nested", obj(&[("k", s("v")), ("list", M::Arr(vec![]))])),
                ]),
            ),
            (
                // insert shifts later elements
                one(Op::Insert, "$.b[1]", Some(&M::Int(15))),
                obj(&[
                    ("a", M::Int(1)),
                    (
                        "b",
                        M::Arr(vec![M::Int(10), M::Int(15), M::Int(20), M::Int(30)]),
                    ),
                    ("nested", obj(&[("k", s("v")), ("list", M::Arr(vec![]))])),
                ]),
            ),
            (
                // past the end appends
                one(
                    Op::Insert,
                    "$.nested.list[7]",
                    Some(&obj(&[("x", M::Int(1))])),
                ),
                obj(&[
                    ("a", M::Int(1)),
                    ("b", M::Arr(vec![M::Int(10), M::Int(20), M::Int(30)])),
                    (
                        "nested",
                        obj(&[
                            ("k", s("v")),
                            ("list", M::Arr(vec![obj(&[("x", M::Int(1))])])),
                        ]),
                    ),
                ]),
            ),
            (
                one(Op::Remove, "$.b[0]", None),
                obj(&[
                    ("a", M::Int(1)),
                    ("b", M::Arr(vec![M::Int(20), M::Int(30)])),
                    ("nested", obj(&[("k", s("v")), ("list", M::Arr(vec![]))])),
                ]),
            ),
            (
                one(Op::Remove, "$.nested.k", None),
                obj(&[
                    ("a", M::Int(1)),
                    ("b", M::Arr(vec![M::Int(10), M::Int(20), M::Int(30)])),
                    ("nested", obj(&[("list", M::Arr(vec![]))])),
                ]),
            ),
        ];
        for (diff, expected) in cases {
            assert_eq!(rebuilt(&before, &diff).unwrap(), text(&expected));
        }
        // several diffs apply in order, each against the result of the previous ones
        let mut diffs = one(Op::Insert, "$.b[0]", Some(&M::Int(5)));
        diffs.extend(one(Op::Replace, "$.b[1]", Some(&M::Int(11))));
        diffs.extend(one(Op::Remove, "$.b[last]", None));
        diffs.extend(one(Op::Insert, r#"$."a b""#, Some(&M::Dbl(0.5))));
        let got = rebuilt(&before, &diffs).unwrap();
        assert_eq!(
            got,
            text(&obj(&[
                ("a", M::Int(1)),
                ("b", M::Arr(vec![M::Int(5), M::Int(11), M::Int(20)])),
                ("a b", M::Dbl(0.5)),
                ("nested", obj(&[("k", s("v")), ("list", M::Arr(vec![]))])),
            ]))
        );
        assert_eq!(
            got,
            r#"{"a":1,"b":[5,11,20],"a b":0.5,"nested":{"k":"v","list":[]}}"#
        );
        // an empty diff list leaves the document as it was
        assert_eq!(rebuilt(&before, &[]).unwrap(), text(&before));
    }

    #[test]
    fn opaque_values_render_like_the_full_image() {
        // DATETIME 2024-03-01 10:20:30.5 as an opaque value
        let ym = 2024i64 * 13 + 3;
        let packed = ((((ym << 5) | 1) << 17 | (10 << 12) | (20 << 6) | 30) << 24) + 500_000;
        let mut value = vec![0x0f, 12, 8];
        value.extend(packed.to_le_bytes());
        let mut diffs = vec![0u8, 3];
        diffs.extend(b"$.t");
        diffs.push(value.len() as u8);
        diffs.extend(&value);
        let got = rebuilt(&obj(&[("t", M::Null)]), &diffs).unwrap();
        assert_eq!(got, r#"{"t":"2024-03-01 10:20:30.500000"}"#);
    }

    #[test]
    fn diffs_that_do_not_fit_are_errors() {
        let before = obj(&[("a", M::Int(1)), ("b", M::Arr(vec![M::Int(1)]))]);
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (one(Op::Replace, "$.x", Some(&M::Null)), "not found"),
            (one(Op::Replace, "$.b[1]", Some(&M::Null)), "not found"),
            (one(Op::Replace, "$.a.c", Some(&M::Null)), "not found"),
            (one(Op::Replace, "$", Some(&M::Null)), "root"),
            (one(Op::Insert, "$.a", Some(&M::Null)), "already exists"),
            (one(Op::Insert, "$.x.y", Some(&M::Null)), "not found"),
            (one(Op::Insert, "$.b.k", Some(&M::Null)), "type"),
            (one(Op::Insert, "$[0]", Some(&M::Null)), "type"),
            (one(Op::Remove, "$.x", None), "not found"),
            (one(Op::Remove, "$.b[1]", None), "out of bounds"),
            (one(Op::Remove, "$.b[last-1]", None), "out of bounds"),
            (one(Op::Remove, "$.a[0]", None), "type"),
        ];
        for (diff, why) in cases {
            match rebuilt(&before, &diff) {
                Err(RebuildError::DoesNotApply(msg)) => assert!(msg.contains(why), "{msg}"),
                other => panic!("{why}: {other:?}"),
            }
        }
        // a malformed value or before document is reported as malformed
        let mut diffs = vec![0u8, 3];
        diffs.extend(b"$.a");
        diffs.extend([2, 0x7f, 0]);
        assert!(matches!(
            rebuilt(&before, &diffs),
            Err(RebuildError::DoesNotApply(m)) if m.contains("invalid binary JSON")
        ));
        assert!(matches!(
            rebuild(&[0x00, 5, 0], &[]),
            Err(RebuildError::Malformed(_))
        ));
        // a JSON null document (empty) has no members to change
        assert!(rebuild(&[], &one(Op::Remove, "$.a", None)).is_err());
    }

    // ---- property tests ----------------------------------------------------

    fn arb_key() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-e]{0,3}",
            Just("a b".to_owned()),
            Just("q\"uote".to_owned()),
            Just("été".to_owned()),
            Just("1x".to_owned()),
            Just("back\\slash".to_owned()),
        ]
    }

    fn arb_scalar() -> impl Strategy<Value = M> {
        prop_oneof![
            Just(M::Null),
            any::<bool>().prop_map(M::Bool),
            any::<i64>().prop_map(M::Int),
            (-1000i64..1000).prop_map(M::Int),
            prop_oneof![Just(0.5), Just(-1.25e300), Just(3.0), Just(1e-7)].prop_map(M::Dbl),
            "[a-z😀\"\\\\]{0,6}".prop_map(M::Str),
        ]
    }

    fn arb_doc() -> impl Strategy<Value = M> {
        arb_scalar().prop_recursive(4, 40, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(M::Arr),
                proptest::collection::btree_map(arb_key(), inner, 0..5)
                    .prop_map(|m| M::Obj(m.into_iter().collect())),
            ]
        })
    }

    fn arb_root() -> impl Strategy<Value = M> {
        arb_doc().prop_map(|m| match m {
            M::Arr(_) | M::Obj(_) => m,
            other => M::Arr(vec![other]),
        })
    }

    /// Every value's path in `m` (the root is `[]`).
    fn all_paths(m: &M, prefix: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        out.push(prefix.clone());
        let children: Vec<&M> = match m {
            M::Arr(items) => items.iter().collect(),
            M::Obj(members) => members.iter().map(|(_, v)| v).collect(),
            _ => vec![],
        };
        for (i, c) in children.into_iter().enumerate() {
            prefix.push(i);
            all_paths(c, prefix, out);
            prefix.pop();
        }
    }

    fn at_mut<'m>(m: &'m mut M, path: &[usize]) -> &'m mut M {
        path.iter().fold(m, |node, &i| match node {
            M::Arr(items) => &mut items[i],
            M::Obj(members) => &mut members[i].1,
            _ => unreachable!(),
        })
    }

    /// Legs naming `path` in `m`; array steps as `[last-n]` when `from_end`.
    fn legs_for(m: &M, path: &[usize], from_end: bool) -> Vec<Leg> {
        let mut node = m;
        let mut legs = Vec::new();
        for &i in path {
            match node {
                M::Arr(items) => {
                    legs.push(if from_end {
                        Leg::FromEnd(items.len() - 1 - i)
                    } else {
                        Leg::Index(i)
                    });
                    node = &items[i];
                }
                M::Obj(members) => {
                    legs.push(Leg::Member(members[i].0.clone()));
                    node = &members[i].1;
                }
                _ => unreachable!(),
            }
        }
        legs
    }

    type Edit = (u8, prop::sample::Index, M, String, usize, bool);

    /// Applies `edit` to the model directly and returns the diff the server would log.
    fn edit_model(m: &mut M, edit: &Edit) -> Option<Vec<u8>> {
        let (kind, pick, value, key, position, from_end) = edit;
        let mut paths = Vec::new();
        all_paths(m, &mut Vec::new(), &mut paths);
        let mut out = Vec::new();
        match kind % 3 {
            0 | 2 => {
                let non_root: Vec<&Vec<usize>> = paths.iter().filter(|p| !p.is_empty()).collect();
                if non_root.is_empty() {
                    return None;
                }
                let path = non_root[pick.index(non_root.len())].clone();
                let legs = legs_for(m, &path, *from_end);
                if kind % 3 == 0 {
                    *at_mut(m, &path) = value.clone();
                    enc_diff(Op::Replace, &path_text(&legs), Some(value), &mut out);
                } else {
                    let (last, parent) = path.split_last()?;
                    match at_mut(m, parent) {
                        M::Arr(items) => {
                            items.remove(*last);
                        }
                        M::Obj(members) => {
                            members.remove(*last);
                        }
                        _ => unreachable!(),
                    }
                    enc_diff(Op::Remove, &path_text(&legs), None, &mut out);
                }
            }
            _ => {
                let containers: Vec<Vec<usize>> = paths
                    .into_iter()
                    .filter(|p| matches!(at_mut(&mut m.clone(), p), M::Arr(_) | M::Obj(_)))
                    .collect();
                let path = containers[pick.index(containers.len())].clone();
                let mut legs = legs_for(m, &path, false);
                match at_mut(m, &path) {
                    M::Obj(members) => {
                        let mut key = key.clone();
                        while members.iter().any(|(k, _)| *k == key) {
                            key.push('_');
                        }
                        members.push((key.clone(), value.clone()));
                        legs.push(Leg::Member(key));
                    }
                    M::Arr(items) => {
                        if *from_end && !items.is_empty() {
                            let n = position % items.len();
                            items.insert(items.len() - 1 - n, value.clone());
                            legs.push(Leg::FromEnd(n));
                        } else {
                            let p = position % (items.len() + 3);
                            items.insert(p.min(items.len()), value.clone());
                            legs.push(Leg::Index(p));
                        }
                    }
                    _ => unreachable!(),
                }
                enc_diff(Op::Insert, &path_text(&legs), Some(value), &mut out);
            }
        }
        Some(out)
    }

    fn arb_edit() -> impl Strategy<Value = Edit> {
        (
            any::<u8>(),
            any::<prop::sample::Index>(),
            arb_doc(),
            arb_key(),
            any::<usize>(),
            any::<bool>(),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Rebuilding = encoding the directly edited document and rendering it the way
        /// a full-image UPDATE is rendered.
        #[test]
        fn rebuild_equals_full_image(before in arb_root(), edits in proptest::collection::vec(arb_edit(), 0..8)) {
            let mut model = before.clone();
            let mut diffs = Vec::new();
            for e in &edits {
                if let Some(d) = edit_model(&mut model, e) {
                    diffs.extend(d);
                }
            }
            let expected = jsonb_to_json(&enc(&model, false)).unwrap();
            prop_assert_eq!(rebuilt(&before, &diffs), Ok(expected.clone()));
            // also from a large-format before document
            prop_assert_eq!(rebuild(&enc(&before, true), &diffs), Ok(expected));
        }

        /// The tree decoder renders exactly like the full-image renderer.
        #[test]
        fn node_renders_like_jsonb_to_json(doc in arb_doc(), large in any::<bool>()) {
            let bytes = enc(&doc, large);
            let mut out = Vec::new();
            render_node(&jsonb_to_node(&bytes).unwrap(), &mut out);
            prop_assert_eq!(String::from_utf8(out).unwrap(), jsonb_to_json(&bytes).unwrap());
        }

        #[test]
        fn never_panics(before in proptest::collection::vec(any::<u8>(), 0..40),
                        diffs in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = rebuild(&before, &diffs);
            let _ = parse_path(&String::from_utf8_lossy(&diffs));
        }
    }
}
