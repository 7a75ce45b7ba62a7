//! `ALTER TABLE` applied to a tracked definition: the operations ([`AlterOp`], placed by
//! [`ColumnPosition`]), why one cannot be applied ([`DdlError`]), and [`TableDef::apply`].
//!
//! Invariant: an operation changes the definition the way the server changes the table (columns
//! stay in table order, key columns are NOT NULL, renames and drops carry into the primary key,
//! charset changes resize TEXT columns), or fails with a [`DdlError`] naming the table and the
//! column.

use serde::{Deserialize, Serialize};

use super::charsets::{charset_of_collation, mb_max_len};
use super::def::{ColumnDef, TableDef, TableName};
use super::type_text::text_type_for;

/// Where a column goes in `ADD`/`MODIFY`/`CHANGE COLUMN`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ColumnPosition {
    /// `FIRST`.
    First,
    /// `AFTER col`.
    After(String),
    /// No position given: `ADD` appends, `MODIFY`/`CHANGE` keep the column where it is.
    Last,
}

/// One operation of an `ALTER TABLE` (or `CREATE/DROP INDEX`) statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlterOp {
    /// `ADD [COLUMN] [IF NOT EXISTS] def [FIRST | AFTER c]` (one op per column of
    /// `ADD COLUMN (a INT, b INT)`).
    AddColumn {
        /// The new column.
        def: ColumnDef,
        /// Where it goes.
        position: ColumnPosition,
        /// MariaDB `IF NOT EXISTS`: adding an existing column is a no-op.
        if_not_exists: bool,
    },
    /// `DROP [COLUMN] [IF EXISTS] name`.
    DropColumn {
        /// The column.
        name: String,
        /// MariaDB `IF EXISTS`: dropping a missing column is a no-op.
        if_exists: bool,
    },
    /// `MODIFY [COLUMN] [IF EXISTS] def [FIRST | AFTER c]` (the name may change case).
    ModifyColumn {
        /// The new definition (its name names the column).
        def: ColumnDef,
        /// Where it goes.
        position: ColumnPosition,
        /// MariaDB `IF EXISTS`.
        if_exists: bool,
    },
    /// `CHANGE [COLUMN] [IF EXISTS] old def [FIRST | AFTER c]`.
    ChangeColumn {
        /// The column's current name.
        old: String,
        /// The new definition (with the new name).
        def: ColumnDef,
        /// Where it goes.
        position: ColumnPosition,
        /// MariaDB `IF EXISTS`.
        if_exists: bool,
    },
    /// `RENAME COLUMN old TO new`.
    RenameColumn {
        /// Current name.
        old: String,
        /// New name.
        new: String,
    },
    /// `RENAME [TO | AS] new_name`.
    RenameTo(TableName),
    /// `ADD [CONSTRAINT [name]] PRIMARY KEY (cols)`, or a column added/modified with an inline
    /// `PRIMARY KEY`.
    AddPrimaryKey(Vec<String>),
    /// `DROP PRIMARY KEY` (or `DROP INDEX `PRIMARY``).
    DropPrimaryKey,
    /// `ALTER [COLUMN] c SET DEFAULT ... | DROP DEFAULT`: no shape change.
    AlterColumnDefault(String),
    /// `ALTER [COLUMN] c SET VISIBLE | SET INVISIBLE`: no shape change (invisible columns are
    /// in row images).
    SetColumnVisibility {
        /// The column.
        column: String,
        /// True for `SET INVISIBLE`.
        invisible: bool,
    },
    /// `CONVERT TO CHARACTER SET cs [COLLATE co]`: every character column changes charset, and
    /// TEXT columns grow to the smallest TEXT type that keeps their length in characters.
    ConvertCharset {
        /// New character set.
        charset: String,
        /// New collation, if given.
        collation: Option<String>,
    },
    /// `[DEFAULT] CHARACTER SET [=] cs [COLLATE co]` as a table option: the default for columns
    /// added later (placed first among the statement's ops, as the server applies it to the
    /// columns the same statement adds).
    DefaultCharset {
        /// New default character set (`None`: derived from the collation).
        charset: Option<String>,
        /// New default collation, if given.
        collation: Option<String>,
    },
    /// Anything that does not change the row shape (indexes, constraints, table options,
    /// `ALGORITHM=`, `LOCK=`, partitioning, ...), as normalized text.
    Other(String),
}

