//! Preflight checks (`sluice check`, and the first thing `sluice run` does): each item is
//! reported as ok or as a problem that names the setting, the value found, the value expected
//! and the fix.

use crate::mysql::query::Timed;
use mysql_async::prelude::*;
use mysql_async::Conn;

use crate::config::SslMode;
use crate::error::{mysql_error, Error, ErrorKind, Result};
use crate::mysql::server::{self, Flavor, ServerInfo};
use crate::position::SourcePosition;

/// One line of the preflight report.
#[derive(Debug, Clone)]
pub struct CheckItem {
    /// What was checked.
    pub name: String,
    /// `None` when fine, else the problem with its fix.
    pub problem: Option<String>,
    /// What was found (shown for ok items too).
    pub detail: String,
    /// The problem may go away by itself (a server or broker not reachable yet, a timeout):
    /// `sluice run` retries it with backoff instead of stopping.
    pub transient: bool,
}

impl CheckItem {
    /// A check that passed.
    pub fn ok(name: &str, detail: impl Into<String>) -> Self {
        CheckItem {
            name: name.into(),
            problem: None,
            detail: detail.into(),
            transient: false,
        }
    }

    /// A problem an operator must fix (a setting, a grant, a purged position).
    pub fn problem(name: &str, detail: impl Into<String>, problem: impl Into<String>) -> Self {
        CheckItem {
            name: name.into(),
            problem: Some(problem.into()),
            detail: detail.into(),
            transient: false,
        }
    }

    /// A check that could not be made because of `err`: transient when `err` is.
    pub fn failed(name: &str, detail: impl Into<String>, err: &Error) -> Self {
        CheckItem {
            transient: err.kind() == ErrorKind::Transient,
            ..CheckItem::problem(name, detail, err.to_string())
        }
    }
}

/// What the preflight report means for `sluice run`: no problem → go on; any problem an
/// operator must fix → a definite error listing every problem (exit 1 at once); only problems
/// that may go away by themselves (unreachable broker, timeouts) → a transient error, retried
/// with the same backoff as a failure while streaming.
pub fn verdict(items: &[CheckItem]) -> Result<()> {
    let problems: Vec<&CheckItem> = items.iter().filter(|i| i.problem.is_some()).collect();
    if problems.is_empty() {
        return Ok(());
    }
    let text = problems
        .iter()
        .map(|i| format!("- {}: {}", i.name, i.problem.as_deref().unwrap_or("")))
        .collect::<Vec<_>>()
        .join("\n");
    let msg = format!("preflight found {} problem(s):\n{text}", problems.len());
    if problems.iter().all(|i| i.transient) {
        Err(Error::transient(msg))
    } else {
        Err(Error::definite(msg))
    }
}

fn expect_var(items: &mut Vec<CheckItem>, name: &str, found: &str, want: &str, fix: &str) {
    if found.eq_ignore_ascii_case(want) {
        items.push(CheckItem::ok(name, format!("{name}={found}")));
    } else {
        items.push(CheckItem::problem(
            name,
            format!("{name}={found:?}"),
            format!(
                "`{name}` is {found:?}, sluice needs {want:?}: {fix} (and restart or rotate the \
                 binlog so the new setting applies to what sluice reads)"
            ),
        ));
    }
}

/// `binlog_row_metadata`: with `FULL` every table map describes its table. Without it (older
/// servers, or `MINIMAL`/`NO_LOG`) sluice decodes rows with tracked definitions, which exist
/// only where the schema is known: the committed schema history (`committed`), or a new
/// pipeline at `start = "latest"` (today's information_schema). Any other start is refused.
pub fn check_row_metadata(
    info: &ServerInfo,
    committed: bool,
    start: Option<&crate::position::StartSpec>,
) -> CheckItem {
    const NAME: &str = "binlog_row_metadata";
    let found = if info.binlog_row_metadata.is_empty() {
        "(not supported by this server)".to_string()
    } else {
        info.binlog_row_metadata.clone()
    };
    if found.eq_ignore_ascii_case("FULL") {
        return CheckItem::ok(
            NAME,
            "binlog_row_metadata=FULL: table maps describe their tables",
        );
    }
    let detail = format!(
        "binlog_row_metadata={found}: table maps carry no column names{}, so rows are decoded \
         with the tracked table definitions",
        if found.eq_ignore_ascii_case("MINIMAL") {
            ""
        } else {
            " nor signedness"
        }
    );
    if committed {
        return CheckItem::ok(
            NAME,
            format!("{detail} of the schema history committed with the offset"),
        );
    }
    match start {
        Some(
            crate::position::StartSpec::Latest
            | crate::position::StartSpec::Initial
            | crate::position::StartSpec::SnapshotOnly,
        ) => CheckItem::ok(
            NAME,
            format!("{detail}, read from information_schema at the start position"),
        ),
        other => CheckItem::problem(
            NAME,
            format!("binlog_row_metadata={found:?}"),
            format!(
                "{detail}, and for `source.start = {}` sluice knows no definitions: \
                 information_schema shows today's tables, not those at an older position. Either \
                 SET GLOBAL binlog_row_metadata = 'FULL' (and put it in the server config; \
                 MySQL 8.0.1+, MariaDB 10.5+) before the events to read were written, or start \
                 the pipeline at `start = \"latest\"`",
                other.map_or_else(|| "?".to_string(), |s| format!("\"{s}\""))
            ),
        ),
    }
}

