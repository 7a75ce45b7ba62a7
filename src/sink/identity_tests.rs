use super::*;

fn client(props: &[(&str, &str)]) -> ClientConfig {
    let mut c = ClientConfig::new();
    for (k, v) in props {
        c.set(*k, *v);
    }
    c
}

#[test]
fn sasl_users_are_their_user_name() {
    for m in ["PLAIN", "SCRAM-SHA-256", "scram-sha-512"] {
        let id = KafkaIdentity::of(&client(&[
            ("security.protocol", "sasl_ssl"),
            ("sasl.mechanism", m),
            ("sasl.username", "writer"),
        ]));
        assert_eq!(id.principal, "User:writer", "{m}");
        assert_eq!(id.protocol, "SASL_SSL");
        assert_eq!(
            id.mechanism.as_deref(),
            Some(m.to_ascii_uppercase().as_str())
        );
        assert!(id.describe().contains("principal User:writer"));
        assert_eq!(id.warning(), None);
    }
}

#[test]
fn plaintext_and_ssl_without_a_certificate_are_anonymous() {
    assert_eq!(KafkaIdentity::of(&client(&[])).principal, "User:ANONYMOUS");
    assert_eq!(
        KafkaIdentity::of(&client(&[("security.protocol", "SSL")])).principal,
        "User:ANONYMOUS"
    );
}

fn self_signed(subject: &[(&str, &str)]) -> String {
    let key = openssl::pkey::PKey::from_rsa(openssl::rsa::Rsa::generate(2048).unwrap()).unwrap();
    let mut name = openssl::x509::X509NameBuilder::new().unwrap();
    for (k, v) in subject {
        name.append_entry_by_text(k, v).unwrap();
    }
    let name = name.build();
    let mut b = openssl::x509::X509Builder::new().unwrap();
    b.set_subject_name(&name).unwrap();
    b.set_issuer_name(&name).unwrap();
    b.set_pubkey(&key).unwrap();
    b.set_not_before(&openssl::asn1::Asn1Time::days_from_now(0).unwrap())
        .unwrap();
    b.set_not_after(&openssl::asn1::Asn1Time::days_from_now(1).unwrap())
        .unwrap();
    b.sign(&key, openssl::hash::MessageDigest::sha256())
        .unwrap();
    String::from_utf8(b.build().to_pem().unwrap()).unwrap()
}

#[test]
fn a_client_certificate_is_its_subject_most_specific_part_first() {
    let pem = self_signed(&[("C", "DE"), ("O", "Acme, Inc"), ("CN", "sluice-writer")]);
    let want = r"User:CN=sluice-writer,O=Acme\, Inc,C=DE";
    let id = KafkaIdentity::of(&client(&[
        ("security.protocol", "ssl"),
        ("ssl.certificate.pem", &pem),
    ]));
    assert_eq!(id.principal, want, "{}", id.describe());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cert.pem");
    std::fs::write(&path, &pem).unwrap();
    let id = KafkaIdentity::of(&client(&[
        ("security.protocol", "SSL"),
        ("ssl.certificate.location", path.to_str().unwrap()),
    ]));
    assert_eq!(id.principal, want);
    assert!(id.describe().contains("ssl.principal.mapping.rules"));
    // SASL over TLS with a client certificate: the SASL user is the principal.
    let id = KafkaIdentity::of(&client(&[
        ("security.protocol", "SASL_SSL"),
        ("sasl.mechanism", "PLAIN"),
        ("sasl.username", "writer"),
        ("ssl.certificate.location", path.to_str().unwrap()),
    ]));
    assert_eq!(id.principal, "User:writer");
    let id = KafkaIdentity::of(&client(&[
        ("security.protocol", "SSL"),
        ("ssl.certificate.location", "/nonexistent/cert.pem"),
    ]));
    assert!(
        id.describe().contains("could not be read"),
        "{}",
        id.describe()
    );
}

#[test]
fn special_characters_are_escaped() {
    assert_eq!(
        escape_rfc2253(r#"a,b+c"d\e<f>g;h"#),
        r#"a\,b\+c\"d\\e\<f\>g\;h"#
    );
    assert_eq!(escape_rfc2253("#x "), r"\#x\ ");
    assert_eq!(escape_rfc2253(" x"), r"\ x");
    assert_eq!(escape_rfc2253("plain"), "plain");
}

#[test]
fn the_mark_becomes_the_principal() {
    let id = KafkaIdentity::of(&client(&[
        ("security.protocol", "SASL_SSL"),
        ("sasl.mechanism", "SCRAM-SHA-512"),
        ("sasl.username", "writer"),
    ]));
    let e = Error::definite(format!(
        "not authorized: grant it to {PRINCIPAL} (`--allow-principal {PRINCIPAL}`)"
    ));
    let e = id.name_in(e);
    assert_eq!(
        e.to_string(),
        "not authorized: grant it to User:writer (`--allow-principal User:writer`)"
    );
    assert_eq!(e.kind(), crate::error::ErrorKind::Definite);
    let id = KafkaIdentity::of_pipeline(&client(&[]), "shop");
    let e = id.name_in(Error::definite(format!(
        "grant WRITE on TransactionalId `sluice-{PIPELINE}` to {PRINCIPAL}"
    )));
    assert_eq!(
        e.to_string(),
        "grant WRITE on TransactionalId `sluice-shop` to User:ANONYMOUS"
    );
}

#[test]
fn kerberos_and_plaintext_sasl() {
    let gss = KafkaIdentity::of(&client(&[
        ("security.protocol", "SASL_PLAINTEXT"),
        ("sasl.kerberos.principal", "sluice/host@EXAMPLE.COM"),
    ]));
    assert_eq!(gss.principal, "User:sluice");
    assert_eq!(gss.mechanism.as_deref(), Some("GSSAPI"));
    assert!(gss.warning().unwrap().contains("unencrypted"));
    let plain = KafkaIdentity::of(&client(&[
        ("security.protocol", "SASL_PLAINTEXT"),
        ("sasl.mechanism", "PLAIN"),
        ("sasl.username", "u"),
    ]));
    assert!(plain.warning().unwrap().contains("password"));
}
