//! The error vocabulary of sluice, typed by the action each error needs.
//!
//! * [`ErrorKind::Transient`]: the condition may go away by itself (a dropped connection, a broker
//!   that is electing a leader, an abortable Kafka transaction). The pipeline aborts the open Kafka
//!   transaction, rewinds the source to the last *committed* position and retries with backoff.
//! * [`ErrorKind::Definite`]: retrying cannot help (bad configuration, a purged binlog, a fenced
//!   producer, a record the topic refuses). The pipeline stops and tells the operator what to do.
//! * [`ErrorKind::Unfinished`]: a shutdown ran out of `shutdown_timeout_ms` while a Kafka call
//!   (a commit, a flush) was still waiting. The pipeline gives up on it (best-effort bounded
//!   abort) and exits 4; the outcome of that transaction is settled by the next run's fencing,
//!   which resumes right after whatever was committed.
//!
//! Every error carries a human sentence that names the setting or the place (table, binlog
//! position) involved. Secrets never appear in these messages. Beside it an error keeps its
//! [`Cause`] when there is a typed one: the server's error code for MySQL/MariaDB errors
//! ([`Error::server_code`]), or the module error it was made from ([`Error::cause_as`]).

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

/// A pipeline error: the action it needs ([`ErrorKind`]), a message that says what happened,
/// where, and how to fix it, and the [`Cause`] it came from when that is a typed error. Its
/// `Display` is the message alone; [`std::error::Error::source`] gives a module error cause.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    cause: Option<Cause>,
}

/// What an [`Error`] came from, kept beside its message so that callers decide on the typed
/// value, never on the text.
#[derive(Debug)]
pub enum Cause {
    /// An error the MySQL or MariaDB server sent: its error code (e.g. 1236,
    /// `ER_MASTER_FATAL_ERROR_READING_BINLOG`) and SQLSTATE.
    Server {
        /// The server's error code.
        code: u16,
        /// The SQLSTATE.
        state: String,
    },
    /// A typed error of another module (row decoding, schema, configuration, registry, …).
    Module(Box<dyn std::error::Error + Send + Sync + 'static>),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.cause {
            Some(Cause::Module(e)) => Some(e.as_ref()),
            _ => None,
        }
    }
}

impl Error {
    /// An error of `kind` with the given message and no cause.
    pub fn new(kind: ErrorKind, msg: impl Into<String>) -> Self {
        Error {
            kind,
            message: msg.into(),
            cause: None,
        }
    }

    /// A transient error with the given message.
    pub fn transient(msg: impl Into<String>) -> Self {
        Error::new(ErrorKind::Transient, msg)
    }

    /// A definite error with the given message.
    pub fn definite(msg: impl Into<String>) -> Self {
        Error::new(ErrorKind::Definite, msg)
    }

    /// A fenced error with the given message: another instance owns the pipeline.
    pub fn fenced(msg: impl Into<String>) -> Self {
        Error::new(ErrorKind::Fenced, msg)
    }

    /// An unfinished error with the given message: shutdown stopped waiting for Kafka.
    pub fn unfinished(msg: impl Into<String>) -> Self {
        Error::new(ErrorKind::Unfinished, msg)
    }

    /// A definite error whose message is `e`'s and whose cause is `e` itself.
    pub fn definite_from<E: std::error::Error + Send + Sync + 'static>(e: E) -> Self {
        Error::definite(e.to_string()).caused_by(e)
    }

    /// The same error with `e` as its cause (the message is unchanged).
    pub fn caused_by<E: std::error::Error + Send + Sync + 'static>(mut self, e: E) -> Self {
        self.cause = Some(Cause::Module(Box::new(e)));
        self
    }

    /// The same error with `cause` as its cause (the message is unchanged).
    pub fn with_cause(mut self, cause: Cause) -> Self {
        self.cause = Some(cause);
        self
    }

    /// The action this error needs.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message (what `Display` writes).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// What the error came from, if that is known.
    pub fn cause(&self) -> Option<&Cause> {
        self.cause.as_ref()
    }

    /// The MySQL/MariaDB server error code, when the server sent the error.
    pub fn server_code(&self) -> Option<u16> {
        match self.cause {
            Some(Cause::Server { code, .. }) => Some(code),
            _ => None,
        }
    }

    /// The cause as module error type `E`, when it is one.
    pub fn cause_as<E: std::error::Error + 'static>(&self) -> Option<&E> {
        match &self.cause {
            Some(Cause::Module(e)) => e.downcast_ref::<E>(),
            _ => None,
        }
    }

    /// The same error with its message rewritten by `f` (kind and cause kept).
    pub fn map_message(mut self, f: impl FnOnce(&str) -> String) -> Self {
        self.message = f(&self.message);
        self
    }

    /// The same error with context prepended to its message (kind and cause kept).
    pub fn context(mut self, ctx: impl fmt::Display) -> Self {
        self.message = format!("{ctx}: {}", self.message);
        self
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

/// Builds a pipeline error from a MySQL client error, with context; a server error keeps its
/// code and SQLSTATE as the cause.
pub fn mysql_error(ctx: impl fmt::Display, err: &mysql_async::Error) -> Error {
    let msg = format!("{ctx}: {err}");
    let error = match classify_mysql(err) {
        ErrorKind::Transient => Error::transient(msg),
        _ => Error::definite(msg),
    };
    match err {
        mysql_async::Error::Server(se) => error.with_cause(Cause::Server {
            code: se.code,
            state: se.state.clone(),
        }),
        _ => error,
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
        let e = Error::fenced("x").context("y");
        assert_eq!(e.kind(), ErrorKind::Fenced);
        let e = Error::unfinished("commit").context("shutdown");
        assert_eq!(e.kind(), ErrorKind::Unfinished);
        assert_eq!(e.to_string(), "shutdown: commit");
    }

    #[test]
    fn the_cause_survives_context_and_the_message_is_unchanged() {
        let e = Error::definite_from(std::fmt::Error).context("writing");
        assert_eq!(
            e.to_string(),
            "writing: an error occurred when formatting an argument"
        );
        assert!(e.cause_as::<std::fmt::Error>().is_some());
        assert!(std::error::Error::source(&e).is_some());
        assert_eq!(e.server_code(), None);
    }

    #[test]
    fn a_server_error_keeps_its_code() {
        let server = mysql_async::Error::Server(mysql_async::ServerError {
            code: 1236,
            message: "Could not find first log file name in binary log index file".into(),
            state: "HY000".into(),
        });
        let e = mysql_error("requesting the binlog stream", &server).context("attempt");
        assert_eq!(e.kind(), ErrorKind::Definite);
        assert_eq!(e.server_code(), Some(1236));
        assert!(e
            .to_string()
            .starts_with("attempt: requesting the binlog stream: "));
        let io = mysql_async::Error::Io(mysql_async::IoError::Io(std::io::Error::other("reset")));
        assert_eq!(mysql_error("x", &io).server_code(), None);
    }
}
