//! The `sluice` command line: run | check | snapshot | offsets show | offsets set, and the
//! hidden bench-produce (the benchmark's measure of the producer's ceiling) and bench-latency
//! (the benchmark's measure of a running pipeline's latency under load).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::{Parser, Subcommand};
use tokio::sync::watch;

use sluice::config::logging::{self, LogFormat as FileLogFormat, LoggingConfig};
use sluice::config::process::Loaded;
use sluice::config::{ApiConfig, Config};
use sluice::error::{Error, ErrorKind};
use sluice::shutdown::EXIT_UNFINISHED;

#[derive(Parser)]
#[command(
    name = "sluice",
    version,
    about = "Exactly-once MySQL/MariaDB binlog → Kafka"
)]
struct Cli {
    /// Log lines as `text` (human-readable, the default) or `json` (one JSON object per line,
    /// with the structured fields, for log shippers); over a process file's
    /// `[logging] format`. Levels and modules: SLUICE_LOG (over `[logging] level`; default
    /// info).
    #[arg(long, global = true, value_enum, env = "SLUICE_LOG_FORMAT")]
    log_format: Option<LogFormat>,
    #[command(subcommand)]
    cmd: Cmd,
}

/// How log lines are written (`--log-format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    /// Human-readable lines: time, level, message, then the fields as key=value.
    Text,
    /// One JSON object per line: timestamp, level, fields (message included), span.
    Json,
}

