//! A TCP proxy for fault tests: sluice connects to it, it forwards to the test server, and the
//! test changes the link at run time.
//!
//! * [`Proxy::throttle`]: a link of N bytes/s in each direction (shared by all connections).
//! * [`Proxy::blackhole`]: nothing goes through while on (bytes wait, as in a partition that
//!   heals); new connections are accepted and get nothing.
//! * [`Proxy::reset_all`]: every open connection is closed at once with a TCP reset.
//! * [`Proxy::corrupt`]: one byte of one binlog event, in the server → client direction of a
//!   connection that asked for a binlog dump, is XORed ([`Corrupt`] says which); the event it
//!   hit is reported by [`Proxy::corrupted`].
//!
//! The proxy runs on its own thread and runtime, so a test blocked in a Kafka consumer or a
//! `std::thread::sleep` does not stall the link. It only sees plaintext: tests through it use
//! `ssl_mode = "disabled"`.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::Instant;

/// Which byte [`Proxy::corrupt`] damages: in the first binlog event, after `after_bytes` bytes
/// of dump data, whose packet payload is at least `min_len` bytes, the payload byte at
/// `offset` (the payload starts with the 0x00 of the dump packet, then the 19-byte event
/// header) is XORed with `xor`. Once: the proxy is disarmed after the hit.
#[derive(Debug, Clone, Copy)]
pub struct Corrupt {
    /// Server → client bytes of the dump connection to let through first.
    pub after_bytes: u64,
    /// Smallest packet payload to damage (to pick e.g. a rows event with a large value).
    pub min_len: usize,
    /// Payload offset of the damaged byte; at least 20 (past the event header).
    pub offset: usize,
    /// The XOR mask (non-zero).
    pub xor: u8,
}

/// The event a [`Corrupt`] hit, from its (undamaged) header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    /// Event type.
    pub event_type: u8,
    /// End position (`log_pos`).
    pub log_pos: u32,
    /// `event_size`.
    pub size: u32,
}

impl Hit {
    /// The event's start position (what sluice's messages name).
    pub fn start(&self) -> u32 {
        self.log_pos - self.size
    }
}

struct Ctl {
    upstream: SocketAddr,
    /// Bytes per second in each direction; 0 = unlimited.
    rate: AtomicU64,
    blackhole: AtomicBool,
    /// Bumped by `reset_all`: connections close when it changes.
    reset: watch::Sender<u64>,
    corrupt: Mutex<Option<Corrupt>>,
    hits: Mutex<Vec<Hit>>,
    /// Virtual send clocks of the two directions (when the link is free again).
    clocks: [Mutex<Instant>; 2],
    bytes: [AtomicU64; 2],
    connections: AtomicU64,
}

