//! What went wrong talking to the Schema Registry, typed by what the operator (or the
//! pipeline) has to do about it, and turned into the pipeline's [`Error`].
//!
//! [`RegistryError::from_response`] is the whole mapping from an HTTP answer (status and
//! body) to an error; [`RegistryError::from_transport`] the one from a failed request.

use std::fmt;

use serde::Deserialize;

use crate::error::{Error, ErrorKind};

/// Which request failed, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// `POST /subjects/{subject}/versions`.
    Register,
    /// `POST /compatibility/subjects/{subject}/versions/latest`.
    CheckCompatibility,
    /// `GET /schemas/ids/{id}`.
    SchemaById(u32),
    /// `GET /subjects` (reachability and credentials).
    ListSubjects,
    /// `GET /config` (the global compatibility rule).
    GlobalConfig,
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operation::Register => f.write_str("registering a schema"),
            Operation::CheckCompatibility => f.write_str("checking a schema's compatibility"),
            Operation::SchemaById(id) => write!(f, "reading schema id {id}"),
            Operation::ListSubjects => f.write_str("listing subjects"),
            Operation::GlobalConfig => f.write_str("reading the global compatibility rule"),
        }
    }
}

/// The kinds of registry failure; [`RegistryErrorKind::is_transient`] says which ones
/// are worth a retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegistryErrorKind {
    /// HTTP 409: the schema breaks the subject's compatibility rule.
    Incompatible,
    /// HTTP 422: the registry finds the schema (or the request) invalid.
    InvalidSchema,
    /// HTTP 401: no or wrong credentials.
    Unauthorized,
    /// HTTP 403: the credentials lack a permission.
    Forbidden,
    /// HTTP 404 with a registry error code (subject, version or schema id unknown).
    NotFound,
    /// HTTP 404 without a registry error code, 405 or 501: the URL is not (all of) a
    /// Confluent-compatible API.
    NotConfluentApi,
    /// The registry could not be reached or is overloaded: connection refused or reset,
    /// timeout, HTTP 408, 429 or 5xx (but 501). Transient.
    Unavailable,
    /// The TLS handshake failed (certificate not trusted, wrong name, client certificate
    /// refused, not a TLS server).
    Tls,
    /// The client could not be set up (unreadable TLS files, bad URL).
    Setup,
    /// Any other answer: another 4xx status, or a success whose body is not what the API
    /// returns.
    UnexpectedResponse,
}

impl RegistryErrorKind {
    /// Whether the condition may pass by itself, so the request is worth retrying.
    pub fn is_transient(self) -> bool {
        self == RegistryErrorKind::Unavailable
    }
}

/// A failed registry request. `Display` is a complete sentence for the operator: what was
/// being done (and for which subject), what the registry answered, and how to fix it.
/// It never contains a password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryError {
    /// What kind of failure.
    pub kind: RegistryErrorKind,
    /// HTTP status, when there was an answer.
    pub status: Option<u16>,
    /// The registry's `error_code` (e.g. 40401, 42201), when its answer had one.
    pub code: Option<i64>,
    /// The registry's `message` (or the start of a body that is not a registry error, or
    /// the connection failure).
    pub message: String,
    /// The subject involved, if any.
    pub subject: Option<String>,
    /// The request that failed.
    pub operation: Operation,
    /// `schema_registry.url` (never holds credentials: validation refuses them).
    pub url: String,
    /// Whether basic authentication was configured (for the 401 advice).
    pub authenticated: bool,
    /// How many attempts were made (more than 1 after retries).
    pub attempts: u32,
}

/// The body of a registry error answer: `{"error_code": 40401, "message": "..."}`
/// (Apicurio may add `causes: [{"description", "context"}]`).
#[derive(Debug, Deserialize)]
struct ErrorBody {
    error_code: Option<i64>,
    message: Option<String>,
    #[serde(default)]
    causes: Vec<Cause>,
}

#[derive(Debug, Deserialize)]
struct Cause {
    description: Option<String>,
    context: Option<String>,
}

/// At most this much of a body that is not a registry error is quoted.
const MAX_QUOTED_BODY: usize = 300;

