//! `CREATE` statements: `CREATE TABLE` (column definitions and primary key, `LIKE`, `... SELECT`),
//! `CREATE DATABASE`, `CREATE ... INDEX` (and `DROP INDEX`, read the same way) and MariaDB
//! `CREATE SEQUENCE` (a table of a fixed shape). Temporary tables are not tracked.
//!
//! MySQL's `START TRANSACTION` after the `CREATE TABLE` it logs for `CREATE TABLE ... SELECT`
//! (atomic DDL) is accepted as a table option.
//!
//! Invariant: a created [`TableDef`] has at least one column, no two columns of one name, the
//! columns' charsets resolved from the table default, and a primary key of existing columns,
//! all `NOT NULL`.

use sqlparser::tokenizer::Token;

use super::change::DdlChange;
use super::cursor::{is_word, is_word_any, Cx, PResult};
use crate::schema::tracked::{AlterOp, ColumnDef, TableDef};

impl Cx<'_, '_> {
    pub(super) fn create(&mut self) -> PResult<Option<Vec<DdlChange>>> {
        let or_replace = self.eat_seq(&["OR", "REPLACE"]);
        if self.eat("TEMPORARY") {
            // Temporary tables have no row events with row-based logging.
            return Ok(None);
        }
        if self.eat("TABLE") {
            return self.create_table(or_replace).map(|c| Some(vec![c]));
        }
        if self.eat("DATABASE") || self.eat("SCHEMA") {
            let _ = self.eat_seq(&["IF", "NOT", "EXISTS"]);
            let db = self.ident("a database name")?;
            let (charset, collation) = self.charset_options();
            return Ok(Some(vec![DdlChange::CreateDatabase {
                db,
                charset,
                collation,
            }]));
        }
        if self.eat("SEQUENCE") {
            return self.create_sequence(or_replace).map(|c| Some(vec![c]));
        }
        let is_index = (0..4).any(|n| is_word(self.peek_nth(n), "INDEX"))
            && (0..4)
                .take_while(|&n| !is_word(self.peek_nth(n), "INDEX"))
                .all(|n| {
                    is_word_any(
                        self.peek_nth(n),
                        &["UNIQUE", "FULLTEXT", "SPATIAL", "ONLINE", "OFFLINE"],
                    )
                });
        if is_index {
            return self.index_statement(false).map(|c| Some(vec![c]));
        }
        Ok(None)
    }

    /// `CREATE ... INDEX ... ON t (...)` / `DROP INDEX name ON t`.
    pub(super) fn index_statement(&mut self, drop: bool) -> PResult<DdlChange> {
        let mut head = Vec::new();
        let mut index_name = None;
        while !self.at_end() && !self.peek_is("ON") {
            let t = self.next();
            if let Token::Word(w) = &t {
                if !is_word_any(&t, &["IF", "EXISTS", "NOT", "INDEX", "ONLINE", "OFFLINE"]) {
                    index_name.get_or_insert_with(|| w.value.clone());
                }
            }
            head.push(t.to_string());
        }
        self.expect("ON", "in an index statement")?;
        let table = self.table_name()?;
        let rest = self.skip_item();
        let op = if drop && index_name.is_some_and(|n| n.eq_ignore_ascii_case("PRIMARY")) {
            AlterOp::DropPrimaryKey
        } else {
            let verb = if drop { "DROP" } else { "CREATE" };
            AlterOp::Other(format!("{verb} {} ON {table} {rest}", head.join(" ")))
        };
        Ok(DdlChange::AlterTable {
            table,
            ops: vec![op],
        })
    }

