//! A table map's optional metadata expanded to one entry per column ([`MapMetadata`]), and the
//! [`ColumnFacts`] of each column: signedness (with YEAR's bit), charsets (counting character
//! columns the way MySQL or MariaDB does), ENUM/SET member strings, vector dimensions and the
//! primary key.
//!
//! Invariant: every per-column list has one entry per table-map column, in table order; a field
//! the table map does not log stays `None`, so that a tracked definition can supply it.

use super::column::{decode_text, BINARY_CHARSET};
use super::error::SchemaError;
use super::table::ServerFlavor;
use crate::binlog::table_map::{OptionalMetadata, RawColumn, RawTableMap, RealType};

/// What a column needs beyond its binlog type and type metadata.
#[derive(Debug, Clone, Default)]
pub(super) struct ColumnFacts {
    pub(super) name: String,
    pub(super) unsigned: bool,
    /// Collation id of a character column (0: unknown).
    pub(super) charset: u16,
    /// Collation id of an ENUM/SET column's member strings (0: unknown).
    pub(super) es_charset: u16,
    /// ENUM/SET member strings.
    pub(super) members: Vec<String>,
    /// VECTOR dimensions, if known.
    pub(super) dimensions: Option<u32>,
    /// Whether a spatial column is a POINT, if known (GEOMETRY_TYPE, or the tracked type).
    pub(super) point: Option<bool>,
    /// Whether a `BINARY(16)` column is MariaDB's UUID (known from the tracked type only).
    pub(super) uuid: bool,
    /// Whether a `BINARY(16)` / `BINARY(4)` column is MariaDB's INET6 / INET4 (known from the
    /// tracked type only).
    pub(super) inet: bool,
    /// Whether a `VARBINARY(4n)` column is MariaDB's VECTOR(n) (known from the tracked type
    /// only).
    pub(super) vector: bool,
}

/// A table map's optional metadata expanded to one entry per column; `None` for a field the
/// table map does not log.
#[derive(Debug, Default)]
pub(super) struct MapMetadata {
    pub(super) unsigned: Option<Vec<bool>>,
    pub(super) charsets: Option<Vec<Option<u16>>>,
    pub(super) es_charsets: Option<Vec<Option<u16>>>,
    pub(super) members: Option<Vec<Vec<String>>>,
    dims: Vec<Option<u32>>,
    /// Per column: whether a spatial column is a POINT, if GEOMETRY_TYPE is logged.
    points: Vec<Option<bool>>,
    pub(super) primary_key: Option<Vec<usize>>,
}

impl MapMetadata {
    /// Rejects columns of unsupported types (named by `name_of`), then expands the metadata.
    pub(super) fn read(
        raw: &RawTableMap,
        opt: OptionalMetadata,
        flavor: ServerFlavor,
        name_of: impl Fn(usize) -> Option<String>,
    ) -> Result<Self, SchemaError> {
        for (index, col) in raw.columns.iter().enumerate() {
            if let RealType::Unsupported(detail) = col.real {
                return Err(SchemaError::UnsupportedType {
                    db: raw.db.clone(),
                    table: raw.table.clone(),
                    index,
                    column: name_of(index).unwrap_or_else(|| format!("@{}", index + 1)),
                    type_code: col.type_code,
                    detail,
                });
            }
        }
        let malformed = |d: String| raw.malformed(d);
        let unsigned = match opt.signedness.as_deref() {
            Some(bits) => Some(signedness(raw, Some(bits)).map_err(malformed)?),
            None => None,
        };
        let charsets = if opt.default_charset.is_some() || opt.column_charset.is_some() {
            Some(char_charsets(raw, &opt, flavor).map_err(malformed)?)
        } else {
            None
        };
        let es_charsets =
            if opt.enum_set_default_charset.is_some() || opt.enum_set_column_charset.is_some() {
                Some(enum_set_charsets(raw, &opt).map_err(malformed)?)
            } else {
                None
            };
        let members = if opt.enum_values.is_some()
            || opt.set_values.is_some()
            || opt.column_names.is_some()
        {
            let mut enum_values = opt.enum_values.unwrap_or_default().into_iter();
            let mut set_values = opt.set_values.unwrap_or_default().into_iter();
            let es = es_charsets.as_deref();
            Some(
                raw.columns
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let cs = es.and_then(|e| e.get(i).copied().flatten()).unwrap_or(0);
                        match c.real {
                            RealType::Enum { .. } => member_strings(enum_values.next(), cs),
                            RealType::Set { .. } => member_strings(set_values.next(), cs),
                            _ => Vec::new(),
                        }
                    })
                    .collect(),
            )
        } else {
            None
        };
        let mut dims_it = opt.vector_dims.unwrap_or_default().into_iter();
        let dims = raw
            .columns
            .iter()
            .map(|c| match c.real {
                RealType::Vector { .. } => dims_it.next().and_then(|d| u32::try_from(d).ok()),
                _ => None,
            })
            .collect();
        let logged_geometry = opt.geometry_types.is_some();
        let mut geometry_it = opt.geometry_types.unwrap_or_default().into_iter();
        let points = raw
            .columns
            .iter()
            .map(|c| match c.real {
                RealType::Geometry { .. } if logged_geometry => {
                    geometry_it.next().map(|t| t == GEOMETRY_TYPE_POINT)
                }
                _ => None,
            })
            .collect();
        let primary_key = opt.simple_pk.or(opt.pk_with_prefix);
        Ok(MapMetadata {
            unsigned,
            charsets,
            es_charsets,
            members,
            dims,
            points,
            primary_key,
        })
    }

    /// The facts of column `i` as the table map logs them (defaults where it does not).
    pub(super) fn facts(&self, i: usize, name: String) -> ColumnFacts {
        let at = |v: &Option<Vec<Option<u16>>>| {
            v.as_ref()
                .and_then(|v| v.get(i).copied().flatten())
                .unwrap_or(0)
        };
        ColumnFacts {
            name,
            unsigned: self
                .unsigned
                .as_ref()
                .and_then(|u| u.get(i).copied())
                .unwrap_or(false),
            charset: at(&self.charsets),
            es_charset: at(&self.es_charsets),
            members: self
                .members
                .as_ref()
                .and_then(|m| m.get(i).cloned())
                .unwrap_or_default(),
            dimensions: self.dims.get(i).copied().flatten(),
            point: self.points.get(i).copied().flatten(),
            uuid: false,
            inet: false,
            vector: false,
        }
    }
}