impl RegistryError {
    /// An error with the given parts (no status, no code, one attempt).
    pub fn new(
        kind: RegistryErrorKind,
        operation: Operation,
        url: &str,
        message: impl Into<String>,
    ) -> RegistryError {
        RegistryError {
            kind,
            status: None,
            code: None,
            message: message.into(),
            subject: None,
            operation,
            url: url.to_string(),
            authenticated: false,
            attempts: 1,
        }
    }

    /// The same error about `subject`.
    pub fn with_subject(mut self, subject: Option<&str>) -> RegistryError {
        self.subject = subject.map(str::to_string);
        self
    }

    /// The same error, noting whether basic authentication was configured.
    pub fn with_auth(mut self, authenticated: bool) -> RegistryError {
        self.authenticated = authenticated;
        self
    }

    /// Whether a retry may succeed.
    pub fn is_transient(&self) -> bool {
        self.kind.is_transient()
    }

    /// Maps a non-success HTTP answer to an error: the status decides the kind (the
    /// registry's `error_code` only refines a 404), the body gives code and message.
    pub fn from_response(
        status: u16,
        body: &str,
        operation: Operation,
        url: &str,
        subject: Option<&str>,
    ) -> RegistryError {
        let (code, message) = parse_error_body(body);
        let kind = match status {
            409 => RegistryErrorKind::Incompatible,
            422 => RegistryErrorKind::InvalidSchema,
            401 => RegistryErrorKind::Unauthorized,
            403 => RegistryErrorKind::Forbidden,
            // Confluent's 404 codes are 404xx; a bare 404 comes from a path the server
            // does not know, i.e. not a Confluent-compatible API at this URL.
            404 if code.is_some_and(|c| (40400..40500).contains(&c) && c != 40400) => {
                RegistryErrorKind::NotFound
            }
            404 | 405 | 501 => RegistryErrorKind::NotConfluentApi,
            408 | 429 | 500..=599 => RegistryErrorKind::Unavailable,
            _ => RegistryErrorKind::UnexpectedResponse,
        };
        RegistryError {
            status: Some(status),
            code,
            ..RegistryError::new(kind, operation, url, message)
        }
        .with_subject(subject)
    }

    /// Maps a request that got no (complete) answer to an error: a TLS failure is
    /// definite, anything else on the way (refused, reset, timeout) transient.
    pub fn from_transport(
        err: &reqwest::Error,
        operation: Operation,
        url: &str,
        subject: Option<&str>,
    ) -> RegistryError {
        let message = error_chain(err);
        let kind = if err.is_builder() {
            RegistryErrorKind::Setup
        } else if is_tls_failure(err) {
            RegistryErrorKind::Tls
        } else if err.is_decode() {
            RegistryErrorKind::UnexpectedResponse
        } else {
            RegistryErrorKind::Unavailable
        };
        let message = if err.is_timeout() {
            format!("no answer in time ({message})")
        } else {
            message
        };
        RegistryError::new(kind, operation, url, message).with_subject(subject)
    }

    /// What the registry answered, for messages: `HTTP 409 (error_code 409: ...)`.
    fn answer(&self) -> String {
        let mut out = match self.status {
            Some(s) => format!("HTTP {s}"),
            None => String::new(),
        };
        let detail = match (self.code, self.message.is_empty()) {
            (Some(c), false) => format!("error_code {c}: {}", self.message),
            (Some(c), true) => format!("error_code {c}"),
            (None, false) => self.message.clone(),
            (None, true) => String::new(),
        };
        if !detail.is_empty() {
            if out.is_empty() {
                out = detail;
            } else {
                out = format!("{out} ({detail})");
            }
        }
        if out.is_empty() {
            "nothing".to_string()
        } else {
            out
        }
    }

