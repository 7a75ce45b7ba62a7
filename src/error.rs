//! The error vocabulary of sluice, typed by the action each error needs.
//!
//! * [`Error::Transient`]: the condition may go away by itself (a dropped connection, a broker
//!   that is electing a leader, an abortable Kafka transaction). The pipeline aborts the open Kafka
//!   transaction, rewinds the source to the last *committed* position and retries with backoff.
//! * [`Error::Definite`]: retrying cannot help (bad configuration, a purged binlog, a fenced
//!   producer, a record the topic refuses). The pipeline stops and tells the operator what to do.
//! * [`Error::Unfinished`]: a shutdown ran out of `shutdown_timeout_ms` while a Kafka call
//!   (a commit, a flush) was still waiting. The pipeline gives up on it (best-effort bounded
//!   abort) and exits 4; the outcome of that transaction is settled by the next run's fencing,
//!   which resumes right after whatever was committed.
//!
//! Every error carries a human sentence that names the setting or the place (table, binlog
//! position) involved. Secrets never appear in these messages.

use std::fmt;

/// Result alias used across the pipeline stages.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What kind of action an error needs from the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Retry after rewinding to the last committed position.
    Transient,
    /// Stop; an operator must act.
    Definite,
    /// Another instance with the same `name` took over: stop at once, never abort or retry.
    Fenced,
    /// Shutdown gave up on a Kafka transaction that did not finish within
    /// `shutdown_timeout_ms`: stop (exit 4), never report it as committed.
    Unfinished,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ErrorKind::Transient => "transient",
            ErrorKind::Definite => "definite",
            ErrorKind::Fenced => "fenced",
            ErrorKind::Unfinished => "unfinished",
        })
    }
}

/// A pipeline error: its kind plus a message that says what happened, where, and how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Worth a retry after a rewind.
    #[error("{0}")]
    Transient(String),
    /// Needs an operator.
    #[error("{0}")]
    Definite(String),
    /// The producer was fenced by a newer instance with the same transactional id.
    #[error("{0}")]
    Fenced(String),
    /// Shutdown stopped waiting for a Kafka transaction (its outcome is unknown).
    #[error("{0}")]
    Unfinished(String),
}

impl Error {
    /// A transient error with the given message.
    pub fn transient(msg: impl Into<String>) -> Self {
        Error::Transient(msg.into())
    }

    /// A definite error with the given message.
    pub fn definite(msg: impl Into<String>) -> Self {
        Error::Definite(msg.into())
    }

    /// The action this error needs.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Transient(_) => ErrorKind::Transient,
            Error::Definite(_) => ErrorKind::Definite,
            Error::Fenced(_) => ErrorKind::Fenced,
            Error::Unfinished(_) => ErrorKind::Unfinished,
        }
    }

    /// The same error with context prepended to its message.
    pub fn context(self, ctx: impl fmt::Display) -> Self {
        match self {
            Error::Transient(m) => Error::Transient(format!("{ctx}: {m}")),
            Error::Definite(m) => Error::Definite(format!("{ctx}: {m}")),
            Error::Fenced(m) => Error::Fenced(format!("{ctx}: {m}")),
            Error::Unfinished(m) => Error::Unfinished(format!("{ctx}: {m}")),
        }
    }
}

/// Classifies a MySQL client error: network and server-availability problems are transient,
/// access and protocol problems definite.
pub fn classify_mysql(err: &mysql_async::Error) -> ErrorKind {
    use mysql_async::Error as E;
    match err {
        E::Io(_) => ErrorKind::Transient,
        E::Server(se) => match se.code {
            // ER_ACCESS_DENIED_ERROR, ER_DBACCESS_DENIED, ER_SPECIFIC_ACCESS_DENIED,
            // ER_TABLEACCESS_DENIED, ER_MASTER_FATAL_ERROR_READING_BINLOG (purged / bad position)
            1045 | 1044 | 1227 | 1142 | 1236 => ErrorKind::Definite,
            // ER_CON_COUNT_ERROR, ER_SERVER_SHUTDOWN, ER_QUERY_INTERRUPTED, lock waits
            1040 | 1053 | 1317 | 1205 | 1213 => ErrorKind::Transient,
            _ => ErrorKind::Definite,
        },
        E::Driver(_) => ErrorKind::Transient,
        _ => ErrorKind::Definite,
    }
}

/// Builds a pipeline error from a MySQL client error, with context.
pub fn mysql_error(ctx: impl fmt::Display, err: &mysql_async::Error) -> Error {
    let msg = format!("{ctx}: {err}");
    match classify_mysql(err) {
        ErrorKind::Transient => Error::Transient(msg),
        _ => Error::Definite(msg),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_keeps_kind() {
        let e = Error::transient("broker gone").context("committing");
        assert_eq!(e.kind(), ErrorKind::Transient);
        assert_eq!(e.to_string(), "committing: broker gone");
        let e = Error::Fenced("x".into()).context("y");
        assert_eq!(e.kind(), ErrorKind::Fenced);
        let e = Error::Unfinished("commit".into()).context("shutdown");
        assert_eq!(e.kind(), ErrorKind::Unfinished);
        assert_eq!(e.to_string(), "shutdown: commit");
    }
}
