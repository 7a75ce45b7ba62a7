//! A fault proxy in front of the test bed's Kafka broker, for tests that stall, cut or hold
//! Kafka traffic.
//!
//! The broker has a second listener (`PROXIED`, see `scripts/lib/kafka.sh`) on
//! `127.0.0.1:9094` that *advertises* `127.0.0.1:19094`. The proxy listens on 19094 and
//! forwards to 9094, so a client bootstrapped at [`KafkaProxy::bootstrap`] is told by the
//! broker itself to reach every broker and the transaction coordinator through the proxy: all
//! of its traffic crosses it, with no rewriting of Metadata or FindCoordinator answers.
//!
//! The client → broker direction is read request by request (4-byte length, then the request
//! header: api key, api version, correlation id), so chosen requests can be *held* (delayed
//! while later requests on the same connection queue behind them, as on a stalled broker).
//! Both directions can be *paused* (a blackhole: nothing is delivered, nothing is lost, the
//! peers see silence until it ends or they give up) and every connection can be *reset*.
//!
//! Only one test at a time can own the advertised port: the tests that use it live in their
//! own test binary and take [`KafkaProxy::start`]'s lock.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Kafka API keys of the requests a test may want to hold.
pub mod api {
    /// Produce.
    pub const PRODUCE: i16 = 0;
    /// Fetch.
    pub const FETCH: i16 = 1;
    /// Metadata.
    pub const METADATA: i16 = 3;
    /// FindCoordinator.
    pub const FIND_COORDINATOR: i16 = 10;
    /// InitProducerId (`init_transactions`).
    pub const INIT_PRODUCER_ID: i16 = 22;
    /// AddPartitionsToTxn.
    pub const ADD_PARTITIONS_TO_TXN: i16 = 24;
    /// AddOffsetsToTxn.
    pub const ADD_OFFSETS_TO_TXN: i16 = 25;
    /// EndTxn (commit or abort).
    pub const END_TXN: i16 = 26;
}

