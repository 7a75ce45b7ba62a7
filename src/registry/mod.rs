//! Client for a Confluent-compatible Schema Registry (Confluent Schema Registry, Apicurio
//! Registry's `/apis/ccompat/v7`, Karapace), configured by `[schema_registry]`
//! ([`SchemaRegistryConfig`]). Avro routes register their schemas here and put the id it
//! answers into every record (Confluent wire format: magic byte 0, 4-byte big-endian id,
//! Avro binary).
//!
//! | call | request |
//! | --- | --- |
//! | [`Registry::register`] | `POST /subjects/{subject}/versions` `{"schema": ...}` → id |
//! | [`Registry::check_compatibility`] | `POST /compatibility/subjects/{subject}/versions/latest?verbose=true` |
//! | [`Registry::schema_by_id`] | `GET /schemas/ids/{id}` |
//! | [`Registry::check`] | `GET /subjects`, then `GET /config` (preflight) |
//!
//! `schemaType` is left out of the registration body: AVRO is the API's default, and so
//! the body is one every version of every compatible registry accepts.
//!
//! # Errors
//!
//! Every failure is a [`RegistryError`] whose kind follows the HTTP status (see
//! [`RegistryError::from_response`]): 409 = the schema breaks the subject's compatibility
//! rule, 422 = invalid schema, 401/403 = credentials (`schema_registry.username` /
//! `password`), 404 without a registry error code = the URL is not a Confluent-compatible
//! API, and connection failures, timeouts, 408, 429 and 5xx = transient. Converted into
//! [`Error`], the transient ones become [`ErrorKind::Transient`](crate::error::ErrorKind::Transient) (retry with backoff, see
//! [`retry`] and [`Registry::register_retrying`]) and all others [`ErrorKind::Definite`](crate::error::ErrorKind::Definite).
//!
//! # Why the HTTP calls are made here with reqwest, not with schema_registry_converter
//!
//! `schema_registry_converter` (6.x) has registration (`post_schema`) and settings
//! (`SrSettings`), but its errors cannot tell the cases above apart reliably: the HTTP
//! status survives only inside a message string ("HTTP request to schema registry failed
//! with status 409 Conflict"); the registry's `error_code` is reachable only by
//! downcasting the error's source, and is 0 when the body is not a registry error (a proxy's
//! 401, a 404 from a wrong path); among HTTP answers its `retriable` flag is true only for
//! 502 and 503, so 500, 504 and 429 would stop the pipeline; its compatibility check
//! (`is_compatible_schema`) returns a bare bool (no verbose reasons) and fails on a new
//! subject's 404; and it escapes only `/` in subject names (the compatibility check not
//! even that). So the four requests are made here with `reqwest` (the same version it uses,
//! on native-tls/OpenSSL like the rest of sluice), and the crate serves as the
//! independent decoder (`EasyAvroDecoder`) in the tests, which fetches writer schemas by
//! id from the registry on its own.
//!
//! # Blocking use from the sink thread
//!
//! The calls are `async` (reqwest's async client). The Kafka sink runs on its own OS
//! thread and drives them with the runtime's [`Handle::block_on`], through
//! [`BlockingRegistry`]: the client's connections stay on the runtime that the rest of
//! sluice uses, and nothing needs a runtime of its own. `reqwest::blocking` was not
//! chosen because it runs its own runtime thread and panics when created or dropped
//! inside an async context (preflight and tests create the client from async code).
//! `block_on` itself must not be called from a runtime thread; [`BlockingRegistry`]
//! returns an error instead of panicking if it is.
//!
//! Ids are cached per (subject, schema text): a schema is registered once per process.
//! The password is only handed to reqwest; `Debug` shows `***`.

mod error;

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::Deserialize;
use tokio::runtime::Handle;

use crate::config::{SchemaRegistryConfig, Secret, SubjectNameStrategy};
use crate::error::{Error, Result};
pub use error::{Operation, RegistryError, RegistryErrorKind};

