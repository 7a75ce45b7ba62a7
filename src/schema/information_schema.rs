//! Today's table definitions from `information_schema`, for where sluice starts with a known
//! schema (`start = "latest"`) on servers whose table maps lack full metadata.
//!
//! Column types are read from `COLUMNS.COLUMN_TYPE` and normalized by the same parser as DDL
//! text ([`crate::schema::ddl::parse_column_type`]), so a definition loaded here equals one
//! built from the table's `CREATE TABLE` statement. Charset and collation come from
//! `CHARACTER_SET_NAME`/`COLLATION_NAME`, generated and invisible columns from `EXTRA`, the
//! primary key from `STATISTICS` (index `PRIMARY`, in key order), the table's default charset
//! from `TABLES.TABLE_COLLATION`.
//!
//! The definitions are only as current as the moment they are read: a caller that starts the
//! binlog at "now" reads them after taking that position, with no DDL running in between (or
//! re-reads them if one may have run).

use crate::mysql::query::Timed;
use std::collections::HashMap;

use mysql_async::prelude::*;
use mysql_async::Row;

use super::ddl::parse_column_type;
use super::tracked::{normalize_charset, Generated, TableDef};
use super::{ServerFlavor, TableSchema, BINARY_CHARSET};
use crate::error::{mysql_error, Error, Result};

/// How many table names one query asks for.
const TABLES_PER_QUERY: usize = 500;

/// The base tables of a database (MariaDB sequences included: their changes are row events
/// too), sorted by name.
pub async fn list_base_tables(conn: &mut mysql_async::Conn, db: &str) -> Result<Vec<String>> {
    let sql = "SELECT TABLE_NAME FROM information_schema.TABLES \
               WHERE TABLE_SCHEMA = ? AND TABLE_TYPE IN ('BASE TABLE', 'SEQUENCE')";
    let mut names: Vec<String> = conn
        .exec(sql, (db,))
        .timed(format!("listing the tables of `{db}`"))
        .await?
        .map_err(|e| mysql_error(format!("listing the tables of `{db}`"), &e))?;
    names.sort();
    Ok(names)
}

/// Reads the definitions of `tables` (`(db, table)` pairs), in the order given.
///
/// A table that is not there (dropped since it was listed) is a transient error; a column type
/// this crate does not know is a definite one.
pub async fn load_table_defs(
    conn: &mut mysql_async::Conn,
    tables: &[(String, String)],
) -> Result<Vec<TableDef>> {
    let mut by_db: Vec<(&str, Vec<&str>)> = Vec::new();
    for (db, table) in tables {
        match by_db.iter_mut().find(|(d, _)| d == db) {
            Some((_, list)) => list.push(table),
            None => by_db.push((db, vec![table])),
        }
    }
    let mut loaded: HashMap<(String, String), TableDef> = HashMap::new();
    for (db, names) in by_db {
        for chunk in names.chunks(TABLES_PER_QUERY) {
            load_chunk(conn, db, chunk, &mut loaded).await?;
        }
    }
    tables
        .iter()
        .map(|(db, table)| {
            loaded
                .get(&(db.clone(), table.clone()))
                .cloned()
                .ok_or_else(|| {
                    Error::transient(format!(
                        "table `{db}`.`{table}` is not in information_schema (dropped while \
                         its definition was read?)"
                    ))
                })
        })
        .collect()
}