/// The GEOMETRY_TYPE value of a POINT column (MySQL's `Field::GEOM_POINT`).
const GEOMETRY_TYPE_POINT: u64 = 1;

fn member_strings(values: Option<Vec<Vec<u8>>>, charset: u16) -> Vec<String> {
    values
        .unwrap_or_default()
        .into_iter()
        .map(|v| decode_text(charset, &v).into_owned())
        .collect()
}

/// The column types that get a SIGNEDNESS bit, YEAR (13) aside; see [`signedness`].
pub(crate) fn is_numeric_type(t: u8) -> bool {
    matches!(t, 0 | 1 | 2 | 3 | 4 | 5 | 8 | 9 | 246)
}

/// Per-column UNSIGNED flags from the SIGNEDNESS field (MSB-first bits, one per
/// numeric column).  YEAR columns have a bit too (MariaDB 10.11 and MySQL 9.7 both log
/// the bits 1, 0, 1 for a table `(y YEAR, a INT, b INT UNSIGNED)`; mysql_common assumes
/// the same); a field whose length only fits without them is read without them.
pub(super) fn signedness(raw: &RawTableMap, bits: Option<&[u8]>) -> Result<Vec<bool>, String> {
    let n = raw.columns.len();
    let Some(bits) = bits else {
        return Ok(vec![false; n]);
    };
    let numeric = |with_year: bool| {
        raw.columns
            .iter()
            .filter(|c| is_numeric_type(c.type_code) || (with_year && c.type_code == 13))
            .count()
    };
    let without_year = numeric(false);
    let with_year = numeric(true);
    let include_year = if bits.len() == with_year.div_ceil(8) {
        true
    } else if bits.len() == without_year.div_ceil(8) {
        false
    } else {
        return Err(format!(
            "SIGNEDNESS has {} bytes for {} numeric columns",
            bits.len(),
            without_year
        ));
    };
    let mut out = vec![false; n];
    let mut k = 0usize;
    for (i, c) in raw.columns.iter().enumerate() {
        if is_numeric_type(c.type_code) || (include_year && c.type_code == 13) {
            let byte = bits.get(k / 8).copied().unwrap_or(0);
            if let Some(slot) = out.get_mut(i) {
                *slot = byte & (0x80 >> (k % 8)) != 0;
            }
            k += 1;
        }
    }
    Ok(out)
}

