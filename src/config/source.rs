//! `[source]`: the MySQL/MariaDB server sluice replicates from ([`SourceConfig`]), how its
//! connections use TLS ([`SslMode`]), the defaults of its settings and the accessors that
//! turn milliseconds into durations and empty paths into `None`.
//!
//! Invariant: the URL's password lives in a [`SourceUrl`] and is never printed; code reads
//! the durations and TLS files through the accessors, so "unset" means the same everywhere.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::limits;
use super::SourceUrl;

/// `[source]`: the MySQL/MariaDB server sluice replicates from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceConfig {
    /// Server URL, required: `mysql://user:password@host[:port][/database][?params]`
    /// (port default 3306; also for MariaDB). The password is secret: it is never printed.
    pub url: SourceUrl,
    /// A file holding the password (its content, surrounding whitespace removed), read at
    /// start, so the password need not sit in `url`, the configuration or the environment;
    /// `url` then has none. Default: empty (none).
    #[serde(default)]
    pub password_file: String,
    /// Replica server id sluice presents to the server, required, non-zero, unique among
    /// the server's replicas.
    pub server_id: u32,
    /// Regexes on `db.table` (whole-name match) selecting the tables to capture.
    /// Default: empty, meaning every table outside the system schemas.
    #[serde(default)]
    pub include: Vec<String>,
    /// Regexes on `db.table` (whole-name match) of tables not to capture, applied after
    /// `include`. Default: empty.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Whether tables of the system schemas (`mysql`, `information_schema`,
    /// `performance_schema`, `sys`) may be captured at all (they still have to pass
    /// `include`/`exclude`). Default: false.
    #[serde(default)]
    pub include_system_schemas: bool,
    /// Where to start when the pipeline has no stored position (ignored once it has one):
    /// `"initial"` (snapshot the included tables, streaming from the snapshot's start
    /// meanwhile), `"snapshot_only"` (snapshot, then stop), or stream without a snapshot from
    /// `"earliest"`, `"latest"`, `"gtid:<gtid set>"` or `"file:<binlog file>:<position>"`.
    /// Default: `"initial"`.
    #[serde(default = "default_start")]
    pub start: String,
    /// Heartbeat period requested from the server, in milliseconds, so that a dead
    /// connection is noticed. Default: 5000.
    #[serde(default = "default_heartbeat_ms")]
    pub heartbeat_ms: u64,
    /// Timeout for connecting to the server, in milliseconds. Default: 10000.
    #[serde(default = "default_connect_timeout_ms")]
    pub connect_timeout_ms: u64,
    /// First delay before reconnecting after a lost connection, in milliseconds; doubled
    /// on each failed attempt up to `reconnect_backoff_max_ms`. Default: 200.
    #[serde(default = "default_reconnect_backoff_min_ms")]
    pub reconnect_backoff_min_ms: u64,
    /// Largest delay between reconnection attempts, in milliseconds. Default: 30000.
    #[serde(default = "default_reconnect_backoff_max_ms")]
    pub reconnect_backoff_max_ms: u64,
    /// Consecutive failed attempts (start-up included) before giving up; 0 = never give up.
    /// A healthy attempt (one commit, and `reconnect_backoff_max_ms` of running) resets the
    /// count. Default: 0.
    #[serde(default)]
    pub max_reconnect_attempts: u32,
    /// TLS to the server, as the MySQL client's `--ssl-mode`: `"disabled"`, `"preferred"`
    /// (TLS when the server offers it, certificate not checked), `"required"` (TLS,
    /// certificate not checked), `"verify_ca"` (TLS, certificate signed by `ssl_ca`) or
    /// `"verify_identity"` (as `verify_ca`, and the certificate names the URL's host).
    /// Applies to every connection sluice opens to the server. Default: `"preferred"`.
    #[serde(default)]
    pub ssl_mode: SslMode,
    /// PEM file of the CA certificate(s) the server's certificate must be signed by;
    /// required by (and only allowed with) `verify_ca` and `verify_identity`. Default: empty
    /// (none).
    #[serde(default)]
    pub ssl_ca: PathBuf,
    /// PEM file of a client certificate (chain) presented to the server, for users created
    /// `REQUIRE X509` / `REQUIRE SUBJECT`; needs `ssl_key` and a TLS `ssl_mode`. Default:
    /// empty (none).
    #[serde(default)]
    pub ssl_cert: PathBuf,
    /// PEM file of the private key of `ssl_cert` (unencrypted). Default: empty (none).
    #[serde(default)]
    pub ssl_key: PathBuf,
    /// Whether a `caching_sha2_password` login over plaintext may ask the server for its RSA
    /// public key and encrypt the password with it (as MySQL's own connectors'
    /// `allowPublicKeyRetrieval`). Off, such a login is refused with an error saying to use
    /// TLS or set this: over plaintext nothing proves the key is the server's, and a man in
    /// the middle could serve its own and read the password. Logins over TLS, and fast
    /// (cached) logins, never need it. Default: false.
    #[serde(default)]
    pub allow_public_key_retrieval: bool,
    /// Largest binlog event read, in bytes, and the largest decompressed statement (MariaDB
    /// `log_bin_compress`) or inner event of a compressed transaction (MySQL
    /// `binlog_transaction_compression`); a larger one is a definite error naming the
    /// position. Default: 1073741824 (1 GiB, the server's own `max_allowed_packet` ceiling).
    #[serde(default = "limits::default_max_event_bytes")]
    pub max_event_bytes: u64,
    /// Bytes the source → sink channel holds (about the decoded size of its changes), besides
    /// its 8 messages (batches of changes, each at most an eighth of this and 1 MiB); a rows
    /// event larger than the whole budget is let through alone. Default: 67108864 (64 MiB).
    #[serde(default = "limits::default_channel_max_bytes")]
    pub channel_max_bytes: u64,
    /// How long a query connection (preflight, schema reads, snapshot chunks; not the binlog
    /// stream) may wait for one answer, in milliseconds: a query's first reply, then each row
    /// of its result. Longer is a transient error naming the query. 0 = no timeout. Default:
    /// 60000.
    #[serde(default = "limits::default_query_timeout_ms")]
    pub query_timeout_ms: u64,
}

