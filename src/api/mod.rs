//! The HTTP API of `sluice run` (`[api]`, axum on the runtime the pipeline runs on).
//!
//! One listener serves every pipeline of the process: the directory [`Pipelines`] holds them
//! by name. The paths about one pipeline exist twice: `/pipelines/{name}/...` acts on
//! pipeline `name` (404 naming the pipelines when there is none of that name), and the
//! single-pipeline paths (`/status`, `/pause`, ...) act on the only pipeline: with several
//! they answer 409 naming them and the path to use, before the first started 503.
//!
//! | method and path | auth | answer |
//! | --- | --- | --- |
//! | `GET /healthz` | – | 200 `{"status":"ok"}` while the process serves requests |
//! | `GET /readyz` | – | 200 [`Readiness`] when streaming (or snapshotting) within `api.ready_max_lag_seconds`; 503 with it (and its `reason`) otherwise. With several pipelines `{"ready": bool, "pipelines": {"<name>": Readiness}}`, 200 when every one is ready |
//! | `GET /status` | – | 200 [`Status`] plus `"paused"`: whether a pause is requested |
//! | `GET /config` | – | 200 the effective configuration, secrets as `***` |
//! | `GET /tables` | – | 200 `{"tables": [TableInfo]}` (see [`TableInfo`]) |
//! | `GET /metrics` | – | 200 the Prometheus text format (`crate::metrics`), every pipeline's series |
//! | `POST /pause` | [`Mutating`] | 202 `{"paused":true,"changed":true}`; 200 with `"changed":false` when already paused |
//! | `POST /resume` | [`Mutating`] | 202 `{"paused":false,"changed":true}`; 200 with `"changed":false` when not paused |
//! | `POST /snapshots` | [`Mutating`] | an [`AdhocRequest`] (`{"tables":["db.t"],"where":"id > 10"}`) → 202 [`Accepted`]; 400 for a wrong request (unreadable JSON, unknown table, ...), 503 when the pipeline cannot take it now (also while paused) |
//! | `GET /snapshots` | – | 200 `{"snapshot": <SnapshotProgress or null>}` |
//! | `GET /openapi.yaml` | – | 200 the OpenAPI 3.0 document of this table (`docs/openapi.yaml`) |
//! | `GET /pipelines` | – | 200 `{"pipelines": [{"name", "state", "paused"}]}`, sorted by name |
//! | `GET /cluster` | – | cluster mode: 200 `{"group", "client_id", "assigned", "rebalances", "pipelines": [{"name", "assigned", "state"}]}`; 404 otherwise |
//! | `GET /pipelines/{name}/status`, `.../readyz`, `.../config`, `.../tables`, `.../snapshots` | – | as the path without `/pipelines/{name}`, for pipeline `name` |
//! | `POST /pipelines/{name}/pause`, `.../resume`, `.../snapshots` | [`Mutating`] | as the path without `/pipelines/{name}`, for pipeline `name` |
//!
//! Every error is JSON `{"error": "..."}` with a sentence saying what to do; unknown paths are
//! 404, a known path with another method 405.
//!
//! **Who may change things.** Endpoints that change something take the [`Mutating`] extractor:
//! with `api.token` set they need `Authorization: Bearer <token>` (401 otherwise); without
//! one they are open when `api.listen` is a loopback address and refused (403) on any other
//! (see [`mutation_access`]). Reading endpoints are open.
//!
//! **Pause and resume** only set the flag of [`Ops`]; the run loop obeys it (`crate::ops`):
//! the state in `GET /status` becomes `paused` once the source stopped at a transaction
//! boundary, and `starting`, then `streaming`, after a resume.
//!
//! [`ENDPOINTS`] is the one list of what the API serves: the router is built from it, the
//! 404 and 405 answers name its entries, and the tests check it against the OpenAPI document
//! (`docs/openapi.yaml`). A new endpoint is a new entry there (changing ones marked
//! `mutating` and taking a [`Mutating`] argument) and in the document; one about a pipeline
//! takes the `Pipeline` extractor (`pipelines.rs`), which resolves both kinds of path.
//!
//! [`client`] is the other end: `sluice snapshot`.
//!
//! [`Readiness`]: crate::ops::Readiness
//! [`Status`]: crate::metrics::Status
//! [`TableInfo`]: crate::ops::TableInfo
//! [`Ops`]: crate::ops::Ops
//! [`Accepted`]: crate::snapshot::adhoc::Accepted
//! [`AdhocRequest`]: crate::snapshot::adhoc::AdhocRequest