/// A running proxy; stops (closing every connection) when dropped.
pub struct Proxy {
    /// Where clients connect.
    pub addr: SocketAddr,
    ctl: Arc<Ctl>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

const DOWN: usize = 0;
const UP: usize = 1;

impl Proxy {
    /// Listens on 127.0.0.1 (any free port) and forwards to `upstream`.
    pub fn start(upstream: SocketAddr) -> Proxy {
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let now = Instant::now();
        let ctl = Arc::new(Ctl {
            upstream,
            rate: AtomicU64::new(0),
            blackhole: AtomicBool::new(false),
            reset: watch::channel(0).0,
            corrupt: Mutex::new(None),
            hits: Mutex::new(Vec::new()),
            clocks: [Mutex::new(now), Mutex::new(now)],
            bytes: [AtomicU64::new(0), AtomicU64::new(0)],
            connections: AtomicU64::new(0),
        });
        let c = ctl.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("proxy runtime");
            rt.block_on(async move {
                let listener = TcpListener::bind("127.0.0.1:0").await.expect("proxy bind");
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                let accept = async {
                    loop {
                        let Ok((client, _)) = listener.accept().await else {
                            continue;
                        };
                        c.connections.fetch_add(1, Ordering::Relaxed);
                        tokio::spawn(serve(c.clone(), client));
                    }
                };
                tokio::select! {
                    _ = accept => {}
                    _ = stop_rx => {}
                }
                c.reset.send_modify(|g| *g += 1);
            });
            rt.shutdown_timeout(Duration::from_secs(1));
        });
        let addr = addr_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("proxy listening");
        Proxy {
            addr,
            ctl,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// The proxy's port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Limits the link to `bytes_per_sec` in each direction (all connections together); 0 lifts
    /// the limit.
    pub fn throttle(&self, bytes_per_sec: u64) {
        self.ctl.rate.store(bytes_per_sec, Ordering::SeqCst);
    }

    /// While on, nothing is forwarded (in either direction); bytes wait until it is off.
    pub fn blackhole(&self, on: bool) {
        self.ctl.blackhole.store(on, Ordering::SeqCst);
    }

    /// Closes every open connection with a TCP reset (new connections go through).
    pub fn reset_all(&self) {
        self.ctl.reset.send_modify(|g| *g += 1);
    }

    /// Arms a one-time corruption of a binlog event (see [`Corrupt`]).
    pub fn corrupt(&self, c: Corrupt) {
        assert!(c.offset >= 20 && c.xor != 0, "{c:?}");
        *self.ctl.corrupt.lock().unwrap() = Some(c);
    }

    /// The events damaged so far.
    pub fn corrupted(&self) -> Vec<Hit> {
        self.ctl.hits.lock().unwrap().clone()
    }

    /// Bytes forwarded server → client so far.
    pub fn bytes_down(&self) -> u64 {
        self.ctl.bytes[DOWN].load(Ordering::Relaxed)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.ctl.connections.load(Ordering::Relaxed)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Where a direction's parser is in the MySQL packet stream.
#[derive(Default)]
struct Framing {
    hdr: [u8; 4],
    hdr_have: usize,
    /// Payload bytes left in the current chunk, and the packet's length and offset so far.
    left: usize,
    /// The last chunk was full: the next one continues the same packet.
    continuing: bool,
    len: usize,
    at: usize,
    /// The first bytes of the current packet's payload (the event header of a dump packet).
    head: Vec<u8>,
}

/// Per-connection state shared by its two directions.
struct Conn {
    /// The client sent COM_BINLOG_DUMP or COM_BINLOG_DUMP_GTID.
    dump: AtomicBool,
    /// Server → client bytes after the dump command.
    dump_bytes: AtomicU64,
}

async fn serve(ctl: Arc<Ctl>, client: TcpStream) {
    let mut reset = ctl.reset.subscribe();
    let Ok(server) = TcpStream::connect(ctl.upstream).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let conn = Arc::new(Conn {
        dump: AtomicBool::new(false),
        dump_bytes: AtomicU64::new(0),
    });
    let (mut client, mut server) = (client, server);
    let was_reset = {
        let (mut cr, mut cw) = client.split();
        let (mut sr, mut sw) = server.split();
        let up = pump(&ctl, &conn, UP, &mut cr, &mut sw);
        let down = pump(&ctl, &conn, DOWN, &mut sr, &mut cw);
        tokio::select! {
            _ = async { tokio::join!(up, down) } => false,
            _ = reset.changed() => true,
        }
    };
    if was_reset {
        // A reset, not a close: the peers see ECONNRESET.
        for s in [&client, &server] {
            #[allow(deprecated)]
            let _ = s.set_linger(Some(Duration::ZERO));
        }
    }
}

async fn pump(
    ctl: &Ctl,
    conn: &Conn,
    dir: usize,
    from: &mut (impl tokio::io::AsyncRead + Unpin),
    to: &mut (impl tokio::io::AsyncWrite + Unpin),
) {
    let mut buf = vec![0u8; 16 << 10];
    let mut framing = Framing::default();
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => {
                let _ = to.shutdown().await;
                return;
            }
            Ok(n) => n,
        };
        let data = &mut buf[..n];
        if dir == UP {
            watch_commands(&mut framing, data, conn);
        } else if conn.dump.load(Ordering::SeqCst) {
            corrupt_down(ctl, conn, &mut framing, data);
        }
        // Forward in pieces, each when the link has room for it.
        for piece in data.chunks(4096) {
            while ctl.blackhole.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let rate = ctl.rate.load(Ordering::SeqCst);
            if rate > 0 {
                let send_at = {
                    let mut clock = ctl.clocks[dir].lock().unwrap();
                    let now = Instant::now();
                    let start = (*clock).max(now);
                    *clock = start + Duration::from_secs_f64(piece.len() as f64 / rate as f64);
                    *clock
                };
                tokio::time::sleep_until(send_at).await;
            }
            if to.write_all(piece).await.is_err() {
                return;
            }
            ctl.bytes[dir].fetch_add(piece.len() as u64, Ordering::Relaxed);
        }
    }
}

/// Walks `data` through the packet framing, calling `on` with the framing (`at`: the byte's
/// offset in its packet's payload) and the byte, for each payload byte.
fn walk(f: &mut Framing, data: &mut [u8], mut on: impl FnMut(&mut Framing, &mut u8)) {
    for b in data.iter_mut() {
        if f.left == 0 && f.hdr_have < 4 {
            f.hdr[f.hdr_have] = *b;
            f.hdr_have += 1;
            if f.hdr_have == 4 {
                let n = usize::from(f.hdr[0])
                    | usize::from(f.hdr[1]) << 8
                    | usize::from(f.hdr[2]) << 16;
                // A new packet unless the previous chunk was full (a continuation).
                if !f.continuing {
                    f.len = 0;
                    f.at = 0;
                    f.head.clear();
                }
                f.len += n;
                f.left = n;
                f.continuing = n == 0xFF_FFFF;
                if n == 0 {
                    f.hdr_have = 0;
                }
            }
            continue;
        }
        on(f, b);
        if f.head.len() < 20 {
            f.head.push(*b);
        }
        f.at += 1;
        f.left -= 1;
        if f.left == 0 {
            f.hdr_have = 0;
        }
    }
}

fn watch_commands(f: &mut Framing, data: &mut [u8], conn: &Conn) {
    walk(f, data, |f, b| {
        // COM_BINLOG_DUMP (0x12), COM_BINLOG_DUMP_GTID (0x1e) as a command's first byte.
        if f.at == 0 && f.hdr[3] == 0 && (*b == 0x12 || *b == 0x1e) {
            conn.dump.store(true, Ordering::SeqCst);
        }
    });
}

fn corrupt_down(ctl: &Ctl, conn: &Conn, f: &mut Framing, data: &mut [u8]) {
    let seen = conn
        .dump_bytes
        .fetch_add(data.len() as u64, Ordering::SeqCst);
    let mut armed = *ctl.corrupt.lock().unwrap();
    if armed.is_none_or(|c| seen + (data.len() as u64) < c.after_bytes) {
        // Keep the framing in step without touching anything.
        walk(f, data, |_, _| {});
        return;
    }
    walk(f, data, |f, b| {
        let Some(c) = armed else { return };
        if f.at == c.offset && f.len >= c.min_len && f.head.first() == Some(&0x00) {
            let h = &f.head;
            let hit = Hit {
                event_type: h[5],
                size: u32::from_le_bytes([h[10], h[11], h[12], h[13]]),
                log_pos: u32::from_le_bytes([h[14], h[15], h[16], h[17]]),
            };
            *b ^= c.xor;
            ctl.hits.lock().unwrap().push(hit);
            *ctl.corrupt.lock().unwrap() = None;
            armed = None;
        }
    });
}
