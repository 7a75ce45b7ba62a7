//! `[api]`: the HTTP API of `sluice run` (`crate::api`): health and readiness, status,
//! metrics, pause and resume, ad-hoc snapshots and their progress; `sluice snapshot` talks to
//! it.

use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize, Serializer};

use super::error::push_if_zero;
use super::secret::{both_set, read_secret_file, Secret, REDACTED};
use super::Problem;

/// The default `api.listen`.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8089";

/// The default `api.ready_max_lag_seconds`.
pub const DEFAULT_READY_MAX_LAG_SECONDS: f64 = 60.0;

/// `[api]`: where the HTTP API listens and who may change things through it.
///
/// `Debug` and `Serialize` show the token as `***`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiConfig {
    /// Whether `sluice run` serves the API. Default: true.
    #[serde(default = "default_enabled")]
    pub enabled: bool,
    /// Socket address to listen on: an IP address and a port, e.g. `"127.0.0.1:8089"`,
    /// `"0.0.0.0:8089"`, `"[::1]:8089"`; port 0 takes any free port (the log line
    /// `api listening` names it). Default: `"127.0.0.1:8089"`.
    #[serde(default = "default_listen")]
    pub listen: String,
    /// Bearer token the mutating endpoints (`POST /snapshots`, `POST /pause`,
    /// `POST /resume`) require (`Authorization: Bearer <token>`); secret, never printed.
    /// Without one they are open on a loopback `listen` and refused on any other. Default:
    /// empty (none).
    #[serde(default, serialize_with = "serialize_token")]
    pub token: Secret<String>,
    /// The largest lag (`sluice_lag_seconds`: now minus the source commit time of the last
    /// committed transaction) at which `GET /readyz` still answers ready (200); above it,
    /// 503. Seconds, greater than 0; fractions allowed. Default: 60.
    #[serde(default = "default_ready_max_lag_seconds")]
    pub ready_max_lag_seconds: f64,
    /// A file holding the token (its content, surrounding whitespace removed), read at start,
    /// so the token need not sit in the configuration or the environment; instead of
    /// `token`. Default: empty (none).
    #[serde(default)]
    pub token_file: String,
    /// Host names the `Host` header of a request may carry (with or without the port), besides
    /// IP addresses and loopback names (`localhost`, `*.localhost`), which are always accepted;
    /// any other is refused (403), so a web page on a rebinding domain cannot reach the API.
    /// E.g. `["sluice:8089"]` where Prometheus scrapes a container by name. Default: empty.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Origins (`scheme://host[:port]`) whose web pages may call the mutating endpoints; a
    /// mutating request with any other `Origin` header is refused (403), so a page the operator
    /// opens cannot pause the pipeline. Requests without `Origin` (curl, `sluice snapshot`) are
    /// not affected. Default: empty (no browser page may).
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// Milliseconds a connection may take to send a request's headers, counted from its
    /// start or from the previous answer, so also how long a kept-alive connection may stay
    /// idle; then it is closed. Greater than 0. Default: 10000.
    #[serde(default = "default_header_timeout_ms")]
    pub header_timeout_ms: u64,
    /// Milliseconds a request may take from its headers to its answer, body included; then
    /// it is answered 408. Greater than 0. Default: 90000 (`POST /snapshots` waits up to 60 s
    /// for the stream to take the request).
    #[serde(default = "default_request_timeout_ms")]
    pub request_timeout_ms: u64,
    /// Connections served at once; one more is closed as soon as it is accepted (the API's
    /// sockets share the process's file descriptors with Kafka and the source). Greater than
    /// 0. Default: 128.
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig {
            enabled: default_enabled(),
            listen: default_listen(),
            token: Secret::default(),
            ready_max_lag_seconds: DEFAULT_READY_MAX_LAG_SECONDS,
            token_file: String::new(),
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            header_timeout_ms: default_header_timeout_ms(),
            request_timeout_ms: default_request_timeout_ms(),
            max_connections: default_max_connections(),
        }
    }
}

fn default_header_timeout_ms() -> u64 {
    10_000
}

fn default_request_timeout_ms() -> u64 {
    90_000
}

fn default_max_connections() -> usize {
    128
}

fn default_enabled() -> bool {
    true
}

fn default_listen() -> String {
    DEFAULT_LISTEN.to_string()
}

fn default_ready_max_lag_seconds() -> f64 {
    DEFAULT_READY_MAX_LAG_SECONDS
}

/// An empty token is written as `""` (there is nothing to hide), any other as `***`.
fn serialize_token<S: Serializer>(t: &Secret<String>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(if t.expose().is_empty() { "" } else { REDACTED })
}

