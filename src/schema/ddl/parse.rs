//! The entry points: [`parse_ddl`] and [`parse_ddl_with`] classify a statement of a QUERY event
//! and walk it; [`parse_column_type`] reads one column type as `information_schema` gives it.
//!
//! Invariant: only a statement that starts with `CREATE`, `ALTER`, `DROP`, `RENAME` or
//! `TRUNCATE` is tokenized; any other is [`DdlParse::NotDdl`] without further reading, and a DDL
//! statement that fails to parse is [`DdlParse::Unparsed`] with the tables its head names.

use sqlparser::dialect::MySqlDialect;
use sqlparser::parser::Parser;

use super::change::{DdlChange, DdlParse};
use super::cursor::{Cx, PResult};
use super::normalize::normalize_sql;
use super::sql_mode::SqlMode;
use super::tables_named::tables_named;
use crate::schema::tracked::ColumnDef;
use crate::schema::ServerFlavor;

/// Parses a statement from a QUERY event whose default database is `default_db`.
pub fn parse_ddl(default_db: Option<&str>, sql: &str) -> DdlParse {
    parse_ddl_with(default_db, sql, SqlMode::default(), ServerFlavor::Auto)
}

/// [`parse_ddl`] for a statement logged with the given SQL mode by a server of the given
/// flavor (MariaDB's `JSON` is a `LONGTEXT` in `utf8mb4_bin`; with any other flavor it is
/// `json`).
pub fn parse_ddl_with(
    default_db: Option<&str>,
    sql: &str,
    mode: SqlMode,
    flavor: ServerFlavor,
) -> DdlParse {
    let text = normalize_sql(sql, mode.ansi_quotes);
    let first = text
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .next()
        .unwrap_or("")
        .to_ascii_uppercase();
    if !matches!(
        first.as_str(),
        "CREATE" | "ALTER" | "DROP" | "RENAME" | "TRUNCATE"
    ) {
        return DdlParse::NotDdl;
    }
    let default_db = default_db.filter(|d| !d.is_empty());
    let dialect = MySqlDialect {};
    let parsed = Parser::new(&dialect)
        .try_with_sql(&text)
        .map_err(|e| e.to_string())
        .and_then(|mut p| {
            let mut cx = Cx {
                p: &mut p,
                default_db,
                mode,
                flavor,
            };
            cx.statement()
        });
    match parsed {
        Ok(None) => DdlParse::NotDdl,
        Ok(Some(changes)) => DdlParse::Changes(changes),
        Err(error) => DdlParse::Unparsed {
            tables: tables_named(&text, default_db),
            error,
        },
    }
}

/// Parses one column from its name and SQL type text as `information_schema.COLUMNS.COLUMN_TYPE`
/// gives it (`"int(10) unsigned zerofill"`, `"enum('a','b')"`), with the same normalization as
/// DDL text.
pub fn parse_column_type(name: &str, column_type: &str) -> Result<ColumnDef, String> {
    let sql = format!("`{}` {}", name.replace('`', "``"), column_type);
    let dialect = MySqlDialect {};
    let mut p = Parser::new(&dialect)
        .try_with_sql(&sql)
        .map_err(|e| e.to_string())?;
    let mut cx = Cx {
        p: &mut p,
        default_db: None,
        mode: SqlMode::default(),
        flavor: ServerFlavor::Auto,
    };
    let c = cx.column_def()?;
    if !cx.at_end() {
        return Err(format!(
            "unexpected `{}` in column type `{column_type}`",
            cx.peek()
        ));
    }
    Ok(c.def)
}

impl Cx<'_, '_> {
    fn statement(&mut self) -> PResult<Option<Vec<DdlChange>>> {
        if self.eat("CREATE") {
            self.create()
        } else if self.eat("ALTER") {
            self.alter()
        } else if self.eat("DROP") {
            self.drop()
        } else if self.eat("RENAME") {
            self.rename()
        } else if self.eat("TRUNCATE") {
            self.truncate().map(|c| Some(vec![c]))
        } else {
            Ok(None)
        }
    }
}
