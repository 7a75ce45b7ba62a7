//! The token cursor the statement walker reads with ([`Cx`]): a `sqlparser` parser over the
//! normalized statement, with the statement's default database, SQL mode and server flavor, and
//! the readers several statements share (table names, charset and collation options, key
//! column lists, `WAIT n`, skipping an item or a parenthesized group).
//!
//! Invariant: [`Cx::table_name`] returns qualified names only (an unqualified name takes the
//! default database, and is an error without one); the skippers stop before a top-level `,`,
//! an unbalanced `)` or the end, so the caller reads what follows.

use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

use super::sql_mode::SqlMode;
use crate::schema::tracked::{normalize_charset, TableName};
use crate::schema::ServerFlavor;

pub(super) type PResult<T> = Result<T, String>;

pub(super) struct Cx<'p, 'a> {
    pub(super) p: &'p mut Parser<'a>,
    pub(super) default_db: Option<&'p str>,
    pub(super) mode: SqlMode,
    pub(super) flavor: ServerFlavor,
}

pub(super) fn is_word(t: &Token, w: &str) -> bool {
    matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w))
}

pub(super) fn is_word_any(t: &Token, ws: &[&str]) -> bool {
    ws.iter().any(|w| is_word(t, w))
}

impl Cx<'_, '_> {
    pub(super) fn peek(&self) -> &Token {
        &self.p.peek_token_ref().token
    }

    pub(super) fn peek_nth(&self, n: usize) -> &Token {
        &self.p.peek_nth_token_ref(n).token
    }

    pub(super) fn peek_is(&self, w: &str) -> bool {
        is_word(self.peek(), w)
    }

    pub(super) fn next(&mut self) -> Token {
        self.p.next_token().token
    }

    pub(super) fn eat(&mut self, w: &str) -> bool {
        if self.peek_is(w) {
            self.next();
            true
        } else {
            false
        }
    }

    pub(super) fn eat_seq(&mut self, ws: &[&str]) -> bool {
        if ws
            .iter()
            .enumerate()
            .all(|(n, w)| is_word(self.peek_nth(n), w))
        {
            for _ in ws {
                self.next();
            }
            true
        } else {
            false
        }
    }

    pub(super) fn eat_tok(&mut self, t: &Token) -> bool {
        self.p.consume_token(t)
    }

    pub(super) fn expect_tok(&mut self, t: &Token, what: &str) -> PResult<()> {
        if self.eat_tok(t) {
            Ok(())
        } else {
            Err(format!("expected `{t}` {what}, found `{}`", self.peek()))
        }
    }

    pub(super) fn expect(&mut self, w: &str, what: &str) -> PResult<()> {
        if self.eat(w) {
            Ok(())
        } else {
            Err(format!("expected {w} {what}, found `{}`", self.peek()))
        }
    }

    pub(super) fn at_end(&self) -> bool {
        matches!(self.peek(), Token::EOF | Token::SemiColon)
    }

    pub(super) fn ident(&mut self, what: &str) -> PResult<String> {
        match self.next() {
            Token::Word(w) => Ok(w.value),
            other => Err(format!("expected {what}, found `{other}`")),
        }
    }

    /// A name or string value (charset and collation names).
    fn value_name(&mut self, what: &str) -> PResult<String> {
        match self.next() {
            Token::Word(w) => Ok(w.value.to_ascii_lowercase()),
            Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => {
                Ok(s.to_ascii_lowercase())
            }
            other => Err(format!("expected {what}, found `{other}`")),
        }
    }

    pub(super) fn table_name(&mut self) -> PResult<TableName> {
        let first = self.ident("a table name")?;
        if self.eat_tok(&Token::Period) {
            let table = self.ident("a table name")?;
            return Ok(TableName::new(first, table));
        }
        match self.default_db {
            Some(db) => Ok(TableName::new(db, first)),
            None => Err(format!(
                "table `{first}` is not qualified and the statement has no default database"
            )),
        }
    }

    /// Skips one item up to the next top-level `,` or unbalanced `)` (neither consumed) or the
    /// end, returning the skipped tokens as text.
    pub(super) fn skip_item(&mut self) -> String {
        self.skip_item_with(&mut |_, _| {})
    }

