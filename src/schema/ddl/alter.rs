//! `ALTER TABLE` (and `ALTER DATABASE`): the operations in order as [`AlterOp`]s, in MySQL's and
//! MariaDB's syntax (`ADD COLUMN (a INT, b INT)`, `IF [NOT] EXISTS` on columns, `WAIT n`, table
//! options and partition clauses between operations).
//!
//! Invariant: the ops keep the statement's order, except that a change of the table's default
//! charset comes first, so the columns the same statement adds get it; an inline primary key
//! on an added or changed column is an [`AlterOp::AddPrimaryKey`] right after it, and an
//! operation without a shape change is an [`AlterOp::Other`] with its text.

use sqlparser::tokenizer::Token;

use super::change::DdlChange;
use super::cursor::{is_word, is_word_any, Cx, PResult};
use crate::schema::tracked::{normalize_charset, AlterOp, ColumnDef, ColumnPosition};

impl Cx<'_, '_> {
    pub(super) fn alter(&mut self) -> PResult<Option<Vec<DdlChange>>> {
        let _ = self.eat("ONLINE");
        let _ = self.eat("IGNORE");
        if self.eat("TABLE") {
            return self.alter_table().map(|c| Some(vec![c]));
        }
        if self.eat("DATABASE") || self.eat("SCHEMA") {
            let named = !self.at_end()
                && !is_word_any(
                    self.peek(),
                    &[
                        "DEFAULT",
                        "CHARACTER",
                        "CHARSET",
                        "CHAR",
                        "COLLATE",
                        "ENCRYPTION",
                        "READ",
                        "COMMENT",
                        "UPGRADE",
                    ],
                );
            let db = if named {
                self.ident("a database name")?
            } else {
                self.default_db
                    .map(str::to_owned)
                    .ok_or("ALTER DATABASE without a database")?
            };
            let (charset, collation) = self.charset_options();
            return Ok(Some(vec![DdlChange::AlterDatabase {
                db,
                charset,
                collation,
            }]));
        }
        Ok(None)
    }

    fn alter_table(&mut self) -> PResult<DdlChange> {
        let _ = self.eat_seq(&["IF", "EXISTS"]);
        let table = self.table_name()?;
        self.wait_option();
        let mut ops = Vec::new();
        let mut charset_ops = Vec::new();
        while !self.at_end() {
            self.alter_op(&mut ops, &mut charset_ops)?;
            if self.eat_tok(&Token::Comma) {
                continue;
            }
            if self.at_end() {
                break;
            }
            if is_word_any(self.peek(), &["PARTITION", "REMOVE"]) {
                // Partition options follow the operations without a comma.
                let text = self.skip_item();
                ops.push(AlterOp::Other(text));
                continue;
            }
            return Err(format!(
                "unexpected `{}` in ALTER TABLE {table}",
                self.peek()
            ));
        }
        charset_ops.extend(ops);
        Ok(DdlChange::AlterTable {
            table,
            ops: charset_ops,
        })
    }

    fn position(&mut self) -> PResult<ColumnPosition> {
        if self.eat("FIRST") {
            Ok(ColumnPosition::First)
        } else if self.eat("AFTER") {
            Ok(ColumnPosition::After(
                self.ident("a column name after AFTER")?,
            ))
        } else {
            Ok(ColumnPosition::Last)
        }
    }

    /// Parses a column definition (and its `FIRST`/`AFTER` position when `positioned`), pushes
    /// the op `make` builds from them, and an [`AlterOp::AddPrimaryKey`] right after it when the
    /// definition says `PRIMARY KEY`.
    fn column_op(
        &mut self,
        ops: &mut Vec<AlterOp>,
        positioned: bool,
        make: impl FnOnce(ColumnDef, ColumnPosition) -> AlterOp,
    ) -> PResult<()> {
        let column = self.column_def()?;
        let position = if positioned {
            self.position()?
        } else {
            ColumnPosition::Last
        };
        let name = column.def.name.clone();
        ops.push(make(column.def, position));
        if column.primary_key {
            ops.push(AlterOp::AddPrimaryKey(vec![name]));
        }
        Ok(())
    }

