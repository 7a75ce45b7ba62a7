//! TLS to the source and `caching_sha2_password`, live against MariaDB and MySQL.
//!
//! Needs the test CA and server certificates of `scripts/services` (in `.data/tls`, or in the
//! directory named by `SLUICE_TEST_TLS_DIR`) and the user `sluice_tls` (password `sluice`,
//! created `REQUIRE SSL`).

mod support;

use std::net::ToSocketAddrs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use support::*;

/// The test CA of `scripts/services`.
fn test_ca() -> PathBuf {
    let dir = std::env::var_os("SLUICE_TEST_TLS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".data/tls"));
    let ca = dir.join("ca.pem");
    assert!(
        ca.is_file(),
        "test CA {} missing: run ./scripts/services up (or set SLUICE_TEST_TLS_DIR)",
        ca.display()
    );
    ca
}

/// Rewrites the pipeline's config: user and host of the URL, and `[source]` TLS lines.
fn configure(p: &Pipeline, user: &str, host: &str, tls: &str) {
    let text = std::fs::read_to_string(&p.config).expect("config");
    let text = text
        .replace(
            &format!("mysql://sluice:sluice@127.0.0.1:{}", p.flavor.port),
            &format!("mysql://{user}:sluice@{host}:{}", p.flavor.port),
        )
        .replace(
            "heartbeat_ms = 1000",
            &format!("heartbeat_ms = 1000\n{tls}"),
        );
    std::fs::write(&p.config, text).expect("write config");
}

fn tls_lines(mode: &str, ca: Option<&Path>) -> String {
    match ca {
        Some(ca) => format!("ssl_mode = \"{mode}\"\nssl_ca = \"{}\"", ca.display()),
        None => format!("ssl_mode = \"{mode}\""),
    }
}

/// The `TLS` line of `sluice check`'s report.
fn tls_line(out: &str) -> Option<&str> {
    out.lines()
        .find(|l| l.split_whitespace().nth(1) == Some("TLS"))
}

/// `sluice check` connected over TLS under `mode`: its report says so.
fn assert_check_tls(p: &Pipeline, mode: &str) {
    let (_, out) = p.command(&["check"]);
    let line = tls_line(&out).unwrap_or_else(|| {
        panic!(
            "[{}] no TLS line in the check report ({mode}):\n{out}",
            p.flavor.name
        )
    });
    assert!(
        line.starts_with("ok")
            && line.contains("TLSv1")
            && line.contains(&format!("ssl_mode={mode}")),
        "[{}] {mode}: {line}\n{out}",
        p.flavor.name
    );
}

fn assert_check_fails(p: &Pipeline, needles: &[&str]) -> String {
    let (code, out) = p.command(&["check"]);
    assert_ne!(code, 0, "[{}] expected failure:\n{out}", p.flavor.name);
    for n in needles {
        assert!(
            out.contains(n),
            "[{}] output should mention {n:?}:\n{out}",
            p.flavor.name
        );
    }
    out
}

/// A name of this machine other than `localhost` that resolves to 127.0.0.1 (so it reaches
/// the test servers but is not in their certificate), if there is one.
fn other_loopback_name() -> Option<String> {
    let out = Command::new("hostname").output().ok()?;
    let name = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if name.is_empty() || name == "localhost" {
        return None;
    }
    let addrs: Vec<_> = (name.as_str(), 3306).to_socket_addrs().ok()?.collect();
    addrs
        .iter()
        .any(|a| a.ip().to_string() == "127.0.0.1")
        .then_some(name)
}

async fn required_encrypts_for_a_require_ssl_user(flavor: Flavor) {
    let p = Pipeline::new(flavor, "tlsreq", "");
    configure(&p, "sluice_tls", "127.0.0.1", &tls_lines("required", None));
    assert_check_tls(&p, "required");
}

async fn preferred_is_the_default_and_encrypts(flavor: Flavor) {
    let p = Pipeline::new(flavor, "tlspref", "");
    configure(&p, "sluice_tls", "127.0.0.1", "");
    assert_check_tls(&p, "preferred");
}

async fn verify_ca_and_verify_identity_with_the_test_ca(flavor: Flavor) {
    let ca = test_ca();
    for mode in ["verify_ca", "verify_identity"] {
        for host in ["127.0.0.1", "localhost"] {
            let p = Pipeline::new(flavor, "tlsverify", "");
            configure(&p, "sluice_tls", host, &tls_lines(mode, Some(&ca)));
            assert_check_tls(&p, mode);
        }
    }
    // A host name the certificate does not list: verify_ca accepts it, verify_identity not.
    if let Some(host) = other_loopback_name() {
        let p = Pipeline::new(flavor, "tlsname", "");
        configure(&p, "sluice_tls", &host, &tls_lines("verify_ca", Some(&ca)));
        assert_check_tls(&p, "verify_ca");
        let p = Pipeline::new(flavor, "tlsname", "");
        configure(
            &p,
            "sluice_tls",
            &host,
            &tls_lines("verify_identity", Some(&ca)),
        );
        assert_check_fails(
            &p,
            &["TLS with the source", "verify_identity", "source.ssl_ca"],
        );
    } else {
        eprintln!("no other name of this machine resolves to 127.0.0.1: host check skipped");
    }
}

async fn verify_ca_with_another_ca_is_a_definite_error(flavor: Flavor) {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = dir.path().join("other-ca.pem");
    let status = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args(["-subj", "/CN=not the test CA"])
        .arg("-keyout")
        .arg(dir.path().join("other-ca-key.pem"))
        .arg("-out")
        .arg(&ca)
        .output()
        .expect("run openssl");
    assert!(status.status.success(), "openssl: {status:?}");
    for mode in ["verify_ca", "verify_identity"] {
        let p = Pipeline::new(flavor, "tlswrongca", "");
        configure(&p, "sluice_tls", "127.0.0.1", &tls_lines(mode, Some(&ca)));
        let out = assert_check_fails(
            &p,
            &[
                "TLS with the source",
                &format!("`source.ssl_mode` = \"{mode}\""),
                "source.ssl_ca",
                "certificate verify failed",
            ],
        );
        let (code, run_out) = p.command(&["run"]);
        assert_eq!(code, 1, "[{}] run:\n{run_out}", flavor.name);
        assert!(run_out.contains("TLS with the source"), "{run_out}");
        assert!(!out.contains("sluice:sluice"), "password leaked:\n{out}");
        assert_nothing_written(&p);
    }
}

async fn a_require_ssl_user_without_tls_is_refused_clearly(flavor: Flavor) {
    let p = Pipeline::new(flavor, "tlsoff", "");
    configure(&p, "sluice_tls", "127.0.0.1", &tls_lines("disabled", None));
    assert_check_fails(
        &p,
        &[
            "refused user `sluice_tls`",
            "not encrypted",
            "REQUIRE SSL",
            "source.ssl_mode",
        ],
    );
}

/// MySQL's `caching_sha2_password` over plaintext: with an empty cache the server asks for
/// the full password. Without `source.allow_public_key_retrieval` `sluice check` refuses to
/// fetch the server's RSA key (naming the setting); with it, sluice sends the password
/// encrypted with that key; over TLS it needs neither.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn caching_sha2_password_over_plaintext_and_tls() {
    let flavor = MYSQL;
    if !flavor.enabled() {
        return;
    }
    let flush = || async {
        // Empties the authentication cache: the next login takes the full (RSA) path.
        let mut c = root(flavor.port).await;
        exec(&mut c, &["FLUSH PRIVILEGES"]).await;
    };
    flush().await;
    let p = Pipeline::new(flavor, "sha2", "");
    configure(&p, "sluice", "127.0.0.1", &tls_lines("disabled", None));
    assert_check_fails(
        &p,
        &[
            "source.allow_public_key_retrieval",
            "man in the middle",
            "over plaintext",
        ],
    );
    for (mode, allow) in [("disabled", true), ("required", false), ("disabled", true)] {
        flush().await;
        let p = Pipeline::new(flavor, "sha2", "");
        let mut lines = tls_lines(mode, None);
        if allow {
            lines.push_str("\nallow_public_key_retrieval = true");
        }
        configure(&p, "sluice", "127.0.0.1", &lines);
        let (_, out) = p.command(&["check"]);
        let line = tls_line(&out).unwrap_or_else(|| panic!("{mode}: no TLS line:\n{out}"));
        assert!(line.starts_with("ok"), "{mode}: {line}\n{out}");
        if mode == "disabled" {
            assert!(line.contains("plaintext"), "{line}");
            assert!(out.contains("are not encrypted"), "a warning:\n{out}");
        } else {
            assert!(line.contains("TLSv1"), "{line}");
            assert!(
                out.contains("certificate is not verified"),
                "a warning:\n{out}"
            );
        }
    }
}

