//! The columns a route writes for one table version ([`Projection`]), derived once from the
//! table's schema and the route's rules, so the JSON and Avro encoders and the Connect
//! schemas all see the same result:
//!
//! | rule                          | schema                                  | value                     |
//! |-------------------------------|-----------------------------------------|---------------------------|
//! | `bigint_unsigned = "long"`    | `BIGINT UNSIGNED` becomes `BIGINT`      | wrapped to a signed long  |
//! | `column_exclude`              | column left out                         | left out                  |
//! | `column_mask` (string column) | becomes a UTF-8 string column           | `chars` × `*` (also NULL) |
//! | `column_hash` (string column) | becomes a UTF-8 string column           | hex digest, NULL stays    |
//!
//! As Debezium's `MaskStrings`, masks and hashes apply to string columns only (CHAR,
//! VARCHAR, TEXT, ENUM, SET); other columns matching a pattern are written unchanged. A hash
//! is the lowercase hex digest of the salt's UTF-8 bytes followed by the value's text, cut to
//! the declared length of a CHAR/VARCHAR column (Debezium's `hash.v2`). Key columns cannot
//! be excluded, masked or hashed (Debezium would keep them unchanged in the key and rewrite
//! them in the value only): such a rule is a definite error naming the column.
//!
//! Values are rewritten one cell at a time as the encoders write them ([`Projection::cell`]):
//! no copy of the row is made.

use std::borrow::Cow;
use std::sync::Arc;

use crate::config::route_rules::{BigintUnsigned, ColumnRewrite, HashAlgorithm, RouteRules};
use crate::config::Secret;
use crate::error::{Error, Result};
use crate::schema::{charset_kind, decode_text, CharsetKind, Column, ColumnKind, TableSchema};
use crate::value::Value;

/// A collation of the `utf8mb4` charset: the charset of rewritten (masked, hashed) columns.
const UTF8MB4_COLLATION: u16 = 45;

/// How one written column's value is derived from the row's value.
#[derive(Debug, Clone)]
enum CellRewrite {
    /// As it is.
    Keep,
    /// `BIGINT UNSIGNED` as a signed long (two's complement wrap).
    WrapUnsigned,
    /// The mask text.
    Mask(Arc<[u8]>),
    /// The digest of salt + text, cut to `max_chars`.
    Hash {
        algorithm: HashAlgorithm,
        salt: Secret<String>,
        /// The source column (for its text form).
        source: Column,
        max_chars: Option<usize>,
    },
}

/// One written column: where its value comes from and how it is rewritten.
#[derive(Debug, Clone)]
struct OutColumn {
    src: usize,
    rewrite: CellRewrite,
}

/// The columns a route writes for a table version: the schema the encoders see and how each
/// of its columns' values comes from a row image of the table.
#[derive(Debug)]
pub struct Projection {
    /// The written columns (names, kinds after rewriting, nullability), in table order.
    pub schema: Arc<TableSchema>,
    /// Indexes of the key columns into `schema.columns`, in key order.
    pub key_idx: Vec<usize>,
    cols: Vec<OutColumn>,
    /// No column is left out or rewritten: cells are the row's values.
    identity: bool,
}

