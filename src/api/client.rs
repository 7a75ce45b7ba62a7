//! `sluice snapshot`: asks a running `sluice run` for an ad-hoc snapshot over its API
//! (`POST /snapshots`, or `POST /pipelines/{name}/snapshots` for one of several pipelines),
//! prints the request's id, then follows the request's entries in `GET /snapshots` (or
//! `GET /pipelines/{name}/snapshots`) with a progress line on stderr until they are all done.
//!
//! The arithmetic of the progress line (rows/s over a sliding window, percent, ETA, the text)
//! is in pure functions.

use std::collections::VecDeque;
use std::io::{IsTerminal, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant};

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::config::{ApiConfig, Secret};
use crate::error::{Error, Result};
use crate::snapshot::adhoc::{Accepted, AdhocRequest, REQUEST_TIMEOUT};
use crate::snapshot::progress::SnapshotProgress;

/// How often `sluice snapshot` polls the progress.
pub const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// How long an accepted request may take to show up in the progress.
pub const APPEAR_WITHIN: Duration = Duration::from_secs(60);

/// Consecutive failed polls (API unreachable or busy) before giving up.
pub const MAX_POLL_FAILURES: u32 = 10;

/// Timeout of a `GET`.
const GET_TIMEOUT: Duration = Duration::from_secs(10);

/// Window over which rows/s is measured.
pub const RATE_WINDOW: Duration = Duration::from_secs(10);

/// Characters escaped in a pipeline name used as a path segment: all but `A-Za-z0-9-._~`.
const PATH_SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A client of one sluice API.
pub struct Client {
    http: reqwest::Client,
    base: String,
    /// The path of the snapshot endpoints: `/snapshots`, or `/pipelines/{name}/snapshots`
    /// (see [`Client::for_pipeline`]).
    snapshots: String,
    addr: SocketAddr,
    token: Option<Secret<String>>,
}

impl Client {
    /// A client of the API `sluice run` serves with `cfg`: `api.listen` (a wildcard address
    /// such as `0.0.0.0` is reached on loopback) and `api.token`. Refuses a disabled API and
    /// port 0 (the port of such a server is only in its log).
    pub fn from_config(cfg: &ApiConfig) -> Result<Client> {
        if !cfg.enabled {
            return Err(Error::definite(
                "api.enabled = false: `sluice run` serves no API with this configuration; set \
                 api.enabled = true (or unset SLUICE_API_ENABLED) and restart it",
            ));
        }
        let mut addr = cfg.listen_addr().ok_or_else(|| {
            Error::definite(format!(
                "api.listen: found {:?}, which is not a socket address; expected an IP address \
                 and a port, e.g. \"127.0.0.1:8089\"",
                cfg.listen
            ))
        })?;
        if addr.port() == 0 {
            return Err(Error::definite(format!(
                "api.listen = {:?} has port 0: the running sluice took any free port, which \
                 only its log names (`api listening addr=...`); set a fixed port in api.listen \
                 (e.g. \"127.0.0.1:8089\") for `sluice snapshot`",
                cfg.listen
            )));
        }
        if addr.ip().is_unspecified() {
            addr.set_ip(match addr.ip() {
                IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
            });
        }
        Client::new(addr, cfg.token().map(str::to_owned))
    }

