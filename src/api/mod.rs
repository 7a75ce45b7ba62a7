//! The HTTP API of `sluice run` (`[api]`, axum on the runtime the pipeline runs on).
//!
//! | method and path | answer |
//! | --- | --- |
//! | `GET /healthz` | 200 `{"status":"ok"}` |
//! | `POST /snapshots` | an [`AdhocRequest`] (`{"tables":["db.t"],"where":"id > 10"}`) → 202 [`Accepted`]; 400 for a wrong request (unreadable JSON, unknown table, ...), 503 when the pipeline cannot take it now |
//! | `GET /snapshots` | 200 `{"snapshot": <SnapshotProgress or null>}` |
//!
//! Every error is JSON `{"error": "..."}` with a sentence saying what to do; unknown paths are
//! 404, a known path with another method 405.
//!
//! **Who may change things.** Endpoints that change something take the [`Mutating`] extractor:
//! with `api.token` set they need `Authorization: Bearer <token>` (401 otherwise); without
//! one they are open when `api.listen` is a loopback address and refused (403) on any other
//! (see [`mutation_access`]). Reading endpoints are open.
//!
//! New endpoints go into [`router`]: reading ones as they are, changing ones with a
//! [`Mutating`] argument.
//!
//! [`client`] is the other end: `sluice snapshot`.

pub mod client;
#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinHandle;

use crate::config::{ApiConfig, Secret};
use crate::error::{Error, Result};
use crate::snapshot::adhoc::{AdhocRequest, Rejected, SnapshotControl};

/// Largest request body accepted, in bytes.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// Requests handled at the same time; more are answered 503 at once.
pub const MAX_IN_FLIGHT: usize = 64;

/// What the API serves from: the snapshot control (requests to the stream, its progress) and
/// the token of the mutating endpoints.
#[derive(Clone)]
pub struct ApiState {
    control: SnapshotControl,
    token: Option<Secret<String>>,
}

impl ApiState {
    /// State for `control`; `token` (when `Some` and not empty) is required by the mutating
    /// endpoints.
    pub fn new(control: SnapshotControl, token: Option<String>) -> Self {
        ApiState {
            control,
            token: token.filter(|t| !t.is_empty()).map(Secret::new),
        }
    }
}

/// Who may call the mutating endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MutationAccess {
    /// Callers presenting `Authorization: Bearer <api.token>`.
    Token,
    /// Anyone who can connect: no token, but the API listens on a loopback address only.
    Open,
    /// Nobody: no token and the API listens on a non-loopback address.
    Refused,
}

/// The rule for the mutating endpoints: a configured token is always required; without one
/// they are open on a loopback `listen` address and refused on any other (an unspecified
/// address such as `0.0.0.0` listens on every interface, so it is not loopback).
pub fn mutation_access(listen: &SocketAddr, token_set: bool) -> MutationAccess {
    if token_set {
        MutationAccess::Token
    } else if listen.ip().is_loopback() {
        MutationAccess::Open
    } else {
        MutationAccess::Refused
    }
}

struct Shared {
    control: SnapshotControl,
    token: Option<Secret<String>>,
    access: MutationAccess,
    listen: SocketAddr,
    in_flight: Semaphore,
}

/// A running API server.
pub struct ApiServer {
    /// The address it listens on (with the port chosen when `api.listen` has port 0).
    pub addr: SocketAddr,
    task: JoinHandle<()>,
}

impl ApiServer {
    /// Waits up to `grace` for the server to stop (after its shutdown signal: it stops taking
    /// connections and lets requests in progress finish), then aborts it.
    pub async fn join(self, grace: Duration) {
        let mut task = self.task;
        if tokio::time::timeout(grace, &mut task).await.is_err() {
            tracing::warn!(
                grace = ?grace,
                "api requests still in progress at shutdown; dropping them"
            );
            task.abort();
        }
    }
}

/// Binds `api.listen` and serves the API until `shutdown` turns true (or its sender is
/// dropped). Binding happens before this returns: a taken port or an address of no local
/// interface is a definite error naming `api.listen`.
pub async fn serve(
    cfg: &ApiConfig,
    state: ApiState,
    mut shutdown: watch::Receiver<bool>,
) -> Result<ApiServer> {
    let listen = cfg.listen_addr().ok_or_else(|| {
        Error::definite(format!(
            "api.listen: found {:?}, which is not a socket address; expected an IP address \
             and a port, e.g. \"127.0.0.1:8089\"",
            cfg.listen
        ))
    })?;
    let listener = TcpListener::bind(listen).await.map_err(|e| {
        Error::definite(format!(
            "api.listen: cannot listen on {listen}: {e}; fix: choose a free port (or another \
             address) in api.listen, or set api.enabled = false to run without the API"
        ))
    })?;
    let addr = listener.local_addr().map_err(|e| {
        Error::definite(format!(
            "api.listen: cannot read the address bound for {listen}: {e}"
        ))
    })?;
    let access = mutation_access(&listen, state.token.is_some());
    let shared = Arc::new(Shared {
        control: state.control,
        token: state.token,
        access,
        listen: addr,
        in_flight: Semaphore::new(MAX_IN_FLIGHT),
    });
    if access == MutationAccess::Refused {
        tracing::warn!(
            %addr,
            "the api listens on a non-loopback address without api.token: its mutating \
             endpoints (POST /snapshots) are refused; set api.token to use them"
        );
    }
    let app = router(shared);
    let task = tokio::spawn(async move {
        let stop = async move {
            let _ = shutdown.wait_for(|stop| *stop).await;
        };
        if let Err(e) = axum::serve(listener, app)
            .with_graceful_shutdown(stop)
            .await
        {
            tracing::warn!(error = %e, "the api server stopped");
        }
    });
    tracing::info!(%addr, mutating = ?access, "api listening");
    Ok(ApiServer { addr, task })
}

