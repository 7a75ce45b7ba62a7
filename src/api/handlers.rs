//! The handlers of [`ENDPOINTS`](super::ENDPOINTS). Those about one pipeline take the
//! [`Pipeline`] extractor, so `/status` and `/pipelines/{name}/status` are one handler: the
//! extractor resolves the pipeline (or answers 404, 409 or 503) before the handler runs.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{header, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use serde_json::json;

use super::access::{Mutating, Pipeline, PipelineName, Shared};
use super::error::ApiError;
use crate::ops::Readiness;
use crate::snapshot::adhoc::{AdhocRequest, Rejected};

pub(super) async fn healthz() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok" }))
}

/// The content type of `GET /metrics`: the Prometheus text format.
pub const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The content type of `GET /openapi.yaml`.
pub const OPENAPI_CONTENT_TYPE: &str = "application/yaml";

/// The OpenAPI 3.0 document of the API (`docs/openapi.yaml`), served at `GET /openapi.yaml`.
pub const OPENAPI_YAML: &str = include_str!("../../docs/openapi.yaml");

/// `GET /readyz` with several pipelines: ready when every one is.
#[derive(Serialize)]
struct AllReady {
    /// Every pipeline is ready.
    ready: bool,
    /// Each pipeline's readiness, by name.
    pipelines: BTreeMap<String, Readiness>,
}

/// `GET /readyz`: the only pipeline's readiness, or with several all of theirs (ready when
/// every one is); `GET /pipelines/{name}/readyz`: that pipeline's. 200 when ready, else 503.
pub(super) async fn readyz(
    State(shared): State<Arc<Shared>>,
    PipelineName(name): PipelineName,
    uri: Uri,
) -> Result<Response, ApiError> {
    let code = |ready: bool| {
        if ready {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        }
    };
    if name.is_none() {
        let all = shared.pipelines.all();
        if all.len() > 1 {
            let pipelines: BTreeMap<_, _> = all
                .into_iter()
                .map(|(name, p)| (name, p.ops.readiness()))
                .collect();
            let ready = pipelines.values().all(|r| r.ready);
            return Ok((code(ready), Json(AllReady { ready, pipelines })).into_response());
        }
    }
    let pipeline = shared.pipelines.resolve(name.as_deref(), uri.path())?;
    let readiness = pipeline.ops.readiness();
    Ok((code(readiness.ready), Json(readiness)).into_response())
}

/// `GET /status`: the pipeline's status and whether a pause is requested.
#[derive(Serialize)]
pub(super) struct StatusAnswer {
    #[serde(flatten)]
    pub(super) status: crate::metrics::Status,
    /// A pause is requested (`POST /pause`); `state` says whether the source stopped yet.
    pub(super) paused: bool,
}

pub(super) async fn status(Pipeline(p): Pipeline) -> Json<StatusAnswer> {
    Json(StatusAnswer {
        status: p.ops.status(),
        paused: p.ops.is_paused(),
    })
}

pub(super) async fn config(Pipeline(p): Pipeline) -> Response {
    Json(p.ops.config()).into_response()
}

pub(super) async fn tables(Pipeline(p): Pipeline) -> Json<serde_json::Value> {
    Json(json!({ "tables": p.ops.tables() }))
}

/// One entry of `GET /pipelines`.
#[derive(Serialize)]
struct PipelineEntry {
    /// Its name (`name` of its configuration).
    name: String,
    /// Its state, as in its `GET /status`.
    state: &'static str,
    /// A pause is requested.
    paused: bool,
}

/// `GET /pipelines`: every pipeline, sorted by name, with its state and pause flag.
pub(super) async fn pipelines(State(shared): State<Arc<Shared>>) -> Json<serde_json::Value> {
    let entries: Vec<PipelineEntry> = shared
        .pipelines
        .all()
        .into_iter()
        .map(|(name, p)| PipelineEntry {
            name,
            state: p.ops.status().state,
            paused: p.ops.is_paused(),
        })
        .collect();
    Json(json!({ "pipelines": entries }))
}

/// `GET /cluster`: this instance's view of its cluster group (404 outside cluster mode).
pub(super) async fn cluster(
    State(shared): State<Arc<Shared>>,
) -> std::result::Result<Json<serde_json::Value>, ApiError> {
    shared.pipelines.cluster_view().map(Json).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "this process does not run in cluster mode (no [cluster] in its process file)",
        )
    })
}

pub(super) async fn metrics(State(shared): State<Arc<Shared>>) -> Response {
    (
        [(header::CONTENT_TYPE, METRICS_CONTENT_TYPE)],
        crate::metrics::render(&shared.metrics),
    )
        .into_response()
}

/// The answer of `POST /pause` and `POST /resume`: 202 when the request changed the flag,
/// 200 when it was set that way already.
fn pause_answer(paused: bool, changed: bool) -> Response {
    let status = if changed {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    (
        status,
        Json(json!({ "paused": paused, "changed": changed })),
    )
        .into_response()
}

// `Mutating` comes first: a caller without the right to change anything learns nothing about
// the pipelines from the answer.
pub(super) async fn pause(_: Mutating, Pipeline(p): Pipeline) -> Response {
    // `Ops` logs a change.
    pause_answer(true, p.ops.pause())
}

pub(super) async fn resume(_: Mutating, Pipeline(p): Pipeline) -> Response {
    pause_answer(false, p.ops.resume())
}

pub(super) async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, OPENAPI_CONTENT_TYPE)], OPENAPI_YAML).into_response()
}

pub(super) async fn snapshot_progress(Pipeline(p): Pipeline) -> Json<serde_json::Value> {
    Json(json!({ "snapshot": p.control.progress().as_deref() }))
}

pub(super) async fn request_snapshot(
    _: Mutating,
    Pipeline(p): Pipeline,
    uri: Uri,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
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
    if p.ops.is_paused() {
        // The stream takes requests between source transactions: a paused one takes none.
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the pipeline is paused and takes no snapshot requests; POST {}, then try \
                 again",
                // The resume endpoint next to this one: `/resume` or `/pipelines/{name}/resume`.
                sibling(uri.path(), "resume")
            ),
        ));
    }
    match p.control.request(request.clone()).await {
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

/// The path of endpoint `last` next to `path`: `/snapshots` → `/resume`,
/// `/pipelines/a/snapshots` → `/pipelines/a/resume`.
fn sibling(path: &str, last: &str) -> String {
    let parent = path.rsplit_once('/').map_or("", |(parent, _)| parent);
    format!("{parent}/{last}")
}
