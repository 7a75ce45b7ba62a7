//! Column descriptions derived from a binlog `TABLE_MAP` event, and charset helpers.
//!
//! A [`Column`] names one table column and gives its SQL-level type family
//! ([`ColumnKind`]) with exactly what value decoding and encoding need (signedness,
//! precision/scale, fractional-second precision, charset, ENUM/SET member strings,
//! BIT width).  The raw binlog type byte and metadata stay in the row decoder's plan.
//!
//! Charset ids are MySQL/MariaDB *collation* ids as logged in the table map
//! (`63` = `binary`).  [`charset_kind`] classifies them into the encodings this crate
//! can turn into Unicode; [`decode_text`] does that conversion.

use std::borrow::Cow;

/// Collation id of the `binary` pseudo-charset (BINARY/VARBINARY/BLOB columns).
pub const BINARY_CHARSET: u16 = 63;

/// One column of a table, in table order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// Column name as logged (`binlog_row_metadata=FULL`).
    pub name: String,
    /// SQL-level type family and its decoding/encoding parameters.
    pub kind: ColumnKind,
    /// Whether the column accepts `NULL` (from the table map's null bitmap).
    pub nullable: bool,
}

/// SQL-level type family of a column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnKind {
    /// `TINYINT` (1 byte).
    TinyInt {
        /// `UNSIGNED` attribute.
        unsigned: bool,
    },
    /// `SMALLINT` (2 bytes).
    SmallInt {
        /// `UNSIGNED` attribute.
        unsigned: bool,
    },
    /// `MEDIUMINT` (3 bytes).
    MediumInt {
        /// `UNSIGNED` attribute.
        unsigned: bool,
    },
    /// `INT` (4 bytes).
    Int {
        /// `UNSIGNED` attribute.
        unsigned: bool,
    },
    /// `BIGINT` (8 bytes).
    BigInt {
        /// `UNSIGNED` attribute.
        unsigned: bool,
    },
    /// `FLOAT` (single precision).
    Float,
    /// `DOUBLE` (double precision).
    Double,
    /// `DECIMAL(precision, scale)` / `NUMERIC`.
    Decimal {
        /// Total number of digits, 1..=65.
        precision: u8,
        /// Digits after the point, 0..=30 (≤ precision).
        scale: u8,
    },
    /// `DATE`.
    Date,
    /// `TIME(fsp)`.
    Time {
        /// Fractional-second precision, 0..=6.
        fsp: u8,
    },
    /// `DATETIME(fsp)`.
    DateTime {
        /// Fractional-second precision, 0..=6.
        fsp: u8,
    },
    /// `TIMESTAMP(fsp)`.
    Timestamp {
        /// Fractional-second precision, 0..=6.
        fsp: u8,
    },
    /// `YEAR`.
    Year,
    /// `CHAR`/`VARCHAR`/`BINARY`/`VARBINARY`.
    String {
        /// Collation id ([`BINARY_CHARSET`] for BINARY/VARBINARY); 0 if unknown.
        charset: u16,
        /// True when `charset == 63` (BINARY/VARBINARY).
        binary: bool,
        /// True for fixed-length CHAR/BINARY, false for VARCHAR/VARBINARY.
        fixed: bool,
        /// Maximum length in bytes (not characters).
        max_bytes: u16,
    },
    /// `TINYTEXT`..`LONGTEXT` and `TINYBLOB`..`LONGBLOB` (MariaDB's `JSON` too).
    Blob {
        /// Collation id ([`BINARY_CHARSET`] for BLOBs); 0 if unknown.
        charset: u16,
        /// True when `charset == 63` (BLOB family).
        binary: bool,
    },
    /// `ENUM(...)`.
    Enum {
        /// Member strings in definition order (index 1 is `values[0]`).
        values: Vec<String>,
    },
    /// `SET(...)`.
    Set {
        /// Member strings in definition order (bit `i` is `values[i]`).
        values: Vec<String>,
    },
    /// `BIT(bits)`.
    Bit {
        /// Width in bits, 1..=64.
        bits: u16,
    },
    /// MySQL `JSON` (binary JSON in the binlog).
    Json,
    /// Spatial types but POINT (`GEOMETRY`, `LINESTRING`, `POLYGON`, ...), and spatial
    /// columns whose subtype is not known.
    Geometry,
    /// `POINT` (known from the table map's GEOMETRY_TYPE or the tracked definition).
    Point,
    /// MariaDB's `UUID`: stored and logged as `BINARY(16)`, the bytes in the order of the
    /// text's hex digits; written as the text (`123e4567-e89b-12d3-a456-426614174000`), as
    /// Debezium's `io.debezium.data.Uuid`. Known only from the tracked definition (the table
    /// map logs a `BINARY(16)`).
    Uuid,
    /// MariaDB's `INET6`: stored and logged as `BINARY(16)` (network order); written as the
    /// text the server prints (`2001:db8::1`, `::ffff:192.0.2.1`). Known only from the tracked
    /// definition.
    Inet6,
    /// MariaDB's `INET4` (11.3+): stored and logged as `BINARY(4)`; written as `a.b.c.d`.
    /// Known only from the tracked definition.
    Inet4,
    /// MySQL 9 `VECTOR(n)`: packed little-endian `f32`s.
    Vector {
        /// Number of dimensions if the table map logged it.
        dimensions: Option<u32>,
    },
}

