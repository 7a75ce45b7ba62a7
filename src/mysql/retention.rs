//! Binlog retention headroom: how long until the server may purge the binlog file that holds
//! the committed position (`sluice_binlog_retention_headroom_seconds`). Once that file is
//! purged, the pipeline cannot resume without a new snapshot (`snapshot.on_purged`), so this
//! is the early warning of the `SluiceBinlogRetentionLow` alert.
//!
//! The server purges a file once it is older than its expiry (`binlog_expire_logs_seconds`;
//! `expire_logs_days` on servers without it), counting from the file's last write, which is
//! when it was closed. That moment is not visible over SQL, but it is no earlier than the last
//! committed transaction in the file, whose source commit time the offset carries. So
//!
//! ```text
//! headroom ≥ expiry − (now − source commit time of the committed offset) = expiry − lag
//! ```
//!
//! and the figure exported is that lower bound (when the pipeline is idle, heartbeats keep the
//! committed time current, and the file being written is never purged). A committed file no
//! longer listed by `SHOW BINARY LOGS` is reported as already purged (negative). Purges by
//! size (MariaDB's `binlog_space_limit`, MySQL's `binlog_expire_logs_auto_purge = OFF` aside)
//! and manual `PURGE BINARY LOGS` are not predicted.

use crate::mysql::query::Timed;
use std::sync::Arc;
use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::Conn;

use crate::error::Result;
use crate::metrics::Metrics;
use crate::mysql::server::ConnectOptions;

/// How often the server's settings and binlog list are read.
pub const EVERY: Duration = Duration::from_secs(30);

/// The server's binlog expiry: `None` when it never purges by age.
pub fn expiry(
    seconds: Option<u64>,
    days: Option<f64>,
    auto_purge: Option<bool>,
) -> Option<Duration> {
    if auto_purge == Some(false) {
        return None;
    }
    match (seconds, days) {
        (Some(s), _) if s > 0 => Some(Duration::from_secs(s)),
        (_, Some(d)) if d > 0.0 => Some(Duration::from_secs_f64(d * 86_400.0)),
        _ => None,
    }
}

/// The headroom in seconds (see the module doc); `None` when the server never expires binlogs
/// or nothing was committed yet.
pub fn headroom(
    expiry: Option<Duration>,
    committed_file_index: Option<u64>,
    oldest_file_index: Option<u64>,
    committed_source_ts_ms: u64,
    now_ms: u64,
) -> Option<f64> {
    let expiry = expiry?;
    if committed_source_ts_ms == 0 {
        return None;
    }
    let lag = now_ms.saturating_sub(committed_source_ts_ms) as f64 / 1000.0;
    let bound = expiry.as_secs_f64() - lag;
    match (committed_file_index, oldest_file_index) {
        // Already purged: the committed file is older than the oldest one on the server.
        (Some(c), Some(o)) if c < o => Some(bound.min(-1.0)),
        _ => Some(bound),
    }
}

/// Reads the expiry settings and the oldest binlog file's number.
async fn read_server(conn: &mut Conn) -> Result<(Option<Duration>, Option<u64>)> {
    let seconds: Option<u64> = conn
        .query_first("SELECT @@global.binlog_expire_logs_seconds")
        .timed("reading @@binlog_expire_logs_seconds")
        .await?
        .ok()
        .flatten();
    let days: Option<f64> = conn
        .query_first("SELECT CAST(@@global.expire_logs_days AS DOUBLE)")
        .timed("reading @@expire_logs_days")
        .await?
        .ok()
        .flatten();
    let auto_purge: Option<String> = conn
        .query_first("SELECT @@global.binlog_expire_logs_auto_purge")
        .timed("reading @@binlog_expire_logs_auto_purge")
        .await?
        .ok()
        .flatten();
    let auto_purge = auto_purge.map(|v| v.eq_ignore_ascii_case("ON") || v == "1");
    let logs: Vec<mysql_async::Row> = conn
        .query("SHOW BINARY LOGS")
        .timed("listing the binary logs (SHOW BINARY LOGS)")
        .await?
        .map_err(|e| crate::error::mysql_error("listing the binary logs (SHOW BINARY LOGS)", &e))?;
    let oldest = logs
        .first()
        .and_then(|r| r.get::<String, _>(0))
        .and_then(|name| crate::position::FilePos::new(name, 4).ok())
        .and_then(|fp| fp.file_index());
    Ok((expiry(seconds, days, auto_purge), oldest))
}

/// Updates the retention metrics of `metrics` (the pipeline's) every [`EVERY`] until dropped; a
/// failing read is logged and retried at the next tick (the last figures stay).
pub async fn watch(connect: ConnectOptions, metrics: Arc<Metrics>) {
    let mut tick = tokio::time::interval(EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut conn: Option<Conn> = None;
    loop {
        tick.tick().await;
        if conn.is_none() {
            match crate::mysql::session::connect(&connect).await {
                Ok(c) => conn = Some(c),
                Err(e) => {
                    tracing::debug!(error = %e, "binlog retention: cannot connect; retrying");
                    continue;
                }
            }
        }
        let Some(c) = conn.as_mut() else { continue };
        match read_server(c).await {
            Ok((expire, oldest)) => {
                let (file, ts) = metrics.committed_file_and_ts();
                let h = headroom(expire, file, oldest, ts, crate::model::clock::now_ms());
                metrics.retention(expire, h);
            }
            Err(e) => {
                tracing::debug!(error = %e, "binlog retention: cannot read the server; retrying");
                conn = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_from_the_settings() {
        assert_eq!(
            expiry(Some(3600), Some(0.0), None),
            Some(Duration::from_secs(3600))
        );
        assert_eq!(
            expiry(Some(0), Some(2.0), None),
            Some(Duration::from_secs(172_800))
        );
        assert_eq!(
            expiry(None, Some(0.5), None),
            Some(Duration::from_secs(43_200))
        );
        assert_eq!(expiry(Some(0), Some(0.0), None), None);
        assert_eq!(expiry(Some(3600), None, Some(false)), None);
        assert_eq!(
            expiry(Some(3600), None, Some(true)),
            Some(Duration::from_secs(3600))
        );
    }

    #[test]
    fn headroom_is_expiry_minus_lag() {
        let day = Some(Duration::from_secs(86_400));
        let now = 100_000_000_000;
        // 100 s behind: a day minus 100 s.
        assert_eq!(
            headroom(day, Some(5), Some(3), now - 100_000, now),
            Some(86_300.0)
        );
        // Behind by more than the expiry: negative.
        assert_eq!(
            headroom(day, Some(5), Some(3), now - 90_000_000, now).map(|h| h < 0.0),
            Some(true)
        );
        // The committed file is gone: negative however small the lag.
        assert_eq!(
            headroom(day, Some(2), Some(3), now - 1_000, now),
            Some(-1.0)
        );
        // Never expires, or nothing committed yet.
        assert_eq!(headroom(None, Some(5), Some(3), now, now), None);
        assert_eq!(headroom(day, Some(5), Some(3), 0, now), None);
    }
}
