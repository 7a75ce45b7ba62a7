use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use proptest::prelude::*;
use tokio::io::{AsyncRead, ReadBuf};

use super::*;
use crate::error::{mysql_error, ErrorKind};

fn framed(payload: &[u8], seq: u8) -> Vec<u8> {
    let mut s = seq;
    let mut out = Vec::new();
    frame(&mut s, payload, &mut out);
    out
}

/// Reads one packet from `wire` with a reader at sequence `seq`, in one go.
async fn unframe(wire: &[u8], seq: u8) -> MyResult<(Vec<u8>, u8)> {
    let mut r = wire;
    let mut rd = PacketReader::new(1 << 30);
    rd.seq = seq;
    rd.read(&mut r).await?;
    Ok((rd.packet().to_vec(), rd.seq))
}

/// A stream that hands out at most `step(pos)` bytes per poll and answers `Pending` (waking
/// itself) before each of them: every byte arrives in a poll of its own, with a point between
/// them where a caller can drop the read.
struct Trickle<F: FnMut(usize) -> usize> {
    data: Vec<u8>,
    pos: usize,
    step: F,
    pending_next: bool,
}

impl<F: FnMut(usize) -> usize + Unpin> AsyncRead for Trickle<F> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        if me.pending_next {
            me.pending_next = false;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        me.pending_next = true;
        let n = (me.step)(me.pos)
            .max(1)
            .min(buf.remaining())
            .min(me.data.len() - me.pos);
        buf.put_slice(&me.data[me.pos..me.pos + n]);
        me.pos += n;
        Poll::Ready(Ok(()))
    }
}

/// Reads one packet, dropping the read future after `polls()` polls each time it is still
/// pending, and starting a new one: returns the result and how many futures were dropped.
fn read_cancelling<R: AsyncRead + Unpin>(
    rd: &mut PacketReader,
    src: &mut R,
    mut polls: impl FnMut() -> usize,
) -> (MyResult<()>, usize) {
    let waker = futures_util::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    let mut dropped = 0;
    loop {
        let k = polls().max(1);
        let mut fut = Box::pin(rd.read(src));
        for _ in 0..k {
            if let Poll::Ready(r) = fut.as_mut().poll(&mut cx) {
                return (r, dropped);
            }
        }
        drop(fut);
        dropped += 1;
    }
}

#[test]
fn small_packets_have_one_header() {
    assert_eq!(framed(b"\x03SELECT 1", 0)[..4], [9, 0, 0, 0]);
    assert_eq!(framed(b"", 7), [0, 0, 0, 7]);
}

#[test]
fn long_packets_continue_in_the_next_chunk() {
    // Exactly one full chunk: a full chunk, then an empty one.
    let payload = vec![0xAB; MAX_CHUNK];
    let wire = framed(&payload, 0);
    assert_eq!(wire.len(), MAX_CHUNK + 8);
    assert_eq!(wire[..4], [0xFF, 0xFF, 0xFF, 0]);
    assert_eq!(wire[MAX_CHUNK + 4..], [0, 0, 0, 1]);
    // Two full chunks and a rest; the sequence id wraps.
    let payload: Vec<u8> = (0..2 * MAX_CHUNK + 3).map(|i| i as u8).collect();
    let wire = framed(&payload, 255);
    assert_eq!(wire.len(), payload.len() + 12);
    assert_eq!(wire[3], 255);
    assert_eq!(wire[MAX_CHUNK + 4 + 3], 0);
    assert_eq!(
        wire[2 * (MAX_CHUNK + 4)..2 * (MAX_CHUNK + 4) + 4],
        [3, 0, 0, 1]
    );
}

#[tokio::test]
async fn packets_read_back_whole() {
    for len in [
        0,
        1,
        100,
        MAX_CHUNK - 1,
        MAX_CHUNK,
        MAX_CHUNK + 1,
        2 * MAX_CHUNK + 3,
    ] {
        let payload: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let mut wire = framed(&payload, 3);
        // A second packet follows; the first read stops at its own end.
        let next_seq = 3 + (len / MAX_CHUNK) as u8 + 1;
        wire.extend(framed(b"next", next_seq));
        let (got, seq) = unframe(&wire, 3).await.unwrap();
        assert_eq!(got.len(), len);
        assert!(got == payload, "payload of {len} bytes");
        assert_eq!(seq, next_seq);
    }
}

#[tokio::test]
async fn broken_framing_is_an_error() {
    // Out of order.
    let e = unframe(&framed(b"abc", 5), 4).await.unwrap_err();
    assert!(matches!(
        e,
        mysql_async::Error::Driver(DriverError::PacketOutOfOrder)
    ));
    // Cut short: an I/O error, so transient (the connection is gone).
    let wire = framed(b"abcdef", 0);
    let e = unframe(&wire[..7], 0).await.unwrap_err();
    assert_eq!(mysql_error("x", &e).kind(), ErrorKind::Transient);
    let e = unframe(&wire[..2], 0).await.unwrap_err();
    assert_eq!(mysql_error("x", &e).kind(), ErrorKind::Transient);
    // A continuation chunk missing.
    let wire = framed(&vec![1; MAX_CHUNK], 0);
    assert!(unframe(&wire[..MAX_CHUNK + 4], 0).await.is_err());
}

