//! Tests of the configuration: examples, strictness, validation messages, routing,
//! environment overrides and redaction.

use std::collections::BTreeSet;
use std::time::Duration;

use proptest::prelude::*;

use super::*;

const QUICKSTART: &str = include_str!("../../examples/quickstart.toml");
const FULL: &str = include_str!("../../examples/full.toml");

const MINIMAL: &str = r#"
name = "shop"
[source]
url = "mysql://sluice:sluice@127.0.0.1:3306"
server_id = 5401
[kafka]
bootstrap_servers = "127.0.0.1:9092"
"#;

fn no_env() -> Vec<(String, String)> {
    Vec::new()
}

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::from_str_with_env(text, no_env())
}

fn err(text: &str) -> String {
    match parse(text) {
        Ok(c) => panic!("expected an error, got {c:?}"),
        Err(e) => e.to_string(),
    }
}

/// MINIMAL with `extra` appended (TOML sections can follow).
fn with(extra: &str) -> String {
    format!("{MINIMAL}\n{extra}\n")
}

/// A config whose `[source]` has the given extra lines.
fn with_source(extra: &str) -> String {
    MINIMAL.replace("server_id = 5401", &format!("server_id = 5401\n{extra}"))
}

fn with_kafka(extra: &str) -> String {
    MINIMAL.replace(
        "bootstrap_servers = \"127.0.0.1:9092\"",
        &format!("bootstrap_servers = \"127.0.0.1:9092\"\n{extra}"),
    )
}

fn router(text: &str) -> Router {
    parse(text).unwrap().router().unwrap()
}

// ---------------------------------------------------------------- examples

#[test]
fn quickstart_parses_and_validates() {
    let c = parse(QUICKSTART).unwrap();
    assert_eq!(c.name, "quickstart");
    assert_eq!(c.delivery, Delivery::ExactlyOnce);
    assert_eq!(c.source.url.host(), "127.0.0.1");
    assert_eq!(c.source.url.port(), 3306);
    assert_eq!(c.source.url.user(), Some("sluice"));
    assert_eq!(c.source.url.password().unwrap().expose(), "sluice");
    assert_eq!(c.source.server_id, 5401);
    assert_eq!(c.source.include, vec![r"demo\..*".to_string()]);
    assert_eq!(c.source.start, "earliest");
    assert_eq!(c.kafka.bootstrap_servers, "127.0.0.1:9092");
    assert_eq!(c.commit, CommitConfig::default());
    assert_eq!(c.routes.len(), 1);
    assert_eq!(c.transactional_id(), "sluice-quickstart");
    assert_eq!(c.offset_key(), "quickstart");

    let r = c.router().unwrap();
    assert!(r.table_included("demo", "orders"));
    assert!(!r.table_included("other", "orders"));
    let t = r.resolve("demo", "orders").unwrap().unwrap();
    assert_eq!(t.topic, "demo.orders");
    assert_eq!(t.format, Format::Json);
    assert!(t.key_columns.is_empty());
    assert!(t.tombstones);
    assert_eq!(r.resolve("other", "orders").unwrap(), None);
}

#[test]
fn full_example_is_all_defaults() {
    let full = parse(FULL).unwrap();
    let mut minimal = parse(MINIMAL).unwrap();
    // full.toml spells out the default route for name = "shop".
    assert_eq!(minimal.routes, vec![Config::default_route("shop")]);
    assert_eq!(full.routes[0].pattern, minimal.routes[0].pattern);
    minimal.routes = full.routes.clone();
    assert_eq!(full, minimal);
}

#[test]
fn full_example_mentions_every_field() {
    let c = parse(FULL).unwrap();
    let tree = toml::Value::try_from(&c).unwrap();
    let mut keys = BTreeSet::new();
    collect_keys("", &tree, &mut keys);
    for key in keys {
        let leaf = key.rsplit('.').next().unwrap();
        assert!(
            FULL.contains(&format!("{leaf} =")) || FULL.contains(&format!("[{key}]")),
            "examples/full.toml does not document `{key}`"
        );
    }
}