/// Why an [`AlterOp`] cannot be applied to a [`TableDef`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DdlError {
    /// The operation names a column the tracked definition does not have.
    #[error(
        "tracked schema of {table} has no column `{column}` ({op}); the tracked schema is out of \
         step with the server"
    )]
    NoSuchColumn {
        /// The table.
        table: TableName,
        /// The missing column.
        column: String,
        /// What was attempted.
        op: &'static str,
    },
    /// The operation adds a column that already exists.
    #[error(
        "tracked schema of {table} already has a column `{column}` ({op}); the tracked schema \
         is out of step with the server"
    )]
    DuplicateColumn {
        /// The table.
        table: TableName,
        /// The duplicate column.
        column: String,
        /// What was attempted.
        op: &'static str,
    },
    /// Dropping the last column (a table needs at least one).
    #[error("cannot drop `{column}`, the last column of {table}")]
    LastColumn {
        /// The table.
        table: TableName,
        /// The column.
        column: String,
    },
}

impl TableDef {
    /// Applies one `ALTER TABLE` operation.
    pub fn apply(&mut self, op: &AlterOp) -> Result<(), DdlError> {
        match op {
            AlterOp::AddColumn {
                def,
                position,
                if_not_exists,
            } => {
                if self.column_index(&def.name).is_some() {
                    if *if_not_exists {
                        return Ok(());
                    }
                    return Err(self.duplicate(&def.name, "ADD COLUMN"));
                }
                let at = match position {
                    ColumnPosition::Last => self.columns.len(),
                    ColumnPosition::First => 0,
                    ColumnPosition::After(c) => self.index_of(c, "ADD COLUMN ... AFTER")? + 1,
                };
                let def = self.resolved(def);
                self.columns.insert(at, def);
            }
            AlterOp::DropColumn { name, if_exists } => {
                let Some(i) = self.column_index(name) else {
                    if *if_exists {
                        return Ok(());
                    }
                    return Err(self.missing(name, "DROP COLUMN"));
                };
                if self.columns.len() == 1 {
                    return Err(DdlError::LastColumn {
                        table: self.name(),
                        column: name.clone(),
                    });
                }
                self.columns.remove(i);
                // The server removes a dropped column from the keys that use it.
                self.primary_key.retain(|k| !k.eq_ignore_ascii_case(name));
            }
            AlterOp::ModifyColumn {
                def,
                position,
                if_exists,
            } => {
                let Some(i) = self.column_index(&def.name) else {
                    if *if_exists {
                        return Ok(());
                    }
                    return Err(self.missing(&def.name, "MODIFY COLUMN"));
                };
                let old = self.columns[i].name.clone();
                self.replace_column(i, &old, def, position)?;
            }
            AlterOp::ChangeColumn {
                old,
                def,
                position,
                if_exists,
            } => {
                let Some(i) = self.column_index(old) else {
                    if *if_exists {
                        return Ok(());
                    }
                    return Err(self.missing(old, "CHANGE COLUMN"));
                };
                if let Some(j) = self.column_index(&def.name) {
                    if j != i {
                        return Err(self.duplicate(&def.name, "CHANGE COLUMN"));
                    }
                }
                let old = self.columns[i].name.clone();
                self.replace_column(i, &old, def, position)?;
            }
            AlterOp::RenameColumn { old, new } => {
                let i = self.index_of(old, "RENAME COLUMN")?;
                if let Some(j) = self.column_index(new) {
                    if j != i {
                        return Err(self.duplicate(new, "RENAME COLUMN"));
                    }
                }
                let prev = std::mem::replace(&mut self.columns[i].name, new.clone());
                self.rename_in_key(&prev, new);
            }
            AlterOp::RenameTo(to) => {
                self.db = to.db.clone();
                self.table = to.table.clone();
            }
            AlterOp::AddPrimaryKey(cols) => {
                let mut key = Vec::with_capacity(cols.len());
                for c in cols {
                    let i = self.index_of(c, "ADD PRIMARY KEY")?;
                    self.columns[i].nullable = false;
                    key.push(self.columns[i].name.clone());
                }
                self.primary_key = key;
            }
            AlterOp::DropPrimaryKey => self.primary_key.clear(),
            AlterOp::AlterColumnDefault(c) => {
                self.index_of(c, "ALTER COLUMN")?;
            }
            AlterOp::SetColumnVisibility { column, invisible } => {
                let i = self.index_of(column, "ALTER COLUMN ... SET VISIBLE/INVISIBLE")?;
                self.columns[i].invisible = *invisible;
            }
            AlterOp::ConvertCharset { charset, collation } => {
                for c in &mut self.columns {
                    if c.is_character() {
                        let old_max = c.charset.as_deref().map(mb_max_len);
                        c.charset = Some(charset.clone());
                        c.collation = collation.clone();
                        if let Some(old_max) = old_max {
                            grow_text(c, old_max, mb_max_len(charset));
                        }
                        c.resolve_charset(None, None);
                    }
                }
                self.default_charset = Some(charset.clone());
                self.default_collation = collation.clone();
            }
            AlterOp::DefaultCharset { charset, collation } => {
                self.default_charset = charset.clone().or_else(|| {
                    collation
                        .as_deref()
                        .and_then(charset_of_collation)
                        .map(str::to_owned)
                });
                self.default_collation = collation.clone();
            }
            AlterOp::Other(_) => {}
        }
        Ok(())
    }

