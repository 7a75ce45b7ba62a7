//! DDL statements read from the binlog (QUERY events), turned into changes of tracked tables.
//!
//! [`parse_ddl`] classifies a statement and, for the DDL that changes which tables exist or what
//! their rows look like, returns [`DdlChange`]s: `CREATE TABLE` with the column definitions and
//! primary key ([`TableDef`]), `CREATE TABLE ... LIKE`, `CREATE TABLE ... SELECT` (shape unknown),
//! `ALTER TABLE` as a list of [`AlterOp`]s, `DROP TABLE`, `RENAME TABLE`, `TRUNCATE`, database
//! create/alter/drop, `CREATE/DROP INDEX` (an `ALTER` with no shape change) and MariaDB
//! sequences (tables of a fixed shape). Everything else (DML, `BEGIN`, `GRANT`, `SET`, views,
//! routines, triggers, users, temporary tables, `ANALYZE`/`OPTIMIZE`, ...) is
//! [`DdlParse::NotDdl`]. DDL that cannot be parsed is [`DdlParse::Unparsed`] with the tables it
//! names (found by a pattern on the statement's head), so the caller can ignore it when those
//! tables are excluded and stop with the error when one is included.
//!
//! Statements are tokenized and parsed with `sqlparser` (MySQL dialect): its tokenizer, its
//! data-type, expression and column-option parsers. The statement frames (`CREATE TABLE` items,
//! `ALTER TABLE` operations) are walked here, because the binlog carries MySQL and MariaDB
//! syntax that a generic SQL AST does not cover (`ADD COLUMN (a INT, b INT)`, `ALGORITHM=INSTANT`,
//! table options between operations, MariaDB `IF [NOT] EXISTS` on columns, `WAIT n`, ...).
//! Index, constraint, partition and table-option clauses are skipped as balanced token runs.
//!
//! Limits: statements that use `NO_BACKSLASH_ESCAPES` string syntax, MariaDB system-versioned
//! tables (`WITH SYSTEM VERSIONING`), Oracle-mode types, `CONVERT TO CHARACTER SET DEFAULT` and
//! sequences with `AS <type>` are reported as unparsed. The `BINARY` column attribute (a `_bin`
//! collation) sets the collation only when the column names its charset.
//!
//! The files, each using only those listed before it:
//!
//! - `sql_mode`, `change`: the SQL mode a statement is read in, and what it means
//!   ([`SqlMode`], [`DdlParse`], [`DdlChange`]);
//! - `normalize`: the text before tokenizing, comments unwrapped or removed
//!   ([`normalize_sql`]);
//! - `tables_named`: the tables an unparsable statement names, by patterns on its head;
//! - `cursor`: the token cursor and the readers several statements share;
//! - `types`: a parsed data type normalized into a column type;
//! - `column`: a column definition;
//! - `create`, `alter`: `CREATE` statements and `ALTER TABLE`/`ALTER DATABASE`;
//! - `drop_rename`: `DROP`, `RENAME TABLE` and `TRUNCATE`;
//! - `parse`: the entry points ([`parse_ddl`], [`parse_ddl_with`], [`parse_column_type`]).
//!
//! [`TableDef`]: crate::schema::tracked::TableDef
//! [`AlterOp`]: crate::schema::tracked::AlterOp

mod alter;
mod change;
mod column;
mod create;
mod cursor;
mod drop_rename;
mod normalize;
mod parse;
mod sql_mode;
mod tables_named;
mod types;

pub use self::change::{DdlChange, DdlParse};
pub use self::normalize::normalize_sql;
pub use self::parse::{parse_column_type, parse_ddl, parse_ddl_with};
pub use self::sql_mode::SqlMode;

#[cfg(test)]
mod tests;
