//! The `TABLE_MAP` event parser: an event body read into a [`RawTableMap`] (table id, names,
//! every column's type resolved to its storage format, [`RealType`], and the nullability bits),
//! and its optional metadata block into an [`OptionalMetadata`] (the TLV fields this crate uses).
//!
//! Shared with the row decoder (`crate::binlog::rows`), so both agree on types and metadata.
//! Invariant: every read is bounds-checked, so malformed or truncated input is a
//! [`SchemaError::Malformed`], never a panic; a type this crate cannot decode is kept as
//! [`RealType::Unsupported`] for the schema builders to reject.

use mysql_common::binlog::events::TableMapEvent;
use mysql_common::proto::MySerialize;

use super::reader::Reader;
use crate::schema::SchemaError;

/// A column's binlog type resolved to what is physically stored in row images.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RealType {
    /// MYSQL_TYPE_TINY (1 byte).
    Tiny,
    /// MYSQL_TYPE_SHORT (2 bytes).
    Short,
    /// MYSQL_TYPE_INT24 (3 bytes).
    Int24,
    /// MYSQL_TYPE_LONG (4 bytes).
    Long,
    /// MYSQL_TYPE_LONGLONG (8 bytes).
    LongLong,
    /// MYSQL_TYPE_FLOAT (4 bytes).
    Float,
    /// MYSQL_TYPE_DOUBLE (8 bytes).
    Double,
    /// MYSQL_TYPE_NEWDECIMAL (binary decimal).
    NewDecimal {
        /// Precision (metadata byte 0).
        precision: u8,
        /// Scale (metadata byte 1).
        scale: u8,
    },
    /// MYSQL_TYPE_DATE / NEWDATE (3 bytes).
    Date,
    /// Old MYSQL_TYPE_TIME (3 bytes, signed HHMMSS integer).
    Time,
    /// MYSQL_TYPE_TIME2 (3 + fsp bytes).
    Time2 {
        /// Fractional-second precision.
        fsp: u8,
    },
    /// Old MYSQL_TYPE_DATETIME (8 bytes, YYYYMMDDhhmmss integer).
    DateTime,
    /// MYSQL_TYPE_DATETIME2 (5 + fsp bytes).
    DateTime2 {
        /// Fractional-second precision.
        fsp: u8,
    },
    /// Old MYSQL_TYPE_TIMESTAMP (4 bytes LE seconds).
    Timestamp,
    /// MYSQL_TYPE_TIMESTAMP2 (4 bytes BE seconds + fsp bytes).
    Timestamp2 {
        /// Fractional-second precision.
        fsp: u8,
    },
    /// MYSQL_TYPE_YEAR (1 byte).
    Year,
    /// MYSQL_TYPE_VARCHAR: 1- or 2-byte length prefix.
    VarChar {
        /// Maximum byte length (prefix is 1 byte if < 256).
        max_bytes: u16,
    },
    /// MYSQL_TYPE_STRING (CHAR/BINARY): 1- or 2-byte length prefix.
    Char {
        /// Maximum byte length (prefix is 1 byte if < 256).
        max_bytes: u16,
    },
    /// MYSQL_TYPE_BLOB family: little-endian length prefix of `prefix` bytes.
    Blob {
        /// Length-prefix width, 1..=4.
        prefix: u8,
    },
    /// ENUM (real type inside MYSQL_TYPE_STRING): 1 or 2 bytes LE.
    Enum {
        /// Packed size, 1 or 2.
        size: u8,
    },
    /// SET (real type inside MYSQL_TYPE_STRING): 1..=8 bytes LE.
    Set {
        /// Packed size, 1..=8.
        size: u8,
    },
    /// MYSQL_TYPE_BIT: big-endian, `(bits + 7) / 8` bytes.
    Bit {
        /// Width in bits, 1..=64.
        bits: u16,
    },
    /// MYSQL_TYPE_JSON: length prefix of `prefix` bytes, then binary JSON.
    Json {
        /// Length-prefix width, 1..=4.
        prefix: u8,
    },
    /// MYSQL_TYPE_GEOMETRY: length prefix of `prefix` bytes, then SRID + WKB.
    Geometry {
        /// Length-prefix width, 1..=4.
        prefix: u8,
    },
    /// MYSQL_TYPE_VECTOR: length prefix of `prefix` bytes, then f32 LE values.
    Vector {
        /// Length-prefix width, 1..=4.
        prefix: u8,
    },
    /// A type this crate does not decode, with the reason.
    Unsupported(&'static str),
}

