//! The charsets sluice knows: names normalized (`utf8` is `utf8mb3`), the charset of a
//! collation, a collation id for the row decoder, and the maximum bytes per character.
//!
//! Invariant: an unknown name never fails: it gets collation id 0 (decoded as UTF-8) and 4 bytes
//! per character.

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
