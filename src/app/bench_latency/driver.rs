//! The source side of `sluice bench-latency`: the table made ready, and the writers. Each
//! writer owns one connection and takes the next transaction of the schedule whenever it is
//! free ([`Tracker::claim`]): it waits until the transaction is due (open loop) and sends it
//! at once when it is already late, so a slow commit makes the following transactions late
//! (`driver_behind_ms`) instead of lowering the rate. A transaction is one autocommit
//! `INSERT` of its rows: committed when the statement returns, the instant the latency is
//! measured from.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts};
use tokio::sync::watch;

use super::plan::Plan;
use super::tracker::{lock, Tracker};
use crate::error::{Error, Result};

/// The source's connection options from `--source`, and the database its path names.
pub fn source_opts(url: &str) -> Result<(Opts, Option<String>)> {
    let opts = Opts::from_url(url).map_err(|e| {
        Error::definite(format!(
            "--source: {e}; expected mysql://user[:password]@host:port[/db]"
        ))
    })?;
    let db = opts.db_name().map(str::to_string);
    Ok((opts, db))
}

/// Opens a connection to the source; the error names the server.
pub async fn connect(opts: &Opts) -> Result<Conn> {
    Conn::new(opts.clone()).await.map_err(|e| {
        Error::definite(format!(
            "cannot connect to the source at {}:{}: {e}",
            opts.ip_or_hostname(),
            opts.tcp_port()
        ))
    })
}

/// Creates the table when it is missing and returns the largest id in it (0 when empty): the
/// run's ids start after it.
pub async fn prepare_table(conn: &mut Conn, plan: &Plan) -> Result<u64> {
    let create = plan.create_sql();
    conn.query_drop(&create)
        .await
        .map_err(|e| Error::definite(format!("{create}: {e}")))?;
    let max = format!("SELECT COALESCE(MAX(id), 0) FROM {}", plan.table.quoted());
    let found: Option<u64> = conn.query_first(&max).await.map_err(|e| {
        Error::definite(format!(
            "{max}: {e}; the table must have an integer primary key `id` (bench-latency \
             creates `id BIGINT PRIMARY KEY, v VARCHAR` when the table is missing)"
        ))
    })?;
    Ok(found.unwrap_or(0))
}

/// Writes one row with id `id` (before the run: the first row of a table whose topic does
/// not exist yet, for the pipeline to create it).
pub async fn write_one(conn: &mut Conn, plan: &Plan, id: u64) -> Result<()> {
    let mut sql = String::new();
    plan.insert_sql(&mut sql, id..=id);
    conn.query_drop(&sql)
        .await
        .map_err(|e| insert_error(plan, id, id, &e))
}

fn insert_error(plan: &Plan, first: u64, last: u64, e: &mysql_async::Error) -> Error {
    Error::definite(format!(
        "writing ids {first}..={last} into {}: {e}; the table must have the columns `id` \
         (integer primary key) and `v` (text of at least {} bytes), and no one else may write \
         ids above the run's first",
        plan.table,
        plan.payload.len()
    ))
}

/// One writer: claims transactions until the run's are handed out or `stop` is set, sends
/// each when due, and notes when its COMMIT returned. On an error it sets `stop` (the other
/// writers then stop too) and returns it.
pub async fn writer(
    mut conn: Conn,
    plan: Arc<Plan>,
    tracker: Arc<Mutex<Tracker>>,
    stop: watch::Sender<bool>,
) -> Result<()> {
    let result = write_claims(&mut conn, &plan, &tracker, &stop).await;
    if result.is_err() {
        stop.send_replace(true);
    }
    let _ = conn.disconnect().await;
    result
}

async fn write_claims(
    conn: &mut Conn,
    plan: &Plan,
    tracker: &Mutex<Tracker>,
    stop: &watch::Sender<bool>,
) -> Result<()> {
    let mut stopped = stop.subscribe();
    let mut sql = String::with_capacity(64 + plan.txn_rows as usize * (plan.payload.len() + 32));
    loop {
        if *stopped.borrow() {
            return Ok(());
        }
        let (claim, due) = {
            let mut t = lock(tracker);
            let now = t.us(Instant::now());
            match t.claim(now).map_err(Error::definite)? {
                None => return Ok(()),
                Some(c) => (c, c.due_us.map(|d| t.instant(d))),
            }
        };
        if let Some(due) = due {
            if due > Instant::now() {
                tokio::select! {
                    _ = tokio::time::sleep_until(due.into()) => {}
                    _ = stopped.wait_for(|s| *s) => return Ok(()),
                }
            }
        }
        plan.insert_sql(&mut sql, claim.first..=claim.last);
        let sent = Instant::now();
        conn.query_drop(&sql)
            .await
            .map_err(|e| insert_error(plan, claim.first, claim.last, &e))?;
        let at = Instant::now();
        let mut t = lock(tracker);
        let (sent_us, at_us) = (t.us(sent), t.us(at));
        t.committed(&claim, sent_us, at_us);
    }
}
