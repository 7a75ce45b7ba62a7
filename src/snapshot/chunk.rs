//! Chunk queries: a table is read in key order, `chunk_size` rows at a time, each chunk starting
//! after the last key of the previous one (keyset pagination: every chunk is an index range
//! scan, however deep into the table).

use super::filter::RowFilter;
use super::progress::KeyValue;
use super::values::quote_ident as quote;
use crate::mysql::server::Flavor;
use crate::value::Value;
use std::time::Duration;

/// One column of the chunk key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyColumn {
    /// Column name.
    pub name: String,
    /// Charset and collation of a character column (`None` for other types). A bound value is
    /// compared in the column's own collation, as `ORDER BY` sorts it; a plain parameter would
    /// be compared in the connection's collation, and a case-insensitive key could then skip or
    /// repeat rows.
    pub collation: Option<(String, String)>,
}

/// The placeholder of a key value: the raw bytes reinterpreted in the column's charset and
/// compared in its collation for character columns.
fn placeholder(k: &KeyColumn) -> String {
    match &k.collation {
        Some((charset, collation)) => {
            format!("CONVERT(CAST(? AS BINARY) USING {charset}) COLLATE {collation}")
        }
        None => "?".to_string(),
    }
}

/// Which rows of a table a statement reads.
#[derive(Debug, Clone, Copy, Default)]
pub struct Range<'a> {
    /// Rows after this key (from the start when `None`).
    pub after: Option<&'a [KeyValue]>,
    /// Rows up to and including this key (to the end when `None`).
    pub upto: Option<&'a [KeyValue]>,
    /// Only rows matching this condition (an ad-hoc request's filter, parsed and rendered by
    /// [`RowFilter`]).
    pub filter: Option<&'a str>,
}

/// Binds stored key values, checking they fit the key.
fn bind(values: &[KeyValue], key: &[KeyColumn]) -> Result<Vec<mysql_async::Value>, String> {
    if values.len() != key.len() {
        return Err(format!(
            "the stored chunk position has {} values for a key of {} columns",
            values.len(),
            key.len()
        ));
    }
    values
        .iter()
        .map(|v| {
            v.to_mysql()
                .ok_or_else(|| format!("damaged chunk position value {v:?}"))
        })
        .collect()
}

/// `(k1, k2, ...) > (v1, v2, ...)` (or `<=` when `upto`) as `k1 > ? OR (k1 = ? AND k2 > ?)`:
/// both servers turn that into index ranges (a row constructor comparison is not
/// range-optimized by every version).
fn key_condition(
    key: &[KeyColumn],
    values: &[mysql_async::Value],
    upto: bool,
    params: &mut Vec<mysql_async::Value>,
) -> String {
    let keys: Vec<String> = key.iter().map(|k| quote(&k.name)).collect();
    let mut ors = Vec::with_capacity(key.len());
    for i in 0..key.len() {
        let mut ands = Vec::with_capacity(i + 1);
        for j in 0..i {
            ands.push(format!("{} = {}", keys[j], placeholder(&key[j])));
            params.push(values[j].clone());
        }
        let op = match (upto, i + 1 == key.len()) {
            (false, _) => ">",
            (true, false) => "<",
            (true, true) => "<=",
        };
        ands.push(format!("{} {op} {}", keys[i], placeholder(&key[i])));
        params.push(values[i].clone());
        ors.push(format!("({})", ands.join(" AND ")));
    }
    format!("({})", ors.join(" OR "))
}

/// The `WHERE` clause (with its leading space; empty for the whole table) of `range`.
fn where_clause(
    key: &[KeyColumn],
    range: &Range<'_>,
    params: &mut Vec<mysql_async::Value>,
) -> Result<String, String> {
    let mut conds = Vec::new();
    if let Some(after) = range.after {
        let v = bind(after, key)?;
        conds.push(key_condition(key, &v, false, params));
    }
    if let Some(upto) = range.upto {
        let v = bind(upto, key)?;
        conds.push(key_condition(key, &v, true, params));
    }
    if let Some(text) = range.filter {
        // Rendered from the parsed filter: its literals are parameters after the key's.
        let filter = RowFilter::parse(text).map_err(|e| format!("the filter {text:?}: {e}"))?;
        conds.push(filter.render(params));
    }
    Ok(if conds.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", conds.join(" AND "))
    })
}