fn collect_keys(prefix: &str, v: &toml::Value, out: &mut BTreeSet<String>) {
    match v {
        toml::Value::Table(t) => {
            for (k, v) in t {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                out.insert(path.clone());
                collect_keys(&path, v, out);
            }
        }
        toml::Value::Array(a) => {
            for v in a {
                collect_keys(prefix, v, out);
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------- defaults

#[test]
fn defaults() {
    let c = parse(MINIMAL).unwrap();
    assert_eq!(c.delivery, Delivery::ExactlyOnce);
    let s = &c.source;
    assert!(s.include.is_empty() && s.exclude.is_empty());
    assert!(!s.include_system_schemas);
    assert_eq!(s.start, "initial");
    assert_eq!(
        (
            s.heartbeat_ms,
            s.connect_timeout_ms,
            s.reconnect_backoff_min_ms,
            s.reconnect_backoff_max_ms,
            s.max_reconnect_attempts
        ),
        (5000, 10000, 200, 30000, 0)
    );
    let k = &c.kafka;
    assert_eq!((&k.offsets_topic, &k.schema_history_topic), (&None, &None));
    assert_eq!(c.offsets_topic(), "_sluice_offsets.shop");
    assert_eq!(c.schema_history_topic(), "_sluice_schema_history.shop");
    assert_eq!((k.partitions, k.replication_factor), (1, -1));
    assert!(k.topic_config.is_empty() && k.properties.is_empty());
    assert_eq!(
        (k.transaction_timeout_ms, k.max_buffer_kbytes),
        (60000, 32768)
    );
    assert_eq!(
        (
            c.commit.max_ms,
            c.commit.max_events,
            c.commit.idle_offset_ms
        ),
        (100, 10000, 10000)
    );
    assert_eq!(c.commit.max_interval(), Duration::from_millis(100));
    assert_eq!(c.source.heartbeat(), Duration::from_secs(5));
}

#[test]
fn at_least_once_and_from_str() {
    let c: Config = with("")
        .replace(
            "name = \"shop\"",
            "name = \"shop\"\ndelivery = \"at-least-once\"",
        )
        .parse()
        .unwrap();
    assert_eq!(c.delivery, Delivery::AtLeastOnce);
    assert!(!c.delivery.is_transactional());
    let e = err(&MINIMAL.replace("name = \"shop\"", "name = \"shop\"\ndelivery = \"once\""));
    assert!(
        e.contains("exactly-once") && e.contains("at-least-once"),
        "{e}"
    );
}

// ---------------------------------------------------------------- strictness

#[test]
fn unknown_keys_are_rejected_naming_the_key() {
    let cases = [
        MINIMAL.replace("name = \"shop\"", "name = \"shop\"\nbogus_top = 1"),
        with_source("bogus_source = 1"),
        with_kafka("bogus_kafka = 1"),
        with("[commit]\nbogus_commit = 1"),
        with("[[route]]\nmatch = \"a\"\ntopic = \"b\"\nbogus_route = 1"),
    ];
    for (text, key) in cases.iter().zip([
        "bogus_top",
        "bogus_source",
        "bogus_kafka",
        "bogus_commit",
        "bogus_route",
    ]) {
        let e = err(text);
        assert!(e.contains(&format!("unknown field `{key}`")), "{e}");
        assert!(e.contains("line"), "position missing: {e}");
    }
    // Unknown section.
    let e = err(&with("[sink]\nx = 1"));
    assert!(e.contains("unknown field `sink`"), "{e}");
}

#[test]
fn unknown_key_in_merged_tree_still_names_key_and_section() {
    // With an override applied, the file alone is still wrong the same way: the error
    // carries the file position.
    let e = Config::from_str_with_env(&with_source("bogus = 1"), env(&[("SLUICE_NAME", "x")]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("unknown field `bogus`") && e.contains("line"),
        "{e}"
    );
}

#[test]
fn missing_and_mistyped_keys() {
    let e = err(&MINIMAL.replace("server_id = 5401", ""));
    assert!(e.contains("missing field `server_id`"), "{e}");
    let e = err(&MINIMAL.replace("name = \"shop\"", ""));
    assert!(e.contains("missing field `name`"), "{e}");
    let e = err(&MINIMAL.replace("5401", "\"many\""));
    assert!(e.contains("server_id") || e.contains("line 5"), "{e}");
    let e = err("name = ");
    assert!(e.contains("line 1"), "{e}");
}

// ---------------------------------------------------------------- validation

fn problems(text: &str) -> Vec<Problem> {
    match parse(text) {
        Ok(c) => panic!("expected a validation error, got {c:?}"),
        Err(e) => {
            assert!(!e.problems().is_empty(), "not a validation error: {e}");
            e.problems().to_vec()
        }
    }
}

fn assert_problem(text: &str, path: &str) -> Problem {
    let ps = problems(text);
    let p = ps
        .iter()
        .find(|p| p.path == path)
        .unwrap_or_else(|| panic!("no problem at {path}: {ps:?}"))
        .clone();
    assert!(!p.found.is_empty() && !p.expected.is_empty() && !p.fix.is_empty());
    p
}

#[test]
fn validation_problems_name_the_setting() {
    assert_problem(&MINIMAL.replace("\"shop\"", "\"a b\""), "name");
    assert_problem(&MINIMAL.replace("name = \"shop\"", "name = \"\""), "name");
    assert_problem(
        &MINIMAL.replace("\"shop\"", &format!("\"{}\"", "a".repeat(101))),
        "name",
    );
    assert_problem(&MINIMAL.replace("5401", "0"), "source.server_id");
    assert_problem(&with_source("start = \" \""), "source.start");
    assert_problem(&with_source("heartbeat_ms = 0"), "source.heartbeat_ms");
    assert_problem(
        &with_source("reconnect_backoff_min_ms = 5000\nreconnect_backoff_max_ms = 100"),
        "source.reconnect_backoff_min_ms",
    );
    assert_problem(
        &MINIMAL.replace("\"127.0.0.1:9092\"", "\"a:1,,b:2\""),
        "kafka.bootstrap_servers",
    );
    assert_problem(
        &with_kafka("offsets_topic = \"a b\""),
        "kafka.offsets_topic",
    );
    assert_problem(&with_kafka("partitions = 0"), "kafka.partitions");
    assert_problem(
        &with_kafka("replication_factor = 0"),
        "kafka.replication_factor",
    );
    assert_problem(
        &with_kafka("transaction_timeout_ms = 10"),
        "kafka.transaction_timeout_ms",
    );
    assert_problem(
        &with("[commit]\nmax_ms = 60000"),
        "kafka.transaction_timeout_ms",
    );
    assert_problem(
        &with_kafka("max_buffer_kbytes = 0"),
        "kafka.max_buffer_kbytes",
    );
    assert_problem(&with("[commit]\nmax_ms = 0"), "commit.max_ms");
    assert_problem(&with("[commit]\nmax_events = 0"), "commit.max_events");
    assert_problem(
        &with("[commit]\nidle_offset_ms = 0"),
        "commit.idle_offset_ms",
    );
    assert_problem(
        &with("[[route]]\nmatch = 'a'\ntopic = 'b'\nkey_columns = ['id', 'id']"),
        "route[0].key_columns[1]",
    );
}

#[test]
fn all_problems_reported_at_once() {
    let text = MINIMAL
        .replace("5401", "0")
        .replace("name = \"shop\"", "name = \"a b\"");
    let ps = problems(&text);
    assert_eq!(ps.len(), 2, "{ps:?}");
    let e = err(&text);
    assert!(
        e.contains("2 problems") && e.contains("name") && e.contains("server_id"),
        "{e}"
    );
}

#[test]
fn avro_route_needs_a_schema_registry_url() {
    let text = with(
        "[[route]]\nmatch = 'a'\ntopic = 'a'\n\
         [[route]]\nmatch = 'b'\ntopic = 'b'\nformat = \"avro\"",
    );
    let c = Config::parse_with_env(&text, no_env()).unwrap();
    assert_eq!(c.routes[1].format, Format::Avro);
    let p = assert_problem(&text, "schema_registry.url");
    assert!(
        p.found.contains("route[1]") && p.found.contains("avro"),
        "{p}"
    );
    assert!(
        p.fix.contains("SLUICE_SCHEMA_REGISTRY_URL") && p.fix.contains("format = \"json\""),
        "{p}"
    );
    assert!(p.expected.contains("/apis/ccompat/v7"), "{p}");
    // With the URL (from the file or the environment) it is accepted.
    let c = parse(&format!(
        "{text}\n[schema_registry]\nurl = \"http://127.0.0.1:8081/apis/ccompat/v7/\""
    ))
    .unwrap();
    assert_eq!(c.routes[1].format, Format::Avro);
    assert_eq!(
        c.schema_registry.base_url(),
        "http://127.0.0.1:8081/apis/ccompat/v7"
    );
    let c = Config::from_str_with_env(
        &text,
        env(&[("SLUICE_SCHEMA_REGISTRY_URL", "https://sr.example")]),
    )
    .unwrap();
    assert!(c.schema_registry.is_configured());
    // No Avro route: no URL needed.
    assert!(!parse(MINIMAL).unwrap().schema_registry.is_configured());
}

#[test]
fn reserved_kafka_properties_are_refused() {
    for (key, mention) in [
        ("transactional.id", "exactly-once"),
        ("enable.idempotence", "exactly-once"),
        ("acks", "exactly-once"),
        ("isolation.level", "exactly-once"),
        ("transaction.timeout.ms", "kafka.transaction_timeout_ms"),
        ("queue.buffering.max.kbytes", "kafka.max_buffer_kbytes"),
        ("bootstrap.servers", "kafka.bootstrap_servers"),
        ("metadata.broker.list", "kafka.bootstrap_servers"),
    ] {
        let text = with(&format!("[kafka.properties]\n\"{key}\" = \"1\""));
        let p = assert_problem(&text, &format!("kafka.properties.\"{key}\""));
        let msg = p.to_string();
        assert!(msg.contains(key) && msg.contains(mention), "{msg}");
        assert!(msg.contains("remove it"), "{msg}");
    }
}

#[test]
fn properties_accept_dotted_keys_and_scalars() {
    let c = parse(&with(
        "[kafka.properties]\nsecurity.protocol = \"SASL_SSL\"\n\"sasl.mechanism\" = \"PLAIN\"\n\
         linger.ms = 5\nenable.ssl.certificate.verification = false\n\
         [kafka.topic_config]\ncleanup.policy = \"compact\"",
    ))
    .unwrap();
    let p = &c.kafka.properties;
    assert_eq!(p["security.protocol"], "SASL_SSL");
    assert_eq!(p["sasl.mechanism"], "PLAIN");
    assert_eq!(p["linger.ms"], "5");
    assert_eq!(p["enable.ssl.certificate.verification"], "false");
    assert_eq!(c.kafka.topic_config["cleanup.policy"], "compact");

    // Reserved detection works for dotted keys too.
    assert_problem(
        &with("[kafka.properties]\nbootstrap.servers = \"x:1\""),
        "kafka.properties.\"bootstrap.servers\"",
    );
    let e = err(&with("[kafka.properties]\n\"a.b\" = \"1\"\na.b = \"2\""));
    assert!(e.contains("a.b"), "{e}");
    let e = err(&with("[kafka.properties]\nx = [1]"));
    assert!(
        e.contains("line 10") && e.contains("expected a string"),
        "{e}"
    );
}

// ---------------------------------------------------------------- regexes and routing

#[test]
fn bad_regex_names_the_path_and_pattern() {
    let p = assert_problem(
        &with_source("include = [\"ok\", \"(\"]"),
        "source.include[1]",
    );
    assert!(p.found.contains("`(`"), "{p}");
    assert_problem(&with_source("exclude = [\"[\"]"), "source.exclude[0]");
    let text =
        with("[[route]]\nmatch = 'a'\ntopic = 'b'\n[[route]]\nmatch = 'shop\\.(('\ntopic = 'c'");
    let p = assert_problem(&text, "route[1].match");
    assert!(p.found.contains("shop\\.(("), "{p}");
    assert!(
        p.found.contains("unclosed"),
        "regex's own message missing: {p}"
    );
}

#[test]
fn regexes_match_the_whole_name() {
    let r = router(&with_source("include = [\"shop\\\\..*\"]"));
    assert!(r.table_included("shop", "t"));
    assert!(!r.table_included("workshop", "t"));
    assert!(!r.table_included("shopping", "t"));
    let r = router(&with("[[route]]\nmatch = 'shop\\..*'\ntopic = 'x'"));
    assert!(r.route("shop", "t").unwrap().is_some());
    assert_eq!(r.route("workshop", "t").unwrap(), None);
    // Alternation stays inside the anchors.
    let r = router(&with_source("exclude = ['a\\.x|b\\.y']"));
    assert!(!r.table_included("a", "x") && !r.table_included("b", "y"));
    assert!(r.table_included("a", "xy") && r.table_included("ab", "y"));
}

#[test]
fn include_exclude_and_system_schemas() {
    let r = router(MINIMAL);
    assert!(r.table_included("shop", "orders"));
    for db in [
        "mysql",
        "information_schema",
        "performance_schema",
        "sys",
        "MySQL",
    ] {
        assert!(!r.table_included(db, "user"), "{db}");
    }
    // Even an explicit include does not capture system schemas...
    let r = router(&with_source(
        "include = ['.*']\nexclude = ['shop\\.secret.*']",
    ));
    assert!(!r.table_included("mysql", "user"));
    assert!(r.table_included("shop", "orders"));
    assert!(!r.table_included("shop", "secrets"));
    // ...unless asked for.
    let r = router(&with_source(
        "include = ['mysql\\..*']\ninclude_system_schemas = true",
    ));
    assert!(r.table_included("mysql", "user"));
    assert!(!r.table_included("shop", "orders"));
}

#[test]
fn capture_groups_and_placeholders_expand() {
    let r = router(&with(
        "[[route]]\nmatch = '(shop)_(\\w+)\\.(.*)'\ntopic = 'cdc.$2.$3-${db}.${table}.${1}'\n\
         key_columns = ['id']\ntombstones = false",
    ));
    let t = r.route("shop_eu", "orders").unwrap().unwrap();
    assert_eq!(t.topic, "cdc.eu.orders-shop_eu.orders.shop");
    assert_eq!(t.key_columns, vec!["id".to_string()]);
    assert!(!t.tombstones);
    // An optional group that did not participate expands to nothing.
    let r = router(&with(
        "[[route]]\nmatch = '(x)?(.*)\\.(.*)'\ntopic = 't.$1$2.$3'",
    ));
    assert_eq!(r.route("db", "tb").unwrap().unwrap().topic, "t.db.tb");
}

#[test]
fn first_matching_route_wins_and_unmatched_tables_are_not_emitted() {
    let r = router(&with(
        "[[route]]\nmatch = 'shop\\.orders'\ntopic = 'orders'\n\
         [[route]]\nmatch = 'shop\\.(.*)'\ntopic = 'shop.$1'",
    ));
    assert_eq!(r.route("shop", "orders").unwrap().unwrap().topic, "orders");
    assert_eq!(
        r.route("shop", "items").unwrap().unwrap().topic,
        "shop.items"
    );
    assert_eq!(r.route("crm", "items").unwrap(), None);
}

#[test]
fn default_route_derives_from_name() {
    let c = parse(MINIMAL).unwrap();
    assert_eq!(c.routes[0].pattern, r"(.*)\.(.*)");
    assert_eq!(c.routes[0].topic, "shop.$1.$2");
    let t = c.router().unwrap().route("crm", "users").unwrap().unwrap();
    assert_eq!(t.topic, "shop.crm.users");
    assert_eq!(t.format, Format::Json);
    assert!(t.tombstones && t.key_columns.is_empty());
    // A programmatic config with no routes gets the same.
    let mut c = c;
    c.routes.clear();
    assert_eq!(c.effective_routes(), vec![Config::default_route("shop")]);
    assert_eq!(
        c.router().unwrap().route("a", "b").unwrap().unwrap().topic,
        "shop.a.b"
    );
}

#[test]
fn topic_templates_are_checked() {
    let p = assert_problem(
        &with("[[route]]\nmatch = '(.*)\\.(.*)'\ntopic = 'x.$3'"),
        "route[0].topic",
    );
    assert!(p.found.contains("capture group 3"), "{p}");
    let p = assert_problem(
        &with("[[route]]\nmatch = 'a'\ntopic = 'a/b'"),
        "route[0].topic",
    );
    assert!(p.found.contains('/'), "{p}");
    assert_problem(
        &with("[[route]]\nmatch = 'a'\ntopic = '$x'"),
        "route[0].topic",
    );
    assert_problem(
        &with("[[route]]\nmatch = 'a'\ntopic = '..'"),
        "route[0].topic",
    );
}

#[test]
fn expanded_topics_are_validated() {
    let r = router(&with("[[route]]\nmatch = '(.*)\\.(.*)'\ntopic = 'x.$2'"));
    let e = r.route("db", "bad table").unwrap_err().to_string();
    assert!(
        e.contains("route[0].topic") && e.contains("db.bad table") && e.contains("`x.bad table`"),
        "{e}"
    );
    let long = "t".repeat(300);
    assert!(r.route("db", &long).is_err());
    assert!(r.route("db", "ok_name-1").unwrap().is_some());
    // A data topic may not be the offsets topic.
    let r = router(&with(
        "[[route]]\nmatch = '.*'\ntopic = '_sluice_offsets.shop'",
    ));
    let e = r.route("a", "b").unwrap_err().to_string();
    assert!(e.contains("offsets_topic"), "{e}");
}

// ---------------------------------------------------------------- environment

#[test]
fn env_overrides_apply() {
    let c = Config::from_str_with_env(
        MINIMAL,
        env(&[
            ("SLUICE_NAME", "other"),
            ("SLUICE_DELIVERY", "at-least-once"),
            ("SLUICE_SOURCE_URL", "mysql://u:p@db.example:3307/app"),
            ("SLUICE_SOURCE_SERVER_ID", "77"),
            ("SLUICE_SOURCE_START", "latest"),
            ("SLUICE_SOURCE_INCLUDE", "shop\\..*, crm\\..*"),
            ("SLUICE_SOURCE_EXCLUDE", ""),
            ("SLUICE_SOURCE_INCLUDE_SYSTEM_SCHEMAS", "yes"),
            ("SLUICE_SOURCE_HEARTBEAT_MS", "1000"),
            ("SLUICE_KAFKA_BOOTSTRAP_SERVERS", "k1:9092,k2:9092"),
            ("SLUICE_KAFKA_OFFSETS_TOPIC", "offs"),
            ("SLUICE_KAFKA_REPLICATION_FACTOR", "3"),
            ("SLUICE_KAFKA_PROPERTY_SASL_PASSWORD", "pw"),
            ("SLUICE_KAFKA_TOPIC_CONFIG_CLEANUP_POLICY", "compact"),
            ("SLUICE_COMMIT_MAX_MS", "250"),
            ("SLUICE_COMMIT_MAX_EVENTS", "5"),
            ("SLUICE_COMMIT_IDLE_OFFSET_MS", "999"),
            ("SLUICE_LOG", "debug"),
            ("SLUICE_CONFIG", "/etc/sluice.toml"),
            ("SLUICE_CACHE_DIR", "/tmp"),
            ("SLUICE_TEST_ANYTHING", "1"),
            ("SLUICE_BENCH_X", "1"),
            ("SLUICE_KAFKA_PORT", "19092"),
            ("PATH", "/bin"),
        ]),
    )
    .unwrap();
    assert_eq!(c.name, "other");
    assert_eq!(c.transactional_id(), "sluice-other");
    assert_eq!(c.delivery, Delivery::AtLeastOnce);
    assert_eq!(c.source.url.host(), "db.example");
    assert_eq!(c.source.url.port(), 3307);
    assert_eq!(c.source.url.database(), Some("app"));
    assert_eq!(c.source.server_id, 77);
    assert_eq!(c.source.start, "latest");
    assert_eq!(c.source.include, vec![r"shop\..*", r"crm\..*"]);
    assert!(c.source.exclude.is_empty());
    assert!(c.source.include_system_schemas);
    assert_eq!(c.source.heartbeat_ms, 1000);
    assert_eq!(c.kafka.bootstrap_servers, "k1:9092,k2:9092");
    assert_eq!(c.kafka.offsets_topic.as_deref(), Some("offs"));
    assert_eq!(c.offsets_topic(), "offs");
    assert_eq!(c.kafka.replication_factor, 3);
    assert_eq!(c.kafka.properties["sasl.password"], "pw");
    assert_eq!(c.kafka.topic_config["cleanup.policy"], "compact");
    assert_eq!(
        (
            c.commit.max_ms,
            c.commit.max_events,
            c.commit.idle_offset_ms
        ),
        (250, 5, 999)
    );
    // The default route follows the overridden name.
    assert_eq!(c.routes[0].topic, "other.$1.$2");
}

#[test]
fn env_can_supply_required_settings() {
    let c = Config::from_str_with_env(
        "",
        env(&[
            ("SLUICE_NAME", "envonly"),
            ("SLUICE_SOURCE_URL", "mysql://root@localhost"),
            ("SLUICE_SOURCE_SERVER_ID", "9"),
            ("SLUICE_KAFKA_BOOTSTRAP_SERVERS", "k:9092"),
        ]),
    )
    .unwrap();
    assert_eq!(c.name, "envonly");
    assert_eq!(c.source.url.password(), None);
}

#[test]
fn env_property_replaces_dotted_key_from_file() {
    let c = Config::from_str_with_env(
        &with("[kafka.properties]\nsasl.mechanism = \"PLAIN\"\nlinger.ms = 5"),
        env(&[("SLUICE_KAFKA_PROPERTY_SASL_MECHANISM", "SCRAM-SHA-512")]),
    )
    .unwrap();
    assert_eq!(c.kafka.properties["sasl.mechanism"], "SCRAM-SHA-512");
    assert_eq!(c.kafka.properties["linger.ms"], "5");
    assert_eq!(c.kafka.properties.len(), 2);
    // Reserved properties are refused from the environment too.
    let e = Config::from_str_with_env(MINIMAL, env(&[("SLUICE_KAFKA_PROPERTY_ACKS", "1")]))
        .unwrap_err();
    assert_eq!(e.problems()[0].path, "kafka.properties.\"acks\"");
}

#[test]
fn unknown_sluice_env_var_is_rejected() {
    let e =
        Config::from_str_with_env(MINIMAL, env(&[("SLUICE_SOURCE_SERVERID", "5")])).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, ConfigError::Env { ref var, .. } if var == "SLUICE_SOURCE_SERVERID"));
    assert!(msg.contains("SLUICE_SOURCE_SERVERID"), "{msg}");
    assert!(
        msg.contains("did you mean SLUICE_SOURCE_SERVER_ID"),
        "{msg}"
    );
    for bad in [
        "SLUICE_",
        "SLUICE_ROUTE",
        "SLUICE_KAFKA_PROPERTIES_X",
        "SLUICE_KAFKA_PROPERTY_",
    ] {
        let e = Config::from_str_with_env(MINIMAL, env(&[(bad, "1")])).unwrap_err();
        assert!(e.to_string().contains(bad), "{e}");
    }
}

#[test]
fn env_value_errors() {
    let e = Config::from_str_with_env(MINIMAL, env(&[("SLUICE_COMMIT_MAX_MS", "fast")]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("SLUICE_COMMIT_MAX_MS") && e.contains("`fast`") && e.contains("integer"),
        "{e}"
    );
    let e = Config::from_str_with_env(
        MINIMAL,
        env(&[("SLUICE_SOURCE_INCLUDE_SYSTEM_SCHEMAS", "maybe")]),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("true or false"), "{e}");
    // Out of range for the field: reported by deserialization, naming the setting and
    // the override.
    let e = Config::from_str_with_env(MINIMAL, env(&[("SLUICE_SOURCE_SERVER_ID", "-1")]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("server_id") && e.contains("SLUICE_SOURCE_SERVER_ID"),
        "{e}"
    );
    let e = Config::from_str_with_env("source = 1", env(&[("SLUICE_SOURCE_SERVER_ID", "1")]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a table"), "{e}");
}

#[test]
fn env_table_covers_every_scalar_field() {
    let mut c = parse(FULL).unwrap();
    // Optional fields (commented out in full.toml) have variables too.
    c.kafka.schema_changes_topic = Some("shop.schema-changes".into());
    c.kafka.offsets_topic = Some("_sluice_offsets.shop".into());
    c.kafka.schema_history_topic = Some("_sluice_schema_history.shop".into());
    c.kafka.dlq_topic = Some("shop.dlq".into());
    c.snapshot.signal_table = Some("ops.sluice_signal".into());
    c.transaction_metadata.topic = Some("shop.transaction".into());
    c.heartbeat.topic = Some("__debezium-heartbeat.shop".into());
    c.kafka.security = Some(kafka_security::KafkaSecurity {
        mechanism: Some(kafka_security::SaslMechanism::Plain),
        ..Default::default()
    });
    let tree = toml::Value::try_from(&c).unwrap();
    let table = tree.as_table().unwrap();
    let mut expected = BTreeSet::new();
    for (key, value) in table {
        match value {
            toml::Value::Table(section)
                if [
                    "source",
                    "kafka",
                    "commit",
                    "snapshot",
                    "schema_registry",
                    "api",
                    "transaction_metadata",
                    "heartbeat",
                ]
                .contains(&key.as_str()) =>
            {
                for (field, v) in section {
                    if let (toml::Value::Table(sub), "security") = (v, field.as_str()) {
                        for sub_field in sub.keys() {
                            expected.insert(env::env_var_name(&[key, field, sub_field]));
                        }
                        continue;
                    }
                    let is_list = matches!(v, toml::Value::Array(_));
                    let listed = ["include", "exclude", "allowed_hosts", "allowed_origins"];
                    if !v.is_table() && (!is_list || listed.contains(&field.as_str())) {
                        expected.insert(env::env_var_name(&[key, field]));
                    }
                }
            }
            toml::Value::Table(_) | toml::Value::Array(_) => {}
            _ => {
                expected.insert(env::env_var_name(&[key]));
            }
        }
    }
    let known: BTreeSet<String> = env::known_env_vars().into_iter().collect();
    assert_eq!(known, expected);
    assert_eq!(env::FIELDS.len(), known.len());
}

// ---------------------------------------------------------------- secrets

const PASSWORD: &str = "Hunter2Secret";

fn secret_config() -> Config {
    parse(
        &MINIMAL
            .replace(
                "mysql://sluice:sluice@127.0.0.1:3306",
                &format!("mysql://sluice:{PASSWORD}@127.0.0.1:3306/shop?charset=utf8mb4"),
            )
            .replace(
                "bootstrap_servers = \"127.0.0.1:9092\"",
                &format!(
                    "bootstrap_servers = \"127.0.0.1:9092\"\n[kafka.properties]\n\
                 \"sasl.password\" = \"{PASSWORD}\"\n\"sasl.username\" = \"kuser\"\n\
                 \"ssl.key.pem\" = \"{PASSWORD}\"\nsasl.oauthbearer.config = \"{PASSWORD}\"\n\
                 \"sasl.oauthbearer.client.secret\" = \"{PASSWORD}\""
                ),
            ),
    )
    .unwrap()
}

#[test]
fn secrets_are_redacted_in_debug_display_and_json() {
    let c = secret_config();
    assert_eq!(c.source.url.password().unwrap().expose(), PASSWORD);
    assert_eq!(c.kafka.properties["sasl.password"], PASSWORD);

    let debug = format!("{c:?}");
    assert!(!debug.contains(PASSWORD), "{debug}");
    assert!(debug.contains("kuser") && debug.contains("***"), "{debug}");
    let pretty = format!("{c:#?}");
    assert!(!pretty.contains(PASSWORD));

    let display = c.source.url.to_string();
    assert_eq!(
        display,
        "mysql://sluice:***@127.0.0.1:3306/shop?charset=utf8mb4"
    );
    assert!(!format!("{:?}", c.source.url).contains(PASSWORD));

    let json = c.redacted_json();
    let text = json.to_string();
    assert!(!text.contains(PASSWORD), "{text}");
    assert_eq!(
        json["source"]["url"],
        "mysql://sluice:***@127.0.0.1:3306/shop?charset=utf8mb4"
    );
    assert_eq!(json["kafka"]["properties"]["sasl.password"], "***");
    assert_eq!(json["kafka"]["properties"]["sasl.username"], "kuser");
    assert_eq!(json["name"], "shop");
    assert_eq!(json["route"][0]["topic"], "shop.$1.$2");

    let toml_text = toml::to_string(&c).unwrap();
    assert!(!toml_text.contains(PASSWORD));
}

#[test]
fn secrets_never_appear_in_errors() {
    let bad_urls = [
        format!("mysql://u:{PASSWORD}@host:99999"),
        format!("http://u:{PASSWORD}@host"),
        format!("mysql://u:{PASSWORD}@/db"),
        format!("mysql://u:{PASSWORD}@host/a/b"),
        format!("mysql://u:{PASSWORD}@host#frag"),
        format!("mysql://u:pa/{PASSWORD}@host"),
        format!("u:{PASSWORD}@host"),
    ];
    for url in &bad_urls {
        let text = MINIMAL.replace("mysql://sluice:sluice@127.0.0.1:3306", url);
        let e = err(&text);
        assert!(!e.contains(PASSWORD), "{url}: {e}");
        assert!(e.contains("url"), "{url}: {e}");
        let e = Config::from_str_with_env(MINIMAL, env(&[("SLUICE_SOURCE_URL", url)]))
            .unwrap_err()
            .to_string();
        assert!(!e.contains(PASSWORD), "{url}: {e}");
    }
    // A TOML syntax error on the URL line quotes the line: redacted.
    let text = MINIMAL.replace(
        "url = \"mysql://sluice:sluice@127.0.0.1:3306\"",
        &format!("url = \"mysql://sluice:{PASSWORD}@127.0.0.1:3306\" junk"),
    );
    let e = err(&text);
    assert!(e.contains("line") && !e.contains(PASSWORD), "{e}");
    // Inline table with an unknown key on the URL line.
    let text = format!(
        "name = \"x\"\nsource = {{ url = \"mysql://u:{PASSWORD}@h\", server_id = 1, bogus = 2 }}\n\
         [kafka]\nbootstrap_servers = \"k:1\"\n"
    );
    let e = err(&text);
    assert!(e.contains("bogus") && !e.contains(PASSWORD), "{e}");
    // A syntax error on a secret property line.
    let e = err(&with(&format!(
        "[kafka.properties]\n\"sasl.password\" = \"{PASSWORD}"
    )));
    assert!(!e.contains(PASSWORD), "{e}");
    // A validation error elsewhere does not print the URL password.
    let text = MINIMAL
        .replace("sluice:sluice", &format!("sluice:{PASSWORD}"))
        .replace("5401", "0");
    let e = err(&text);
    assert!(!e.contains(PASSWORD), "{e}");
}

#[test]
fn source_url_accessors() {
    let u =
        SourceUrl::parse("mysql://us%40er:p%3Aw%40d@[::1]/my%20db?ssl-mode=REQUIRED&x=1").unwrap();
    assert_eq!(u.host(), "::1");
    assert_eq!(u.port(), 3306);
    assert_eq!(u.user(), Some("us@er"));
    assert_eq!(u.password().unwrap().expose(), "p:w@d");
    assert_eq!(u.database(), Some("my db"));
    assert_eq!(u.param("ssl-mode"), Some("REQUIRED"));
    assert_eq!(u.params().len(), 2);
    assert!(!u.to_string().contains("p%3Aw"), "{u}");
    assert!(u.expose_url().contains("p%3Aw%40d"));

    let u = SourceUrl::parse("mysql://h:3307").unwrap();
    assert_eq!(
        (u.host(), u.port(), u.user(), u.database()),
        ("h", 3307, None, None)
    );
    assert!(u.password().is_none());
    assert_eq!(u.to_string(), "mysql://h:3307");

    let u = SourceUrl::parse("mysql://u:pw@h/?password=qq&ok=1").unwrap();
    assert!(
        !u.to_string().contains("qq") && u.to_string().contains("ok=1"),
        "{u}"
    );

    for bad in [
        "",
        "mysql://",
        "mysql:///db",
        "postgres://h",
        "mysql://h/a/b",
        "not a url",
    ] {
        assert!(SourceUrl::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn secret_wrapper() {
    let s = Secret::new("pw".to_string());
    assert_eq!(format!("{s}"), "***");
    assert_eq!(format!("{s:?}"), "***");
    assert_eq!(serde_json::to_string(&s).unwrap(), "\"***\"");
    assert_eq!(s.expose(), "pw");
    let d: Secret<String> = serde_json::from_str("\"x\"").unwrap();
    assert_eq!(d.into_inner(), "x");
    assert!(is_secret_key("sasl.password") && is_secret_key("SSL.KEY.PASSWORD"));
    assert!(is_secret_key("sasl.oauthbearer.config") && is_secret_key("ssl.key.pem"));
    assert!(!is_secret_key("sasl.username"));
}

/// The vendored `librdkafka/src/rdkafka_conf.c` of the `rdkafka-sys` in `Cargo.lock`, from
/// cargo's registry sources.
fn vendored_rdkafka_conf() -> (std::path::PathBuf, String) {
    let lock = include_str!("../../Cargo.lock");
    let version = lock
        .split("[[package]]")
        .find(|p| p.contains("name = \"rdkafka-sys\""))
        .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = ")))
        .map(|v| v.trim_matches('"').to_string())
        .expect("rdkafka-sys in Cargo.lock");
    let home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".cargo")))
        .expect("CARGO_HOME or HOME");
    let registry = home.join("registry").join("src");
    let dirs = std::fs::read_dir(&registry)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", registry.display()));
    for index in dirs.flatten() {
        let file = index
            .path()
            .join(format!("rdkafka-sys-{version}"))
            .join("librdkafka/src/rdkafka_conf.c");
        if let Ok(text) = std::fs::read_to_string(&file) {
            return (file, text);
        }
    }
    panic!(
        "rdkafka-sys-{version}/librdkafka/src/rdkafka_conf.c not found under {}",
        registry.display()
    );
}

#[test]
fn every_property_librdkafka_marks_sensitive_is_secret() {
    let (file, text) = vendored_rdkafka_conf();
    // Each entry of the property table: `{_RK_GLOBAL | ... | _RK_SENSITIVE, "name", ...`.
    let mut marked = BTreeSet::new();
    for (at, _) in text.match_indices("_RK_SENSITIVE") {
        let entry = &text[at..];
        let Some(rest) = entry.strip_prefix("_RK_SENSITIVE,") else {
            continue; // a use of the flag in code, not a table entry
        };
        let rest = rest.trim_start();
        let Some(quoted) = rest.strip_prefix('"') else {
            continue;
        };
        let name = &quoted[..quoted.find('"').expect("closing quote")];
        marked.insert(name.to_string());
    }
    assert!(marked.len() >= 12, "{}: only {marked:?}", file.display());
    let listed: BTreeSet<String> = crate::config::secret::LIBRDKAFKA_SENSITIVE
        .iter()
        .map(|s| s.to_string())
        .chain(["sasl.username".to_string()])
        .collect();
    assert_eq!(
        marked,
        listed,
        "{} marks these properties sensitive: list the new ones in LIBRDKAFKA_SENSITIVE \
         (src/config/secret.rs)",
        file.display()
    );
    for name in &marked {
        assert_eq!(is_secret_key(name), name != "sasl.username", "{name}");
    }
}

#[test]
fn no_sensitive_property_shows_in_debug_json_or_errors() {
    let mut props = String::from("[kafka.properties]\n");
    let mut values = Vec::new();
    for (i, name) in crate::config::secret::LIBRDKAFKA_SENSITIVE
        .iter()
        .enumerate()
    {
        if *name == "ssl_key" {
            continue; // librdkafka's internal key object, not settable as text
        }
        let value = format!("S3cr3t-value-{i}");
        props.push_str(&format!("\"{name}\" = \"{value}\"\n"));
        values.push(value);
    }
    props.push_str("\"sasl.username\" = \"the-principal\"\n");
    let c: Config = with(&props).parse().unwrap_or_else(|e| panic!("{e}"));
    let shown = [
        format!("{c:?}"),
        serde_json::to_string(&c).unwrap(),
        toml::to_string(&c).unwrap(),
    ];
    for out in &shown {
        for v in &values {
            assert!(!out.contains(v.as_str()), "{v} shown in {out}");
        }
    }
    assert!(
        shown[1].contains("the-principal"),
        "sasl.username names the principal"
    );
    // A broken line of the same file: the TOML error quotes no secret.
    let broken = with(&format!("{props}\"sasl.password\" = \"S3cr3t-dup\"\n"));
    let e = broken.parse::<Config>().unwrap_err().to_string();
    assert!(!e.contains("S3cr3t"), "{e}");
}

#[test]
fn redact_text_lines() {
    assert_eq!(
        redact_text("5 | url = \"mysql://u:pw@h\"\n  |  ^\n"),
        "5 | (line not shown: it may contain a secret)\n  |  ^\n"
    );
    assert_eq!(
        redact_text("x = \"mysql://h:3306/db\""),
        "x = \"mysql://h:3306/db\""
    );
    assert_eq!(
        redact_text("3 | \"sasl.password\" = \"abc\"\nnext"),
        "3 | (line not shown: it may contain a secret)\nnext"
    );
    assert_eq!(
        redact_text("invalid string \"mysql://u:p:w@h@h2/db\", in sasl.password = abc"),
        "invalid string \"mysql://u:***@h2/db\", in sasl.password = ***"
    );
    assert_eq!(
        redact_text("12 | include = [\"a\"]\n   |  ^"),
        "12 | include = [\"a\"]\n   |  ^"
    );
}

// ---------------------------------------------------------------- loading files

#[test]
fn load_reads_a_file_and_reports_missing_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sluice.toml");
    std::fs::write(&path, QUICKSTART).unwrap();
    // Config::load reads the process environment; only run the positive case when it
    // holds no SLUICE_ variables that would change the outcome.
    let clean = std::env::vars_os().all(|(k, _)| {
        k.to_str()
            .is_none_or(|k| !k.starts_with("SLUICE_") || env::is_read_elsewhere(k))
    });
    if clean {
        let c = Config::load(&path).unwrap();
        assert_eq!(c.name, "quickstart");
    }

    let missing = dir.path().join("nope.toml");
    let e = Config::load(&missing).unwrap_err();
    assert!(matches!(e, ConfigError::NotFound { .. }));
    let msg = e.to_string();
    assert!(
        msg.contains("nope.toml") && msg.contains("not found"),
        "{msg}"
    );

    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, MINIMAL.replace("5401", "0")).unwrap();
    if clean {
        let e = Config::load(&bad).unwrap_err();
        assert!(e.to_string().contains("bad.toml"), "{e}");
        assert_eq!(e.problems()[0].path, "source.server_id");
    }

    let e = Config::load(dir.path()).unwrap_err();
    assert!(
        e.to_string().contains(&dir.path().display().to_string()),
        "{e}"
    );
}

// ---------------------------------------------------------------- properties

proptest! {
    #[test]
    fn password_never_leaks(pw in "[A-Za-z0-9!$&()*+,;=._~-]{6,24}") {
        prop_assume!(!"mysql://sluice@127.0.0.1:3306".contains(pw.as_str()));
        let url = format!("mysql://sluice:{pw}@127.0.0.1:3306");
        let text = MINIMAL
            .replace("mysql://sluice:sluice@127.0.0.1:3306", &url)
            .replace(
                "bootstrap_servers = \"127.0.0.1:9092\"",
                &format!("bootstrap_servers = \"127.0.0.1:9092\"\n[kafka.properties]\n\"sasl.password\" = '{}'", pw),
            );
        let c = parse(&text).unwrap();
        let shown = [
            format!("{c:?}"),
            c.source.url.to_string(),
            c.redacted_json().to_string(),
        ];
        for s in shown {
            prop_assert!(!s.contains(pw.as_str()), "{}", s);
        }
        // Broken variants of the same URL.
        for broken in [format!("{url}:99999"), format!("{url}/a/b"), format!("{url}#f")] {
            let t = MINIMAL.replace("mysql://sluice:sluice@127.0.0.1:3306", &broken);
            if let Err(e) = parse(&t) {
                prop_assert!(!e.to_string().contains(pw.as_str()), "{}", e);
            }
        }
    }

    #[test]
    fn default_route_expands_any_legal_names(db in "[a-z0-9_]{1,20}", table in "[a-z0-9_$]{1,20}") {
        let r = router(MINIMAL);
        let t = r.route(&db, &table);
        if table.contains('$') {
            prop_assert!(t.is_err());
        } else {
            prop_assert_eq!(t.unwrap().unwrap().topic, format!("shop.{db}.{table}"));
        }
    }

    #[test]
    fn include_matches_whole_name_only(prefix in "[a-z]{1,5}", db in "[a-z]{1,8}") {
        // `sys` and `mysql` are system schemas: left out unless asked for, whatever `include` says
        // (`include_exclude_and_system_schemas` tests that rule).
        prop_assume!(!route::SYSTEM_SCHEMAS.contains(&db.as_str()));
        let r = router(&with_source(&format!("include = ['{db}\\..*']")));
        prop_assert!(r.table_included(&db, "t"));
        let other = format!("{prefix}{db}");
        prop_assert!(!r.table_included(&other, "t"));
    }
}

// ---------------------------------------------------------------- TLS to the source

/// A temporary file to point `ssl_*` settings at (validation checks they exist).
fn temp_pem() -> tempfile::NamedTempFile {
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), "-----BEGIN CERTIFICATE-----\n").unwrap();
    f
}

fn toml_path(f: &tempfile::NamedTempFile) -> String {
    f.path().display().to_string().replace('\\', "\\\\")
}

#[test]
fn ssl_mode_defaults_to_preferred_and_parses_each_mode() {
    let c = parse(MINIMAL).unwrap();
    assert_eq!(c.source.ssl_mode, SslMode::Preferred);
    assert_eq!(c.source.ssl_ca(), None);
    assert_eq!((c.source.ssl_cert(), c.source.ssl_key()), (None, None));
    let ca = temp_pem();
    for mode in SslMode::ALL {
        let ca_line = if mode.verifies() {
            format!("ssl_ca = \"{}\"", toml_path(&ca))
        } else {
            String::new()
        };
        let c = parse(&with_source(&format!("ssl_mode = \"{mode}\"\n{ca_line}"))).unwrap();
        assert_eq!(c.source.ssl_mode, mode);
        assert_eq!(c.source.ssl_ca().is_some(), mode.verifies());
        assert_eq!(
            serde_json::to_value(mode).unwrap(),
            serde_json::json!(mode.as_str())
        );
    }
}

#[test]
fn unknown_ssl_mode_lists_the_modes() {
    let e = err(&with_source("ssl_mode = \"VERIFY_CA\""));
    assert!(e.contains("ssl_mode") && e.contains("VERIFY_CA"), "{e}");
    for mode in SslMode::ALL {
        assert!(e.contains(mode.as_str()), "{e}");
    }
}

#[test]
fn verify_modes_need_ssl_ca() {
    for mode in ["verify_ca", "verify_identity"] {
        let text = with_source(&format!("ssl_mode = \"{mode}\""));
        let p = assert_problem(&text, "source.ssl_ca");
        assert!(p.found.contains(mode), "{p}");
        assert!(p.fix.contains("source.ssl_ca") && p.fix.contains("SLUICE_SOURCE_SSL_CA"));
        assert!(
            p.fix.contains("\"required\"") && p.fix.contains("\"disabled\""),
            "{p}"
        );
        assert!(err(&text).contains("source.ssl_ca"));
    }
}

#[test]
fn ssl_ca_without_a_verify_mode_is_refused() {
    let ca = temp_pem();
    for mode in ["disabled", "preferred", "required"] {
        let text = with_source(&format!(
            "ssl_mode = \"{mode}\"\nssl_ca = \"{}\"",
            toml_path(&ca)
        ));
        let p = assert_problem(&text, "source.ssl_ca");
        assert!(p.fix.contains("verify_ca"), "{p}");
    }
}

#[test]
fn ssl_files_must_exist_and_cert_needs_key() {
    let p = assert_problem(
        &with_source("ssl_mode = \"verify_ca\"\nssl_ca = \"/nonexistent/ca.pem\""),
        "source.ssl_ca",
    );
    assert!(p.found.contains("/nonexistent/ca.pem"), "{p}");
    let cert = temp_pem();
    assert_problem(
        &with_source(&format!(
            "ssl_mode = \"required\"\nssl_cert = \"{}\"",
            toml_path(&cert)
        )),
        "source.ssl_key",
    );
    assert_problem(
        &with_source(&format!(
            "ssl_mode = \"disabled\"\nssl_cert = \"{0}\"\nssl_key = \"{0}\"",
            toml_path(&cert)
        )),
        "source.ssl_cert",
    );
    let c = parse(&with_source(&format!(
        "ssl_mode = \"required\"\nssl_cert = \"{0}\"\nssl_key = \"{0}\"",
        toml_path(&cert)
    )))
    .unwrap();
    assert_eq!(c.source.ssl_cert(), Some(cert.path()));
}

#[test]
fn tls_parameters_in_the_url_are_refused() {
    for param in [
        "ssl-mode=REQUIRED",
        "require_ssl=true",
        "sslmode=verify-full",
    ] {
        let text = MINIMAL.replace("127.0.0.1:3306\"", &format!("127.0.0.1:3306?{param}\""));
        let p = assert_problem(&text, "source.url");
        assert!(p.fix.contains("source.ssl_mode"), "{p}");
    }
    parse(&MINIMAL.replace("127.0.0.1:3306\"", "127.0.0.1:3306?charset=utf8mb4\"")).unwrap();
}

#[test]
fn ssl_settings_from_the_environment() {
    let ca = temp_pem();
    let ca_path = ca.path().display().to_string();
    let c = Config::from_str_with_env(
        MINIMAL,
        env(&[
            ("SLUICE_SOURCE_SSL_MODE", "verify_identity"),
            ("SLUICE_SOURCE_SSL_CA", &ca_path),
        ]),
    )
    .unwrap();
    assert_eq!(c.source.ssl_mode, SslMode::VerifyIdentity);
    assert_eq!(c.source.ssl_ca(), Some(ca.path()));
    let e = Config::from_str_with_env(MINIMAL, env(&[("SLUICE_SOURCE_SSL_MODE", "verify_ca")]))
        .unwrap_err();
    assert!(e.to_string().contains("source.ssl_ca"), "{e}");
}

// ---------------------------------------------------------------- schema registry

/// MINIMAL with a `[schema_registry]` section holding `lines`.
fn with_registry(lines: &str) -> String {
    with(&format!("[schema_registry]\n{lines}"))
}

#[test]
fn schema_registry_defaults() {
    let r = parse(MINIMAL).unwrap().schema_registry;
    assert_eq!(r, SchemaRegistryConfig::default());
    assert!(!r.is_configured());
    assert_eq!(r.url, "");
    assert_eq!(r.basic_auth(), None);
    assert_eq!((r.ssl_ca(), r.ssl_cert(), r.ssl_key()), (None, None, None));
    assert_eq!(r.timeout(), Duration::from_secs(10));
    assert_eq!(r.retry_backoff_max(), Duration::from_secs(5));
    assert_eq!(r.subject_name_strategy, SubjectNameStrategy::TopicName);
}

#[test]
fn schema_registry_settings_parse() {
    let ca = temp_pem();
    let c = parse(&with_registry(&format!(
        "url = \"https://sr.example:8081/\"\nusername = \"key\"\npassword = \"{PASSWORD}\"\n\
         ssl_ca = \"{}\"\ntimeout_ms = 2500\nsubject_name_strategy = \"topic_record_name\"\n\
         retry_backoff_max_ms = 800",
        toml_path(&ca)
    )))
    .unwrap();
    let r = &c.schema_registry;
    assert_eq!(r.base_url(), "https://sr.example:8081");
    let (user, password) = r.basic_auth().unwrap();
    assert_eq!((user, password.expose().as_str()), ("key", PASSWORD));
    assert_eq!(r.ssl_ca(), Some(ca.path()));
    assert_eq!(r.timeout(), Duration::from_millis(2500));
    assert_eq!(r.retry_backoff_max(), Duration::from_millis(800));
    assert_eq!(
        r.subject_name_strategy,
        SubjectNameStrategy::TopicRecordName
    );
    for strategy in SubjectNameStrategy::ALL {
        let c = parse(&with_registry(&format!(
            "subject_name_strategy = \"{strategy}\""
        )))
        .unwrap();
        assert_eq!(c.schema_registry.subject_name_strategy, strategy);
    }
    let e = err(&with_registry(
        "subject_name_strategy = \"TopicNameStrategy\"",
    ));
    assert!(e.contains("subject_name_strategy"), "{e}");
    for strategy in SubjectNameStrategy::ALL {
        assert!(e.contains(strategy.as_str()), "{e}");
    }
    let e = err(&with_registry("bogus = 1"));
    assert!(e.contains("unknown field `bogus`"), "{e}");
}

#[test]
fn schema_registry_url_is_checked() {
    for (url, found) in [
        ("ftp://sr.example", "http:// or https://"),
        ("sr.example:8081", "http:// or https://"),
        ("not a url", "not a URL"),
        ("http://sr.example/?x=1", "?query"),
        ("http://sr.example/#top", "#fragment"),
    ] {
        let p = assert_problem(
            &with_registry(&format!("url = \"{url}\"")),
            "schema_registry.url",
        );
        assert!(p.found.contains(found), "{url}: {p}");
        assert!(p.expected.contains("http://"), "{p}");
    }
    let p = assert_problem(
        &with_registry(&format!("url = \"https://key:{PASSWORD}@sr.example\"")),
        "schema_registry.url",
    );
    assert!(p.found.contains("credentials"), "{p}");
    assert!(p.fix.contains("schema_registry.username"), "{p}");
    assert!(!err(&with_registry(&format!(
        "url = \"https://key:{PASSWORD}@sr.example\""
    )))
    .contains(PASSWORD));
    assert!(!err(&with_registry(&format!(
        "url = \"https://key:{PASSWORD}@sr example\""
    )))
    .contains(PASSWORD));
    parse(&with_registry("url = \"http://[::1]:8081\"")).unwrap();
}

#[test]
fn schema_registry_credentials_come_in_pairs() {
    let p = assert_problem(
        &with_registry("username = \"key\""),
        "schema_registry.password",
    );
    assert!(p.fix.contains("SLUICE_SCHEMA_REGISTRY_PASSWORD"), "{p}");
    let p = assert_problem(
        &with_registry(&format!("password = \"{PASSWORD}\"")),
        "schema_registry.username",
    );
    assert!(!p.to_string().contains(PASSWORD), "{p}");
    assert!(!err(&with_registry(&format!("password = \"{PASSWORD}\""))).contains(PASSWORD));
}

#[test]
fn schema_registry_numbers_are_checked() {
    assert_problem(
        &with_registry("timeout_ms = 0"),
        "schema_registry.timeout_ms",
    );
    assert_problem(
        &with_registry("retry_backoff_max_ms = 0"),
        "schema_registry.retry_backoff_max_ms",
    );
}

#[test]
fn schema_registry_tls_files_are_checked() {
    let https = "url = \"https://sr.example\"";
    let p = assert_problem(
        &with_registry(&format!("{https}\nssl_ca = \"/nonexistent/sr-ca.pem\"")),
        "schema_registry.ssl_ca",
    );
    assert!(p.found.contains("/nonexistent/sr-ca.pem"), "{p}");
    let pem = temp_pem();
    let file = toml_path(&pem);
    assert_problem(
        &with_registry(&format!("{https}\nssl_cert = \"{file}\"")),
        "schema_registry.ssl_key",
    );
    assert_problem(
        &with_registry(&format!("{https}\nssl_key = \"{file}\"")),
        "schema_registry.ssl_cert",
    );
    let p = assert_problem(
        &with_registry(&format!("url = \"http://sr.example\"\nssl_ca = \"{file}\"")),
        "schema_registry.ssl_ca",
    );
    assert!(p.fix.contains("https://"), "{p}");
    let c = parse(&with_registry(&format!(
        "{https}\nssl_ca = \"{file}\"\nssl_cert = \"{file}\"\nssl_key = \"{file}\""
    )))
    .unwrap();
    assert_eq!(c.schema_registry.ssl_cert(), Some(pem.path()));
    assert_eq!(c.schema_registry.ssl_key(), Some(pem.path()));
}

#[test]
fn schema_registry_from_the_environment() {
    let c = Config::from_str_with_env(
        MINIMAL,
        env(&[
            ("SLUICE_SCHEMA_REGISTRY_URL", "http://127.0.0.1:8081"),
            ("SLUICE_SCHEMA_REGISTRY_USERNAME", "key"),
            ("SLUICE_SCHEMA_REGISTRY_PASSWORD", PASSWORD),
            ("SLUICE_SCHEMA_REGISTRY_TIMEOUT_MS", "3000"),
            (
                "SLUICE_SCHEMA_REGISTRY_SUBJECT_NAME_STRATEGY",
                "record_name",
            ),
            ("SLUICE_SCHEMA_REGISTRY_RETRY_BACKOFF_MAX_MS", "1000"),
        ]),
    )
    .unwrap();
    let r = &c.schema_registry;
    assert_eq!(r.url, "http://127.0.0.1:8081");
    assert_eq!(r.basic_auth().unwrap().1.expose(), PASSWORD);
    assert_eq!((r.timeout_ms, r.retry_backoff_max_ms), (3000, 1000));
    assert_eq!(r.subject_name_strategy, SubjectNameStrategy::RecordName);
    // A secret variable's value never appears in an error about it.
    let e = Config::from_str_with_env(
        MINIMAL,
        env(&[("SLUICE_SCHEMA_REGISTRY_TIMEOUT_MS", "soon")]),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("SLUICE_SCHEMA_REGISTRY_TIMEOUT_MS"), "{e}");
    let e = Config::from_str_with_env(
        MINIMAL,
        env(&[("SLUICE_SCHEMA_REGISTRY_PASSWORD", PASSWORD)]),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("schema_registry.username") && !e.contains(PASSWORD),
        "{e}"
    );
}

#[test]
fn schema_registry_password_is_redacted() {
    let c = parse(&with_registry(&format!(
        "url = \"http://127.0.0.1:8081\"\nusername = \"key\"\npassword = \"{PASSWORD}\""
    )))
    .unwrap();
    assert_eq!(c.schema_registry.password.expose(), PASSWORD);
    for shown in [
        format!("{c:?}"),
        format!("{c:#?}"),
        format!("{:?}", c.schema_registry),
        c.redacted_json().to_string(),
        toml::to_string(&c).unwrap(),
    ] {
        assert!(!shown.contains(PASSWORD), "{shown}");
    }
    let json = c.redacted_json();
    assert_eq!(json["schema_registry"]["password"], "***");
    assert_eq!(json["schema_registry"]["username"], "key");
    // No password: nothing to hide, shown as empty.
    assert_eq!(
        parse(MINIMAL).unwrap().redacted_json()["schema_registry"]["password"],
        ""
    );
    // A syntax error on the password line does not quote it.
    let e = err(&with_registry(&format!("password = \"{PASSWORD}")));
    assert!(!e.contains(PASSWORD), "{e}");
}

// ---------------------------------------------------------------- snapshot

#[test]
fn signal_table_is_a_db_table_name() {
    assert_eq!(parse(MINIMAL).unwrap().snapshot.signal_table, None);
    let c = parse(&with("[snapshot]\nsignal_table = \"ops.sluice_signal\"")).unwrap();
    assert_eq!(
        c.snapshot.signal_table.as_deref(),
        Some("ops.sluice_signal")
    );
    let c = parse(&with("[snapshot]\nsignal_table = \"`my.db`.`sig`\"")).unwrap();
    assert_eq!(c.snapshot.signal_table.as_deref(), Some("`my.db`.`sig`"));
    for bad in ["sluice_signal", "ops.", "a.b.c", "`ops.sig"] {
        let text = with(&format!("[snapshot]\nsignal_table = '{bad}'"));
        assert_problem(&text, "snapshot.signal_table");
        let e = err(&text);
        assert!(
            e.contains("snapshot.signal_table")
                && e.contains(&format!("{bad:?}"))
                && e.contains("expected the signal table as `db.table`")
                && e.contains("signal_table = \"ops.sluice_signal\""),
            "{e}"
        );
    }
    let e = err(&with("[snapshot]\nsignal_table = 5"));
    assert!(e.contains("signal_table"), "{e}");
    // From the environment, checked the same way.
    let c = Config::from_str_with_env(MINIMAL, env(&[("SLUICE_SNAPSHOT_SIGNAL_TABLE", "ops.sig")]))
        .unwrap();
    assert_eq!(c.snapshot.signal_table.as_deref(), Some("ops.sig"));
    let e = Config::from_str_with_env(MINIMAL, env(&[("SLUICE_SNAPSHOT_SIGNAL_TABLE", "sig")]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("snapshot.signal_table") && e.contains("no `.`"),
        "{e}"
    );
}

// ---------------------------------------------------------------- [api]

#[test]
fn api_defaults() {
    let c = parse(MINIMAL).unwrap();
    assert_eq!(c.api, ApiConfig::default());
    assert!(c.api.enabled);
    assert_eq!(c.api.listen, "127.0.0.1:8089");
    assert_eq!(c.api.listen_addr(), Some("127.0.0.1:8089".parse().unwrap()));
    assert_eq!(c.api.token(), None);
    assert_eq!(c.redacted_json()["api"]["token"], "");
}

#[test]
fn api_settings_parse() {
    let c = parse(&with(
        "[api]\nenabled = false\nlisten = \"[::1]:0\"\ntoken = \"abc-123\"",
    ))
    .unwrap();
    assert!(!c.api.enabled);
    assert_eq!(c.api.listen_addr(), Some("[::1]:0".parse().unwrap()));
    assert_eq!(c.api.token(), Some("abc-123"));
    let e = err(&with("[api]\nport = 8089"));
    assert!(e.contains("port"), "{e}");
}

#[test]
fn api_listen_must_be_a_socket_address() {
    for bad in [
        "localhost:8089",
        "127.0.0.1",
        "8089",
        "",
        "127.0.0.1:99999",
        "off",
    ] {
        let p = assert_problem(&with(&format!("[api]\nlisten = {bad:?}")), "api.listen");
        assert!(p.found.contains(&format!("{bad:?}")), "{bad}: {p}");
        assert!(
            p.expected.contains("an IP address and a port"),
            "{bad}: {p}"
        );
        assert!(p.fix.contains("api.listen"), "{bad}: {p}");
    }
    let e = err(&with("[api]\nlisten = \"localhost:8089\""));
    assert!(
        e.contains("api.listen")
            && e.contains("\"localhost:8089\"")
            && e.contains("127.0.0.1:8089"),
        "{e}"
    );
    // Also through the environment, and also when the API is disabled.
    let e = Config::from_str_with_env(MINIMAL, env(&[("SLUICE_API_LISTEN", "nowhere")]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("api.listen") && e.contains("nowhere"), "{e}");
    assert_problem(
        &with("[api]\nenabled = false\nlisten = \"x\""),
        "api.listen",
    );
}

#[test]
fn api_token_must_be_sendable_and_is_not_shown() {
    let p = assert_problem(
        &with(&format!("[api]\ntoken = \"{PASSWORD} x\"")),
        "api.token",
    );
    assert!(!p.to_string().contains(PASSWORD), "{p}");
    assert_problem(&with("[api]\ntoken = \"t\\u00e9\""), "api.token");
}

#[test]
fn api_token_from_a_file() {
    let dir = std::env::temp_dir().join(format!("sluice-token-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("token");
    std::fs::write(&file, format!("  {PASSWORD}\n")).unwrap();
    let text = with(&format!(
        "[api]\ntoken_file = {:?}",
        file.display().to_string()
    ));
    let c: Config = text.parse().unwrap();
    assert_eq!(c.api.token(), Some(PASSWORD), "the file's content, trimmed");
    assert!(!format!("{c:?}").contains(PASSWORD));
    assert!(!serde_json::to_string(&c).unwrap().contains(PASSWORD));
    // Both, an unreadable file and an empty one: refused, naming the setting.
    let both = with(&format!(
        "[api]\ntoken = \"x\"\ntoken_file = {:?}",
        file.display().to_string()
    ));
    let e = both.parse::<Config>().unwrap_err().to_string();
    assert!(e.contains("api.token_file") && e.contains("both"), "{e}");
    let e = with("[api]\ntoken_file = \"/nonexistent/token\"")
        .parse::<Config>()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("api.token_file") && e.contains("cannot be read"),
        "{e}"
    );
    std::fs::write(&file, "\n").unwrap();
    let e = text.parse::<Config>().unwrap_err().to_string();
    assert!(e.contains("api.token_file") && e.contains("empty"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn source_and_registry_passwords_from_files() {
    let dir = std::env::temp_dir().join(format!("sluice-pw-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("pw");
    // A password a URL must percent-encode.
    let pw = format!("{PASSWORD}@/:#");
    std::fs::write(&file, format!("{pw}\n")).unwrap();
    let path = file.display().to_string();
    let text = MINIMAL
        .replace(
            "mysql://sluice:sluice@127.0.0.1:3306",
            "mysql://sluice@127.0.0.1:3306",
        )
        .replace(
            "server_id = 5401",
            &format!("server_id = 5401\npassword_file = {path:?}"),
        );
    let text = format!(
        "{text}\n[schema_registry]\nurl = \"http://127.0.0.1:8081\"\nusername = \"u\"\n\
         password_file = {path:?}\n"
    );
    let c: Config = text.parse().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        c.source.url.password().map(|p| p.expose().as_str()),
        Some(pw.as_str())
    );
    assert_eq!(c.source.url.host(), "127.0.0.1");
    assert!(c.source.url.expose_url().contains("sluice:"));
    assert_eq!(c.schema_registry.password.expose(), &pw);
    for out in [format!("{c:?}"), serde_json::to_string(&c).unwrap()] {
        assert!(!out.contains(PASSWORD), "{out}");
    }
    // The URL's own password and a file: refused.
    let both = MINIMAL.replace(
        "server_id = 5401",
        &format!("server_id = 5401\npassword_file = {path:?}"),
    );
    let e = both.parse::<Config>().unwrap_err().to_string();
    assert!(
        e.contains("source.password_file") && e.contains("both"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn api_hosts_origins_timeouts_and_cap_are_checked() {
    let c: Config = MINIMAL.parse().unwrap();
    assert_eq!(
        (
            c.api.header_timeout_ms,
            c.api.request_timeout_ms,
            c.api.max_connections
        ),
        (10_000, 90_000, 128)
    );
    assert!(c.api.allowed_hosts.is_empty() && c.api.allowed_origins.is_empty());
    for field in ["header_timeout_ms", "request_timeout_ms", "max_connections"] {
        assert_problem(
            &with(&format!("[api]\n{field} = 0")),
            &format!("api.{field}"),
        );
    }
    for bad in [
        "ops.example.com",
        "https://ops.example.com/path",
        "ftp://x",
        "https://",
    ] {
        assert_problem(
            &with(&format!("[api]\nallowed_origins = [{bad:?}]")),
            "api.allowed_origins[0]",
        );
    }
    assert_problem(
        &with("[api]\nallowed_hosts = [\"http://sluice\"]"),
        "api.allowed_hosts[0]",
    );
    let c = Config::from_str_with_env(
        MINIMAL,
        env(&[
            ("SLUICE_API_ALLOWED_HOSTS", "sluice:8089,metrics"),
            ("SLUICE_API_ALLOWED_ORIGINS", "https://ops.example.com"),
        ]),
    )
    .unwrap();
    assert_eq!(c.api.allowed_hosts, ["sluice:8089", "metrics"]);
    assert_eq!(c.api.allowed_origins, ["https://ops.example.com"]);
}

#[test]
fn api_from_the_environment() {
    let c = Config::from_str_with_env(
        MINIMAL,
        env(&[
            ("SLUICE_API_ENABLED", "off"),
            ("SLUICE_API_LISTEN", "0.0.0.0:9000"),
            ("SLUICE_API_TOKEN", PASSWORD),
        ]),
    )
    .unwrap();
    assert!(!c.api.enabled);
    assert_eq!(c.api.listen, "0.0.0.0:9000");
    assert_eq!(c.api.token(), Some(PASSWORD));
    let e = Config::from_str_with_env(MINIMAL, env(&[("SLUICE_API_ENABLED", "maybe")]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("SLUICE_API_ENABLED"), "{e}");
}

#[test]
fn api_ready_max_lag_seconds() {
    assert_eq!(parse(MINIMAL).unwrap().api.ready_max_lag_seconds, 60.0);
    for (text, want) in [("5", 5.0), ("2.5", 2.5), ("86400", 86400.0)] {
        let c = parse(&with(&format!("[api]\nready_max_lag_seconds = {text}"))).unwrap();
        assert_eq!(c.api.ready_max_lag_seconds, want, "{text}");
    }
    for bad in ["0", "-1", "0.0", "nan", "inf"] {
        let p = assert_problem(
            &with(&format!("[api]\nready_max_lag_seconds = {bad}")),
            "api.ready_max_lag_seconds",
        );
        assert!(p.expected.contains("greater than 0"), "{bad}: {p}");
        assert!(
            p.fix.contains("SLUICE_API_READY_MAX_LAG_SECONDS"),
            "{bad}: {p}"
        );
    }
    let e = err(&with("[api]\nready_max_lag_seconds = \"60\""));
    assert!(e.contains("ready_max_lag_seconds"), "{e}");
    let c = Config::from_str_with_env(
        MINIMAL,
        env(&[("SLUICE_API_READY_MAX_LAG_SECONDS", " 2.5 ")]),
    )
    .unwrap();
    assert_eq!(c.api.ready_max_lag_seconds, 2.5);
    assert_eq!(c.redacted_json()["api"]["ready_max_lag_seconds"], 2.5);
    for bad in ["soon", "inf", ""] {
        let e =
            Config::from_str_with_env(MINIMAL, env(&[("SLUICE_API_READY_MAX_LAG_SECONDS", bad)]))
                .unwrap_err()
                .to_string();
        assert!(
            e.contains("SLUICE_API_READY_MAX_LAG_SECONDS") && e.contains("decimal number"),
            "{bad}: {e}"
        );
    }
    let e = Config::from_str_with_env(MINIMAL, env(&[("SLUICE_API_READY_MAX_LAG_SECONDS", "-3")]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("api.ready_max_lag_seconds"), "{e}");
}

#[test]
fn api_token_is_redacted() {
    let c = parse(&with(&format!("[api]\ntoken = \"{PASSWORD}\""))).unwrap();
    assert_eq!(c.api.token(), Some(PASSWORD));
    for shown in [
        format!("{c:?}"),
        format!("{c:#?}"),
        format!("{:?}", c.api),
        c.redacted_json().to_string(),
        toml::to_string(&c).unwrap(),
    ] {
        assert!(!shown.contains(PASSWORD), "{shown}");
    }
    assert_eq!(c.redacted_json()["api"]["token"], "***");
    // A syntax error on the token line does not quote it.
    let e = err(&with(&format!("[api]\ntoken = \"{PASSWORD}")));
    assert!(!e.contains(PASSWORD), "{e}");
    let e = err(&with(&format!("[api]\ntoken = \"{PASSWORD}\" junk")));
    assert!(!e.contains(PASSWORD), "{e}");
    // An unusable token from the environment is not quoted either.
    let e = Config::from_str_with_env(
        MINIMAL,
        env(&[("SLUICE_API_TOKEN", &format!("{PASSWORD}\n"))]),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("api.token") && !e.contains(PASSWORD), "{e}");
}

// ---------------------------------------------------------------- own topics

#[test]
fn offsets_and_history_topics_are_per_pipeline_by_default() {
    let a = parse(&MINIMAL.replace("\"shop\"", "\"a.b-c_1\"")).unwrap();
    assert_eq!(a.offsets_topic(), "_sluice_offsets.a.b-c_1");
    assert_eq!(a.schema_history_topic(), "_sluice_schema_history.a.b-c_1");
    // The longest legal name gives legal topic names.
    let long = "n".repeat(100);
    let c = parse(&MINIMAL.replace("\"shop\"", &format!("\"{long}\""))).unwrap();
    assert!(route::is_valid_topic_name(&c.schema_history_topic()));
    // Explicit settings win, the other default stays per pipeline.
    let c = parse(&with_kafka("offsets_topic = \"offs\"")).unwrap();
    assert_eq!(c.offsets_topic(), "offs");
    assert_eq!(c.schema_history_topic(), "_sluice_schema_history.shop");
    let c = parse(&with_kafka("schema_history_topic = \"hist\"")).unwrap();
    assert_eq!(c.offsets_topic(), "_sluice_offsets.shop");
    assert_eq!(c.schema_history_topic(), "hist");
    // The effective configuration shows the derived names.
    let j = parse(MINIMAL).unwrap().redacted_json();
    assert_eq!(j["kafka"]["offsets_topic"], "_sluice_offsets.shop");
    assert_eq!(
        j["kafka"]["schema_history_topic"],
        "_sluice_schema_history.shop"
    );
}

#[test]
fn a_name_that_makes_illegal_default_topics_is_refused_naming_the_settings() {
    let c = parse(MINIMAL).unwrap();
    // Names the pipeline rule accepts give legal topics (see the property below); a longer one
    // stands for a rule that might widen.
    let long = "n".repeat(240);
    let p = topics::derived_problem(&long, &c.kafka).expect("a problem");
    let text = p.to_string();
    assert_eq!(p.path, "name", "{text}");
    for needle in [
        "_sluice_offsets.nnn",
        "_sluice_schema_history.nnn",
        "kafka.offsets_topic and kafka.schema_history_topic",
    ] {
        assert!(text.contains(needle), "{needle:?} in {text}");
    }
    // Only the defaults in use count.
    let mut k = c.kafka.clone();
    k.schema_history_topic = Some("hist".into());
    let text = topics::derived_problem(&long, &k).unwrap().to_string();
    assert!(!text.contains("schema_history"), "{text}");
    k.offsets_topic = Some("offs".into());
    assert!(topics::derived_problem(&long, &k).is_none());
    // An invalid name is one problem, at `name`, not one more per spoilt default.
    let ps = problems(&MINIMAL.replace("\"shop\"", "\"a/b\""));
    assert_eq!(ps.len(), 1, "{ps:?}");
    assert_eq!(ps[0].path, "name");
    // A schema-history topic equal to the derived offsets topic is refused.
    let e = err(&with_kafka(
        "schema_history_topic = \"_sluice_offsets.shop\"",
    ));
    assert!(
        e.contains("kafka.schema_history_topic") && e.contains("also kafka.offsets_topic"),
        "{e}"
    );
}

#[test]
fn byte_and_time_limits_default_validate_and_override() {
    let c = parse(MINIMAL).unwrap();
    assert_eq!(c.source.max_event_bytes, 1 << 30);
    assert_eq!(c.source.channel_max_bytes, 64 << 20);
    assert_eq!(c.source.query_timeout_ms, 60_000);
    assert_eq!(c.source.query_timeout(), Some(Duration::from_secs(60)));
    assert_eq!(c.snapshot.chunk_max_bytes, 32 << 20);
    // 0 turns the query timeout off.
    let c = parse(&with_source("query_timeout_ms = 0")).unwrap();
    assert_eq!(c.source.query_timeout(), None);
    // Out of range: the problem names the setting, its variable and the default.
    let p = assert_problem(
        &with_source("channel_max_bytes = 1024"),
        "source.channel_max_bytes",
    );
    assert_eq!(p.found, "1024");
    assert!(p.expected.contains("65536"), "{p}");
    assert!(
        p.fix.contains("SLUICE_SOURCE_CHANNEL_MAX_BYTES") && p.fix.contains("67108864"),
        "{p}"
    );
    assert_problem(
        &with_source("channel_max_bytes = 4294967296"),
        "source.channel_max_bytes",
    );
    let p = assert_problem(
        &with_source("query_timeout_ms = 50"),
        "source.query_timeout_ms",
    );
    assert!(
        p.expected.contains("0 (no timeout)") && p.fix.contains("SLUICE_SOURCE_QUERY_TIMEOUT_MS"),
        "{p}"
    );
    let p = assert_problem(
        &with("[snapshot]\nchunk_max_bytes = 100"),
        "snapshot.chunk_max_bytes",
    );
    assert!(
        p.fix.contains("SLUICE_SNAPSHOT_CHUNK_MAX_BYTES") && p.fix.contains("33554432"),
        "{p}"
    );
    let p = assert_problem(
        &with_source("max_event_bytes = 10"),
        "source.max_event_bytes",
    );
    assert!(p.fix.contains("SLUICE_SOURCE_MAX_EVENT_BYTES"), "{p}");
    // Environment overrides.
    let c = Config::from_str_with_env(
        MINIMAL,
        env(&[
            ("SLUICE_SOURCE_CHANNEL_MAX_BYTES", "1048576"),
            ("SLUICE_SOURCE_QUERY_TIMEOUT_MS", "5000"),
            ("SLUICE_SNAPSHOT_CHUNK_MAX_BYTES", "65536"),
        ]),
    )
    .unwrap();
    assert_eq!(c.source.channel_max_bytes, 1 << 20);
    assert_eq!(c.source.query_timeout_ms, 5000);
    assert_eq!(c.snapshot.chunk_max_bytes, 65536);
    let e = Config::from_str_with_env(MINIMAL, env(&[("SLUICE_SOURCE_QUERY_TIMEOUT_MS", "soon")]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("SLUICE_SOURCE_QUERY_TIMEOUT_MS"), "{e}");
}

proptest! {
    /// Every name the pipeline rule accepts gives legal default topic names.
    #[test]
    fn valid_names_give_legal_default_topics(name in "[A-Za-z0-9._-]{1,100}") {
        prop_assume!(is_valid_pipeline_name(&name));
        prop_assert!(route::is_valid_topic_name(&topics::default_offsets_topic(&name)));
        prop_assert!(route::is_valid_topic_name(&topics::default_schema_history_topic(&name)));
        let c = parse(&MINIMAL.replace("\"shop\"", &format!("{name:?}")));
        prop_assert!(c.is_ok(), "{:?}", c.err());
    }
}

#[test]
fn transaction_metadata_is_off_by_default_and_configurable() {
    let c = parse(MINIMAL).unwrap();
    assert!(!c.transaction_metadata.enabled);
    assert!(!c.needs_registry());
    assert_eq!(c.transaction_topic(), format!("{}.transaction", c.name));
    let c = parse(&with(
        "[transaction_metadata]\nenabled = true\ntopic = \"shop.tx\"",
    ))
    .unwrap();
    assert!(c.transaction_metadata.enabled);
    assert_eq!(c.transaction_topic(), "shop.tx");
    assert_eq!(c.transaction_metadata.format, Format::Json);
    // The environment overrides the file, like every other field.
    let c = Config::from_str_with_env(
        &with("[transaction_metadata]\nenabled = false"),
        env(&[
            ("SLUICE_TRANSACTION_METADATA_ENABLED", "true"),
            ("SLUICE_TRANSACTION_METADATA_FORMAT", "avro"),
            (
                "SLUICE_SCHEMA_REGISTRY_URL",
                "http://127.0.0.1:8081/apis/ccompat/v7",
            ),
        ]),
    )
    .unwrap();
    assert!(c.transaction_metadata.enabled);
    assert_eq!(c.transaction_metadata.format, Format::Avro);
    assert!(c.needs_registry());
    assert!(err(&with("[transaction_metadata]\nenable = true")).contains("enable"));
}

#[test]
fn avro_transaction_metadata_needs_a_schema_registry() {
    let text = with("[transaction_metadata]\nenabled = true\nformat = \"avro\"");
    let p = assert_problem(&text, "schema_registry.url");
    assert!(p.found.contains("transaction_metadata"), "{p}");
    // Disabled, its format asks for nothing.
    let off = with("[transaction_metadata]\nenabled = false\nformat = \"avro\"");
    assert!(parse(&off).is_ok());
}

#[test]
fn the_transaction_topic_must_be_legal_and_its_own() {
    let p = assert_problem(
        &with("[transaction_metadata]\nenabled = true\ntopic = \"no spaces\""),
        "transaction_metadata.topic",
    );
    assert!(p.found.contains("no spaces"), "{p}");
    let c = parse(MINIMAL).unwrap();
    let p = assert_problem(
        &with(&format!(
            "[transaction_metadata]\nenabled = true\ntopic = \"{}\"",
            c.offsets_topic()
        )),
        "transaction_metadata.topic",
    );
    assert!(p.found.contains("kafka.offsets_topic"), "{p}");
}

#[test]
fn heartbeats_are_off_by_default_and_paced_sensibly() {
    let c = parse(MINIMAL).unwrap();
    assert!(!c.heartbeat.enabled());
    assert_eq!(
        c.heartbeat_topic(),
        format!("__debezium-heartbeat.{}", c.name)
    );
    let c = parse(&with("[heartbeat]\ninterval_ms = 5000")).unwrap();
    assert!(c.heartbeat.enabled());
    let p = assert_problem(
        &with("[heartbeat]\ninterval_ms = 10"),
        "heartbeat.interval_ms",
    );
    assert!(p.found == "10" && p.expected.contains("100"), "{p}");
    let p = assert_problem(
        &with("[heartbeat]\ninterval_ms = 1000\nformat = \"avro\""),
        "schema_registry.url",
    );
    assert!(p.found.contains("heartbeat"), "{p}");
    let c = Config::from_str_with_env(MINIMAL, env(&[("SLUICE_HEARTBEAT_INTERVAL_MS", "250")]))
        .unwrap();
    assert_eq!(c.heartbeat.interval_ms, 250);
}

#[test]
fn json_schemas_is_off_by_default_and_needs_format_json() {
    let c = parse(MINIMAL).unwrap();
    assert!(!c.effective_routes()[0].json_schemas);
    assert!(!c.transaction_metadata.json_schemas);
    assert!(!c.heartbeat.json_schemas);
    let c = parse(&with(
        "[transaction_metadata]\nenabled = true\njson_schemas = true\n\
         [heartbeat]\ninterval_ms = 1000\njson_schemas = true\n\
         [[route]]\nmatch = \"shop\\\\..*\"\ntopic = \"t\"\njson_schemas = true",
    ))
    .unwrap();
    assert!(c.transaction_metadata.json_schemas && c.heartbeat.json_schemas);
    let target = c
        .router()
        .unwrap()
        .route("shop", "orders")
        .unwrap()
        .unwrap();
    assert!(target.json_schemas);
    assert_eq!(target.format, Format::Json);
    let registry = "[schema_registry]\nurl = \"http://127.0.0.1:8081/apis/ccompat/v7\"\n";
    let p = assert_problem(
        &with(&format!(
            "{registry}[[route]]\nmatch = \"a\\\\..*\"\ntopic = \"t\"\nformat = \"avro\"\n\
             json_schemas = true"
        )),
        "route[0].json_schemas",
    );
    assert!(p.found.contains("avro"), "{p}");
    assert!(p.fix.contains("format = \"json\""), "{p}");
    for section in ["transaction_metadata", "heartbeat"] {
        let on = if section == "heartbeat" {
            "interval_ms = 1000"
        } else {
            "enabled = true"
        };
        let p = assert_problem(
            &with(&format!(
                "{registry}[{section}]\n{on}\nformat = \"avro\"\njson_schemas = true"
            )),
            &format!("{section}.json_schemas"),
        );
        assert!(p.to_string().contains(section), "{p}");
    }
    // The environment sets the further topics' option like every other field.
    let c = Config::from_str_with_env(
        MINIMAL,
        env(&[
            ("SLUICE_HEARTBEAT_JSON_SCHEMAS", "true"),
            ("SLUICE_TRANSACTION_METADATA_JSON_SCHEMAS", "true"),
        ]),
    )
    .unwrap();
    assert!(c.heartbeat.json_schemas && c.transaction_metadata.json_schemas);
}

#[test]
fn context_headers_are_off_by_default_and_set_by_file_or_env() {
    assert!(!parse(MINIMAL).unwrap().kafka.context_headers);
    let on = parse(&with_kafka("context_headers = true")).unwrap();
    assert!(on.kafka.context_headers);
    let by_env =
        Config::from_str_with_env(MINIMAL, env(&[("SLUICE_KAFKA_CONTEXT_HEADERS", "true")]))
            .unwrap();
    assert!(by_env.kafka.context_headers);
    let err = parse(&with_kafka("context_headers = \"yes\"")).unwrap_err();
    assert!(err.to_string().contains("context_headers"), "{err}");
}

#[test]
fn commit_mode_is_interval_unless_eager_is_asked_for() {
    let c: Config = with("").parse().unwrap();
    assert_eq!(c.commit.mode, super::CommitMode::Interval);
    let c: Config = with("[commit]\nmode = \"eager\"").parse().unwrap();
    assert_eq!(c.commit.mode, super::CommitMode::Eager);
    let c = Config::from_str_with_env(MINIMAL, env(&[("SLUICE_COMMIT_MODE", "eager")])).unwrap();
    assert_eq!(c.commit.mode, super::CommitMode::Eager);
    let e = with("[commit]\nmode = \"soon\"")
        .parse::<Config>()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("soon") && e.contains("interval") && e.contains("eager"),
        "{e}"
    );
}
