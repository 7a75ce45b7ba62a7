//! Tests of the registry client against a canned local HTTP server: subject naming,
//! request shapes, the cache, retries, and the error kinds of answers the real (auth-less)
//! test registry cannot give. The tests against a real registry are in `tests/registry.rs`.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;

use schema_registry_converter::schema_registry_common::SubjectNameStrategy as SrcStrategy;

use super::*;
use crate::error::ErrorKind;

const PASSWORD: &str = "Hunter2RegistrySecret";
const SCHEMA: &str = r#"{"type":"record","name":"Value","namespace":"shop.orders","fields":[{"name":"id","type":"long"}]}"#;

// ---------------------------------------------------------------- naming

#[test]
fn subjects_per_strategy() {
    use SubjectNameStrategy as S;
    let full = "shop.orders.Value";
    assert_eq!(
        subject_for(S::TopicName, "shop.orders", false, full),
        "shop.orders-value"
    );
    assert_eq!(
        subject_for(S::TopicName, "shop.orders", true, "shop.orders.Key"),
        "shop.orders-key"
    );
    assert_eq!(
        subject_for(S::RecordName, "shop.orders", false, full),
        "shop.orders.Value"
    );
    assert_eq!(
        subject_for(S::TopicRecordName, "t", true, "a.b.Key"),
        "t-a.b.Key"
    );
}

#[test]
fn subjects_match_schema_registry_converter() {
    // The converter names subjects as the Java serializers do: the reference.
    for (topic, is_key, full) in [
        ("shop.orders", false, "shop.orders.Value"),
        ("shop.orders", true, "shop.orders.Key"),
        ("x", true, "ns.R"),
    ] {
        let pairs = [
            (
                SubjectNameStrategy::TopicName,
                SrcStrategy::TopicNameStrategy(topic.to_string(), is_key),
            ),
            (
                SubjectNameStrategy::RecordName,
                SrcStrategy::RecordNameStrategy(full.to_string()),
            ),
            (
                SubjectNameStrategy::TopicRecordName,
                SrcStrategy::TopicRecordNameStrategy(topic.to_string(), full.to_string()),
            ),
        ];
        for (ours, theirs) in pairs {
            assert_eq!(
                subject_for(ours, topic, is_key, full),
                theirs.get_subject().unwrap()
            );
        }
    }
}

#[test]
fn subjects_are_escaped_as_one_path_segment() {
    assert_eq!(segment("shop.orders-value"), "shop.orders-value");
    assert_eq!(segment("a/b c?d#e%f"), "a%2Fb%20c%3Fd%23e%25f");
}

// ---------------------------------------------------------------- retry policy

fn policy(min_ms: u64, max_ms: u64, deadline: Duration, max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        backoff_min: Duration::from_millis(min_ms),
        backoff_max: Duration::from_millis(max_ms),
        deadline: Instant::now() + deadline,
        max_attempts,
    }
}