/// One column of a parsed table map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawColumn {
    /// The type byte as logged.
    pub(crate) type_code: u8,
    /// The metadata bytes as logged (unused bytes are 0).
    pub(crate) meta: [u8; 2],
    /// Physical storage format.
    pub(crate) real: RealType,
}

impl RawColumn {
    pub(crate) fn fsp(&self) -> u8 {
        match self.real {
            RealType::Time2 { fsp }
            | RealType::DateTime2 { fsp }
            | RealType::Timestamp2 { fsp } => fsp,
            _ => 0,
        }
    }
}

/// A `TABLE_MAP` event body parsed into owned parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawTableMap {
    /// Table id the following rows events refer to.
    pub(crate) table_id: u64,
    /// Database name (lossy UTF-8).
    pub(crate) db: String,
    /// Table name (lossy UTF-8).
    pub(crate) table: String,
    /// Columns in table order.
    pub(crate) columns: Vec<RawColumn>,
    /// Nullability bitmap (LSB first).
    pub(crate) null_bits: Vec<u8>,
    /// Optional metadata TLV block.
    pub(crate) optional: Vec<u8>,
}

impl RawTableMap {
    /// Parses a table map event by serializing it back to its wire form.
    pub(crate) fn from_event(tme: &TableMapEvent<'_>) -> Result<Self, SchemaError> {
        let mut body = Vec::with_capacity(64);
        tme.serialize(&mut body);
        Self::parse(&body, 6)
    }

    /// Parses a table map event body (after the common header, without checksum);
    /// `table_id_len` is 6 (or 4 for post-header length 6).
    pub(crate) fn parse(body: &[u8], table_id_len: usize) -> Result<Self, SchemaError> {
        let mut r = Reader::new(body);
        let err = |db: &str, table: &str, detail: String| SchemaError::Malformed {
            db: db.to_owned(),
            table: table.to_owned(),
            detail,
        };
        let head = (|| -> Result<_, String> {
            let table_id = r.uint_le(table_id_len)?;
            r.skip(2)?; // flags
            let db_len = usize::from(r.u8()?);
            let db = String::from_utf8_lossy(r.take(db_len)?).into_owned();
            r.skip(1)?;
            let table_len = usize::from(r.u8()?);
            let table = String::from_utf8_lossy(r.take(table_len)?).into_owned();
            r.skip(1)?;
            Ok((table_id, db, table))
        })();
        let (table_id, db, table) = head.map_err(|d| err("", "", d))?;
        let rest = (|| -> Result<_, String> {
            let n = r.lenenc_usize()?;
            if n > body.len() {
                return Err(format!("column count {n} exceeds event size"));
            }
            let types = r.take(n)?;
            let meta_len = r.lenenc_usize()?;
            let meta = r.take(meta_len)?;
            let null_bits = r.take(n.div_ceil(8))?.to_vec();
            let optional = r.rest().to_vec();
            let columns = parse_columns(types, meta)?;
            Ok((columns, null_bits, optional))
        })();
        let (columns, null_bits, optional) = rest.map_err(|d| err(&db, &table, d))?;
        Ok(RawTableMap {
            table_id,
            db,
            table,
            columns,
            null_bits,
            optional,
        })
    }

    /// A [`SchemaError::Malformed`] for this table.
    pub(crate) fn malformed(&self, detail: String) -> SchemaError {
        SchemaError::Malformed {
            db: self.db.clone(),
            table: self.table.clone(),
            detail,
        }
    }

    /// Whether column `i` is nullable.
    pub(crate) fn nullable(&self, i: usize) -> bool {
        self.null_bits
            .get(i / 8)
            .is_some_and(|b| b & (1 << (i % 8)) != 0)
    }
}

/// Resolves every column's storage format from its type byte and metadata.
fn parse_columns(types: &[u8], meta: &[u8]) -> Result<Vec<RawColumn>, String> {
    let mut m = Reader::new(meta);
    let mut out = Vec::with_capacity(types.len());
    for (i, &t) in types.iter().enumerate() {
        let meta_len = match t {
            249..=252 | 4 | 5 | 255 | 245 | 17..=19 | 242 => 1,
            15 | 16 | 246..=248 | 254 => 2,
            _ => 0,
        };
        let bytes = m
            .take(meta_len)
            .map_err(|e| format!("metadata of column #{i}: {e}"))?;
        let b0 = bytes.first().copied().unwrap_or(0);
        let b1 = bytes.get(1).copied().unwrap_or(0);
        let real = real_type(t, b0, b1);
        out.push(RawColumn {
            type_code: t,
            meta: [b0, b1],
            real,
        });
    }
    if !m.rest().is_empty() {
        return Err(format!(
            "{} unused bytes of column metadata (column types and metadata disagree)",
            m.rest().len()
        ));
    }
    Ok(out)
}