impl ColumnKind {
    /// True for unsigned integer kinds.
    pub fn is_unsigned(&self) -> bool {
        matches!(
            self,
            ColumnKind::TinyInt { unsigned: true }
                | ColumnKind::SmallInt { unsigned: true }
                | ColumnKind::MediumInt { unsigned: true }
                | ColumnKind::Int { unsigned: true }
                | ColumnKind::BigInt { unsigned: true }
        )
    }

    /// Fractional-second precision of temporal kinds (0 for everything else).
    pub fn fsp(&self) -> u8 {
        match self {
            ColumnKind::Time { fsp }
            | ColumnKind::DateTime { fsp }
            | ColumnKind::Timestamp { fsp } => *fsp,
            _ => 0,
        }
    }

    /// The charset of character kinds (`String`/`Blob`), if any.
    pub fn charset(&self) -> Option<u16> {
        match self {
            ColumnKind::String { charset, .. } | ColumnKind::Blob { charset, .. } => Some(*charset),
            _ => None,
        }
    }

    /// Short SQL type name for diagnostics (`"INT UNSIGNED"`, `"VARCHAR"`, ...).
    pub fn type_name(&self) -> &'static str {
        match self {
            ColumnKind::TinyInt { unsigned: false } => "TINYINT",
            ColumnKind::TinyInt { unsigned: true } => "TINYINT UNSIGNED",
            ColumnKind::SmallInt { unsigned: false } => "SMALLINT",
            ColumnKind::SmallInt { unsigned: true } => "SMALLINT UNSIGNED",
            ColumnKind::MediumInt { unsigned: false } => "MEDIUMINT",
            ColumnKind::MediumInt { unsigned: true } => "MEDIUMINT UNSIGNED",
            ColumnKind::Int { unsigned: false } => "INT",
            ColumnKind::Int { unsigned: true } => "INT UNSIGNED",
            ColumnKind::BigInt { unsigned: false } => "BIGINT",
            ColumnKind::BigInt { unsigned: true } => "BIGINT UNSIGNED",
            ColumnKind::Float => "FLOAT",
            ColumnKind::Double => "DOUBLE",
            ColumnKind::Decimal { .. } => "DECIMAL",
            ColumnKind::Date => "DATE",
            ColumnKind::Time { .. } => "TIME",
            ColumnKind::DateTime { .. } => "DATETIME",
            ColumnKind::Timestamp { .. } => "TIMESTAMP",
            ColumnKind::Year => "YEAR",
            ColumnKind::String {
                binary: true,
                fixed: true,
                ..
            } => "BINARY",
            ColumnKind::String {
                binary: true,
                fixed: false,
                ..
            } => "VARBINARY",
            ColumnKind::String {
                binary: false,
                fixed: true,
                ..
            } => "CHAR",
            ColumnKind::String {
                binary: false,
                fixed: false,
                ..
            } => "VARCHAR",
            ColumnKind::Blob { binary: true, .. } => "BLOB",
            ColumnKind::Blob { binary: false, .. } => "TEXT",
            ColumnKind::Enum { .. } => "ENUM",
            ColumnKind::Set { .. } => "SET",
            ColumnKind::Bit { .. } => "BIT",
            ColumnKind::Json => "JSON",
            ColumnKind::Geometry => "GEOMETRY",
            ColumnKind::Point => "POINT",
            ColumnKind::Uuid => "UUID",
            ColumnKind::Inet6 => "INET6",
            ColumnKind::Inet4 => "INET4",
            ColumnKind::Vector { .. } => "VECTOR",
        }
    }
}

