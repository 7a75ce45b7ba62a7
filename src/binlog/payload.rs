//! TRANSACTION_PAYLOAD events (MySQL 8.0.20+, `binlog_transaction_compression=ON`): a whole
//! transaction's events, compressed, in one event.
//!
//! [`PayloadReader`] decompresses the payload as a stream and hands out the inner events one
//! at a time, so memory holds one inner event, never the whole decompressed transaction.
//!
//! Invariants:
//! * every inner event is complete (its 19-byte header's size fits what is left) and the inner
//!   events add up to exactly the payload's `uncompressed_size`; anything else — a zstd error,
//!   a truncated event, trailing data, an unknown compression type — is a definite error that
//!   names the position. Rows are never skipped silently.
//! * no inner event larger than `source.max_event_bytes` is allocated: its size is checked
//!   against the setting (and against what is left) from its header, before its buffer grows.
//! * inner events carry no checksum (MySQL writes them without one) and `log_pos` 0; the
//!   payload's end position stands for all of them.

use std::io::{self, Read};

use mysql_common::binlog::events::{Event, FormatDescriptionEvent};

use crate::binlog::events::types;
use crate::error::{Error, Result};

/// Length of the common event header.
const HEADER_LEN: usize = 19;

/// Compression type codes of the payload header (`mysql::binlog::event::compression::type`).
mod compression {
    /// ZSTD.
    pub const ZSTD: u64 = 0;
    /// Not compressed.
    pub const NONE: u64 = 255;
}

/// Field type codes of the payload header.
mod field {
    pub const END_MARK: u64 = 0;
    pub const PAYLOAD_SIZE: u64 = 1;
    pub const COMPRESSION_TYPE: u64 = 2;
    pub const UNCOMPRESSED_SIZE: u64 = 3;
}

/// The parsed header of a TRANSACTION_PAYLOAD event body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadHeader {
    /// Compression type code (0 = zstd, 255 = none).
    pub compression: u64,
    /// Size of the decompressed payload (for `none`, the payload size).
    pub uncompressed_size: u64,
    /// Offset of the payload within the body.
    pub payload_at: usize,
}

/// A length-encoded integer (`net_field_length_ll`): `< 251` one byte, `252` + 2 bytes,
/// `253` + 3 bytes, `254` + 8 bytes, little-endian.
fn lenenc(b: &[u8], at: &mut usize) -> Option<u64> {
    let first = *b.get(*at)?;
    let (n, v) = match first {
        0..=250 => (0, u64::from(first)),
        252 => (2, 0),
        253 => (3, 0),
        254 => (8, 0),
        _ => return None,
    };
    if n == 0 {
        *at += 1;
        return Some(v);
    }
    let bytes = b.get(*at + 1..*at + 1 + n)?;
    let mut le = [0u8; 8];
    le[..n].copy_from_slice(bytes);
    *at += 1 + n;
    Some(u64::from_le_bytes(le))
}

/// Parses the header of a TRANSACTION_PAYLOAD body: a list of `(type, length, value)` fields
/// (all length-encoded integers; values of the known fields are length-encoded integers too)
/// ended by type 0, then the payload, which must be exactly `payload_size` bytes.
pub fn parse_payload_header(body: &[u8]) -> std::result::Result<PayloadHeader, String> {
    let mut at = 0usize;
    let (mut size, mut ctype, mut usize_) = (None, None, None);
    loop {
        let t = lenenc(body, &mut at).ok_or("truncated header field type")?;
        if t == field::END_MARK {
            break;
        }
        let len = lenenc(body, &mut at).ok_or("truncated header field length")?;
        let len = usize::try_from(len).map_err(|_| "header field length out of range")?;
        let value = body
            .get(at..at.saturating_add(len))
            .ok_or("truncated header field")?;
        at += len;
        let known = match t {
            field::PAYLOAD_SIZE => &mut size,
            field::COMPRESSION_TYPE => &mut ctype,
            field::UNCOMPRESSED_SIZE => &mut usize_,
            _ => continue,
        };
        let mut i = 0;
        let v = lenenc(value, &mut i).ok_or("malformed header field value")?;
        if i != value.len() {
            return Err(format!(
                "header field {t} has {} bytes, value uses {i}",
                len
            ));
        }
        *known = Some(v);
    }
    let size = size.ok_or("no payload size field")?;
    let compression = ctype.ok_or("no compression type field")?;
    let rest = (body.len() - at) as u64;
    if size != rest {
        return Err(format!(
            "payload size field says {size} bytes, the event holds {rest}"
        ));
    }
    let uncompressed_size = match compression {
        compression::ZSTD => usize_.ok_or("no uncompressed size field")?,
        compression::NONE => usize_.unwrap_or(size),
        other => return Err(format!("unknown compression type {other}")),
    };
    Ok(PayloadHeader {
        compression,
        uncompressed_size,
        payload_at: at,
    })
}

