//! The line `sluice bench-latency` prints ([`LatencyResult`]), made from what the run counted,
//! and the problem that makes its exit code non-zero.

use serde::Serialize;

use super::plan::{LatencyBench, Plan, Rate};
use super::stats::{bounded, last_window, ms, slope, Percentiles, SLOPE_TOLERANCE};
use super::tracker::Tracker;

/// How many of the missing rows' ids the result names.
pub const MISSING_IDS_SHOWN: usize = 10;

/// What one run measured: the line `sluice bench-latency` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencyResult {
    /// The topic read.
    pub topic: String,
    /// The table written.
    pub table: String,
    /// The target rate in rows per second; `null` for `max` (closed loop).
    pub target_rows_per_s: Option<u64>,
    /// Rows per source transaction.
    pub txn_rows: u64,
    /// Writer connections.
    pub connections: usize,
    /// Seconds of warm-up.
    pub warmup_s: u64,
    /// Seconds measured.
    pub seconds: u64,
    /// Bytes of each row's `v`.
    pub payload_bytes: usize,
    /// The consumer's `fetch.wait.max.ms`.
    pub fetch_wait_ms: u64,
    /// Rows written (COMMIT returned), warm-up included.
    pub rows_written: u64,
    /// Rows of the measured window written, per second of the window (from the warm-up's end
    /// to the last COMMIT of the window, or the window's planned end when later).
    pub achieved_rows_per_s: f64,
    /// Rows of the measured window received and measured.
    pub rows_measured: u64,
    /// The latencies in the histogram (equal to `rows_measured`).
    pub histogram_count: u64,
    /// Latency from the COMMIT returning to the driver to the consumer receiving the row.
    #[serde(flatten)]
    pub latency: Percentiles,
    /// The least-squares slope of the lag (rows committed − rows received, sampled every
    /// second of the measured window) over its last minute, rows per second; `null` with
    /// fewer than two samples.
    pub lag_slope_rows_per_s: Option<f64>,
    /// Lag samples in the slope.
    pub lag_samples: usize,
    /// The largest lag sampled, rows.
    pub lag_max_rows: i64,
    /// The slope up to which the lag counts as bounded: 1% of the rate (target, or achieved
    /// for `max`).
    pub lag_tolerance_rows_per_s: f64,
    /// Whether the lag stayed bounded (slope ≤ tolerance); `null` without a slope.
    pub bounded: Option<bool>,
    /// The most a measured transaction was sent behind its due time (open loop), ms.
    pub driver_behind_max_ms: f64,
    /// Whether that passed `--behind-limit-ms`: the source did not get the load asked for.
    pub driver_behind: bool,
    /// Rows written and not received by the end of the drain timeout.
    pub missing: u64,
    /// The first of their ids.
    pub missing_first_ids: Vec<u64>,
    /// Rows received before the driver noted their COMMIT returning (measured as 0 ms).
    pub received_before_commit: u64,
    /// Records that were no first receipt of a row of this run: the sum of the five below.
    pub unexpected: u64,
    /// Ids written before the run.
    pub unexpected_older: u64,
    /// Rows of this run received again.
    pub unexpected_duplicate: u64,
    /// Ids above every id of this run.
    pub unexpected_beyond: u64,
    /// Keys without an id in `--key-field`.
    pub unexpected_unparsed: u64,
    /// Records without a value.
    pub unexpected_tombstones: u64,
    /// Errors the consumer's polls returned.
    pub consumer_errors: u64,
    /// Seconds from the last row written until every row was received (or the drain timeout).
    pub drain_s: f64,
    /// CPU seconds of this process (driver and consumer) from the first row to the end of the
    /// drain; `null` where the system does not tell.
    pub cpu_s: Option<f64>,
}

/// What the run gathered beside the tracker.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gathered {
    /// Lag samples of the measured window's last minute: (seconds since the warm-up, rows).
    pub samples: Vec<(f64, f64)>,
    /// The largest lag sampled.
    pub lag_max: i64,
    /// Errors of the consumer's polls.
    pub consumer_errors: u64,
    /// Seconds of the drain.
    pub drain_s: f64,
    /// CPU seconds.
    pub cpu_s: Option<f64>,
}

