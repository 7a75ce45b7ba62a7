use std::collections::BTreeMap;

use crate::config::{Config, ConfigError};

const BASE: &str = r#"
name = "shop"
[source]
url = "mysql://sluice:sluice@127.0.0.1:3306"
server_id = 5401
[kafka]
bootstrap_servers = "127.0.0.1:9095"
"#;

fn parse_env(security: &str, env: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let text = format!("{BASE}[kafka.security]\n{security}\n");
    Config::from_str_with_env(
        &text,
        env.iter().map(|(k, v)| (k.to_string(), v.to_string())),
    )
}

fn parse(security: &str) -> Result<Config, ConfigError> {
    parse_env(security, &[])
}

fn problem_paths(security: &str) -> Vec<String> {
    match parse(security) {
        Ok(c) => panic!("expected problems, got {c:?}"),
        Err(e) => {
            let ps = e.problems();
            assert!(!ps.is_empty(), "not a validation error: {e}");
            for p in ps {
                assert!(!p.found.is_empty() && !p.expected.is_empty() && !p.fix.is_empty());
            }
            ps.iter().map(|p| p.path.clone()).collect()
        }
    }
}

fn props(c: &Config) -> BTreeMap<&'static str, String> {
    c.kafka
        .security
        .as_ref()
        .expect("security")
        .librdkafka_properties()
        .into_iter()
        .collect()
}

#[test]
fn scram_over_tls_maps_onto_librdkafka() {
    let c = parse(
        "protocol = \"sasl_ssl\"\nmechanism = \"SCRAM-SHA-512\"\nusername = \"writer\"\n\
         password = \"pw\"\nca_file = \"Cargo.toml\"",
    )
    .unwrap();
    let p = props(&c);
    assert_eq!(p["security.protocol"], "SASL_SSL");
    assert_eq!(p["sasl.mechanism"], "SCRAM-SHA-512");
    assert_eq!(p["sasl.username"], "writer");
    assert_eq!(p["sasl.password"], "pw");
    assert_eq!(p["ssl.ca.location"], "Cargo.toml");
    assert_eq!(p["ssl.endpoint.identification.algorithm"], "https");
    assert!(!p.contains_key("ssl.certificate.location"));
    let client = crate::app::client_config(&c);
    assert_eq!(client.get("sasl.username"), Some("writer"));
    assert_eq!(client.get("security.protocol"), Some("SASL_SSL"));
}

#[test]
fn mutual_tls_maps_the_certificate_and_key() {
    let c = parse(
        "protocol = \"ssl\"\ncert_file = \"Cargo.toml\"\nkey_file = \"Cargo.lock\"\n\
         key_password = \"kp\"\nverify_hostname = false",
    )
    .unwrap();
    let p = props(&c);
    assert_eq!(p["security.protocol"], "SSL");
    assert_eq!(p["ssl.certificate.location"], "Cargo.toml");
    assert_eq!(p["ssl.key.location"], "Cargo.lock");
    assert_eq!(p["ssl.key.password"], "kp");
    assert_eq!(p["ssl.endpoint.identification.algorithm"], "none");
    assert!(!p.contains_key("sasl.mechanism"));
}

#[test]
fn conflicts_and_missing_pieces_name_the_setting() {
    let cases: &[(&str, &str)] = &[
        ("protocol = \"sasl_ssl\"", "kafka.security.mechanism"),
        (
            "protocol = \"ssl\"\nmechanism = \"PLAIN\"",
            "kafka.security.mechanism",
        ),
        (
            "protocol = \"sasl_ssl\"\nmechanism = \"PLAIN\"\npassword = \"x\"",
            "kafka.security.username",
        ),
        (
            "protocol = \"sasl_ssl\"\nmechanism = \"SCRAM-SHA-256\"\nusername = \"u\"",
            "kafka.security.password",
        ),
        (
            "protocol = \"sasl_ssl\"\nmechanism = \"OAUTHBEARER\"\nusername = \"u\"",
            "kafka.security.username",
        ),
        ("username = \"u\"", "kafka.security.username"),
        (
            "protocol = \"plaintext\"\nca_file = \"Cargo.toml\"",
            "kafka.security.ca_file",
        ),
        (
            "protocol = \"sasl_plaintext\"\nmechanism = \"PLAIN\"\nusername = \"u\"\n\
             password = \"p\"\nverify_hostname = false",
            "kafka.security.verify_hostname",
        ),
        (
            "protocol = \"ssl\"\ncert_file = \"Cargo.toml\"",
            "kafka.security.key_file",
        ),
        (
            "protocol = \"ssl\"\nkey_file = \"Cargo.toml\"",
            "kafka.security.cert_file",
        ),
        (
            "protocol = \"ssl\"\nkey_password = \"x\"",
            "kafka.security.key_password",
        ),
        (
            "protocol = \"ssl\"\nca_file = \"/nonexistent/ca.pem\"",
            "kafka.security.ca_file",
        ),
    ];
    for (security, path) in cases {
        let paths = problem_paths(security);
        assert!(
            paths.iter().any(|p| p == path),
            "{security:?}: no problem at {path}: {paths:?}"
        );
    }
}