    /// [`Cx::skip_item`] that shows every top-level token (and the tokens after it) to `seen`.
    pub(super) fn skip_item_with(&mut self, seen: &mut dyn FnMut(&Token, [&Token; 3])) -> String {
        let mut depth = 0usize;
        let mut parts: Vec<String> = Vec::new();
        loop {
            let tok = self.peek().clone();
            match tok {
                Token::EOF => break,
                Token::SemiColon | Token::Comma | Token::RParen if depth == 0 => break,
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                let after = [self.peek_nth(1), self.peek_nth(2), self.peek_nth(3)];
                seen(&tok, after);
            }
            parts.push(self.next().to_string());
        }
        parts.join(" ")
    }

    /// Skips a parenthesized group (the current token is its `(`).
    pub(super) fn skip_group(&mut self) {
        let mut depth = 0usize;
        loop {
            match self.next() {
                Token::EOF => return,
                Token::LParen => depth += 1,
                Token::RParen => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return;
                    }
                }
                _ => {}
            }
        }
    }

    pub(super) fn wait_option(&mut self) {
        if self.eat("WAIT") {
            self.next();
        } else {
            self.eat("NOWAIT");
        }
    }

    pub(super) fn finish(&mut self, what: &str) -> PResult<()> {
        if self.at_end() {
            Ok(())
        } else {
            Err(format!("unexpected `{}` after {what}", self.peek()))
        }
    }

    /// `[DEFAULT] {CHARACTER SET | CHARSET | CHAR SET} [=] cs` or `[DEFAULT] COLLATE [=] co` at
    /// the current token: `Some((charset, collation))` when one was read.
    pub(super) fn charset_option(&mut self) -> PResult<Option<(Option<String>, Option<String>)>> {
        let d = usize::from(self.peek_is("DEFAULT"));
        let t = self.peek_nth(d);
        let (words, is_charset) = if is_word(t, "CHARSET") {
            (1, true)
        } else if is_word_any(t, &["CHARACTER", "CHAR"]) && is_word(self.peek_nth(d + 1), "SET") {
            (2, true)
        } else if is_word(t, "COLLATE") {
            (1, false)
        } else {
            return Ok(None);
        };
        for _ in 0..d + words {
            self.next();
        }
        self.eat_tok(&Token::Eq);
        let v = self.value_name("a charset or collation name")?;
        Ok(Some(if is_charset {
            if v == "default" {
                return Err(
                    "CHARACTER SET DEFAULT (the database's charset) is not supported".into(),
                );
            }
            (Some(normalize_charset(&v)), None)
        } else {
            (None, Some(v))
        }))
    }

    /// Charset options of CREATE/ALTER DATABASE (other options are skipped).
    pub(super) fn charset_options(&mut self) -> (Option<String>, Option<String>) {
        let (mut cs, mut co) = (None, None);
        while !self.at_end() {
            match self.charset_option() {
                Ok(Some((a, b))) => {
                    cs = a.or(cs);
                    co = b.or(co);
                }
                Ok(None) => {
                    self.next();
                }
                Err(_) => {}
            }
        }
        (cs, co)
    }

    /// `[USING type] (col [(len)] [ASC|DESC], ...)`: the column names.
    pub(super) fn key_parts(&mut self) -> PResult<Vec<String>> {
        if self.eat("USING") {
            self.next();
        }
        self.expect_tok(&Token::LParen, "before key columns")?;
        let mut cols = Vec::new();
        loop {
            if matches!(self.peek(), Token::LParen) {
                return Err("a primary key on an expression".into());
            }
            cols.push(self.ident("a key column")?);
            if self.eat_tok(&Token::LParen) {
                self.skip_item();
                self.expect_tok(&Token::RParen, "after a key prefix length")?;
            }
            let _ = self.eat("ASC") || self.eat("DESC");
            if self.eat_tok(&Token::Comma) {
                continue;
            }
            self.expect_tok(&Token::RParen, "after key columns")?;
            return Ok(cols);
        }
    }
}