/// The chunk statement and its parameters: `select` (the value columns), then the raw key
/// columns, of the rows of `range` in key order, at most `limit` (no limit when `None`).
pub fn chunk_query(
    db: &str,
    table: &str,
    select: &str,
    key: &[KeyColumn],
    range: &Range<'_>,
    limit: Option<usize>,
) -> Result<(String, Vec<mysql_async::Value>), String> {
    let keys: Vec<String> = key.iter().map(|k| quote(&k.name)).collect();
    let mut params = Vec::new();
    let cond = where_clause(key, range, &mut params)?;
    let mut sql = if keys.is_empty() {
        format!("SELECT {select} FROM {}.{}{cond}", quote(db), quote(table))
    } else {
        format!(
            "SELECT {select}, {} FROM {}.{}{cond} ORDER BY {}",
            keys.join(", "),
            quote(db),
            quote(table),
            keys.join(", ")
        )
    };
    if let Some(limit) = limit {
        sql.push_str(&format!(" LIMIT {limit}"));
    }
    Ok((sql, params))
}

/// The statement that finds where the chunk after `after` ends: the key of the `chunk_size`-th
/// row after it (no row when fewer are left). It reads the key's index only.
pub fn split_query(
    db: &str,
    table: &str,
    key: &[KeyColumn],
    after: Option<&[KeyValue]>,
    chunk_size: usize,
) -> Result<(String, Vec<mysql_async::Value>), String> {
    let keys: Vec<String> = key.iter().map(|k| quote(&k.name)).collect();
    let mut params = Vec::new();
    let range = Range {
        after,
        ..Range::default()
    };
    let cond = where_clause(key, &range, &mut params)?;
    let keys = keys.join(", ");
    Ok((
        format!(
            "SELECT {keys} FROM {}.{}{cond} ORDER BY {keys} LIMIT 1 OFFSET {}",
            quote(db),
            quote(table),
            chunk_size.saturating_sub(1)
        ),
        params,
    ))
}

/// A row's key as bytes for equality tests between rows read by a chunk and row images from the
/// binlog (both paths give equal [`Value`]s for the same stored row).
pub fn key_bytes(values: &[Value], idx: &[usize]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 * idx.len());
    for &i in idx {
        match values.get(i) {
            Some(v) => out.extend_from_slice(format!("{v:?}").as_bytes()),
            None => out.extend_from_slice(b"?"),
        }
        out.push(0);
    }
    out
}

/// Where a chunk (or a scan's batch) ends: after `limit` rows, or after the row that brings its
/// rows to `max_bytes` (`snapshot.chunk_max_bytes`). A first row larger than `max_bytes` is a
/// chunk of its own: a chunk always holds at least one row when the range has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkCut {
    limit: usize,
    max_bytes: usize,
    rows: usize,
    bytes: usize,
}

impl ChunkCut {
    /// A chunk of at most `limit` rows (at least 1) and about `max_bytes` bytes.
    pub fn new(limit: usize, max_bytes: usize) -> Self {
        ChunkCut {
            limit: limit.max(1),
            max_bytes: max_bytes.max(1),
            rows: 0,
            bytes: 0,
        }
    }

    /// Counts one more row of `bytes`; true when the chunk ends with it.
    pub fn take(&mut self, bytes: usize) -> bool {
        self.rows += 1;
        self.bytes = self.bytes.saturating_add(bytes);
        self.rows >= self.limit || self.bytes >= self.max_bytes
    }

    /// Rows counted so far.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Bytes counted so far.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Starts the next batch (a scan goes on after a cut).
    pub fn reset(&mut self) {
        self.rows = 0;
        self.bytes = 0;
    }
}

/// The `LIMIT` of a chunk query: `limit` rows, fewer when the table's rows are known to be wide
/// (`avg_row_bytes` of its last chunk), so that a query does not send far more rows than the
/// chunk keeps (the rest of a cut result is read and dropped). One row more than fits on
/// average, so that a chunk usually ends by its bytes, not by this estimate.
pub fn row_limit(limit: usize, max_bytes: usize, avg_row_bytes: Option<usize>) -> usize {
    let limit = limit.max(1);
    match avg_row_bytes {
        Some(avg) if avg > 0 => limit.min(max_bytes / avg + 1),
        _ => limit,
    }
}

