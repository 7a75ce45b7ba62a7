//! Who may do what: the state every request is served from ([`Shared`]), the rule for the
//! mutating endpoints ([`mutation_access`], the [`Mutating`] extractor) and the pipeline a
//! request acts on (the [`Pipeline`] extractor).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{FromRequestParts, OptionalFromRequestParts, Path};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use tokio::sync::Semaphore;

use super::error::ApiError;
use super::guard;
use super::pipelines::{PipelineHandle, Pipelines};
use crate::config::Secret;

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

pub(super) struct Shared {
    /// The pipelines the requests act on.
    pub(super) pipelines: Pipelines,
    pub(super) token: Option<Secret<String>>,
    /// What `GET /metrics` renders.
    pub(super) metrics: prometheus::Registry,
    pub(super) access: MutationAccess,
    pub(super) listen: SocketAddr,
    pub(super) in_flight: Semaphore,
    pub(super) allowed_hosts: Vec<String>,
    pub(super) allowed_origins: Vec<String>,
    pub(super) request_timeout: Duration,
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
        let origin = parts
            .headers
            .get(header::ORIGIN)
            .map(|v| v.to_str().unwrap_or("(not text)"));
        if !guard::origin_allowed(origin, &shared.allowed_origins) {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                format!(
                    "{} {} from a web page (Origin {}) is refused: pages may change the \
                     pipeline only from an origin listed in api.allowed_origins",
                    parts.method,
                    parts.uri.path(),
                    origin.unwrap_or_default()
                ),
            ));
        }
        mutation_allowed(parts, shared)?;
        if guard::has_body(&parts.headers) && !guard::is_json(&parts.headers) {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!(
                    "{} {} takes a JSON body: send `Content-Type: application/json` (or no \
                     body)",
                    parts.method,
                    parts.uri.path()
                ),
            ));
        }
        Ok(Mutating)
    }
}

/// The token or loopback rule of [`mutation_access`] for one request.
pub(super) fn mutation_allowed(parts: &Parts, shared: &Shared) -> Result<(), ApiError> {
    match shared.access {
        MutationAccess::Open => Ok(()),
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
                (Some(given), Some(expected)) if same_bytes(given.as_bytes(), expected) => Ok(()),
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

/// The token of an `Authorization: Bearer <token>` value (the scheme in any case).
pub(super) fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Compares in time independent of where the bytes differ.
pub(super) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The `{name}` of a `/pipelines/{name}/...` path (percent-decoded); `None` on the
/// single-pipeline paths.
pub(super) struct PipelineName(pub(super) Option<String>);

impl FromRequestParts<Arc<Shared>> for PipelineName {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        shared: &Arc<Shared>,
    ) -> Result<Self, Self::Rejection> {
        let name = <Path<String> as OptionalFromRequestParts<_>>::from_request_parts(parts, shared)
            .await
            .map_err(|e| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    format!("{}: the pipeline name in the path: {e}", parts.uri.path()),
                )
            })?;
        Ok(PipelineName(name.map(|Path(n)| n)))
    }
}

/// The pipeline a request acts on, resolved by [`Pipelines::resolve`]: the one its path
/// names, else the only one. Its rejection is the [`ApiError`] of the resolution.
pub(super) struct Pipeline(pub(super) PipelineHandle);

impl FromRequestParts<Arc<Shared>> for Pipeline {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        shared: &Arc<Shared>,
    ) -> Result<Self, Self::Rejection> {
        let PipelineName(name) = PipelineName::from_request_parts(parts, shared).await?;
        shared
            .pipelines
            .resolve(name.as_deref(), parts.uri.path())
            .map(Pipeline)
    }
}
