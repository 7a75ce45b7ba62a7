//! The Schema Registry client against a real registry: Apicurio Registry's
//! Confluent-compatible API in the test bed, with a global BACKWARD compatibility rule.
//!
//! The registry is at `SLUICE_TEST_REGISTRY_URL` (default
//! `http://127.0.0.1:8081/apis/ccompat/v7`). When it cannot be reached the tests fail (they
//! do not skip): CI starts it. Every run uses subjects with a random suffix, so reruns
//! against the same registry do not collide.
//!
//! Not covered here: wrong credentials (HTTP 401/403), since the test registry has no
//! authentication; the unit tests of `sluice::registry` check those answers against a
//! canned server.

use std::sync::Arc;
use std::time::{Duration, Instant};

use apache_avro::types::Value;
use apache_avro::writer::datum::GenericDatumWriter;
use apache_avro::Schema;
use schema_registry_converter::async_impl::easy_avro::EasyAvroDecoder;
use schema_registry_converter::async_impl::schema_registry::SrSettings;
use sluice::config::{SchemaRegistryConfig, SubjectNameStrategy};
use sluice::error::ErrorKind;
use sluice::registry::{BlockingRegistry, Registry, RegistryErrorKind};

const DEFAULT_URL: &str = "http://127.0.0.1:8081/apis/ccompat/v7";

fn registry_url() -> String {
    std::env::var("SLUICE_TEST_REGISTRY_URL").unwrap_or_else(|_| DEFAULT_URL.to_string())
}

