//! `sluice bench-source` (a hidden subcommand): the ceiling of the source side, for the
//! benchmark. A pipeline's source stages run as in `sluice run` (the same connections, start
//! resolution, binlog stream, decoding, schema tracking and routing) into a *null sink*: each
//! row is encoded by the sink's JSON encoder and the records are dropped. Nothing is written
//! to Kafka and no offset is kept: what is measured is what the source side can deliver when
//! the sink costs nothing but the encoding.
//!
//! It reads from `source.start` of the pipeline file (the bench gives the GTID position before
//! its preload) and stops once `rows` rows were encoded.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::watch;

use crate::capture;
use crate::config::route::Router;
use crate::config::Config;
use crate::encode::change::{Record, RowChange, RowPos};
use crate::encode::json::JsonEncoder;
use crate::error::{Error, Result};
use crate::model::TxnMeta;
use crate::mysql::server;
use crate::pipeline::{Change, ChangeReceiver};

use super::settings::start_spec;

/// What one run measured (one JSON line on stdout).
#[derive(Debug, Clone, Serialize)]
pub struct SourceResult {
    /// Rows encoded.
    pub rows: u64,
    /// Source transactions begun.
    pub transactions: u64,
    /// Key and value bytes encoded.
    pub bytes: u64,
    /// Seconds from the command's start to the first row encoded.
    pub first_row_s: f64,
    /// Seconds from the command's start to the last row encoded.
    pub secs: f64,
    /// `rows / secs`.
    pub rows_per_s: f64,
    /// Rows per second from the first row to the last (the steady rate).
    pub steady_rows_per_s: f64,
    /// CPU seconds of the process (user + system) over the whole run.
    pub cpu_s: Option<f64>,
}

/// What the null sink counted.
#[derive(Debug, Default, Clone, Copy)]
struct Counted {
    rows: u64,
    transactions: u64,
    bytes: u64,
    first: Option<Instant>,
    last: Option<Instant>,
}

/// Runs the source stages of `cfg` into the null sink until `rows` rows were encoded, for at
/// most `max` (then it is an error naming how many were).
pub async fn bench_source(cfg: &Config, rows: u64, max: Duration) -> Result<SourceResult> {
    if rows == 0 {
        return Err(Error::definite(
            "bench-source: `--rows` must be at least 1".to_string(),
        ));
    }
    let started = Instant::now();
    let cpu_before = super::bench_produce::cpu_seconds();
    let router =
        Arc::new(Router::new(cfg).map_err(|e| Error::definite(format!("configuration: {e}")))?);
    let start = start_spec(cfg)?;
    let connect = server::ConnectOptions::from_config(&cfg.source);
    let timeline = crate::startup::Timeline::default();
    let (mut conn, info, stream) =
        super::attempt::connect_source(connect.clone(), timeline).await?;
    let resume = super::attempt::resume_point(&mut conn, &info, &router, None, &start).await?;
    drop(conn);
    let settings = super::attempt::source_settings(cfg, connect, &router, None);
    let (tx, rx) = crate::pipeline::change_channel(cfg.source.channel_max_bytes);
    let (stop_tx, stop_rx) = watch::channel(false);
    let rt = tokio::runtime::Handle::current();
    let name = cfg.name.clone();
    let sink = std::thread::Builder::new()
        .name("sluice-null-sink".into())
        .spawn(move || {
            let counted = null_sink(rx, &rt, &name, rows, started + max);
            // The source stops once the count is reached (or the channel closed).
            let _ = stop_tx.send(true);
            counted
        })
        .map_err(|e| Error::definite(format!("cannot start the null sink's thread: {e}")))?;
    let mut stop = stop_rx.clone();
    let source = capture::run(
        &settings,
        &info,
        resume,
        tx,
        Default::default(),
        stop_rx,
        Some(stream),
    );
    let source_result = tokio::select! {
        biased;
        r = source => r,
        _ = stop.wait_for(|s| *s) => Ok(()),
    };
    let counted = tokio::task::spawn_blocking(move || sink.join())
        .await
        .map_err(Error::definite_from)?
        .map_err(|_| Error::definite("the null sink's thread panicked"))?;
    if counted.rows < rows {
        source_result?;
        return Err(Error::definite(format!(
            "bench-source: {} of the {rows} rows asked for (`--rows`) were read within {max:?} \
             (`--max-seconds`): is `source.start` before the rows, and do the pipeline's \
             `include` and routes match their tables?",
            counted.rows
        )));
    }
    let cpu_s = super::bench_produce::cpu_seconds()
        .zip(cpu_before)
        .map(|(after, before)| after - before);
    Ok(result(started, &counted, cpu_s))
}