/// Expands a charset field (default+exceptions or one per column) to `count` ids.
fn expand_charsets(
    default: Option<&(u16, Vec<(usize, u16)>)>,
    per_column: Option<&Vec<u16>>,
    count: usize,
) -> Result<Option<Vec<u16>>, String> {
    if let Some(list) = per_column {
        if list.len() != count {
            return Err(format!(
                "COLUMN_CHARSET lists {} charsets for {} columns",
                list.len(),
                count
            ));
        }
        return Ok(Some(list.clone()));
    }
    if let Some((def, exceptions)) = default {
        let mut out = vec![*def; count];
        for &(idx, cs) in exceptions {
            match out.get_mut(idx) {
                Some(slot) => *slot = cs,
                None => {
                    return Err(format!(
                        "DEFAULT_CHARSET exception for column {idx} of {count}"
                    ))
                }
            }
        }
        return Ok(Some(out));
    }
    Ok(None)
}

/// Charset of every character column (None for other columns).
fn char_charsets(
    raw: &RawTableMap,
    opt: &OptionalMetadata,
    flavor: ServerFlavor,
) -> Result<Vec<Option<u16>>, String> {
    // MariaDB counts GEOMETRY columns as character columns; MySQL counts VECTOR columns
    // (MySQL 9: a table `(a VARCHAR(3), v VECTOR(3), b VARCHAR(3))` logs three charsets).
    let is_char = |c: &RawColumn, mariadb: bool| {
        matches!(
            c.real,
            RealType::VarChar { .. } | RealType::Char { .. } | RealType::Blob { .. }
        ) || (mariadb && matches!(c.real, RealType::Geometry { .. }))
            || (!mariadb && matches!(c.real, RealType::Vector { .. }))
    };
    let has_vector = raw
        .columns
        .iter()
        .any(|c| matches!(c.real, RealType::Vector { .. }));
    let geometry_is_char = match flavor {
        ServerFlavor::MySql => false,
        ServerFlavor::MariaDb => true,
        ServerFlavor::Auto => {
            let mysql_count = raw.columns.iter().filter(|c| is_char(c, false)).count();
            let maria_count = raw.columns.iter().filter(|c| is_char(c, true)).count();
            if mysql_count == maria_count || opt.column_visibility || has_vector {
                // No GEOMETRY (or VECTOR) columns, COLUMN_VISIBILITY (only MySQL >= 8.0.23
                // logs it) or a VECTOR column (only MySQL has the type).
                false
            } else if let Some(list) = &opt.column_charset {
                list.len() == maria_count
            } else if let Some(default) = &opt.default_charset {
                // An exception index beyond MySQL's count proves MariaDB; otherwise pick
                // MariaDB when its reading gives every GEOMETRY column the `binary`
                // charset, as MariaDB always does.
                default.1.iter().any(|&(idx, _)| idx >= mysql_count)
                    || expand_charsets(Some(default), None, maria_count)
                        .ok()
                        .flatten()
                        .is_some_and(|list| {
                            raw.columns
                                .iter()
                                .filter(|c| is_char(c, true))
                                .zip(list)
                                .filter(|(c, _)| matches!(c.real, RealType::Geometry { .. }))
                                .all(|(_, cs)| cs == BINARY_CHARSET)
                        })
            } else {
                false
            }
        }
    };
    spread_charsets(
        raw,
        opt.default_charset.as_ref(),
        opt.column_charset.as_ref(),
        |c| is_char(c, geometry_is_char),
    )
}

/// The charsets of `default`/`per_column` given to the columns `takes` accepts, in order
/// (None for the other columns, and for every column when neither list was logged).
fn spread_charsets(
    raw: &RawTableMap,
    default: Option<&(u16, Vec<(usize, u16)>)>,
    per_column: Option<&Vec<u16>>,
    takes: impl Fn(&RawColumn) -> bool,
) -> Result<Vec<Option<u16>>, String> {
    let count = raw.columns.iter().filter(|c| takes(c)).count();
    let Some(list) = expand_charsets(default, per_column, count)? else {
        return Ok(vec![None; raw.columns.len()]);
    };
    let mut it = list.into_iter();
    Ok(raw
        .columns
        .iter()
        .map(|c| if takes(c) { it.next() } else { None })
        .collect())
}

/// Charset of every ENUM/SET column (None for other columns).
fn enum_set_charsets(
    raw: &RawTableMap,
    opt: &OptionalMetadata,
) -> Result<Vec<Option<u16>>, String> {
    spread_charsets(
        raw,
        opt.enum_set_default_charset.as_ref(),
        opt.enum_set_column_charset.as_ref(),
        |c| matches!(c.real, RealType::Enum { .. } | RealType::Set { .. }),
    )
}