    fn create_table(&mut self, or_replace: bool) -> PResult<DdlChange> {
        let if_not_exists = self.eat_seq(&["IF", "NOT", "EXISTS"]);
        let table = self.table_name()?;
        if self.eat("LIKE") {
            let like = self.table_name()?;
            self.finish("CREATE TABLE ... LIKE")?;
            return Ok(DdlChange::CreateTableLike {
                table,
                like,
                if_not_exists,
                or_replace,
            });
        }
        if matches!(self.peek(), Token::LParen) && is_word(self.peek_nth(1), "LIKE") {
            self.next();
            self.next();
            let like = self.table_name()?;
            self.expect_tok(&Token::RParen, "after CREATE TABLE (LIKE ...")?;
            self.finish("CREATE TABLE (LIKE ...)")?;
            return Ok(DdlChange::CreateTableLike {
                table,
                like,
                if_not_exists,
                or_replace,
            });
        }
        let mut def = TableDef::new(&table.db, &table.table);
        let mut key: Option<Vec<String>> = None;
        let mut inline_key = Vec::new();
        if matches!(self.peek(), Token::LParen) && !self.query_starts_at(1) {
            self.next();
            loop {
                self.create_item(&mut def, &mut key, &mut inline_key)?;
                if self.eat_tok(&Token::Comma) {
                    continue;
                }
                self.expect_tok(&Token::RParen, "after a table element")?;
                break;
            }
        }
        // Table options, partitioning, and a query for CREATE ... SELECT.
        let mut as_select = false;
        while !self.at_end() {
            if self.eat_seq(&["START", "TRANSACTION"]) {
                continue;
            }
            if self.peek_is("WITH") && is_word(self.peek_nth(1), "SYSTEM") {
                return Err(
                    "system-versioned tables (WITH SYSTEM VERSIONING) are not supported".into(),
                );
            }
            if self.query_starts_at(0)
                || (is_word_any(self.peek(), &["AS", "IGNORE", "REPLACE"])
                    && (self.query_starts_at(1)
                        || (is_word(self.peek_nth(1), "AS") && self.query_starts_at(2))))
            {
                as_select = true;
                break;
            }
            if matches!(self.peek(), Token::LParen) {
                if self.query_starts_at(1) {
                    as_select = true;
                    break;
                }
                self.skip_group();
                continue;
            }
            if let Some((cs, co)) = self.charset_option()? {
                if cs.is_some() {
                    def.default_charset = cs;
                }
                if co.is_some() {
                    def.default_collation = co;
                }
                continue;
            }
            self.next();
        }
        if as_select {
            return Ok(DdlChange::CreateTableAsSelect {
                table,
                if_not_exists,
                or_replace,
            });
        }
        if def.columns.is_empty() {
            return Err("CREATE TABLE without column definitions".into());
        }
        if def.default_charset.is_none() {
            def.default_charset = def
                .default_collation
                .as_deref()
                .and_then(crate::schema::tracked::charset_of_collation)
                .map(str::to_owned);
        }
        let (dc, dco) = (def.default_charset.clone(), def.default_collation.clone());
        for c in &mut def.columns {
            c.resolve_charset(dc.as_deref(), dco.as_deref());
        }
        let key = key.unwrap_or(inline_key);
        for k in &key {
            let i = def
                .column_index(k)
                .ok_or_else(|| format!("primary key column `{k}` is not a column of {table}"))?;
            def.columns[i].nullable = false;
            def.primary_key.push(def.columns[i].name.clone());
        }
        Ok(DdlChange::CreateTable {
            table,
            def,
            if_not_exists,
            or_replace,
        })
    }

    /// Whether a query (CREATE ... SELECT) starts `n` tokens ahead.
    fn query_starts_at(&self, mut n: usize) -> bool {
        // A query may be parenthesized; looking ahead is linear in `n`, so only so deep.
        let limit = n + 16;
        while n < limit && matches!(self.peek_nth(n), Token::LParen) {
            n += 1;
        }
        let t = self.peek_nth(n);
        is_word_any(t, &["SELECT", "VALUES", "TABLE"])
            || (is_word(t, "WITH") && !is_word(self.peek_nth(n + 1), "SYSTEM"))
    }

    fn create_item(
        &mut self,
        def: &mut TableDef,
        key: &mut Option<Vec<String>>,
        inline_key: &mut Vec<String>,
    ) -> PResult<()> {
        if self.peek_is("CONSTRAINT") {
            self.next();
            if !is_word_any(self.peek(), &["PRIMARY", "UNIQUE", "FOREIGN", "CHECK"]) {
                self.next(); // the constraint's name
            }
        }
        if self.eat_seq(&["PRIMARY", "KEY"]) {
            *key = Some(self.key_parts()?);
            self.skip_item();
            return Ok(());
        }
        if is_word_any(
            self.peek(),
            &[
                "INDEX", "KEY", "UNIQUE", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK",
            ],
        ) || (self.peek_is("PERIOD") && is_word(self.peek_nth(1), "FOR"))
        {
            self.skip_item();
            return Ok(());
        }
        let col = self.column_def()?;
        if def.column_index(&col.def.name).is_some() {
            return Err(format!("duplicate column `{}`", col.def.name));
        }
        if col.primary_key {
            inline_key.push(col.def.name.clone());
        }
        def.columns.push(col.def);
        Ok(())
    }

    fn create_sequence(&mut self, or_replace: bool) -> PResult<DdlChange> {
        let if_not_exists = self.eat_seq(&["IF", "NOT", "EXISTS"]);
        let table = self.table_name()?;
        if self.peek_is("AS") {
            return Err("CREATE SEQUENCE ... AS <type> is not supported".into());
        }
        let mut def = TableDef::new(&table.db, &table.table);
        for (name, ty) in [
            ("next_not_cached_value", "bigint"),
            ("minimum_value", "bigint"),
            ("maximum_value", "bigint"),
            ("start_value", "bigint"),
            ("increment", "bigint"),
            ("cache_size", "bigint unsigned"),
            ("cycle_option", "tinyint unsigned"),
            ("cycle_count", "bigint"),
        ] {
            def.columns.push(ColumnDef {
                nullable: false,
                ..ColumnDef::new(name, ty)
            });
        }
        Ok(DdlChange::CreateTable {
            table,
            def,
            if_not_exists,
            or_replace,
        })
    }
}
