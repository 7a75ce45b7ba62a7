//! Where a pipeline's start-up time goes: each step from the attempt's start to the binlog
//! request, timed. An attempt logs its steps at debug (`sluice::startup`) as they end and one
//! info line with all of them once the stream is requested, so an operator (and
//! `scripts/bench`) sees why a start or a takeover took as long as it did.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The steps of one attempt's start, in the order they ended. Cheap to clone: the clones
/// share the list (the sink thread and the source task record into the same one).
#[derive(Clone, Debug)]
pub struct Timeline {
    began: Instant,
    steps: Arc<Mutex<Vec<Step>>>,
}

/// One timed step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// What was done (`"fencing"`, `"offsets read"`, …).
    pub name: &'static str,
    /// How long it took.
    pub took: Duration,
    /// When it ended, from the timeline's start.
    pub ended: Duration,
}

impl Default for Timeline {
    fn default() -> Self {
        Self::new()
    }
}

impl Timeline {
    /// A timeline starting now.
    pub fn new() -> Self {
        Self {
            began: Instant::now(),
            steps: Arc::default(),
        }
    }

    /// Runs `f` as the step `name`.
    pub fn step<T>(&self, name: &'static str, f: impl FnOnce() -> T) -> T {
        let t0 = Instant::now();
        let out = f();
        self.record(name, t0);
        out
    }

    /// Awaits `f` as the step `name`.
    pub async fn step_async<T>(
        &self,
        name: &'static str,
        f: impl std::future::Future<Output = T>,
    ) -> T {
        let t0 = Instant::now();
        let out = f.await;
        self.record(name, t0);
        out
    }

    /// Records the step `name` that began at `t0` and ends now.
    pub fn record(&self, name: &'static str, t0: Instant) {
        let now = Instant::now();
        let step = Step {
            name,
            took: now.duration_since(t0),
            ended: now.duration_since(self.began),
        };
        tracing::debug!(
            target: "sluice::startup",
            step = name,
            took_ms = millis(step.took),
            at_ms = millis(step.ended),
            "start-up step done"
        );
        self.steps
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(step);
    }

    /// The time since the timeline began.
    pub fn elapsed(&self) -> Duration {
        self.began.elapsed()
    }

    /// The steps so far, in the order they ended.
    pub fn steps(&self) -> Vec<Step> {
        self.steps.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// `"fencing 212 ms, offsets read 35 ms, …"`.
    pub fn summary(&self) -> String {
        summarize(&self.steps())
    }
}

fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 10_000.0).round() / 10.0
}

/// The steps as one line, in the order they ended.
pub fn summarize(steps: &[Step]) -> String {
    steps
        .iter()
        .map(|s| format!("{} {} ms", s.name, millis(s.took)))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_kept_in_the_order_they_end_across_clones() {
        let t = Timeline::new();
        let other = t.clone();
        t.step("first", || std::thread::sleep(Duration::from_millis(5)));
        other.step("second", || ());
        let steps = t.steps();
        assert_eq!(
            steps.iter().map(|s| s.name).collect::<Vec<_>>(),
            ["first", "second"]
        );
        assert!(steps[0].took >= Duration::from_millis(5));
        assert!(steps[1].ended >= steps[0].ended);
    }

    #[test]
    fn the_summary_names_each_step_with_its_time() {
        let steps = [
            Step {
                name: "fencing",
                took: Duration::from_micros(212_340),
                ended: Duration::from_millis(300),
            },
            Step {
                name: "offsets read",
                took: Duration::from_millis(35),
                ended: Duration::from_millis(335),
            },
        ];
        assert_eq!(summarize(&steps), "fencing 212.3 ms, offsets read 35 ms");
    }
}