/// The binlog connection uses TLS too: a pipeline with `verify_identity` streams rows.
async fn a_pipeline_streams_over_verified_tls(flavor: Flavor) {
    let ca = test_ca();
    let p = Pipeline::new(flavor, "tlsrun", "");
    configure(
        &p,
        "sluice_tls",
        "127.0.0.1",
        &tls_lines("verify_identity", Some(&ca)),
    );
    let mut c = root(flavor.port).await;
    let db = &p.db;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {db}"),
            &format!("CREATE TABLE {db}.t (id INT PRIMARY KEY, v VARCHAR(20))"),
        ],
    )
    .await;
    let mut child = p.spawn();
    p.wait_started(Duration::from_secs(60));
    exec(
        &mut c,
        &[&format!("INSERT INTO {db}.t VALUES (1, 'over tls')")],
    )
    .await;
    let recs = consume(
        &[p.topic("t")],
        "read_committed",
        1,
        Duration::from_secs(1),
        Duration::from_secs(60),
    );
    terminate(&mut child);
    let log = p.log();
    assert_eq!(
        recs.len(),
        1,
        "[{}] records {recs:?}; log:\n{log}",
        flavor.name
    );
    let after = &recs[0].value.as_ref().expect("value")["after"];
    assert_eq!(after["v"], "over tls", "[{}]", flavor.name);
    assert!(
        log.contains("connected to the source over TLS"),
        "[{}] log:\n{log}",
        flavor.name
    );
    exec(&mut c, &[&format!("DROP DATABASE {db}")]).await;
}

