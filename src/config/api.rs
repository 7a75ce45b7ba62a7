//! `[api]`: the HTTP API of `sluice run` (`crate::api`): health and readiness, status,
//! metrics, pause and resume, ad-hoc snapshots and their progress; `sluice snapshot` talks to
//! it.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize, Serializer};

use super::secret::{Secret, REDACTED};
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
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig {
            enabled: default_enabled(),
            listen: default_listen(),
            token: Secret::default(),
            ready_max_lag_seconds: DEFAULT_READY_MAX_LAG_SECONDS,
        }
    }
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

    /// The token, when one is set. Secret: do not log it.
    pub fn token(&self) -> Option<&str> {
        Some(self.token.expose().as_str()).filter(|t| !t.is_empty())
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