fn result(started: Instant, c: &Counted, cpu_s: Option<f64>) -> SourceResult {
    let since = |t: Option<Instant>| t.map_or(0.0, |t| t.duration_since(started).as_secs_f64());
    let secs = since(c.last);
    let steady = c
        .first
        .zip(c.last)
        .map(|(f, l)| l.duration_since(f).as_secs_f64())
        .filter(|s| *s > 0.0)
        .map_or(0.0, |s| c.rows as f64 / s);
    SourceResult {
        rows: c.rows,
        transactions: c.transactions,
        bytes: c.bytes,
        first_row_s: since(c.first),
        secs,
        rows_per_s: if secs > 0.0 {
            c.rows as f64 / secs
        } else {
            0.0
        },
        steady_rows_per_s: steady,
        cpu_s,
    }
}

/// Key and value bytes of a record.
fn record_bytes(r: &Record) -> u64 {
    (r.key.as_ref().map_or(0, Vec::len) + r.value.as_ref().map_or(0, Vec::len)) as u64
}

/// Takes changes until `rows` rows were encoded, the channel closed or `until` passed; each
/// row is encoded as the sink encodes JSON and dropped.
fn null_sink(
    mut rx: ChangeReceiver,
    rt: &tokio::runtime::Handle,
    name: &str,
    rows: u64,
    until: Instant,
) -> Counted {
    let encoder = JsonEncoder::new(name);
    let mut meta = TxnMeta::default();
    let mut records: Vec<Record> = Vec::new();
    let mut c = Counted::default();
    while c.rows < rows && Instant::now() < until {
        let wait = until
            .saturating_duration_since(Instant::now())
            .min(Duration::from_secs(1));
        let change = rt.block_on(async { tokio::time::timeout(wait, rx.recv()).await });
        let change = match change {
            Err(_idle) => continue,
            Ok(None) => break,
            Ok(Some(change)) => change,
        };
        match change {
            Change::Begin(m) => {
                meta = m;
                c.transactions += 1;
            }
            Change::Rows {
                table,
                kind,
                rows: images,
                pos,
                ts_us,
                marks,
            } => {
                for (i, row) in images.iter().enumerate() {
                    records.clear();
                    let change = RowChange {
                        table: &table,
                        meta: &meta,
                        kind,
                        row,
                        row_pos: RowPos {
                            pos,
                            row: i as u32,
                            total_order: c.rows,
                            data_collection_order: c.rows,
                            snapshot: marks.at(i, images.len()),
                            source_ts_us: ts_us,
                        },
                    };
                    encoder.encode(&change, &mut records);
                    c.bytes += records.iter().map(record_bytes).sum::<u64>();
                    c.rows += 1;
                }
                let now = Instant::now();
                c.first.get_or_insert(now);
                c.last = Some(now);
            }
            Change::Schema(_) | Change::Commit(_) | Change::Progress(_) => {}
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_counted_from_the_start_and_from_the_first_row() {
        let started = Instant::now();
        let c = Counted {
            rows: 1000,
            transactions: 1,
            bytes: 10,
            first: Some(started + Duration::from_millis(500)),
            last: Some(started + Duration::from_millis(1500)),
        };
        let r = result(started, &c, Some(0.25));
        assert!((r.first_row_s - 0.5).abs() < 1e-9);
        assert!((r.secs - 1.5).abs() < 1e-9);
        assert!((r.rows_per_s - 1000.0 / 1.5).abs() < 1e-6);
        assert!((r.steady_rows_per_s - 1000.0).abs() < 1e-6);
        assert_eq!(r.cpu_s, Some(0.25));
    }

    #[test]
    fn no_rows_give_zero_rates_not_infinities() {
        let r = result(Instant::now(), &Counted::default(), None);
        assert_eq!(r.rows_per_s, 0.0);
        assert_eq!(r.steady_rows_per_s, 0.0);
        assert_eq!(r.secs, 0.0);
    }
}
