//! The DDL parser: a QUERY event's statement classified and, when it is DDL, walked into the
//! changes of tracked tables, under the SQL mode and flavor the input picks.
//!
//! Input: byte 0 picks ANSI_QUOTES, REAL_AS_FLOAT, the flavor and the default database; the rest
//! is the statement (bytes as the event holds them, read as UTF-8 with replacement).
//!
//! Properties: no panic (no stack overflow on nesting); time and memory bounded (libFuzzer's
//! timeout and limits); the same statement parses the same way twice; a statement that does not
//! start with a DDL keyword is never DDL.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice::schema::ddl::{parse_column_type, parse_ddl_with, DdlParse, SqlMode};
use sluice::schema::ServerFlavor;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let sql = String::from_utf8_lossy(rest);
    let mode = SqlMode {
        ansi_quotes: flags & 1 != 0,
        real_as_float: flags & 2 != 0,
    };
    let flavor = match (flags >> 2) % 3 {
        0 => ServerFlavor::Auto,
        1 => ServerFlavor::MySql,
        _ => ServerFlavor::MariaDb,
    };
    let db = (flags & 0x20 != 0).then_some("db");
    if flags & 0x40 != 0 {
        // A column type as information_schema gives it.
        let _ = parse_column_type("c", &sql);
        return;
    }
    let parsed = parse_ddl_with(db, &sql, mode, flavor);
    if flags & 0x80 != 0 {
        assert_eq!(
            format!("{parsed:?}"),
            format!("{:?}", parse_ddl_with(db, &sql, mode, flavor))
        );
    }
    if let DdlParse::Unparsed { error, .. } = &parsed {
        assert!(!error.is_empty(), "an unparsed statement says why");
    }
});