/// Media type of the registry's requests and answers.
const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";
/// What we accept, in the order the Confluent clients list it.
const ACCEPT: &str =
    "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json; \
     qs=0.9, application/json; qs=0.5";

/// Characters escaped in a subject used as a path segment: all but `A-Za-z0-9-._~`.
const PATH_SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The subject of a key or value schema under `strategy`, as the Confluent serializers
/// name it: `<topic>-key` / `<topic>-value` (topic_name), `<record_full_name>`
/// (record_name) or `<topic>-<record_full_name>` (topic_record_name).
pub fn subject_for(
    strategy: SubjectNameStrategy,
    topic: &str,
    is_key: bool,
    record_full_name: &str,
) -> String {
    match strategy {
        SubjectNameStrategy::TopicName => {
            format!("{topic}-{}", if is_key { "key" } else { "value" })
        }
        SubjectNameStrategy::RecordName => record_full_name.to_string(),
        SubjectNameStrategy::TopicRecordName => format!("{topic}-{record_full_name}"),
    }
}

/// The answer of a compatibility check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compat {
    /// Whether the schema may be registered under the subject's compatibility rule.
    pub is_compatible: bool,
    /// The registry said the subject has no version yet (Confluent's 404), so anything is
    /// compatible. Apicurio answers a plain "compatible" instead: false there.
    pub new_subject: bool,
    /// The registry's reasons when incompatible (Confluent 7+ with `verbose=true`;
    /// Apicurio gives none).
    pub messages: Vec<String>,
}

/// What [`Registry::check`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryInfo {
    /// Number of subjects the registry lists.
    pub subjects: usize,
    /// The global compatibility rule (e.g. `BACKWARD`), when the registry tells it.
    pub compatibility: Option<String>,
}

/// When and how often a transient failure is retried: exponential backoff from
/// `backoff_min` doubling up to `backoff_max`, until `deadline` or `max_attempts`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Delay after the first failure.
    pub backoff_min: Duration,
    /// Largest delay.
    pub backoff_max: Duration,
    /// No attempt starts after this instant (and no delay reaches past it).
    pub deadline: Instant,
    /// At most this many attempts (0 = no limit but the deadline).
    pub max_attempts: u32,
}

impl RetryPolicy {
    /// The first delay for a `schema_registry.retry_backoff_max_ms`: 100 ms, or the
    /// maximum when that is smaller.
    pub const BACKOFF_MIN: Duration = Duration::from_millis(100);

    /// Retries until `deadline`, with the backoff of `config`.
    pub fn until(config: &SchemaRegistryConfig, deadline: Instant) -> RetryPolicy {
        let backoff_max = config.retry_backoff_max();
        RetryPolicy {
            backoff_min: Self::BACKOFF_MIN.min(backoff_max),
            backoff_max,
            deadline,
            max_attempts: 0,
        }
    }

    /// The delay after the `failures`-th consecutive failure (1-based).
    pub fn delay(&self, failures: u32) -> Duration {
        let factor = 2u32.saturating_pow(failures.saturating_sub(1));
        self.backoff_min
            .saturating_mul(factor)
            .min(self.backoff_max)
    }
}

/// Runs `op` until it succeeds, fails definitely, or `policy` says stop; sleeps between
/// attempts. The error returned last carries the number of attempts made.
pub async fn retry<T, F, Fut>(policy: &RetryPolicy, mut op: F) -> Result<T, RegistryError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, RegistryError>>,
{
    let mut failures = 0u32;
    loop {
        match op().await {
            Ok(v) => return Ok(v),
            Err(mut e) => {
                failures += 1;
                e.attempts = failures;
                let delay = policy.delay(failures);
                let out_of_attempts = policy.max_attempts != 0 && failures >= policy.max_attempts;
                if !e.is_transient() || out_of_attempts || Instant::now() + delay >= policy.deadline
                {
                    return Err(e);
                }
                tracing::warn!(
                    error = %e,
                    retry_in_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    "schema registry request failed; retrying"
                );
                tokio::time::sleep(delay).await;
            }
        }
    }
}

