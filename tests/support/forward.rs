//! A TCP forwarder that comes up late: a local port that refuses connections (nothing listens)
//! until a delay has passed, then forwards every connection to a target — a database or a
//! broker that is "not up yet" when sluice starts.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A forwarder from `127.0.0.1:port` to a target; stops (and cuts its connections) on drop.
pub struct LateForwarder {
    /// The local port sluice is pointed at.
    pub port: u16,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    stop: AtomicBool,
    listening: AtomicBool,
    accepted: AtomicUsize,
    streams: Mutex<Vec<TcpStream>>,
}

impl LateForwarder {
    /// Reserves a free port now; listens on it after `delay` and forwards to `target`.
    pub fn start(target: &str, delay: Duration) -> LateForwarder {
        // A free port, released again: nothing listens on it until the delay has passed, so
        // connecting is refused as with a server that is down.
        let port = super::reserved_port();
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            listening: AtomicBool::new(false),
            accepted: AtomicUsize::new(0),
            streams: Mutex::new(Vec::new()),
        });
        let target = target.to_string();
        let s = shared.clone();
        let thread = std::thread::spawn(move || serve(port, &target, delay, &s));
        LateForwarder {
            port,
            shared,
            thread: Some(thread),
        }
    }

    /// Whether the port listens yet.
    pub fn listening(&self) -> bool {
        self.shared.listening.load(Ordering::SeqCst)
    }

    /// Connections forwarded so far.
    pub fn accepted(&self) -> usize {
        self.shared.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for LateForwarder {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        for s in self.shared.streams.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(port: u16, target: &str, delay: Duration, s: &Shared) {
    // The fault being simulated: the service is down for `delay`.
    let up_at = Instant::now() + delay;
    while Instant::now() < up_at {
        if s.stop.load(Ordering::SeqCst) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Another process may briefly hold the port (it was free a moment ago): retry the bind.
    let bind_deadline = Instant::now() + Duration::from_secs(10);
    let listener = loop {
        match TcpListener::bind(("127.0.0.1", port)) {
            Ok(l) => break l,
            Err(e) => {
                assert!(
                    Instant::now() < bind_deadline,
                    "the forwarder cannot listen on 127.0.0.1:{port}: {e}"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    };
    listener.set_nonblocking(true).expect("nonblocking");
    s.listening.store(true, Ordering::SeqCst);
    while !s.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((inbound, _)) => {
                inbound.set_nonblocking(false).expect("blocking");
                let Ok(outbound) = TcpStream::connect(target) else {
                    continue;
                };
                s.accepted.fetch_add(1, Ordering::SeqCst);
                let mut streams = s.streams.lock().unwrap();
                streams.push(inbound.try_clone().expect("clone"));
                streams.push(outbound.try_clone().expect("clone"));
                drop(streams);
                pipe(
                    inbound.try_clone().expect("clone"),
                    outbound.try_clone().expect("clone"),
                );
                pipe(outbound, inbound);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// Copies `from` to `to` on its own thread until either side closes.
fn pipe(mut from: TcpStream, mut to: TcpStream) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(Shutdown::Write);
        let _ = from.shutdown(Shutdown::Read);
    });
}