/// `sql` (a `SELECT`) with the server-side time limit `limit`: MySQL's optimizer hint, or
/// MariaDB's `SET STATEMENT ... FOR`; unchanged without a limit.
pub(crate) fn time_limited(sql: &str, flavor: Flavor, limit: Option<Duration>) -> String {
    let Some(limit) = limit else {
        return sql.to_string();
    };
    let ms = limit.as_millis().max(1);
    match flavor {
        Flavor::MySql => match sql.strip_prefix("SELECT ") {
            Some(rest) => format!("SELECT /*+ MAX_EXECUTION_TIME({ms}) */ {rest}"),
            None => sql.to_string(),
        },
        Flavor::MariaDb => format!(
            "SET STATEMENT max_statement_time = {}.{:03} FOR {sql}",
            ms / 1000,
            ms % 1000
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str, text: bool) -> KeyColumn {
        KeyColumn {
            name: name.into(),
            collation: text.then(|| ("utf8mb4".into(), "utf8mb4_general_ci".into())),
        }
    }

    #[test]
    fn the_first_chunk_has_no_condition() {
        let (sql, params) = chunk_query(
            "d",
            "t`x",
            "`a`, `b`+0",
            &[col("id", false)],
            &Range::default(),
            Some(100),
        )
        .unwrap();
        assert_eq!(
            sql,
            "SELECT `a`, `b`+0, `id` FROM `d`.`t``x` ORDER BY `id` LIMIT 100"
        );
        assert!(params.is_empty());
    }

    #[test]
    fn later_chunks_start_after_the_last_key() {
        let after = [KeyValue::Int(5), KeyValue::Hex("6b".into())];
        let (sql, params) = chunk_query(
            "d",
            "t",
            "`v`",
            &[col("a", false), col("b", true)],
            &Range {
                after: Some(&after),
                ..Range::default()
            },
            Some(10),
        )
        .unwrap();
        assert_eq!(
            sql,
            "SELECT `v`, `a`, `b` FROM `d`.`t` WHERE ((`a` > ?) OR (`a` = ? AND `b` > \
             CONVERT(CAST(? AS BINARY) USING utf8mb4) COLLATE utf8mb4_general_ci)) \
             ORDER BY `a`, `b` LIMIT 10"
        );
        use mysql_async::Value as M;
        assert_eq!(params, [M::Int(5), M::Int(5), M::Bytes(b"k".to_vec())]);
    }

    #[test]
    fn a_position_of_another_key_is_refused() {
        let after = [KeyValue::Int(5)];
        let e = chunk_query(
            "d",
            "t",
            "`v`",
            &[col("a", false), col("b", false)],
            &Range {
                after: Some(&after),
                ..Range::default()
            },
            Some(10),
        )
        .unwrap_err();
        assert!(e.contains("1 values for a key of 2 columns"), "{e}");
    }

    #[test]
    fn bounded_filtered_chunks_and_split_points() {
        use mysql_async::Value as M;
        let key = [col("a", false), col("b", false)];
        let (after, upto) = (
            [KeyValue::Int(1), KeyValue::Int(2)],
            [KeyValue::Int(3), KeyValue::Int(4)],
        );
        let (sql, params) = chunk_query(
            "d",
            "t",
            "`v`",
            &key,
            &Range {
                after: Some(&after),
                upto: Some(&upto),
                filter: Some("v > 0 OR v IS NULL"),
            },
            None,
        )
        .unwrap();
        assert_eq!(
            sql,
            "SELECT `v`, `a`, `b` FROM `d`.`t` WHERE ((`a` > ?) OR (`a` = ? AND `b` > ?)) \
             AND ((`a` < ?) OR (`a` = ? AND `b` <= ?)) AND ((`v` > ?) OR (`v` IS NULL)) \
             ORDER BY `a`, `b`"
        );
        assert_eq!(
            params,
            [
                M::Int(1),
                M::Int(1),
                M::Int(2),
                M::Int(3),
                M::Int(3),
                M::Int(4),
                M::Int(0)
            ]
        );
        let (sql, params) = split_query("d", "t", &key[..1], Some(&after[..1]), 100).unwrap();
        assert_eq!(
            sql,
            "SELECT `a` FROM `d`.`t` WHERE ((`a` > ?)) ORDER BY `a` LIMIT 1 OFFSET 99"
        );
        assert_eq!(params, [M::Int(1)]);
        let (sql, _) = chunk_query("d", "t", "`v`", &[], &Range::default(), None).unwrap();
        assert_eq!(sql, "SELECT `v` FROM `d`.`t`");
    }

    #[test]
    fn key_bytes_tell_rows_apart_by_their_key_only() {
        let a = [Value::Int(1), Value::Bytes(b"x".to_vec()), Value::Int(9)];
        let b = [Value::Int(1), Value::Bytes(b"x".to_vec()), Value::Int(8)];
        let c = [Value::Int(1), Value::Bytes(b"y".to_vec()), Value::Int(9)];
        assert_eq!(key_bytes(&a, &[0, 1]), key_bytes(&b, &[0, 1]));
        assert_ne!(key_bytes(&a, &[0, 1]), key_bytes(&c, &[0, 1]));
        assert_ne!(
            key_bytes(&[Value::Int(1)], &[0]),
            key_bytes(&[Value::UInt(1)], &[0])
        );
    }

    #[test]
    fn a_chunk_ends_at_its_row_limit_or_its_bytes() {
        // Narrow rows: the row limit ends the chunk.
        let mut c = ChunkCut::new(3, 1000);
        assert!(!c.take(10) && !c.take(10));
        assert!(c.take(10));
        assert_eq!((c.rows(), c.bytes()), (3, 30));
        // Wide rows: the row that reaches the bytes is the chunk's last.
        let mut c = ChunkCut::new(8192, 1000);
        assert!(!c.take(400) && !c.take(400));
        assert!(c.take(400), "1200 bytes >= 1000: the third row ends it");
        assert_eq!(c.rows(), 3);
        // Exactly at the limit also ends it.
        let mut c = ChunkCut::new(8192, 1000);
        assert!(!c.take(500));
        assert!(c.take(500));
        // A single row larger than the limit is a chunk of one.
        let mut c = ChunkCut::new(8192, 1000);
        assert!(c.take(1 << 20));
        assert_eq!(c.rows(), 1);
        c.reset();
        assert_eq!((c.rows(), c.bytes()), (0, 0));
        assert!(!c.take(1));
        // Degenerate settings still make progress: at least one row per chunk.
        assert!(ChunkCut::new(0, 0).take(0));
    }

    #[test]
    fn the_row_limit_follows_the_rows_width() {
        assert_eq!(row_limit(8192, 32 << 20, None), 8192);
        assert_eq!(row_limit(8192, 32 << 20, Some(100)), 8192);
        // 1 MiB rows: 33 rows asked for, 32 of them fill the chunk.
        assert_eq!(row_limit(8192, 32 << 20, Some(1 << 20)), 33);
        // Rows wider than a chunk: one at a time.
        assert_eq!(row_limit(8192, 32 << 20, Some(64 << 20)), 1);
        assert_eq!(row_limit(16384, 1000, Some(0)), 16384);
        assert_eq!(row_limit(0, 1000, None), 1);
    }

    #[test]
    fn chunk_queries_carry_the_servers_time_limit() {
        let sql = "SELECT `a` FROM `d`.`t` ORDER BY `a` LIMIT 10";
        assert_eq!(time_limited(sql, Flavor::MySql, None), sql);
        assert_eq!(
            time_limited(sql, Flavor::MySql, Some(Duration::from_millis(2500))),
            "SELECT /*+ MAX_EXECUTION_TIME(2500) */ `a` FROM `d`.`t` ORDER BY `a` LIMIT 10"
        );
        assert_eq!(
            time_limited(sql, Flavor::MariaDb, Some(Duration::from_millis(2500))),
            format!("SET STATEMENT max_statement_time = 2.500 FOR {sql}")
        );
        assert_eq!(
            time_limited(sql, Flavor::MariaDb, Some(Duration::from_micros(10))),
            format!("SET STATEMENT max_statement_time = 0.001 FOR {sql}"),
            "never 0, which would mean no limit"
        );
    }
}