    fn what(&self) -> String {
        match &self.subject {
            Some(s) => format!("{} for subject `{s}`", self.operation),
            None => self.operation.to_string(),
        }
    }
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = self.what();
        let url = &self.url;
        let answer = self.answer();
        let subject = self.subject.as_deref().unwrap_or("<subject>");
        match self.kind {
            RegistryErrorKind::Incompatible => write!(
                f,
                "schema registry {url} refused the new schema of subject `{subject}`: it is \
                 incompatible with the registered schema under the subject's compatibility rule \
                 (the registry answered {answer}); fix: make the table change compatible (e.g. \
                 give a new column a default and do not change column types), or relax the \
                 subject's rule in the registry (PUT /config/{subject} with \
                 {{\"compatibility\": \"NONE\"}}) or route the table to a new topic, then \
                 restart sluice"
            )?,
            RegistryErrorKind::InvalidSchema => write!(
                f,
                "schema registry {url} refused the schema of subject `{subject}` as invalid (the \
                 registry answered {answer}); fix: check the registry's validity rules for the \
                 subject; if the schema is plain Avro this is a bug in sluice: report it with the \
                 table's definition"
            )?,
            RegistryErrorKind::Unauthorized => {
                write!(
                    f,
                    "schema registry {url} refused the request ({what}) as unauthenticated (the \
                     registry answered {answer}); fix: "
                )?;
                if self.authenticated {
                    f.write_str(
                        "correct schema_registry.username and schema_registry.password (or \
                         SLUICE_SCHEMA_REGISTRY_USERNAME / SLUICE_SCHEMA_REGISTRY_PASSWORD)",
                    )?
                } else {
                    f.write_str(
                        "the registry needs credentials: set schema_registry.username and \
                         schema_registry.password (or SLUICE_SCHEMA_REGISTRY_PASSWORD)",
                    )?
                }
            }
            RegistryErrorKind::Forbidden => write!(
                f,
                "schema registry {url} denied {what}: the user of schema_registry.username lacks \
                 the permission (the registry answered {answer}); fix: grant that user read and \
                 write access to the subject (and read access to schemas) in the registry, or \
                 set schema_registry.username and schema_registry.password to a user who has it"
            )?,
            RegistryErrorKind::NotFound => write!(
                f,
                "schema registry {url}: not found while {what} (the registry answered {answer})"
            )?,
            RegistryErrorKind::NotConfluentApi => write!(
                f,
                "schema_registry.url {url} does not look like a Confluent-compatible Schema \
                 Registry API: {what} answered {answer}; fix: correct schema_registry.url (or \
                 SLUICE_SCHEMA_REGISTRY_URL) to the API's base URL, e.g. \
                 http://host:8081 for Confluent or Karapace; Apicurio Registry serves it under \
                 /apis/ccompat/v7 (http://host:8080/apis/ccompat/v7)"
            )?,
            RegistryErrorKind::Unavailable => write!(
                f,
                "schema registry {url} unavailable while {what}: {answer}; sluice retries it; if it \
                 persists, check that the registry runs and is reachable at schema_registry.url \
                 (timeout: schema_registry.timeout_ms)"
            )?,
            RegistryErrorKind::Tls => write!(
                f,
                "TLS with schema registry {url} failed while {what}: {answer}; fix: check \
                 schema_registry.ssl_ca (the CA that signed the registry's certificate), that \
                 the URL's host is named in that certificate, schema_registry.ssl_cert / \
                 ssl_key if the registry requires a client certificate, and that the registry \
                 speaks https at this port"
            )?,
            RegistryErrorKind::Setup => write!(
                f,
                "cannot set up the schema registry client for {url}: {answer}; fix: check \
                 schema_registry.url and the schema_registry.ssl_* files"
            )?,
            RegistryErrorKind::UnexpectedResponse => write!(
                f,
                "unexpected answer from schema registry {url} while {what}: {answer}; fix: \
                 check that schema_registry.url is the base URL of a Confluent-compatible Schema \
                 Registry API"
            )?,
        }
        if self.attempts > 1 {
            write!(f, " (after {} attempts)", self.attempts)?;
        }
        Ok(())
    }
}

impl std::error::Error for RegistryError {}

impl From<RegistryError> for Error {
    /// Transient kinds become [`ErrorKind::Transient`] (retry with backoff), all others
    /// [`ErrorKind::Definite`] (stop and tell the operator).
    fn from(e: RegistryError) -> Error {
        let kind = if e.is_transient() {
            ErrorKind::Transient
        } else {
            ErrorKind::Definite
        };
        Error::new(kind, e.to_string()).caused_by(e)
    }
}