fn real_type(t: u8, b0: u8, b1: u8) -> RealType {
    let prefix = |p: u8, what: &'static str| {
        if (1..=4).contains(&p) {
            Ok(p)
        } else {
            Err(what)
        }
    };
    let fsp = |f: u8| {
        if f <= 6 {
            Ok(f)
        } else {
            Err("fractional-second precision > 6")
        }
    };
    let r = match t {
        1 => Ok(RealType::Tiny),
        2 => Ok(RealType::Short),
        3 => Ok(RealType::Long),
        4 => Ok(RealType::Float),
        5 => Ok(RealType::Double),
        7 => Ok(RealType::Timestamp),
        8 => Ok(RealType::LongLong),
        9 => Ok(RealType::Int24),
        10 | 14 => Ok(RealType::Date),
        11 => Ok(RealType::Time),
        12 => Ok(RealType::DateTime),
        13 => Ok(RealType::Year),
        15 => Ok(RealType::VarChar {
            max_bytes: u16::from_le_bytes([b0, b1]),
        }),
        16 => {
            let bits = u16::from(b1) * 8 + u16::from(b0);
            if (1..=64).contains(&bits) && b0 < 8 {
                Ok(RealType::Bit { bits })
            } else {
                Err("BIT width outside 1..=64")
            }
        }
        17 => fsp(b0).map(|fsp| RealType::Timestamp2 { fsp }),
        18 => fsp(b0).map(|fsp| RealType::DateTime2 { fsp }),
        19 => fsp(b0).map(|fsp| RealType::Time2 { fsp }),
        242 => prefix(b0, "VECTOR length-prefix size not in 1..=4")
            .map(|prefix| RealType::Vector { prefix }),
        245 => prefix(b0, "JSON length-prefix size not in 1..=4")
            .map(|prefix| RealType::Json { prefix }),
        246 => {
            if (1..=65).contains(&b0) && b1 <= 30 && b1 <= b0 {
                Ok(RealType::NewDecimal {
                    precision: b0,
                    scale: b1,
                })
            } else {
                Err("DECIMAL precision/scale out of range")
            }
        }
        247 => enum_or_set(247, b1),
        248 => enum_or_set(248, b1),
        249..=252 => prefix(b0, "BLOB length-prefix size not in 1..=4")
            .map(|prefix| RealType::Blob { prefix }),
        254 => match b0 {
            247 | 248 => enum_or_set(b0, b1),
            _ if b0 | 0x30 == 254 => {
                let max_bytes = u16::from(b1) | ((u16::from(b0 & 0x30) ^ 0x30) << 4);
                Ok(RealType::Char { max_bytes })
            }
            _ => Err("MYSQL_TYPE_STRING with unexpected real type in its metadata"),
        },
        255 => prefix(b0, "GEOMETRY length-prefix size not in 1..=4")
            .map(|prefix| RealType::Geometry { prefix }),
        0 => Err("pre-5.0 DECIMAL is not supported"),
        6 => Err("MYSQL_TYPE_NULL column"),
        20 => Err("typed arrays are not supported"),
        253 => Err("pre-5.0 VAR_STRING is not supported"),
        _ => Err("unknown column type"),
    };
    r.unwrap_or_else(RealType::Unsupported)
}

fn enum_or_set(real: u8, size: u8) -> Result<RealType, &'static str> {
    if real == 247 {
        if size == 1 || size == 2 {
            Ok(RealType::Enum { size })
        } else {
            Err("ENUM pack length not 1 or 2")
        }
    } else if (1..=8).contains(&size) {
        Ok(RealType::Set { size })
    } else {
        Err("SET pack length not in 1..=8")
    }
}

/// The optional-metadata fields this crate uses.
#[derive(Debug, Default)]
pub(crate) struct OptionalMetadata {
    pub(crate) signedness: Option<Vec<u8>>,
    pub(crate) default_charset: Option<(u16, Vec<(usize, u16)>)>,
    pub(crate) column_charset: Option<Vec<u16>>,
    pub(crate) column_names: Option<Vec<String>>,
    pub(crate) set_values: Option<Vec<Vec<Vec<u8>>>>,
    pub(crate) enum_values: Option<Vec<Vec<Vec<u8>>>>,
    pub(crate) simple_pk: Option<Vec<usize>>,
    pub(crate) pk_with_prefix: Option<Vec<usize>>,
    pub(crate) enum_set_default_charset: Option<(u16, Vec<(usize, u16)>)>,
    pub(crate) enum_set_column_charset: Option<Vec<u16>>,
    pub(crate) vector_dims: Option<Vec<u64>>,
    /// GEOMETRY_TYPE: the subtype of each spatial column, in column order (MySQL's
    /// `Field::geometry_type`: 0 GEOMETRY, 1 POINT, 2 LINESTRING, ...).
    pub(crate) geometry_types: Option<Vec<u64>>,
    pub(crate) column_visibility: bool,
}

