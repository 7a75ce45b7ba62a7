//! Talking to the source server outside the binlog stream: connecting, detecting the flavour,
//! reading settings, binary logs and the current position.

use std::time::Duration;

use mysql_async::prelude::*;
use mysql_async::{Conn, OptsBuilder};

use crate::config::secret::SourceUrl;
use crate::error::{mysql_error, Error, Result};
use crate::position::{FilePos, GtidList, GtidSet};

/// Which server family the source is; the binlog protocols differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// Oracle MySQL (5.7, 8.x, 9.x).
    MySql,
    /// MariaDB.
    MariaDb,
}

impl Flavor {
    /// The envelope's `source.connector` value.
    pub fn connector(self) -> &'static str {
        match self {
            Flavor::MySql => "mysql",
            Flavor::MariaDb => "mariadb",
        }
    }
}

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
    /// Binlog retention in seconds (0 = never expires).
    pub binlog_expire_seconds: u64,
}

/// Connects to the source with a plain client connection.
pub async fn connect(url: &SourceUrl, timeout: Duration) -> Result<Conn> {
    let opts = OptsBuilder::default()
        .ip_or_hostname(url.host())
        .tcp_port(url.port())
        .user(url.user().map(str::to_string))
        .pass(url.password().map(|p| p.expose().clone()))
        .prefer_socket(false)
        .stmt_cache_size(0)
        .tcp_keepalive(Some(Duration::from_secs(30)));
    match tokio::time::timeout(timeout, Conn::new(opts)).await {
        Err(_) => Err(Error::transient(format!(
            "connecting to the source {url} timed out after {timeout:?} (`source.connect_timeout_ms`)"
        ))),
        Ok(Err(e)) => {
            let mut err = mysql_error(format!("connecting to the source {url}"), &e);
            if let mysql_async::Error::Server(se) = &e {
                if se.code == 1045 {
                    err = Error::definite(format!(
                        "the source refused user `{}` ({}): check the user and password in \
                         `source.url` (or SLUICE_SOURCE_URL)",
                        url.user().unwrap_or(""),
                        se.message
                    ));
                }
            }
            Err(err)
        }
        Ok(Ok(c)) => Ok(c),
    }
}

async fn var(conn: &mut Conn, name: &str) -> Result<Option<String>> {
    let q = format!("SHOW GLOBAL VARIABLES LIKE '{name}'");
    let row: Option<(String, Option<String>)> = conn
        .query_first(q)
        .await
        .map_err(|e| mysql_error(format!("reading @@{name}"), &e))?;
    Ok(row.and_then(|(_, v)| v))
}

/// Reads the flavour and the replication-related settings.
pub async fn server_info(conn: &mut Conn) -> Result<ServerInfo> {
    let version: Option<String> = conn
        .query_first("SELECT VERSION()")
        .await
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
    let gtid_mode = match flavor {
        Flavor::MariaDb => true,
        Flavor::MySql => on(var(conn, "gtid_mode").await?),
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
        binlog_expire_seconds,
    })
}

/// The binary logs the server still has, oldest first.
pub async fn binary_logs(conn: &mut Conn) -> Result<Vec<String>> {
    let rows: Vec<mysql_async::Row> = conn
        .query("SHOW BINARY LOGS")
        .await
        .map_err(|e| mysql_error("SHOW BINARY LOGS", &e))?;
    Ok(rows
        .into_iter()
        .filter_map(|r| r.get::<String, _>(0))
        .collect())
}

/// The server's current binlog file and position (the end of the binlog).
pub async fn current_file_pos(conn: &mut Conn, info: &ServerInfo) -> Result<FilePos> {
    let mut row: Option<mysql_async::Row> = None;
    if info.flavor == Flavor::MySql {
        row = conn
            .query_first("SHOW BINARY LOG STATUS")
            .await
            .ok()
            .flatten();
    }
    if row.is_none() {
        row = conn
            .query_first("SHOW MASTER STATUS")
            .await
            .map_err(|e| mysql_error("SHOW MASTER STATUS", &e))?;
    }
    let row = row.ok_or_else(|| {
        Error::definite(
            "the source reports no binary log status: binary logging is off (`log_bin`)",
        )
    })?;
    let file: String = row.get(0).unwrap_or_default();
    let pos: u64 = row.get(1).unwrap_or(4);
    FilePos::new(file, pos).map_err(|e| Error::definite(format!("binary log status: {e}")))
}

/// MySQL `@@gtid_executed` / `@@gtid_purged`.
pub async fn mysql_gtid_var(conn: &mut Conn, name: &str) -> Result<GtidSet> {
    let v: Option<String> = conn
        .query_first(format!("SELECT @@GLOBAL.{name}"))
        .await
        .map_err(|e| mysql_error(format!("reading @@{name}"), &e))?;
    v.unwrap_or_default()
        .parse()
        .map_err(|e| Error::definite(format!("@@{name}: {e}")))
}

/// MariaDB `@@gtid_binlog_pos` (the GTID state at the end of the binlog).
pub async fn mariadb_binlog_gtid_pos(conn: &mut Conn) -> Result<GtidList> {
    let v: Option<String> = conn
        .query_first("SELECT @@GLOBAL.gtid_binlog_pos")
        .await
        .map_err(|e| mysql_error("reading @@gtid_binlog_pos", &e))?;
    v.unwrap_or_default()
        .parse()
        .map_err(|e| Error::definite(format!("@@gtid_binlog_pos: {e}")))
}
