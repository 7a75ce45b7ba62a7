//! The API's connections: accepted from the bound listener, at most `api.max_connections` at
//! once, each served over HTTP/1.1 with `api.header_timeout_ms` for a request's headers (and
//! so for a kept-alive connection's idle time).
//!
//! Invariant: a connection beyond the cap is closed as soon as it is accepted, and one that
//! sends no complete request head within the header timeout is closed; neither holds a file
//! descriptor the pipeline's Kafka and source sockets need. On shutdown the listener closes
//! and every connection finishes the answer it is writing, then closes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

/// The limits of the connections.
#[derive(Debug, Clone, Copy)]
pub(super) struct ConnectionLimits {
    /// Connections served at once.
    pub(super) max_connections: usize,
    /// Time for a request's headers, from the connection's start or the previous answer.
    pub(super) header_timeout: Duration,
}

/// When a refused connection was last logged (ms since the epoch), so a flood logs once a
/// few seconds.
static LAST_REFUSAL_LOGGED_MS: AtomicU64 = AtomicU64::new(0);

/// Serves `app` on `listener` until `shutdown` turns true (or its sender is dropped).
pub(super) async fn serve_connections(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    mut shutdown: watch::Receiver<bool>,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let (closing, closing_rx) = watch::channel(false);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = shutdown.wait_for(|stop| *stop) => break,
        };
        let (tcp, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors, or the peer reset before accept: wait a little
                // rather than spin.
                tracing::warn!(error = %e, "the api could not accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            drop(tcp);
            log_refusal(peer, limits.max_connections);
            continue;
        };
        let service = TowerToHyperService::new(app.clone());
        let mut closing_rx = closing_rx.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .keep_alive(true);
            let conn = builder.serve_connection(TokioIo::new(tcp), service);
            tokio::pin!(conn);
            let mut shutting_down = false;
            loop {
                tokio::select! {
                    result = conn.as_mut() => {
                        if let Err(e) = result {
                            tracing::debug!(error = %e, %peer, "api connection ended");
                        }
                        break;
                    }
                    _ = closing_rx.wait_for(|c| *c), if !shutting_down => {
                        // Then go on polling the connection until its answer is written.
                        conn.as_mut().graceful_shutdown();
                        shutting_down = true;
                    }
                }
            }
        });
    }
    let _ = closing.send(true);
}

fn log_refusal(peer: std::net::SocketAddr, max: usize) {
    let now = crate::model::clock::now_ms();
    let last = LAST_REFUSAL_LOGGED_MS.load(Ordering::Relaxed);
    if now.saturating_sub(last) >= 10_000
        && LAST_REFUSAL_LOGGED_MS
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    {
        tracing::warn!(
            %peer,
            max_connections = max,
            "the api refused a connection: api.max_connections are open (logged once per 10 s)"
        );
    }
}