impl Projection {
    /// Derives the written columns of `schema` under `rules`; `key_idx` are the key columns
    /// (indexes into `schema.columns`). A rule on a key column is a definite error.
    pub fn new(schema: &Arc<TableSchema>, key_idx: &[usize], rules: &RouteRules) -> Result<Self> {
        let wrap = rules.bigint_unsigned == BigintUnsigned::Long;
        if rules.columns.is_empty()
            && !(wrap
                && schema
                    .columns
                    .iter()
                    .any(|c| c.kind == ColumnKind::BigInt { unsigned: true }))
        {
            return Ok(Projection {
                schema: schema.clone(),
                key_idx: key_idx.to_vec(),
                cols: (0..schema.columns.len())
                    .map(|src| OutColumn {
                        src,
                        rewrite: CellRewrite::Keep,
                    })
                    .collect(),
                identity: true,
            });
        }
        let (db, table) = (&schema.db, &schema.table);
        let mut columns = Vec::with_capacity(schema.columns.len());
        let mut cols = Vec::with_capacity(schema.columns.len());
        let mut out_index = vec![None; schema.columns.len()];
        for (src, col) in schema.columns.iter().enumerate() {
            let is_key = key_idx.contains(&src);
            let key_error = |what: &str| {
                Error::definite(format!(
                    "column `{}` of {db}.{table} is a key column and cannot be {what}; \
                     change the route's patterns so they do not match it (or choose other \
                     `key_columns`)",
                    col.name
                ))
            };
            if rules.columns.excludes(db, table, &col.name) {
                if is_key {
                    return Err(key_error("excluded (`column_exclude`)"));
                }
                continue;
            }
            let mut out = col.clone();
            let rewrite = match rules.columns.rewrite(db, table, &col.name) {
                Some(r) if is_string_column(&col.kind) => {
                    if is_key {
                        return Err(key_error(
                            "masked or hashed (`column_mask` / `column_hash`)",
                        ));
                    }
                    out.kind = ColumnKind::String {
                        charset: UTF8MB4_COLLATION,
                        binary: false,
                        fixed: false,
                        max_bytes: u16::MAX,
                    };
                    match r {
                        ColumnRewrite::Mask(n) => CellRewrite::Mask(vec![b'*'; *n].into()),
                        ColumnRewrite::Hash { algorithm, salt } => {
                            if let Err(e) = openssl::hash::Hasher::new(algorithm.digest()) {
                                return Err(Error::definite(format!(
                                    "column_hash of {db}.{table}.{}: the {algorithm:?} digest \
                                     is not available in this OpenSSL: {e}; choose another \
                                     algorithm",
                                    col.name
                                )));
                            }
                            CellRewrite::Hash {
                                algorithm: *algorithm,
                                salt: salt.clone(),
                                source: col.clone(),
                                max_chars: declared_chars(&col.kind),
                            }
                        }
                    }
                }
                _ if wrap && col.kind == (ColumnKind::BigInt { unsigned: true }) => {
                    out.kind = ColumnKind::BigInt { unsigned: false };
                    CellRewrite::WrapUnsigned
                }
                _ => CellRewrite::Keep,
            };
            out_index[src] = Some(columns.len());
            columns.push(out);
            cols.push(OutColumn { src, rewrite });
        }
        let key_idx: Vec<usize> = key_idx.iter().filter_map(|&i| out_index[i]).collect();
        let primary_key = schema
            .primary_key
            .iter()
            .filter_map(|&i| out_index.get(i).copied().flatten())
            .collect();
        Ok(Projection {
            schema: Arc::new(TableSchema {
                db: db.clone(),
                table: table.clone(),
                columns,
                primary_key,
            }),
            key_idx,
            cols,
            identity: false,
        })
    }

    /// The value of written column `i` for a row image of the table; `None` when the image
    /// is shorter than the table.
    #[inline]
    pub fn cell<'r>(&self, row: &'r [Value], i: usize) -> Option<Cow<'r, Value>> {
        if self.identity {
            return row.get(i).map(Cow::Borrowed);
        }
        let c = self.cols.get(i)?;
        let v = row.get(c.src)?;
        Some(match (&c.rewrite, v) {
            (_, Value::Missing) | (CellRewrite::Keep, _) => Cow::Borrowed(v),
            (CellRewrite::WrapUnsigned, Value::UInt(u)) => Cow::Owned(Value::Int(*u as i64)),
            (CellRewrite::WrapUnsigned, _) => Cow::Borrowed(v),
            (CellRewrite::Mask(mask), _) => Cow::Owned(Value::Bytes(mask.to_vec())),
            (CellRewrite::Hash { .. }, Value::Null) => Cow::Borrowed(v),
            (
                CellRewrite::Hash {
                    algorithm,
                    salt,
                    source,
                    max_chars,
                },
                _,
            ) => Cow::Owned(match column_text(source, v) {
                Some(text) => Value::Bytes(hash_hex(*algorithm, salt.expose(), &text, *max_chars)),
                None => Value::Null,
            }),
        })
    }
}

