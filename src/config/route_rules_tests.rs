//! Tests of the routes' Debezium-parity options (`key_change_headers`, `bigint_unsigned`,
//! `skipped_operations`, `column_exclude`, `column_mask`, `column_hash`): parsing,
//! defaults, validation messages and the salt's redaction.

use super::route_rules::{BigintUnsigned, ColumnRewrite, HashAlgorithm, SkippedOperations};
use super::*;

const SALT: &str = "pepper-9f3c1e";

fn config(route_extra: &str) -> Result<Config, ConfigError> {
    let text = format!(
        r#"
name = "shop"
[source]
url = "mysql://sluice:sluice@127.0.0.1:3306"
server_id = 5401
[kafka]
bootstrap_servers = "127.0.0.1:9092"
[[route]]
match = 'shop\..*'
topic = "shop.${{table}}"
{route_extra}
"#
    );
    Config::from_str_with_env(&text, Vec::new())
}

fn target(route_extra: &str) -> RouteTarget {
    let c = config(route_extra).expect("valid config");
    c.router()
        .expect("router")
        .route("shop", "users")
        .expect("route")
        .expect("a route")
}

#[test]
fn defaults_are_sluices_current_behaviour_and_debeziums_headers() {
    let t = target("");
    assert!(t.rules.key_change_headers);
    assert_eq!(t.rules.bigint_unsigned, BigintUnsigned::Exact);
    assert_eq!(t.rules.skipped, SkippedOperations::default());
    assert!(t.rules.columns.is_empty());
}

#[test]
fn every_option_is_read() {
    let t = target(&format!(
        r#"
key_change_headers = false
bigint_unsigned = "long"
skipped_operations = ["c", "d", "t"]
column_exclude = ['shop\.users\.ssn']
column_mask = [{{ columns = ['shop\.users\.email', '.*\.card'], chars = 6 }}]
column_hash = [{{ columns = ['shop\.users\.phone'], algorithm = "SHA-512", salt = "{SALT}" }}]
"#
    ));
    assert!(!t.rules.key_change_headers);
    assert_eq!(t.rules.bigint_unsigned, BigintUnsigned::Long);
    assert_eq!(
        t.rules.skipped,
        SkippedOperations {
            create: true,
            update: false,
            delete: true
        }
    );
    let c = &t.rules.columns;
    assert!(c.excludes("shop", "users", "ssn"));
    assert!(!c.excludes("shop", "users", "ssn2"));
    assert!(!c.excludes("shop", "users2", "ssn"));
    assert_eq!(
        c.rewrite("shop", "users", "email"),
        Some(&ColumnRewrite::Mask(6))
    );
    assert_eq!(c.rewrite("x", "y", "card"), Some(&ColumnRewrite::Mask(6)));
    match c.rewrite("shop", "users", "phone") {
        Some(ColumnRewrite::Hash { algorithm, salt }) => {
            assert_eq!(*algorithm, HashAlgorithm::Sha512);
            assert_eq!(salt.expose(), SALT);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(c.rewrite("shop", "users", "name"), None);
}

#[test]
fn the_salt_is_never_shown() {
    let extra = format!(
        r#"column_hash = [{{ columns = ['.*\.phone'], algorithm = "SHA-256", salt = "{SALT}" }}]"#
    );
    let c = config(&extra).unwrap();
    for shown in [
        format!("{c:?}"),
        format!("{c:#?}"),
        c.redacted_json().to_string(),
        toml::to_string(&c).unwrap(),
        format!("{:?}", c.router().unwrap().route("shop", "t").unwrap()),
    ] {
        assert!(!shown.contains(SALT), "{shown}");
    }
    assert_eq!(
        c.redacted_json()["route"][0]["column_hash"][0]["salt"],
        "***"
    );
    // A TOML error on the salt's line quotes the line: redacted too.
    let broken = format!(r#"column_hash = [{{ columns = [], salt = "{SALT}" algorithm = 1 }}]"#);
    let e = config(&broken).unwrap_err().to_string();
    assert!(!e.contains(SALT), "{e}");
}

#[test]
fn bad_values_are_named_with_what_is_expected() {
    let e = config(r#"skipped_operations = ["r"]"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("route[0].skipped_operations"), "{e}");
    assert!(e.contains("`r`") && e.contains("snapshot reads"), "{e}");
    let e = config(r#"skipped_operations = ["none", "c"]"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("`none` alone"), "{e}");
    let e = config(r#"bigint_unsigned = "precise""#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("precise") && e.contains("exact"), "{e}");
    let e = config(r#"column_exclude = ['shop\.(']"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("route[0].column_exclude[0]"), "{e}");
    let e = config(r#"column_mask = [{ columns = ['.*'], chars = 0 }]"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("route[0].column_mask[0].chars"), "{e}");
    let e = config(r##"column_mask = [{ columns = ['.*'], chars = 3, with = "#" }]"##)
        .unwrap_err()
        .to_string();
    assert!(e.contains("with"), "{e}");
    let e = config(r#"column_hash = [{ columns = ['.*'], algorithm = "SHA-3", salt = "s" }]"#)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("route[0].column_hash[0].algorithm") && e.contains("SHA3-256"),
        "{e}"
    );
}

#[test]
fn none_and_t_skip_nothing() {
    assert_eq!(
        target(r#"skipped_operations = ["none"]"#).rules.skipped,
        SkippedOperations::default()
    );
    assert_eq!(
        target(r#"skipped_operations = ["t"]"#).rules.skipped,
        SkippedOperations::default()
    );
}

#[test]
fn the_salt_can_come_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("salt");
    std::fs::write(&path, format!("{SALT}\n")).unwrap();
    let file = path.display();
    let t = target(&format!(
        r#"column_hash = [{{ columns = ['.*\.phone'], algorithm = "MD5", salt_file = "{file}" }}]"#
    ));
    match t.rules.columns.rewrite("shop", "users", "phone") {
        Some(ColumnRewrite::Hash { salt, .. }) => assert_eq!(salt.expose(), SALT),
        other => panic!("{other:?}"),
    }
    let e = config(&format!(
        r#"column_hash = [{{ columns = ['.*'], algorithm = "MD5", salt = "x", salt_file = "{file}" }}]"#
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("route[0].column_hash[0].salt_file"), "{e}");
    let e = config(
        r#"column_hash = [{ columns = ['.*'], algorithm = "MD5", salt_file = "/nonexistent/salt" }]"#,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("route[0].column_hash[0].salt_file") && e.contains("cannot be read"),
        "{e}"
    );
    let e = config(r#"column_hash = [{ columns = ['.*'], algorithm = "MD5" }]"#)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("route[0].column_hash[0].salt") && e.contains("salt_file"),
        "{e}"
    );
}
