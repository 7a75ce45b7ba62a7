//! `source.query_timeout_ms`: no round trip on a query connection (preflight, schema and
//! position queries, snapshot chunk reads; everything on a client-library `Conn`, not the
//! binlog stream) waits longer than the timeout.
//!
//! Invariant: every future that waits for the source on a query connection is awaited through
//! [`Timed::timed`]. A timeout is a transient error naming the setting, the query's purpose and
//! the time waited; the attempt ends and every connection of it is dropped (a connection whose
//! query was abandoned half-way is never used again). The timeout bounds one round trip: a
//! query until its first answer, and a streamed result (snapshot chunks, scans) from one row to
//! the next, so a long read that keeps sending rows never times out.
//!
//! The client library has no read timeout of its own, and the connections are handed to many
//! functions that take `&mut Conn`; the timeout is therefore one process-wide setting, set from
//! the configuration before the first connection ([`set_timeout`]).

use std::fmt::Display;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::config::DEFAULT_QUERY_TIMEOUT_MS;
use crate::error::{Error, Result};

/// The timeout in milliseconds; 0 = none.
static TIMEOUT_MS: AtomicU64 = AtomicU64::new(DEFAULT_QUERY_TIMEOUT_MS);

/// Sets `source.query_timeout_ms` (`None`: no timeout) for every query connection.
pub fn set_timeout(timeout: Option<Duration>) {
    let ms = timeout.map_or(0, |t| {
        u64::try_from(t.as_millis()).unwrap_or(u64::MAX).max(1)
    });
    TIMEOUT_MS.store(ms, Ordering::Relaxed);
}

/// The current timeout (`None`: none).
pub fn timeout() -> Option<Duration> {
    match TIMEOUT_MS.load(Ordering::Relaxed) {
        0 => None,
        ms => Some(Duration::from_millis(ms)),
    }
}

/// Awaits `fut`, one round trip with the source, for at most `limit`; `purpose` says what the
/// query was for (in the error).
pub fn within<F: Future, P: Display>(limit: Option<Duration>, purpose: P, fut: F) -> Within<F, P> {
    Within {
        inner: match limit {
            Some(limit) => Inner::Bounded(Box::pin(tokio::time::timeout(limit, fut)), limit),
            None => Inner::Unbounded(Box::pin(fut)),
        },
        purpose,
        started: Instant::now(),
    }
}

/// The future of [`within`] (a named type, so that it is `Send` whenever the query's is).
pub struct Within<F, P> {
    inner: Inner<F>,
    purpose: P,
    started: Instant,
}

enum Inner<F> {
    Bounded(Pin<Box<tokio::time::Timeout<F>>>, Duration),
    Unbounded(Pin<Box<F>>),
}

impl<F: Future, P: Display + Unpin> Future for Within<F, P> {
    type Output = Result<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Every field is `Unpin` (the query's future is boxed).
        let this = self.get_mut();
        match &mut this.inner {
            Inner::Unbounded(f) => f.as_mut().poll(cx).map(Ok),
            Inner::Bounded(f, limit) => match f.as_mut().poll(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(Ok(v)) => Poll::Ready(Ok(v)),
                Poll::Ready(Err(_)) => Poll::Ready(Err(Error::transient(format!(
                    "{}: no answer from the source for {:.1} s (source.query_timeout_ms = {}); \
                     the connection is presumed dead and the attempt is retried; fix: if the \
                     server is only slow (a long query, a busy or locked server), raise \
                     source.query_timeout_ms (or SLUICE_SOURCE_QUERY_TIMEOUT_MS; 0 turns the \
                     timeout off)",
                    this.purpose,
                    this.started.elapsed().as_secs_f64(),
                    limit.as_millis()
                )))),
            },
        }
    }
}

/// `.timed(purpose)` on any future of a query connection: [`within`] the configured timeout.
pub trait Timed: Future + Sized {
    /// Awaits the future under `source.query_timeout_ms`.
    fn timed<P: Display + Unpin>(self, purpose: P) -> Within<Self, P> {
        within(timeout(), purpose, self)
    }
}

impl<F: Future> Timed for F {}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_silent_round_trip_is_a_transient_error_naming_the_setting_and_the_purpose() {
        let e = within(
            Some(Duration::from_millis(50)),
            "reading the binlog settings",
            std::future::pending::<()>(),
        )
        .await
        .unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Transient);
        let text = e.to_string();
        for part in [
            "reading the binlog settings",
            "source.query_timeout_ms = 50",
            "for 0.",
            "SLUICE_SOURCE_QUERY_TIMEOUT_MS",
        ] {
            assert!(text.contains(part), "{part}: {text}");
        }
    }

    #[tokio::test]
    async fn an_answer_in_time_passes_and_no_timeout_adds_none() {
        let v = within(Some(Duration::from_secs(60)), "x", async { 7 }).await;
        assert_eq!(v.unwrap(), 7);
        let later = async {
            tokio::task::yield_now().await;
            8
        };
        assert_eq!(within(None, "x", later).await.unwrap(), 8);
    }

    #[test]
    fn the_setting_round_trips() {
        set_timeout(Some(Duration::from_millis(2500)));
        assert_eq!(timeout(), Some(Duration::from_millis(2500)));
        set_timeout(None);
        assert_eq!(timeout(), None);
        set_timeout(Some(Duration::from_millis(DEFAULT_QUERY_TIMEOUT_MS)));
    }
}