/// sluice's own replication connection (the binlog stream) authenticates like the client
/// library: plaintext (MySQL: `caching_sha2_password` full authentication with the server's
/// RSA key, the cache being empty, only with `source.allow_public_key_retrieval`), TLS (the
/// cleartext password inside TLS), verified TLS, and refuses with the same messages. Without
/// the setting, a plaintext full login is refused on the replication connection and on the
/// query connections alike, before any key is fetched.
async fn the_replication_connection_authenticates(flavor: Flavor) {
    use sluice::config::{SourceUrl, SslMode};
    use sluice::error::ErrorKind;
    use sluice::mysql::replication::Replication;
    use sluice::mysql::server::ConnectOptions;
    use sluice::mysql::session;

    let options = |user: &str, pass: &str, mode: SslMode, allow: bool| ConnectOptions {
        url: SourceUrl::parse(&format!("mysql://{user}:{pass}@127.0.0.1:{}", flavor.port))
            .expect("url"),
        ssl_mode: mode,
        ssl_ca: Some(test_ca()),
        ssl_cert: None,
        ssl_key: None,
        timeout: Duration::from_secs(10),
        allow_public_key_retrieval: allow,
    };
    let cold_cache = || async {
        if flavor.name == "mysql" {
            // Empties the authentication cache: the next login takes the full path.
            let mut c = root(flavor.port).await;
            exec(&mut c, &["FLUSH PRIVILEGES"]).await;
        }
    };
    let cases = [
        ("sluice", SslMode::Disabled, true),
        ("sluice", SslMode::Required, false),
        ("sluice", SslMode::Disabled, true),
        ("sluice_tls", SslMode::Preferred, false),
        ("sluice_tls", SslMode::VerifyIdentity, false),
    ];
    for (user, mode, allow) in cases {
        cold_cache().await;
        let mut conn = Replication::connect(&options(user, "sluice", mode, allow))
            .await
            .unwrap_or_else(|e| panic!("[{}] {user} {mode}: {e}", flavor.name));
        conn.query_drop("SET @master_heartbeat_period = 1000000000")
            .await
            .unwrap_or_else(|e| panic!("[{}] {user} {mode}: {e}", flavor.name));
    }
    // Plaintext without the setting, on a cold cache.
    let plain = options("sluice", "sluice", SslMode::Disabled, false);
    for query in [false, true] {
        cold_cache().await;
        let result = if query {
            session::connect(&plain).await.map(drop)
        } else {
            Replication::connect(&plain).await.map(drop)
        };
        if flavor.name == "mysql" {
            let e = result.expect_err("a plaintext full login without the setting is refused");
            assert_eq!(e.kind(), ErrorKind::Definite, "{e}");
            assert!(
                e.to_string().contains("source.allow_public_key_retrieval")
                    && e.to_string().contains("man in the middle"),
                "[{}] query {query}: {e}",
                flavor.name
            );
        } else {
            // MariaDB's mysql_native_password never sends the password itself.
            result.unwrap_or_else(|e| panic!("[{}] query {query}: {e}", flavor.name));
        }
    }
    // With the setting, the query connection logs in over plaintext on a cold cache.
    cold_cache().await;
    session::connect(&options("sluice", "sluice", SslMode::Disabled, true))
        .await
        .unwrap_or_else(|e| panic!("[{}] allowed: {e}", flavor.name));
    let e = Replication::connect(&options("sluice", "wrong", SslMode::Disabled, true))
        .await
        .err()
        .expect("a wrong password is refused");
    assert_eq!(e.kind(), ErrorKind::Definite, "{e}");
    assert!(e.to_string().contains("refused user `sluice`"), "{e}");
    let e = Replication::connect(&options("sluice_tls", "sluice", SslMode::Disabled, true))
        .await
        .err()
        .expect("a REQUIRE SSL user is refused without TLS");
    assert_eq!(e.kind(), ErrorKind::Definite, "{e}");
    assert!(e.to_string().contains("REQUIRE SSL"), "{e}");
}

per_flavor!(
    verify_ca_with_another_ca_is_a_definite_error,
    required_encrypts_for_a_require_ssl_user,
    preferred_is_the_default_and_encrypts,
    verify_ca_and_verify_identity_with_the_test_ca,
    a_require_ssl_user_without_tls_is_refused_clearly,
    a_pipeline_streams_over_verified_tls,
    the_replication_connection_authenticates,
);