    /// A client of the API at `addr`, sending `token` (when `Some`) as a bearer token.
    pub fn new(addr: SocketAddr, token: Option<String>) -> Result<Client> {
        let http = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| Error::definite(format!("cannot set up the HTTP client: {e}")))?;
        Ok(Client {
            http,
            base: format!("http://{addr}"),
            snapshots: "/snapshots".to_string(),
            addr,
            token: token.filter(|t| !t.is_empty()).map(Secret::new),
        })
    }

    /// The API's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// This client for pipeline `name` (`Some`): the snapshot endpoints become
    /// `/pipelines/{name}/snapshots` (the name percent-encoded). With `None` they stay
    /// `/snapshots`, which serves the only pipeline of a process.
    pub fn for_pipeline(mut self, name: Option<&str>) -> Client {
        self.snapshots = match name {
            Some(name) => {
                let name = utf8_percent_encode(name, PATH_SEGMENT);
                format!("/pipelines/{name}/snapshots")
            }
            None => "/snapshots".to_string(),
        };
        self
    }

    /// `POST /snapshots` (or `/pipelines/{name}/snapshots`).
    pub async fn request(&self, request: &AdhocRequest) -> Result<Accepted> {
        let body = serde_json::to_vec(request)
            .map_err(|e| Error::definite(format!("cannot encode the request: {e}")))?;
        let mut builder = self
            .http
            .post(format!("{}{}", self.base, self.snapshots))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            // The server waits for the stream at most twice REQUEST_TIMEOUT.
            .timeout(REQUEST_TIMEOUT * 2 + Duration::from_secs(10))
            .body(body);
        if let Some(token) = &self.token {
            builder = builder.bearer_auth(token.expose());
        }
        self.send(builder, &format!("POST {}", self.snapshots))
            .await
    }

    /// `GET /snapshots` (or `/pipelines/{name}/snapshots`): the snapshot progress (`None`
    /// before any snapshot).
    pub async fn progress(&self) -> Result<Option<SnapshotProgress>> {
        #[derive(Deserialize)]
        struct Answer {
            snapshot: Option<SnapshotProgress>,
        }
        let builder = self
            .http
            .get(format!("{}{}", self.base, self.snapshots))
            .timeout(GET_TIMEOUT);
        let answer: Answer = self
            .send(builder, &format!("GET {}", self.snapshots))
            .await?;
        Ok(answer.snapshot)
    }

    async fn send<T: DeserializeOwned>(
        &self,
        builder: reqwest::RequestBuilder,
        what: &str,
    ) -> Result<T> {
        let response = builder.send().await.map_err(|e| self.unreachable(&e))?;
        let status = response.status();
        let body = response.bytes().await.map_err(|e| self.unreachable(&e))?;
        if status.is_success() {
            return serde_json::from_slice(&body).map_err(|e| {
                Error::definite(format!(
                    "{what} at {}: the answer is not what sluice's API sends ({e}); is \
                     api.listen the address of `sluice run`'s API?",
                    self.base
                ))
            });
        }
        #[derive(Deserialize)]
        struct ErrorBody {
            error: String,
        }
        let message = serde_json::from_slice::<ErrorBody>(&body)
            .map(|b| b.error)
            .unwrap_or_else(|_| String::from_utf8_lossy(&body).chars().take(500).collect());
        let text = format!("{what} at {}: {status}: {message}", self.base);
        Err(
            if status == reqwest::StatusCode::SERVICE_UNAVAILABLE
                || status == reqwest::StatusCode::TOO_MANY_REQUESTS
            {
                Error::transient(text)
            } else {
                Error::definite(text)
            },
        )
    }

    fn unreachable(&self, e: &reqwest::Error) -> Error {
        let what = if e.is_timeout() {
            "no answer in time from"
        } else {
            "cannot reach"
        };
        Error::transient(format!(
            "{what} the sluice API at {} ({}); is `sluice run` running with the API enabled \
             at {}?",
            self.base,
            error_chain(e),
            self.addr
        ))
    }

    /// Polls `GET /snapshots` every `interval` until every entry of request `id` is done;
    /// calls `show` after each poll that found them. Fails when they do not appear within
    /// `appear_within`, disappear, or the API fails [`MAX_POLL_FAILURES`] times in a row
    /// (an answer saying the request is wrong fails at once).
    pub async fn wait_done(
        &self,
        id: &str,
        interval: Duration,
        appear_within: Duration,
        mut show: impl FnMut(&Status),
    ) -> Result<Status> {
        let started = Instant::now();
        let mut rate = Rate::new(RATE_WINDOW);
        let mut seen = false;
        let mut failures = 0u32;
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let progress = match self.progress().await {
                Ok(p) => {
                    failures = 0;
                    p
                }
                Err(e) if e.kind() == crate::error::ErrorKind::Transient => {
                    failures += 1;
                    if failures >= MAX_POLL_FAILURES {
                        return Err(e.context(format!("{failures} polls in a row failed")));
                    }
                    continue;
                }
                Err(e) => return Err(e),
            };
            let Some(totals) = progress.as_ref().and_then(|p| Totals::of(p, id)) else {
                if seen {
                    return Err(Error::definite(format!(
                        "the tables of request {id} are no longer in the snapshot progress (the \
                         pipeline restarted with another snapshot, or dropped finished \
                         requests); `sluice offsets show` prints the committed progress"
                    )));
                }
                if started.elapsed() > appear_within {
                    return Err(Error::definite(format!(
                        "request {id} was accepted but its tables did not appear in the snapshot \
                         progress within {}s; see the log of `sluice run`",
                        appear_within.as_secs()
                    )));
                }
                continue;
            };
            seen = true;
            rate.add(started.elapsed(), totals.rows);
            let status = Status {
                totals,
                rows_per_second: rate.per_second(),
            };
            show(&status);
            if status.totals.all_done() {
                return Ok(status);
            }
        }
    }
}

