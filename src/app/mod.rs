//! Wiring: connects the stages, owns shutdown, restarts after transient errors.
//!
//! One *attempt* = start the sink thread (fence, read committed offset) → connect the source
//! at that offset → stream until shutdown or error. A transient error ends the attempt: the
//! source drops its side of the channel, the sink aborts a half-written source transaction
//! (or commits one that ended at a boundary), and the next attempt starts again from the
//! committed offset after a capped exponential backoff. A definite or fenced error stops.
//!
//! In files: `settings` (what the stages are given, from the configuration), `checks` (the
//! preflight), `attempt` (one attempt), `process` (several pipelines in one process),
//! `bench_produce` (the hidden `sluice bench-produce`: the producer's ceiling, for the
//! benchmark), `bench_source` (the hidden `sluice bench-source`: the source side's ceiling, a
//! null sink), `bench_latency/` (the hidden `sluice bench-latency`: a running pipeline's
//! latency under a fixed load); this file holds a pipeline's run and its retry loop.

mod attempt;
mod bench_latency;
mod bench_produce;
mod bench_source;
mod checks;
mod cluster;
mod process;
mod run;
mod settings;
pub use bench_latency::{parse_rate, LatencyBench, LatencyResult, Rate};
pub use bench_produce::{parse_property, ProduceBench, ProduceResult};
pub use bench_source::{bench_source, SourceResult};
pub use checks::preflight;
pub use process::run_process;
pub use run::{run, run_with, shutdown_timeout};
pub use settings::{client_config, committed_read_timeout, sink_settings, start_spec, RunOptions};
