//! Ad-hoc snapshots: requests to snapshot chosen tables (optionally only the rows matching a
//! `WHERE` filter) while the pipeline streams. They come from the HTTP API (`POST /snapshots`,
//! which `sluice snapshot` uses) and from the signal table (an `execute-snapshot` row read from
//! the binlog). The running stream takes each request at a transaction boundary, adds its
//! tables to the snapshot's progress and answers with the request's id; the progress commits
//! with the next checkpoint, so from then on a crash resumes the request where it got.
//!
//! [`SnapshotControl`] is the handle the API holds; [`Inbox`] is the stream's end.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot, watch, Mutex};

use super::progress::SnapshotProgress;

/// A request to snapshot tables.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdhocRequest {
    /// Tables as `db.table` (a name with a dot in it in backquotes: `` `my.db`.`t` ``).
    pub tables: Vec<String>,
    /// Only rows matching this SQL condition (`WHERE <filter>`), for every table of the
    /// request.
    #[serde(default, rename = "where", skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    /// Id to give the request (the signal row's id); one is made up when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// A request the stream accepted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Accepted {
    /// The request's id: its tables' entries in the snapshot progress carry it.
    pub id: String,
    /// The tables it snapshots, as `db.table`.
    pub tables: Vec<String>,
}

/// Why a request was not accepted.
#[derive(Debug, Clone, PartialEq)]
pub enum Rejected {
    /// The request is wrong (unknown or excluded table, empty list, ...): the message says
    /// what and how to fix it (HTTP 400).
    Invalid(String),
    /// The pipeline cannot take requests now (it is restarting, stopping or not streaming;
    /// HTTP 503).
    Unavailable(String),
}

impl std::fmt::Display for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rejected::Invalid(m) | Rejected::Unavailable(m) => f.write_str(m),
        }
    }
}

/// A request on its way to the stream, with where to answer.
#[derive(Debug)]
pub struct Command {
    /// The request.
    pub request: AdhocRequest,
    /// The stream's answer.
    pub reply: oneshot::Sender<Result<Accepted, Rejected>>,
}

/// How long a request waits for the stream to take it (the stream takes requests at
/// transaction boundaries; a very large source transaction can hold it up).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The API's handle: sends requests to the running stream and reads the snapshot progress.
#[derive(Clone)]
pub struct SnapshotControl {
    tx: mpsc::Sender<Command>,
    progress: watch::Receiver<Option<Arc<SnapshotProgress>>>,
}

/// The stream's end: requests to take, and where to publish the snapshot progress. It outlives
/// each attempt of the stream (a reconnect takes the same inbox).
#[derive(Clone)]
pub struct Inbox {
    rx: Arc<Mutex<mpsc::Receiver<Command>>>,
    progress: Arc<watch::Sender<Option<Arc<SnapshotProgress>>>>,
}

/// A connected control and inbox.
pub fn channel() -> (SnapshotControl, Inbox) {
    let (tx, rx) = mpsc::channel(16);
    let (ptx, prx) = watch::channel(None);
    (
        SnapshotControl { tx, progress: prx },
        Inbox {
            rx: Arc::new(Mutex::new(rx)),
            progress: Arc::new(ptx),
        },
    )
}

impl SnapshotControl {
    /// Asks the stream to snapshot the request's tables; waits for its answer at most
    /// [`REQUEST_TIMEOUT`].
    pub async fn request(&self, request: AdhocRequest) -> Result<Accepted, Rejected> {
        let (reply, answer) = oneshot::channel();
        let unavailable = || {
            Rejected::Unavailable(
                "the pipeline is not streaming (starting, reconnecting or stopping); try again \
                 shortly"
                    .into(),
            )
        };
        tokio::time::timeout(REQUEST_TIMEOUT, self.tx.send(Command { request, reply }))
            .await
            .map_err(|_| unavailable())?
            .map_err(|_| unavailable())?;
        match tokio::time::timeout(REQUEST_TIMEOUT, answer).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(unavailable()),
            Err(_) => Err(Rejected::Unavailable(format!(
                "the stream did not take the request within {}s (it takes requests between \
                 source transactions); try again",
                REQUEST_TIMEOUT.as_secs()
            ))),
        }
    }

    /// The snapshot progress as the stream last emitted it (`None` before any snapshot).
    pub fn progress(&self) -> Option<Arc<SnapshotProgress>> {
        self.progress.borrow().clone()
    }
}

impl Inbox {
    /// Publishes the snapshot progress for the API.
    pub fn publish(&self, progress: Option<Arc<SnapshotProgress>>) {
        self.progress.send_replace(progress);
    }

    /// The requests' receiver (one stream at a time holds it).
    pub fn receiver(&self) -> Arc<Mutex<mpsc::Receiver<Command>>> {
        self.rx.clone()
    }
}

/// Splits `db.table` (either part may be in backquotes, with doubled backquotes inside).
pub fn parse_table_name(name: &str) -> Result<(String, String), String> {
    fn part(s: &str) -> Result<(String, &str), String> {
        if let Some(rest) = s.strip_prefix('`') {
            let mut out = String::new();
            let mut chars = rest.char_indices();
            while let Some((i, c)) = chars.next() {
                if c == '`' {
                    if rest[i + 1..].starts_with('`') {
                        out.push('`');
                        chars.next();
                    } else {
                        return Ok((out, &rest[i + 1..]));
                    }
                } else {
                    out.push(c);
                }
            }
            Err("an opening backquote is not closed".into())
        } else {
            let end = s.find('.').unwrap_or(s.len());
            Ok((s[..end].to_string(), &s[end..]))
        }
    }
    let bad = |why: &str| {
        format!(
            "table {name:?}: {why}; expected `db.table` (in backquotes where a name has a dot: \
             `my.db`.`t`)"
        )
    };
    let (db, rest) = part(name.trim()).map_err(|e| bad(&e))?;
    let rest = rest.strip_prefix('.').ok_or_else(|| bad("no `.`"))?;
    let (table, rest) = part(rest).map_err(|e| bad(&e))?;
    if !rest.is_empty() {
        return Err(bad(&format!("unexpected {rest:?} after the table name")));
    }
    if db.is_empty() || table.is_empty() {
        return Err(bad("an empty name"));
    }
    Ok((db, table))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names() {
        assert_eq!(
            parse_table_name("shop.orders"),
            Ok(("shop".into(), "orders".into()))
        );
        assert_eq!(
            parse_table_name("`my.db`.`a``b`"),
            Ok(("my.db".into(), "a`b".into()))
        );
        assert_eq!(parse_table_name(" s.`t` "), Ok(("s".into(), "t".into())));
        for bad in ["orders", "a.", ".b", "a.b.c", "`a.b", "`a`x.b"] {
            let e = parse_table_name(bad).unwrap_err();
            assert!(e.contains("expected `db.table`"), "{bad}: {e}");
        }
    }

    #[test]
    fn request_json_shape() {
        let r: AdhocRequest =
            serde_json::from_str(r#"{"tables":["s.t"],"where":"id > 10"}"#).unwrap();
        assert_eq!(r.filter.as_deref(), Some("id > 10"));
        assert!(serde_json::from_str::<AdhocRequest>(r#"{"tables":[],"filter":"x"}"#).is_err());
    }

    #[tokio::test]
    async fn request_without_stream_is_unavailable() {
        let (control, inbox) = channel();
        drop(inbox);
        let r = control
            .request(AdhocRequest {
                tables: vec!["s.t".into()],
                filter: None,
                id: None,
            })
            .await;
        assert!(matches!(r, Err(Rejected::Unavailable(_))), "{r:?}");
    }
}
