//! Talking to the source server outside the binlog stream: connecting, detecting the flavour,
//! reading settings, binary logs and the current position.

use crate::mysql::query::Timed;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mysql_async::prelude::*;
use mysql_async::{ClientIdentity, Conn, OptsBuilder, SslOpts};

use crate::config::secret::SourceUrl;
use crate::config::{SourceConfig, SslMode};
use crate::error::{mysql_error, Error, Result};
pub use crate::model::flavor::Flavor;
use crate::mysql::tls_setups::{digest, Kept};
use crate::position::{FilePos, GtidList, GtidSet};

/// What sluice needs to know about the source server.
#[derive(Debug, Clone)]
pub struct ServerInfo {
    /// MySQL or MariaDB.
    pub flavor: Flavor,
    /// `SELECT VERSION()`.
    pub version: String,
    /// The server's own `server_id`.
    pub server_id: u32,
    /// `@@log_bin`.
    pub log_bin: bool,
    /// `@@binlog_format`.
    pub binlog_format: String,
    /// `@@binlog_row_image`.
    pub binlog_row_image: String,
    /// `@@binlog_row_metadata` (empty when the server has no such variable).
    pub binlog_row_metadata: String,
    /// MySQL `gtid_mode` is ON (MariaDB always has GTIDs).
    pub gtid_mode: bool,
    /// MySQL `@@gtid_mode` as the server reports it (`OFF`, `OFF_PERMISSIVE`,
    /// `ON_PERMISSIVE`, `ON`); empty on MariaDB.
    pub gtid_mode_value: String,
    /// MySQL `@@binlog_row_value_options` (`PARTIAL_JSON` or empty); empty on MariaDB.
    pub binlog_row_value_options: String,
    /// MySQL `@@binlog_transaction_compression` (8.0.20+) is ON.
    pub binlog_transaction_compression: bool,
    /// Binlog retention in seconds (0 = never expires).
    pub binlog_expire_seconds: u64,
}

/// How to reach the source: its URL, TLS settings and connect timeout. Every connection
/// sluice opens to the source (queries, the binlog stream, the XA replay) is made from one.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// `source.url`.
    pub url: SourceUrl,
    /// `source.ssl_mode`.
    pub ssl_mode: SslMode,
    /// `source.ssl_ca`.
    pub ssl_ca: Option<PathBuf>,
    /// `source.ssl_cert`.
    pub ssl_cert: Option<PathBuf>,
    /// `source.ssl_key`.
    pub ssl_key: Option<PathBuf>,
    /// `source.connect_timeout_ms`.
    pub timeout: Duration,
    /// `source.allow_public_key_retrieval`.
    pub allow_public_key_retrieval: bool,
}

impl ConnectOptions {
    /// The options of `[source]`.
    pub fn from_config(source: &SourceConfig) -> ConnectOptions {
        ConnectOptions {
            url: source.url.clone(),
            ssl_mode: source.ssl_mode,
            ssl_ca: source.ssl_ca().map(Path::to_path_buf),
            ssl_cert: source.ssl_cert().map(Path::to_path_buf),
            ssl_key: source.ssl_key().map(Path::to_path_buf),
            timeout: source.connect_timeout(),
            allow_public_key_retrieval: source.allow_public_key_retrieval,
        }
    }

    /// `source.ssl_mode = "…"` (and `source.ssl_ca = "…"` when set), for messages.
    fn describe_tls(&self) -> String {
        match &self.ssl_ca {
            Some(ca) => format!(
                "`source.ssl_mode` = \"{}\", `source.ssl_ca` = \"{}\"",
                self.ssl_mode,
                ca.display()
            ),
            None => format!("`source.ssl_mode` = \"{}\"", self.ssl_mode),
        }
    }