/// `(error_code, message)` of an error body: the registry's JSON when it is one (with
/// Apicurio's rule-violation causes appended), else the body's start on one line.
fn parse_error_body(body: &str) -> (Option<i64>, String) {
    if let Ok(parsed) = serde_json::from_str::<ErrorBody>(body) {
        if parsed.error_code.is_some() || parsed.message.is_some() {
            let message = parsed.message.unwrap_or_default();
            let mut message = strip_exception_class(message.trim()).to_string();
            let causes: Vec<String> = parsed
                .causes
                .iter()
                .filter_map(|c| match (&c.description, &c.context) {
                    (Some(d), Some(ctx)) if !ctx.is_empty() => Some(format!("{d} at {ctx}")),
                    (Some(d), _) => Some(d.clone()),
                    (None, Some(ctx)) => Some(ctx.clone()),
                    (None, None) => None,
                })
                .collect();
            if !causes.is_empty() {
                message = format!("{message} [{}]", causes.join("; "));
            }
            return (parsed.error_code, one_line(&message, usize::MAX));
        }
    }
    (None, one_line(body, MAX_QUOTED_BODY))
}

/// `message` without a leading Java exception class name (`io.x.SomeException: `), which
/// some registries put before the reason.
fn strip_exception_class(message: &str) -> &str {
    match message.split_once(": ") {
        Some((class, rest))
            if !class.contains(char::is_whitespace)
                && class.contains('.')
                && (class.ends_with("Exception") || class.ends_with("Error")) =>
        {
            rest
        }
        _ => message,
    }
}

/// `text` with runs of whitespace collapsed to one space, cut at `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() > max {
        let cut: String = joined.chars().take(max).collect();
        format!("{cut}…")
    } else {
        joined
    }
}

/// The error and its sources, `: `-joined, without repeats.
fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        let text = e.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cur = e.source();
    }
    parts.join(": ")
}

