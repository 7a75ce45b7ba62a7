//! `DROP` (tables, sequences, databases, indexes), `RENAME TABLE` and `TRUNCATE`: the statements
//! that name tables but carry no definitions.
//!
//! Invariant: `DROP TABLE`, `RENAME TABLE` and `TRUNCATE` are read to the end (anything after
//! them is an error), and `RENAME TABLE` keeps its pairs in order, so a swap through a
//! temporary name applies as it was logged. Temporary tables are not tracked.

use sqlparser::tokenizer::Token;

use super::change::DdlChange;
use super::cursor::{Cx, PResult};

impl Cx<'_, '_> {
    pub(super) fn drop(&mut self) -> PResult<Option<Vec<DdlChange>>> {
        if self.eat("TEMPORARY") {
            return Ok(None);
        }
        if self.eat("TABLE") || self.eat("TABLES") || self.eat("SEQUENCE") {
            let if_exists = self.eat_seq(&["IF", "EXISTS"]);
            let mut tables = vec![self.table_name()?];
            while self.eat_tok(&Token::Comma) {
                tables.push(self.table_name()?);
            }
            self.wait_option();
            let _ = self.eat("RESTRICT") || self.eat("CASCADE");
            self.finish("DROP TABLE")?;
            return Ok(Some(vec![DdlChange::DropTable { tables, if_exists }]));
        }
        if self.eat("DATABASE") || self.eat("SCHEMA") {
            let _ = self.eat_seq(&["IF", "EXISTS"]);
            let db = self.ident("a database name")?;
            return Ok(Some(vec![DdlChange::DropDatabase { db }]));
        }
        if self.eat("INDEX") {
            return self.index_statement(true).map(|c| Some(vec![c]));
        }
        Ok(None)
    }

    pub(super) fn rename(&mut self) -> PResult<Option<Vec<DdlChange>>> {
        if !(self.eat("TABLE") || self.eat("TABLES")) {
            return Ok(None);
        }
        let _ = self.eat_seq(&["IF", "EXISTS"]);
        let mut pairs = Vec::new();
        loop {
            let from = self.table_name()?;
            self.expect("TO", "in RENAME TABLE")?;
            let to = self.table_name()?;
            pairs.push((from, to));
            if !self.eat_tok(&Token::Comma) {
                break;
            }
        }
        self.wait_option();
        self.finish("RENAME TABLE")?;
        Ok(Some(vec![DdlChange::RenameTable { pairs }]))
    }

    pub(super) fn truncate(&mut self) -> PResult<DdlChange> {
        let _ = self.eat("TABLE");
        let table = self.table_name()?;
        self.wait_option();
        self.finish("TRUNCATE")?;
        Ok(DdlChange::Truncate { table })
    }
}
