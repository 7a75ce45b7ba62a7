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

mod alter;
mod change;
mod charsets;
mod def;
mod from_schema;
#[cfg(test)]
mod tests;
mod type_text;

pub use self::alter::{AlterOp, ColumnPosition, DdlError};
pub use self::change::{ChangeKind, ChangeSource, SchemaChangeRecord};
pub use self::charsets::{charset_id, charset_of_collation, mb_max_len, normalize_charset};
pub use self::def::{ColumnDef, Generated, TableDef, TableName};
pub use self::type_text::{base_type, is_character_type, type_args};
pub(crate) use self::type_text::{quote_members, text_type_for};