mod access;
pub mod client;
mod error;
mod guard;
mod handlers;
mod pipelines;
mod server;
#[cfg(test)]
mod tests;

use access::Shared;
pub use access::{mutation_access, Mutating, MutationAccess};
pub use error::ApiError;
pub use handlers::{METRICS_CONTENT_TYPE, OPENAPI_CONTENT_TYPE, OPENAPI_YAML};
pub use pipelines::{ClusterView, PipelineHandle, Pipelines};

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{on, MethodFilter, MethodRouter};
use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinHandle;

use crate::config::{ApiConfig, Secret};
use crate::error::{Error, Result};
use handlers::*;

/// Largest request body accepted, in bytes.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// Requests handled at the same time; more are answered 503 at once.
pub const MAX_IN_FLIGHT: usize = 64;

/// An HTTP method the API serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `GET` (which also answers `HEAD`).
    Get,
    /// `POST`.
    Post,
}

impl Method {
    /// The method's name, as in a request line.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
        }
    }

    fn filter(self) -> MethodFilter {
        match self {
            Method::Get => MethodFilter::GET,
            Method::Post => MethodFilter::POST,
        }
    }
}

/// One endpoint of the API: an entry of [`ENDPOINTS`].
pub struct Endpoint {
    /// Its method.
    pub method: Method,
    /// Its path.
    pub path: &'static str,
    /// Whether it changes something: it takes [`Mutating`] (bearer token, see
    /// [`mutation_access`]).
    pub mutating: bool,
    /// Its handler, on the method given.
    handler: fn(MethodFilter) -> MethodRouter<Arc<Shared>>,
}

const fn endpoint(
    method: Method,
    path: &'static str,
    mutating: bool,
    handler: fn(MethodFilter) -> MethodRouter<Arc<Shared>>,
) -> Endpoint {
    Endpoint {
        method,
        path,
        mutating,
        handler,
    }
}

/// Everything the API serves, in the order the 404 answer lists it. The router is built from
/// this list; `docs/openapi.yaml` documents exactly these (a test checks both).
pub const ENDPOINTS: &[Endpoint] = &[
    endpoint(Method::Get, "/healthz", false, |m| on(m, healthz)),
    endpoint(Method::Get, "/readyz", false, |m| on(m, readyz)),
    endpoint(Method::Get, "/status", false, |m| on(m, status)),
    endpoint(Method::Get, "/config", false, |m| on(m, config)),
    endpoint(Method::Get, "/tables", false, |m| on(m, tables)),
    endpoint(Method::Get, "/metrics", false, |m| on(m, metrics)),
    endpoint(Method::Post, "/pause", true, |m| on(m, pause)),
    endpoint(Method::Post, "/resume", true, |m| on(m, resume)),
    endpoint(Method::Get, "/snapshots", false, |m| {
        on(m, snapshot_progress)
    }),
    endpoint(Method::Post, "/snapshots", true, |m| {
        on(m, request_snapshot)
    }),
    endpoint(Method::Get, "/openapi.yaml", false, |m| on(m, openapi)),
    endpoint(Method::Get, "/pipelines", false, |m| on(m, pipelines)),
    endpoint(Method::Get, "/cluster", false, |m| on(m, cluster)),
    endpoint(Method::Get, "/pipelines/{name}/status", false, |m| {
        on(m, status)
    }),
    endpoint(Method::Get, "/pipelines/{name}/readyz", false, |m| {
        on(m, readyz)
    }),
    endpoint(Method::Get, "/pipelines/{name}/config", false, |m| {
        on(m, config)
    }),
    endpoint(Method::Get, "/pipelines/{name}/tables", false, |m| {
        on(m, tables)
    }),
    endpoint(Method::Post, "/pipelines/{name}/pause", true, |m| {
        on(m, pause)
    }),
    endpoint(Method::Post, "/pipelines/{name}/resume", true, |m| {
        on(m, resume)
    }),
    endpoint(Method::Get, "/pipelines/{name}/snapshots", false, |m| {
        on(m, snapshot_progress)
    }),
    endpoint(Method::Post, "/pipelines/{name}/snapshots", true, |m| {
        on(m, request_snapshot)
    }),
];