/// Streams the inner events of one TRANSACTION_PAYLOAD event.
pub struct PayloadReader<'a> {
    src: Box<dyn Read + Send + 'a>,
    /// Decompressed bytes not yet handed out.
    remaining: u64,
    /// The stream's format description with checksums off (inner events have none).
    fde: FormatDescriptionEvent<'static>,
    buf: Vec<u8>,
    /// For messages: `binlog file:pos` of the payload event.
    at: String,
    events: u64,
    /// The header of the next inner event, read ahead.
    lookahead: Option<[u8; HEADER_LEN]>,
    done: bool,
    /// `source.max_event_bytes`.
    max_event_bytes: u64,
}

impl<'a> PayloadReader<'a> {
    /// Opens the payload of `ev` (a TRANSACTION_PAYLOAD event); `at` names its position;
    /// inner events over `max_event_bytes` (`source.max_event_bytes`) are refused.
    pub fn open(ev: &'a Event, at: String, max_event_bytes: u64) -> Result<Self> {
        let hdr = parse_payload_header(ev.data()).map_err(|e| payload_error(&at, &e))?;
        let payload = &ev.data()[hdr.payload_at..];
        let src: Box<dyn Read + Send + 'a> = match hdr.compression {
            compression::ZSTD => Box::new(
                zstd::stream::read::Decoder::with_buffer(payload)
                    .map_err(|e| payload_error(&at, &format!("zstd: {e}")))?,
            ),
            _ => Box::new(payload),
        };
        let mut footer = ev.fde().footer();
        footer.set_checksum_enabled(false);
        Ok(PayloadReader {
            src,
            remaining: hdr.uncompressed_size,
            fde: ev.fde().clone().with_footer(footer),
            buf: Vec::new(),
            at,
            events: 0,
            lookahead: None,
            done: false,
            max_event_bytes,
        })
    }

    /// The next inner event, `None` after the last one.
    ///
    /// The header of the following event is read before an event is handed out (and the end
    /// of the data checked after the last one), so a payload whose data ends early or goes on
    /// too long fails before its final event — the one that commits — is handed out.
    pub fn next_event(&mut self) -> Result<Option<Event>> {
        if self.done {
            return Ok(None);
        }
        let header = match self.lookahead.take() {
            Some(h) => h,
            None if self.remaining == 0 => {
                self.finish()?;
                return Ok(None);
            }
            None => self.read_header()?,
        };
        let etype = header[4];
        let size = u32::from_le_bytes([header[9], header[10], header[11], header[12]]);
        self.buf.clear();
        self.buf.extend_from_slice(&header);
        // The size was checked against what is left when the header was read; the buffer
        // grows to one event, reused for the next.
        self.buf.resize(size as usize, 0);
        self.fill(HEADER_LEN)?;
        self.remaining -= u64::from(size);
        self.events += 1;
        if self.remaining == 0 {
            self.finish()?;
        } else {
            self.lookahead = Some(self.read_header()?);
        }
        let ev = Event::read(&self.fde, &self.buf[..]).map_err(|e| {
            payload_error(
                &self.at,
                &format!("inner event {} (type {etype}): {e}", self.events),
            )
        })?;
        Ok(Some(ev))
    }

    /// Reads and checks the header of the next inner event.
    fn read_header(&mut self) -> Result<[u8; HEADER_LEN]> {
        let n = self.events + 1;
        if self.remaining < HEADER_LEN as u64 {
            return Err(payload_error(
                &self.at,
                &format!(
                    "{} bytes left before inner event {n}, too few for an event",
                    self.remaining
                ),
            ));
        }
        let mut h = [0u8; HEADER_LEN];
        match read_full(&mut self.src, &mut h) {
            Ok(HEADER_LEN) => {}
            Ok(k) => {
                return Err(payload_error(
                    &self.at,
                    &format!("the decompressed data ends {k} bytes into inner event {n}"),
                ))
            }
            Err(e) => return Err(payload_error(&self.at, &format!("decompressing: {e}"))),
        }
        let etype = h[4];
        let size = u64::from(u32::from_le_bytes([h[9], h[10], h[11], h[12]]));
        if size < HEADER_LEN as u64 || size > self.remaining {
            return Err(payload_error(
                &self.at,
                &format!(
                    "inner event {n} (type {etype}) claims {size} bytes, {} are left",
                    self.remaining
                ),
            ));
        }
        if size > self.max_event_bytes {
            return Err(Error::definite(format!(
                "TRANSACTION_PAYLOAD event at {}: inner event {n} (type {etype}) is {size} bytes, \
                 more than source.max_event_bytes ({} bytes); fix: raise \
                 source.max_event_bytes (or SLUICE_SOURCE_MAX_EVENT_BYTES) to at least {size} \
                 (the default is 1073741824, 1 GiB)",
                self.at, self.max_event_bytes
            )));
        }
        if matches!(
            etype,
            types::TRANSACTION_PAYLOAD | types::FORMAT_DESCRIPTION | types::ROTATE
        ) {
            return Err(payload_error(
                &self.at,
                &format!("event type {etype} cannot be inside a payload"),
            ));
        }
        Ok(h)
    }

    /// Checks that the data ends exactly at the uncompressed size.
    fn finish(&mut self) -> Result<()> {
        let mut one = [0u8; 1];
        match read_full(&mut self.src, &mut one) {
            Ok(0) => {
                self.done = true;
                Ok(())
            }
            Ok(_) => Err(payload_error(
                &self.at,
                "more data than the uncompressed size field says",
            )),
            Err(e) => Err(payload_error(&self.at, &format!("decompressing: {e}"))),
        }
    }

    /// Reads the rest of `self.buf` from `from` on.
    fn fill(&mut self, from: usize) -> Result<()> {
        let want = self.buf.len() - from;
        match read_full(&mut self.src, &mut self.buf[from..]) {
            Ok(n) if n == want => Ok(()),
            Ok(n) => Err(payload_error(
                &self.at,
                &format!(
                    "the decompressed data ends {} bytes into inner event {} (truncated)",
                    from + n,
                    self.events + 1
                ),
            )),
            Err(e) => Err(payload_error(&self.at, &format!("decompressing: {e}"))),
        }
    }
}