/// A Schema Registry client (async). Cheap to share behind an [`Arc`]; see
/// [`BlockingRegistry`] for the sink thread.
pub struct Registry {
    /// `schema_registry.url` without trailing `/`.
    base: String,
    http: reqwest::Client,
    auth: Option<(String, Secret<String>)>,
    strategy: SubjectNameStrategy,
    config: SchemaRegistryConfig,
    /// (subject, schema text) → id, for schemas registered by this process.
    ids: Mutex<HashMap<(String, String), u32>>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("url", &self.base)
            .field("username", &self.auth.as_ref().map(|(u, _)| u.as_str()))
            .field("password", &self.auth.as_ref().map(|(_, p)| p))
            .field("subject_name_strategy", &self.strategy)
            .field("timeout", &self.config.timeout())
            .field("cached_ids", &self.cached_ids())
            .finish()
    }
}

#[derive(Deserialize)]
struct IdAnswer {
    id: u32,
}

#[derive(Deserialize)]
struct CompatAnswer {
    is_compatible: bool,
    #[serde(default)]
    messages: Vec<String>,
}

#[derive(Deserialize)]
struct SchemaAnswer {
    schema: String,
    #[serde(rename = "schemaType")]
    schema_type: Option<String>,
}

#[derive(Deserialize)]
struct ConfigAnswer {
    #[serde(rename = "compatibilityLevel", alias = "compatibility")]
    compatibility_level: Option<String>,
}