    /// Applies the operations of one statement in order (stopping at the first error).
    pub fn apply_all(&mut self, ops: &[AlterOp]) -> Result<(), DdlError> {
        ops.iter().try_for_each(|op| self.apply(op))
    }

    fn resolved(&self, def: &ColumnDef) -> ColumnDef {
        let mut def = def.clone();
        def.resolve_charset(
            self.default_charset.as_deref(),
            self.default_collation.as_deref(),
        );
        if self
            .primary_key
            .iter()
            .any(|k| k.eq_ignore_ascii_case(&def.name))
        {
            def.nullable = false;
        }
        def
    }

    fn replace_column(
        &mut self,
        i: usize,
        old: &str,
        def: &ColumnDef,
        position: &ColumnPosition,
    ) -> Result<(), DdlError> {
        let def = {
            let mut d = self.resolved(def);
            if self.primary_key.iter().any(|k| k.eq_ignore_ascii_case(old)) {
                d.nullable = false;
            }
            d
        };
        let new_name = def.name.clone();
        match position {
            ColumnPosition::Last => self.columns[i] = def,
            ColumnPosition::First => {
                self.columns.remove(i);
                self.columns.insert(0, def);
            }
            ColumnPosition::After(after) => {
                // AFTER names a column of the table as it is during the change.
                let removed = self.columns.remove(i);
                match self.column_index(after) {
                    Some(j) => self.columns.insert(j + 1, def),
                    None => {
                        self.columns.insert(i, removed);
                        return Err(self.missing(after, "... AFTER"));
                    }
                }
            }
        }
        self.rename_in_key(old, &new_name);
        Ok(())
    }

    fn rename_in_key(&mut self, old: &str, new: &str) {
        for k in &mut self.primary_key {
            if k.eq_ignore_ascii_case(old) {
                *k = new.to_owned();
            }
        }
    }

    fn index_of(&self, name: &str, op: &'static str) -> Result<usize, DdlError> {
        self.column_index(name)
            .ok_or_else(|| self.missing(name, op))
    }

    fn missing(&self, column: &str, op: &'static str) -> DdlError {
        DdlError::NoSuchColumn {
            table: self.name(),
            column: column.to_owned(),
            op,
        }
    }

    fn duplicate(&self, column: &str, op: &'static str) -> DdlError {
        DdlError::DuplicateColumn {
            table: self.name(),
            column: column.to_owned(),
            op,
        }
    }
}

/// `CONVERT TO CHARACTER SET`: a TEXT column grows so that it keeps its length in characters.
fn grow_text(c: &mut ColumnDef, old_mb: u64, new_mb: u64) {
    let bytes = match c.base_type() {
        "tinytext" => 255,
        "text" => 65_535,
        "mediumtext" => 16_777_215,
        _ => return,
    };
    if new_mb <= old_mb {
        return;
    }
    let chars = bytes / old_mb.max(1);
    let grown = text_type_for(chars.saturating_mul(new_mb), false);
    if grown != c.base_type() {
        c.sql_type = grown.to_owned();
    }
}