/// The messages of an error and its sources, joined by `: `.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

/// The sum over the progress entries of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Totals {
    /// Rows emitted.
    pub rows: u64,
    /// Rows estimated when the tables were planned (without the request's filter).
    pub estimate: u64,
    /// The request's tables.
    pub tables: usize,
    /// Of which done.
    pub done: usize,
}

impl Totals {
    /// The totals of the entries whose `request` is `id`; `None` when there are none.
    pub fn of(progress: &SnapshotProgress, id: &str) -> Option<Totals> {
        let mut totals = Totals {
            rows: 0,
            estimate: 0,
            tables: 0,
            done: 0,
        };
        for t in progress
            .tables
            .iter()
            .filter(|t| t.request.as_deref() == Some(id))
        {
            totals.rows = totals.rows.saturating_add(t.rows);
            // A done table's estimate is what it had (for the percentage of the others).
            totals.estimate = totals.estimate.saturating_add(if t.done {
                t.rows
            } else {
                t.estimate.max(t.rows)
            });
            totals.tables += 1;
            totals.done += usize::from(t.done);
        }
        (totals.tables > 0).then_some(totals)
    }

    /// Whether every table is done.
    pub fn all_done(&self) -> bool {
        self.done == self.tables
    }

    /// Percent done, 0 to 100; 100 only when every table is done (estimates are estimates).
    pub fn percent(&self) -> f64 {
        if self.all_done() {
            return 100.0;
        }
        if self.estimate == 0 {
            return 0.0;
        }
        (self.rows as f64 * 100.0 / self.estimate as f64).min(99.9)
    }

    /// Time left at `rows_per_second`; `None` when unknown (no rate yet, or no rows left by
    /// the estimate while tables are not done).
    pub fn eta(&self, rows_per_second: Option<f64>) -> Option<Duration> {
        if self.all_done() {
            return Some(Duration::ZERO);
        }
        let rate = rows_per_second.filter(|r| *r > 0.0 && r.is_finite())?;
        let left = self.estimate.checked_sub(self.rows).filter(|l| *l > 0)?;
        Some(Duration::from_secs_f64((left as f64 / rate).min(1e9)))
    }
}

/// A request's state after a poll.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    /// Its totals.
    pub totals: Totals,
    /// Rows per second over [`RATE_WINDOW`]; `None` until two polls are apart.
    pub rows_per_second: Option<f64>,
}

impl Status {
    /// The progress line: bar, percent, rows done / estimated, rows/s, ETA, tables done.
    pub fn line(&self, id: &str) -> String {
        let t = &self.totals;
        let percent = t.percent();
        const WIDTH: usize = 24;
        let filled = ((percent / 100.0) * WIDTH as f64).floor() as usize;
        let filled = filled.min(WIDTH);
        let rate = match self.rows_per_second {
            Some(r) => format!("{} rows/s", group(r.round() as u64)),
            None => "- rows/s".to_string(),
        };
        let eta = match t.eta(self.rows_per_second) {
            Some(d) => format!("ETA {}", duration(d)),
            None => "ETA -".to_string(),
        };
        format!(
            "snapshot {id} [{}{}] {percent:5.1}% {}/{} rows, {rate}, {eta}, {}/{} tables done",
            "#".repeat(filled),
            ".".repeat(WIDTH - filled),
            group(t.rows),
            group(t.estimate),
            t.done,
            t.tables
        )
    }
}

/// Rows per second over a sliding window of samples.
#[derive(Debug, Clone)]
pub struct Rate {
    window: Duration,
    samples: VecDeque<(Duration, u64)>,
}

impl Rate {
    /// Measures over `window`.
    pub fn new(window: Duration) -> Rate {
        Rate {
            window,
            samples: VecDeque::new(),
        }
    }

    /// Adds the row count seen at `at` (time since some fixed start, not decreasing). Keeps
    /// the samples of the last `window` plus the one just before it; at most 1000.
    pub fn add(&mut self, at: Duration, rows: u64) {
        if let Some(&(_, last)) = self.samples.back() {
            if rows < last {
                // The count went back (the request started over): measure afresh.
                self.samples.clear();
            }
        }
        self.samples.push_back((at, rows));
        while self.samples.len() > 2
            && self
                .samples
                .get(1)
                .is_some_and(|&(t, _)| at.saturating_sub(t) >= self.window)
        {
            self.samples.pop_front();
        }
        while self.samples.len() > 1000 {
            self.samples.pop_front();
        }
    }