/// Whether a TLS library error is among the causes of `err`.
fn is_tls_failure(err: &reqwest::Error) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        if e.is::<native_tls::Error>()
            || e.is::<openssl::ssl::Error>()
            || e.is::<openssl::error::ErrorStack>()
        {
            return true;
        }
        cur = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    const URL: &str = "http://sr.example:8081";

    fn map(status: u16, body: &str) -> RegistryError {
        RegistryError::from_response(status, body, Operation::Register, URL, Some("orders-value"))
    }

    #[test]
    fn conflict_is_incompatible_and_definite() {
        let e = map(
            409,
            r#"{"error_code":409,"message":"Schema being registered is incompatible with an earlier schema"}"#,
        );
        assert_eq!(e.kind, RegistryErrorKind::Incompatible);
        assert_eq!((e.status, e.code), (Some(409), Some(409)));
        let text = e.to_string();
        for part in [
            "orders-value",
            "incompatible with the registered schema under the subject's compatibility rule",
            "HTTP 409 (error_code 409: Schema being registered is incompatible",
            "fix:",
            URL,
        ] {
            assert!(text.contains(part), "{part}: {text}");
        }
        assert_eq!(Error::from(e).kind(), ErrorKind::Definite);
        // Apicurio's code for a rule violation, with causes: still the status decides.
        let e = map(
            409,
            r#"{"error_code":42203,"message":"Incompatible artifact","causes":[{"description":"field added without default","context":"/fields/2"}]}"#,
        );
        assert_eq!(e.kind, RegistryErrorKind::Incompatible);
        assert!(
            e.message
                .contains("Incompatible artifact [field added without default at /fields/2]"),
            "{e}"
        );
    }

    #[test]
    fn java_exception_class_names_are_dropped() {
        let e = map(
            409,
            r#"{"message":"io.apicurio.registry.rules.violation.RuleViolationException: Incompatible artifact: s [AVRO], list of diff types: [qty at /fields/2]","error_code":409}"#,
        );
        assert_eq!(
            e.message,
            "Incompatible artifact: s [AVRO], list of diff types: [qty at /fields/2]"
        );
        assert_eq!(
            strip_exception_class("Schema 9 not found: gone"),
            "Schema 9 not found: gone"
        );
    }

    #[test]
    fn unprocessable_is_invalid_schema() {
        let e = map(
            422,
            r#"{"error_code":42201,"message":"Invalid schema: unknown type nosuchtype"}"#,
        );
        assert_eq!(e.kind, RegistryErrorKind::InvalidSchema);
        assert_eq!(e.code, Some(42201));
        let text = e.to_string();
        assert!(
            text.contains("invalid") && text.contains("unknown type nosuchtype"),
            "{text}"
        );
        assert_eq!(Error::from(e).kind(), ErrorKind::Definite);
    }

    #[test]
    fn auth_failures_name_the_settings() {
        let e = map(401, "");
        assert_eq!(e.kind, RegistryErrorKind::Unauthorized);
        let text = e.to_string();
        assert!(
            text.contains("schema_registry.username") && text.contains("needs credentials"),
            "{text}"
        );
        let text = map(401, r#"{"error_code":401,"message":"Unauthorized"}"#)
            .with_auth(true)
            .to_string();
        assert!(
            text.contains("correct schema_registry.username and schema_registry.password"),
            "{text}"
        );
        let e = map(
            403,
            r#"{"error_code":40301,"message":"User cannot access the resource."}"#,
        );
        assert_eq!(e.kind, RegistryErrorKind::Forbidden);
        let text = e.to_string();
        assert!(
            text.contains("schema_registry.username")
                && text.contains("User cannot access the resource."),
            "{text}"
        );
        assert_eq!(Error::from(e).kind(), ErrorKind::Definite);
    }

    #[test]
    fn not_found_with_and_without_a_registry_code() {
        let e = map(
            404,
            r#"{"error_code":40401,"message":"Subject 'x' not found."}"#,
        );
        assert_eq!(e.kind, RegistryErrorKind::NotFound);
        for body in [
            "",
            "<html><body>Not Found</body></html>",
            r#"{"error_code":404,"message":"HTTP 404 Not Found"}"#,
            r#"{"error_code":40400,"message":"nope"}"#,
        ] {
            let e = map(404, body);
            assert_eq!(e.kind, RegistryErrorKind::NotConfluentApi, "{body}");
            let text = e.to_string();
            assert!(
                text.contains("not look like a Confluent-compatible")
                    && text.contains("/apis/ccompat/v7")
                    && text.contains("schema_registry.url"),
                "{text}"
            );
            assert_eq!(Error::from(e).kind(), ErrorKind::Definite);
        }
        assert_eq!(map(405, "").kind, RegistryErrorKind::NotConfluentApi);
        assert_eq!(map(501, "").kind, RegistryErrorKind::NotConfluentApi);
    }

    #[test]
    fn overload_and_server_errors_are_transient() {
        for status in [408, 429, 500, 502, 503, 504] {
            let e = map(
                status,
                r#"{"error_code":50001,"message":"Error in the backend data store"}"#,
            );
            assert_eq!(e.kind, RegistryErrorKind::Unavailable, "{status}");
            assert!(e.is_transient());
            let text = e.to_string();
            assert!(
                text.contains("unavailable") && text.contains("50001"),
                "{text}"
            );
            assert_eq!(Error::from(e).kind(), ErrorKind::Transient);
        }
    }

    #[test]
    fn other_answers_are_unexpected_and_definite() {
        let e = map(400, "bad\n  request\tbody");
        assert_eq!(e.kind, RegistryErrorKind::UnexpectedResponse);
        assert_eq!(e.message, "bad request body");
        assert_eq!(Error::from(e).kind(), ErrorKind::Definite);
        let long = "x".repeat(1000);
        let e = map(418, &long);
        assert!(e.message.chars().count() <= MAX_QUOTED_BODY + 1);
    }

    #[test]
    fn attempts_are_reported() {
        let mut e = map(503, "");
        e.attempts = 4;
        assert!(e.to_string().ends_with("(after 4 attempts)"), "{e}");
        assert_eq!(map(503, "").answer(), "HTTP 503");
    }
}