async fn load_chunk(
    conn: &mut mysql_async::Conn,
    db: &str,
    tables: &[&str],
    out: &mut HashMap<(String, String), TableDef>,
) -> Result<()> {
    let marks = vec!["?"; tables.len()].join(",");
    let mut params: Vec<mysql_async::Value> = vec![db.into()];
    params.extend(tables.iter().map(|t| mysql_async::Value::from(*t)));
    let ctx = |what: &str| format!("reading {what} of tables in `{db}` from information_schema");

    let sql = format!(
        // MariaDB 10.10+ lists its UCA-14 collations (`utf8mb4_uca1400_ai_ci`, 11.5+'s
        // default) only in COLLATION_CHARACTER_SET_APPLICABILITY: the charset is the
        // collation name's first part then.
        "SELECT t.TABLE_NAME, t.TABLE_COLLATION, \
         COALESCE(c.CHARACTER_SET_NAME, SUBSTRING_INDEX(t.TABLE_COLLATION, '_', 1)) \
         FROM information_schema.TABLES t \
         LEFT JOIN information_schema.COLLATIONS c ON c.COLLATION_NAME = t.TABLE_COLLATION \
         WHERE t.TABLE_SCHEMA = ? AND t.TABLE_NAME IN ({marks})"
    );
    let rows: Vec<Row> = conn
        .exec(sql, params.clone())
        .timed(ctx("the default charsets"))
        .await?
        .map_err(|e| mysql_error(ctx("the default charsets"), &e))?;
    for row in rows {
        let table: String = text(&row, 0).unwrap_or_default();
        let mut def = TableDef::new(db, &table);
        def.default_collation = text(&row, 1).map(|s| s.to_ascii_lowercase());
        def.default_charset = text(&row, 2).map(|s| normalize_charset(&s));
        out.insert((db.to_owned(), table), def);
    }

    let sql = format!(
        "SELECT TABLE_NAME, COLUMN_NAME, ORDINAL_POSITION, COLUMN_TYPE, IS_NULLABLE, \
         CHARACTER_SET_NAME, COLLATION_NAME, EXTRA \
         FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME IN ({marks})"
    );
    let rows: Vec<Row> = conn
        .exec(sql, params.clone())
        .timed(ctx("the columns"))
        .await?
        .map_err(|e| mysql_error(ctx("the columns"), &e))?;
    let mut columns: HashMap<String, Vec<(u64, super::tracked::ColumnDef)>> = HashMap::new();
    for row in rows {
        let table = text(&row, 0).unwrap_or_default();
        let name = text(&row, 1).unwrap_or_default();
        let position: u64 = row.get_opt(2).and_then(|r| r.ok()).unwrap_or(0);
        let column_type = text(&row, 3).unwrap_or_default();
        let mut col = parse_column_type(&name, &column_type).map_err(|e| {
            Error::definite(format!(
                "column `{db}`.`{table}`.`{name}` has type `{column_type}` that sluice cannot \
                 track: {e}"
            ))
        })?;
        col.nullable = text(&row, 4).is_some_and(|v| v.eq_ignore_ascii_case("YES"));
        if col.is_character() {
            col.charset = text(&row, 5).map(|s| normalize_charset(&s));
            col.collation = text(&row, 6).map(|s| s.to_ascii_lowercase());
        }
        let extra = text(&row, 7).unwrap_or_default().to_ascii_uppercase();
        col.generated = if extra.contains("VIRTUAL GENERATED") {
            Some(Generated::Virtual)
        } else if extra.contains("STORED GENERATED") || extra.contains("PERSISTENT GENERATED") {
            Some(Generated::Stored)
        } else {
            None
        };
        col.invisible = extra.contains("INVISIBLE");
        columns.entry(table).or_default().push((position, col));
    }

    let sql = format!(
        "SELECT TABLE_NAME, COLUMN_NAME, SEQ_IN_INDEX FROM information_schema.STATISTICS \
         WHERE TABLE_SCHEMA = ? AND TABLE_NAME IN ({marks}) AND INDEX_NAME = 'PRIMARY'"
    );
    let rows: Vec<Row> = conn
        .exec(sql, params)
        .timed(ctx("the primary keys"))
        .await?
        .map_err(|e| mysql_error(ctx("the primary keys"), &e))?;
    let mut keys: HashMap<String, Vec<(u64, String)>> = HashMap::new();
    for row in rows {
        let table = text(&row, 0).unwrap_or_default();
        let column = text(&row, 1).unwrap_or_default();
        let seq: u64 = row.get_opt(2).and_then(|r| r.ok()).unwrap_or(0);
        keys.entry(table).or_default().push((seq, column));
    }

    for ((d, table), def) in out.iter_mut() {
        if d != db {
            continue;
        }
        if let Some(mut cols) = columns.remove(table) {
            cols.sort_by_key(|(p, _)| *p);
            def.columns = cols.into_iter().map(|(_, c)| c).collect();
        }
        if let Some(mut key) = keys.remove(table) {
            key.sort_by_key(|(s, _)| *s);
            def.primary_key = key.into_iter().map(|(_, c)| c).collect();
        }
    }
    Ok(())
}

