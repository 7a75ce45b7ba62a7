//! `sluice bench-latency` (a hidden subcommand): the latency of a running pipeline under a
//! fixed load, for the benchmark. One process writes the rows and reads them back, so both
//! ends are timed on one clock.
//!
//! The driver ([`driver`]) writes rows `(id, v)` into a table at a fixed rate (open loop: each
//! source transaction is due at its time from the start, however long the earlier ones took;
//! a driver that falls behind says so and does not lower the rate) or as fast as its
//! connections commit (`--rate max`). The consumer ([`consumer`]) reads the pipeline's topic
//! `read_committed` with a short `fetch.wait.max.ms`, from the end each partition had before
//! the first row. Per row, the latency is the time from the COMMIT returning to the driver to
//! the consumer receiving the record; rows due after the warm-up are measured into an HDR
//! histogram ([`tracker`]). Every second of the measured window the lag (rows committed −
//! rows received) is sampled; its slope over the last minute tells whether the pipeline keeps
//! up ([`stats::SLOPE_TOLERANCE`]). After the last row the run waits up to the drain timeout
//! for the rows not received yet; a row still missing then makes the run fail
//! ([`LatencyResult::problem`]).
//!
//! In files: `plan` (the options, checked, and the schedule), `tracker` (the rows in flight
//! and the histogram), `driver` (the source), `consumer` (Kafka), `stats` (key ids, slope,
//! percentiles), `report` (the printed line); this file runs them.

mod consumer;
mod driver;
mod plan;
mod report;
mod stats;
mod tracker;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::app::bench_produce::cpu_seconds;
use crate::error::{Error, Result};
pub use plan::{parse_rate, LatencyBench, Rate};
use report::Gathered;
pub use report::LatencyResult;
use stats::last_window;
use tracker::{lock, Tracker};

/// How often the lag is sampled.
const SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// How often the drain looks whether every row arrived.
const DRAIN_POLL: Duration = Duration::from_millis(10);

/// Stops the consumer thread when dropped (an early return included); it notices within one
/// poll.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

impl LatencyBench {
    /// Prepares the table and the consumer, writes the rows, waits for them and reports.
    /// Blocking calls (librdkafka) run on threads of their own, not on the runtime's.
    pub async fn run(&self) -> Result<LatencyResult> {
        let (opts, url_db) = driver::source_opts(&self.source)?;
        let plan = Arc::new(plan::Plan::new(self, url_db.as_deref()).map_err(Error::definite)?);
        let mut conn = driver::connect(&opts).await?;
        let mut base = driver::prepare_table(&mut conn, &plan).await?;
        let config = consumer::consumer_config(self);
        let partitions = match self.partitions(&config).await? {
            Some(n) => n,
            None => {
                // The pipeline creates the topic with the table's first row: write one (before
                // the run's ids) and wait for it.
                base += 1;
                driver::write_one(&mut conn, &plan, base).await?;
                self.wait_for_topic(&config, &plan).await?
            }
        };
        let _ = conn.disconnect().await;
        let mut conns = Vec::with_capacity(plan.connections);
        for _ in 0..plan.connections {
            conns.push(driver::connect(&opts).await?);
        }

        let tracker = Arc::new(Mutex::new(Tracker::new(
            (*plan).clone(),
            base,
            Instant::now(),
        )));
        let stop = Arc::new(AtomicBool::new(false));
        let _stop_consumer = StopOnDrop(stop.clone());
        let job = consumer::ConsumerJob {
            config,
            topic: self.topic.clone(),
            partitions,
            key_field: self.key_field.clone(),
            ready_timeout: Duration::from_secs(self.topic_wait_s.max(10)),
        };
        let (thread, ready) = consumer::spawn(job, tracker.clone(), stop.clone())?;
        ready.await.unwrap_or_else(|_| {
            Err(Error::definite(
                "the consumer thread ended before it assigned the topic's partitions",
            ))
        })?;

        let cpu_before = cpu_seconds();
        lock(&tracker).begin(Instant::now());
        let (stop_writers, _) = watch::channel(false);
        let mut writers = JoinSet::new();
        for conn in conns {
            writers.spawn(driver::writer(
                conn,
                plan.clone(),
                tracker.clone(),
                stop_writers.clone(),
            ));
        }
        let mut gathered = sample_while_writing(&tracker, &mut writers).await?;
        let written = Instant::now();
        let drain = Duration::from_secs(self.drain_timeout_s);
        while lock(&tracker).missing(0).0 > 0 && written.elapsed() < drain {
            tokio::time::sleep(DRAIN_POLL).await;
        }
        gathered.drain_s = written.elapsed().as_secs_f64();
        gathered.cpu_s = cpu_seconds()
            .zip(cpu_before)
            .map(|(after, before)| after - before);
        stop.store(true, Ordering::Release);
        let end = tokio::task::spawn_blocking(move || thread.join())
            .await
            .map_err(Error::definite_from)?
            .map_err(|_| Error::definite("the consumer thread panicked"))?;
        gathered.consumer_errors = end.errors;
        if let Some(e) = &end.last_error {
            tracing::warn!(errors = end.errors, last = %e, "the consumer's polls failed");
        }
        let t = lock(&tracker);
        Ok(LatencyResult::new(self, &plan, &t, &gathered))
    }