/// How the bytes of a character column are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CharsetKind {
    /// `binary` (id 63): not text at all.
    Binary,
    /// UTF-8 family (`utf8mb3`, `utf8mb4`) and `ascii`; also the fallback.
    Utf8,
    /// MySQL `latin1` (really Windows-1252 with the 5 undefined bytes mapped to C1).
    Latin1,
    /// `ucs2` / `utf16`: big-endian UTF-16.
    Utf16Be,
    /// `utf16le`.
    Utf16Le,
    /// `utf32`: big-endian UTF-32.
    Utf32Be,
    /// Any other charset (gbk, sjis, cp1251, ...): treated as lossy UTF-8.
    Other,
}

/// Classifies a MySQL/MariaDB collation id.
///
/// Below 256 the ids of MySQL 8 and MariaDB agree. Above, MySQL 8/9 has only its utf8mb4
/// `*_0900_*` collations (255..=323; MariaDB 10.10+ gives 256..=309 the same meaning), while
/// MariaDB 10.10+ numbers its other collations as `information_schema.
/// COLLATION_CHARACTER_SET_APPLICABILITY` of 11.8 lists them:
/// * 1024 + id: the NO PAD twin of collation `id` (e.g. `latin1_swedish_nopad_ci` = 1032);
/// * 2048 + 256 × n + k: the UCA-14.0 collations (`*_uca1400_*`) of utf8mb3 (n = 0),
///   utf8mb4 (1, so the 11.5+ default `utf8mb4_uca1400_ai_ci` is 2304), ucs2 (2), utf16 (3)
///   and utf32 (4);
/// * 576..=579 utf8mb3, 608..=611 utf8mb4, 640..=642 ucs2, 672..=674 utf16, 736..=738
///   utf32 (the `*_uca1400_*` collations' compatibility aliases).
///
/// Anything else is taken as UTF-8.
pub fn charset_kind(id: u16) -> CharsetKind {
    match id {
        BINARY_CHARSET => CharsetKind::Binary,
        5 | 8 | 15 | 31 | 47 | 48 | 49 | 94 => CharsetKind::Latin1,
        // ascii, utf8mb3, utf8mb4 (incl. MySQL 8 *_0900_* collations), unknown (0)
        0 | 11 | 65 | 33 | 83 | 76 | 192..=215 | 223 | 45 | 46 | 224..=247 | 255..=323 => {
            CharsetKind::Utf8
        }
        35 | 90 | 128..=151 | 159 | 54 | 55 | 101..=124 => CharsetKind::Utf16Be,
        56 | 62 => CharsetKind::Utf16Le,
        60 | 61 | 160..=183 => CharsetKind::Utf32Be,
        1..=254 => CharsetKind::Other,
        // MariaDB 10.10+ (see above).
        576..=579 | 608..=611 | 2048..=2559 => CharsetKind::Utf8,
        640..=642 | 672..=674 | 2560..=3071 => CharsetKind::Utf16Be,
        736..=738 | 3072..=3327 => CharsetKind::Utf32Be,
        1024..=2047 => charset_kind(id - 1024),
        _ => CharsetKind::Utf8,
    }
}

