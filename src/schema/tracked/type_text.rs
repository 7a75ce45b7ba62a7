//! Helpers on normalized type text (`"decimal(10,2) unsigned"`, `"enum('a','b')"`): the base
//! type, the numeric arguments, ENUM/SET members and their quoting, character types, and the
//! TEXT/BLOB type for a length.
//!
//! Invariant: `type_members` reads back what [`quote_members`] writes, so ENUM/SET members
//! survive a round trip through type text.

/// The base type name of a normalized type (`"decimal"` for `"decimal(10,2) unsigned"`).
pub fn base_type(sql_type: &str) -> &str {
    let end = sql_type.find(['(', ' ']).unwrap_or(sql_type.len());
    sql_type.get(..end).unwrap_or(sql_type)
}

/// The text between the type's parentheses (`"10,2"` for `"decimal(10,2)"`).
pub(super) fn type_args_text(sql_type: &str) -> Option<&str> {
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
pub(super) fn type_members(sql_type: &str) -> Vec<String> {
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
