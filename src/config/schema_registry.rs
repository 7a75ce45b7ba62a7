//! `[schema_registry]`: the Confluent-compatible Schema Registry that Avro routes
//! (`format = "avro"`) register their schemas in. The client itself is
//! `crate::registry`; this module holds its settings and their validation.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize, Serializer};
use url::Url;

use super::error::{push_if_zero, push_unless_pem_file};
use super::secret::{redact_text, Secret, REDACTED};
use super::{non_empty, Problem};

/// How the subject (the registry's name for a schema's version history) is derived for a
/// key or value schema, as the Confluent serializers' `*.subject.name.strategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubjectNameStrategy {
    /// `"topic_name"`: `<topic>-key` / `<topic>-value` (Confluent's `TopicNameStrategy`).
    /// One schema history per topic. The default.
    #[default]
    TopicName,
    /// `"record_name"`: the record's full name, e.g. `shop.orders.Value`
    /// (`RecordNameStrategy`), shared by every topic carrying that record.
    RecordName,
    /// `"topic_record_name"`: `<topic>-<record full name>` (`TopicRecordNameStrategy`).
    TopicRecordName,
}

impl SubjectNameStrategy {
    /// Every strategy.
    pub const ALL: [SubjectNameStrategy; 3] = [
        SubjectNameStrategy::TopicName,
        SubjectNameStrategy::RecordName,
        SubjectNameStrategy::TopicRecordName,
    ];

    /// The TOML spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SubjectNameStrategy::TopicName => "topic_name",
            SubjectNameStrategy::RecordName => "record_name",
            SubjectNameStrategy::TopicRecordName => "topic_record_name",
        }
    }
}

impl fmt::Display for SubjectNameStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `[schema_registry]`: where Avro schemas are registered. Only used (and `url` only
/// required) when a route has `format = "avro"`.
///
/// `Debug` and `Serialize` show the password as `***`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchemaRegistryConfig {
    /// Base URL of the Confluent-compatible REST API, `http://` or `https://`, e.g.
    /// `http://127.0.0.1:8081` (Confluent, Karapace) or
    /// `http://127.0.0.1:8080/apis/ccompat/v7` (Apicurio). Required when a route has
    /// `format = "avro"`. Default: empty (none).
    #[serde(default)]
    pub url: String,
    /// User name for HTTP basic authentication (Confluent Cloud: the API key); needs
    /// `password`. Default: empty (no authentication).
    #[serde(default)]
    pub username: String,
    /// Password for HTTP basic authentication (Confluent Cloud: the API secret); secret,
    /// never printed. Default: empty.
    #[serde(default, serialize_with = "serialize_password")]
    pub password: Secret<String>,
    /// A file holding the password (its content, surrounding whitespace removed), read at
    /// start; instead of `password`. Default: empty (none).
    #[serde(default)]
    pub password_file: String,
    /// PEM file of the CA certificate(s) the registry's certificate must be signed by
    /// (`https://` only); replaces the system's trusted roots. Default: empty (the
    /// system's roots).
    #[serde(default)]
    pub ssl_ca: PathBuf,
    /// PEM file of a client certificate (chain) presented to the registry (`https://`
    /// only); needs `ssl_key`. Default: empty (none).
    #[serde(default)]
    pub ssl_cert: PathBuf,
    /// PEM file of the private key of `ssl_cert` (unencrypted). Default: empty (none).
    #[serde(default)]
    pub ssl_key: PathBuf,
    /// Timeout of one HTTP request to the registry (connecting included), in
    /// milliseconds, at least 1. Default: 10000.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// How subjects are named: `"topic_name"`, `"record_name"` or `"topic_record_name"`.
    /// Default: `"topic_name"`.
    #[serde(default)]
    pub subject_name_strategy: SubjectNameStrategy,
    /// Largest delay between two attempts of a request that failed for a passing reason
    /// (registry unreachable, timeout, HTTP 5xx or 429), in milliseconds, at least 1; the
    /// first delay is 100 ms (or this, when smaller), doubled after each failure.
    /// Default: 5000.
    #[serde(default = "default_retry_backoff_max_ms")]
    pub retry_backoff_max_ms: u64,
}