    fn alter_op(&mut self, ops: &mut Vec<AlterOp>, charset_ops: &mut Vec<AlterOp>) -> PResult<()> {
        const NOT_COLUMN_ADD: &[&str] = &[
            "INDEX",
            "KEY",
            "UNIQUE",
            "FULLTEXT",
            "SPATIAL",
            "FOREIGN",
            "CHECK",
            "CONSTRAINT",
            "PRIMARY",
            "PARTITION",
        ];
        if self.peek_is("ADD") {
            let t1 = self.peek_nth(1);
            let column = is_word(t1, "COLUMN")
                || !(is_word_any(t1, NOT_COLUMN_ADD)
                    || (is_word(t1, "PERIOD") && is_word(self.peek_nth(2), "FOR"))
                    || (is_word(t1, "SYSTEM") && is_word(self.peek_nth(2), "VERSIONING")));
            if column {
                self.next();
                let _ = self.eat("COLUMN");
                let if_not_exists = self.eat_seq(&["IF", "NOT", "EXISTS"]);
                if self.eat_tok(&Token::LParen) {
                    loop {
                        self.column_op(ops, false, |def, position| AlterOp::AddColumn {
                            def,
                            position,
                            if_not_exists,
                        })?;
                        if self.eat_tok(&Token::Comma) {
                            continue;
                        }
                        self.expect_tok(&Token::RParen, "after ADD COLUMN (...")?;
                        return Ok(());
                    }
                }
                return self.column_op(ops, true, |def, position| AlterOp::AddColumn {
                    def,
                    position,
                    if_not_exists,
                });
            }
            if is_word(t1, "SYSTEM") {
                return Err("system versioning is not supported".into());
            }
            let pk_at = if is_word(t1, "CONSTRAINT") {
                let mut n = 2;
                if !is_word(self.peek_nth(n), "PRIMARY") {
                    n += 1;
                }
                n
            } else {
                1
            };
            if is_word(self.peek_nth(pk_at), "PRIMARY") && is_word(self.peek_nth(pk_at + 1), "KEY")
            {
                for _ in 0..pk_at + 2 {
                    self.next();
                }
                let cols = self.key_parts()?;
                self.skip_item();
                ops.push(AlterOp::AddPrimaryKey(cols));
                return Ok(());
            }
            ops.push(AlterOp::Other(self.skip_item()));
            return Ok(());
        }
        if self.peek_is("DROP") {
            let t1 = self.peek_nth(1);
            if is_word(t1, "PRIMARY") && is_word(self.peek_nth(2), "KEY") {
                self.skip_item();
                ops.push(AlterOp::DropPrimaryKey);
                return Ok(());
            }
            if is_word_any(t1, &["INDEX", "KEY"]) {
                let primary = matches!(self.peek_nth(2), Token::Word(w) if w.value.eq_ignore_ascii_case("PRIMARY"));
                let text = self.skip_item();
                ops.push(if primary {
                    AlterOp::DropPrimaryKey
                } else {
                    AlterOp::Other(text)
                });
                return Ok(());
            }
            if is_word(t1, "SYSTEM") {
                return Err("system versioning is not supported".into());
            }
            if is_word_any(
                t1,
                &["FOREIGN", "CHECK", "CONSTRAINT", "PARTITION", "PERIOD"],
            ) {
                ops.push(AlterOp::Other(self.skip_item()));
                return Ok(());
            }
            self.next();
            let _ = self.eat("COLUMN");
            let if_exists = self.eat_seq(&["IF", "EXISTS"]);
            let name = self.ident("a column name after DROP")?;
            let _ = self.eat("RESTRICT") || self.eat("CASCADE");
            ops.push(AlterOp::DropColumn { name, if_exists });
            return Ok(());
        }
        if self.eat("MODIFY") {
            let _ = self.eat("COLUMN");
            let if_exists = self.eat_seq(&["IF", "EXISTS"]);
            return self.column_op(ops, true, |def, position| AlterOp::ModifyColumn {
                def,
                position,
                if_exists,
            });
        }
        if self.eat("CHANGE") {
            let _ = self.eat("COLUMN");
            let if_exists = self.eat_seq(&["IF", "EXISTS"]);
            let old = self.ident("a column name after CHANGE")?;
            return self.column_op(ops, true, |def, position| AlterOp::ChangeColumn {
                old,
                def,
                position,
                if_exists,
            });
        }
        if self.peek_is("RENAME") {
            let t1 = self.peek_nth(1);
            if is_word_any(t1, &["INDEX", "KEY"]) {
                ops.push(AlterOp::Other(self.skip_item()));
                return Ok(());
            }
            self.next();
            if self.eat("COLUMN") {
                let _ = self.eat_seq(&["IF", "EXISTS"]);
                let old = self.ident("a column name after RENAME COLUMN")?;
                self.expect("TO", "in RENAME COLUMN")?;
                let new = self.ident("a column name after TO")?;
                ops.push(AlterOp::RenameColumn { old, new });
                return Ok(());
            }
            let _ = self.eat("TO") || self.eat("AS");
            let to = self.table_name()?;
            ops.push(AlterOp::RenameTo(to));
            return Ok(());
        }
        if self.peek_is("ALTER") {
            let t1 = self.peek_nth(1);
            if is_word_any(t1, &["INDEX", "KEY", "CHECK", "CONSTRAINT"]) {
                ops.push(AlterOp::Other(self.skip_item()));
                return Ok(());
            }
            self.next();
            let _ = self.eat("COLUMN");
            let _ = self.eat_seq(&["IF", "EXISTS"]);
            let column = self.ident("a column name after ALTER")?;
            if self.eat_seq(&["SET", "VISIBLE"]) {
                ops.push(AlterOp::SetColumnVisibility {
                    column,
                    invisible: false,
                });
            } else if self.eat_seq(&["SET", "INVISIBLE"]) {
                ops.push(AlterOp::SetColumnVisibility {
                    column,
                    invisible: true,
                });
            } else {
                self.skip_item();
                ops.push(AlterOp::AlterColumnDefault(column));
            }
            return Ok(());
        }
        if self.eat("CONVERT") {
            self.expect("TO", "after CONVERT")?;
            let Some((Some(charset), _)) = self.charset_option()? else {
                return Err(format!(
                    "expected CHARACTER SET after CONVERT TO, found `{}`",
                    self.peek()
                ));
            };
            let collation = match self.charset_option()? {
                Some((None, co)) => co,
                _ => None,
            };
            ops.push(AlterOp::ConvertCharset { charset, collation });
            return Ok(());
        }
        // Table options and the rest: no shape change, but a default charset matters for the
        // columns added later (and by this very statement).
        let (mut cs, mut co) = (None, None);
        // 0: idle; 1: a charset value is next; 2: a collation value; 3: SET is next.
        let mut state = 0u8;
        let text = self.skip_item_with(&mut |t, after| match state {
            1 | 2 => {
                if matches!(t, Token::Eq) {
                    return;
                }
                let v = match t {
                    Token::Word(w) => Some(w.value.to_ascii_lowercase()),
                    Token::SingleQuotedString(s) => Some(s.to_ascii_lowercase()),
                    _ => None,
                };
                if let Some(v) = v {
                    if state == 1 {
                        cs = Some(normalize_charset(&v));
                    } else {
                        co = Some(v);
                    }
                }
                state = 0;
            }
            3 => state = if is_word(t, "SET") { 1 } else { 0 },
            _ => {
                if is_word(t, "CHARSET") {
                    state = 1;
                } else if is_word_any(t, &["CHARACTER", "CHAR"]) && is_word(after[0], "SET") {
                    state = 3;
                } else if is_word(t, "COLLATE") {
                    state = 2;
                }
            }
        });
        if cs.is_some() || co.is_some() {
            charset_ops.push(AlterOp::DefaultCharset {
                charset: cs,
                collation: co,
            });
        }
        ops.push(AlterOp::Other(text));
        Ok(())
    }
}
