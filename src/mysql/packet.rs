//! MySQL protocol packets on sluice's replication connection: framing for writes and a
//! cancel-safe reader.
//!
//! A packet is one or more chunks, each a 4-byte header (3-byte little-endian length, sequence
//! id) and at most [`MAX_CHUNK`] payload bytes; a chunk of exactly [`MAX_CHUNK`] bytes
//! continues in the next one.
//!
//! Invariants of [`PacketReader`]:
//! * **cancel-safe**: every byte taken from the stream is stored in the reader before the next
//!   await (the header bytes read so far, the payload read so far, the expected sequence id),
//!   and the only future awaited is the stream's own `read`, which takes nothing when it is
//!   dropped. So a [`PacketReader::read`] future dropped at any await — by a `select!` branch
//!   that won, or by a timeout — loses nothing: the next call continues where it stopped.
//! * a packet is never longer than the reader's limit: the limit is checked at each chunk
//!   header, before the chunk's memory is reserved, so no length claim allocates more.
//! * after an error the connection is unusable (the position inside the stream is unknown);
//!   callers drop it.

use mysql_async::DriverError;
use tokio::io::{AsyncRead, AsyncReadExt};

/// The largest payload of one packet chunk; a chunk this long continues in the next one.
pub const MAX_CHUNK: usize = 0xFF_FFFF;

/// Packet buffer capacity kept between packets; a larger one is released at the next packet.
const RETAINED_BUFFER: usize = 4 << 20;

type MyResult<T> = std::result::Result<T, mysql_async::Error>;

/// Appends `payload` to `out` as packets starting at sequence id `*seq`: chunks of at most
/// [`MAX_CHUNK`] bytes, each with a 4-byte header (3-byte little-endian length, sequence id);
/// a payload whose length is a multiple of [`MAX_CHUNK`] (including 0) ends with an empty
/// chunk.
pub fn frame(seq: &mut u8, payload: &[u8], out: &mut Vec<u8>) {
    let mut rest = payload;
    loop {
        let n = rest.len().min(MAX_CHUNK);
        let len = (n as u32).to_le_bytes();
        out.extend_from_slice(&len[..3]);
        out.push(*seq);
        *seq = seq.wrapping_add(1);
        out.extend_from_slice(&rest[..n]);
        rest = &rest[n..];
        if n < MAX_CHUNK {
            return;
        }
    }
}

/// Reads packets one at a time, keeping all partial state in itself (see the module doc).
#[derive(Debug)]
pub struct PacketReader {
    /// The sequence id the next chunk header must carry; writes continue from it.
    pub seq: u8,
    /// The largest packet payload accepted.
    limit: usize,
    /// The current chunk header, `hdr_have` bytes of it read.
    hdr: [u8; 4],
    hdr_have: usize,
    /// Whether the current chunk's header was accepted (its payload is being read).
    in_chunk: bool,
    /// Whether the current chunk is the packet's last (shorter than [`MAX_CHUNK`]).
    last_chunk: bool,
    /// The packet so far: `buf[..filled]` is read, `buf[filled..]` is reserved for the rest of
    /// the current chunk.
    buf: Vec<u8>,
    filled: usize,
    /// `buf` holds a whole packet, handed out; the next read starts a new one.
    complete: bool,
    /// Set when a packet went over the limit: its payload size so far.
    too_large: Option<usize>,
}

impl PacketReader {
    /// A reader expecting sequence id 0, accepting packets of up to `limit` bytes.
    pub fn new(limit: usize) -> PacketReader {
        PacketReader {
            seq: 0,
            limit,
            hdr: [0; 4],
            hdr_have: 0,
            in_chunk: false,
            last_chunk: false,
            buf: Vec::new(),
            filled: 0,
            complete: true,
            too_large: None,
        }
    }

    /// Changes the largest packet accepted (from the next chunk on).
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit;
    }

    /// The payload of the last packet read (empty before the first).
    pub fn packet(&self) -> &[u8] {
        if self.complete {
            &self.buf[..self.filled]
        } else {
            &[]
        }
    }

    /// When the last read failed with `PacketTooLarge`: the payload bytes the packet had
    /// claimed by then (its chunks so far).
    pub fn too_large(&self) -> Option<usize> {
        self.too_large
    }

    /// Reads the next packet; its payload is then [`PacketReader::packet`]. Cancel-safe: see
    /// the module doc.
    pub async fn read<R: AsyncRead + Unpin + ?Sized>(&mut self, r: &mut R) -> MyResult<()> {
        if self.complete {
            self.start_packet();
        }
        loop {
            if !self.in_chunk {
                let n = r.read(&mut self.hdr[self.hdr_have..]).await?;
                if n == 0 {
                    return Err(eof(self.filled + self.hdr_have));
                }
                self.hdr_have += n;
                if self.hdr_have < 4 {
                    continue;
                }
                self.accept_header()?;
            }
            if self.filled < self.buf.len() {
                let n = r.read(&mut self.buf[self.filled..]).await?;
                if n == 0 {
                    return Err(eof(self.filled));
                }
                self.filled += n;
                continue;
            }
            // The chunk is complete.
            self.in_chunk = false;
            self.hdr_have = 0;
            if self.last_chunk {
                self.complete = true;
                return Ok(());
            }
        }
    }

    fn start_packet(&mut self) {
        // One large event must not pin its size for the rest of the stream.
        if self.buf.capacity() > RETAINED_BUFFER {
            self.buf = Vec::with_capacity(RETAINED_BUFFER);
        }
        self.buf.clear();
        self.filled = 0;
        self.hdr_have = 0;
        self.in_chunk = false;
        self.complete = false;
        self.too_large = None;
    }

    /// Checks a complete chunk header and reserves the chunk's bytes.
    fn accept_header(&mut self) -> MyResult<()> {
        let h = self.hdr;
        let n = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
        if h[3] != self.seq {
            return Err(DriverError::PacketOutOfOrder.into());
        }
        self.seq = self.seq.wrapping_add(1);
        let total = self.filled + n;
        if total > self.limit {
            self.too_large = Some(total);
            return Err(DriverError::PacketTooLarge.into());
        }
        self.buf.resize(total, 0);
        self.in_chunk = true;
        self.last_chunk = n < MAX_CHUNK;
        Ok(())
    }
}

fn eof(read: usize) -> mysql_async::Error {
    std::io::Error::new(
        std::io::ErrorKind::UnexpectedEof,
        format!("the server closed the connection {read} bytes into a packet"),
    )
    .into()
}

#[cfg(test)]
#[path = "packet_tests.rs"]
mod tests;