    /// Rows per second between the oldest and newest sample; `None` with fewer than two
    /// samples apart in time.
    pub fn per_second(&self) -> Option<f64> {
        let (t0, r0) = *self.samples.front()?;
        let (t1, r1) = *self.samples.back()?;
        let secs = t1.saturating_sub(t0).as_secs_f64();
        (secs > 0.0).then(|| r1.saturating_sub(r0) as f64 / secs)
    }
}

/// `1234567` → `1,234,567`.
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `3723 s` → `1h02m03s`, `125 s` → `2m05s`, `7 s` → `7s`.
pub fn duration(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, (s / 60) % 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m{sec:02}s"),
        (h, m, sec) => format!("{h}h{m:02}m{sec:02}s"),
    }
}

/// Writes progress lines to stderr: redrawn in place on a terminal, else at most one line a
/// second (and the last one).
struct Display {
    tty: bool,
    /// When the last line was written (not on a terminal).
    last: Option<Instant>,
    /// A line is drawn on the terminal without its newline yet.
    open: bool,
}

impl Display {
    fn show(&mut self, line: &str, last: bool) {
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r{line}\x1b[K");
            self.open = !last;
            if last {
                let _ = writeln!(err);
            }
        } else if last
            || self
                .last
                .is_none_or(|t| t.elapsed() >= Duration::from_secs(1))
        {
            let _ = writeln!(err, "{line}");
            self.last = Some(Instant::now());
        }
        let _ = err.flush();
    }
}