#[test]
fn backoff_doubles_up_to_the_maximum() {
    let p = policy(100, 1000, Duration::from_secs(1), 0);
    let delays: Vec<u64> = (1..=6)
        .map(|n| u64::try_from(p.delay(n).as_millis()).unwrap())
        .collect();
    assert_eq!(delays, [100, 200, 400, 800, 1000, 1000]);
    assert_eq!(p.delay(u32::MAX), Duration::from_millis(1000));
    let config = SchemaRegistryConfig {
        retry_backoff_max_ms: 30,
        ..SchemaRegistryConfig::default()
    };
    let p = RetryPolicy::until(&config, Instant::now());
    assert_eq!(
        (p.backoff_min, p.backoff_max),
        (Duration::from_millis(30), Duration::from_millis(30))
    );
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn unavailable() -> RegistryError {
    RegistryError::new(
        RegistryErrorKind::Unavailable,
        Operation::Register,
        "http://x",
        "down",
    )
}

#[test]
fn retry_stops_at_success_definite_error_attempts_or_deadline() {
    let rt = rt();
    // Two transient failures, then success.
    let mut calls = 0;
    let got = rt.block_on(retry(&policy(1, 5, Duration::from_secs(5), 0), || {
        calls += 1;
        let n = calls;
        async move {
            if n < 3 {
                Err(unavailable())
            } else {
                Ok(n)
            }
        }
    }));
    assert_eq!(got.unwrap(), 3);
    // A definite error is not retried.
    let mut calls = 0;
    let e = rt
        .block_on(retry(&policy(1, 5, Duration::from_secs(5), 0), || {
            calls += 1;
            async {
                Err::<(), _>(RegistryError::from_response(
                    409,
                    "",
                    Operation::Register,
                    "http://x",
                    Some("s"),
                ))
            }
        }))
        .unwrap_err();
    assert_eq!((calls, e.attempts), (1, 1));
    // Attempts bound.
    let mut calls = 0;
    let e = rt
        .block_on(retry(&policy(1, 5, Duration::from_secs(5), 4), || {
            calls += 1;
            async { Err::<(), _>(unavailable()) }
        }))
        .unwrap_err();
    assert_eq!((calls, e.attempts), (4, 4));
    assert!(e.to_string().contains("after 4 attempts"), "{e}");
    // Deadline bound.
    let started = Instant::now();
    let e = rt
        .block_on(retry(
            &policy(10, 20, Duration::from_millis(150), 0),
            || async { Err::<(), _>(unavailable()) },
        ))
        .unwrap_err();
    assert!(e.attempts >= 3, "{}", e.attempts);
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(Error::from(e).kind(), ErrorKind::Transient);
}

// ---------------------------------------------------------------- canned server

/// One request as the server saw it.
#[derive(Debug)]
struct Seen {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A local HTTP/1.1 server answering each connection with the next canned
/// `(status, body)`, then closing it. Requests are reported on the returned channel.
fn serve(answers: Vec<(u16, &str)>) -> (String, mpsc::Receiver<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let mut answers: VecDeque<(u16, String)> = answers
        .into_iter()
        .map(|(s, b)| (s, b.to_string()))
        .collect();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        while let Some((status, body)) = answers.pop_front() {
            let Ok((stream, _)) = listener.accept() else {
                return;
            };
            let Some(seen) = read_request(&stream) else {
                continue;
            };
            let _ = tx.send(seen);
            let mut stream = stream;
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, rx)
}

fn read_request(stream: &TcpStream) -> Option<Seen> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    let len = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some(Seen {
        method,
        path,
        headers,
        body: String::from_utf8(body).ok()?,
    })
}

fn config(url: &str) -> SchemaRegistryConfig {
    SchemaRegistryConfig {
        url: url.to_string(),
        timeout_ms: 2000,
        retry_backoff_max_ms: 20,
        ..SchemaRegistryConfig::default()
    }
}

fn with_auth(url: &str) -> SchemaRegistryConfig {
    SchemaRegistryConfig {
        username: "key".to_string(),
        password: Secret::new(PASSWORD.to_string()),
        ..config(url)
    }
}

fn registry(config: &SchemaRegistryConfig) -> Registry {
    Registry::new(config).unwrap()
}

#[test]
fn register_sends_the_confluent_request_and_caches_the_id() {
    let (url, seen) = serve(vec![(200, r#"{"id":7}"#), (200, r#"{"id":8}"#)]);
    let r = registry(&with_auth(&format!("{url}/apis/ccompat/v7/")));
    let rt = rt();
    assert_eq!(
        rt.block_on(r.register("shop.orders-value", SCHEMA))
            .unwrap(),
        7
    );
    let req = seen.recv().unwrap();
    assert_eq!(req.method, "POST");
    assert_eq!(
        req.path,
        "/apis/ccompat/v7/subjects/shop.orders-value/versions"
    );
    assert_eq!(
        req.header("content-type"),
        Some("application/vnd.schemaregistry.v1+json")
    );
    assert!(req
        .header("accept")
        .unwrap()
        .starts_with("application/vnd.schemaregistry.v1+json"));
    let body: serde_json::Value = serde_json::from_str(&req.body).unwrap();
    assert_eq!(body, serde_json::json!({ "schema": SCHEMA }));
    let expected = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            format!("key:{PASSWORD}")
        )
    );
    assert_eq!(req.header("authorization"), Some(expected.as_str()));
    // Cached: no second request for the same (subject, schema).
    assert_eq!(
        rt.block_on(r.register("shop.orders-value", SCHEMA))
            .unwrap(),
        7
    );
    assert_eq!(r.cached_ids(), 1);
    // Another subject is a new request.
    assert_eq!(rt.block_on(r.register("other-value", SCHEMA)).unwrap(), 8);
    assert_eq!(
        seen.recv().unwrap().path,
        "/apis/ccompat/v7/subjects/other-value/versions"
    );
}

#[test]
fn debug_and_errors_never_show_the_password() {
    let (url, _seen) = serve(vec![(
        401,
        r#"{"error_code":401,"message":"Unauthorized"}"#,
    )]);
    let r = registry(&with_auth(&url));
    let debug = format!("{r:?}");
    assert!(!debug.contains(PASSWORD), "{debug}");
    assert!(debug.contains("***") && debug.contains("key"), "{debug}");
    let e = rt().block_on(r.register("s-value", SCHEMA)).unwrap_err();
    assert_eq!(e.kind, RegistryErrorKind::Unauthorized);
    let text = e.to_string();
    assert!(!text.contains(PASSWORD), "{text}");
    assert!(
        text.contains("correct schema_registry.username and schema_registry.password"),
        "{text}"
    );
    assert!(!format!("{e:?}").contains(PASSWORD));
}

#[test]
fn answers_map_to_kinds_end_to_end() {
    let cases: [(u16, &str, RegistryErrorKind, ErrorKind); 6] = [
        (
            403,
            r#"{"error_code":40301,"message":"forbidden"}"#,
            RegistryErrorKind::Forbidden,
            ErrorKind::Definite,
        ),
        (
            409,
            r#"{"error_code":409,"message":"incompatible"}"#,
            RegistryErrorKind::Incompatible,
            ErrorKind::Definite,
        ),
        (
            422,
            r#"{"error_code":42201,"message":"Invalid schema"}"#,
            RegistryErrorKind::InvalidSchema,
            ErrorKind::Definite,
        ),
        (
            404,
            "<html>Not Found</html>",
            RegistryErrorKind::NotConfluentApi,
            ErrorKind::Definite,
        ),
        (
            429,
            "slow down",
            RegistryErrorKind::Unavailable,
            ErrorKind::Transient,
        ),
        (
            500,
            r#"{"error_code":50001,"message":"store"}"#,
            RegistryErrorKind::Unavailable,
            ErrorKind::Transient,
        ),
    ];
    let rt = rt();
    for (status, body, kind, pipeline_kind) in cases {
        // A 409 is followed by a compatibility check for the reasons: answer it too.
        let mut answers = vec![(status, body)];
        if status == 409 {
            answers.push((
                200,
                r#"{"is_compatible":false,"messages":["reader field x has no default"]}"#,
            ));
        }
        let (url, _seen) = serve(answers);
        let r = registry(&config(&url));
        let e = rt.block_on(r.register("orders-value", SCHEMA)).unwrap_err();
        assert_eq!(e.kind, kind, "{status}: {e}");
        assert_eq!(e.status, Some(status));
        assert!(e.to_string().contains("orders-value"), "{e}");
        if status == 409 {
            assert!(
                e.message.contains("reasons: reader field x has no default"),
                "{e}"
            );
        }
        assert_eq!(Error::from(e).kind(), pipeline_kind);
    }
}

#[test]
fn success_with_a_foreign_body_is_an_unexpected_response() {
    let (url, _seen) = serve(vec![(200, "<html>welcome</html>")]);
    let e = rt().block_on(registry(&config(&url)).check()).unwrap_err();
    assert_eq!(e.kind, RegistryErrorKind::UnexpectedResponse);
    assert!(e.to_string().contains("welcome"), "{e}");
}

#[test]
fn transient_failures_are_retried_until_success() {
    let (url, seen) = serve(vec![(503, ""), (502, ""), (200, r#"{"id":3}"#)]);
    let r = registry(&config(&url));
    let id = rt()
        .block_on(r.register_retrying("s-value", SCHEMA, Instant::now() + Duration::from_secs(10)))
        .unwrap();
    assert_eq!(id, 3);
    assert_eq!(seen.try_iter().count(), 3);
}

#[test]
fn compatibility_check_and_new_subjects() {
    let (url, seen) = serve(vec![
        (200, r#"{"is_compatible":true}"#),
        (
            404,
            r#"{"error_code":40401,"message":"Subject 's' not found."}"#,
        ),
        (404, "Not Found"),
    ]);
    let r = registry(&config(&url));
    let rt = rt();
    let c = rt.block_on(r.check_compatibility("s", SCHEMA)).unwrap();
    assert_eq!(
        c,
        Compat {
            is_compatible: true,
            new_subject: false,
            messages: vec![]
        }
    );
    assert_eq!(
        seen.recv().unwrap().path,
        "/compatibility/subjects/s/versions/latest?verbose=true"
    );
    let c = rt.block_on(r.check_compatibility("s", SCHEMA)).unwrap();
    assert!(c.is_compatible && c.new_subject);
    let e = rt.block_on(r.check_compatibility("s", SCHEMA)).unwrap_err();
    assert_eq!(e.kind, RegistryErrorKind::NotConfluentApi);
}

#[test]
fn schema_by_id_and_check() {
    let (url, seen) = serve(vec![
        (
            200,
            &format!("{{\"schema\":{}}}", serde_json::to_string(SCHEMA).unwrap()),
        ),
        (
            200,
            r#"{"schema":"syntax = \"proto3\";","schemaType":"PROTOBUF"}"#,
        ),
        (
            404,
            r#"{"error_code":40403,"message":"Schema 9 not found"}"#,
        ),
        (200, r#"["a-value","b-value"]"#),
        (200, r#"{"compatibilityLevel":"BACKWARD"}"#),
    ]);
    let r = registry(&config(&url));
    let rt = rt();
    assert_eq!(rt.block_on(r.schema_by_id(1)).unwrap(), SCHEMA);
    assert_eq!(seen.recv().unwrap().path, "/schemas/ids/1");
    let e = rt.block_on(r.schema_by_id(2)).unwrap_err();
    assert!(e.to_string().contains("PROTOBUF"), "{e}");
    let e = rt.block_on(r.schema_by_id(9)).unwrap_err();
    assert_eq!((e.kind, e.code), (RegistryErrorKind::NotFound, Some(40403)));
    let info = rt.block_on(r.check()).unwrap();
    assert_eq!(
        info,
        RegistryInfo {
            subjects: 2,
            compatibility: Some("BACKWARD".to_string())
        }
    );
}

// ---------------------------------------------------------------- transport failures

/// A port nothing listens on.
fn closed_port_url() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    drop(l);
    url
}

#[test]
fn refused_connection_is_transient() {
    let r = registry(&config(&closed_port_url()));
    let e = rt().block_on(r.check()).unwrap_err();
    assert_eq!(e.kind, RegistryErrorKind::Unavailable, "{e}");
    assert_eq!(e.status, None);
    assert!(e.to_string().contains("unavailable"), "{e}");
    assert_eq!(Error::from(e).kind(), ErrorKind::Transient);
}

#[test]
fn timeout_is_transient() {
    // Accepts and never answers.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let holder = std::thread::spawn(move || {
        let conn = listener.accept();
        std::thread::sleep(Duration::from_millis(1500));
        drop(conn);
    });
    let r = registry(&SchemaRegistryConfig {
        timeout_ms: 300,
        ..config(&url)
    });
    let e = rt().block_on(r.register("s-value", SCHEMA)).unwrap_err();
    assert_eq!(e.kind, RegistryErrorKind::Unavailable, "{e}");
    assert!(e.message.contains("no answer in time"), "{e}");
    holder.join().unwrap();
}

#[test]
fn https_to_a_plain_server_is_a_tls_error() {
    let (url, _seen) = serve(vec![(200, "[]")]);
    let r = registry(&config(&url.replace("http://", "https://")));
    let e = rt().block_on(r.check()).unwrap_err();
    assert_eq!(e.kind, RegistryErrorKind::Tls, "{e}");
    assert!(e.to_string().contains("schema_registry.ssl_ca"), "{e}");
    assert_eq!(Error::from(e).kind(), ErrorKind::Definite);
}

#[test]
fn unreadable_tls_files_fail_at_setup() {
    let dir = tempfile::tempdir().unwrap();
    let not_pem = dir.path().join("ca.pem");
    std::fs::write(&not_pem, "not a certificate").unwrap();
    let e = Registry::new(&SchemaRegistryConfig {
        ssl_ca: not_pem.clone(),
        ..config("https://127.0.0.1:1")
    })
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Definite);
    assert!(e.to_string().contains("schema_registry.ssl_ca"), "{e}");
    let e = Registry::new(&SchemaRegistryConfig {
        ssl_cert: not_pem.clone(),
        ssl_key: not_pem,
        ..config("https://127.0.0.1:1")
    })
    .unwrap_err();
    assert!(e.to_string().contains("schema_registry.ssl_key"), "{e}");
    let e = Registry::new(&SchemaRegistryConfig::default()).unwrap_err();
    assert!(e.to_string().contains("schema_registry.url"), "{e}");
}

#[test]
fn client_certificates_load() {
    // A self-signed certificate with a PKCS#1 RSA key: converted for the TLS library.
    use openssl::{asn1::Asn1Time, hash::MessageDigest, pkey::PKey, rsa::Rsa, x509};
    let rsa = Rsa::generate(2048).unwrap();
    let key_pem = rsa.private_key_to_pem().unwrap();
    assert!(String::from_utf8_lossy(&key_pem).contains("BEGIN RSA PRIVATE KEY"));
    let pkey = PKey::from_rsa(rsa).unwrap();
    let mut name = x509::X509NameBuilder::new().unwrap();
    name.append_entry_by_text("CN", "sluice").unwrap();
    let name = name.build();
    let mut b = x509::X509Builder::new().unwrap();
    b.set_version(2).unwrap();
    b.set_subject_name(&name).unwrap();
    b.set_issuer_name(&name).unwrap();
    b.set_pubkey(&pkey).unwrap();
    b.set_not_before(&Asn1Time::days_from_now(0).unwrap())
        .unwrap();
    b.set_not_after(&Asn1Time::days_from_now(1).unwrap())
        .unwrap();
    b.sign(&pkey, MessageDigest::sha256()).unwrap();
    let cert_pem = b.build().to_pem().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
    std::fs::write(&cert, &cert_pem).unwrap();
    std::fs::write(&key, &key_pem).unwrap();
    Registry::new(&SchemaRegistryConfig {
        ssl_ca: cert.clone(),
        ssl_cert: cert,
        ssl_key: key,
        ..config("https://127.0.0.1:1")
    })
    .unwrap();
}

// ---------------------------------------------------------------- blocking use

#[test]
fn blocking_client_from_a_plain_thread() {
    let (url, _seen) = serve(vec![(200, r#"{"id":11}"#), (503, "")]);
    let rt = rt();
    let b = BlockingRegistry::new(Arc::new(registry(&config(&url))), rt.handle().clone());
    assert_eq!(b.register("s-value", SCHEMA).unwrap(), 11);
    let e = b.register("t-value", SCHEMA).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Transient);
    assert!(e.to_string().contains("t-value"), "{e}");
}

#[test]
fn blocking_client_inside_the_runtime_is_an_error_not_a_panic() {
    let rt = rt();
    let b = BlockingRegistry::new(
        Arc::new(registry(&config(&closed_port_url()))),
        rt.handle().clone(),
    );
    let e = rt
        .block_on(async move { b.register("s-value", SCHEMA) })
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Definite);
    assert!(e.to_string().contains("async"), "{e}");
}
