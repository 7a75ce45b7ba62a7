//! Column types: a `sqlparser` data type normalized into the type text of a [`ColumnDef`]
//! (`int`, `decimal(10,0)`, `varchar(20)`, `enum('a','b')`, ...) and the attributes that come
//! with it (unsigned, ENUM/SET members, national charset, `SERIAL`).
//!
//! Invariant: every spelling of a type normalizes to one text (`INTEGER` and `INT4` to `int`,
//! `FIXED` to `decimal`, `REAL` by [`SqlMode::real_as_float`]), so a definition read from DDL
//! equals one loaded from `information_schema`; a type MySQL and MariaDB do not have is an
//! error.
//!
//! [`ColumnDef`]: crate::schema::tracked::ColumnDef

use sqlparser::ast::{BinaryLength, CharacterLength, EnumMember, TypeModifier};
use sqlparser::ast::{DataType, ExactNumberInfo};

use super::cursor::PResult;
use super::sql_mode::SqlMode;
use crate::schema::tracked::{quote_members, text_type_for};

pub(super) fn object_name_text(n: &sqlparser::ast::ObjectName) -> String {
    n.0.iter()
        .filter_map(|part| part.as_ident().map(|i| i.value.clone()))
        .collect::<Vec<_>>()
        .join(".")
        .to_ascii_lowercase()
}

/// A column type being normalized.
#[derive(Debug, Default)]
pub(super) struct TypeBuild {
    /// Normalized type without `unsigned`.
    pub(super) base: String,
    pub(super) unsigned: bool,
    pub(super) members: Vec<String>,
    pub(super) national: bool,
    pub(super) serial: bool,
}