/// Checks the server settings sluice depends on (except `binlog_row_metadata`, which depends
/// on where the pipeline starts: [`check_row_metadata`]).
pub async fn check_source(
    conn: &mut Conn,
    info: &ServerInfo,
    our_server_id: u32,
) -> Vec<CheckItem> {
    let mut items = vec![CheckItem::ok(
        "source reachable",
        format!("{:?} {}", info.flavor, info.version),
    )];
    if info.log_bin {
        items.push(CheckItem::ok("log_bin", "log_bin=ON"));
    } else {
        items.push(CheckItem::problem(
            "log_bin",
            "log_bin=OFF",
            "binary logging is off: start the server with `log_bin` (e.g. log-bin=mysql-bin)",
        ));
    }
    expect_var(
        &mut items,
        "binlog_format",
        &info.binlog_format,
        "ROW",
        "SET GLOBAL binlog_format='ROW' and put binlog_format=ROW in the server config",
    );
    expect_var(
        &mut items,
        "binlog_row_image",
        &info.binlog_row_image,
        "FULL",
        "SET GLOBAL binlog_row_image='FULL' and put binlog_row_image=FULL in the server config",
    );
    match info.flavor {
        Flavor::MariaDb => items.push(CheckItem::ok("GTID mode", "MariaDB GTIDs (always on)")),
        Flavor::MySql if info.gtid_mode => items.push(CheckItem::ok("GTID mode", "gtid_mode=ON")),
        Flavor::MySql => items.push(CheckItem::ok(
            "GTID mode",
            format!(
                "gtid_mode={}: sluice resumes by binlog file and position (works, but a \
                 position does not survive a failover to another server; SET PERSIST \
                 gtid_mode=ON, stepping through OFF_PERMISSIVE and ON_PERMISSIVE with \
                 enforce_gtid_consistency=ON, for GTID resume)",
                if info.gtid_mode_value.is_empty() {
                    "OFF"
                } else {
                    &info.gtid_mode_value
                }
            ),
        )),
    }
    if info.flavor == Flavor::MySql {
        let options = if info.binlog_row_value_options.is_empty() {
            "binlog_row_value_options='' (full JSON values)".to_string()
        } else {
            format!(
                "binlog_row_value_options={} (JSON updates are logged as partial updates)",
                info.binlog_row_value_options
            )
        };
        items.push(CheckItem::ok("binlog_row_value_options", options));
        items.push(CheckItem::ok(
            "binlog_transaction_compression",
            if info.binlog_transaction_compression {
                "binlog_transaction_compression=ON (zstd transaction payloads, decoded)"
            } else {
                "binlog_transaction_compression=OFF"
            },
        ));
    }
    if info.server_id == our_server_id {
        items.push(CheckItem::problem(
            "server_id",
            format!("source server_id={}", info.server_id),
            format!(
                "`source.server_id` = {our_server_id} is the source server's own server_id: pick \
                 another id, unique among the source's replicas"
            ),
        ));
    } else {
        items.push(CheckItem::ok(
            "server_id",
            format!(
                "sluice registers as {our_server_id}, source is {}",
                info.server_id
            ),
        ));
    }
    if let Some(item) = check_replica_ids(conn, our_server_id).await {
        items.push(item);
    }
    items.push(check_grants(conn).await);
    let retention = if info.binlog_expire_seconds == 0 {
        "binlogs never expire".to_string()
    } else {
        format!(
            "binlogs expire after {:.1} h",
            info.binlog_expire_seconds as f64 / 3600.0
        )
    };
    if info.binlog_expire_seconds != 0 && info.binlog_expire_seconds < 3600 * 6 {
        items.push(CheckItem::problem(
            "binlog retention",
            retention,
            "binlogs expire in under 6 hours: a sluice outage longer than that loses the resume \
             position; raise `binlog_expire_logs_seconds` (MySQL) / `binlog_expire_logs_seconds` \
             or `expire_logs_days` (MariaDB)",
        ));
    } else {
        items.push(CheckItem::ok("binlog retention", retention));
    }
    items
}