/// Whether masks and hashes apply to a column of this kind: the kinds Debezium's MySQL
/// connector gives a character JDBC type (CHAR, VARCHAR, TEXT, ENUM, SET).
fn is_string_column(kind: &ColumnKind) -> bool {
    match kind {
        ColumnKind::String { binary, .. } | ColumnKind::Blob { binary, .. } => !binary,
        ColumnKind::Enum { .. } | ColumnKind::Set { .. } => true,
        _ => false,
    }
}

/// The declared length in characters of a CHAR/VARCHAR column (the binlog logs bytes:
/// divided by the charset's bytes per character); `None` for TEXT, ENUM, SET and charsets
/// whose width is not known here.
fn declared_chars(kind: &ColumnKind) -> Option<usize> {
    let ColumnKind::String {
        charset, max_bytes, ..
    } = kind
    else {
        return None;
    };
    let width = match charset_kind(*charset) {
        CharsetKind::Latin1 => 1,
        CharsetKind::Utf8 => match *charset {
            11 | 65 => 1,                        // ascii
            33 | 76 | 83 | 192..=215 | 223 => 3, // utf8mb3
            _ => 4,                              // utf8mb4
        },
        CharsetKind::Utf16Be => match *charset {
            35 | 90 | 128..=151 | 159 => 2, // ucs2
            _ => 4,
        },
        CharsetKind::Utf16Le | CharsetKind::Utf32Be => 4,
        CharsetKind::Binary | CharsetKind::Other => return None,
    };
    Some(usize::from(*max_bytes) / width)
}

/// The text of a string column's value, as Debezium hashes it (`toString()` of the string
/// it writes): the decoded text, the ENUM member, the SET members joined by commas.
fn column_text<'v>(col: &Column, v: &'v Value) -> Option<Cow<'v, str>> {
    match (&col.kind, v) {
        (
            ColumnKind::String { charset, .. } | ColumnKind::Blob { charset, .. },
            Value::Bytes(b),
        ) => Some(decode_text(*charset, b)),
        (ColumnKind::Enum { values }, Value::Enum(idx)) => Some(Cow::Owned(
            usize::from(*idx)
                .checked_sub(1)
                .and_then(|i| values.get(i))
                .cloned()
                .unwrap_or_default(),
        )),
        (ColumnKind::Set { values }, Value::Set(mask)) => {
            let members: Vec<&str> = values
                .iter()
                .enumerate()
                .take(64)
                .filter(|(i, _)| mask & (1u64 << i) != 0)
                .map(|(_, s)| s.as_str())
                .collect();
            Some(Cow::Owned(members.join(",")))
        }
        _ => None,
    }
}

/// Lowercase hex of the digest of `salt` then `text` (both UTF-8), cut to `max_chars`.
pub fn hash_hex(
    algorithm: HashAlgorithm,
    salt: &str,
    text: &str,
    max_chars: Option<usize>,
) -> Vec<u8> {
    let digest = openssl::hash::Hasher::new(algorithm.digest()).and_then(|mut h| {
        h.update(salt.as_bytes())?;
        h.update(text.as_bytes())?;
        h.finish()
    });
    // The digests listed in HashAlgorithm are built into OpenSSL; an empty value if the
    // library was built without one.
    let digest = digest.map(|d| d.to_vec()).unwrap_or_default();
    let mut hex = Vec::with_capacity(digest.len() * 2);
    for b in digest {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        hex.push(DIGITS[usize::from(b >> 4)]);
        hex.push(DIGITS[usize::from(b & 15)]);
    }
    if let Some(n) = max_chars {
        hex.truncate(n);
    }
    hex
}

#[cfg(test)]
#[path = "projection_tests.rs"]
mod tests;