/// The routes. Reading endpoints take only the state; changing ones also [`Mutating`].
fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/snapshots", get(snapshot_progress).post(request_snapshot))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(
            shared.clone(),
            limit_in_flight,
        ))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(shared)
}

/// An error answer: `{"error": message}` with its status.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(json!({ "error": self.message }))).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"sluice\""),
            );
        }
        response
    }
}

/// Proof that the caller may use a mutating endpoint (see [`mutation_access`]); the rejection
/// is 401 (no or wrong token) or 403 (refused without a token).
pub struct Mutating;

impl FromRequestParts<Arc<Shared>> for Mutating {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        shared: &Arc<Shared>,
    ) -> Result<Self, Self::Rejection> {
        match shared.access {
            MutationAccess::Open => Ok(Mutating),
            MutationAccess::Refused => Err(ApiError::new(
                StatusCode::FORBIDDEN,
                format!(
                    "{} {} is refused: the API listens on {}, which is not a loopback \
                     address, and no token is configured; set api.token (or \
                     SLUICE_API_TOKEN) and send `Authorization: Bearer <token>`, or listen \
                     on a loopback address (api.listen = \"127.0.0.1:8089\")",
                    parts.method,
                    parts.uri.path(),
                    shared.listen
                ),
            )),
            MutationAccess::Token => {
                let expected = shared.token.as_ref().map(|t| t.expose().as_bytes());
                let given = parts
                    .headers
                    .get(header::AUTHORIZATION)
                    .and_then(|v| v.to_str().ok())
                    .and_then(bearer_token);
                match (given, expected) {
                    (Some(given), Some(expected)) if same_bytes(given.as_bytes(), expected) => {
                        Ok(Mutating)
                    }
                    (None, _) => Err(ApiError::new(
                        StatusCode::UNAUTHORIZED,
                        "this endpoint needs `Authorization: Bearer <token>` with the token \
                         of api.token",
                    )),
                    _ => Err(ApiError::new(
                        StatusCode::UNAUTHORIZED,
                        "the bearer token is not api.token",
                    )),
                }
            }
        }
    }
}

/// The token of an `Authorization: Bearer <token>` value (the scheme in any case).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Compares in time independent of where the bytes differ.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn limit_in_flight(
    State(shared): State<Arc<Shared>>,
    request: Request,
    next: Next,
) -> Response {
    match shared.in_flight.try_acquire() {
        Ok(_permit) => next.run(request).await,
        Err(_) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the API is busy ({MAX_IN_FLIGHT} requests in progress); try again shortly"),
        )
        .into_response(),
    }
}

async fn healthz() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok" }))
}

async fn snapshot_progress(State(shared): State<Arc<Shared>>) -> Json<serde_json::Value> {
    Json(json!({ "snapshot": shared.control.progress().as_deref() }))
}

async fn request_snapshot(
    _: Mutating,
    State(shared): State<Arc<Shared>>,
    body: std::result::Result<axum::body::Bytes, BytesRejection>,
) -> std::result::Result<Response, ApiError> {
    let body = body.map_err(|e| ApiError::new(e.status(), format!("request body: {e}")))?;
    let request: AdhocRequest = serde_json::from_slice(&body).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!(
                "the body is not a snapshot request ({e}); expected JSON such as \
                 {{\"tables\": [\"db.table\"], \"where\": \"id > 10\"}} (\"where\" optional)"
            ),
        )
    })?;
    match shared.control.request(request.clone()).await {
        Ok(accepted) => {
            tracing::info!(
                id = %accepted.id,
                tables = ?accepted.tables,
                filter = request.filter.as_deref(),
                "ad-hoc snapshot requested over the api"
            );
            Ok((StatusCode::ACCEPTED, Json(accepted)).into_response())
        }
        Err(Rejected::Invalid(m)) => Err(ApiError::new(StatusCode::BAD_REQUEST, m)),
        Err(Rejected::Unavailable(m)) => Err(ApiError::new(StatusCode::SERVICE_UNAVAILABLE, m)),
    }
}

async fn not_found(request: Request) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!(
            "no endpoint {} {}; the endpoints are GET /healthz, GET /snapshots and POST \
             /snapshots",
            request.method(),
            request.uri().path()
        ),
    )
}

async fn method_not_allowed(request: Request) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!(
            "{} is not allowed on {}; the endpoints are GET /healthz, GET /snapshots and POST \
             /snapshots",
            request.method(),
            request.uri().path()
        ),
    )
}