#[test]
fn a_property_the_section_owns_is_refused_in_kafka_properties() {
    for (prop, owner) in [
        ("sasl.password", "kafka.security.password"),
        ("sasl.mechanisms", "kafka.security.mechanism"),
        ("security.protocol", "kafka.security.protocol"),
    ] {
        let text = format!(
            "{BASE}[kafka.security]\nprotocol = \"sasl_ssl\"\nmechanism = \"PLAIN\"\n\
             username = \"u\"\npassword = \"p\"\n[kafka.properties]\n\"{prop}\" = \"x\"\n"
        );
        let e = Config::from_str_with_env(&text, std::iter::empty()).unwrap_err();
        let p = e
            .problems()
            .iter()
            .find(|p| p.path == format!("kafka.properties.{prop:?}"))
            .unwrap_or_else(|| panic!("{prop}: {e}"));
        assert!(p.expected.contains(owner), "{p}");
        assert!(!e.to_string().contains("\"x\"") || prop != "sasl.password");
    }
    // The CA's property is the section's only when it sets the CA.
    let text = format!(
        "{BASE}[kafka.security]\nprotocol = \"ssl\"\n[kafka.properties]\n\"ssl.ca.pem\" = \"x\"\n"
    );
    Config::from_str_with_env(&text, std::iter::empty()).unwrap();
    let text = format!(
        "{BASE}[kafka.security]\nprotocol = \"ssl\"\nca_file = \"Cargo.toml\"\n\
         [kafka.properties]\n\"ssl.ca.pem\" = \"x\"\n"
    );
    assert!(Config::from_str_with_env(&text, std::iter::empty()).is_err());
}

#[test]
fn passwords_come_from_files_or_the_environment_and_never_show() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("kafka.password");
    std::fs::write(&file, "from-file-pw\n").unwrap();
    let c = parse(&format!(
        "protocol = \"sasl_ssl\"\nmechanism = \"SCRAM-SHA-512\"\nusername = \"writer\"\n\
         password_file = {:?}",
        file.display().to_string()
    ))
    .unwrap();
    assert_eq!(props(&c)["sasl.password"], "from-file-pw");
    let shown = format!(
        "{c:?}\n{}",
        toml::to_string(&c).expect("serializes") // what GET /config and `check` show
    );
    assert!(!shown.contains("from-file-pw"), "{shown}");
    // What the start log, `sluice check` and `GET /config` print.
    let json = c.redacted_json();
    assert!(!json.to_string().contains("from-file-pw"), "{json}");
    assert_eq!(json["kafka"]["security"]["password"], "***");
    assert_eq!(json["kafka"]["security"]["username"], "writer");
    let c = parse_env(
        "protocol = \"sasl_ssl\"\nmechanism = \"PLAIN\"\nusername = \"writer\"",
        &[
            ("SLUICE_KAFKA_SECURITY_PASSWORD", "env-pw"),
            ("SLUICE_KAFKA_SECURITY_KEY_PASSWORD", "env-kp"),
            ("SLUICE_KAFKA_SECURITY_PROTOCOL", "sasl_ssl"),
        ],
    );
    // A key password without a TLS key file is a problem; its value never shows in it.
    let e = c.unwrap_err().to_string();
    assert!(e.contains("kafka.security.key_password"), "{e}");
    assert!(!e.contains("env-kp") && !e.contains("env-pw"), "{e}");
    let c = parse_env(
        "protocol = \"sasl_ssl\"\nmechanism = \"PLAIN\"\nusername = \"writer\"",
        &[("SLUICE_KAFKA_SECURITY_PASSWORD", "env-pw")],
    )
    .unwrap();
    assert_eq!(props(&c)["sasl.password"], "env-pw");
    assert!(!format!("{c:?}").contains("env-pw"));
    // Both ways at once is refused.
    let e = parse_env(
        &format!(
            "protocol = \"sasl_ssl\"\nmechanism = \"PLAIN\"\nusername = \"writer\"\n\
             password_file = {:?}",
            file.display().to_string()
        ),
        &[("SLUICE_KAFKA_SECURITY_PASSWORD", "env-pw")],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("kafka.security.password_file") && e.contains("both"),
        "{e}"
    );
}

#[test]
fn unknown_keys_and_values_are_refused() {
    assert!(parse("protocol = \"tls\"").is_err());
    assert!(parse("protocol = \"ssl\"\nmechanism = \"SCRAM\"").is_err());
    let e = parse("protocl = \"ssl\"").unwrap_err().to_string();
    assert!(e.contains("protocl"), "{e}");
}

#[test]
fn kerberos_is_refused_as_this_build_has_no_gssapi() {
    let paths = problem_paths("protocol = \"sasl_ssl\"\nmechanism = \"GSSAPI\"");
    assert!(
        paths.iter().any(|p| p == "kafka.security.mechanism"),
        "{paths:?}"
    );
    // What the refusal stands for: the bundled librdkafka has no GSSAPI provider. A build
    // with it fails here, and the refusal above must go.
    let mut c = rdkafka::config::ClientConfig::new();
    c.set("bootstrap.servers", "127.0.0.1:1")
        .set("security.protocol", "SASL_PLAINTEXT")
        .set("sasl.mechanism", "GSSAPI");
    let created = c.create::<rdkafka::producer::BaseProducer>();
    let err = created.err().expect("this build has no GSSAPI").to_string();
    assert!(err.contains("GSSAPI"), "{err}");
}