    /// The client TLS options for `ssl_mode`; `None` for `disabled`. Reads and checks the
    /// PEM files, so a bad file is reported naming its setting.
    pub fn ssl_opts(&self) -> Result<Option<SslOpts>> {
        let mut opts = match self.ssl_mode {
            SslMode::Disabled => return Ok(None),
            // Encrypt, but accept any certificate (the MySQL client's PREFERRED/REQUIRED).
            SslMode::Preferred | SslMode::Required => SslOpts::default()
                .with_danger_accept_invalid_certs(true)
                .with_danger_skip_domain_validation(true),
            SslMode::VerifyCa | SslMode::VerifyIdentity => {
                let Some(ca) = &self.ssl_ca else {
                    return Err(Error::definite(format!(
                        "`source.ssl_mode` = \"{}\" needs `source.ssl_ca`: set it to the PEM \
                         file of the CA that signed the server's certificate",
                        self.ssl_mode
                    )));
                };
                let pem = read_pem("source.ssl_ca", ca)?;
                openssl::x509::X509::stack_from_pem(&pem)
                    .ok()
                    .filter(|certs| !certs.is_empty())
                    .ok_or_else(|| {
                        Error::definite(format!(
                            "`source.ssl_ca` = \"{}\" holds no PEM certificate (expected \
                             -----BEGIN CERTIFICATE----- blocks)",
                            ca.display()
                        ))
                    })?;
                SslOpts::default()
                    .with_root_certs(vec![pem.into()])
                    .with_disable_built_in_roots(true)
                    .with_danger_skip_domain_validation(self.ssl_mode == SslMode::VerifyCa)
            }
        };
        if let (Some(cert), Some(key)) = (&self.ssl_cert, &self.ssl_key) {
            opts = opts.with_client_identity(Some(client_identity(cert, key)?));
        }
        Ok(Some(opts))
    }
}

fn read_pem(setting: &str, path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        Error::definite(format!(
            "cannot read `{setting}` = \"{}\": {e}; fix: point {setting} at a readable PEM file",
            path.display()
        ))
    })
}

/// Client identities by the digest of their PEM files: one archive for the same files (an
/// archive is salted at random, and the TLS setups are looked up by their options).
static IDENTITIES: Kept<[u8; 32], ClientIdentity> = Kept::new();

/// Query connections' options by URL and TLS options: their clones share the client
/// library's TLS setup, built at the first TLS connection.
static QUERY_OPTS: Kept<(String, Option<SslOpts>), mysql_async::Opts> = Kept::new();

/// The replication connection's TLS setups by their options.
static CONNECTORS: Kept<SslOpts, native_tls::TlsConnector> = Kept::new();

/// The client certificate and key as the PKCS#12 archive the TLS library takes.
fn client_identity(cert: &Path, key: &Path) -> Result<ClientIdentity> {
    let cert_pem = read_pem("source.ssl_cert", cert)?;
    let key_pem = read_pem("source.ssl_key", key)?;
    IDENTITIES.get_or(digest(&[&cert_pem, &key_pem]), || {
        new_client_identity(cert, &cert_pem, key, &key_pem)
    })
}

fn new_client_identity(
    cert: &Path,
    cert_pem: &[u8],
    key: &Path,
    key_pem: &[u8],
) -> Result<ClientIdentity> {
    use openssl::{pkcs12::Pkcs12, pkey::PKey, stack::Stack, x509::X509};
    let certs = X509::stack_from_pem(cert_pem)
        .ok()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| {
            Error::definite(format!(
                "`source.ssl_cert` = \"{}\" holds no PEM certificate",
                cert.display()
            ))
        })?;
    let pkey = PKey::private_key_from_pem(key_pem).map_err(|e| {
        Error::definite(format!(
            "`source.ssl_key` = \"{}\" is not an unencrypted PEM private key: {e}",
            key.display()
        ))
    })?;
    let mut iter = certs.into_iter();
    let leaf = iter.next().ok_or_else(|| {
        Error::definite(format!(
            "`source.ssl_cert` = \"{}\" holds no PEM certificate",
            cert.display()
        ))
    })?;
    let mut chain = Stack::new().map_err(|e| Error::definite(format!("TLS setup: {e}")))?;
    for c in iter {
        chain
            .push(c)
            .map_err(|e| Error::definite(format!("TLS setup: {e}")))?;
    }
    let archive = Pkcs12::builder()
        .pkey(&pkey)
        .cert(&leaf)
        .ca(chain)
        .build2("")
        .and_then(|p| p.to_der())
        .map_err(|e| {
            Error::definite(format!(
                "`source.ssl_cert` / `source.ssl_key` (\"{}\", \"{}\") do not form a client \
                 identity: {e}",
                cert.display(),
                key.display()
            ))
        })?;
    Ok(ClientIdentity::new(archive.into()).with_password(""))
}

