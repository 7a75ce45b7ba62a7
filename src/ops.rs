//! What operators drive and read while the pipeline runs: pause and resume, the included
//! tables, the effective configuration, readiness. The HTTP API (`crate::api`) serves it; the
//! run loop (`crate::app::run`) obeys it.
//!
//! **Pause** ends the current attempt the way a shutdown does (the source stops reading, the
//! sink commits what ends at a transaction boundary and aborts a half-written source
//! transaction), then waits; **resume** starts a new attempt from the committed offset. So a
//! pause never splits a source transaction and loses nothing; a snapshot in progress resumes
//! from its last committed chunk.

use std::sync::{Arc, Mutex};

use serde::Serialize;
use tokio::sync::watch;

use crate::config::Config;
use crate::metrics::{Metrics, Status};

/// One included table as the pipeline writes it (`GET /tables`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TableInfo {
    /// `db.table`.
    pub table: String,
    /// The Kafka topic its changes go to.
    pub topic: String,
    /// `json` or `avro`.
    pub format: String,
    /// The columns of the record key.
    pub key_columns: Vec<String>,
    /// Where the key comes from: `primary key`, `unique index`, `route key_columns`, or
    /// `none` (records without a key).
    pub key_source: String,
}

/// Whether the pipeline is ready (`GET /readyz`): streaming (a snapshot may be in progress)
/// and its lag within `api.ready_max_lag_seconds`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Readiness {
    /// Ready or not.
    pub ready: bool,
    /// The pipeline state (`crate::metrics::STATES`).
    pub state: &'static str,
    /// `sluice_lag_seconds`.
    pub lag_seconds: f64,
    /// The lag allowed.
    pub max_lag_seconds: f64,
    /// Why not, when not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The readiness rule, apart from where the figures come from.
pub fn readiness(state: &'static str, lag_seconds: f64, max_lag_seconds: f64) -> Readiness {
    let reason = match state {
        "streaming" | "snapshotting" if lag_seconds <= max_lag_seconds => None,
        "streaming" | "snapshotting" => Some(format!(
            "lag {lag_seconds:.1} s is above {max_lag_seconds} s (api.ready_max_lag_seconds)"
        )),
        "paused" => Some("paused (POST /resume resumes)".to_string()),
        "starting" => Some("starting: fencing, reading the committed offset, connecting".into()),
        "backoff" => Some("restarting after a transient error (see GET /status)".into()),
        other => Some(format!("the pipeline is {other} (see GET /status)")),
    };
    Readiness {
        ready: reason.is_none(),
        state,
        lag_seconds,
        max_lag_seconds,
        reason,
    }
}

/// The operators' handle on a running pipeline.
pub struct Ops {
    paused: watch::Sender<bool>,
    config: serde_json::Value,
    tables: Mutex<Vec<TableInfo>>,
    max_lag_seconds: f64,
    /// The pipeline's metrics, which its status and readiness are read from.
    metrics: Arc<Metrics>,
}

impl Ops {
    /// The handle of a pipeline run with `cfg` and counted in `metrics`; `max_lag_seconds` is
    /// the readiness limit.
    pub fn new(cfg: &Config, max_lag_seconds: f64, metrics: Arc<Metrics>) -> Arc<Ops> {
        Arc::new(Ops {
            paused: watch::channel(false).0,
            config: cfg.redacted_json(),
            tables: Mutex::new(Vec::new()),
            max_lag_seconds,
            metrics,
        })
    }

    /// Pauses; `false` when it was paused already.
    pub fn pause(&self) -> bool {
        let changed = self
            .paused
            .send_if_modified(|p| !std::mem::replace(p, true));
        if changed {
            tracing::info!("pause requested: committing what is read and stopping the source");
        }
        changed
    }

    /// Resumes; `false` when it was not paused.
    pub fn resume(&self) -> bool {
        let changed = self
            .paused
            .send_if_modified(|p| std::mem::replace(p, false));
        if changed {
            tracing::info!("resume requested: restarting from the committed offset");
        }
        changed
    }

    /// Whether a pause is requested.
    pub fn is_paused(&self) -> bool {
        *self.paused.borrow()
    }

    /// Follows the pause flag.
    pub fn paused_rx(&self) -> watch::Receiver<bool> {
        self.paused.subscribe()
    }

    /// The effective configuration, secrets as `***`.
    pub fn config(&self) -> &serde_json::Value {
        &self.config
    }

    /// The included tables, as of the last start of the source (empty before).
    pub fn tables(&self) -> Vec<TableInfo> {
        self.tables.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// Replaces the included tables.
    pub fn set_tables(&self, tables: Vec<TableInfo>) {
        if let Ok(mut t) = self.tables.lock() {
            *t = tables;
        }
    }

    /// The pipeline's status.
    pub fn status(&self) -> Status {
        self.metrics.status()
    }

    /// Whether the pipeline is ready.
    pub fn readiness(&self) -> Readiness {
        let m = &self.metrics;
        readiness(m.state(), m.lag_seconds(), self.max_lag_seconds)
    }

    /// The pipeline's metrics.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_only_when_streaming_within_the_lag() {
        assert!(readiness("streaming", 3.0, 60.0).ready);
        assert!(readiness("snapshotting", 60.0, 60.0).ready);
        let r = readiness("streaming", 61.5, 60.0);
        assert!(!r.ready);
        assert!(r.reason.as_deref().is_some_and(|m| m.contains("61.5")));
        for s in ["starting", "paused", "backoff", "stopped", "fenced"] {
            assert!(!readiness(s, 0.0, 60.0).ready, "{s}");
        }
    }

    #[test]
    fn pause_and_resume_report_changes() {
        let cfg = crate::config::load_from_str(
            "name = \"t\"\n[source]\nurl = \"mysql://u:secret@127.0.0.1:3306\"\n\
             server_id = 7\ninclude = [\"db\\\\..*\"]\n[kafka]\nbootstrap_servers = \"127.0.0.1:9092\"\n",
            Vec::new(),
        );
        let Ok(cfg) = cfg else {
            panic!("config: {cfg:?}")
        };
        let ops = Ops::new(&cfg, 60.0, Arc::new(Metrics::new("t")));
        let rx = ops.paused_rx();
        assert!(ops.pause());
        assert!(!ops.pause());
        assert!(ops.is_paused());
        assert!(rx.has_changed().unwrap_or(false));
        assert!(ops.resume());
        assert!(!ops.resume());
        assert!(!ops.is_paused());
        assert!(!ops.config().to_string().contains("secret"));
    }
}