impl Default for SchemaRegistryConfig {
    fn default() -> Self {
        SchemaRegistryConfig {
            url: String::new(),
            username: String::new(),
            password: Secret::default(),
            password_file: String::new(),
            ssl_ca: PathBuf::new(),
            ssl_cert: PathBuf::new(),
            ssl_key: PathBuf::new(),
            timeout_ms: default_timeout_ms(),
            subject_name_strategy: SubjectNameStrategy::default(),
            retry_backoff_max_ms: default_retry_backoff_max_ms(),
        }
    }
}

fn default_timeout_ms() -> u64 {
    10_000
}

fn default_retry_backoff_max_ms() -> u64 {
    5_000
}

/// An empty password is written as `""` (there is nothing to hide), any other as `***`.
fn serialize_password<S: Serializer>(p: &Secret<String>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(if p.expose().is_empty() { "" } else { REDACTED })
}

impl SchemaRegistryConfig {
    /// Whether `url` is set.
    pub fn is_configured(&self) -> bool {
        !self.url.trim().is_empty()
    }

    /// `url` without surrounding blanks and trailing slashes: request paths are appended
    /// to it.
    pub fn base_url(&self) -> &str {
        self.url.trim().trim_end_matches('/')
    }

    /// `username` and `password`, when set.
    pub fn basic_auth(&self) -> Option<(&str, &Secret<String>)> {
        (!self.username.is_empty()).then_some((self.username.as_str(), &self.password))
    }

    /// `timeout_ms` as a duration.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    /// `retry_backoff_max_ms` as a duration.
    pub fn retry_backoff_max(&self) -> Duration {
        Duration::from_millis(self.retry_backoff_max_ms)
    }

    /// `ssl_ca`, when set.
    pub fn ssl_ca(&self) -> Option<&Path> {
        non_empty(&self.ssl_ca)
    }

    /// `ssl_cert`, when set.
    pub fn ssl_cert(&self) -> Option<&Path> {
        non_empty(&self.ssl_cert)
    }

    /// `ssl_key`, when set.
    pub fn ssl_key(&self) -> Option<&Path> {
        non_empty(&self.ssl_key)
    }
}

/// Example URLs, for messages.
const URL_EXAMPLES: &str = "an http:// or https:// URL of a Confluent-compatible Schema Registry \
     API, e.g. \"http://127.0.0.1:8081\" (Confluent, Karapace) or \
     \"http://127.0.0.1:8080/apis/ccompat/v7\" (Apicurio)";

/// Checks `[schema_registry]` against the rest of the configuration: `avro_user` names the
/// first setting that writes Avro (`route[<i>]`, `transaction_metadata`), if any.
pub(super) fn validate(
    r: &SchemaRegistryConfig,
    avro_user: Option<&str>,
    problems: &mut Vec<Problem>,
) {
    let scheme = if r.is_configured() {
        check_url(r.url.trim(), problems)
    } else {
        if let Some(who) = avro_user {
            problems.push(Problem::new(
                "schema_registry.url",
                format!("no schema registry URL, while {who} has format = \"avro\""),
                URL_EXAMPLES,
                format!(
                    "set url in a [schema_registry] section (or SLUICE_SCHEMA_REGISTRY_URL), or \
                     use format = \"json\" on {who}"
                ),
            ));
        }
        None
    };
    match (r.username.is_empty(), r.password.expose().is_empty()) {
        (false, true) => problems.push(Problem::new(
            "schema_registry.password",
            "a username without a password",
            "both schema_registry.username and schema_registry.password (basic \
             authentication), or neither",
            "set schema_registry.password (better: SLUICE_SCHEMA_REGISTRY_PASSWORD), or remove \
             schema_registry.username",
        )),
        (true, false) => problems.push(Problem::new(
            "schema_registry.username",
            "a password without a username",
            "both schema_registry.username and schema_registry.password (basic \
             authentication), or neither",
            "set schema_registry.username, or remove schema_registry.password",
        )),
        _ => {}
    }
    push_if_zero(
        problems,
        r.timeout_ms,
        "schema_registry.timeout_ms",
        "a timeout of at least 1 millisecond",
        format!(
            "set schema_registry.timeout_ms, e.g. {} (the default)",
            default_timeout_ms()
        ),
    );
    push_if_zero(
        problems,
        r.retry_backoff_max_ms,
        "schema_registry.retry_backoff_max_ms",
        "at least 1 millisecond",
        format!(
            "set schema_registry.retry_backoff_max_ms, e.g. {} (the default)",
            default_retry_backoff_max_ms()
        ),
    );
    validate_tls(r, scheme.as_deref(), problems);
}

