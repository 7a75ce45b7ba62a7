//! Tracked table definitions: a table's shape as its DDL declares it, kept current by applying
//! the DDL read from the binlog.
//!
//! Servers that log only MINIMAL (or no) `TABLE_MAP` optional metadata send column types and
//! type metadata but no column names, ENUM/SET member strings or primary key (with no metadata at
//! all, not even signedness or charsets). A [`TableDef`] supplies what is missing: it is loaded
//! from `information_schema` where sluice starts with a known schema
//! ([`crate::schema::information_schema`]), or read back from a schema history, and then changed
//! by every DDL statement ([`crate::schema::ddl::parse_ddl`] → [`TableDef::apply`]).
//! [`crate::schema::TableSchema::from_table_map_with_def`] combines it with each `TABLE_MAP` and
//! checks that both still agree.
//!
//! Column types are kept as normalized lower-case SQL text (`"bigint unsigned"`,
//! `"decimal(10,2)"`, `"enum('a','b')"`, `"varchar(20)"`, `"datetime(6)"`): integer display
//! widths and `ZEROFILL` are dropped, synonyms are resolved (`BOOL` → `tinyint`, `INTEGER` →
//! `int`, `NUMERIC` → `decimal`, `SERIAL` → `bigint unsigned`, `NCHAR` → `char` in `utf8mb3`,
//! `GEOMCOLLECTION` → `geometrycollection`, `CHAR ... CHARACTER SET binary` → `binary`, ...), and
//! `DECIMAL` always carries precision and scale. The same normalization is applied to DDL text
//! and to `information_schema.COLUMNS.COLUMN_TYPE`, so both give equal definitions.
//!
//! Definitions and schema-change records are serde types: they are stored as JSON in a
//! compacted schema-history topic and in schema-change records (`schemas/schema_change.avsc`
//! describes the record).

use serde::{Deserialize, Serialize};

/// A `db`.`table` name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TableName {
    /// Database (schema) name.
    pub db: String,
    /// Table name.
    pub table: String,
}

impl TableName {
    /// A table name from its parts.
    pub fn new(db: impl Into<String>, table: impl Into<String>) -> Self {
        TableName {
            db: db.into(),
            table: table.into(),
        }
    }
}

