//! A minimal TCP fault proxy in front of a database server, for sluice's connections only
//! (the workload writes to the server directly).
//!
//! Faults: [`DbProxy::reset_all`] closes every open connection at once; [`DbProxy::pause`]
//! blackholes both directions (connections stay open, nothing is delivered or lost until
//! [`DbProxy::resume`]; new connections are accepted and wait too); [`DbProxy::throttle`]
//! limits each direction to a byte rate and cuts the stream into small, uneven writes, so the
//! peer's reads return packet fragments.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

#[derive(Default)]
struct Faults {
    paused: bool,
    /// Bytes per second per direction while set.
    throttle: Option<u64>,
    /// Bumped by every reset; a connection of an older generation closes.
    generation: u64,
}

struct Shared {
    faults: Mutex<Faults>,
    changed: Condvar,
    stop: AtomicBool,
    accepted: AtomicU64,
    bytes: AtomicU64,
    /// Live connections (both sockets) by id, for resets.
    conns: Mutex<HashMap<u64, (TcpStream, TcpStream)>>,
}

impl Shared {
    fn faults(&self) -> MutexGuard<'_, Faults> {
        self.faults.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits while paused; the throttle rate in force, or `Err` when the connection must
    /// close (reset, proxy stopped).
    fn wait_clear(&self, generation: u64) -> Result<Option<u64>, ()> {
        let mut f = self.faults();
        loop {
            if self.stop.load(Ordering::Relaxed) || f.generation != generation {
                return Err(());
            }
            if !f.paused {
                return Ok(f.throttle);
            }
            f = self
                .changed
                .wait_timeout(f, Duration::from_millis(100))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

/// The proxy; dropping it closes every connection and the listener.
pub struct DbProxy {
    shared: Arc<Shared>,
    port: u16,
    upstream: u16,
}

impl DbProxy {
    /// Listens on a free loopback port and forwards to `127.0.0.1:upstream`.
    pub fn start(upstream: u16) -> DbProxy {
        let listener = TcpListener::bind(("127.0.0.1", 0)).expect("db proxy: bind a free port");
        let port = listener.local_addr().expect("local addr").port();
        listener.set_nonblocking(true).expect("nonblocking");
        let shared = Arc::new(Shared {
            faults: Mutex::new(Faults::default()),
            changed: Condvar::new(),
            stop: AtomicBool::new(false),
            accepted: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            conns: Mutex::new(HashMap::new()),
        });
        let s = shared.clone();
        std::thread::spawn(move || accept_loop(listener, upstream, s));
        DbProxy {
            shared,
            port,
            upstream,
        }
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Closes every open connection (new ones are accepted as before).
    pub fn reset_all(&self) {
        self.shared.faults().generation += 1;
        self.shared.changed.notify_all();
        let conns =
            std::mem::take(&mut *self.shared.conns.lock().unwrap_or_else(|e| e.into_inner()));
        for (a, b) in conns.into_values() {
            let _ = a.shutdown(Shutdown::Both);
            let _ = b.shutdown(Shutdown::Both);
        }
    }

    /// Stops all traffic in both directions until [`DbProxy::resume`].
    pub fn pause(&self) {
        self.shared.faults().paused = true;
        self.shared.changed.notify_all();
    }

    /// Ends a pause.
    pub fn resume(&self) {
        self.shared.faults().paused = false;
        self.shared.changed.notify_all();
    }

    /// Limits each direction of every connection to `bytes_per_sec` (None: no limit).
    pub fn throttle(&self, bytes_per_sec: Option<u64>) {
        self.shared.faults().throttle = bytes_per_sec;
        self.shared.changed.notify_all();
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.shared.accepted.load(Ordering::Relaxed)
    }

    /// Bytes forwarded so far (both directions).
    pub fn bytes(&self) -> u64 {
        self.shared.bytes.load(Ordering::Relaxed)
    }
}

impl Drop for DbProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.reset_all();
    }
}

fn accept_loop(listener: TcpListener, upstream: u16, shared: Arc<Shared>) {
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
        let server = match TcpStream::connect_timeout(
            &([127, 0, 0, 1], upstream).into(),
            Duration::from_secs(5),
        ) {
            Ok(s) => s,
            Err(_) => {
                // The server is down: the client sees its connection closed.
                let _ = client.shutdown(Shutdown::Both);
                continue;
            }
        };
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let id = shared.accepted.fetch_add(1, Ordering::Relaxed);
        let (Ok(c2), Ok(s2), Ok(c3), Ok(s3)) = (
            client.try_clone(),
            server.try_clone(),
            client.try_clone(),
            server.try_clone(),
        ) else {
            continue;
        };
        shared
            .conns
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, (c2, s2));
        let s = shared.clone();
        std::thread::spawn(move || pump(c3, s3, &s, generation, id));
        let s = shared.clone();
        std::thread::spawn(move || pump(server, client, &s, generation, id));
    }
}

/// Sizes of the pieces a throttled stream is cut into, in turn.
const PIECES: [usize; 8] = [1, 3, 7, 64, 2, 333, 1024, 5];

/// Copies `from` to `to`, obeying pause, throttle and reset.
fn pump(mut from: TcpStream, mut to: TcpStream, shared: &Shared, generation: u64, id: u64) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut piece = 0usize;
    'outer: loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut at = 0;
        while at < n {
            let Ok(rate) = shared.wait_clear(generation) else {
                break 'outer;
            };
            let len = match rate {
                None => n - at,
                Some(_) => {
                    piece = (piece + 1) % PIECES.len();
                    PIECES[piece].min(n - at)
                }
            };
            let started = Instant::now();
            if to.write_all(&buf[at..at + len]).is_err() {
                break 'outer;
            }
            shared.bytes.fetch_add(len as u64, Ordering::Relaxed);
            at += len;
            if let Some(rate) = rate {
                let due = Duration::from_secs_f64(len as f64 / rate.max(1) as f64);
                if let Some(rest) = due.checked_sub(started.elapsed()) {
                    std::thread::sleep(rest);
                }
            }
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
    shared
        .conns
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&id);
}