/// Checks a non-empty `url`; returns its scheme when it is acceptable.
fn check_url(text: &str, problems: &mut Vec<Problem>) -> Option<String> {
    let path = "schema_registry.url";
    let fix = "correct schema_registry.url (or SLUICE_SCHEMA_REGISTRY_URL)";
    let url = match Url::parse(text) {
        Ok(u) => u,
        Err(e) => {
            problems.push(Problem::new(
                path,
                format!("{}, which is not a URL ({e})", shown_url(text)),
                URL_EXAMPLES,
                fix,
            ));
            return None;
        }
    };
    let found = if !matches!(url.scheme(), "http" | "https") {
        Some(format!(
            "{}, which does not start with http:// or https://",
            shown_url(text)
        ))
    } else if url.host_str().is_none_or(str::is_empty) {
        Some("a URL with no host".to_string())
    } else if !url.username().is_empty() || url.password().is_some() {
        Some("a URL with credentials in it (user:password@)".to_string())
    } else if url.query().is_some() || url.fragment().is_some() {
        Some(format!(
            "{}, which has a ?query or #fragment",
            shown_url(text)
        ))
    } else {
        None
    };
    match found {
        Some(found) => {
            let fix = if found.contains("credentials") {
                "remove user:password@ from schema_registry.url and set schema_registry.username \
                 and schema_registry.password (better: SLUICE_SCHEMA_REGISTRY_PASSWORD) instead"
            } else {
                fix
            };
            problems.push(Problem::new(path, found, URL_EXAMPLES, fix));
            None
        }
        None => Some(url.scheme().to_string()),
    }
}

/// The URL for a message: quoted, with any credentials scrubbed.
fn shown_url(text: &str) -> String {
    format!("`{}`", redact_text(text))
}

fn validate_tls(r: &SchemaRegistryConfig, scheme: Option<&str>, problems: &mut Vec<Problem>) {
    match (r.ssl_cert(), r.ssl_key()) {
        (Some(_), None) => problems.push(Problem::new(
            "schema_registry.ssl_key",
            "ssl_cert without ssl_key",
            "both (a client certificate and its private key) or neither",
            "set schema_registry.ssl_key, or remove schema_registry.ssl_cert",
        )),
        (None, Some(_)) => problems.push(Problem::new(
            "schema_registry.ssl_cert",
            "ssl_key without ssl_cert",
            "both (a client certificate and its private key) or neither",
            "set schema_registry.ssl_cert, or remove schema_registry.ssl_key",
        )),
        _ => {}
    }
    for (path, value) in [
        ("schema_registry.ssl_ca", r.ssl_ca()),
        ("schema_registry.ssl_cert", r.ssl_cert()),
        ("schema_registry.ssl_key", r.ssl_key()),
    ] {
        let Some(file) = value else { continue };
        if !push_unless_pem_file(problems, path, file) {
            continue;
        }
        if scheme == Some("http") {
            problems.push(Problem::new(
                path,
                "a TLS setting with an http:// schema_registry.url",
                "TLS settings only with an https:// URL",
                format!("use https:// in schema_registry.url, or remove {path}"),
            ));
        }
    }
}

impl SchemaRegistryConfig {
    /// Reads `password_file` into `password`; a problem names the setting when both are
    /// set, or the file cannot be read or is empty.
    pub(super) fn read_password_file(&mut self) -> Result<(), Problem> {
        let path = self.password_file.trim();
        if path.is_empty() {
            return Ok(());
        }
        if !self.password.expose().is_empty() {
            return Err(super::secret::both_set(
                "schema_registry.password",
                "schema_registry.password_file",
            ));
        }
        self.password = Secret::new(super::secret::read_secret_file(
            "schema_registry.password_file",
            path,
        )?);
        Ok(())
    }
}