impl std::fmt::Display for TableName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`.`{}`", self.db, self.table)
    }
}

/// How a generated column is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Generated {
    /// Computed when read (`VIRTUAL`). Still a column of every `TABLE_MAP` and full row image:
    /// both MySQL and MariaDB log its value with `binlog_row_image=FULL`.
    Virtual,
    /// Stored (`STORED`, MariaDB `PERSISTENT`).
    Stored,
}

/// One column of a tracked table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnDef {
    /// Column name as declared.
    pub name: String,
    /// Normalized lower-case SQL type (see the module documentation).
    pub sql_type: String,
    /// `UNSIGNED` (numeric types; also implied by `ZEROFILL` and `SERIAL`).
    pub unsigned: bool,
    /// ENUM/SET member strings in definition order (empty for other types).
    pub members: Vec<String>,
    /// Character set of character columns (CHAR, VARCHAR, TEXT, ENUM, SET) when known: declared
    /// on the column, implied by its collation, or the table's default. `None` for other types,
    /// and for character columns whose charset is the database's (unknown to DDL text).
    pub charset: Option<String>,
    /// Collation when declared or known (`None`: the charset's default).
    pub collation: Option<String>,
    /// Whether the column accepts NULL.
    pub nullable: bool,
    /// Generated column kind, if generated.
    pub generated: Option<Generated>,
    /// `INVISIBLE` column (still in row images).
    pub invisible: bool,
}

/// A tracked table definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableDef {
    /// Database (schema) name.
    pub db: String,
    /// Table name.
    pub table: String,
    /// Columns in table order (the order of values in row images).
    pub columns: Vec<ColumnDef>,
    /// Primary key column names in key order (empty: no primary key).
    pub primary_key: Vec<String>,
    /// The table's default character set, when known.
    pub default_charset: Option<String>,
    /// The table's default collation, when known.
    pub default_collation: Option<String>,
}

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

impl ColumnDef {
    /// A nullable column of the given normalized type with nothing else set (members are taken
    /// from an `enum(...)`/`set(...)` type).
    pub fn new(name: impl Into<String>, sql_type: impl Into<String>) -> Self {
        let sql_type = sql_type.into();
        let unsigned = sql_type.ends_with(" unsigned");
        ColumnDef {
            name: name.into(),
            members: type_members(&sql_type),
            sql_type,
            unsigned,
            charset: None,
            collation: None,
            nullable: true,
            generated: None,
            invisible: false,
        }
    }

    /// The base type name (`"decimal"` for `"decimal(10,2) unsigned"`).
    pub fn base_type(&self) -> &str {
        base_type(&self.sql_type)
    }

    /// Whether this is a character column (it has a charset).
    pub fn is_character(&self) -> bool {
        is_character_type(self.base_type())
    }

    /// Fills the charset and collation of a character column from a table default where the
    /// column declares none (`CHARACTER SET` with no `COLLATE` keeps the charset's default
    /// collation), and applies what the server does with the result: a `binary` charset turns
    /// CHAR/VARCHAR/TEXT into BINARY/VARBINARY/BLOB.
    pub fn resolve_charset(
        &mut self,
        default_charset: Option<&str>,
        default_collation: Option<&str>,
    ) {
        if !self.is_character() {
            return;
        }
        if self.charset.is_none() {
            if let Some(co) = &self.collation {
                self.charset = charset_of_collation(co).map(str::to_owned);
            }
        }
        if self.charset.is_none() && self.collation.is_none() {
            let cs = default_charset.map(str::to_owned).or_else(|| {
                default_collation
                    .and_then(charset_of_collation)
                    .map(str::to_owned)
            });
            if let Some(cs) = cs {
                let co = default_collation.filter(|co| charset_of_collation(co) == Some(&cs));
                self.collation = co.map(str::to_owned);
                self.charset = Some(cs);
            }
        }
        if self.base_type() == "text" {
            // TEXT(n): the smallest TEXT type for n characters of the charset.
            if let Some(&n) = type_args(&self.sql_type).first() {
                let mb = self.charset.as_deref().map_or(4, mb_max_len);
                self.sql_type = text_type_for(n.saturating_mul(mb), false).to_owned();
            }
        }
        if self.charset.as_deref() == Some("binary") {
            let args = type_args_text(&self.sql_type).map(str::to_owned);
            let new_base = match self.base_type() {
                "char" => Some("binary"),
                "varchar" => Some("varbinary"),
                "tinytext" => Some("tinyblob"),
                "text" => Some("blob"),
                "mediumtext" => Some("mediumblob"),
                "longtext" => Some("longblob"),
                _ => None,
            };
            if let Some(b) = new_base {
                self.sql_type = match args {
                    Some(a) => format!("{b}({a})"),
                    None => b.to_owned(),
                };
                self.charset = None;
                self.collation = None;
            }
        }
    }
}

impl TableDef {
    /// An empty definition of `db`.`table`.
    pub fn new(db: impl Into<String>, table: impl Into<String>) -> Self {
        TableDef {
            db: db.into(),
            table: table.into(),
            columns: Vec::new(),
            primary_key: Vec::new(),
            default_charset: None,
            default_collation: None,
        }
    }

    /// The table's name.
    pub fn name(&self) -> TableName {
        TableName::new(&self.db, &self.table)
    }

    /// Index of a column (names compare case-insensitively, as the servers do).
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))
    }

    /// Sets the table default charset where the DDL did not give one (the caller knows the
    /// database's default, e.g. from `information_schema.SCHEMATA`) and fills it into every
    /// character column that has none.
    pub fn fill_default_charset(&mut self, charset: &str, collation: Option<&str>) {
        if self.default_charset.is_none() && self.default_collation.is_none() {
            self.default_charset = Some(charset.to_owned());
            self.default_collation = collation.map(str::to_owned);
        }
        let (dc, dco) = (self.default_charset.clone(), self.default_collation.clone());
        for c in &mut self.columns {
            c.resolve_charset(dc.as_deref(), dco.as_deref());
        }
    }

    /// Whether two definitions describe the same table, reading an absent collation or table
    /// default charset as "not stated" (DDL text leaves out a charset's default collation and
    /// may leave out the table's charset; information_schema names both). Everything else
    /// (names, types, members, column charsets, nullability, generated and invisible flags, the
    /// primary key) must be equal.
    pub fn agrees_with(&self, other: &TableDef) -> bool {
        fn stated<T: PartialEq>(a: &Option<T>, b: &Option<T>) -> bool {
            a.is_none() || b.is_none() || a == b
        }
        self.db == other.db
            && self.table == other.table
            && self.primary_key == other.primary_key
            && stated(&self.default_charset, &other.default_charset)
            && stated(&self.default_collation, &other.default_collation)
            && self.columns.len() == other.columns.len()
            && self.columns.iter().zip(&other.columns).all(|(a, b)| {
                ColumnDef {
                    collation: b.collation.clone(),
                    ..a.clone()
                } == *b
                    && stated(&a.collation, &b.collation)
            })
    }

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

/// What a schema-change record reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum ChangeKind {
    /// A table was created (`before` is null).
    Create,
    /// A table's definition changed.
    Alter,
    /// A table was dropped (`after` is null).
    Drop,
    /// A table was renamed (`before` has the old name, `after` the new one).
    Rename,
    /// A table was emptied (`before` and `after` are equal).
    Truncate,
}

/// Where in the binlog a DDL statement was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeSource {
    /// Binlog file of the statement.
    pub file: String,
    /// Position of the statement's event in that file.
    pub pos: u64,
    /// The statement's GTID, if the server logs GTIDs.
    pub gtid: Option<String>,
    /// Server id of the server that wrote the statement.
    pub server_id: u32,
    /// Event time (milliseconds since the epoch).
    pub ts_ms: u64,
}

/// A schema change of one table, as written to Kafka (described by
/// `schemas/schema_change.avsc`). For a `RENAME`, `db`/`table` name the new table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaChangeRecord {
    /// Binlog position of the DDL.
    pub source: ChangeSource,
    /// Database of the changed table.
    pub db: String,
    /// The changed table.
    pub table: String,
    /// The DDL statement as logged.
    pub ddl: String,
    /// What happened.
    pub kind: ChangeKind,
    /// Definition before the change (null for CREATE).
    pub before: Option<TableDef>,
    /// Definition after the change (null for DROP).
    pub after: Option<TableDef>,
}

// ---------------------------------------------------------------------------
// Helpers on normalized type text and charsets.
// ---------------------------------------------------------------------------

/// The base type name of a normalized type (`"decimal"` for `"decimal(10,2) unsigned"`).
pub fn base_type(sql_type: &str) -> &str {
    let end = sql_type.find(['(', ' ']).unwrap_or(sql_type.len());
    sql_type.get(..end).unwrap_or(sql_type)
}

/// The text between the type's parentheses (`"10,2"` for `"decimal(10,2)"`).
fn type_args_text(sql_type: &str) -> Option<&str> {
    let open = sql_type.find('(')?;
    let close = sql_type.rfind(')')?;
    sql_type.get(open + 1..close)
}

/// The numeric arguments of a normalized type (`[10, 2]` for `"decimal(10,2)"`; empty for
/// ENUM/SET and types without arguments).
pub fn type_args(sql_type: &str) -> Vec<u64> {
    if matches!(base_type(sql_type), "enum" | "set") {
        return Vec::new();
    }
    type_args_text(sql_type)
        .map(|a| a.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// Member strings of a normalized `enum('a','b')`/`set(...)` type (`''` and `\\` unescaped).
fn type_members(sql_type: &str) -> Vec<String> {
    if !matches!(base_type(sql_type), "enum" | "set") {
        return Vec::new();
    }
    let Some(inner) = type_args_text(sql_type) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\'' {
            continue;
        }
        let mut s = String::new();
        while let Some(c) = chars.next() {
            match c {
                '\'' if chars.peek() == Some(&'\'') => {
                    chars.next();
                    s.push('\'');
                }
                '\'' => break,
                '\\' => {
                    if let Some(n) = chars.next() {
                        s.push(n);
                    }
                }
                other => s.push(other),
            }
        }
        out.push(s);
    }
    out
}

/// Renders ENUM/SET members as the normalized type text does (`'a','b''c'`).
pub(crate) fn quote_members(members: &[String]) -> String {
    members
        .iter()
        .map(|m| format!("'{}'", m.replace('\\', "\\\\").replace('\'', "''")))
        .collect::<Vec<_>>()
        .join(",")
}

/// Whether a base type is a character type (has a charset).
pub fn is_character_type(base: &str) -> bool {
    matches!(
        base,
        "char" | "varchar" | "tinytext" | "text" | "mediumtext" | "longtext" | "enum" | "set"
    )
}

/// Normalizes a charset name (`utf8` is `utf8mb3` on current servers).
pub fn normalize_charset(name: &str) -> String {
    let n = name.to_ascii_lowercase();
    if n == "utf8" {
        "utf8mb3".to_owned()
    } else {
        n
    }
}

/// The charset a collation belongs to, from its name (`latin1_bin` → `latin1`); `None` for
/// names without a known charset prefix (MariaDB's `uca1400_ai_ci`).
pub fn charset_of_collation(collation: &str) -> Option<&'static str> {
    let c = collation.to_ascii_lowercase();
    if c == "binary" {
        return Some("binary");
    }
    let prefix = c.split('_').next().unwrap_or("");
    KNOWN_CHARSETS
        .iter()
        .find(|(name, _, _)| *name == prefix)
        .map(|(name, _, _)| *name)
        .or(if prefix == "utf8" {
            Some("utf8mb3")
        } else {
            None
        })
}

/// Charsets sluice knows: name, a collation id of it (what the row decoder needs to pick the
/// decoding), and the maximum bytes per character.
const KNOWN_CHARSETS: &[(&str, u16, u64)] = &[
    ("big5", 1, 2),
    ("dec8", 3, 1),
    ("cp850", 4, 1),
    ("hp8", 6, 1),
    ("koi8r", 7, 1),
    ("latin1", 8, 1),
    ("latin2", 9, 1),
    ("swe7", 10, 1),
    ("ascii", 11, 1),
    ("ujis", 12, 3),
    ("sjis", 13, 2),
    ("hebrew", 16, 1),
    ("tis620", 18, 1),
    ("euckr", 19, 2),
    ("koi8u", 22, 1),
    ("gb2312", 24, 2),
    ("greek", 25, 1),
    ("cp1250", 26, 1),
    ("gbk", 28, 2),
    ("latin5", 30, 1),
    ("armscii8", 32, 1),
    ("utf8mb3", 33, 3),
    ("ucs2", 35, 2),
    ("cp866", 36, 1),
    ("keybcs2", 37, 1),
    ("macce", 38, 1),
    ("macroman", 39, 1),
    ("cp852", 40, 1),
    ("latin7", 41, 1),
    ("utf8mb4", 45, 4),
    ("cp1251", 51, 1),
    ("utf16", 54, 4),
    ("utf16le", 56, 4),
    ("cp1256", 57, 1),
    ("cp1257", 59, 1),
    ("utf32", 60, 4),
    ("binary", 63, 1),
    ("geostd8", 92, 1),
    ("cp932", 95, 2),
    ("eucjpms", 97, 3),
    ("gb18030", 248, 4),
];

/// A collation id for a charset name (enough for the row decoder, which only needs the
/// encoding); 0 (decoded as UTF-8) for unknown names.
pub fn charset_id(charset: &str) -> u16 {
    let n = normalize_charset(charset);
    KNOWN_CHARSETS
        .iter()
        .find(|(name, _, _)| *name == n)
        .map_or(0, |(_, id, _)| *id)
}

/// Maximum bytes per character of a charset (4 when unknown).
pub fn mb_max_len(charset: &str) -> u64 {
    let n = normalize_charset(charset);
    KNOWN_CHARSETS
        .iter()
        .find(|(name, _, _)| *name == n)
        .map_or(4, |(_, _, m)| *m)
}

/// The smallest TEXT type (or BLOB type with `blob`) that holds `bytes` bytes.
pub(crate) fn text_type_for(bytes: u64, blob: bool) -> &'static str {
    match (bytes, blob) {
        (0..=255, false) => "tinytext",
        (256..=65_535, false) => "text",
        (65_536..=16_777_215, false) => "mediumtext",
        (_, false) => "longtext",
        (0..=255, true) => "tinyblob",
        (256..=65_535, true) => "blob",
        (65_536..=16_777_215, true) => "mediumblob",
        (_, true) => "longblob",
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

impl TableDef {
    /// The definition a `TABLE_MAP` with full metadata describes, for tables sluice has not
    /// tracked by DDL yet (so a later DDL has a `before`). What the binlog does not log is
    /// approximated: CHAR/VARCHAR lengths in characters assume the charset's widest character
    /// (4 bytes for the UTF-8 family and UTF-16/32, 1 for latin1), TEXT/BLOB columns are named
    /// `text`/`blob` whatever their size class, and no charset name is recorded.
    pub fn from_schema(schema: &crate::schema::TableSchema) -> TableDef {
        let mut def = TableDef::new(schema.db.clone(), schema.table.clone());
        def.columns = schema
            .columns
            .iter()
            .map(|c| {
                let mut col = ColumnDef::new(c.name.clone(), sql_type_of(&c.kind));
                col.nullable = c.nullable;
                col
            })
            .collect();
        def.primary_key = schema
            .primary_key
            .iter()
            .filter_map(|&i| schema.columns.get(i).map(|c| c.name.clone()))
            .collect();
        def
    }
}

/// The normalized SQL type of a column kind (see [`TableDef::from_schema`] for what is
/// approximated).
fn sql_type_of(kind: &crate::schema::ColumnKind) -> String {
    use crate::schema::{charset_kind, CharsetKind, ColumnKind as K};
    let int = |base: &str, unsigned: bool| {
        if unsigned {
            format!("{base} unsigned")
        } else {
            base.to_owned()
        }
    };
    let fsp = |base: &str, fsp: u8| {
        if fsp == 0 {
            base.to_owned()
        } else {
            format!("{base}({fsp})")
        }
    };
    match kind {
        K::TinyInt { unsigned } => int("tinyint", *unsigned),
        K::SmallInt { unsigned } => int("smallint", *unsigned),
        K::MediumInt { unsigned } => int("mediumint", *unsigned),
        K::Int { unsigned } => int("int", *unsigned),
        K::BigInt { unsigned } => int("bigint", *unsigned),
        K::Float => "float".into(),
        K::Double => "double".into(),
        K::Decimal { precision, scale } => format!("decimal({precision},{scale})"),
        K::Date => "date".into(),
        K::Time { fsp: f } => fsp("time", *f),
        K::DateTime { fsp: f } => fsp("datetime", *f),
        K::Timestamp { fsp: f } => fsp("timestamp", *f),
        K::Year => "year".into(),
        K::String {
            charset,
            binary,
            fixed,
            max_bytes,
        } => {
            if *binary {
                format!(
                    "{}({max_bytes})",
                    if *fixed { "binary" } else { "varbinary" }
                )
            } else {
                let width = match charset_kind(*charset) {
                    CharsetKind::Latin1 | CharsetKind::Binary => 1,
                    _ => 4,
                };
                let chars = u32::from(*max_bytes) / width;
                format!("{}({chars})", if *fixed { "char" } else { "varchar" })
            }
        }
        K::Blob { binary, .. } => if *binary { "blob" } else { "text" }.into(),
        K::Enum { values } => format!("enum({})", quote_members(values)),
        K::Set { values } => format!("set({})", quote_members(values)),
        K::Bit { bits } => format!("bit({bits})"),
        K::Json => "json".into(),
        K::Geometry => "geometry".into(),
        K::Vector { dimensions } => match dimensions {
            Some(d) => format!("vector({d})"),
            None => "vector".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def() -> TableDef {
        let mut t = TableDef::new("shop", "orders");
        t.columns = vec![
            ColumnDef {
                nullable: false,
                ..ColumnDef::new("id", "bigint unsigned")
            },
            ColumnDef::new("name", "varchar(20)"),
            ColumnDef::new("note", "text"),
        ];
        t.primary_key = vec!["id".into()];
        t.default_charset = Some("latin1".into());
        t
    }

    fn names(t: &TableDef) -> Vec<&str> {
        t.columns.iter().map(|c| c.name.as_str()).collect()
    }

    #[test]
    fn add_drop_modify_change_rename() {
        let mut t = def();
        t.apply(&AlterOp::AddColumn {
            def: ColumnDef::new("w", "int"),
            position: ColumnPosition::After("id".into()),
            if_not_exists: false,
        })
        .unwrap();
        t.apply(&AlterOp::AddColumn {
            def: ColumnDef::new("c", "char(3)"),
            position: ColumnPosition::First,
            if_not_exists: false,
        })
        .unwrap();
        assert_eq!(names(&t), ["c", "id", "w", "name", "note"]);
        assert_eq!(
            t.columns[0].charset.as_deref(),
            Some("latin1"),
            "table default"
        );
        t.apply(&AlterOp::DropColumn {
            name: "W".into(),
            if_exists: false,
        })
        .unwrap();
        t.apply(&AlterOp::ModifyColumn {
            def: ColumnDef::new("NAME", "varchar(40)"),
            position: ColumnPosition::Last,
            if_exists: false,
        })
        .unwrap();
        assert_eq!(
            names(&t),
            ["c", "id", "NAME", "note"],
            "MODIFY takes the new spelling"
        );
        t.apply(&AlterOp::ChangeColumn {
            old: "id".into(),
            def: ColumnDef::new("order_id", "bigint unsigned"),
            position: ColumnPosition::After("note".into()),
            if_exists: false,
        })
        .unwrap();
        assert_eq!(names(&t), ["c", "NAME", "note", "order_id"]);
        assert_eq!(t.primary_key, ["order_id"], "the key follows the rename");
        assert!(!t.columns[3].nullable, "key columns are NOT NULL");
        t.apply(&AlterOp::RenameColumn {
            old: "note".into(),
            new: "remark".into(),
        })
        .unwrap();
        t.apply(&AlterOp::DropColumn {
            name: "order_id".into(),
            if_exists: false,
        })
        .unwrap();
        assert!(t.primary_key.is_empty());
        t.apply(&AlterOp::AddPrimaryKey(vec!["c".into(), "name".into()]))
            .unwrap();
        assert_eq!(t.primary_key, ["c", "NAME"]);
        t.apply(&AlterOp::DropPrimaryKey).unwrap();
        assert!(t.primary_key.is_empty());
        t.apply(&AlterOp::RenameTo(TableName::new("shop", "o2")))
            .unwrap();
        assert_eq!(t.name(), TableName::new("shop", "o2"));
    }

    #[test]
    fn errors_name_table_and_column() {
        let mut t = def();
        let e = t
            .apply(&AlterOp::DropColumn {
                name: "nope".into(),
                if_exists: false,
            })
            .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("`shop`.`orders`") && msg.contains("`nope`"),
            "{msg}"
        );
        assert!(t
            .apply(&AlterOp::DropColumn {
                name: "nope".into(),
                if_exists: true,
            })
            .is_ok());
        let e = t
            .apply(&AlterOp::AddColumn {
                def: ColumnDef::new("ID", "int"),
                position: ColumnPosition::Last,
                if_not_exists: false,
            })
            .unwrap_err();
        assert!(matches!(e, DdlError::DuplicateColumn { .. }), "{e}");
        let e = t
            .apply(&AlterOp::AddColumn {
                def: ColumnDef::new("x", "int"),
                position: ColumnPosition::After("ghost".into()),
                if_not_exists: false,
            })
            .unwrap_err();
        assert!(e.to_string().contains("`ghost`"), "{e}");
        let e = t
            .apply(&AlterOp::ModifyColumn {
                def: ColumnDef::new("name", "int"),
                position: ColumnPosition::After("ghost".into()),
                if_exists: false,
            })
            .unwrap_err();
        assert!(e.to_string().contains("`ghost`"), "{e}");
        assert_eq!(
            names(&t),
            ["id", "name", "note"],
            "a failed op leaves the columns"
        );
        let mut one = TableDef::new("d", "t");
        one.columns = vec![ColumnDef::new("a", "int")];
        assert!(matches!(
            one.apply(&AlterOp::DropColumn {
                name: "a".into(),
                if_exists: false
            }),
            Err(DdlError::LastColumn { .. })
        ));
    }

    #[test]
    fn convert_charset_grows_text() {
        let mut t = def();
        t.fill_default_charset("utf8mb4", None);
        assert_eq!(t.columns[1].charset.as_deref(), Some("latin1"));
        t.apply(&AlterOp::ConvertCharset {
            charset: "utf8mb4".into(),
            collation: None,
        })
        .unwrap();
        assert_eq!(t.columns[2].sql_type, "mediumtext");
        assert_eq!(t.columns[1].sql_type, "varchar(20)");
        assert_eq!(t.columns[1].charset.as_deref(), Some("utf8mb4"));
        assert_eq!(t.columns[0].charset, None, "not a character column");
        assert_eq!(t.default_charset.as_deref(), Some("utf8mb4"));
    }

    #[test]
    fn binary_charset_makes_binary_types() {
        for (ty, want) in [
            ("char(4)", "binary(4)"),
            ("varchar(9)", "varbinary(9)"),
            ("text", "blob"),
            ("enum('a')", "enum('a')"),
        ] {
            let mut c = ColumnDef::new("c", ty);
            c.charset = Some("binary".into());
            c.resolve_charset(None, None);
            assert_eq!(c.sql_type, want);
        }
        let mut c = ColumnDef::new("c", "varchar(3)");
        c.collation = Some("utf8mb4_bin".into());
        c.resolve_charset(Some("latin1"), None);
        assert_eq!(c.charset.as_deref(), Some("utf8mb4"), "from the collation");
    }

    #[test]
    fn type_text_helpers() {
        assert_eq!(base_type("decimal(10,2) unsigned"), "decimal");
        assert_eq!(type_args("decimal(10,2) unsigned"), [10, 2]);
        assert_eq!(type_args("enum('1','2')"), Vec::<u64>::new());
        let members = vec!["a".to_string(), "it's".into(), "c,d".into(), "x\\y".into()];
        let ty = format!("enum({})", quote_members(&members));
        assert_eq!(ColumnDef::new("e", ty).members, members);
        assert_eq!(charset_of_collation("utf8_general_ci"), Some("utf8mb3"));
        assert_eq!(charset_of_collation("uca1400_ai_ci"), None);
        assert_eq!(charset_id("UTF8"), 33);
        assert_eq!(mb_max_len("nope"), 4);
    }

    #[test]
    fn agreement_reads_absent_collations_as_unstated() {
        let a = def();
        let mut b = def();
        assert!(a.agrees_with(&b));
        b.columns[1].collation = Some("latin1_swedish_ci".into());
        b.default_collation = Some("latin1_swedish_ci".into());
        assert!(a.agrees_with(&b) && b.agrees_with(&a));
        let mut c = b.clone();
        c.columns[1].collation = Some("latin1_bin".into());
        assert!(!c.agrees_with(&b));
        let mut c = b.clone();
        c.columns[1].charset = Some("utf8mb4".into());
        assert!(!c.agrees_with(&b), "charsets must be equal");
        let mut c = b.clone();
        c.columns[2].sql_type = "mediumtext".into();
        assert!(!c.agrees_with(&b));
        let mut c = b;
        c.primary_key.clear();
        assert!(!c.agrees_with(&a));
    }

    mod avro {
        //! `schemas/schema_change.avsc` describes [`SchemaChangeRecord`] exactly.

        use super::super::*;
        use super::def;
        use apache_avro::reader::datum::GenericDatumReader;
        use apache_avro::schema::Name;
        use apache_avro::writer::datum::GenericDatumWriter;
        use apache_avro::Schema;
        use std::collections::{BTreeSet, HashMap};

        const AVSC: &str = include_str!("../../schemas/schema_change.avsc");

        fn records() -> Vec<SchemaChangeRecord> {
            let before = def();
            let mut after = before.clone();
            after.columns.push(ColumnDef {
                generated: Some(Generated::Stored),
                collation: Some("latin1_bin".into()),
                invisible: true,
                ..ColumnDef::new("e", "enum('a','b''c')")
            });
            after.default_collation = Some("latin1_bin".into());
            let source = ChangeSource {
                file: "mysql-bin.000007".into(),
                pos: 4_294_967_300,
                gtid: Some("3e11fa47-71ca-11e1-9e33-c80aa9429562:23".into()),
                server_id: u32::MAX,
                ts_ms: 1_700_000_000_000,
            };
            let rec =
                |kind, before: Option<TableDef>, after: Option<TableDef>| SchemaChangeRecord {
                    source: source.clone(),
                    db: "shop".into(),
                    table: "orders".into(),
                    ddl: "ALTER TABLE orders ADD e ENUM('a','b''c')".into(),
                    kind,
                    before,
                    after,
                };
            vec![
                rec(ChangeKind::Create, None, Some(before.clone())),
                rec(ChangeKind::Alter, Some(before.clone()), Some(after)),
                rec(ChangeKind::Drop, Some(before.clone()), None),
                rec(
                    ChangeKind::Rename,
                    Some(before.clone()),
                    Some(before.clone()),
                ),
                SchemaChangeRecord {
                    source: ChangeSource {
                        gtid: None,
                        ..source.clone()
                    },
                    ..rec(ChangeKind::Truncate, Some(before.clone()), Some(before))
                },
            ]
        }

        /// Every named type of the schema, so references resolve wherever they are met.
        fn collect(s: &Schema, named: &mut HashMap<Name, Schema>) {
            match s {
                Schema::Record(r) => {
                    named.insert(r.name.clone(), s.clone());
                    for f in &r.fields {
                        collect(&f.schema, named);
                    }
                }
                Schema::Enum(e) => {
                    named.insert(e.name.clone(), s.clone());
                }
                Schema::Array(a) => collect(&a.items, named),
                Schema::Union(u) => u.variants().iter().for_each(|v| collect(v, named)),
                _ => {}
            }
        }

        /// Whether a JSON value is a value of the schema: every field present with a value of
        /// its type, and no other field.
        fn check(
            v: &serde_json::Value,
            s: &Schema,
            named: &HashMap<Name, Schema>,
            at: &str,
        ) -> Result<(), String> {
            let fail = |what: &str| Err(format!("{at}: {what}, found {v}"));
            match s {
                Schema::Ref { name } => match named.get(name) {
                    Some(s) => check(v, s, named, at),
                    None => fail("unresolved reference"),
                },
                Schema::Null if v.is_null() => Ok(()),
                Schema::Boolean if v.is_boolean() => Ok(()),
                Schema::String if v.is_string() => Ok(()),
                Schema::Long if v.as_i64().is_some() => Ok(()),
                Schema::Int if v.as_i64().is_some_and(|x| i32::try_from(x).is_ok()) => Ok(()),
                Schema::Array(a) => match v.as_array() {
                    Some(items) => items
                        .iter()
                        .enumerate()
                        .try_for_each(|(i, x)| check(x, &a.items, named, &format!("{at}[{i}]"))),
                    None => fail("an array"),
                },
                Schema::Enum(e) => match v.as_str() {
                    Some(sym) if e.symbols.iter().any(|x| x == sym) => Ok(()),
                    _ => fail("an enum symbol"),
                },
                Schema::Record(r) => {
                    let Some(obj) = v.as_object() else {
                        return fail("an object");
                    };
                    let fields: BTreeSet<&str> = r.fields.iter().map(|f| f.name.as_str()).collect();
                    let keys: BTreeSet<&str> = obj.keys().map(String::as_str).collect();
                    if fields != keys {
                        return Err(format!(
                            "{at}: record {} has fields {fields:?}, the JSON has {keys:?}",
                            r.name
                        ));
                    }
                    r.fields.iter().try_for_each(|f| {
                        check(&obj[&f.name], &f.schema, named, &format!("{at}.{}", f.name))
                    })
                }
                Schema::Union(u) => {
                    if u.variants()
                        .iter()
                        .any(|variant| check(v, variant, named, at).is_ok())
                    {
                        Ok(())
                    } else {
                        fail("a value of a union branch")
                    }
                }
                _ => fail(&format!("a value of {s:?}")),
            }
        }

        #[test]
        fn json_records_match_the_avsc() {
            let schema = Schema::parse_str(AVSC).expect("schemas/schema_change.avsc parses");
            let mut named = HashMap::new();
            collect(&schema, &mut named);
            for rec in records() {
                let json = serde_json::to_value(&rec).unwrap();
                check(&json, &schema, &named, "record").unwrap();
                let back: SchemaChangeRecord = serde_json::from_value(json).unwrap();
                assert_eq!(back, rec);
            }
            // The check notices an extra field, a missing one and a wrong type.
            let mut json = serde_json::to_value(&records()[1]).unwrap();
            json["extra"] = 1.into();
            assert!(check(&json, &schema, &named, "r").is_err());
            let mut json = serde_json::to_value(&records()[1]).unwrap();
            json["after"]["columns"][0]
                .as_object_mut()
                .unwrap()
                .remove("invisible");
            assert!(check(&json, &schema, &named, "r").is_err());
            let mut json = serde_json::to_value(&records()[1]).unwrap();
            json["source"]["pos"] = "4".into();
            assert!(check(&json, &schema, &named, "r").is_err());
        }

        #[test]
        fn records_round_trip_through_avro_binary() {
            let schema = Schema::parse_str(AVSC).unwrap();
            for rec in records() {
                // The JSON form, read as Avro values of the schema (numbers, strings, maps,
                // nulls resolved into longs, enums, records and union branches).
                let json = serde_json::to_value(&rec).unwrap();
                let value = apache_avro::types::Value::try_from(json)
                    .unwrap()
                    .resolve(&schema)
                    .unwrap_or_else(|e| panic!("{:?}: {e}", rec.kind));
                let bytes = GenericDatumWriter::builder(&schema)
                    .build()
                    .unwrap()
                    .write_value_to_vec(value)
                    .unwrap();
                let read = GenericDatumReader::builder(&schema)
                    .build()
                    .unwrap()
                    .read_value(&mut &bytes[..])
                    .unwrap();
                let back: SchemaChangeRecord = apache_avro::from_value(&read).unwrap();
                assert_eq!(back, rec);
            }
        }
    }

    #[test]
    fn defs_round_trip_as_json() {
        let t = def();
        let j = serde_json::to_string(&t).unwrap();
        assert_eq!(serde_json::from_str::<TableDef>(&j).unwrap(), t);
        let mut c = ColumnDef::new("g", "int");
        c.generated = Some(Generated::Virtual);
        assert!(serde_json::to_string(&c).unwrap().contains("\"VIRTUAL\""));
    }
}
