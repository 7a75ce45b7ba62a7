//! What a statement means for tracked tables: [`DdlParse`] (not DDL, the changes it makes, or
//! DDL that could not be parsed) and the [`DdlChange`]s themselves.
//!
//! Invariant: the changes are listed in the order the statement makes them, so applying them in
//! order gives the tables as they are after the statement; every table name in them is
//! qualified (the statement's default database filled in).

use crate::schema::tracked::{AlterOp, TableDef, TableName};

/// What a statement means for tracked tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DdlParse {
    /// Not a statement that creates, changes or removes tables or databases.
    NotDdl,
    /// The changes the statement makes, in order.
    Changes(Vec<DdlChange>),
    /// A table or database DDL that could not be parsed.
    Unparsed {
        /// The tables the statement names (best effort; may be empty).
        tables: Vec<TableName>,
        /// Why it could not be parsed.
        error: String,
    },
}

/// One change a DDL statement makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DdlChange {
    /// `CREATE TABLE` with column definitions (also MariaDB `CREATE SEQUENCE`, whose table has
    /// a fixed shape). With `if_not_exists`, MySQL logs the statement even when the table
    /// exists and nothing changed: keep a tracked definition that exists.
    CreateTable {
        /// The new table.
        table: TableName,
        /// Its definition (column charsets filled from the table default where it is given).
        def: TableDef,
        /// `IF NOT EXISTS`.
        if_not_exists: bool,
        /// MariaDB `CREATE OR REPLACE`.
        or_replace: bool,
    },
    /// `CREATE TABLE t LIKE s`: `t` gets the shape of `s`.
    CreateTableLike {
        /// The new table.
        table: TableName,
        /// The table whose definition is copied.
        like: TableName,
        /// `IF NOT EXISTS`.
        if_not_exists: bool,
        /// MariaDB `CREATE OR REPLACE`.
        or_replace: bool,
    },
    /// `CREATE TABLE ... SELECT`: the shape depends on the query and is not known from the text.
    /// (With row-based logging the servers log a plain `CREATE TABLE` with the columns instead,
    /// so this comes only from statement-based binlogs.)
    CreateTableAsSelect {
        /// The new table.
        table: TableName,
        /// `IF NOT EXISTS`.
        if_not_exists: bool,
        /// MariaDB `CREATE OR REPLACE`.
        or_replace: bool,
    },
    /// `ALTER TABLE` (and `CREATE INDEX`/`DROP INDEX`): apply `ops` in order with
    /// [`TableDef::apply`].
    AlterTable {
        /// The table (before any `RenameTo` among the ops).
        table: TableName,
        /// The operations.
        ops: Vec<AlterOp>,
    },
    /// `DROP TABLE` (and MariaDB `DROP SEQUENCE`).
    DropTable {
        /// The dropped tables.
        tables: Vec<TableName>,
        /// `IF EXISTS`: missing tables are not an error.
        if_exists: bool,
    },
    /// `RENAME TABLE a TO b, c TO d`, applied in order (`a TO tmp, b TO a, tmp TO b` swaps).
    RenameTable {
        /// (old, new) pairs.
        pairs: Vec<(TableName, TableName)>,
    },
    /// `TRUNCATE [TABLE]`: rows are gone without row events; the shape is unchanged.
    Truncate {
        /// The table.
        table: TableName,
    },
    /// `CREATE DATABASE`.
    CreateDatabase {
        /// The database.
        db: String,
        /// Its default charset, if given.
        charset: Option<String>,
        /// Its default collation, if given.
        collation: Option<String>,
    },
    /// `ALTER DATABASE` (the default charset of tables created later).
    AlterDatabase {
        /// The database.
        db: String,
        /// New default charset, if given.
        charset: Option<String>,
        /// New default collation, if given.
        collation: Option<String>,
    },
    /// `DROP DATABASE`: every table of `db` is gone.
    DropDatabase {
        /// The database.
        db: String,
    },
}