fn round_to(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

impl LatencyResult {
    /// The result of a run of `bench` (checked into `plan`) from its tracker at the end.
    pub fn new(bench: &LatencyBench, plan: &Plan, t: &Tracker, g: &Gathered) -> LatencyResult {
        let n = t.counts();
        let window_us = n
            .last_commit_us
            .max(t.end_us())
            .saturating_sub(t.warmup_end_us())
            .max(1);
        let achieved = n.committed_measured as f64 * 1e6 / window_us as f64;
        let target = match plan.rate {
            Rate::Fixed(r) => Some(r),
            Rate::Max => None,
        };
        let rate = target.map_or(achieved, |r| r as f64);
        let tolerance = SLOPE_TOLERANCE * rate;
        let window = last_window(&g.samples);
        let lag_slope = slope(window);
        let (missing, missing_first_ids) = t.missing(MISSING_IDS_SHOWN);
        let u = t.unexpected;
        LatencyResult {
            topic: bench.topic.clone(),
            table: plan.table.to_string(),
            target_rows_per_s: target,
            txn_rows: plan.txn_rows,
            connections: plan.connections,
            warmup_s: bench.warmup_s,
            seconds: bench.seconds,
            payload_bytes: plan.payload.len(),
            fetch_wait_ms: bench.fetch_wait_ms,
            rows_written: n.committed,
            achieved_rows_per_s: achieved.round(),
            rows_measured: n.received_measured,
            histogram_count: t.histogram().len(),
            latency: Percentiles::of(t.histogram()),
            lag_slope_rows_per_s: lag_slope.map(|s| round_to(s, 1)),
            lag_samples: window.len(),
            lag_max_rows: g.lag_max,
            lag_tolerance_rows_per_s: round_to(tolerance, 1),
            bounded: lag_slope.map(|s| bounded(s, rate)),
            driver_behind_max_ms: ms(n.behind_max_us),
            driver_behind: n.behind_max_us > bench.behind_limit_ms.saturating_mul(1000),
            missing,
            missing_first_ids,
            received_before_commit: n.early,
            unexpected: u.total(),
            unexpected_older: u.older,
            unexpected_duplicate: u.duplicate,
            unexpected_beyond: u.beyond,
            unexpected_unparsed: u.unparsed,
            unexpected_tombstones: u.tombstones,
            consumer_errors: g.consumer_errors,
            drain_s: round_to(g.drain_s, 3),
            cpu_s: g.cpu_s.map(|c| round_to(c, 3)),
        }
    }

    /// Why the run failed, if it did: rows written and never received (lost, or a pipeline
    /// stuck or not running), or no row measured at all.
    pub fn problem(&self, drain_timeout_s: u64) -> Option<String> {
        if self.missing > 0 {
            let ids: Vec<String> = self.missing_first_ids.iter().map(u64::to_string).collect();
            let more = if self.missing > self.missing_first_ids.len() as u64 {
                ", …"
            } else {
                ""
            };
            return Some(format!(
                "{} of the {} rows written to {} were not received from {} within the drain \
                 timeout ({drain_timeout_s} s after the last row): ids {}{more}. Either rows \
                 were lost or the pipeline is stuck or not running: check that a sluice \
                 pipeline routes {} to {} and streams (its log, `sluice offsets show`), or \
                 raise --drain-timeout-s if it only lags",
                self.missing,
                self.rows_written,
                self.table,
                self.topic,
                ids.join(", "),
                self.table,
                self.topic
            ));
        }
        if self.rows_measured == 0 {
            return Some(format!(
                "no row of the measured window was received ({} rows written in all): raise \
                 --rate or --seconds so that the {} s after the warm-up hold a transaction",
                self.rows_written, self.seconds
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    fn bench() -> LatencyBench {
        LatencyBench {
            source: "mysql://root@127.0.0.1:3306".into(),
            table: "lat.t".into(),
            bootstrap: "127.0.0.1:9092".into(),
            topic: "lat.t".into(),
            rate: Rate::Fixed(10),
            txn_rows: 1,
            connections: Some(1),
            warmup_s: 1,
            seconds: 2,
            drain_timeout_s: 5,
            topic_wait_s: 5,
            payload_bytes: 10,
            fetch_wait_ms: 5,
            key_field: "id".into(),
            max_in_flight: 1000,
            behind_limit_ms: 100,
            properties: Vec::new(),
        }
    }

    /// A run of 10 rows/s, 1 s warm-up, 2 s measured: every row committed 1 ms after it was
    /// due (sent `behind_us` late), received 2 ms after its commit but for `lost` of them.
    fn run(behind_us: u64, lost: &[u64]) -> (LatencyBench, Plan, Tracker) {
        let b = bench();
        let plan = Plan::new(&b, None).unwrap();
        let mut t = Tracker::new(plan.clone(), 0, Instant::now());
        t.begin(t.instant(0));
        while let Some(c) = t.claim(0).unwrap() {
            let due = c.due_us.unwrap();
            t.committed(&c, due + behind_us, due + behind_us + 1000);
            if !lost.contains(&c.first) {
                t.received(c.first, due + behind_us + 3000);
            }
        }
        (b, plan, t)
    }

    #[test]
    fn a_complete_run_reports_its_figures_and_no_problem() {
        let (b, plan, t) = run(300, &[]);
        let samples: Vec<(f64, f64)> = (1..=2).map(|s| (s as f64, 1.0)).collect();
        let g = Gathered {
            samples,
            lag_max: 1,
            consumer_errors: 0,
            drain_s: 0.0123456,
            cpu_s: Some(0.5),
        };
        let r = LatencyResult::new(&b, &plan, &t, &g);
        assert_eq!(r.rows_written, 30);
        assert_eq!((r.rows_measured, r.histogram_count), (20, 20));
        assert_eq!(r.achieved_rows_per_s, 10.0);
        assert_eq!(r.target_rows_per_s, Some(10));
        assert_eq!(r.latency.p50_ms, Some(2.0));
        assert_eq!(r.latency.max_ms, Some(2.0));
        assert_eq!((r.lag_slope_rows_per_s, r.bounded), (Some(0.0), Some(true)));
        assert_eq!((r.lag_samples, r.lag_tolerance_rows_per_s), (2, 0.1));
        assert_eq!((r.driver_behind_max_ms, r.driver_behind), (0.3, false));
        assert_eq!((r.missing, r.unexpected), (0, 0));
        assert_eq!(r.drain_s, 0.012);
        assert_eq!(r.problem(5), None);
        let line = serde_json::to_value(&r).unwrap();
        assert_eq!(line["p99_ms"], 2.0, "{line}");
        assert_eq!(line["table"], "lat.t");
    }

    #[test]
    fn missing_rows_and_a_late_driver_are_reported() {
        let (b, plan, t) = run(250_000, &[3, 25]);
        let g = Gathered {
            samples: vec![(1.0, 0.0), (2.0, 5.0), (3.0, 10.0)],
            ..Gathered::default()
        };
        let r = LatencyResult::new(&b, &plan, &t, &g);
        assert_eq!((r.missing, r.missing_first_ids.clone()), (2, vec![3, 25]));
        assert_eq!(r.rows_measured, 19);
        assert!(r.driver_behind && r.driver_behind_max_ms == 250.0);
        assert_eq!(
            (r.lag_slope_rows_per_s, r.bounded),
            (Some(5.0), Some(false))
        );
        let p = r.problem(7).unwrap();
        assert!(
            p.contains("2 of the 30 rows") && p.contains("ids 3, 25.") && p.contains("7 s"),
            "{p}"
        );
        assert!(p.contains("lat.t"), "{p}");
        // Nothing measured is a problem too.
        let nothing = LatencyResult {
            rows_measured: 0,
            missing: 0,
            ..r
        };
        assert!(nothing
            .problem(7)
            .unwrap()
            .contains("no row of the measured window"));
    }
}