impl Registry {
    /// A client for `config` (which must have a `url`). Reads the TLS files; makes no
    /// request (see [`Registry::check`]).
    pub fn new(config: &SchemaRegistryConfig) -> Result<Registry> {
        let base = config.base_url().to_string();
        let setup = |message: String| {
            Error::from(RegistryError::new(
                RegistryErrorKind::Setup,
                Operation::ListSubjects,
                &base,
                message,
            ))
        };
        if !config.is_configured() {
            return Err(Error::definite(
                "schema_registry.url is not set; fix: set url in the [schema_registry] section \
                 (or SLUICE_SCHEMA_REGISTRY_URL)",
            ));
        }
        match url::Url::parse(&base) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => {}
            _ => {
                return Err(setup(
                    "schema_registry.url is not an http:// or https:// URL".to_string(),
                ))
            }
        }
        let mut builder = reqwest::Client::builder()
            .timeout(config.timeout())
            .connect_timeout(config.timeout())
            .user_agent(concat!("sluice/", env!("CARGO_PKG_VERSION")));
        if let Some(ca) = config.ssl_ca() {
            let pem = std::fs::read(ca).map_err(|e| {
                setup(format!(
                    "cannot read schema_registry.ssl_ca `{}`: {e}",
                    ca.display()
                ))
            })?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem)
                .ok()
                .filter(|c| !c.is_empty())
                .ok_or_else(|| {
                    setup(format!(
                        "schema_registry.ssl_ca `{}` holds no PEM certificate",
                        ca.display()
                    ))
                })?;
            builder = builder.tls_certs_only(certs);
        }
        match (config.ssl_cert(), config.ssl_key()) {
            (Some(cert), Some(key)) => {
                let identity = client_identity(cert, key).map_err(setup)?;
                builder = builder.identity(identity);
            }
            (None, None) => {}
            _ => {
                return Err(setup(
                    "schema_registry.ssl_cert and schema_registry.ssl_key must be set together"
                        .to_string(),
                ))
            }
        }
        let http = builder
            .build()
            .map_err(|e| setup(format!("cannot build the HTTP client: {e}")))?;
        Ok(Registry {
            base,
            http,
            auth: config.basic_auth().map(|(u, p)| (u.to_string(), p.clone())),
            strategy: config.subject_name_strategy,
            config: config.clone(),
            ids: Mutex::new(HashMap::new()),
        })
    }

    /// The base URL requests go to.
    pub fn url(&self) -> &str {
        &self.base
    }

    /// `schema_registry.subject_name_strategy`.
    pub fn subject_name_strategy(&self) -> SubjectNameStrategy {
        self.strategy
    }

    /// The subject for a key or value schema of `topic` whose record is `record_full_name`,
    /// under the configured strategy (see [`subject_for`]).
    pub fn subject_for(&self, topic: &str, is_key: bool, record_full_name: &str) -> String {
        subject_for(self.strategy, topic, is_key, record_full_name)
    }

    /// A retry policy with the configured backoff, until `deadline`.
    pub fn retry_policy(&self, deadline: Instant) -> RetryPolicy {
        RetryPolicy::until(&self.config, deadline)
    }

    /// How many (subject, schema) ids are cached.
    pub fn cached_ids(&self) -> usize {
        self.ids.lock().map(|m| m.len()).unwrap_or(0)
    }

    /// The id of `schema_json` under `subject`, registering it (one attempt) unless this
    /// process already did. Registering a schema the subject already has returns its id.
    /// On HTTP 409 the registry's verbose compatibility reasons, when it gives any, are
    /// added to the error's message.
    pub async fn register(&self, subject: &str, schema_json: &str) -> Result<u32, RegistryError> {
        let key = (subject.to_string(), schema_json.to_string());
        if let Some(id) = self.ids.lock().ok().and_then(|m| m.get(&key).copied()) {
            return Ok(id);
        }
        let op = Operation::Register;
        let path = format!("/subjects/{}/versions", segment(subject));
        let body = serde_json::json!({ "schema": schema_json });
        let result = self
            .request(reqwest::Method::POST, &path, Some(&body), op, Some(subject))
            .await
            .and_then(|text| parse::<IdAnswer>(&text, op, &self.base, Some(subject)));
        match result {
            Ok(answer) => {
                if let Ok(mut m) = self.ids.lock() {
                    m.insert(key, answer.id);
                }
                tracing::info!(subject, id = answer.id, "schema registered");
                Ok(answer.id)
            }
            Err(mut e) if e.kind == RegistryErrorKind::Incompatible => {
                if let Ok(c) = self.check_compatibility(subject, schema_json).await {
                    if !c.messages.is_empty() {
                        e.message = format!("{}; reasons: {}", e.message, c.messages.join("; "));
                    }
                }
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// [`Registry::register`], retrying transient failures with the configured backoff
    /// until `deadline`.
    pub async fn register_retrying(
        &self,
        subject: &str,
        schema_json: &str,
        deadline: Instant,
    ) -> Result<u32, RegistryError> {
        retry(&self.retry_policy(deadline), || {
            self.register(subject, schema_json)
        })
        .await
    }

    /// Whether `schema_json` may be registered under `subject` (against its latest
    /// version). A subject without versions accepts anything (`new_subject`).
    pub async fn check_compatibility(
        &self,
        subject: &str,
        schema_json: &str,
    ) -> Result<Compat, RegistryError> {
        let op = Operation::CheckCompatibility;
        let path = format!(
            "/compatibility/subjects/{}/versions/latest?verbose=true",
            segment(subject)
        );
        let body = serde_json::json!({ "schema": schema_json });
        match self
            .request(reqwest::Method::POST, &path, Some(&body), op, Some(subject))
            .await
        {
            Ok(text) => {
                let answer = parse::<CompatAnswer>(&text, op, &self.base, Some(subject))?;
                Ok(Compat {
                    is_compatible: answer.is_compatible,
                    new_subject: false,
                    messages: answer.messages,
                })
            }
            // Subject (40401) or version (40402) not found: nothing to be compatible with.
            Err(e)
                if e.kind == RegistryErrorKind::NotFound
                    && matches!(e.code, Some(40401 | 40402)) =>
            {
                Ok(Compat {
                    is_compatible: true,
                    new_subject: true,
                    messages: Vec::new(),
                })
            }
            Err(e) => Err(e),
        }
    }

    /// The schema text registered under `id`.
    pub async fn schema_by_id(&self, id: u32) -> Result<String, RegistryError> {
        let op = Operation::SchemaById(id);
        let text = self
            .request(
                reqwest::Method::GET,
                &format!("/schemas/ids/{id}"),
                None,
                op,
                None,
            )
            .await?;
        let answer = parse::<SchemaAnswer>(&text, op, &self.base, None)?;
        match answer.schema_type.as_deref() {
            None | Some("AVRO") => Ok(answer.schema),
            Some(other) => Err(RegistryError::new(
                RegistryErrorKind::UnexpectedResponse,
                op,
                &self.base,
                format!("schema id {id} is a {other} schema, not AVRO"),
            )),
        }
    }

    /// Preflight: the registry answers `GET /subjects` with a list (reachable, the
    /// credentials are accepted, it is a Confluent-compatible API), and tells its global
    /// compatibility rule if it does (`GET /config`; its failure is not an error).
    pub async fn check(&self) -> Result<RegistryInfo, RegistryError> {
        let op = Operation::ListSubjects;
        let text = self
            .request(reqwest::Method::GET, "/subjects", None, op, None)
            .await?;
        let subjects = parse::<Vec<String>>(&text, op, &self.base, None)?;
        let op = Operation::GlobalConfig;
        let compatibility = match self
            .request(reqwest::Method::GET, "/config", None, op, None)
            .await
        {
            Ok(text) => parse::<ConfigAnswer>(&text, op, &self.base, None)
                .ok()
                .and_then(|c| c.compatibility_level),
            Err(e) => {
                tracing::debug!(error = %e, "schema registry global config not available");
                None
            }
        };
        Ok(RegistryInfo {
            subjects: subjects.len(),
            compatibility,
        })
    }

    /// Sends one request; the body of a 2xx answer, else the mapped error.
    async fn request(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&serde_json::Value>,
        op: Operation,
        subject: Option<&str>,
    ) -> Result<String, RegistryError> {
        let url = format!("{}{path}", self.base);
        let mut req = self
            .http
            .request(method, &url)
            .header(reqwest::header::ACCEPT, ACCEPT);
        if let Some(body) = body {
            req = req
                .header(reqwest::header::CONTENT_TYPE, CONTENT_TYPE)
                .body(body.to_string());
        }
        if let Some((user, password)) = &self.auth {
            req = req.basic_auth(user, Some(password.expose()));
        }
        let authenticated = self.auth.is_some();
        let transport = |e: reqwest::Error| {
            RegistryError::from_transport(&e, op, &self.base, subject).with_auth(authenticated)
        };
        let resp = req.send().await.map_err(transport)?;
        let status = resp.status();
        let text = resp.text().await.map_err(transport)?;
        if status.is_success() {
            Ok(text)
        } else {
            Err(
                RegistryError::from_response(status.as_u16(), &text, op, &self.base, subject)
                    .with_auth(authenticated),
            )
        }
    }
}

/// `subject` as one URL path segment.
fn segment(subject: &str) -> String {
    utf8_percent_encode(subject, PATH_SEGMENT).to_string()
}

/// Parses a success body; a body that is not the expected JSON means the URL is not the
/// API (e.g. a web page answering every path).
fn parse<T: for<'de> Deserialize<'de>>(
    text: &str,
    op: Operation,
    url: &str,
    subject: Option<&str>,
) -> Result<T, RegistryError> {
    serde_json::from_str(text).map_err(|e| {
        let start: String = text.chars().take(200).collect();
        RegistryError::new(
            RegistryErrorKind::UnexpectedResponse,
            op,
            url,
            format!(
                "a success whose body is not the API's answer ({e}): {}",
                start.split_whitespace().collect::<Vec<_>>().join(" ")
            ),
        )
        .with_subject(subject)
    })
}

/// The client identity from PEM files: the certificate chain and its key (PKCS#1, SEC1
/// or PKCS#8; turned into PKCS#8, which is what the TLS library takes).
fn client_identity(
    cert: &std::path::Path,
    key: &std::path::Path,
) -> Result<reqwest::Identity, String> {
    let cert_pem = std::fs::read(cert).map_err(|e| {
        format!(
            "cannot read schema_registry.ssl_cert `{}`: {e}",
            cert.display()
        )
    })?;
    let key_pem = std::fs::read(key).map_err(|e| {
        format!(
            "cannot read schema_registry.ssl_key `{}`: {e}",
            key.display()
        )
    })?;
    let pkcs8 = openssl::pkey::PKey::private_key_from_pem(&key_pem)
        .and_then(|k| k.private_key_to_pem_pkcs8())
        .map_err(|e| {
            format!(
                "schema_registry.ssl_key `{}` is not an unencrypted PEM private key: {e}",
                key.display()
            )
        })?;
    reqwest::Identity::from_pkcs8_pem(&cert_pem, &pkcs8).map_err(|e| {
        format!(
            "schema_registry.ssl_cert `{}` / ssl_key `{}` do not form a client identity: {e}",
            cert.display(),
            key.display()
        )
    })
}

/// [`Registry`] for a thread outside the async runtime (the Kafka sink's): each call is
/// driven to completion with [`Handle::block_on`] and returns the pipeline's [`Error`].
#[derive(Debug, Clone)]
pub struct BlockingRegistry {
    inner: Arc<Registry>,
    rt: Handle,
}

impl BlockingRegistry {
    /// Wraps `registry`; `rt` is a handle of the (multi-thread) runtime to drive it on.
    pub fn new(registry: Arc<Registry>, rt: Handle) -> BlockingRegistry {
        BlockingRegistry {
            inner: registry,
            rt,
        }
    }

    /// The async client.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.inner
    }

    fn block_on<T>(&self, fut: impl Future<Output = Result<T, RegistryError>>) -> Result<T, Error> {
        if Handle::try_current().is_ok() {
            return Err(Error::definite(
                "internal error: the blocking schema registry client was called from an \
                 async task (use the async Registry there)",
            ));
        }
        self.rt.block_on(fut).map_err(Error::from)
    }

    /// [`Registry::register`]: one attempt; a transient failure is [`ErrorKind::Transient`](crate::error::ErrorKind::Transient).
    pub fn register(&self, subject: &str, schema_json: &str) -> Result<u32, Error> {
        self.block_on(self.inner.register(subject, schema_json))
    }

    /// [`Registry::register_retrying`]: transient failures are retried until `deadline`.
    pub fn register_retrying(
        &self,
        subject: &str,
        schema_json: &str,
        deadline: Instant,
    ) -> Result<u32, Error> {
        self.block_on(self.inner.register_retrying(subject, schema_json, deadline))
    }

    /// [`Registry::check_compatibility`].
    pub fn check_compatibility(&self, subject: &str, schema_json: &str) -> Result<Compat, Error> {
        self.block_on(self.inner.check_compatibility(subject, schema_json))
    }

    /// [`Registry::schema_by_id`].
    pub fn schema_by_id(&self, id: u32) -> Result<String, Error> {
        self.block_on(self.inner.schema_by_id(id))
    }

    /// [`Registry::check`].
    pub fn check(&self) -> Result<RegistryInfo, Error> {
        self.block_on(self.inner.check())
    }
}

#[cfg(test)]
mod tests;
