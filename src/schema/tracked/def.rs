//! The tracked definition types: a table's name ([`TableName`]), its columns ([`ColumnDef`],
//! with [`Generated`]) and the table ([`TableDef`]), with the charset a column resolves to from
//! the table's defaults and the check that two definitions describe the same table.
//!
//! Invariant: column types are normalized type text (see the `tracked` module), and a resolved
//! character column whose charset is `binary` is the matching binary type, with no charset.

use serde::{Deserialize, Serialize};

use super::charsets::{charset_of_collation, mb_max_len};
use super::type_text::{
    base_type, is_character_type, text_type_for, type_args, type_args_text, type_members,
};

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
}