/// Whether the connection is encrypted, under which `source.ssl_mode`.
pub async fn check_tls(conn: &mut Conn, mode: SslMode) -> CheckItem {
    let name = "TLS";
    let status = server::tls_status(conn).await;
    match &status {
        Ok(None) => tracing::warn!(
            ssl_mode = %mode,
            "the connections to the source are not encrypted: the binlog (every captured row) \
             and the login cross the network in plaintext; set source.ssl_mode = \
             \"verify_identity\" (with source.ssl_ca) where the server offers TLS"
        ),
        Ok(Some(_)) if !matches!(mode, SslMode::VerifyCa | SslMode::VerifyIdentity) => {
            tracing::warn!(
                ssl_mode = %mode,
                "the source's certificate is not verified: TLS encrypts, but a man in the \
                 middle could present its own certificate; set source.ssl_mode = \
                 \"verify_identity\" (or \"verify_ca\") with source.ssl_ca"
            )
        }
        _ => {}
    }
    match status {
        Ok(Some(tls)) => CheckItem::ok(name, format!("{tls} (ssl_mode={mode})")),
        Ok(None) if mode == SslMode::Disabled => {
            CheckItem::ok(name, "plaintext (ssl_mode=disabled)")
        }
        Ok(None) => CheckItem::ok(
            name,
            format!(
                "plaintext: the source does not offer TLS (ssl_mode={mode}); set \
                 source.ssl_mode = \"required\" or stricter to insist on it"
            ),
        ),
        Err(e) => CheckItem::failed(name, "unknown", &e),
    }
}

/// Another replica (a real server: it announces a port) registered with sluice's server id
/// would have its replication stream cut off, and sluice's with it. Needs a privilege sluice
/// usually lacks (`REPLICATION MASTER ADMIN` / `REPLICATION SLAVE`); skipped quietly then.
async fn check_replica_ids(conn: &mut Conn, our_server_id: u32) -> Option<CheckItem> {
    // SHOW REPLICAS (MySQL 8.0.22+; the only spelling in MySQL 9) and SHOW SLAVE HOSTS
    // (older MySQL, MariaDB) have the same first columns: server id, host, port.
    // A timeout skips the check (the next query that must succeed reports it).
    let rows: Vec<mysql_async::Row> = match conn
        .query("SHOW REPLICAS")
        .timed("SHOW REPLICAS")
        .await
        .ok()?
    {
        Ok(rows) => rows,
        Err(_) => conn
            .query("SHOW SLAVE HOSTS")
            .timed("SHOW SLAVE HOSTS")
            .await
            .ok()?
            .ok()?,
    };
    let clash = rows.iter().find(|r| {
        let id: Option<u32> = r.get(0);
        let port: Option<u32> = r.get(2);
        id == Some(our_server_id) && port.unwrap_or(0) != 0
    });
    Some(match clash {
        Some(r) => {
            let host: Option<String> = r.get(1);
            CheckItem::problem(
                "replica server ids",
                format!(
                    "replica {} uses server_id {our_server_id}",
                    host.unwrap_or_default()
                ),
                format!(
                    "`source.server_id` = {our_server_id} is also used by a replica of the \
                     source; the server drops one of two streams with the same id: pick another \
                     id"
                ),
            )
        }
        None => CheckItem::ok(
            "replica server ids",
            format!("no other replica registered as {our_server_id}"),
        ),
    })
}

async fn check_grants(conn: &mut Conn) -> CheckItem {
    let grants: Vec<String> = match conn.query("SHOW GRANTS").timed("SHOW GRANTS").await {
        Err(e) => return CheckItem::failed("grants", "SHOW GRANTS timed out", &e),
        Ok(Ok(g)) => g,
        Ok(Err(e)) => {
            return CheckItem::failed(
                "grants",
                "SHOW GRANTS failed",
                &mysql_error("cannot read grants", &e),
            )
        }
    };
    let all = grants.join(" ").to_ascii_uppercase();
    let has = |p: &str| all.contains("ALL PRIVILEGES ON *.*") || all.contains(p);
    let mut missing = Vec::new();
    if !has("REPLICATION SLAVE") && !has("REPLICATION REPLICA") {
        missing.push("REPLICATION SLAVE");
    }
    if !has("REPLICATION CLIENT") && !has("BINLOG MONITOR") {
        missing.push("REPLICATION CLIENT");
    }
    if !has("SELECT") {
        missing.push("SELECT");
    }
    if missing.is_empty() {
        CheckItem::ok(
            "grants",
            "SELECT, REPLICATION SLAVE, REPLICATION CLIENT present",
        )
    } else {
        CheckItem::problem(
            "grants",
            format!("missing {}", missing.join(", ")),
            format!(
                "the source user lacks {}: GRANT SELECT, RELOAD, REPLICATION SLAVE, \
                 REPLICATION CLIENT ON *.* TO '<user>'@'<host>'",
                missing.join(", ")
            ),
        )
    }
}