/// Normalizes a parsed data type into `ty`.
pub(super) fn map_type(dt: &DataType, mode: SqlMode, ty: &mut TypeBuild) -> PResult<()> {
    use DataType as D;
    let int = |ty: &mut TypeBuild, base: &str, unsigned: bool| {
        ty.base = base.to_owned();
        ty.unsigned |= unsigned;
    };
    let char_len = |l: &Option<CharacterLength>, what: &str| -> PResult<Option<u64>> {
        match l {
            None => Ok(None),
            Some(CharacterLength::IntegerLength { length, .. }) => Ok(Some(*length)),
            Some(CharacterLength::Max) => Err(format!("{what}(MAX) is not MySQL")),
        }
    };
    let decimal = |info: &ExactNumberInfo| match info {
        ExactNumberInfo::None => "decimal(10,0)".to_owned(),
        ExactNumberInfo::Precision(p) => format!("decimal({p},0)"),
        ExactNumberInfo::PrecisionAndScale(p, s) => format!("decimal({p},{s})"),
    };
    let float = |info: &ExactNumberInfo, double: bool| match info {
        ExactNumberInfo::None => if double { "double" } else { "float" }.to_owned(),
        ExactNumberInfo::Precision(p) => {
            if double || *p > 24 { "double" } else { "float" }.to_owned()
        }
        ExactNumberInfo::PrecisionAndScale(m, d) => {
            format!("{}({m},{d})", if double { "double" } else { "float" })
        }
    };
    let fsp = |base: &str, p: &Option<u64>| match p {
        Some(p) if *p > 0 => format!("{base}({p})"),
        _ => base.to_owned(),
    };
    match dt {
        D::TinyInt(_) | D::Bool | D::Boolean => int(ty, "tinyint", false),
        D::TinyIntUnsigned(_) | D::UTinyInt => int(ty, "tinyint", true),
        D::SmallInt(_) | D::Int2(_) => int(ty, "smallint", false),
        D::SmallIntUnsigned(_) | D::Int2Unsigned(_) | D::USmallInt => int(ty, "smallint", true),
        D::MediumInt(_) => int(ty, "mediumint", false),
        D::MediumIntUnsigned(_) => int(ty, "mediumint", true),
        D::Int(_) | D::Integer(_) | D::Int4(_) => int(ty, "int", false),
        D::IntUnsigned(_) | D::IntegerUnsigned(_) | D::Int4Unsigned(_) => int(ty, "int", true),
        D::BigInt(_) | D::Int8(_) => int(ty, "bigint", false),
        D::BigIntUnsigned(_) | D::Int8Unsigned(_) | D::UBigInt => int(ty, "bigint", true),
        D::Decimal(i) | D::Numeric(i) | D::Dec(i) => ty.base = decimal(i),
        D::DecimalUnsigned(i) | D::DecUnsigned(i) => {
            ty.base = decimal(i);
            ty.unsigned = true;
        }
        D::Float(i) => ty.base = float(i, false),
        D::FloatUnsigned(i) => {
            ty.base = float(i, false);
            ty.unsigned = true;
        }
        D::Float4 => ty.base = "float".into(),
        D::Double(i) => ty.base = float(i, true),
        D::DoubleUnsigned(i) => {
            ty.base = float(i, true);
            ty.unsigned = true;
        }
        D::DoublePrecision | D::Float8 => ty.base = "double".into(),
        D::DoublePrecisionUnsigned => {
            ty.base = "double".into();
            ty.unsigned = true;
        }
        D::Real | D::RealUnsigned => {
            ty.base = if mode.real_as_float {
                "float"
            } else {
                "double"
            }
            .into();
            ty.unsigned |= matches!(dt, D::RealUnsigned);
        }
        D::Zerofill(inner) => {
            map_type(inner, mode, ty)?;
            ty.unsigned = true;
        }
        D::Date => ty.base = "date".into(),
        D::Time(p, _) => ty.base = fsp("time", p),
        D::Datetime(p) => ty.base = fsp("datetime", p),
        D::Timestamp(p, _) => ty.base = fsp("timestamp", p),
        D::Char(l) | D::Character(l) => {
            ty.base = format!("char({})", char_len(l, "CHAR")?.unwrap_or(1));
        }
        D::Varchar(l) | D::CharacterVarying(l) | D::CharVarying(l) | D::Nvarchar(l) => {
            let n = char_len(l, "VARCHAR")?.ok_or("VARCHAR without a length")?;
            ty.base = format!("varchar({n})");
            ty.national |= matches!(dt, D::Nvarchar(_));
        }
        D::Binary(n) => ty.base = format!("binary({})", n.unwrap_or(1)),
        D::Varbinary(l) => match l {
            Some(BinaryLength::IntegerLength { length }) => {
                ty.base = format!("varbinary({length})")
            }
            _ => return Err("VARBINARY without a length".into()),
        },
        D::Blob(None) => ty.base = "blob".into(),
        D::Blob(Some(n)) => ty.base = text_type_for(*n, true).into(),
        D::TinyBlob => ty.base = "tinyblob".into(),
        D::MediumBlob => ty.base = "mediumblob".into(),
        D::LongBlob => ty.base = "longblob".into(),
        D::Text => ty.base = "text".into(),
        D::TinyText => ty.base = "tinytext".into(),
        D::MediumText => ty.base = "mediumtext".into(),
        D::LongText => ty.base = "longtext".into(),
        D::Enum(members, _) => {
            ty.members = members
                .iter()
                .map(|m| match m {
                    EnumMember::Name(s) | EnumMember::NamedValue(s, _) => {
                        s.trim_end_matches(' ').to_owned()
                    }
                })
                .collect();
            ty.base = format!("enum({})", quote_members(&ty.members));
        }
        D::Set(members) => {
            ty.members = members
                .iter()
                .map(|s| s.trim_end_matches(' ').to_owned())
                .collect();
            ty.base = format!("set({})", quote_members(&ty.members));
        }
        D::Bit(n) => ty.base = format!("bit({})", n.unwrap_or(1)),
        D::JSON => ty.base = "json".into(),
        D::Uuid => ty.base = "uuid".into(),
        D::Custom(name, args) => {
            let name = object_name_text(name);
            let nums: Vec<u64> = args
                .iter()
                .filter_map(|a| match a {
                    TypeModifier::Number(n, _) => n.parse().ok(),
                    _ => None,
                })
                .collect();
            let arg = nums.first().copied();
            ty.base = match name.as_str() {
                "int1" => "tinyint".into(),
                "int3" | "middleint" => "mediumint".into(),
                "serial" => {
                    ty.unsigned = true;
                    ty.serial = true;
                    "bigint".into()
                }
                "year" => "year".into(),
                "fixed" => decimal(&match (nums.first(), nums.get(1)) {
                    (Some(&p), Some(&s)) => ExactNumberInfo::PrecisionAndScale(p, s as i64),
                    (Some(&p), None) => ExactNumberInfo::Precision(p),
                    _ => ExactNumberInfo::None,
                }),
                "text" => match arg {
                    // TEXT(n) is the smallest TEXT type for n characters; the charset is
                    // known later (ColumnDef::resolve_charset).
                    Some(n) => format!("text({n})"),
                    None => "text".into(),
                },
                "nchar" => {
                    ty.national = true;
                    format!("char({})", arg.unwrap_or(1))
                }
                "long" => "mediumtext".into(),
                "geometry" | "point" | "linestring" | "polygon" | "multipoint"
                | "multilinestring" | "multipolygon" | "geometrycollection" => name,
                "geomcollection" => "geometrycollection".into(),
                "vector" => format!("vector({})", arg.unwrap_or(2048)),
                "inet6" | "inet4" => name,
                _ => return Err(format!("unsupported column type `{dt}`")),
            };
        }
        other => return Err(format!("unsupported column type `{other}`")),
    }
    Ok(())
}