/// Whether (and how) an open connection is encrypted: `Some("TLSv1.3 TLS_AES_…")` or `None`
/// for plaintext. Asks the server (`Ssl_version`, `Ssl_cipher` of the session).
pub async fn tls_status(conn: &mut Conn) -> Result<Option<String>> {
    let rows: Vec<(String, String)> = conn
        .query("SHOW SESSION STATUS WHERE Variable_name IN ('Ssl_version', 'Ssl_cipher')")
        .timed("reading the session's TLS status")
        .await?
        .map_err(|e| mysql_error("reading the session's TLS status", &e))?;
    let get = |name: &str| {
        rows.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let (version, cipher) = (get("Ssl_version"), get("Ssl_cipher"));
    Ok(if cipher.is_empty() {
        None
    } else {
        Some(format!("{version} {cipher}").trim().to_string())
    })
}

/// Why one connection attempt failed.
pub(crate) enum Attempt {
    /// `source.connect_timeout_ms` passed.
    TimedOut,
    /// The client library (or the replication connection, in its terms) failed.
    Failed(mysql_async::Error),
    /// Already a pipeline error.
    Refused(Error),
}

/// Runs `attempt` with the TLS options of `source.ssl_mode` under the connect timeout, with
/// the `preferred` fallback to plaintext, and maps a failure to a pipeline error. Shared by
/// the query connections and the replication connection.
pub(crate) async fn connect_with<T, F, Fut>(opts: &ConnectOptions, attempt: F) -> Result<T>
where
    F: Fn(Option<SslOpts>) -> Fut,
    Fut: std::future::Future<Output = Result<T, Attempt>>,
{
    let run = |ssl| {
        let fut = attempt(ssl);
        async move {
            match tokio::time::timeout(opts.timeout, fut).await {
                Err(_) => Err(Attempt::TimedOut),
                Ok(r) => r,
            }
        }
    };
    let ssl = opts.ssl_opts()?;
    let tls = ssl.is_some();
    match run(ssl).await {
        Err(Attempt::Failed(e))
            if opts.ssl_mode == SslMode::Preferred
                && matches!(
                    e,
                    mysql_async::Error::Driver(mysql_async::DriverError::NoClientSslFlagFromServer)
                ) =>
        {
            tracing::info!(
                source = %opts.url,
                "the source does not offer TLS; connecting in plaintext (source.ssl_mode = \
                 \"preferred\")"
            );
            run(None).await.map_err(|e| attempt_error(opts, e, false))
        }
        other => other.map_err(|e| attempt_error(opts, e, tls)),
    }
}

/// One connection of the client library (see `crate::mysql::session::connect`).
pub(crate) async fn attempt(
    opts: &ConnectOptions,
    ssl: Option<SslOpts>,
) -> Result<Conn, mysql_async::Error> {
    let url = &opts.url;
    let key = (url.expose_url().to_string(), ssl.clone());
    let options = QUERY_OPTS.get_or(key, || {
        Ok::<_, mysql_async::Error>(mysql_async::Opts::from(
            OptsBuilder::default()
                .ip_or_hostname(url.host())
                .tcp_port(url.port())
                .user(url.user().map(str::to_string))
                .pass(url.password().map(|p| p.expose().clone()))
                .prefer_socket(false)
                .stmt_cache_size(0)
                .tcp_keepalive(Some(Duration::from_secs(30)))
                .ssl_opts(ssl),
        ))
    })?;
    Conn::new(options).await
}

/// The TLS connector for `ssl` (made by [`ConnectOptions::ssl_opts`]), with the same
/// semantics the client library gives those options: trusted roots, client identity, and
/// whether the certificate and the host name are checked.
pub(crate) async fn tls_connector(ssl: &SslOpts) -> Result<native_tls::TlsConnector, Attempt> {
    if let Some(connector) = CONNECTORS.get(ssl) {
        return Ok(connector);
    }
    Ok(CONNECTORS.keep(ssl.clone(), new_tls_connector(ssl).await?))
}

async fn new_tls_connector(ssl: &SslOpts) -> Result<native_tls::TlsConnector, Attempt> {
    let setup =
        |e: &dyn std::fmt::Display| Attempt::Refused(Error::definite(format!("TLS setup: {e}")));
    let mut builder = native_tls::TlsConnector::builder();
    for root in ssl.root_certs() {
        let pem = root.read().await.map_err(|e| setup(&e))?;
        for cert in openssl::x509::X509::stack_from_pem(&pem).map_err(|e| setup(&e))? {
            let der = cert.to_der().map_err(|e| setup(&e))?;
            let cert =
                native_tls::Certificate::from_der(&der).map_err(|e| Attempt::Failed(e.into()))?;
            builder.add_root_certificate(cert);
        }
    }
    if let Some(id) = ssl.client_identity() {
        let archive = id.pkcs12_archive();
        let archive = archive.read().await.map_err(|e| setup(&e))?;
        let identity = native_tls::Identity::from_pkcs12(&archive, id.password().unwrap_or(""))
            .map_err(|e| Attempt::Failed(e.into()))?;
        builder.identity(identity);
    }
    builder
        .danger_accept_invalid_hostnames(ssl.skip_domain_validation())
        .danger_accept_invalid_certs(ssl.accept_invalid_certs())
        .disable_built_in_roots(ssl.disable_built_in_roots());
    builder.build().map_err(|e| Attempt::Failed(e.into()))
}

/// The pipeline error for a failed connection attempt; `tls` says whether it tried TLS.
fn attempt_error(opts: &ConnectOptions, attempt: Attempt, tls: bool) -> Error {
    let url = &opts.url;
    let e = match attempt {
        Attempt::TimedOut => {
            return Error::transient(format!(
                "connecting to the source {url} timed out after {:?} \
                 (`source.connect_timeout_ms`)",
                opts.timeout
            ))
        }
        Attempt::Refused(e) => return e,
        Attempt::Failed(e) => e,
    };
    match &e {
        mysql_async::Error::Server(se) if se.code == 1045 => {
            let hint = if tls {
                String::new()
            } else {
                format!(
                    "; the connection was not encrypted ({}): a user created REQUIRE SSL \
                     (or X509) is refused without TLS, set `source.ssl_mode` = \"required\" \
                     or stricter for it",
                    opts.describe_tls()
                )
            };
            Error::definite(format!(
                "the source refused user `{}` ({}): check the user and password in \
                 `source.url` (or SLUICE_SOURCE_URL){hint}",
                url.user().unwrap_or(""),
                se.message
            ))
        }
        mysql_async::Error::Driver(mysql_async::DriverError::NoClientSslFlagFromServer) => {
            Error::definite(format!(
                "the source {url} does not offer TLS, but {} asks for it; fix: enable TLS on \
                 the server (its ssl_cert / ssl_key settings) or set `source.ssl_mode` = \
                 \"preferred\" or \"disabled\"",
                opts.describe_tls()
            ))
        }
        mysql_async::Error::Io(mysql_async::IoError::Tls(te)) => {
            let fix = match opts.ssl_mode {
                SslMode::VerifyCa => {
                    "check that `source.ssl_ca` holds the CA that signed the server's \
                     certificate (and that the certificate has not expired)"
                }
                SslMode::VerifyIdentity => {
                    "check that `source.ssl_ca` holds the CA that signed the server's \
                     certificate and that the certificate names the host of `source.url` \
                     (subjectAltName DNS name or IP address); `source.ssl_mode` = \
                     \"verify_ca\" skips the host name check"
                }
                _ => {
                    "check the server's TLS setup (and `source.ssl_cert` / `source.ssl_key` if set)"
                }
            };
            Error::definite(format!(
                "TLS with the source {url} failed ({}): {te}; fix: {fix}",
                opts.describe_tls()
            ))
        }
        _ => mysql_error(format!("connecting to the source {url}"), &e),
    }
}

async fn var(conn: &mut Conn, name: &str) -> Result<Option<String>> {
    let q = format!("SHOW GLOBAL VARIABLES LIKE '{name}'");
    let row: Option<(String, Option<String>)> = conn
        .query_first(q)
        .timed(format!("reading @@{name}"))
        .await?
        .map_err(|e| mysql_error(format!("reading @@{name}"), &e))?;
    Ok(row.and_then(|(_, v)| v))
}

/// Reads the flavour and the replication-related settings.
pub async fn server_info(conn: &mut Conn) -> Result<ServerInfo> {
    let version: Option<String> = conn
        .query_first("SELECT VERSION()")
        .timed("reading the server version")
        .await?
        .map_err(|e| mysql_error("reading the server version", &e))?;
    let version = version.unwrap_or_default();
    let flavor = if version.to_ascii_lowercase().contains("mariadb") {
        Flavor::MariaDb
    } else {
        Flavor::MySql
    };
    let on = |v: Option<String>| {
        v.map(|s| s.eq_ignore_ascii_case("ON") || s == "1")
            .unwrap_or(false)
    };
    let server_id = var(conn, "server_id")
        .await?
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let log_bin = on(var(conn, "log_bin").await?);
    let binlog_format = var(conn, "binlog_format").await?.unwrap_or_default();
    let binlog_row_image = var(conn, "binlog_row_image").await?.unwrap_or_default();
    let binlog_row_metadata = var(conn, "binlog_row_metadata").await?.unwrap_or_default();
    let (gtid_mode, gtid_mode_value) = match flavor {
        Flavor::MariaDb => (true, String::new()),
        Flavor::MySql => {
            let v = var(conn, "gtid_mode").await?.unwrap_or_default();
            (v.eq_ignore_ascii_case("ON"), v)
        }
    };
    let (binlog_row_value_options, binlog_transaction_compression) = match flavor {
        Flavor::MariaDb => (String::new(), false),
        Flavor::MySql => (
            var(conn, "binlog_row_value_options")
                .await?
                .unwrap_or_default(),
            on(var(conn, "binlog_transaction_compression").await?),
        ),
    };
    let expire_seconds = match var(conn, "binlog_expire_logs_seconds").await? {
        Some(s) => s.parse::<u64>().unwrap_or(0),
        None => 0,
    };
    let expire_days = var(conn, "expire_logs_days")
        .await?
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(0.0);
    let binlog_expire_seconds = if expire_seconds > 0 {
        expire_seconds
    } else {
        (expire_days * 86400.0) as u64
    };
    Ok(ServerInfo {
        flavor,
        version,
        server_id,
        log_bin,
        binlog_format,
        binlog_row_image,
        binlog_row_metadata,
        gtid_mode,
        gtid_mode_value,
        binlog_row_value_options,
        binlog_transaction_compression,
        binlog_expire_seconds,
    })
}

/// The binary logs the server still has, oldest first.
pub async fn binary_logs(conn: &mut Conn) -> Result<Vec<String>> {
    let rows: Vec<mysql_async::Row> = conn
        .query("SHOW BINARY LOGS")
        .timed("SHOW BINARY LOGS")
        .await?
        .map_err(|e| mysql_error("SHOW BINARY LOGS", &e))?;
    Ok(rows
        .into_iter()
        .filter_map(|r| r.get::<String, _>(0))
        .collect())
}

/// The server's current binlog file and position (the end of the binlog).
pub async fn current_file_pos(conn: &mut Conn, info: &ServerInfo) -> Result<FilePos> {
    // MySQL 8.2+ has SHOW BINARY LOG STATUS and 8.4+ only that; older MySQL and MariaDB
    // have SHOW MASTER STATUS. Chosen by version, with a fallback on a syntax error.
    let new_syntax = info.flavor == Flavor::MySql && mysql_version_at_least(&info.version, (8, 2));
    let (first, second) = if new_syntax {
        ("SHOW BINARY LOG STATUS", "SHOW MASTER STATUS")
    } else {
        ("SHOW MASTER STATUS", "SHOW BINARY LOG STATUS")
    };
    let row: Option<mysql_async::Row> = match conn.query_first(first).timed(first).await? {
        Ok(r) => r,
        Err(mysql_async::Error::Server(se)) if se.code == ER_PARSE_ERROR => conn
            .query_first(second)
            .timed(second)
            .await?
            .map_err(|e| mysql_error(second, &e))?,
        Err(e) => return Err(mysql_error(first, &e)),
    };
    let row = row.ok_or_else(|| {
        Error::definite(
            "the source reports no binary log status: binary logging is off (`log_bin`)",
        )
    })?;
    let file: String = row.get(0).unwrap_or_default();
    let pos: u64 = row.get(1).unwrap_or(4);
    FilePos::new(file, pos).map_err(|e| Error::definite(format!("binary log status: {e}")))
}

/// ER_PARSE_ERROR: a statement this server version does not know.
pub const ER_PARSE_ERROR: u16 = 1064;

/// Whether a `SELECT VERSION()` string (`9.1.0`, `8.0.36-log`, ...) is at least `min`
/// (major, minor). Unparsable versions count as old.
pub fn mysql_version_at_least(version: &str, min: (u32, u32)) -> bool {
    let mut parts = version
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= min,
        _ => false,
    }
}