/// MySQL's `latin1` high half (0x80..=0x9F); 0xA0..=0xFF map to U+00A0..=U+00FF.
const LATIN1_80_9F: [char; 32] = [
    '\u{20AC}', '\u{0081}', '\u{201A}', '\u{0192}', '\u{201E}', '\u{2026}', '\u{2020}', '\u{2021}',
    '\u{02C6}', '\u{2030}', '\u{0160}', '\u{2039}', '\u{0152}', '\u{008D}', '\u{017D}', '\u{008F}',
    '\u{0090}', '\u{2018}', '\u{2019}', '\u{201C}', '\u{201D}', '\u{2022}', '\u{2013}', '\u{2014}',
    '\u{02DC}', '\u{2122}', '\u{0161}', '\u{203A}', '\u{0153}', '\u{009D}', '\u{017E}', '\u{0178}',
];

/// Maps one MySQL `latin1` byte to its Unicode scalar.
#[inline]
pub fn latin1_char(b: u8) -> char {
    if (0x80..=0x9F).contains(&b) {
        LATIN1_80_9F
            .get(usize::from(b - 0x80))
            .copied()
            .unwrap_or(char::REPLACEMENT_CHARACTER)
    } else {
        char::from(b)
    }
}

/// Decodes the bytes of a character column to Unicode.
///
/// UTF-8 family (and unknown/other charsets) are validated and invalid sequences
/// replaced by U+FFFD; `latin1` is decoded as MySQL's cp1252 variant; UTF-16/UTF-32
/// are decoded with replacement of invalid units.  `binary` is decoded as lossy
/// UTF-8 (callers normally base64 binary data instead).
pub fn decode_text(charset: u16, bytes: &[u8]) -> Cow<'_, str> {
    match charset_kind(charset) {
        CharsetKind::Latin1 => {
            if bytes.is_ascii() {
                // ASCII is valid UTF-8; from_utf8 cannot fail here.
                String::from_utf8_lossy(bytes)
            } else {
                Cow::Owned(bytes.iter().map(|&b| latin1_char(b)).collect())
            }
        }
        CharsetKind::Utf16Be => Cow::Owned(decode_utf16(bytes, u16::from_be_bytes)),
        CharsetKind::Utf16Le => Cow::Owned(decode_utf16(bytes, u16::from_le_bytes)),
        CharsetKind::Utf32Be => Cow::Owned(
            bytes
                .chunks(4)
                .map(|c| match <[u8; 4]>::try_from(c) {
                    Ok(a) => {
                        char::from_u32(u32::from_be_bytes(a)).unwrap_or(char::REPLACEMENT_CHARACTER)
                    }
                    Err(_) => char::REPLACEMENT_CHARACTER,
                })
                .collect(),
        ),
        CharsetKind::Binary | CharsetKind::Utf8 | CharsetKind::Other => {
            String::from_utf8_lossy(bytes)
        }
    }
}