/// `source.ssl_mode`: whether and how the connections to the source use TLS (the MySQL
/// client's `--ssl-mode`, in lower case).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SslMode {
    /// `"disabled"`: plaintext.
    Disabled,
    /// `"preferred"`: TLS when the server supports it, else plaintext; the certificate is
    /// not checked. The default (as for the MySQL client).
    #[default]
    Preferred,
    /// `"required"`: TLS or fail; the certificate is not checked.
    Required,
    /// `"verify_ca"`: TLS, the certificate must be signed by `source.ssl_ca` (any host name).
    VerifyCa,
    /// `"verify_identity"`: as `verify_ca`, and the certificate must name the host of
    /// `source.url` (DNS name or IP address).
    VerifyIdentity,
}

impl SslMode {
    /// Every mode, in order of strictness.
    pub const ALL: [SslMode; 5] = [
        SslMode::Disabled,
        SslMode::Preferred,
        SslMode::Required,
        SslMode::VerifyCa,
        SslMode::VerifyIdentity,
    ];

    /// The TOML spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disabled => "disabled",
            SslMode::Preferred => "preferred",
            SslMode::Required => "required",
            SslMode::VerifyCa => "verify_ca",
            SslMode::VerifyIdentity => "verify_identity",
        }
    }

    /// Whether the server certificate is checked against `source.ssl_ca`.
    pub fn verifies(self) -> bool {
        matches!(self, SslMode::VerifyCa | SslMode::VerifyIdentity)
    }
}

impl fmt::Display for SslMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl SourceConfig {
    /// `heartbeat_ms` as a duration.
    pub fn heartbeat(&self) -> Duration {
        Duration::from_millis(self.heartbeat_ms)
    }

    /// `connect_timeout_ms` as a duration.
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms)
    }

    /// `reconnect_backoff_min_ms` as a duration.
    pub fn reconnect_backoff_min(&self) -> Duration {
        Duration::from_millis(self.reconnect_backoff_min_ms)
    }

    /// `reconnect_backoff_max_ms` as a duration.
    pub fn reconnect_backoff_max(&self) -> Duration {
        Duration::from_millis(self.reconnect_backoff_max_ms)
    }

    /// `query_timeout_ms` as a duration; `None` when 0 (no timeout).
    pub fn query_timeout(&self) -> Option<Duration> {
        (self.query_timeout_ms > 0).then(|| Duration::from_millis(self.query_timeout_ms))
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

pub(super) fn non_empty(p: &Path) -> Option<&Path> {
    (!p.as_os_str().is_empty()).then_some(p)
}

fn default_start() -> String {
    "initial".to_string()
}
fn default_heartbeat_ms() -> u64 {
    5000
}
fn default_connect_timeout_ms() -> u64 {
    10_000
}
fn default_reconnect_backoff_min_ms() -> u64 {
    200
}
fn default_reconnect_backoff_max_ms() -> u64 {
    30_000
}

impl SourceConfig {
    /// Reads `password_file` into `url`; a problem names the setting when the URL has a
    /// password too, or the file cannot be read or is empty.
    pub(super) fn read_password_file(&mut self) -> Result<(), super::Problem> {
        let path = self.password_file.trim();
        if path.is_empty() {
            return Ok(());
        }
        if self.url.password().is_some() {
            return Err(super::secret::both_set(
                "the password in source.url",
                "source.password_file",
            ));
        }
        let password = super::secret::read_secret_file("source.password_file", path)?;
        self.url = self.url.with_password(&password);
        Ok(())
    }
}

/// The server id the XA replay connection registers with: a second dump connection must not
/// use the pipeline's own id (the server would drop the main stream). Documented in the
/// README; the pipelines of one process must not collide on either id.
pub fn replay_server_id(server_id: u32) -> u32 {
    server_id ^ 0x4000_0000
}