/// Checks that `pos` (committed offset or configured start) is still on the server.
pub async fn check_position(
    conn: &mut Conn,
    info: &ServerInfo,
    pos: &SourcePosition,
    what: &str,
) -> CheckItem {
    let name = "resume position";
    let logs = match server::binary_logs(conn).await {
        Ok(l) => l,
        Err(e) => return CheckItem::failed(name, "SHOW BINARY LOGS failed", &e),
    };
    let fix = "the binlog it needs was purged: set snapshot.on_purged = \"resnapshot\" to take \
               a new snapshot and stream from the current position, or move the pipeline with \
               `sluice offsets set --position <pos>` to a position the server still has \
               (SHOW BINARY LOGS), and raise binlog retention";
    if let SourcePosition::MysqlGtid { gtid_set, .. } = pos {
        if info.flavor == Flavor::MySql {
            if let Ok(purged) = server::mysql_gtid_var(conn, "gtid_purged").await {
                if !purged.is_subset(gtid_set) {
                    return CheckItem::problem(
                        name,
                        format!("{what} {pos}; server gtid_purged {purged}"),
                        format!("the server purged transactions the {what} has not seen: {fix}"),
                    );
                }
            }
            return CheckItem::ok(name, format!("{what} {pos} is available"));
        }
    }
    // A MariaDB GTID position is resolved by the server through its GTID state, not through
    // the file it was read from (which a replica after a failover does not have): it is
    // available when the oldest binlog starts at or before it in every domain.
    if let SourcePosition::MariadbGtid { gtid_list, .. } = pos {
        if info.flavor == Flavor::MariaDb && !gtid_list.is_empty() {
            let Some(oldest) = logs.first() else {
                return CheckItem::problem(name, "the server has no binary logs", "enable log_bin");
            };
            return match server::mariadb_gtid_at_file_start(conn, oldest).await {
                Ok(Some(start)) if !start.is_subset(gtid_list) => CheckItem::problem(
                    name,
                    format!("{what} {pos}; the oldest binlog {oldest} starts at GTID {start}"),
                    format!("the server purged transactions the {what} has not seen: {fix}"),
                ),
                Ok(_) => CheckItem::ok(name, format!("{what} {pos} is available")),
                Err(e) => CheckItem::failed(name, "BINLOG_GTID_POS failed", &e),
            };
        }
    }
    if let Some(fp) = pos.file_pos() {
        if !fp.file.is_empty() && !logs.iter().any(|l| l == &fp.file) {
            let oldest = logs.first().cloned().unwrap_or_default();
            // A GTID position may still resolve through the GTID state even if the
            // informative file is gone; MariaDB then needs the GTID in the binlogs.
            return CheckItem::problem(
                name,
                format!("{what} {pos}; oldest binlog on the server is {oldest}"),
                format!(
                    "binlog file `{}` is not on the server any more: {fix}",
                    fp.file
                ),
            );
        }
    }
    CheckItem::ok(name, format!("{what} {pos} is available"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unreachable_broker() -> CheckItem {
        CheckItem::failed(
            "Kafka reachable",
            "bootstrap.servers=127.0.0.1:1",
            &Error::transient("Kafka metadata request failed: BrokerTransportFailure"),
        )
    }

    #[test]
    fn no_problem_passes() {
        let items = [CheckItem::ok("log_bin", "log_bin=ON")];
        assert!(verdict(&items).is_ok());
    }

    #[test]
    fn only_transient_problems_are_retried() {
        let items = [CheckItem::ok("log_bin", "log_bin=ON"), unreachable_broker()];
        let e = verdict(&items).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Transient);
        assert!(e.to_string().contains("Kafka reachable"), "{e}");
    }

    #[test]
    fn a_definite_problem_stops_and_every_problem_is_listed() {
        let items = [
            unreachable_broker(),
            CheckItem::problem(
                "binlog_format",
                "binlog_format=\"STATEMENT\"",
                "`binlog_format` is \"STATEMENT\", sluice needs \"ROW\"",
            ),
        ];
        let e = verdict(&items).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Definite);
        let text = e.to_string();
        assert!(text.contains("2 problem(s)"), "{text}");
        assert!(text.contains("binlog_format") && text.contains("Kafka reachable"));
    }

    #[test]
    fn a_failed_check_keeps_the_kind_of_its_error() {
        let definite = CheckItem::failed("x", "", &Error::definite("access denied"));
        assert!(!definite.transient);
        assert_eq!(
            verdict(&[definite]).unwrap_err().kind(),
            ErrorKind::Definite
        );
        assert!(unreachable_broker().transient);
    }
}