/// The port the broker's `PROXIED` listener advertises (`SLUICE_KAFKA_PROXY_PORT`).
pub fn advertised_port() -> u16 {
    std::env::var("SLUICE_KAFKA_PROXY_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(19094)
}

/// The port of the broker's `PROXIED` listener (`SLUICE_KAFKA_PROXIED_PORT`).
pub fn proxied_port() -> u16 {
    std::env::var("SLUICE_KAFKA_PROXIED_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(9094)
}

/// What the proxy is told to do to the traffic.
#[derive(Default)]
struct Faults {
    /// Requests with these api keys wait while they are held.
    held: BTreeSet<i16>,
    /// Nothing crosses in either direction while set.
    paused: bool,
    /// Bumped by every reset; a connection older than the current generation closes.
    generation: u64,
}

struct Shared {
    faults: Mutex<Faults>,
    changed: Condvar,
    stop: AtomicBool,
    /// Requests seen, by api key (index = key, up to 127).
    seen: Vec<AtomicU64>,
    /// Requests that had to wait because they were held.
    held_count: AtomicU64,
    /// `held_count` when the latest [`KafkaProxy::hold`] began.
    held_at_hold: AtomicU64,
    /// Connections accepted.
    accepted: AtomicU64,
    /// Live connections (both sockets), for resets.
    conns: Mutex<Vec<(TcpStream, TcpStream)>>,
}

impl Shared {
    fn faults(&self) -> MutexGuard<'_, Faults> {
        self.faults.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits while the proxy is paused (or, for a request with `key`, while `key` is held).
    /// Returns false when the connection must close (reset or proxy stopped).
    fn wait_clear(&self, key: Option<i16>, generation: u64) -> bool {
        let mut f = self.faults();
        let mut counted = false;
        loop {
            if self.stop.load(Ordering::Relaxed) || f.generation != generation {
                return false;
            }
            let held = key.is_some_and(|k| f.held.contains(&k));
            if !f.paused && !held {
                return true;
            }
            if held && !counted {
                counted = true;
                self.held_count.fetch_add(1, Ordering::Relaxed);
            }
            f = self
                .changed
                .wait_timeout(f, Duration::from_millis(100))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

/// The proxy; dropping it closes every connection and frees the port.
pub struct KafkaProxy {
    shared: Arc<Shared>,
    port: u16,
    _lock: MutexGuard<'static, ()>,
}

static PORT_LOCK: Mutex<()> = Mutex::new(());

impl KafkaProxy {
    /// Listens on the advertised port and forwards to the broker's `PROXIED` listener.
    pub fn start() -> KafkaProxy {
        let lock = PORT_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let port = advertised_port();
        let upstream = format!("127.0.0.1:{}", proxied_port());
        let deadline = Instant::now() + Duration::from_secs(30);
        let listener = loop {
            match TcpListener::bind(("127.0.0.1", port)) {
                Ok(l) => break l,
                Err(e) if Instant::now() < deadline => {
                    eprintln!("kafka proxy: port {port} busy ({e}); waiting");
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(e) => panic!("kafka proxy: cannot listen on 127.0.0.1:{port}: {e}"),
            }
        };
        listener.set_nonblocking(true).expect("nonblocking");
        let shared = Arc::new(Shared {
            faults: Mutex::new(Faults::default()),
            changed: Condvar::new(),
            stop: AtomicBool::new(false),
            seen: (0..128).map(|_| AtomicU64::new(0)).collect(),
            held_count: AtomicU64::new(0),
            held_at_hold: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            conns: Mutex::new(Vec::new()),
        });
        let s = shared.clone();
        std::thread::spawn(move || accept_loop(listener, &upstream, s));
        KafkaProxy {
            shared,
            port,
            _lock: lock,
        }
    }

    /// The bootstrap address for clients that must go through the proxy.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Holds every request with one of these api keys (and what follows it on its
    /// connection) until [`KafkaProxy::release`].
    pub fn hold(&self, keys: &[i16]) {
        let mut faults = self.shared.faults();
        self.shared
            .held_at_hold
            .store(self.held_count(), Ordering::Relaxed);
        faults.held.extend(keys.iter().copied());
        drop(faults);
        self.shared.changed.notify_all();
    }

    /// Lets held requests go.
    pub fn release(&self) {
        self.shared.faults().held.clear();
        self.shared.changed.notify_all();
    }

    /// Stops all traffic in both directions (connections stay open) until [`KafkaProxy::resume`].
    pub fn pause(&self) {
        self.shared.faults().paused = true;
        self.shared.changed.notify_all();
    }

    /// Ends a pause.
    pub fn resume(&self) {
        self.shared.faults().paused = false;
        self.shared.changed.notify_all();
    }

    /// Closes every open connection at once (new ones are accepted as before).
    pub fn reset_all(&self) {
        self.shared.faults().generation += 1;
        self.shared.changed.notify_all();
        let conns = std::mem::take(&mut *self.shared.conns.lock().unwrap());
        for (a, b) in conns {
            let _ = a.shutdown(Shutdown::Both);
            let _ = b.shutdown(Shutdown::Both);
        }
    }

    /// Requests with this api key seen so far.
    pub fn seen(&self, key: i16) -> u64 {
        self.shared.seen[key as usize & 127].load(Ordering::Relaxed)
    }

    /// Requests that waited because they were held.
    pub fn held_count(&self) -> u64 {
        self.shared.held_count.load(Ordering::Relaxed)
    }

    /// Waits, up to `timeout`, until a request has been held since the latest
    /// [`KafkaProxy::hold`] — also one held before this call: a test that holds, then writes,
    /// then waits must not miss a request its write caused while the write was still running.
    pub fn wait_held(&self, timeout: Duration) -> bool {
        let before = self.shared.held_at_hold.load(Ordering::Relaxed);
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.held_count() > before {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for KafkaProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.reset_all();
    }
}

fn accept_loop(listener: TcpListener, upstream: &str, shared: Arc<Shared>) {
    while !shared.stop.load(Ordering::Relaxed) {
        let client = match listener.accept() {
            Ok((c, _)) => c,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
            Err(_) => continue,
        };
        let generation = shared.faults().generation;
        let _ = client.set_nonblocking(false);
        let Ok(server) = TcpStream::connect(upstream) else {
            let _ = client.shutdown(Shutdown::Both);
            continue;
        };
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        shared.accepted.fetch_add(1, Ordering::Relaxed);
        if let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) {
            shared.conns.lock().unwrap().push((c2, s2));
        }
        let (c_read, s_write) = (client.try_clone().unwrap(), server.try_clone().unwrap());
        let s = shared.clone();
        std::thread::spawn(move || requests(c_read, s_write, &s, generation));
        let s = shared.clone();
        std::thread::spawn(move || responses(server, client, &s, generation));
    }
}

/// Client → broker, one request at a time.
fn requests(mut from: TcpStream, mut to: TcpStream, shared: &Shared, generation: u64) {
    let mut frame = Vec::new();
    loop {
        let mut len = [0u8; 4];
        if from.read_exact(&mut len).is_err() {
            break;
        }
        let n = i32::from_be_bytes(len);
        if !(4..=100 << 20).contains(&n) {
            break; // not a Kafka request: end the connection
        }
        frame.clear();
        frame.extend_from_slice(&len);
        frame.resize(4 + n as usize, 0);
        if from.read_exact(&mut frame[4..]).is_err() {
            break;
        }
        let key = i16::from_be_bytes([frame[4], frame[5]]);
        shared.seen[key as usize & 127].fetch_add(1, Ordering::Relaxed);
        if !shared.wait_clear(Some(key), generation) || to.write_all(&frame).is_err() {
            break;
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

/// Broker → client, as bytes.
fn responses(mut from: TcpStream, mut to: TcpStream, shared: &Shared, generation: u64) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if !shared.wait_clear(None, generation) || to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}