/// Starts logging: the format from `--log-format` / `SLUICE_LOG_FORMAT`, else the process
/// file's `[logging] format`, else text; the levels from `SLUICE_LOG`, else `[logging] level`,
/// else info.
fn init_logs(format: Option<LogFormat>, file: Option<LoggingConfig>) {
    let file = file.unwrap_or_default();
    let format = format.unwrap_or(match file.format {
        Some(FileLogFormat::Json) => LogFormat::Json,
        Some(FileLogFormat::Text) | None => LogFormat::Text,
    });
    let filter = tracing_subscriber::EnvFilter::try_from_env("SLUICE_LOG").unwrap_or_else(|_| {
        file.level
            .as_deref()
            .and_then(|l| tracing_subscriber::EnvFilter::builder().parse(l).ok())
            .unwrap_or_else(|| tracing_subscriber::EnvFilter::new("info"))
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .init(),
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// Stream binlog changes into Kafka until SIGINT/SIGTERM.
    Run {
        /// Path of the TOML configuration: a pipeline file, or a process file
        /// (`pipelines = [...]`) running several pipelines.
        #[arg(long, short, env = "SLUICE_CONFIG")]
        config: PathBuf,
        /// With no committed offset, start at `source.start` even though the pipeline ran
        /// before (its schema history or records in its topics are there), e.g. after its
        /// offsets topic was deleted. Without it such a run stops and says what it found.
        /// No effect when an offset is committed.
        #[arg(long)]
        start_over: bool,
    },
    /// Preflight: check the source and Kafka, report each item; non-zero exit on problems.
    Check {
        /// Path of the TOML configuration (a process file: every pipeline is checked).
        #[arg(long, short, env = "SLUICE_CONFIG")]
        config: PathBuf,
    },
    /// Ask a running `sluice run` (its HTTP API at api.listen) to snapshot tables; prints the
    /// request's id, then its progress until every table is done.
    Snapshot {
        /// Path of the TOML configuration (of the running pipeline).
        #[arg(long, short, env = "SLUICE_CONFIG")]
        config: PathBuf,
        /// A table to snapshot, as db.table (in backquotes where a name has a dot:
        /// `my.db`.`t`); repeat for more tables.
        #[arg(long = "table", short = 't', required = true, value_name = "DB.TABLE")]
        tables: Vec<String>,
        /// Only the rows matching this SQL condition (for every table), e.g. "id > 1000".
        #[arg(long = "where", value_name = "CONDITION")]
        filter: Option<String>,
        /// Print the request's id and exit without following its progress.
        #[arg(long)]
        no_wait: bool,
        /// The pipeline, when the configuration is a process file of several.
        #[arg(long, value_name = "NAME")]
        pipeline: Option<String>,
    },
    /// Show or set the committed source offset.
    Offsets {
        #[command(subcommand)]
        cmd: OffsetsCmd,
    },
    /// For the benchmark: write records of a given size to an existing topic through sluice's
    /// own producer (its librdkafka settings, transactions at its commit cadence, or the
    /// idempotent producer alone) and print one line of JSON with the throughput and the CPU
    /// time. No pipeline, no source.
    #[command(hide = true)]
    BenchProduce {
        /// Kafka bootstrap servers.
        #[arg(long, default_value = "127.0.0.1:9092")]
        bootstrap: String,
        /// The topic to write to; it must exist.
        #[arg(long)]
        topic: String,
        /// How many records to write.
        #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..))]
        records: u64,
        /// The size of every record's value, in bytes.
        #[arg(long, default_value_t = 640)]
        value_bytes: usize,
        /// Records per transaction.
        #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
        txn_records: u64,
        /// A transaction open this long (milliseconds) is committed with fewer records.
        #[arg(long, default_value_t = 100)]
        txn_max_ms: u64,
        /// No transactions: the idempotent producer alone (sluice's at-least-once mode).
        #[arg(long)]
        idempotent: bool,
        /// With --idempotent: wait for every acknowledgement after each --txn-records records
        /// (or --txn-max-ms), as at-least-once does before each offset record.
        #[arg(long, requires = "idempotent")]
        batched: bool,
        /// Whether every record carries the transaction header (default: in transactional
        /// mode only, as `sluice run`).
        #[arg(long, value_name = "BOOL")]
        header: Option<bool>,
        /// Transactional mode: after each commit, wait for the commit markers as the sink
        /// does before its next transaction.
        #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
        check_markers: bool,
        /// A further librdkafka property; repeat for more.
        #[arg(short = 'X', value_name = "KEY=VALUE", value_parser = sluice::app::parse_property)]
        properties: Vec<(String, String)>,
    },
    /// For the benchmark: run a pipeline's source stages (connections, start, binlog stream,
    /// decoding, schema tracking, routing) from `source.start` into a null sink that encodes
    /// each row as JSON and drops it, and print one line of JSON with the rate and the CPU
    /// time once `--rows` rows were encoded. Nothing is written to Kafka.
    #[command(hide = true)]
    BenchSource {
        /// Path of the TOML configuration.
        #[arg(long, short, env = "SLUICE_CONFIG")]
        config: PathBuf,
        /// The pipeline, when the configuration is a process file of several.
        #[arg(long, value_name = "NAME")]
        pipeline: Option<String>,
        /// Stop once this many rows were encoded.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        rows: u64,
        /// Give up (exit 1, naming how many rows were read) after this many seconds.
        #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
        max_seconds: u64,
    },
    /// For the benchmark: write rows into a table at a fixed rate while reading the topic a
    /// running pipeline writes them to (read_committed), and print one line of JSON with the
    /// latency from each row's COMMIT to its receipt (p50/p99/p99.9/max), the lag's slope and
    /// the rows missing. Exits 1 when rows written were not received.
    #[command(hide = true)]
    BenchLatency {
        /// The source server, e.g. mysql://root@127.0.0.1:3306 (a path names the database
        /// of --table).
        #[arg(long, default_value = "mysql://root@127.0.0.1:3306")]
        source: String,
        /// The table to write, db.table; created when missing (id BIGINT PRIMARY KEY,
        /// v VARCHAR); the run's ids start after its largest.
        #[arg(long)]
        table: String,
        /// Kafka bootstrap servers.
        #[arg(long, default_value = "127.0.0.1:9092")]
        bootstrap: String,
        /// The topic the pipeline writes the table's changes to.
        #[arg(long)]
        topic: String,
        /// Rows per second (open loop), or `max`: as fast as the connections commit.
        #[arg(long, value_parser = sluice::app::parse_rate)]
        rate: sluice::app::Rate,
        /// Rows per source transaction (one INSERT, autocommit).
        #[arg(long, default_value_t = 1)]
        txn_rows: u64,
        /// Writer connections (default: one per 1000 transactions per second, 2 to 32; 8
        /// for `max`).
        #[arg(long)]
        connections: Option<usize>,
        /// Seconds written before the measurement.
        #[arg(long, default_value_t = 20)]
        warmup_s: u64,
        /// Seconds measured after the warm-up.
        #[arg(long, default_value_t = 120)]
        seconds: u64,
        /// Seconds to wait after the last row for the rows not received yet.
        #[arg(long, default_value_t = 30)]
        drain_timeout_s: u64,
        /// Seconds to wait for the topic when it does not exist yet (a first row is written
        /// for the pipeline to create it).
        #[arg(long, default_value_t = 30)]
        topic_wait_s: u64,
        /// Bytes of each row's `v` column.
        #[arg(long, default_value_t = 200)]
        payload_bytes: usize,
        /// The consumer's fetch.wait.max.ms.
        #[arg(long, default_value_t = 5)]
        fetch_wait_ms: u64,
        /// The JSON key field that holds the id (also inside a Kafka Connect envelope's
        /// payload).
        #[arg(long, default_value = "id")]
        key_field: String,
        /// The most rows written and not yet received; more is an error.
        #[arg(long, default_value_t = 1_000_000)]
        max_in_flight: usize,
        /// A transaction sent later than this (ms) against its schedule sets driver_behind.
        #[arg(long, default_value_t = 100)]
        behind_limit_ms: u64,
        /// A further librdkafka property of the consumer; repeat for more.
        #[arg(short = 'X', value_name = "KEY=VALUE", value_parser = sluice::app::parse_property)]
        properties: Vec<(String, String)>,
    },
}

#[derive(Subcommand)]
enum OffsetsCmd {
    /// Print the committed offset record (read_committed) as JSON, and a summary of the
    /// snapshot's progress, if it has one, on stderr.
    Show {
        /// Path of the TOML configuration.
        #[arg(long, short, env = "SLUICE_CONFIG")]
        config: PathBuf,
        /// The pipeline, when the configuration is a process file of several.
        #[arg(long, value_name = "NAME")]
        pipeline: Option<String>,
    },
    /// Fence any running instance, then commit a new position (e.g. after a purged binlog).
    Set {
        /// Path of the TOML configuration.
        #[arg(long, short, env = "SLUICE_CONFIG")]
        config: PathBuf,
        /// `gtid:<set>`, `gtid:<list>` or `file:<name>:<pos>`.
        #[arg(long)]
        position: String,
        /// The pipeline, when the configuration is a process file of several.
        #[arg(long, value_name = "NAME")]
        pipeline: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let file_logging = match &cli.cmd {
        Cmd::Run { config, .. } | Cmd::Check { config } => logging::peek(config),
        _ => None,
    };
    init_logs(cli.log_format, file_logging);
    sluice::panic_report::install_panic_hook();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let result = rt.block_on(dispatch(cli));
    RETURNED.store(true, Ordering::SeqCst);
    match result {
        Ok(code) => code,
        Err(e) if e.kind() == ErrorKind::Unfinished => {
            tracing::warn!(kind = %e.kind(), "{e}");
            eprintln!("stopped: {e}");
            // A sink thread may still be blocked in librdkafka: no runtime teardown (it would
            // wait for it), no atexit handlers (they may tear down what that thread uses).
            exit_now(EXIT_UNFINISHED)
        }
        Err(e) => {
            tracing::error!(kind = %e.kind(), "{e}");
            eprintln!("error: {e}");
            ExitCode::from(match e.kind() {
                ErrorKind::Fenced => 3,
                _ => 1,
            })
        }
    }
}

/// Set once `dispatch` returned: the shutdown watchdog then leaves the exit to `main`.
static RETURNED: AtomicBool = AtomicBool::new(false);

/// Ends the process at once with `code`, after flushing stdout and stderr.
fn exit_now(code: u8) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: `_exit` only ends the process; it touches no memory of this one.
    unsafe { libc::_exit(i32::from(code)) }
}

/// The last layer of the shutdown bound (see `sluice::shutdown`): a plain OS thread, so neither
/// a busy runtime nor a blocked librdkafka call can delay it, ends the process with exit code
/// 4 once `timeout` has passed since the signal and `dispatch` has not returned.
fn start_watchdog(timeout: Duration) {
    let spawned = std::thread::Builder::new()
        .name("sluice-shutdown-watchdog".into())
        .spawn(move || {
            std::thread::sleep(timeout);
            if RETURNED.load(Ordering::SeqCst) {
                return;
            }
            let msg = format!(
                "shut down with an unfinished Kafka transaction: the pipeline did not stop within \
                 `shutdown_timeout_ms` ({} ms); nothing of it was reported as committed, and the \
                 next run's fencing settles it and resumes right after the last committed offset",
                timeout.as_millis()
            );
            tracing::warn!(kind = "unfinished", "{msg}");
            eprintln!("stopped: {msg}");
            exit_now(EXIT_UNFINISHED)
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot start the shutdown watchdog; shutdown is bounded by the pipeline's own limits only");
    }
}

fn load(path: &std::path::Path) -> Result<Loaded, Error> {
    sluice::config::process::load_any(path).map_err(Error::definite_from)
}

/// One pipeline of the configuration at `path`, and the API it is served on: the file's own
/// pipeline, or, in a process file, the one named `pipeline` (which may be left out when
/// the process runs only one).
fn load_one(path: &std::path::Path, pipeline: Option<&str>) -> Result<(Config, ApiConfig), Error> {
    match load(path)? {
        Loaded::Single(cfg) => match pipeline {
            Some(name) if name != cfg.name => Err(Error::definite(format!(
                "--pipeline {name:?}: `{}` is the file of pipeline {:?} only; leave --pipeline                  out, or pass the process file that runs {name:?}",
                path.display(),
                cfg.name
            ))),
            _ => {
                let api = cfg.api.clone();
                Ok((*cfg, api))
            }
        },
        Loaded::Process(p) => {
            let names: Vec<&str> = p.pipelines.iter().map(|(_, c)| c.name.as_str()).collect();
            let found = match pipeline {
                Some(name) => p.pipelines.iter().find(|(_, c)| c.name == name),
                None if p.pipelines.len() == 1 => p.pipelines.first(),
                None => {
                    return Err(Error::definite(format!(
                        "`{}` is a process file of {} pipelines ({}): name one with                          --pipeline NAME",
                        path.display(),
                        names.len(),
                        names.join(", ")
                    )))
                }
            };
            match found {
                Some((_, cfg)) => Ok((cfg.clone(), p.settings.api.clone())),
                None => Err(Error::definite(format!(
                    "--pipeline {:?}: the process file `{}` runs no such pipeline; its                      pipelines are {}",
                    pipeline.unwrap_or_default(),
                    path.display(),
                    names.join(", ")
                ))),
            }
        }
    }
}

async fn dispatch(cli: Cli) -> Result<ExitCode, Error> {
    match cli.cmd {
        Cmd::Run { config, start_over } => {
            let loaded = load(&config)?;
            let timeout = match &loaded {
                Loaded::Single(cfg) => {
                    tracing::info!(name = %cfg.name, delivery = %cfg.delivery, config = %cfg.redacted_json(), "starting");
                    cfg.shutdown_timeout()
                }
                Loaded::Process(p) => sluice::app::shutdown_timeout(p),
            };
            let (tx, rx) = watch::channel(false);
            tokio::spawn(async move {
                wait_for_signal().await;
                start_watchdog(timeout);
                tracing::info!(
                    shutdown_timeout_ms = timeout.as_millis() as u64,
                    "shutdown requested: finishing the open transaction"
                );
                let _ = tx.send(true);
            });
            let options = sluice::app::RunOptions { start_over };
            match loaded {
                Loaded::Single(cfg) => sluice::app::run_with(*cfg, rx, options).await?,
                Loaded::Process(p) => sluice::app::run_process(*p, rx, options).await?,
            }
            tracing::info!("stopped");
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Check { config } => {
            let (pipelines, cluster) = match load(&config)? {
                Loaded::Single(cfg) => (vec![*cfg], None),
                Loaded::Process(p) => (
                    p.pipelines.into_iter().map(|(_, c)| c).collect::<Vec<_>>(),
                    p.settings.cluster,
                ),
            };
            let several = pipelines.len() > 1;
            let mut bad = 0;
            if let (Some(cluster), Some(first)) = (&cluster, pipelines.first()) {
                println!("== cluster {}", cluster.group);
                let names: Vec<String> = pipelines.iter().map(|c| c.name.clone()).collect();
                let base = sluice::app::client_config(first);
                for i in sluice::cluster::check(&base, cluster, &names).await {
                    match &i.problem {
                        None => println!("ok       {:<20} {}", i.name, i.detail),
                        Some(p) => {
                            bad += 1;
                            println!("PROBLEM  {:<20} {}\n         {p}", i.name, i.detail);
                        }
                    }
                }
            }
            for cfg in &pipelines {
                if several {
                    println!("== pipeline {}", cfg.name);
                }
                let items = sluice::app::preflight(cfg).await?;
                for i in &items {
                    match &i.problem {
                        None => println!("ok       {:<20} {}", i.name, i.detail),
                        Some(p) => {
                            bad += 1;
                            println!("PROBLEM  {:<20} {}\n         {p}", i.name, i.detail);
                        }
                    }
                }
            }
            if bad > 0 {
                println!("{bad} problem(s)");
                Ok(ExitCode::from(1))
            } else {
                println!("all checks passed");
                Ok(ExitCode::SUCCESS)
            }
        }
        Cmd::Snapshot {
            config,
            tables,
            filter,
            no_wait,
            pipeline,
        } => {
            let (cfg, api) = load_one(&config, pipeline.as_deref())?;
            // The per-pipeline path when the process may run several.
            let path_name = pipeline.is_some().then_some(cfg.name.as_str());
            let request = sluice::snapshot::adhoc::AdhocRequest {
                tables,
                filter,
                id: None,
            };
            sluice::api::client::snapshot_command(&api, request, !no_wait, path_name).await?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::BenchProduce {
            bootstrap,
            topic,
            records,
            value_bytes,
            txn_records,
            txn_max_ms,
            idempotent,
            batched,
            header,
            check_markers,
            properties,
        } => {
            let bench = sluice::app::ProduceBench {
                bootstrap,
                topic,
                records,
                value_bytes,
                txn_records,
                txn_max_ms,
                transactional: !idempotent,
                batched,
                header: header.unwrap_or(!idempotent),
                check_markers,
                properties,
            };
            // librdkafka's calls block: on a thread of their own, not on the runtime's.
            let result = tokio::task::spawn_blocking(move || bench.run())
                .await
                .map_err(Error::definite_from)??;
            println!(
                "{}",
                serde_json::to_string(&result).map_err(Error::definite_from)?
            );
            Ok(ExitCode::SUCCESS)
        }
        Cmd::BenchSource {
            config,
            pipeline,
            rows,
            max_seconds,
        } => {
            let (cfg, _) = load_one(&config, pipeline.as_deref())?;
            let max = std::time::Duration::from_secs(max_seconds);
            let result = sluice::app::bench_source(&cfg, rows, max).await?;
            println!(
                "{}",
                serde_json::to_string(&result).map_err(Error::definite_from)?
            );
            Ok(ExitCode::SUCCESS)
        }
        Cmd::BenchLatency {
            source,
            table,
            bootstrap,
            topic,
            rate,
            txn_rows,
            connections,
            warmup_s,
            seconds,
            drain_timeout_s,
            topic_wait_s,
            payload_bytes,
            fetch_wait_ms,
            key_field,
            max_in_flight,
            behind_limit_ms,
            properties,
        } => {
            let bench = sluice::app::LatencyBench {
                source,
                table,
                bootstrap,
                topic,
                rate,
                txn_rows,
                connections,
                warmup_s,
                seconds,
                drain_timeout_s,
                topic_wait_s,
                payload_bytes,
                fetch_wait_ms,
                key_field,
                max_in_flight,
                behind_limit_ms,
                properties,
            };
            let result = bench.run().await?;
            println!(
                "{}",
                serde_json::to_string(&result).map_err(Error::definite_from)?
            );
            match result.problem(drain_timeout_s) {
                Some(problem) => Err(Error::definite(problem)),
                None => Ok(ExitCode::SUCCESS),
            }
        }
        Cmd::Offsets { cmd } => match cmd {
            OffsetsCmd::Show { config, pipeline } => {
                let (cfg, _) = load_one(&config, pipeline.as_deref())?;
                let rec = tokio::task::spawn_blocking(move || show_offset(&cfg))
                    .await
                    .map_err(Error::definite_from)??;
                match rec {
                    Some(r) => {
                        println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
                        // The summary goes to stderr: stdout stays one JSON document.
                        if let Some(s) = &r.snapshot {
                            eprint!("{}", sluice::snapshot::progress::summary(s));
                        }
                    }
                    None => println!("no committed offset"),
                }
                Ok(ExitCode::SUCCESS)
            }
            OffsetsCmd::Set {
                config,
                position,
                pipeline,
            } => {
                let (cfg, _) = load_one(&config, pipeline.as_deref())?;
                let pos = sluice::sink::offsets::parse_operator_position(&position)?;
                let shown = pos.to_string();
                tokio::task::spawn_blocking(move || {
                    sluice::sink::set_offset(&sluice::app::sink_settings(&cfg), pos)
                })
                .await
                .map_err(Error::definite_from)??;
                println!("committed offset set to {shown}; any running instance was fenced");
                Ok(ExitCode::SUCCESS)
            }
        },
    }
}

/// The committed offset record: from the pipeline's offsets topic, or, before the first run
/// moved it there, from the shared one (noted on stderr).
fn show_offset(cfg: &Config) -> Result<Option<sluice::sink::offsets::OffsetRecord>, Error> {
    use sluice::sink::offsets::read_committed_offset;
    use sluice::sink::reader::Until;
    let client = sluice::app::client_config(cfg);
    let read = |topic: &str| {
        read_committed_offset(
            &client,
            topic,
            &cfg.name,
            Until::CapturedHigh,
            Duration::from_secs(30),
        )
    };
    let own = cfg.offsets_topic();
    let rec = read(&own)?;
    if rec.is_some() || cfg.kafka.offsets_topic.is_some() {
        return Ok(rec);
    }
    let shared = sluice::config::topics::SHARED_OFFSETS_TOPIC;
    let old = read(shared)?;
    if old.is_some() {
        eprintln!("(in the shared `{shared}`; the next `sluice run` moves it to `{own}`)");
    }
    Ok(old)
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let term = signal(SignalKind::terminate());
    let int = signal(SignalKind::interrupt());
    match (term, int) {
        (Ok(mut t), Ok(mut i)) => {
            tokio::select! {
                _ = t.recv() => {}
                _ = i.recv() => {}
            }
        }
        _ => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