fn decode_utf16(bytes: &[u8], conv: fn([u8; 2]) -> u16) -> String {
    let units = bytes
        .chunks(2)
        .map(|c| <[u8; 2]>::try_from(c).map(conv).unwrap_or(0xFFFD));
    char::decode_utf16(units)
        .map(|r| r.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latin1_decoding_matches_cp1252_with_c1_holes() {
        assert_eq!(decode_text(8, b"caf\xe9"), "café");
        assert_eq!(decode_text(8, b"\x80"), "€");
        assert_eq!(
            decode_text(47, b"\x81\x8d\x8f\x90\x9d"),
            "\u{81}\u{8d}\u{8f}\u{90}\u{9d}"
        );
        assert_eq!(decode_text(8, b"\x9f\xff"), "Ÿÿ");
        assert_eq!(decode_text(8, b"plain"), "plain");
    }

    #[test]
    fn utf8_lossy() {
        assert_eq!(decode_text(255, "😀".as_bytes()), "😀");
        assert_eq!(decode_text(45, b"a\xffb"), "a\u{FFFD}b");
    }

    #[test]
    fn utf16_and_utf32() {
        assert_eq!(
            decode_text(54, &[0x00, 0x41, 0xD8, 0x3D, 0xDE, 0x00]),
            "A😀"
        );
        assert_eq!(decode_text(56, &[0x41, 0x00]), "A");
        assert_eq!(decode_text(60, &[0, 0, 0, 0x41, 0, 1, 0xF6, 0x00]), "A😀");
        // odd trailing byte does not panic
        assert_eq!(decode_text(54, &[0x00]), "\u{FFFD}");
    }

    #[test]
    fn classification() {
        assert_eq!(charset_kind(63), CharsetKind::Binary);
        assert_eq!(charset_kind(33), CharsetKind::Utf8);
        assert_eq!(charset_kind(255), CharsetKind::Utf8);
        assert_eq!(charset_kind(8), CharsetKind::Latin1);
        assert_eq!(charset_kind(28), CharsetKind::Other); // gbk
        assert_eq!(charset_kind(2304), CharsetKind::Utf8);
    }

    /// MariaDB 11.8's collation ids above 255 with their charsets, as its
    /// `information_schema.COLLATION_CHARACTER_SET_APPLICABILITY` lists them (a sample of
    /// each range, both ends).
    #[test]
    fn mariadb_collation_ids_above_255() {
        use CharsetKind::*;
        let cases: &[(u16, &str, CharsetKind)] = &[
            (256, "utf8mb4", Utf8),
            (309, "utf8mb4", Utf8),
            (576, "utf8mb3", Utf8),
            (611, "utf8mb4", Utf8),
            (640, "ucs2", Utf16Be),
            (674, "utf16", Utf16Be),
            (738, "utf32", Utf32Be),
            (1025, "big5", Other),
            (1032, "latin1", Latin1),
            (1071, "latin1", Latin1),
            (1057, "utf8mb3", Utf8),
            (1069, "utf8mb4", Utf8),
            (1059, "ucs2", Utf16Be),
            (1078, "utf16", Utf16Be),
            (1080, "utf16le", Utf16Le),
            (1086, "utf16le", Utf16Le),
            (1084, "utf32", Utf32Be),
            (1206, "utf32", Utf32Be),
            (1270, "utf8mb4", Utf8),
            (1174, "ucs2", Utf16Be),
            (2048, "utf8mb3_uca1400_ai_ci", Utf8),
            (2247, "utf8mb3", Utf8),
            (2304, "utf8mb4_uca1400_ai_ci", Utf8),
            (2503, "utf8mb4", Utf8),
            (2560, "ucs2_uca1400_ai_ci", Utf16Be),
            (2816, "utf16_uca1400_ai_ci", Utf16Be),
            (3015, "utf16", Utf16Be),
            (3072, "utf32_uca1400_ai_ci", Utf32Be),
            (3271, "utf32", Utf32Be),
        ];
        for (id, what, kind) in cases {
            assert_eq!(charset_kind(*id), *kind, "{id} ({what})");
        }
        // A latin1 NO PAD column's bytes are latin1, not UTF-8.
        assert_eq!(decode_text(1032, b"caf\xe9"), "café");
        assert_eq!(decode_text(2816, &[0, b'h', 0xd8, 0x3d, 0xde, 0x00]), "h😀");
    }

    #[test]
    fn kind_helpers() {
        assert!(ColumnKind::BigInt { unsigned: true }.is_unsigned());
        assert!(!ColumnKind::Float.is_unsigned());
        assert_eq!(ColumnKind::DateTime { fsp: 6 }.fsp(), 6);
        assert_eq!(ColumnKind::Json.type_name(), "JSON");
    }
}