/// MySQL `@@gtid_executed` / `@@gtid_purged`.
pub async fn mysql_gtid_var(conn: &mut Conn, name: &str) -> Result<GtidSet> {
    let v: Option<String> = conn
        .query_first(format!("SELECT @@GLOBAL.{name}"))
        .timed(format!("reading @@{name}"))
        .await?
        .map_err(|e| mysql_error(format!("reading @@{name}"), &e))?;
    v.unwrap_or_default()
        .parse()
        .map_err(|e| Error::definite(format!("@@{name}: {e}")))
}

/// MariaDB `@@gtid_binlog_pos` (the GTID state at the end of the binlog).
pub async fn mariadb_binlog_gtid_pos(conn: &mut Conn) -> Result<GtidList> {
    let v: Option<String> = conn
        .query_first("SELECT @@GLOBAL.gtid_binlog_pos")
        .timed("reading @@gtid_binlog_pos")
        .await?
        .map_err(|e| mysql_error("reading @@gtid_binlog_pos", &e))?;
    v.unwrap_or_default()
        .parse()
        .map_err(|e| Error::definite(format!("@@gtid_binlog_pos: {e}")))
}

/// MariaDB: the GTID state at the start of binlog `file` (`BINLOG_GTID_POS(file, 4)`), i.e.
/// what a replica must already have to be served from that file on. Empty for the first
/// binlog of the server's history; `None` when the server does not know the file.
pub async fn mariadb_gtid_at_file_start(conn: &mut Conn, file: &str) -> Result<Option<GtidList>> {
    let v: Option<Option<String>> = conn
        .exec_first("SELECT BINLOG_GTID_POS(?, 4)", (file,))
        .timed("reading BINLOG_GTID_POS")
        .await?
        .map_err(|e| mysql_error("reading BINLOG_GTID_POS", &e))?;
    v.flatten()
        .map(|text| {
            text.parse()
                .map_err(|e| Error::definite(format!("BINLOG_GTID_POS({file}, 4): {e}")))
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(mode: SslMode) -> ConnectOptions {
        ConnectOptions {
            url: SourceUrl::parse("mysql://u:p@127.0.0.1:3306").unwrap(),
            ssl_mode: mode,
            ssl_ca: None,
            ssl_cert: None,
            ssl_key: None,
            timeout: Duration::from_secs(1),
            allow_public_key_retrieval: false,
        }
    }

    #[test]
    fn versions() {
        assert!(mysql_version_at_least("9.1.0", (8, 2)));
        assert!(mysql_version_at_least("8.4.3-log", (8, 2)));
        assert!(mysql_version_at_least("8.2.0", (8, 2)));
        assert!(!mysql_version_at_least("8.0.36", (8, 2)));
        assert!(!mysql_version_at_least("5.7.44-log", (8, 2)));
        assert!(!mysql_version_at_least("", (8, 2)));
    }

    #[test]
    fn ssl_options_per_mode() {
        assert!(options(SslMode::Disabled).ssl_opts().unwrap().is_none());
        for mode in [SslMode::Preferred, SslMode::Required] {
            let o = options(mode).ssl_opts().unwrap().unwrap();
            assert!(o.accept_invalid_certs() && o.skip_domain_validation());
        }
        // A verify mode without a CA (validation refuses that config earlier) is an error.
        let e = options(SslMode::VerifyCa)
            .ssl_opts()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("source.ssl_ca") && e.contains("verify_ca"),
            "{e}"
        );
    }

    /// A self-signed certificate and its key, as PEM.
    fn cert_and_key() -> (Vec<u8>, Vec<u8>) {
        use openssl::{ec, nid::Nid, pkey::PKey, x509};
        let group = ec::EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap();
        let key = PKey::from_ec_key(ec::EcKey::generate(&group).unwrap()).unwrap();
        let mut name = x509::X509NameBuilder::new().unwrap();
        name.append_entry_by_text("CN", "127.0.0.1").unwrap();
        let name = name.build();
        let mut b = x509::X509Builder::new().unwrap();
        b.set_subject_name(&name).unwrap();
        b.set_issuer_name(&name).unwrap();
        b.set_pubkey(&key).unwrap();
        b.set_not_before(&openssl::asn1::Asn1Time::days_from_now(0).unwrap())
            .unwrap();
        b.set_not_after(&openssl::asn1::Asn1Time::days_from_now(1).unwrap())
            .unwrap();
        b.sign(&key, openssl::hash::MessageDigest::sha256())
            .unwrap();
        (
            b.build().to_pem().unwrap(),
            key.private_key_to_pem_pkcs8().unwrap(),
        )
    }

    #[tokio::test]
    async fn tls_setups_are_shared_until_a_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let (ca, _) = cert_and_key();
        let (cert, key) = cert_and_key();
        let path = |name: &str| dir.path().join(name);
        std::fs::write(path("ca.pem"), &ca).unwrap();
        std::fs::write(path("cert.pem"), &cert).unwrap();
        std::fs::write(path("key.pem"), &key).unwrap();
        let mut o = options(SslMode::VerifyIdentity);
        o.ssl_ca = Some(path("ca.pem"));
        o.ssl_cert = Some(path("cert.pem"));
        o.ssl_key = Some(path("key.pem"));
        let first = o.ssl_opts().unwrap().unwrap();
        // The same files give the same options (one client archive, though each is salted at
        // random), so the connections made with them share one TLS setup.
        assert!(first == o.ssl_opts().unwrap().unwrap());
        assert!(CONNECTORS.get(&first).is_none());
        tls_connector(&first).await.ok().unwrap();
        assert!(CONNECTORS.get(&first).is_some(), "built once, then kept");
        // A renewed client certificate and key: new options, a new setup at the next connection.
        let (cert, key) = cert_and_key();
        std::fs::write(path("cert.pem"), &cert).unwrap();
        std::fs::write(path("key.pem"), &key).unwrap();
        let renewed = o.ssl_opts().unwrap().unwrap();
        assert!(renewed != first);
        assert!(CONNECTORS.get(&renewed).is_none());
        // And a new CA.
        std::fs::write(path("ca.pem"), &cert).unwrap();
        assert!(o.ssl_opts().unwrap().unwrap() != renewed);
    }

    #[test]
    fn unusable_ca_files_name_the_setting() {
        let dir = tempfile::tempdir().unwrap();
        let garbage = dir.path().join("ca.pem");
        std::fs::write(&garbage, "not a certificate").unwrap();
        for (path, needle) in [
            (garbage, "holds no PEM certificate"),
            (dir.path().join("missing.pem"), "cannot read"),
        ] {
            let mut o = options(SslMode::VerifyIdentity);
            o.ssl_ca = Some(path);
            let e = o.ssl_opts().unwrap_err();
            assert_eq!(e.kind(), crate::error::ErrorKind::Definite);
            let e = e.to_string();
            assert!(e.contains("source.ssl_ca") && e.contains(needle), "{e}");
        }
    }
}
