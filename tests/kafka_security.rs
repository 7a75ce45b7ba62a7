//! Kafka security end to end, against the test bed broker's secure listeners
//! (`scripts/lib/kafka.sh`): SASL_SSL on 127.0.0.1:9095 with SCRAM-SHA-512, SCRAM-SHA-256 and
//! PLAIN, and SSL with client certificates on 127.0.0.1:9096, both under the StandardAuthorizer
//! with `allow.everyone.if.no.acl.found=false`. The SASL user `writer` and the certificate
//! `CN=sluice-writer` may use the pipelines named `secure_*` (their topics, transactional id
//! and groups; `securenotxn*` gets the topics only); `denied` and `CN=sluice-denied` may do
//! nothing. Every count is taken by an
//! independent `read_committed` consumer on the PLAINTEXT listener.
//!
//! Needs the certificates of `scripts/services` in `.data/tls` (or `SLUICE_TEST_TLS_DIR`).
//! Sizes: SLUICE_TEST_SECURE_CHANGES (default 2000) and SLUICE_TEST_SECURE_KILLS (default 4)
//! per protocol and server.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use support::*;

const SASL_BOOTSTRAP: &str = "127.0.0.1:9095";
const MTLS_BOOTSTRAP: &str = "127.0.0.1:9096";

