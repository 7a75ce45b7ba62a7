//! The first table definitions of a new pipeline that starts at "now" (`start = "latest"`).
//!
//! Table maps logged without `binlog_row_metadata=FULL` carry no column names, so the stream
//! needs every included table's shape *at its start position*. information_schema shows only
//! the present, so it is read right at the start: position `p1`, then the definitions, then
//! position `p2`. When the binlog did not move (`p1 == p2`), or moved only by events that are
//! not DDL (read back with `SHOW BINLOG EVENTS` between the two), the definitions are the
//! shapes at `p1` and the stream starts there. Otherwise a DDL may have run while they were
//! read, and the whole read is repeated. The definitions go into the schema history in the
//! pipeline's first Kafka transaction, with the start position.

use crate::mysql::query::Timed;
use std::time::Duration;

use mysql_async::prelude::*;
use mysql_async::Conn;

use crate::capture::{resolve_start, ResumePoint};
use crate::config::route::Router;
use crate::error::{mysql_error, Error, Result};
use crate::mysql::binlog_listing;
use crate::mysql::server::{self, ServerInfo};
use crate::position::{FilePos, StartSpec};
use crate::schema::information_schema::load_table_defs;
use crate::snapshot::progress::{SnapshotProgress, TableProgress};

/// How many times the read is repeated while DDL keeps running.
const ATTEMPTS: u32 = 5;

/// The start of a new pipeline at `start = "latest"`, with the definitions of every included
/// and routed table at that position (`defs_unwritten` set: the stream writes them to the
/// schema history first).
pub async fn latest_with_defs(
    conn: &mut Conn,
    info: &ServerInfo,
    router: &Router,
) -> Result<ResumePoint> {
    let mut last_reason = String::new();
    for attempt in 1..=ATTEMPTS {
        let mut resume = resolve_start(conn, info, None, &StartSpec::Latest).await?;
        let p1 = FilePos {
            file: resume.tracker.file.clone(),
            pos: resume.tracker.pos,
        };
        let tables = included_tables(conn, router).await?;
        let defs = match load_table_defs(conn, &tables).await {
            Ok(d) => d,
            // A table dropped while it was read: read everything again.
            Err(e) if e.kind() == crate::error::ErrorKind::Transient => {
                last_reason = e.to_string();
                continue;
            }
            Err(e) => return Err(e),
        };
        let p2 = server::current_file_pos(conn, info).await?;
        let settled = if p2 == p1 {
            Ok(())
        } else if p2.file != p1.file {
            Err(format!("the binlog rotated from {p1} to {p2}"))
        } else {
            binlog_listing::ddl_between(conn, &p1, p2.pos).await?
        };
        match settled {
            Ok(()) => {
                tracing::info!(
                    position = %p1,
                    tables = defs.len(),
                    attempt,
                    "read the included tables' definitions at the start position"
                );
                resume.defs = defs;
                resume.defs_unwritten = true;
                return Ok(resume);
            }
            Err(reason) => {
                tracing::info!(%reason, attempt, "the binlog moved while the table definitions were read; reading them again");
                last_reason = reason;
                tokio::time::sleep(Duration::from_millis(100 * u64::from(attempt))).await;
            }
        }
    }
    Err(Error::transient(format!(
        "could not read the included tables' definitions at a settled binlog position in \
         {ATTEMPTS} attempts (last: {last_reason}); retrying. A new pipeline at \
         `start = \"latest\"` needs a moment without DDL on the source"
    )))
}

/// `(db, table)` of every base table that `source.include`/`exclude` capture and a route
/// matches, sorted.
pub async fn included_tables(conn: &mut Conn, router: &Router) -> Result<Vec<(String, String)>> {
    let rows: Vec<(String, String)> = conn
        .query(
            "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES \
             WHERE TABLE_TYPE IN ('BASE TABLE', 'SEQUENCE')",
        )
        .timed("listing the source's tables")
        .await?
        .map_err(|e| mysql_error("listing the source's tables", &e))?;
    Ok(
        routed(rows.into_iter().map(|(db, table)| (db, table, ())), router)?
            .into_iter()
            .map(|(db, table, ())| (db, table))
            .collect(),
    )
}

/// The rows `(db, table, extra)` whose table `source.include`/`exclude` capture and a route
/// matches, sorted by name.
fn routed<T>(
    rows: impl IntoIterator<Item = (String, String, T)>,
    router: &Router,
) -> Result<Vec<(String, String, T)>> {
    let mut out = Vec::new();
    for (db, table, extra) in rows {
        if router.table_included(&db, &table)
            && router
                .route(&db, &table)
                .map_err(Error::definite_from)?
                .is_some()
        {
            out.push((db, table, extra));
        }
    }
    out.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    Ok(out)
}

/// The snapshot of a new pipeline: every included and routed table, with the server's row
/// estimates. `then_stop`: `start = "snapshot_only"`.
pub async fn plan_snapshot(
    conn: &mut Conn,
    router: &Router,
    then_stop: bool,
) -> Result<SnapshotProgress> {
    // One query for every table's estimate (TABLE_ROWS: NULL for some engines, taken as 0).
    let rows: Vec<(String, String, Option<u64>)> = conn
        .query(
            "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_ROWS FROM information_schema.TABLES \
             WHERE TABLE_TYPE IN ('BASE TABLE', 'SEQUENCE')",
        )
        .timed("listing the source's tables and their row estimates")
        .await?
        .map_err(|e| mysql_error("listing the source's tables and their row estimates", &e))?;
    let tables: Vec<TableProgress> = routed(rows, router)?
        .into_iter()
        .map(|(db, table, estimate)| TableProgress::new(&db, &table, estimate.unwrap_or(0)))
        .collect();
    tracing::info!(
        tables = tables.len(),
        estimated_rows = tables.iter().map(|t| t.estimate).sum::<u64>(),
        then_stop,
        "snapshot planned"
    );
    Ok(SnapshotProgress {
        started_ms: crate::model::clock::now_ms(),
        then_stop,
        tables,
        finished_tables: 0,
        finished_rows: 0,
        finished_requests: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_included_and_routed_tables_are_kept_sorted() {
        let config = crate::config::Config::from_str_with_env(
            r#"
name = "shop"
[source]
url = "mysql://u@127.0.0.1"
server_id = 1
include = ["shop\\..*", "crm\\..*"]
exclude = ["shop\\.tmp"]
[kafka]
bootstrap_servers = "k:9092"
[[route]]
match = "shop\\.(.*)"
topic = "shop.$1"
"#,
            Vec::new(),
        )
        .unwrap();
        let router = config.router().unwrap();
        let row = |db: &str, t: &str, n: u64| (db.to_string(), t.to_string(), Some(n));
        let kept = routed(
            vec![
                row("shop", "orders", 5),
                row("crm", "people", 1),
                row("shop", "tmp", 2),
                row("mysql", "user", 3),
                row("shop", "items", 4),
                row("other", "t", 6),
            ],
            &router,
        )
        .unwrap();
        assert_eq!(
            kept,
            vec![row("shop", "items", 4), row("shop", "orders", 5)],
            "crm.people is included but routed nowhere"
        );
    }
}
