//! Column definitions: `name type [attributes and options]` as `CREATE TABLE`, `ALTER TABLE`
//! `ADD`/`MODIFY`/`CHANGE` and `information_schema` column types write them, read into a
//! [`ColumnDef`] and whether the column declared itself the primary key. MariaDB's `JSON` is a
//! `LONGTEXT` in `utf8mb4_bin`.
//!
//! Invariant: a parsed column has a charset and collation only when its type is a character
//! type (the charset name normalized), is unsigned only when its type is numeric, and is
//! `NOT NULL` when it is an inline primary key or `SERIAL`.

use sqlparser::ast::{ColumnOption, GeneratedAs, GeneratedExpressionMode};
use sqlparser::tokenizer::Token;

use super::cursor::{is_word, is_word_any, Cx, PResult};
use super::types::{map_type, object_name_text, TypeBuild};
use crate::schema::tracked::{is_character_type, normalize_charset, ColumnDef, Generated};
use crate::schema::ServerFlavor;

/// A parsed column definition and whether it declared itself the primary key.
pub(super) struct ParsedColumn {
    pub(super) def: ColumnDef,
    pub(super) primary_key: bool,
}

impl Cx<'_, '_> {
    pub(super) fn column_def(&mut self) -> PResult<ParsedColumn> {
        let name = self.ident("a column name")?;
        let mut ty = TypeBuild::default();
        if self.eat("NATIONAL") {
            ty.national = true;
        }
        if self.peek_is("LONG") {
            self.next();
            if self.eat("VARBINARY") {
                ty.base = "mediumblob".into();
            } else {
                let _ = self.eat("VARCHAR") || self.eat_seq(&["CHAR", "VARYING"]);
                ty.base = "mediumtext".into();
            }
        } else {
            let dt = self
                .p
                .parse_data_type()
                .map_err(|e| format!("column `{name}`: {e}"))?;
            map_type(&dt, self.mode, &mut ty).map_err(|e| format!("column `{name}`: {e}"))?;
        }
        let mut col = ColumnDef::new(name.clone(), String::new());
        let mut primary_key = false;
        let mut binary_collation = false;
        loop {
            let t = self.peek().clone();
            if is_word(&t, "UNSIGNED") || is_word(&t, "ZEROFILL") {
                self.next();
                ty.unsigned = true;
            } else if is_word(&t, "SIGNED") {
                self.next();
            } else if is_word(&t, "BINARY") {
                self.next();
                binary_collation = true;
            } else if is_word_any(&t, &["ASCII", "UNICODE", "BYTE"]) {
                self.next();
                col.charset = Some(
                    match t.to_string().to_ascii_uppercase().as_str() {
                        "ASCII" => "latin1",
                        "UNICODE" => "ucs2",
                        _ => "binary",
                    }
                    .to_owned(),
                );
            } else if let Some((cs, co)) = self.column_charset()? {
                if cs.is_some() {
                    col.charset = cs;
                }
                if co.is_some() {
                    col.collation = co;
                }
            } else if is_word(&t, "PERSISTENT") || is_word(&t, "STORED") {
                self.next();
                col.generated = Some(Generated::Stored);
            } else if is_word(&t, "VIRTUAL") {
                self.next();
                col.generated = Some(Generated::Virtual);
            } else if is_word_any(&t, &["COLUMN_FORMAT", "STORAGE"]) {
                self.next();
                self.next();
            } else if is_word_any(
                &t,
                &[
                    "COMPRESSED",
                    "ENGINE_ATTRIBUTE",
                    "SECONDARY_ENGINE_ATTRIBUTE",
                    "REF_SYSTEM_ID",
                ],
            ) {
                self.next();
                if self.eat_tok(&Token::Eq) || !is_word(&t, "COMPRESSED") {
                    self.next();
                }
            } else if self.eat_seq(&["WITHOUT", "SYSTEM", "VERSIONING"]) {
            } else if is_word(&t, "WITH") && is_word(self.peek_nth(1), "SYSTEM") {
                return Err(format!(
                    "column `{name}`: system-versioned columns are not supported"
                ));
            } else if is_word(&t, "VISIBLE") {
                self.next();
                col.invisible = false;
            } else if self.eat_seq(&["SERIAL", "DEFAULT", "VALUE"]) {
                col.nullable = false;
            } else if is_word(&t, "CONSTRAINT") {
                self.next();
                if !is_word_any(
                    self.peek(),
                    &["CHECK", "UNIQUE", "PRIMARY", "REFERENCES", "KEY"],
                ) {
                    self.next();
                }
            } else {
                let opt = self
                    .p
                    .parse_optional_column_option()
                    .map_err(|e| format!("column `{name}`: {e}"))?;
                let Some(opt) = opt else { break };
                match opt {
                    ColumnOption::Null => col.nullable = true,
                    ColumnOption::NotNull => col.nullable = false,
                    ColumnOption::PrimaryKey(_) => {
                        primary_key = true;
                        col.nullable = false;
                    }
                    ColumnOption::CharacterSet(n) => {
                        col.charset = Some(normalize_charset(&object_name_text(&n)));
                    }
                    ColumnOption::Collation(n) => {
                        col.collation = Some(object_name_text(&n).to_ascii_lowercase());
                    }
                    ColumnOption::Generated {
                        generated_as,
                        generation_expr_mode,
                        generation_expr: Some(_),
                        ..
                    } => {
                        let stored = generation_expr_mode == Some(GeneratedExpressionMode::Stored)
                            || generated_as == GeneratedAs::ExpStored;
                        col.generated = Some(if stored {
                            Generated::Stored
                        } else {
                            Generated::Virtual
                        });
                    }
                    ColumnOption::Invisible => col.invisible = true,
                    _ => {}
                }
            }
        }
        if binary_collation && col.collation.is_none() {
            if let Some(cs) = &col.charset {
                col.collation = Some(format!("{cs}_bin"));
            }
        }
        if ty.base == "json" && self.flavor == ServerFlavor::MariaDb {
            ty.base = "longtext".into();
            if col.charset.is_none() && col.collation.is_none() {
                col.charset = Some("utf8mb4".into());
                col.collation = Some("utf8mb4_bin".into());
            }
        }
        if ty.national && col.charset.is_none() {
            col.charset = Some("utf8mb3".into());
        }
        if ty.serial {
            col.nullable = false;
        }
        if is_character_type(base_of(&ty.base)) {
            col.charset = col.charset.map(|c| normalize_charset(&c));
        } else {
            col.charset = None;
            col.collation = None;
        }
        let numeric = matches!(
            base_of(&ty.base),
            "tinyint"
                | "smallint"
                | "mediumint"
                | "int"
                | "bigint"
                | "decimal"
                | "float"
                | "double"
        );
        col.unsigned = ty.unsigned && numeric;
        col.sql_type = if col.unsigned {
            format!("{} unsigned", ty.base)
        } else {
            ty.base
        };
        col.members = ty.members;
        Ok(ParsedColumn {
            def: col,
            primary_key,
        })
    }

    /// A column's `{CHARACTER SET | CHARSET | CHAR SET} cs` or `COLLATE co`.
    fn column_charset(&mut self) -> PResult<Option<(Option<String>, Option<String>)>> {
        if self.peek_is("DEFAULT") {
            return Ok(None);
        }
        self.charset_option()
    }
}

fn base_of(t: &str) -> &str {
    crate::schema::tracked::base_type(t)
}
