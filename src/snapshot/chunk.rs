//! Chunk queries: a table is read in key order, `chunk_size` rows at a time, each chunk starting
//! after the last key of the previous one (keyset pagination: every chunk is an index range
//! scan, however deep into the table).

use super::progress::KeyValue;
use crate::value::Value;

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

/// `` `name` `` with backquotes doubled.
pub fn quote(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
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

/// The chunk statement and its parameters: `select` (the value columns), then the raw key
/// columns, of the rows after `after` in key order, at most `limit`.
///
/// `after` for keys `(a, b)` reads `a > ? OR (a = ? AND b > ?)`: both servers turn that into
/// index ranges (a row constructor comparison is not range-optimized by every version).
pub fn chunk_query(
    db: &str,
    table: &str,
    select: &str,
    key: &[KeyColumn],
    after: Option<&[KeyValue]>,
    limit: usize,
) -> Result<(String, Vec<mysql_async::Value>), String> {
    let keys: Vec<String> = key.iter().map(|k| quote(&k.name)).collect();
    let mut sql = format!(
        "SELECT {select}, {} FROM {}.{}",
        keys.join(", "),
        quote(db),
        quote(table)
    );
    let mut params = Vec::new();
    if let Some(after) = after {
        if after.len() != key.len() {
            return Err(format!(
                "the stored chunk position has {} values for a key of {} columns",
                after.len(),
                key.len()
            ));
        }
        let bound: Vec<mysql_async::Value> = after
            .iter()
            .map(|v| {
                v.to_mysql()
                    .ok_or_else(|| format!("damaged chunk position value {v:?}"))
            })
            .collect::<Result<_, _>>()?;
        let mut ors = Vec::with_capacity(key.len());
        for i in 0..key.len() {
            let mut ands = Vec::with_capacity(i + 1);
            for j in 0..i {
                ands.push(format!("{} = {}", keys[j], placeholder(&key[j])));
                params.push(bound[j].clone());
            }
            ands.push(format!("{} > {}", keys[i], placeholder(&key[i])));
            params.push(bound[i].clone());
            ors.push(format!("({})", ands.join(" AND ")));
        }
        sql.push_str(" WHERE ");
        sql.push_str(&ors.join(" OR "));
    }
    sql.push_str(" ORDER BY ");
    sql.push_str(&keys.join(", "));
    sql.push_str(&format!(" LIMIT {limit}"));
    Ok((sql, params))
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
        let (sql, params) =
            chunk_query("d", "t`x", "`a`, `b`+0", &[col("id", false)], None, 100).unwrap();
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
            Some(&after),
            10,
        )
        .unwrap();
        assert_eq!(
            sql,
            "SELECT `v`, `a`, `b` FROM `d`.`t` WHERE (`a` > ?) OR (`a` = ? AND `b` > \
             CONVERT(CAST(? AS BINARY) USING utf8mb4) COLLATE utf8mb4_general_ci) \
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
            Some(&after),
            10,
        )
        .unwrap_err();
        assert!(e.contains("1 values for a key of 2 columns"), "{e}");
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
}