/// `GET /healthz, GET /readyz, ...`: the endpoints of [`ENDPOINTS`] for which `pick` holds.
fn endpoint_list(pick: impl Fn(&Endpoint) -> bool) -> String {
    ENDPOINTS
        .iter()
        .filter(|e| pick(e))
        .map(|e| format!("{} {}", e.method.as_str(), e.path))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether the request path `path` is one of endpoint path `template`: the same segments, a
/// `{parameter}` segment standing for any non-empty one.
fn path_fits(template: &str, path: &str) -> bool {
    let (mut t, mut p) = (template.split('/'), path.split('/'));
    loop {
        match (t.next(), p.next()) {
            (None, None) => return true,
            (Some(t), Some(p)) if t == p => {}
            (Some(t), Some(p)) if t.starts_with('{') && t.ends_with('}') && !p.is_empty() => {}
            _ => return false,
        }
    }
}

/// What the API serves from: the directory of the pipelines (each with its snapshot control
/// and operators' handle) and the token of the mutating endpoints.
#[derive(Clone)]
pub struct ApiState {
    pipelines: Pipelines,
    token: Option<Secret<String>>,
    metrics: prometheus::Registry,
}

impl ApiState {
    /// State for `pipelines` (shared: pipelines added or removed later are served too);
    /// `token` (when `Some` and not empty) is required by the mutating endpoints; `metrics` is
    /// the registry `GET /metrics` renders (the process's, `crate::metrics::registry`, which
    /// holds every pipeline's series).
    pub fn new(pipelines: Pipelines, token: Option<String>, metrics: prometheus::Registry) -> Self {
        ApiState {
            pipelines,
            token: token.filter(|t| !t.is_empty()).map(Secret::new),
            metrics,
        }
    }
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
    shutdown: watch::Receiver<bool>,
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
        pipelines: state.pipelines,
        token: state.token,
        metrics: state.metrics,
        access,
        listen: addr,
        in_flight: Semaphore::new(MAX_IN_FLIGHT),
        allowed_hosts: cfg.allowed_hosts.clone(),
        allowed_origins: cfg.allowed_origins.clone(),
        request_timeout: cfg.request_timeout(),
    });
    if access == MutationAccess::Refused {
        tracing::warn!(
            %addr,
            refused = %endpoint_list(|e| e.mutating),
            "the api listens on a non-loopback address without api.token: its mutating \
             endpoints are refused; set api.token to use them"
        );
    }
    let app = router(shared);
    let limits = server::ConnectionLimits {
        max_connections: cfg.max_connections.max(1),
        header_timeout: cfg.header_timeout(),
    };
    let task = tokio::spawn(server::serve_connections(listener, app, limits, shutdown));
    tracing::info!(%addr, mutating = ?access, "api listening");
    Ok(ApiServer { addr, task })
}

/// The routes of [`ENDPOINTS`]. Reading endpoints take only the state; changing ones also
/// [`Mutating`].
fn router(shared: Arc<Shared>) -> Router {
    ENDPOINTS
        .iter()
        // Two methods on one path: axum merges them into one route.
        .fold(Router::new(), |r, e| {
            r.route(e.path, (e.handler)(e.method.filter()))
        })
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(
            shared.clone(),
            within_request_timeout,
        ))
        .layer(middleware::from_fn_with_state(
            shared.clone(),
            limit_in_flight,
        ))
        .layer(middleware::from_fn_with_state(shared.clone(), host_check))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(shared)
}

/// Refuses a `Host` that is not an IP address, a loopback name or in `api.allowed_hosts`.
async fn host_check(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .map(|v| v.to_str().unwrap_or("(not text)"));
    if guard::host_allowed(host, &shared.allowed_hosts) {
        return next.run(request).await;
    }
    ApiError::new(
        StatusCode::FORBIDDEN,
        format!(
            "the Host {:?} is neither an IP address, a loopback name nor in api.allowed_hosts; \
             add the name clients use (e.g. \"sluice:8089\") to api.allowed_hosts",
            host.unwrap_or_default()
        ),
    )
    .into_response()
}

/// Answers 408 when the request (body included) takes longer than `api.request_timeout_ms`.
async fn within_request_timeout(
    State(shared): State<Arc<Shared>>,
    request: Request,
    next: Next,
) -> Response {
    match tokio::time::timeout(shared.request_timeout, next.run(request)).await {
        Ok(response) => response,
        Err(_) => ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the request took longer than api.request_timeout_ms ({} ms)",
                shared.request_timeout.as_millis()
            ),
        )
        .into_response(),
    }
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

async fn not_found(request: Request) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!(
            "no endpoint {} {}; the endpoints are {}",
            request.method(),
            request.uri().path(),
            endpoint_list(|_| true)
        ),
    )
}

async fn method_not_allowed(request: Request) -> ApiError {
    let path = request.uri().path();
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!(
            "{} is not allowed on {path}; it takes {}; the endpoints are {}",
            request.method(),
            endpoint_list(|e| path_fits(e.path, path)),
            endpoint_list(|_| true)
        ),
    )
}