fn config(url: &str) -> SchemaRegistryConfig {
    SchemaRegistryConfig {
        url: url.to_string(),
        timeout_ms: 10_000,
        ..SchemaRegistryConfig::default()
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// A client for the test registry, after checking that it answers (a clear failure
/// otherwise).
fn connect(rt: &tokio::runtime::Runtime) -> Registry {
    let url = registry_url();
    let registry = Registry::new(&config(&url)).expect("registry client");
    if let Err(e) = rt.block_on(registry.check()) {
        panic!(
            "the test schema registry is not usable at {url} (set SLUICE_TEST_REGISTRY_URL; \
             ./scripts/services up starts it): {e}"
        );
    }
    registry
}

/// A subject name unique to this run.
fn subject(name: &str) -> String {
    format!(
        "sluice-test-{name}-{}-{:016x}-value",
        std::process::id(),
        rand::random::<u64>()
    )
}

/// A record schema `sluice.test.<name>` with the given fields (JSON field objects).
fn record(name: &str, fields: &[&str]) -> String {
    format!(
        r#"{{"type":"record","name":"{name}","namespace":"sluice.test","fields":[{}]}}"#,
        fields.join(",")
    )
}

const ID: &str = r#"{"name":"id","type":"long"}"#;
const NAME: &str = r#"{"name":"name","type":"string"}"#;
const NOTE_WITH_DEFAULT: &str = r#"{"name":"note","type":["null","string"],"default":null}"#;
const QTY_WITHOUT_DEFAULT: &str = r#"{"name":"qty","type":"int"}"#;
const ID_AS_STRING: &str = r#"{"name":"id","type":"string"}"#;

fn canonical(schema: &str) -> String {
    Schema::parse_str(schema)
        .expect("valid Avro schema")
        .canonical_form()
}

#[test]
fn register_is_idempotent_and_backward_evolution_gets_a_new_id() {
    let rt = rt();
    let registry = connect(&rt);
    let subject = subject("evolve");
    let v1 = record("Row", &[ID, NAME]);
    let id1 = rt.block_on(registry.register(&subject, &v1)).expect("v1");
    assert_eq!(rt.block_on(registry.register(&subject, &v1)).unwrap(), id1);
    assert_eq!(registry.cached_ids(), 1);
    // A second client (empty cache): the registry itself answers the same id.
    let fresh = connect(&rt);
    assert_eq!(rt.block_on(fresh.register(&subject, &v1)).unwrap(), id1);

    // Adding a field with a default is BACKWARD compatible.
    let v2 = record("Row", &[ID, NAME, NOTE_WITH_DEFAULT]);
    let compat = rt
        .block_on(registry.check_compatibility(&subject, &v2))
        .expect("compatibility check");
    assert!(compat.is_compatible && !compat.new_subject, "{compat:?}");
    let id2 = rt.block_on(registry.register(&subject, &v2)).expect("v2");
    assert_ne!(id1, id2);
    // Both versions stay readable by id.
    assert_eq!(
        canonical(&rt.block_on(registry.schema_by_id(id1)).unwrap()),
        canonical(&v1)
    );
    assert_eq!(
        canonical(&rt.block_on(registry.schema_by_id(id2)).unwrap()),
        canonical(&v2)
    );
}

/// The envelope schema of a release before Debezium 3's times: `source` without `sequence`,
/// `ts_us`, `ts_ns` (and the older snapshot `allowed` list), no top-level `ts_us`/`ts_ns`,
/// `transaction` last.
fn envelope_before_times(current: &str) -> String {
    let mut doc: serde_json::Value = serde_json::from_str(current).expect("envelope JSON");
    let fields = doc["fields"].as_array_mut().expect("fields");
    fields.retain(|f| f["name"] != "ts_us" && f["name"] != "ts_ns");
    let at = fields
        .iter()
        .position(|f| f["name"] == "transaction")
        .expect("transaction");
    let transaction = fields.remove(at);
    fields.push(transaction);
    let source = fields
        .iter_mut()
        .find(|f| f["name"] == "source")
        .expect("source");
    let source_fields = source["type"]["fields"]
        .as_array_mut()
        .expect("source fields");
    source_fields
        .retain(|f| !["sequence", "ts_us", "ts_ns"].contains(&f["name"].as_str().unwrap()));
    for f in source_fields.iter_mut() {
        if f["name"] == "snapshot" {
            f["type"]["connect.parameters"]["allowed"] = "true,last,false,incremental".into();
        }
    }
    doc.to_string()
}

/// A subject registered by an earlier release takes today's envelope as its next version
/// under the registry's BACKWARD rule: the fields added since are nullable with a default.
#[test]
fn todays_envelope_evolves_an_envelope_without_debezium_3s_times() {
    use sluice::schema::{Column, ColumnKind, TableSchema};
    let table = TableSchema {
        db: "shop".into(),
        table: "t".into(),
        columns: vec![Column {
            name: "id".into(),
            kind: ColumnKind::Int { unsigned: false },
            nullable: false,
        }],
        primary_key: vec![0],
    };
    let avro = sluice::encode::avro::AvroTable::new(&table, &[0], "shop.t", Default::default())
        .expect("avro schemas");
    let now = avro.value.schema_json;
    let old = envelope_before_times(&now);
    assert_ne!(canonical(&old), canonical(&now));
    let rt = rt();
    let registry = connect(&rt);
    let subject = subject("envelope-times");
    let id_old = rt
        .block_on(registry.register(&subject, &old))
        .expect("old envelope");
    let compat = rt
        .block_on(registry.check_compatibility(&subject, &now))
        .expect("compatibility check");
    assert!(compat.is_compatible && !compat.new_subject, "{compat:?}");
    let id_now = rt
        .block_on(registry.register(&subject, &now))
        .expect("today's envelope");
    assert_ne!(id_old, id_now);
}

#[test]
fn incompatible_changes_are_a_definite_409_with_the_registrys_message() {
    let rt = rt();
    let registry = connect(&rt);
    let subject = subject("incompatible");
    let v1 = record("Row", &[ID, NAME]);
    rt.block_on(registry.register(&subject, &v1)).expect("v1");

    for (what, changed) in [
        (
            "a field without a default",
            record("Row", &[ID, NAME, QTY_WITHOUT_DEFAULT]),
        ),
        ("a changed type", record("Row", &[ID_AS_STRING, NAME])),
    ] {
        let compat = rt
            .block_on(registry.check_compatibility(&subject, &changed))
            .expect("compatibility check");
        assert!(!compat.is_compatible, "{what}: {compat:?}");

        let e = rt
            .block_on(registry.register(&subject, &changed))
            .expect_err(what);
        eprintln!("{what}: {e}");
        assert_eq!(e.kind, RegistryErrorKind::Incompatible, "{what}: {e}");
        assert_eq!(e.status, Some(409), "{what}: {e}");
        assert!(!e.message.is_empty(), "{what}: the registry's message: {e}");
        let text = e.to_string();
        assert!(
            text.contains(&subject)
                && text.contains("incompatible with the registered schema")
                && text.contains(&e.message)
                && text.contains("fix:"),
            "{what}: {text}"
        );
        let pipeline = sluice::error::Error::from(e);
        assert_eq!(pipeline.kind(), ErrorKind::Definite, "{what}");
    }
}

#[test]
fn a_new_subject_accepts_any_schema() {
    let rt = rt();
    let registry = connect(&rt);
    let compat = rt
        .block_on(registry.check_compatibility(&subject("new"), &record("Row", &[ID])))
        .expect("compatibility check");
    // Confluent answers 404 (`new_subject`), Apicurio plainly "compatible".
    assert!(compat.is_compatible, "{compat:?}");
}

#[test]
fn an_invalid_schema_is_refused_definitely() {
    let rt = rt();
    let registry = connect(&rt);
    let subject = subject("invalid");
    let invalid = record("Row", &[r#"{"name":"id","type":"no_such_type"}"#]);
    let e = rt
        .block_on(registry.register(&subject, &invalid))
        .expect_err("an invalid schema must be refused");
    eprintln!("{e}");
    assert_eq!(e.kind, RegistryErrorKind::InvalidSchema, "{e}");
    assert_eq!(e.status, Some(422), "{e}");
    assert!(e.to_string().contains(&subject), "{e}");
    assert_eq!(sluice::error::Error::from(e).kind(), ErrorKind::Definite);
}

#[test]
fn the_wire_format_decodes_with_an_independent_decoder() {
    let rt = rt();
    let registry = connect(&rt);
    let subject = subject("wire");
    let text = record("Row", &[ID, NAME, NOTE_WITH_DEFAULT]);
    let id = rt.block_on(registry.register(&subject, &text)).expect("id");

    // Confluent wire format, built by hand: magic byte 0, the id (big-endian), Avro binary.
    let schema = Schema::parse_str(&text).unwrap();
    let row = Value::Record(vec![
        ("id".to_string(), Value::Long(42)),
        ("name".to_string(), Value::String("ünïcode ✓".to_string())),
        (
            "note".to_string(),
            Value::Union(1, Box::new(Value::String("hello".to_string()))),
        ),
    ]);
    let datum = GenericDatumWriter::builder(&schema)
        .build()
        .unwrap()
        .write_value_to_vec(row.clone())
        .unwrap();
    let mut payload = vec![0u8];
    payload.extend_from_slice(&id.to_be_bytes());
    payload.extend_from_slice(&datum);

    // schema_registry_converter fetches the writer schema by id from the registry itself.
    let decoder = EasyAvroDecoder::new(SrSettings::new(registry_url()));
    let decoded = rt
        .block_on(decoder.decode(Some(&payload)))
        .unwrap_or_else(|e| panic!("decoding id {id}: {e}"));
    assert_eq!(decoded.value, row);
    assert_eq!(
        decoded.name.map(|n| n.fullname(None)),
        Some("sluice.test.Row".to_string())
    );
}

#[test]
fn preflight_check_and_subject_naming() {
    let rt = rt();
    let registry = connect(&rt);
    let info = rt.block_on(registry.check()).unwrap();
    eprintln!("test registry: {info:?}");
    // The test bed sets a global BACKWARD rule; a registry may not report it, but if it
    // does it must be that one.
    if let Some(level) = &info.compatibility {
        assert_eq!(level, "BACKWARD", "{info:?}");
    }
    assert_eq!(
        registry.subject_name_strategy(),
        SubjectNameStrategy::TopicName
    );
    assert_eq!(
        registry.subject_for("shop.orders", false, "shop.orders.Value"),
        "shop.orders-value"
    );
}

#[test]
fn a_url_beside_the_api_is_not_a_confluent_api() {
    let rt = rt();
    connect(&rt);
    let wrong = format!("{}/not-the-api", registry_url());
    // A generous bound: the answer under test is the registry's 404, which a loaded machine
    // has been seen to send after more than the usual 10 s (then the error is "unavailable").
    let registry = Registry::new(&SchemaRegistryConfig {
        timeout_ms: 60_000,
        ..config(&wrong)
    })
    .unwrap();
    let e = rt.block_on(registry.check()).expect_err("wrong path");
    eprintln!("{e}");
    assert_eq!(e.kind, RegistryErrorKind::NotConfluentApi, "{e}");
    assert!(e.to_string().contains("/apis/ccompat/v7"), "{e}");
    let e = rt
        .block_on(registry.register(&subject("wrong"), &record("Row", &[ID])))
        .expect_err("wrong path");
    assert_eq!(e.kind, RegistryErrorKind::NotConfluentApi, "{e}");
    assert_eq!(sluice::error::Error::from(e).kind(), ErrorKind::Definite);
}

#[test]
fn the_blocking_client_works_from_a_plain_thread() {
    // As the Kafka sink uses it: its own OS thread, the runtime's handle.
    let rt = rt();
    let registry = Arc::new(connect(&rt));
    let blocking = BlockingRegistry::new(registry, rt.handle().clone());
    let subject = subject("blocking");
    let v1 = record("Row", &[ID]);
    let handle = std::thread::spawn(move || {
        let id = blocking
            .register_retrying(&subject, &v1, Instant::now() + Duration::from_secs(30))
            .expect("register");
        assert_eq!(blocking.register(&subject, &v1).unwrap(), id);
        let back = blocking.schema_by_id(id).expect("schema by id");
        assert_eq!(canonical(&back), canonical(&v1));
        let compat = blocking
            .check_compatibility(&subject, &record("Row", &[ID, QTY_WITHOUT_DEFAULT]))
            .unwrap();
        assert!(!compat.is_compatible);
        blocking.check().expect("check");
    });
    handle.join().expect("sink-like thread");
}