fn tls_dir() -> PathBuf {
    let dir = std::env::var_os("SLUICE_TEST_TLS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".data/tls"));
    assert!(
        dir.join("kafka-writer-cert.pem").is_file(),
        "Kafka client certificates missing in {}: run ./scripts/services up",
        dir.display()
    );
    dir
}

/// `[kafka.security]` for SASL_SSL as `user` with `password`.
fn sasl(mechanism: &str, user: &str, password: &str) -> String {
    format!(
        "protocol = \"sasl_ssl\"\nmechanism = \"{mechanism}\"\nusername = \"{user}\"\n\
         password = \"{password}\"\nca_file = {:?}\n",
        tls_dir().join("ca.pem").display().to_string()
    )
}

/// `[kafka.security]` for mutual TLS with the certificate of `client` (`writer`, `denied`).
fn mtls(client: &str) -> String {
    let dir = tls_dir();
    let path = |f: String| format!("{:?}", dir.join(f).display().to_string());
    format!(
        "protocol = \"ssl\"\nca_file = {}\ncert_file = {}\nkey_file = {}\n",
        path("ca.pem".into()),
        path(format!("kafka-{client}-cert.pem")),
        path(format!("kafka-{client}-key.pem")),
    )
}

/// A pipeline named `<prefix>_<flavor>_<tag>_<random>` writing through `bootstrap` with
/// `security` as its `[kafka.security]`.
fn secure_pipeline(
    flavor: Flavor,
    prefix: &str,
    tag: &str,
    bootstrap: &str,
    security: &str,
) -> Pipeline {
    let name = unique(&format!("{prefix}_{}_{tag}", flavor.name));
    let p = Pipeline::named(flavor, &name, "");
    p.edit_config(
        &format!("bootstrap_servers = \"{KAFKA}\""),
        &format!("bootstrap_servers = \"{bootstrap}\""),
    );
    p.edit_config(
        "\n[commit]\n",
        &format!("\n[kafka.security]\n{security}\n[commit]\n"),
    );
    p
}

async fn exactly_once_over_sasl_ssl_and_mutual_tls(flavor: Flavor) {
    let changes = env_usize("SLUICE_TEST_SECURE_CHANGES", 2000);
    let kills = env_usize("SLUICE_TEST_SECURE_KILLS", 4);
    let scram = secure_pipeline(
        flavor,
        "secure",
        "scram",
        SASL_BOOTSTRAP,
        &sasl("SCRAM-SHA-512", "writer", "writer-secret"),
    );
    crash::sigkill_at_random_moments(&scram, changes, kills).await;
    let mutual = secure_pipeline(flavor, "secure", "mtls", MTLS_BOOTSTRAP, &mtls("writer"));
    crash::sigkill_at_random_moments(&mutual, changes, kills).await;
}

async fn every_sasl_mechanism_streams(flavor: Flavor) {
    for mechanism in ["SCRAM-SHA-256", "PLAIN"] {
        let tag = mechanism.replace('-', "").to_ascii_lowercase();
        let p = secure_pipeline(
            flavor,
            "secure",
            &tag,
            SASL_BOOTSTRAP,
            &sasl(mechanism, "writer", "writer-secret"),
        );
        let (mut c, mut child) = p
            .start_with(&[("t", "(id INT PRIMARY KEY, v VARCHAR(20))")])
            .await;
        let rows: Vec<String> = (1..=20).map(|i| format!("({i}, 'v{i}')")).collect();
        exec(
            &mut c,
            &[&format!("INSERT INTO {}.t VALUES {}", p.db, rows.join(","))],
        )
        .await;
        let recs = consume(
            &[p.topic("t")],
            "read_committed",
            20,
            Duration::from_secs(2),
            Duration::from_secs(60),
        );
        assert_eq!(recs.len(), 20, "[{}] {mechanism}: {recs:?}", flavor.name);
        terminate(&mut child);
        let (code, out) = p.command(&["check"]);
        assert!(
            out.contains(&format!(
                "security.protocol SASL_SSL, sasl.mechanism {mechanism}, principal User:writer"
            )),
            "[{}] {mechanism}: `sluice check` (exit {code}) does not report the identity:\n{out}",
            flavor.name
        );
    }
}

async fn avro_over_sasl_ssl_and_mutual_tls(flavor: Flavor) {
    let registry = format!("\n[schema_registry]\nurl = \"{}\"\n", registry_url());
    for (tag, bootstrap, security) in [
        (
            "avro_scram",
            SASL_BOOTSTRAP,
            sasl("SCRAM-SHA-512", "writer", "writer-secret"),
        ),
        ("avro_mtls", MTLS_BOOTSTRAP, mtls("writer")),
    ] {
        let p = secure_pipeline(flavor, "secure", tag, bootstrap, &security);
        p.edit_config(
            "format = \"json\"",
            &format!("format = \"avro\"\n{registry}"),
        );
        let (mut c, mut child) = p
            .start_with(&[("t", "(id INT PRIMARY KEY, a VARCHAR(10))")])
            .await;
        exec(
            &mut c,
            &[
                &format!("INSERT INTO {}.t VALUES (1, 'x'), (2, 'y')", p.db),
                &format!("UPDATE {}.t SET a = 'z' WHERE id = 2", p.db),
            ],
        )
        .await;
        // Confluent's own client decodes what sluice wrote over the secure listener.
        let lines = avro_consume(&p.topic("t"), 3);
        assert_eq!(lines.len(), 3, "[{}] {tag}: {lines:?}", flavor.name);
        assert_eq!(
            lines[2]["value"]["after"],
            serde_json::json!({"id": 2, "a": "z"}),
            "[{}] {tag}",
            flavor.name
        );
        terminate(&mut child);
    }
}

/// Runs `sluice run` on `p`, which must stop by itself with exit 1 within 90 s; its output
/// and log must hold every one of `needles`.
fn run_fails_naming(p: &Pipeline, needles: &[&str]) {
    let (code, out) = p.command_within(&["run"], Duration::from_secs(90));
    let text = format!("{out}\n{}", p.log());
    assert_eq!(
        code, 1,
        "[{}] `sluice run` exit code; output:\n{text}",
        p.name
    );
    for needle in needles {
        assert!(
            text.contains(needle),
            "[{}] no {needle:?} in the output:\n{text}",
            p.name
        );
    }
}

async fn logins_and_acls_refused_are_definite_and_name_the_principal(flavor: Flavor) {
    let mut c = root(flavor.port).await;
    let table = |p: &Pipeline| {
        vec![
            format!("CREATE DATABASE {}", p.db),
            format!("CREATE TABLE {}.t (id INT PRIMARY KEY)", p.db),
            format!("INSERT INTO {}.t VALUES (1)", p.db),
        ]
    };

    // A wrong password: the broker refuses the login (Kafka says "invalid credentials").
    let p = secure_pipeline(
        flavor,
        "secure",
        "badpw",
        SASL_BOOTSTRAP,
        &sasl("SCRAM-SHA-512", "writer", "not-the-password"),
    );
    run_fails_naming(
        &p,
        &[
            "refused sluice's login as User:writer",
            "invalid credentials",
            "kafka.security.password",
        ],
    );
    assert!(
        !p.log().contains("not-the-password"),
        "the password leaked into the log"
    );

    // A broker certificate the configured CA did not sign (the CA file holds another
    // certificate): the TLS handshake fails, which must not read as a broker that is down.
    let p = secure_pipeline(
        flavor,
        "secure",
        "badca",
        SASL_BOOTSTRAP,
        &sasl("SCRAM-SHA-512", "writer", "writer-secret")
            .replace("ca.pem", "kafka-denied-cert.pem"),
    );
    run_fails_naming(
        &p,
        &[
            "TLS handshake with the Kafka broker failed",
            "kafka.security.ca_file",
        ],
    );

    // A certificate the broker trusts, of a principal without any ACL.
    let p = secure_pipeline(flavor, "secure", "denied", MTLS_BOOTSTRAP, &mtls("denied"));
    run_fails_naming(
        &p,
        &[
            "User:CN=sluice-denied",
            "--allow-principal User:CN=sluice-denied",
        ],
    );

    // The data topic outside the writer's ACLs (the route writes `other_<db>.t`).
    let p = secure_pipeline(
        flavor,
        "secure",
        "topicacl",
        SASL_BOOTSTRAP,
        &sasl("SCRAM-SHA-512", "writer", "writer-secret"),
    );
    p.edit_config(
        &format!("topic = \"{}.$1\"", p.db),
        &format!("topic = \"other_{}.$1\"", p.db),
    );
    let stmts = table(&p);
    exec(
        &mut c,
        &stmts.iter().map(String::as_str).collect::<Vec<_>>(),
    )
    .await;
    p.edit_config("start = \"latest\"", "start = \"earliest\"");
    run_fails_naming(
        &p,
        &[
            "TopicAuthorizationFailed",
            "User:writer",
            "--allow-principal User:writer",
        ],
    );

    // The transactional id outside the writer's ACLs: the topic ACLs cover the names
    // `secure*`, the transactional id ones only `sluice-secure_*`.
    let p = secure_pipeline(
        flavor,
        "securenotxn",
        "txnacl",
        SASL_BOOTSTRAP,
        &sasl("SCRAM-SHA-512", "writer", "writer-secret"),
    );
    run_fails_naming(
        &p,
        &[
            "Transactional Id authorization failed",
            &format!("TransactionalId `sluice-{}`", p.name),
            "--allow-principal User:writer",
        ],
    );

    // The offsets topic outside the writer's ACLs.
    let p = secure_pipeline(
        flavor,
        "secure",
        "offsetsacl",
        SASL_BOOTSTRAP,
        &sasl("SCRAM-SHA-512", "writer", "writer-secret"),
    );
    p.edit_config(
        &format!("offsets_topic = \"{}.offsets\"", p.name),
        &format!("offsets_topic = \"denied_{}.offsets\"", p.name),
    );
    run_fails_naming(
        &p,
        &[
            &format!("denied_{}.offsets", p.name),
            "TopicAuthorizationFailed",
            "--allow-principal User:writer",
        ],
    );
}

per_flavor!(
    exactly_once_over_sasl_ssl_and_mutual_tls,
    every_sasl_mechanism_streams,
    avro_over_sasl_ssl_and_mutual_tls,
    logins_and_acls_refused_are_definite_and_name_the_principal,
);