/// Today's [`TableSchema`] of one table from information_schema, equal to what the table map
/// of one of its rows gives with full metadata (see [`TableSchema::from_def`]).
pub async fn load_table_schema(
    conn: &mut mysql_async::Conn,
    db: &str,
    table: &str,
    flavor: ServerFlavor,
) -> Result<TableSchema> {
    let defs = load_table_defs(conn, &[(db.to_owned(), table.to_owned())]).await?;
    let def = defs.into_iter().next().ok_or_else(|| {
        Error::transient(format!(
            "table `{db}`.`{table}` is not in information_schema"
        ))
    })?;
    let rows: Vec<Row> = conn
        .exec(
            "SELECT c.ORDINAL_POSITION, l.ID, c.CHARACTER_OCTET_LENGTH, c.COLLATION_NAME \
             FROM information_schema.COLUMNS c \
             LEFT JOIN information_schema.COLLATIONS l ON l.COLLATION_NAME = c.COLLATION_NAME \
             WHERE c.TABLE_SCHEMA = ? AND c.TABLE_NAME = ? ORDER BY c.ORDINAL_POSITION",
            (db, table),
        )
        .timed(format!("reading the column storage of `{db}`.`{table}`"))
        .await?
        .map_err(|e| {
            mysql_error(
                format!("reading the column storage of `{db}`.`{table}`"),
                &e,
            )
        })?;
    let mut storage: Vec<(u16, u64)> = Vec::with_capacity(rows.len());
    for r in &rows {
        let listed = r
            .get_opt::<Option<u64>, _>(1)
            .and_then(|v| v.ok())
            .flatten()
            .and_then(|v| u16::try_from(v).ok());
        let collation: Option<String> = r.get_opt(3).and_then(|v| v.ok()).flatten();
        let id = match (listed, collation) {
            (Some(id), _) => id,
            (None, None) => BINARY_CHARSET,
            // Not in COLLATIONS: a MariaDB 10.10+ UCA-14 collation.
            (None, Some(name)) => collation_id(conn, &name).await?,
        };
        let octets = r
            .get_opt::<Option<u64>, _>(2)
            .and_then(|v| v.ok())
            .flatten()
            .unwrap_or(0);
        storage.push((id, octets));
    }
    TableSchema::from_def(&def, &storage, flavor).map_err(Error::definite_from)
}

/// The id of a collation `information_schema.COLLATIONS` does not list: MariaDB 10.10+ has
/// its UCA-14 collations (`utf8mb4_uca1400_ai_ci` = 2304) in
/// `COLLATION_CHARACTER_SET_APPLICABILITY` (`FULL_COLLATION_NAME`, `ID`). Where that fails
/// too, an id of the collation's charset (what decoding needs).
async fn collation_id(conn: &mut mysql_async::Conn, name: &str) -> Result<u16> {
    let sql = "SELECT ID FROM information_schema.COLLATION_CHARACTER_SET_APPLICABILITY \
               WHERE FULL_COLLATION_NAME = ?";
    // MySQL and MariaDB before 10.10 have no such column (an error, read as not found); they
    // list every collation in COLLATIONS anyway.
    let found: Option<Option<u64>> = conn
        .exec_first(sql, (name,))
        .timed(format!("reading the id of collation {name}"))
        .await?
        .unwrap_or_default();
    Ok(found
        .flatten()
        .and_then(|v| u16::try_from(v).ok())
        .unwrap_or_else(|| {
            super::tracked::charset_of_collation(name).map_or(0, super::tracked::charset_id)
        }))
}

/// A text column of an information_schema row (`None` for NULL).
fn text(row: &Row, i: usize) -> Option<String> {
    match row.as_ref(i)? {
        mysql_async::Value::NULL => None,
        mysql_async::Value::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
        other => Some(other.as_sql(true).trim_matches('\'').to_owned()),
    }
}