/// `sluice snapshot`: sends the request to the API of `cfg`, prints the id on stdout, then
/// (with `wait`) shows the progress until the request's tables are all done. With `pipeline`
/// (`Some`) it asks pipeline `name` (`/pipelines/{name}/snapshots`), else the only pipeline
/// of the process (`/snapshots`).
pub async fn snapshot_command(
    cfg: &ApiConfig,
    request: AdhocRequest,
    wait: bool,
    pipeline: Option<&str>,
) -> Result<()> {
    let client = Client::from_config(cfg)?.for_pipeline(pipeline);
    let accepted = client.request(&request).await?;
    println!("{}", accepted.id);
    eprintln!(
        "snapshot request {} accepted: {}",
        accepted.id,
        accepted.tables.join(", ")
    );
    if !wait {
        return Ok(());
    }
    let mut display = Display {
        tty: std::io::stderr().is_terminal(),
        last: None,
        open: false,
    };
    let id = accepted.id.clone();
    let status = client
        .wait_done(&id, POLL_INTERVAL, APPEAR_WITHIN, |s| {
            display.show(&s.line(&id), s.totals.all_done())
        })
        .await
        .inspect_err(|_| {
            // The error goes on a line of its own.
            if display.open {
                eprintln!();
            }
        })?;
    eprintln!(
        "snapshot request {id} done: {} rows from {} table(s)",
        group(status.totals.rows),
        status.totals.tables
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::progress::TableProgress;

    fn entry(request: Option<&str>, rows: u64, estimate: u64, done: bool) -> TableProgress {
        let mut t = TableProgress::new("d", "t", estimate);
        t.request = request.map(str::to_owned);
        t.rows = rows;
        t.done = done;
        t
    }

    #[test]
    fn totals_cover_only_the_request() {
        let p = SnapshotProgress {
            started_ms: 0,
            then_stop: false,
            tables: vec![
                entry(None, 5, 5, true),
                entry(Some("a"), 100, 1000, false),
                entry(Some("b"), 7, 7, true),
                entry(Some("a"), 30, 20, true),
            ],
            finished_tables: 0,
            finished_rows: 0,
            finished_requests: Vec::new(),
        };
        let t = Totals::of(&p, "a").unwrap();
        assert_eq!(
            t,
            Totals {
                rows: 130,
                estimate: 1030,
                tables: 2,
                done: 1
            }
        );
        assert!(!t.all_done());
        assert!(Totals::of(&p, "c").is_none());
        assert!(Totals::of(&p, "b").unwrap().all_done());
    }

    #[test]
    fn percent_and_eta() {
        let t = Totals {
            rows: 250,
            estimate: 1000,
            tables: 1,
            done: 0,
        };
        assert_eq!(t.percent(), 25.0);
        assert_eq!(t.eta(Some(75.0)), Some(Duration::from_secs(10)));
        assert_eq!(t.eta(None), None);
        assert_eq!(t.eta(Some(0.0)), None);
        // Past the estimate but not done: below 100 %, no ETA.
        let over = Totals {
            rows: 1200,
            ..t.clone()
        };
        assert_eq!(over.percent(), 99.9);
        assert_eq!(over.eta(Some(10.0)), None);
        let none = Totals {
            estimate: 0,
            rows: 0,
            ..t.clone()
        };
        assert_eq!(none.percent(), 0.0);
        let done = Totals { done: 1, ..t };
        assert_eq!(done.percent(), 100.0);
        assert_eq!(done.eta(None), Some(Duration::ZERO));
    }

    #[test]
    fn rate_over_a_sliding_window() {
        let mut r = Rate::new(Duration::from_secs(10));
        assert_eq!(r.per_second(), None);
        r.add(Duration::from_secs(0), 0);
        assert_eq!(r.per_second(), None);
        r.add(Duration::from_millis(500), 500);
        assert_eq!(r.per_second(), Some(1000.0));
        for s in 1..=30 {
            // 1000 rows/s for 20 s, then 100 rows/s.
            let rows = if s <= 20 {
                s * 1000
            } else {
                20_000 + (s - 20) * 100
            };
            r.add(Duration::from_secs(s), rows);
        }
        // The window holds only the slow part now.
        let rate = r.per_second().unwrap();
        assert!((rate - 100.0).abs() < 1e-9, "{rate}");
        assert!(r.samples.len() <= 12, "{}", r.samples.len());
        // A count going back starts over.
        r.add(Duration::from_secs(31), 10);
        assert_eq!(r.per_second(), None);
    }

    #[test]
    fn line_text() {
        let s = Status {
            totals: Totals {
                rows: 1_234_567,
                estimate: 2_469_134,
                tables: 3,
                done: 1,
            },
            rows_per_second: Some(12_345.4),
        };
        assert_eq!(
            s.line("r1"),
            "snapshot r1 [############............]  50.0% 1,234,567/2,469,134 rows, \
             12,345 rows/s, ETA 1m40s, 1/3 tables done"
        );
        let s = Status {
            totals: Totals {
                rows: 0,
                estimate: 0,
                tables: 1,
                done: 0,
            },
            rows_per_second: None,
        };
        assert_eq!(
            s.line("x"),
            "snapshot x [........................]   0.0% 0/0 rows, - rows/s, ETA -, 0/1 tables \
             done"
        );
    }

    #[test]
    fn numbers_and_durations() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(1_234_567), "1,234,567");
        assert_eq!(duration(Duration::from_secs(7)), "7s");
        assert_eq!(duration(Duration::from_secs(125)), "2m05s");
        assert_eq!(duration(Duration::from_secs(3723)), "1h02m03s");
    }

    #[test]
    fn a_pipeline_name_is_one_path_segment() {
        let c = Client::new("127.0.0.1:8089".parse().unwrap(), None).unwrap();
        assert_eq!(c.snapshots, "/snapshots");
        let c = c.for_pipeline(Some("a b/c.d-e_f~g"));
        assert_eq!(c.snapshots, "/pipelines/a%20b%2Fc.d-e_f~g/snapshots");
        assert_eq!(c.for_pipeline(None).snapshots, "/snapshots");
    }

    #[test]
    fn config_checks() {
        let mut cfg = ApiConfig::default();
        let c = Client::from_config(&cfg).unwrap();
        assert_eq!(c.addr(), "127.0.0.1:8089".parse().unwrap());
        cfg.listen = "0.0.0.0:9000".into();
        assert_eq!(
            Client::from_config(&cfg).unwrap().addr(),
            "127.0.0.1:9000".parse().unwrap()
        );
        cfg.listen = "[::]:9000".into();
        assert_eq!(
            Client::from_config(&cfg).unwrap().addr(),
            "[::1]:9000".parse().unwrap()
        );
        cfg.listen = "127.0.0.1:0".into();
        let e = Client::from_config(&cfg).err().unwrap().to_string();
        assert!(e.contains("port 0") && e.contains("api.listen"), "{e}");
        cfg.listen = "127.0.0.1:8089".into();
        cfg.enabled = false;
        let e = Client::from_config(&cfg).err().unwrap().to_string();
        assert!(e.contains("api.enabled"), "{e}");
    }
}
