//! The metrics of cluster mode, one series per configured pipeline on every instance (so an
//! alert can find a pipeline assigned nowhere: `max by (pipeline)
//! (sluice_pipeline_assigned) == 0`).

use std::time::Duration;

use prometheus::{GaugeVec, IntCounterVec, IntGaugeVec, Opts, Registry};

/// Name, kind and help of every cluster metric (README, "Cluster mode").
pub const CLUSTER_METRICS: &[(&str, &str, &str)] = &[
    (
        "sluice_pipeline_assigned",
        "gauge",
        "1 while the pipeline is assigned to this instance by the cluster group, else 0",
    ),
    (
        "sluice_cluster_assignments_total",
        "counter",
        "Times the pipeline was assigned to this instance (each one a start, after a takeover \
         or a rebalance)",
    ),
    (
        "sluice_cluster_start_seconds",
        "gauge",
        "Seconds from the pipeline's last assignment to this instance until it streamed or \
         snapshotted (fenced, read its committed offset and connected its source)",
    ),
];

/// The cluster series, registered in the process's registry.
pub struct ClusterMetrics {
    assigned: IntGaugeVec,
    assignments: IntCounterVec,
    start_seconds: GaugeVec,
}

impl ClusterMetrics {
    /// Registers the series for `pipelines` in `registry` (each assigned 0).
    pub fn register(registry: &Registry, pipelines: &[String]) -> prometheus::Result<Self> {
        let label = &[crate::metrics::PIPELINE];
        let assigned =
            IntGaugeVec::new(Opts::new(CLUSTER_METRICS[0].0, CLUSTER_METRICS[0].2), label)?;
        let assignments =
            IntCounterVec::new(Opts::new(CLUSTER_METRICS[1].0, CLUSTER_METRICS[1].2), label)?;
        let start_seconds =
            GaugeVec::new(Opts::new(CLUSTER_METRICS[2].0, CLUSTER_METRICS[2].2), label)?;
        registry.register(Box::new(assigned.clone()))?;
        registry.register(Box::new(assignments.clone()))?;
        registry.register(Box::new(start_seconds.clone()))?;
        for p in pipelines {
            assigned.with_label_values(&[p]).set(0);
            assignments.with_label_values(&[p]);
            start_seconds.with_label_values(&[p]).set(0.0);
        }
        Ok(ClusterMetrics {
            assigned,
            assignments,
            start_seconds,
        })
    }

    /// The pipeline was assigned to (`true`) or taken from this instance.
    pub fn set_assigned(&self, pipeline: &str, assigned: bool) {
        self.assigned
            .with_label_values(&[pipeline])
            .set(i64::from(assigned));
        if assigned {
            self.assignments.with_label_values(&[pipeline]).inc();
        }
    }

    /// The pipeline streamed `took` after its assignment.
    pub fn started(&self, pipeline: &str, took: Duration) {
        self.start_seconds
            .with_label_values(&[pipeline])
            .set(took.as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pipeline_has_its_series_from_the_start() {
        let registry = Registry::new();
        let m = ClusterMetrics::register(&registry, &["a".into(), "b".into()]).expect("register");
        m.set_assigned("a", true);
        m.started("a", Duration::from_millis(1500));
        let text = crate::metrics::render(&registry);
        for (name, kind, _) in CLUSTER_METRICS {
            assert!(
                text.contains(&format!("# TYPE {name} {kind}")),
                "{name}\n{text}"
            );
        }
        assert!(
            text.contains("sluice_pipeline_assigned{pipeline=\"a\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("sluice_pipeline_assigned{pipeline=\"b\"} 0"),
            "{text}"
        );
        assert!(
            text.contains("sluice_cluster_assignments_total{pipeline=\"a\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("sluice_cluster_start_seconds{pipeline=\"a\"} 1.5"),
            "{text}"
        );
    }
}