    /// The topic's partition count, `None` when it does not exist.
    async fn partitions(&self, config: &rdkafka::config::ClientConfig) -> Result<Option<usize>> {
        let (config, topic) = (config.clone(), self.topic.clone());
        tokio::task::spawn_blocking(move || consumer::partitions(&config, &topic))
            .await
            .map_err(Error::definite_from)?
    }

    /// Waits up to `--topic-wait-s` for the topic to exist; returns its partition count.
    async fn wait_for_topic(
        &self,
        config: &rdkafka::config::ClientConfig,
        plan: &plan::Plan,
    ) -> Result<usize> {
        let wait = Duration::from_secs(self.topic_wait_s);
        let started = Instant::now();
        loop {
            if let Some(n) = self.partitions(config).await? {
                return Ok(n);
            }
            if started.elapsed() >= wait {
                return Err(Error::definite(format!(
                    "topic `{}` does not exist at {}, and did not appear within {} s after a \
                     row was written to {}: run a sluice pipeline that routes {} to `{}` \
                     (it creates the topic with the first row), or name its topic with --topic",
                    self.topic,
                    self.bootstrap,
                    self.topic_wait_s,
                    plan.table,
                    plan.table,
                    self.topic
                )));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Samples the lag every second of the measured window until every writer has ended; the
/// first writer error ends the run.
async fn sample_while_writing(
    tracker: &Mutex<Tracker>,
    writers: &mut JoinSet<Result<()>>,
) -> Result<Gathered> {
    let mut g = Gathered::default();
    let mut tick =
        tokio::time::interval_at(tokio::time::Instant::now() + SAMPLE_EVERY, SAMPLE_EVERY);
    let mut first_error = None;
    loop {
        tokio::select! {
            joined = writers.join_next() => match joined {
                None => break,
                Some(Ok(Ok(()))) => {}
                Some(Ok(Err(e))) => { first_error.get_or_insert(e); }
                Some(Err(e)) => { first_error.get_or_insert(Error::definite(format!("a writer task failed: {e}"))); }
            },
            _ = tick.tick() => {
                let t = lock(tracker);
                let now = t.us(Instant::now());
                if now >= t.warmup_end_us() && now <= t.end_us() {
                    let lag = t.lag();
                    g.lag_max = g.lag_max.max(lag);
                    g.samples.push(((now - t.warmup_end_us()) as f64 / 1e6, lag as f64));
                    // Only the last minute is fitted: keep no more.
                    let keep = last_window(&g.samples).len();
                    g.samples.drain(..g.samples.len() - keep);
                }
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(g),
    }
}