impl OptionalMetadata {
    pub(crate) fn parse(data: &[u8], columns: usize) -> Result<Self, String> {
        let mut out = OptionalMetadata::default();
        let mut r = Reader::new(data);
        while !r.is_empty() {
            let field = r.u8()?;
            let len = r.lenenc_usize()?;
            let value = r
                .take(len)
                .map_err(|e| format!("optional metadata field {field}: {e}"))?;
            let mut v = Reader::new(value);
            let ctx = |e: String| format!("optional metadata field {field}: {e}");
            match field {
                1 => out.signedness = Some(value.to_vec()),
                2 => out.default_charset = Some(parse_default_charset(&mut v).map_err(ctx)?),
                3 => out.column_charset = Some(parse_lenenc_list_u16(&mut v).map_err(ctx)?),
                4 => {
                    let mut names = Vec::with_capacity(columns);
                    while !v.is_empty() {
                        let l = v.lenenc_usize().map_err(ctx)?;
                        let s = v.take(l).map_err(ctx)?;
                        names.push(String::from_utf8_lossy(s).into_owned());
                    }
                    out.column_names = Some(names);
                }
                5 => out.set_values = Some(parse_str_values(&mut v).map_err(ctx)?),
                6 => out.enum_values = Some(parse_str_values(&mut v).map_err(ctx)?),
                7 => {
                    // GEOMETRY_TYPE: one subtype per spatial column (1 = POINT).
                    let mut types = Vec::new();
                    while !v.is_empty() {
                        types.push(v.lenenc().map_err(ctx)?);
                    }
                    out.geometry_types = Some(types);
                }
                8 => {
                    let mut pk = Vec::new();
                    while !v.is_empty() {
                        pk.push(v.lenenc_usize().map_err(ctx)?);
                    }
                    out.simple_pk = Some(pk);
                }
                9 => {
                    let mut pk = Vec::new();
                    while !v.is_empty() {
                        pk.push(v.lenenc_usize().map_err(ctx)?);
                        v.lenenc().map_err(ctx)?; // prefix length
                    }
                    out.pk_with_prefix = Some(pk);
                }
                10 => {
                    out.enum_set_default_charset = Some(parse_default_charset(&mut v).map_err(ctx)?)
                }
                11 => {
                    out.enum_set_column_charset = Some(parse_lenenc_list_u16(&mut v).map_err(ctx)?)
                }
                13 => {
                    let mut dims = Vec::new();
                    while !v.is_empty() {
                        dims.push(v.lenenc().map_err(ctx)?);
                    }
                    out.vector_dims = Some(dims);
                }
                12 => out.column_visibility = true,
                // Future fields: not needed.
                _ => {}
            }
        }
        Ok(out)
    }
}

fn to_u16(x: u64) -> Result<u16, String> {
    u16::try_from(x).map_err(|_| format!("collation id {x} out of range"))
}

fn parse_default_charset(v: &mut Reader<'_>) -> Result<(u16, Vec<(usize, u16)>), String> {
    let def = to_u16(v.lenenc()?)?;
    let mut exceptions = Vec::new();
    while !v.is_empty() {
        let idx = v.lenenc_usize()?;
        let cs = to_u16(v.lenenc()?)?;
        exceptions.push((idx, cs));
    }
    Ok((def, exceptions))
}

fn parse_lenenc_list_u16(v: &mut Reader<'_>) -> Result<Vec<u16>, String> {
    let mut out = Vec::new();
    while !v.is_empty() {
        out.push(to_u16(v.lenenc()?)?);
    }
    Ok(out)
}

fn parse_str_values(v: &mut Reader<'_>) -> Result<Vec<Vec<Vec<u8>>>, String> {
    let mut cols = Vec::new();
    while !v.is_empty() {
        let count = v.lenenc_usize()?;
        if count > v.remaining() {
            return Err(format!("{count} member strings cannot fit"));
        }
        let mut vals = Vec::with_capacity(count);
        for _ in 0..count {
            let l = v.lenenc_usize()?;
            vals.push(v.take(l)?.to_vec());
        }
        cols.push(vals);
    }
    Ok(cols)
}