#[tokio::test]
async fn the_limit_is_checked_before_memory_is_reserved() {
    // A header claiming a full chunk, against a limit of 1000 bytes: refused at the header,
    // with nothing reserved.
    let wire = [0xFF, 0xFF, 0xFF, 0];
    let mut r = &wire[..];
    let mut rd = PacketReader::new(1000);
    let e = rd.read(&mut r).await.unwrap_err();
    assert!(matches!(
        e,
        mysql_async::Error::Driver(DriverError::PacketTooLarge)
    ));
    assert_eq!(rd.too_large(), Some(MAX_CHUNK));
    assert!(rd.buf.capacity() < 1000, "{}", rd.buf.capacity());
    // Over several chunks: the sum counts.
    let mut rd = PacketReader::new(MAX_CHUNK + 10);
    let wire = framed(&vec![7; MAX_CHUNK + 11], 0);
    let mut r = &wire[..];
    assert!(rd.read(&mut r).await.is_err());
    assert_eq!(rd.too_large(), Some(MAX_CHUNK + 11));
    // Exactly at the limit: accepted.
    let mut rd = PacketReader::new(MAX_CHUNK + 11);
    let mut r = &wire[..];
    rd.read(&mut r).await.unwrap();
    assert_eq!(rd.packet().len(), MAX_CHUNK + 11);
}

/// Two packets and a third, read with the read future dropped after every single poll: every
/// byte arrives in its own poll, so the reader is cancelled at every byte of the stream (inside
/// each header and each payload). Every packet comes out whole, in order, with the right
/// sequence id.
#[test]
fn a_read_cancelled_after_every_byte_loses_nothing() {
    let payloads: [&[u8]; 3] = [b"\x00first event", &[0xAB; 300], b""];
    let mut wire = Vec::new();
    let mut seq = 0u8;
    for p in payloads {
        frame(&mut seq, p, &mut wire);
    }
    let mut src = Trickle {
        data: wire.clone(),
        pos: 0,
        step: |_| 1,
        pending_next: false,
    };
    let mut rd = PacketReader::new(1 << 20);
    let mut total_dropped = 0;
    for (i, p) in payloads.iter().enumerate() {
        let (r, dropped) = read_cancelling(&mut rd, &mut src, || 1);
        r.unwrap_or_else(|e| panic!("packet {i}: {e}"));
        assert_eq!(rd.packet(), *p, "packet {i}");
        assert_eq!(rd.seq, i as u8 + 1);
        total_dropped += dropped;
    }
    assert_eq!(src.pos, wire.len());
    // A future dropped after each byte but the last of each packet, and once more at the
    // start of the second and third packets (the stream answered `Pending` first there).
    assert_eq!(total_dropped, wire.len() - 1);
}

/// The chunk boundary of a packet longer than [`MAX_CHUNK`], crafted: large steps through
/// the payload, single bytes (each its own poll, the future dropped after each) from 8 bytes
/// before to 8 bytes after each chunk header.
#[test]
fn a_cancelled_read_continues_across_chunk_boundaries() {
    for len in [MAX_CHUNK - 1, MAX_CHUNK, MAX_CHUNK + 1, 2 * MAX_CHUNK + 5] {
        let payload: Vec<u8> = (0..len).map(|i| (i % 253) as u8).collect();
        let mut seq = 250u8;
        let mut wire = Vec::new();
        frame(&mut seq, &payload, &mut wire);
        frame(&mut seq, b"after", &mut wire);
        let heads: Vec<usize> = (0..=len / MAX_CHUNK).map(|k| k * (MAX_CHUNK + 4)).collect();
        let near = move |pos: usize| heads.iter().any(|&h| pos + 8 >= h && pos <= h + 12);
        let step = move |pos: usize| if near(pos) { 1 } else { 1 << 16 };
        let mut src = Trickle {
            data: wire,
            pos: 0,
            step,
            pending_next: false,
        };
        let mut rd = PacketReader::new(1 << 30);
        rd.seq = 250;
        let (r, dropped) = read_cancelling(&mut rd, &mut src, || 1);
        r.unwrap();
        assert!(rd.packet() == payload, "{len} bytes");
        assert!(dropped > 16, "{dropped}");
        assert_eq!(rd.seq, 250u8.wrapping_add((len / MAX_CHUNK) as u8 + 1));
        let (r, _) = read_cancelling(&mut rd, &mut src, || 1);
        r.unwrap();
        assert_eq!(rd.packet(), b"after");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any packet sizes, any stream pieces, futures dropped after a random number of polls:
    /// what comes out is what went in, and the sequence ids continue.
    #[test]
    fn cancelled_reads_lose_no_bytes(
        sizes in prop::collection::vec(0usize..5000, 1..6),
        steps in prop::collection::vec(1usize..700, 1..50),
        polls in prop::collection::vec(1usize..4, 1..50),
        first_seq in any::<u8>(),
    ) {
        let payloads: Vec<Vec<u8>> = sizes
            .iter()
            .enumerate()
            .map(|(k, &n)| (0..n).map(|i| (i * 7 + k) as u8).collect())
            .collect();
        let mut wire = Vec::new();
        let mut seq = first_seq;
        for p in &payloads {
            frame(&mut seq, p, &mut wire);
        }
        let mut i = 0;
        let mut src = Trickle {
            data: wire,
            pos: 0,
            step: move |_| { i += 1; steps[i % steps.len()] },
            pending_next: false,
        };
        let mut rd = PacketReader::new(1 << 20);
        rd.seq = first_seq;
        let mut j = 0;
        for (k, p) in payloads.iter().enumerate() {
            let (r, _) = read_cancelling(&mut rd, &mut src, || { j += 1; polls[j % polls.len()] });
            prop_assert!(r.is_ok(), "packet {k}: {:?}", r);
            prop_assert_eq!(rd.packet(), &p[..]);
            prop_assert_eq!(rd.seq, first_seq.wrapping_add(k as u8 + 1));
        }
        prop_assert_eq!(src.pos, src.data.len());
    }
}