/// Reads until `buf` is full or the source ends; returns the bytes read.
fn read_full(src: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match src.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

fn payload_error(at: &str, detail: &str) -> Error {
    Error::definite(format!(
        "TRANSACTION_PAYLOAD event (binlog_transaction_compression=ON on the source) at {at} \
         cannot be read: {detail}. sluice stops rather than skip the transaction's rows; if \
         the binlog is damaged, move the pipeline past it with `sluice offsets set` after \
         taking a new snapshot of the affected tables, and consider \
         binlog_transaction_compression=OFF"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binlog::fixtures as fx;

    /// A TRANSACTION_PAYLOAD event (uncompressed payload type) whose header claims
    /// `uncompressed` bytes and whose payload is `payload`.
    fn payload_event(uncompressed: u64, payload: &[u8]) -> Event {
        let mut body = Vec::new();
        for (t, v) in [(2u8, 255u64), (3, uncompressed), (1, payload.len() as u64)] {
            body.push(t);
            if v < 251 {
                body.extend([1, v as u8]);
            } else {
                body.extend([9, 254]);
                body.extend(v.to_le_bytes());
            }
        }
        body.push(0);
        body.extend_from_slice(payload);
        fx::event(&fx::fde_8_0(), types::TRANSACTION_PAYLOAD, 900, &body)
    }

    /// An inner event header claiming 2 GiB inside a payload that claims 3 GiB: refused from
    /// the header, naming the setting, the size and the position, and nothing of that size is
    /// allocated (the reader's buffer stays at a header's size).
    #[test]
    fn an_inner_event_over_max_event_bytes_is_refused_before_allocation() {
        let claim = 2u32 << 30;
        let inner = fx::header(types::WRITE_ROWS_V2, claim, 0);
        let ev = payload_event(3 << 30, &inner);
        let mut rd = PayloadReader::open(&ev, "binlog.000003:1234".into(), 1 << 30).unwrap();
        let e = rd.next_event().unwrap_err();
        let msg = e.to_string();
        assert_eq!(e.kind(), crate::error::ErrorKind::Definite);
        for needle in [
            "source.max_event_bytes",
            "2147483648 bytes",
            "binlog.000003:1234",
            "raise",
        ] {
            assert!(msg.contains(needle), "{needle}: {msg}");
        }
        assert!(rd.buf.capacity() < 1 << 20, "{}", rd.buf.capacity());
        // Under a smaller setting, an event the default would take is refused too.
        let row = fx::raw(types::WRITE_ROWS_V2, 0, &[0u8; 200]);
        let ev = payload_event(row.len() as u64, &row);
        let mut rd = PayloadReader::open(&ev, "binlog.000003:1234".into(), 100).unwrap();
        assert!(rd
            .next_event()
            .unwrap_err()
            .to_string()
            .contains("219 bytes"));
        let mut rd = PayloadReader::open(&ev, "binlog.000003:1234".into(), 219).unwrap();
        assert!(rd.next_event().unwrap().is_some());
    }

    #[test]
    fn lenenc_forms() {
        for (bytes, v) in [
            (&[7u8][..], 7u64),
            (&[252, 0x34, 0x12][..], 0x1234),
            (&[253, 1, 2, 3][..], 0x030201),
            (&[254, 1, 0, 0, 0, 0, 0, 0, 1][..], (1 << 56) | 1),
        ] {
            let mut at = 0;
            assert_eq!(lenenc(bytes, &mut at), Some(v));
            assert_eq!(at, bytes.len());
            assert_eq!(lenenc(&bytes[..bytes.len() - 1], &mut 0), None);
        }
        assert_eq!(lenenc(&[251], &mut 0), None);
    }
}