impl ApiConfig {
    /// `listen` as a socket address; `None` when it does not parse (validation reports it).
    pub fn listen_addr(&self) -> Option<SocketAddr> {
        self.listen.trim().parse().ok()
    }

    /// The token, when one is set (after [`ApiConfig::read_token_file`], also one from
    /// `token_file`). Secret: do not log it.
    pub fn token(&self) -> Option<&str> {
        Some(self.token.expose().as_str()).filter(|t| !t.is_empty())
    }

    /// Reads `token_file` into the token; a problem names the setting when both are set or
    /// the file cannot be read or is empty.
    pub(super) fn read_token_file(&mut self) -> Result<(), Problem> {
        let path = self.token_file.trim();
        if path.is_empty() {
            return Ok(());
        }
        if self.token().is_some() {
            return Err(both_set("api.token", "api.token_file"));
        }
        self.token = Secret::new(read_secret_file("api.token_file", path)?);
        Ok(())
    }

    /// `header_timeout_ms` as a duration.
    pub fn header_timeout(&self) -> Duration {
        Duration::from_millis(self.header_timeout_ms)
    }

    /// `request_timeout_ms` as a duration.
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms)
    }
}

/// Whether `token` can be sent as is in an `Authorization: Bearer` header: visible ASCII
/// characters without spaces.
pub fn is_valid_token(token: &str) -> bool {
    token.bytes().all(|b| b.is_ascii_graphic())
}

/// Checks `[api]`.
pub(super) fn validate(a: &ApiConfig, problems: &mut Vec<Problem>) {
    if a.listen_addr().is_none() {
        problems.push(Problem::new(
            "api.listen",
            format!("{:?}, which is not a socket address", a.listen),
            "an IP address and a port, e.g. \"127.0.0.1:8089\" (the default), \"0.0.0.0:8089\" \
             or \"[::1]:8089\" (port 0: any free port); no host names",
            "set api.listen (or SLUICE_API_LISTEN) to an address and port, or set api.enabled \
             = false to run without the API",
        ));
    }
    if !is_valid_token(a.token.expose()) {
        problems.push(Problem::new(
            "api.token",
            "a token with spaces, control or non-ASCII characters (value not shown)",
            "visible ASCII characters only, as sent in `Authorization: Bearer <token>`",
            "set api.token (or SLUICE_API_TOKEN) to e.g. the output of `openssl rand -hex 32`",
        ));
    }
    push_if_zero(
        problems,
        a.header_timeout_ms,
        "api.header_timeout_ms",
        "a timeout of at least 1 millisecond",
        "set api.header_timeout_ms, e.g. 10000 (the default)",
    );
    push_if_zero(
        problems,
        a.request_timeout_ms,
        "api.request_timeout_ms",
        "a timeout of at least 1 millisecond",
        "set api.request_timeout_ms, e.g. 90000 (the default)",
    );
    push_if_zero(
        problems,
        a.max_connections,
        "api.max_connections",
        "at least 1",
        "set api.max_connections, e.g. 128 (the default)",
    );
    for (i, origin) in a.allowed_origins.iter().enumerate() {
        if !is_origin(origin) {
            problems.push(Problem::new(
                format!("api.allowed_origins[{i}]"),
                format!("{origin:?}"),
                "an origin as browsers send it: scheme://host or scheme://host:port, no path",
                "write the origin of the page, e.g. \"https://ops.example.com\"",
            ));
        }
    }
    for (i, host) in a.allowed_hosts.iter().enumerate() {
        if host.trim().is_empty() || host.contains(['/', ' ', '@']) {
            problems.push(Problem::new(
                format!("api.allowed_hosts[{i}]"),
                format!("{host:?}"),
                "a host name, optionally with its port, as in a Host header",
                "write the name clients use, e.g. \"sluice:8089\"",
            ));
        }
    }
    let lag = a.ready_max_lag_seconds;
    if !(lag.is_finite() && lag > 0.0) {
        problems.push(Problem::new(
            "api.ready_max_lag_seconds",
            format!("{lag}"),
            "a number of seconds greater than 0, e.g. 60 (the default) or 2.5",
            "set api.ready_max_lag_seconds (or SLUICE_API_READY_MAX_LAG_SECONDS) to the lag \
             above which GET /readyz answers 503",
        ));
    }
}

/// Whether `text` is an origin: `http://` or `https://`, a host, an optional port, no path.
fn is_origin(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once("://") else {
        return false;
    };
    matches!(scheme, "http" | "https")
        && !rest.is_empty()
        && !rest.contains(['/', '?', '#', '@', ' '])
}
