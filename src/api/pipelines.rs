//! The pipelines the API serves: a directory by name, which the run loop fills as pipelines
//! start and empties as they end, and the resolution of a request to one of them.
//!
//! A request names its pipeline in `/pipelines/{name}/...`; the single-pipeline paths
//! (`/status`, `/pause`, ...) mean the only pipeline, and answer 409 when the process runs
//! several (there is no default among them) and 503 before the first has started.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use axum::http::StatusCode;

use super::error::ApiError;
use crate::ops::Ops;
use crate::snapshot::adhoc::SnapshotControl;

/// One pipeline as the API sees it.
#[derive(Clone)]
pub struct PipelineHandle {
    /// Its operators' handle: pause, resume, status, tables, configuration, readiness.
    pub ops: Arc<Ops>,
    /// Its snapshot control: ad-hoc requests to its stream, its snapshot progress.
    pub control: SnapshotControl,
}

/// The pipelines a process runs, by name (cheap to clone; clones share the map, so the run
/// loop adds and removes pipelines while the API serves it).
#[derive(Clone, Default)]
pub struct Pipelines {
    /// The handles by name (`pub(super)` for the tests, which poison the lock).
    pub(super) by_name: Arc<RwLock<BTreeMap<String, PipelineHandle>>>,
    /// What `GET /cluster` answers, in cluster mode.
    cluster: Arc<RwLock<Option<ClusterView>>>,
}

/// Renders this instance's view of its cluster group (`GET /cluster`).
pub type ClusterView = Arc<dyn Fn() -> serde_json::Value + Send + Sync>;

impl Pipelines {
    /// An empty directory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `handle` as pipeline `name`, replacing one of that name.
    pub fn insert(&self, name: &str, handle: PipelineHandle) {
        self.write().insert(name.to_string(), handle);
    }

    /// Forgets pipeline `name` (nothing when there is none).
    pub fn remove(&self, name: &str) {
        self.write().remove(name);
    }

    /// Pipeline `name`.
    pub fn get(&self, name: &str) -> Option<PipelineHandle> {
        self.read().get(name).cloned()
    }

    /// The names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.read().keys().cloned().collect()
    }

    /// How many pipelines there are.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// Serves `view` at `GET /cluster` (cluster mode).
    pub fn set_cluster_view(&self, view: ClusterView) {
        *self.cluster.write().unwrap_or_else(|e| e.into_inner()) = Some(view);
    }

    /// This instance's view of its cluster group; `None` outside cluster mode.
    pub fn cluster_view(&self) -> Option<serde_json::Value> {
        let view = self
            .cluster
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        view.map(|v| v())
    }

    /// Every pipeline with its name, sorted by name (one consistent view).
    pub(super) fn all(&self) -> Vec<(String, PipelineHandle)> {
        self.read()
            .iter()
            .map(|(n, h)| (n.clone(), h.clone()))
            .collect()
    }

    /// The pipeline a request to `path` acts on: pipeline `name` of a `/pipelines/{name}/...`
    /// path (404 naming the pipelines when there is none of that name), else the only one
    /// (409 naming them and the path to use when there are several, 503 when none started
    /// yet).
    pub(super) fn resolve(
        &self,
        name: Option<&str>,
        path: &str,
    ) -> Result<PipelineHandle, ApiError> {
        let map = self.read();
        if let Some(name) = name {
            return map.get(name).cloned().ok_or_else(|| {
                let known = if map.is_empty() {
                    "no pipeline has started yet".to_string()
                } else {
                    format!("the pipelines are {}", list(map.keys()))
                };
                ApiError::new(
                    StatusCode::NOT_FOUND,
                    format!("no pipeline named {name:?}; {known} (GET /pipelines lists them)"),
                )
            });
        }
        let mut handles = map.values();
        match (handles.next(), map.len()) {
            (Some(only), 1) => Ok(only.clone()),
            (None, _) => Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("no pipeline has started yet; try {path} again shortly"),
            )),
            (Some(_), n) => Err(ApiError::new(
                StatusCode::CONFLICT,
                format!(
                    "this process runs {n} pipelines ({}): use /pipelines/{{name}}{path}",
                    list(map.keys())
                ),
            )),
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, BTreeMap<String, PipelineHandle>> {
        // The map is consistent after any insert or remove: a panic elsewhere leaves it usable.
        self.by_name.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, BTreeMap<String, PipelineHandle>> {
        self.by_name.write().unwrap_or_else(|e| e.into_inner())
    }
}

/// `a, b, c`.
fn list<'a>(names: impl Iterator<Item = &'a String>) -> String {
    names.map(String::as_str).collect::<Vec<_>>().join(", ")
}
