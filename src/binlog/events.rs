//! Pure parsing of the binlog events that `mysql_common` has no types for (MariaDB's GTID and
//! GTID_LIST events, compressed QUERY bodies), and classification of QUERY statements into
//! transaction boundaries.
//!
//! Invariant: nothing here guesses. An event body that does not have the documented layout is
//! an error naming the event, never a silently skipped event.

use std::io::Read;

use crate::position::{GtidList, MariadbGtid};

/// Binlog event type codes sluice handles (MySQL and MariaDB).
pub mod types {
    /// QUERY_EVENT.
    pub const QUERY: u8 = 2;
    /// STOP_EVENT.
    pub const STOP: u8 = 3;
    /// ROTATE_EVENT.
    pub const ROTATE: u8 = 4;
    /// INTVAR_EVENT.
    pub const INTVAR: u8 = 5;
    /// RAND_EVENT.
    pub const RAND: u8 = 13;
    /// USER_VAR_EVENT.
    pub const USER_VAR: u8 = 14;
    /// FORMAT_DESCRIPTION_EVENT.
    pub const FORMAT_DESCRIPTION: u8 = 15;
    /// XID_EVENT.
    pub const XID: u8 = 16;
    /// TABLE_MAP_EVENT.
    pub const TABLE_MAP: u8 = 19;
    /// WRITE_ROWS_EVENT_V1.
    pub const WRITE_ROWS_V1: u8 = 23;
    /// DELETE_ROWS_EVENT_V1.
    pub const DELETE_ROWS_V1: u8 = 25;
    /// HEARTBEAT_LOG_EVENT.
    pub const HEARTBEAT: u8 = 27;
    /// IGNORABLE_LOG_EVENT.
    pub const IGNORABLE: u8 = 28;
    /// ROWS_QUERY_LOG_EVENT.
    pub const ROWS_QUERY: u8 = 29;
    /// WRITE_ROWS_EVENT (v2).
    pub const WRITE_ROWS_V2: u8 = 30;
    /// DELETE_ROWS_EVENT (v2).
    pub const DELETE_ROWS_V2: u8 = 32;
    /// GTID_LOG_EVENT (MySQL).
    pub const GTID: u8 = 33;
    /// ANONYMOUS_GTID_LOG_EVENT (MySQL).
    pub const ANONYMOUS_GTID: u8 = 34;
    /// PREVIOUS_GTIDS_LOG_EVENT (MySQL).
    pub const PREVIOUS_GTIDS: u8 = 35;
    /// TRANSACTION_CONTEXT_EVENT (MySQL group replication).
    pub const TRANSACTION_CONTEXT: u8 = 36;
    /// VIEW_CHANGE_EVENT (MySQL group replication).
    pub const VIEW_CHANGE: u8 = 37;
    /// XA_PREPARE_LOG_EVENT.
    pub const XA_PREPARE: u8 = 38;
    /// PARTIAL_UPDATE_ROWS_EVENT (MySQL partial JSON).
    pub const PARTIAL_UPDATE_ROWS: u8 = 39;
    /// TRANSACTION_PAYLOAD_EVENT (MySQL binlog transaction compression).
    pub const TRANSACTION_PAYLOAD: u8 = 40;
    /// HEARTBEAT_LOG_EVENT_V2 (MySQL 8.0.26+).
    pub const HEARTBEAT_V2: u8 = 41;
    /// GTID_TAGGED_LOG_EVENT (MySQL 8.3+).
    pub const GTID_TAGGED: u8 = 42;
    /// MariaDB ANNOTATE_ROWS_EVENT.
    pub const MARIA_ANNOTATE_ROWS: u8 = 160;
    /// MariaDB BINLOG_CHECKPOINT_EVENT.
    pub const MARIA_BINLOG_CHECKPOINT: u8 = 161;
    /// MariaDB GTID_EVENT.
    pub const MARIA_GTID: u8 = 162;
    /// MariaDB GTID_LIST_EVENT.
    pub const MARIA_GTID_LIST: u8 = 163;
    /// MariaDB START_ENCRYPTION_EVENT.
    pub const MARIA_START_ENCRYPTION: u8 = 164;
    /// MariaDB QUERY_COMPRESSED_EVENT.
    pub const MARIA_QUERY_COMPRESSED: u8 = 165;
    /// MariaDB WRITE_ROWS_COMPRESSED_EVENT (v2).
    pub const MARIA_WRITE_ROWS_COMPRESSED: u8 = 166;
    /// MariaDB DELETE_ROWS_COMPRESSED_EVENT_V1.
    pub const MARIA_DELETE_ROWS_COMPRESSED_V1: u8 = 171;

    /// Whether `t` is a rows event of either flavour (compressed ones included).
    pub fn is_rows(t: u8) -> bool {
        (WRITE_ROWS_V1..=DELETE_ROWS_V1).contains(&t)
            || (WRITE_ROWS_V2..=DELETE_ROWS_V2).contains(&t)
            || (MARIA_WRITE_ROWS_COMPRESSED..=MARIA_DELETE_ROWS_COMPRESSED_V1).contains(&t)
    }
}

/// A malformed event body.
#[derive(Debug, thiserror::Error)]
#[error("malformed {event} event: {detail}")]
pub struct EventError {
    /// The event type name.
    pub event: &'static str,
    /// What was wrong.
    pub detail: String,
}

fn err(event: &'static str, detail: impl Into<String>) -> EventError {
    EventError {
        event,
        detail: detail.into(),
    }
}

fn le_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn le_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// MariaDB GTID event flags (`flags2`).
pub mod gtid_flags {
    /// The event group is a single statement without BEGIN/COMMIT (DDL).
    #[cfg(test)]
    pub const STANDALONE: u8 = 1;
    /// A commit id follows.
    pub const GROUP_COMMIT_ID: u8 = 2;
    /// The group is an XA PREPARE.
    pub const PREPARED_XA: u8 = 64;
    /// The group is an XA COMMIT / XA ROLLBACK (an xid follows, as for PREPARED_XA).
    pub const COMPLETED_XA: u8 = 128;
}

/// MariaDB GTID event extra flags (`flags_extra`, MariaDB 10.8+), after `flags2`'s fields.
pub mod gtid_flags_extra {
    /// A count of extra engines (one byte) follows.
    pub const MULTI_ENGINE: u8 = 1;
    /// The group is the first half of a two-phase ALTER (`binlog_alter_two_phase`): the
    /// statement has started, its outcome is logged later.
    pub const START_ALTER: u8 = 2;
    /// The group completes the ALTER whose START ALTER has sequence number `sa_seq_no`.
    pub const COMMIT_ALTER: u8 = 4;
    /// The ALTER whose START ALTER has sequence number `sa_seq_no` failed and was undone.
    pub const ROLLBACK_ALTER: u8 = 8;
}

/// Which half of a two-phase ALTER (MariaDB `binlog_alter_two_phase`) a GTID group is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlterPhase {
    /// An ordinary group.
    None,
    /// START ALTER: the statement began; nothing is decided yet.
    Start,
    /// COMMIT ALTER of the START ALTER with this sequence number: the ALTER took effect.
    Commit(u64),
    /// ROLLBACK ALTER of the START ALTER with this sequence number: the ALTER failed.
    Rollback(u64),
}

/// A parsed MariaDB GTID event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MariaGtidEvent {
    /// The GTID (the server id comes from the event header).
    pub gtid: MariadbGtid,
    /// `flags2`.
    pub flags: u8,
    /// The two-phase ALTER half this group is (from `flags_extra`).
    pub alter: AlterPhase,
}

impl MariaGtidEvent {
    /// A single-statement group (DDL): it ends after its one QUERY event.
    #[cfg(test)]
    pub fn standalone(&self) -> bool {
        self.flags & gtid_flags::STANDALONE != 0
    }
}

/// Parses a MariaDB GTID event body: `seq_no u64, domain_id u32, flags2 u8`, then
/// `commit_id u64` (GROUP_COMMIT_ID), the xid (`format_id u32, gtrid_len u8, bqual_len u8,
/// data`; PREPARED_XA / COMPLETED_XA), then (MariaDB 10.8+, when the body goes on)
/// `flags_extra u8`, `extra_engines u8` (MULTI_ENGINE) and `sa_seq_no u64` (COMMIT_ALTER /
/// ROLLBACK_ALTER). Servers pad a short body with zeros, which reads as no extra flags.
pub fn parse_maria_gtid(body: &[u8], server_id: u32) -> Result<MariaGtidEvent, EventError> {
    let short = || err("MariaDB GTID", "body shorter than 13 bytes");
    let seq_no = le_u64(body, 0).ok_or_else(short)?;
    let domain_id = le_u32(body, 8).ok_or_else(short)?;
    let flags = *body.get(12).ok_or_else(short)?;
    let mut at = 13;
    if flags & gtid_flags::GROUP_COMMIT_ID != 0 {
        at += 8;
    }
    if flags & (gtid_flags::PREPARED_XA | gtid_flags::COMPLETED_XA) != 0 {
        let lens = body.get(at + 4..at + 6).ok_or_else(|| {
            err(
                "MariaDB GTID",
                format!("xid announced, body has {} bytes", body.len()),
            )
        })?;
        at += 6 + usize::from(lens[0]) + usize::from(lens[1]);
    }
    let extra = body.get(at).copied().unwrap_or(0);
    at += 1;
    if extra & gtid_flags_extra::MULTI_ENGINE != 0 {
        at += 1;
    }
    let sa_seq_no = || {
        le_u64(body, at).ok_or_else(|| {
            err(
                "MariaDB GTID",
                format!(
                    "COMMIT/ROLLBACK ALTER without the START ALTER's sequence number \
                     ({} bytes)",
                    body.len()
                ),
            )
        })
    };
    let alter = if extra & gtid_flags_extra::COMMIT_ALTER != 0 {
        AlterPhase::Commit(sa_seq_no()?)
    } else if extra & gtid_flags_extra::ROLLBACK_ALTER != 0 {
        AlterPhase::Rollback(sa_seq_no()?)
    } else if extra & gtid_flags_extra::START_ALTER != 0 {
        AlterPhase::Start
    } else {
        AlterPhase::None
    };
    Ok(MariaGtidEvent {
        gtid: MariadbGtid {
            domain_id,
            server_id,
            seq_no,
        },
        flags,
        alter,
    })
}

/// Parses a MariaDB GTID_LIST event body: `count u32 (low 28 bits), then count × (domain u32,
/// server u32, seq_no u64)`.
pub fn parse_maria_gtid_list(body: &[u8]) -> Result<GtidList, EventError> {
    let raw = le_u32(body, 0).ok_or_else(|| err("MariaDB GTID_LIST", "no count"))?;
    let count = (raw & 0x0fff_ffff) as usize;
    let mut list = GtidList::new();
    for i in 0..count {
        let at = 4 + i * 16;
        let (Some(domain_id), Some(server_id), Some(seq_no)) =
            (le_u32(body, at), le_u32(body, at + 4), le_u64(body, at + 8))
        else {
            return Err(err(
                "MariaDB GTID_LIST",
                format!("{count} entries announced, body has {} bytes", body.len()),
            ));
        };
        let g = MariadbGtid {
            domain_id,
            server_id,
            seq_no,
        };
        // A list has one entry per domain; keep the highest if a server repeats one.
        match list.get(domain_id) {
            Some(old) if old.seq_no >= seq_no => {}
            _ => {
                list.update(g);
            }
        }
    }
    Ok(list)
}

/// Decompresses a MariaDB compressed payload (`log_bin_compress`): one header byte
/// `0x80 | algorithm << 4 | n` (algorithm 0 = zlib; n = 1..4 bytes of uncompressed length
/// follow, high byte first as in `binlog_get_uncompress_len`), then zlib data.
///
/// A claimed length over `max` (`source.max_event_bytes`) is refused before anything is
/// allocated, and inflation stops one byte past the claimed length: neither the header nor
/// the zlib data can make it allocate more than `max` bytes.
pub fn maria_uncompress(data: &[u8], max: u64) -> Result<Vec<u8>, EventError> {
    let first = *data
        .first()
        .ok_or_else(|| err("MariaDB compressed", "empty payload"))?;
    let n = (first & 0x07) as usize;
    if first & 0xf0 != 0x80 || n == 0 || n > 4 {
        return Err(err(
            "MariaDB compressed",
            format!("unknown compression header byte {first:#04x}"),
        ));
    }
    let len_bytes = data
        .get(1..1 + n)
        .ok_or_else(|| err("MariaDB compressed", "truncated length"))?;
    let len = len_bytes
        .iter()
        .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
    if len as u64 > max {
        return Err(err(
            "MariaDB compressed",
            format!(
                "the statement claims {len} bytes decompressed, more than source.max_event_bytes \
                 ({max} bytes); fix: raise source.max_event_bytes (or \
                 SLUICE_SOURCE_MAX_EVENT_BYTES) to at least {len}"
            ),
        ));
    }
    // zlib expands at most ~1032:1: the claim alone does not size the buffer.
    let mut out = Vec::with_capacity(len.min(data.len().saturating_mul(1032)));
    flate2::read::ZlibDecoder::new(&data[1 + n..])
        .take(len as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| err("MariaDB compressed", format!("zlib: {e}")))?;
    if out.len() != len {
        return Err(err(
            "MariaDB compressed",
            format!(
                "expected {len} bytes after decompression, got {}",
                out.len()
            ),
        ));
    }
    Ok(out)
}

/// A decoded GTID_TAGGED_LOG_EVENT (MySQL 8.3+). Only the fields sluice uses are kept; the
/// others are still decoded so that a malformed body is an error, not a guess.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaggedGtid {
    /// `gtid_flags`.
    pub flags: u8,
    /// The source UUID.
    pub uuid: [u8; 16],
    /// The tag; `None` when the event carries an empty tag.
    pub tag: Option<String>,
    /// The transaction number.
    pub gno: u64,
    /// The full transaction length in bytes (GTID event included), 0 when absent.
    pub transaction_length: u64,
    /// Commit time on the originating server, µs since the epoch
    /// (`original_commit_timestamp`; the immediate commit time when the writer left it out
    /// because both are equal); 0 when neither is present.
    pub original_commit_us: u64,
}

/// The latest commit time a change event can carry: `source.ts_ns` is a signed 64-bit count
/// of nanoseconds, so µs past `i64::MAX / 1000` (year 2262) cannot be written.
pub const MAX_COMMIT_US: u64 = (i64::MAX / 1000) as u64;

/// A GTID event's commit timestamp (µs since the epoch) if it can be used: 0 means the server
/// wrote none (before MySQL 8.0.1), and a value past [`MAX_COMMIT_US`] is not a time any
/// server writes — both fall back to the event header's seconds.
pub fn commit_time_us(raw: u64) -> Option<u64> {
    (raw != 0 && raw <= MAX_COMMIT_US).then_some(raw)
}

/// Field ids of the tagged GTID event, in the order MySQL defines them
/// (`Gtid_event::define_fields`): every field is optional on the wire and ids ascend.
mod tagged_field {
    pub const FLAGS: u64 = 0;
    pub const UUID: u64 = 1;
    pub const GNO: u64 = 2;
    pub const TAG: u64 = 3;
    pub const LAST_COMMITTED: u64 = 4;
    pub const SEQUENCE_NUMBER: u64 = 5;
    pub const IMMEDIATE_COMMIT_TS: u64 = 6;
    pub const ORIGINAL_COMMIT_TS: u64 = 7;
    pub const TRANSACTION_LENGTH: u64 = 8;
    pub const IMMEDIATE_SERVER_VERSION: u64 = 9;
    pub const ORIGINAL_SERVER_VERSION: u64 = 10;
    pub const COMMIT_GROUP_TICKET: u64 = 11;
    /// The highest id this decoder knows.
    pub const LAST_KNOWN: u64 = COMMIT_GROUP_TICKET;
}

/// The serialization format version MySQL writes before a message (`serialization_format_version`).
const SERIALIZATION_FORMAT_VERSION: u64 = 1;

/// Longest GTID tag (`mysql::gtid::tag_max_length`).
const TAG_MAX_LEN: u64 = 32;

/// A reader of MySQL's serialization-library binary archive (`mysql/serialization`):
/// variable-length integers and length-prefixed strings, every read bounds-checked against
/// `end`.
struct SerReader<'a> {
    buf: &'a [u8],
    pos: usize,
    end: usize,
}

impl<'a> SerReader<'a> {
    /// An unsigned variable-length integer: the number of trailing one bits of the first byte
    /// plus one is the total byte count (1..=9); the value follows those bits, little-endian.
    fn uint(&mut self, what: &str) -> Result<u64, EventError> {
        let short = || err("GTID_TAGGED", format!("truncated {what}"));
        let first = *self.buf[..self.end].get(self.pos).ok_or_else(short)?;
        let n = first.trailing_ones() as usize + 1;
        let rest = self.buf[..self.end]
            .get(self.pos + 1..self.pos + n)
            .ok_or_else(short)?;
        let mut tail = [0u8; 8];
        tail[..n - 1].copy_from_slice(rest);
        let tail = u64::from_le_bytes(tail);
        // Up to 7 bytes, the bits after the length marker of the first byte carry the low
        // bits; with 8 the first byte is all marker, with 9 the next 8 bytes are the value.
        let value = if n <= 7 {
            u64::from(first >> n) | (tail << (8 - n))
        } else {
            tail
        };
        self.pos += n;
        Ok(value)
    }

    /// A signed variable-length integer (zig-zag: the lowest bit is the sign).
    fn int(&mut self, what: &str) -> Result<i64, EventError> {
        let u = self.uint(what)?;
        Ok(((u >> 1) as i64) ^ -((u & 1) as i64))
    }

    fn uint_max(&mut self, what: &str, max: u64) -> Result<u64, EventError> {
        let v = self.uint(what)?;
        if v > max {
            return Err(err("GTID_TAGGED", format!("{what} {v} is out of range")));
        }
        Ok(v)
    }

    fn bytes(&mut self, n: usize, what: &str) -> Result<&'a [u8], EventError> {
        let b = self.buf[..self.end]
            .get(self.pos..self.pos + n)
            .ok_or_else(|| err("GTID_TAGGED", format!("truncated {what}")))?;
        self.pos += n;
        Ok(b)
    }

    /// The next field id, without consuming it.
    fn peek_id(&mut self) -> Result<Option<u64>, EventError> {
        if self.pos >= self.end {
            return Ok(None);
        }
        let save = self.pos;
        let id = self.uint("field id")?;
        self.pos = save;
        Ok(Some(id))
    }
}

/// Parses a GTID_TAGGED_LOG_EVENT body (MySQL 8.3+). The body is one message of MySQL's
/// serialization library: `format version (varlen, = 1)`, `message size (varlen, counted from
/// the version byte)`, `last non-ignorable field id + 1 (varlen)`, then `field id (varlen),
/// value` for each field present, ids ascending. Integers are variable-length (signed ones
/// zig-zag), the UUID is 16 variable-length bytes, the tag a length-prefixed string. Unknown
/// fields after the known ones are skipped by the message size when the writer marked them
/// ignorable; otherwise the event is rejected.
pub fn parse_gtid_tagged(body: &[u8]) -> Result<TaggedGtid, EventError> {
    use tagged_field as f;
    let mut r = SerReader {
        buf: body,
        pos: 0,
        end: body.len(),
    };
    let version = r.uint("format version")?;
    if version != SERIALIZATION_FORMAT_VERSION {
        return Err(err(
            "GTID_TAGGED",
            format!("unknown serialization format version {version}"),
        ));
    }
    let size = r.uint("message size")?;
    let size = usize::try_from(size)
        .ok()
        .filter(|s| *s <= body.len() && *s >= r.pos)
        .ok_or_else(|| {
            err(
                "GTID_TAGGED",
                format!(
                    "message size {size} does not fit the {}-byte body",
                    body.len()
                ),
            )
        })?;
    r.end = size;
    let last_non_ignorable = r.uint("last non-ignorable field id")?;
    if last_non_ignorable > f::LAST_KNOWN + 1 {
        return Err(err(
            "GTID_TAGGED",
            format!(
                "the event has non-ignorable fields up to id {} that this reader does not \
                 know (it knows up to {})",
                last_non_ignorable - 1,
                f::LAST_KNOWN
            ),
        ));
    }
    let mut out = TaggedGtid {
        flags: 0,
        uuid: [0; 16],
        tag: None,
        gno: 0,
        transaction_length: 0,
        original_commit_us: 0,
    };
    let (mut have_uuid, mut have_gno) = (false, false);
    let (mut immediate_us, mut original_us) = (0, None);
    for id in 0..=f::LAST_KNOWN {
        if r.peek_id()? != Some(id) {
            continue;
        }
        r.uint("field id")?;
        match id {
            f::FLAGS => out.flags = r.uint_max("gtid_flags", u64::from(u8::MAX))? as u8,
            f::UUID => {
                for b in out.uuid.iter_mut() {
                    *b = r.uint_max("uuid byte", u64::from(u8::MAX))? as u8;
                }
                have_uuid = true;
            }
            f::GNO => {
                let gno = r.int("gno")?;
                out.gno = u64::try_from(gno)
                    .ok()
                    .filter(|g| *g >= 1)
                    .ok_or_else(|| err("GTID_TAGGED", format!("gno {gno} is out of range")))?;
                have_gno = true;
            }
            f::TAG => {
                let len = r.uint_max("tag length", TAG_MAX_LEN)? as usize;
                let raw = r.bytes(len, "tag")?;
                let tag =
                    std::str::from_utf8(raw).map_err(|_| err("GTID_TAGGED", "tag is not UTF-8"))?;
                out.tag = (!tag.is_empty()).then(|| tag.to_string());
            }
            f::LAST_COMMITTED | f::SEQUENCE_NUMBER => {
                r.int("logical timestamp")?;
            }
            f::IMMEDIATE_COMMIT_TS => immediate_us = r.uint("immediate commit timestamp")?,
            f::ORIGINAL_COMMIT_TS => original_us = Some(r.uint("original commit timestamp")?),
            f::COMMIT_GROUP_TICKET => {
                r.uint("commit group ticket")?;
            }
            f::TRANSACTION_LENGTH => out.transaction_length = r.uint("transaction length")?,
            f::IMMEDIATE_SERVER_VERSION | f::ORIGINAL_SERVER_VERSION => {
                r.uint_max("server version", u64::from(u32::MAX))?;
            }
            _ => {}
        }
    }
    // What is left are fields newer than this reader, which the writer marked ignorable
    // (checked above); a known id here would mean fields out of order.
    if let Some(id) = r.peek_id()? {
        if id <= f::LAST_KNOWN {
            return Err(err(
                "GTID_TAGGED",
                format!("field id {id} out of order at byte {}", r.pos),
            ));
        }
    }
    if !have_uuid || !have_gno {
        return Err(err("GTID_TAGGED", "the uuid or gno field is missing"));
    }
    // MySQL leaves the original commit time out when it equals the immediate one.
    out.original_commit_us = original_us.unwrap_or(immediate_us);
    Ok(out)
}

/// What a QUERY event means for transaction boundaries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryKind {
    /// `BEGIN`: a transaction opens.
    Begin,
    /// `COMMIT`: the open transaction commits (non-transactional engines, MariaDB).
    Commit,
    /// `ROLLBACK`: the open transaction is discarded.
    Rollback,
    /// `XA START|END|PREPARE|COMMIT|ROLLBACK|RECOVER`.
    Xa(String),
    /// `SAVEPOINT` / `ROLLBACK TO`: inside a transaction, nothing to do.
    Savepoint,
    /// Anything else: DDL and other statements.
    Other,
}

/// Classifies a QUERY event's statement text.
pub fn classify_query(q: &str) -> QueryKind {
    let t = q.trim_start();
    let upper: String = t.chars().take(24).collect::<String>().to_ascii_uppercase();
    let word = |w: &str| {
        upper.starts_with(w)
            && upper[w.len()..]
                .chars()
                .next()
                .is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_')
    };
    if word("BEGIN") {
        QueryKind::Begin
    } else if word("COMMIT") {
        QueryKind::Commit
    } else if upper.starts_with("ROLLBACK TO") || word("SAVEPOINT") || word("RELEASE") {
        QueryKind::Savepoint
    } else if word("ROLLBACK") {
        QueryKind::Rollback
    } else if word("XA") {
        QueryKind::Xa(t.to_string())
    } else {
        QueryKind::Other
    }
}

/// An XA_PREPARE_LOG_EVENT: the end of a prepared XA group (or, with `one_phase`, the commit
/// of an `XA COMMIT ... ONE PHASE` group).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XaPrepare {
    /// The group was committed in one phase: it is a normal commit.
    pub one_phase: bool,
    /// The xid in its normalized text form, see [`xid_text`].
    pub xid: String,
}

/// The normalized text of an xid, as servers print it in `XA COMMIT`: lower-case
/// `x'<gtrid hex>',x'<bqual hex>',<format id>`.
pub fn xid_text(format_id: i64, gtrid: &[u8], bqual: &[u8]) -> String {
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    format!("x'{}',x'{}',{format_id}", hex(gtrid), hex(bqual))
}

/// Parses an XA_PREPARE_LOG_EVENT body: `one_phase u8, format_id u32, gtrid_len u32,
/// bqual_len u32, gtrid, bqual`.
pub fn parse_xa_prepare(body: &[u8]) -> Result<XaPrepare, EventError> {
    let short = || {
        err(
            "XA_PREPARE",
            format!("body of {} bytes is too short", body.len()),
        )
    };
    let one_phase = *body.first().ok_or_else(short)? != 0;
    let format_id = le_u32(body, 1).ok_or_else(short)? as i32;
    let gl = le_u32(body, 5).ok_or_else(short)? as usize;
    let bl = le_u32(body, 9).ok_or_else(short)? as usize;
    if gl > 64 || bl > 64 {
        return Err(err(
            "XA_PREPARE",
            format!("xid lengths {gl}/{bl} exceed 64"),
        ));
    }
    let gtrid = body.get(13..13 + gl).ok_or_else(short)?;
    let bqual = body.get(13 + gl..13 + gl + bl).ok_or_else(short)?;
    Ok(XaPrepare {
        one_phase,
        xid: xid_text(i64::from(format_id), gtrid, bqual),
    })
}

/// An XA statement as written to the binlog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum XaStatement {
    /// `XA START xid` (MySQL writes it as a QUERY; MariaDB flags the GTID event instead).
    Start,
    /// `XA END xid`.
    End,
    /// `XA COMMIT xid` (the second phase; `ONE PHASE` commits are logged as a normal group).
    Commit(String),
    /// `XA ROLLBACK xid`.
    Rollback(String),
    /// Anything else (`XA PREPARE` as text, `XA RECOVER`).
    Other,
}

/// Classifies an XA statement and normalizes its xid (`X'78',X'',1` → `x'78',x'',1`).
pub fn parse_xa_statement(stmt: &str) -> XaStatement {
    let t = stmt.trim();
    let upper = t.to_ascii_uppercase();
    let rest = |kw: &str| -> String {
        t[kw.len()..]
            .trim()
            .trim_end_matches(';')
            .to_ascii_lowercase()
            .split_whitespace()
            .collect::<String>()
    };
    if upper.starts_with("XA START") || upper.starts_with("XA BEGIN") {
        XaStatement::Start
    } else if upper.starts_with("XA END") {
        XaStatement::End
    } else if upper.starts_with("XA COMMIT") {
        XaStatement::Commit(rest("XA COMMIT"))
    } else if upper.starts_with("XA ROLLBACK") {
        XaStatement::Rollback(rest("XA ROLLBACK"))
    } else {
        XaStatement::Other
    }
}

/// Strips the 4 CRC32 bytes that a checksum-enabled server appends to the fake ROTATE event
/// sent before the format description (the reader cannot know the checksum setting yet).
/// `header` is the 19-byte event header, `body` the rest as received.
pub fn strip_fake_rotate_crc<'a>(header: &[u8; 19], body: &'a [u8]) -> &'a [u8] {
    if body.len() < 4 + 8 {
        return body;
    }
    let (payload, crc) = body.split_at(body.len() - 4);
    let mut c = flate2::Crc::new();
    c.update(header);
    c.update(payload);
    if c.sum().to_le_bytes() == crc {
        payload
    } else {
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binlog::fixtures::{tagged_gtid_body, varlen, zigzag};
    use std::io::Write;

    #[test]
    fn varlen_matches_the_documented_examples() {
        // readme.md: 65535 is "00000111 11111111 11111011" (big-endian display).
        let mut b = Vec::new();
        varlen(&mut b, 65535);
        assert_eq!(b, [0xfb, 0xff, 0x07]);
        let mut r = SerReader {
            buf: &b,
            pos: 0,
            end: b.len(),
        };
        assert_eq!(r.uint("x").unwrap(), 65535);
        // Signed: 65535 → "00001111 11111111 11110011", -65535 → "... 11101011".
        for (v, want) in [(65535i64, [0xf3, 0xff, 0x0f]), (-65535, [0xeb, 0xff, 0x0f])] {
            let mut b = Vec::new();
            varlen(&mut b, zigzag(v));
            assert_eq!(b, want);
            let mut r = SerReader {
                buf: &b,
                pos: 0,
                end: b.len(),
            };
            assert_eq!(r.int("x").unwrap(), v);
        }
        for v in [
            0u64,
            1,
            127,
            128,
            1 << 20,
            1 << 55,
            (1 << 56) - 1,
            1 << 56,
            u64::MAX,
        ] {
            let mut b = Vec::new();
            varlen(&mut b, v);
            let mut r = SerReader {
                buf: &b,
                pos: 0,
                end: b.len(),
            };
            assert_eq!(r.uint("x").unwrap(), v, "{v}");
            assert_eq!(r.pos, b.len(), "{v}");
            // Every strict prefix is a truncation error.
            for cut in 0..b.len() {
                let mut r = SerReader {
                    buf: &b[..cut],
                    pos: 0,
                    end: cut,
                };
                assert!(r.uint("x").is_err());
            }
        }
    }

    const UUID: [u8; 16] = [
        0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1, 0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95,
        0x62,
    ];

    #[test]
    fn commit_time_falls_back_when_absent_or_unwritable() {
        assert_eq!(commit_time_us(0), None);
        assert_eq!(commit_time_us(1), Some(1));
        assert_eq!(commit_time_us(MAX_COMMIT_US), Some(MAX_COMMIT_US));
        assert_eq!(commit_time_us(MAX_COMMIT_US + 1), None);
        // The largest 56-bit value a classic GTID event can hold is past year 2262.
        assert_eq!(commit_time_us((1 << 55) - 1), None);
        assert!(MAX_COMMIT_US.saturating_mul(1000) <= i64::MAX as u64);
    }

    #[test]
    fn tagged_gtid_commit_time_is_the_immediate_one_when_the_original_is_left_out() {
        // The fixture writes field 6 (immediate) and no field 7, as MySQL does when the
        // transaction originated on this server.
        let g = parse_gtid_tagged(&tagged_gtid_body(UUID, "t", 3, &[])).unwrap();
        assert_eq!(g.original_commit_us, 1_722_000_000_123_456);
    }

    #[test]
    fn tagged_gtid_commit_time_is_the_originating_servers() {
        // A replica's event: immediate (its own commit) and original (the source's) differ.
        let mut fields = Vec::new();
        varlen(&mut fields, 1);
        for b in UUID {
            varlen(&mut fields, u64::from(b));
        }
        varlen(&mut fields, 2);
        varlen(&mut fields, zigzag(5));
        varlen(&mut fields, 6);
        varlen(&mut fields, 1_722_000_009_000_001);
        varlen(&mut fields, 7);
        varlen(&mut fields, 1_722_000_000_654_321);
        let mut body = Vec::new();
        varlen(&mut body, 1);
        let size = 3 + fields.len() as u64;
        assert!(size < 128);
        varlen(&mut body, size);
        varlen(&mut body, 8);
        body.extend(fields);
        let g = parse_gtid_tagged(&body).unwrap();
        assert_eq!((g.gno, g.original_commit_us), (5, 1_722_000_000_654_321));
    }

    #[test]
    fn tagged_gtid_body_decodes() {
        let body = tagged_gtid_body(UUID, "mytag", 42, &[]);
        let g = parse_gtid_tagged(&body).unwrap();
        assert_eq!(g.uuid, UUID);
        assert_eq!(g.tag.as_deref(), Some("mytag"));
        assert_eq!(g.gno, 42);
        assert_eq!(g.transaction_length, 312);
        // Trailing bytes after the message are ignored, as MySQL does.
        let mut longer = body.clone();
        longer.extend([0, 0]);
        assert_eq!(parse_gtid_tagged(&longer).unwrap(), g);
        // Every truncation is an error, never a partial GTID.
        for cut in 0..body.len() {
            assert!(parse_gtid_tagged(&body[..cut]).is_err(), "cut {cut}");
        }
    }

    #[test]
    fn tagged_gtid_rejects_what_it_cannot_read() {
        // Unknown format version.
        let mut body = tagged_gtid_body(UUID, "t", 1, &[]);
        body[0] = 0x04;
        assert!(parse_gtid_tagged(&body).is_err());
        // gno 0 / negative.
        assert!(parse_gtid_tagged(&tagged_gtid_body(UUID, "t", 0, &[])).is_err());
        assert!(parse_gtid_tagged(&tagged_gtid_body(UUID, "t", -3, &[])).is_err());
        // A tag longer than 32 bytes.
        assert!(parse_gtid_tagged(&tagged_gtid_body(UUID, &"a".repeat(33), 1, &[])).is_err());
        // A newer ignorable field (id 12, one varlen value) is skipped ...
        let mut extra = Vec::new();
        varlen(&mut extra, 12);
        varlen(&mut extra, 5);
        let g = parse_gtid_tagged(&tagged_gtid_body(UUID, "t", 9, &extra)).unwrap();
        assert_eq!(g.gno, 9);
        // ... but not when the writer says it is non-ignorable (lnif = 13).
        let mut body = tagged_gtid_body(UUID, "t", 9, &extra);
        body[2] = 0x1a; // varlen(13)
        assert!(parse_gtid_tagged(&body).is_err());
        // A known field id after the known fields means fields out of order.
        let mut dup = Vec::new();
        varlen(&mut dup, 2);
        varlen(&mut dup, zigzag(5));
        assert!(parse_gtid_tagged(&tagged_gtid_body(UUID, "t", 9, &dup)).is_err());
    }

    #[test]
    fn maria_gtid_body() {
        let mut b = 42u64.to_le_bytes().to_vec();
        b.extend(7u32.to_le_bytes());
        b.push(gtid_flags::STANDALONE | gtid_flags::GROUP_COMMIT_ID);
        b.extend(99u64.to_le_bytes());
        let g = parse_maria_gtid(&b, 3).unwrap();
        assert_eq!(g.gtid.to_string(), "7-3-42");
        assert!(g.standalone());
        assert!(parse_maria_gtid(&b[..10], 3).is_err());
    }

    /// Hex of a GTID event body (header and checksum cut off).
    fn hex_body(h: &str) -> Vec<u8> {
        h.split_whitespace()
            .map(|b| u8::from_str_radix(b, 16).unwrap())
            .collect()
    }

    /// Bodies as MariaDB 11.8.9 wrote them with `binlog_alter_two_phase=ON` (read from its
    /// binlog file): `ALTER TABLE ... ADD COLUMN` logged as GTID 0-4-5 START ALTER, then GTID
    /// 0-4-6 COMMIT ALTER id=5 (flags_extra 0x10 adds the 4-byte thread id 12 at the end), and
    /// an ordinary DML group (GTID 0-4-3: flags_extra 0x10, thread id, one byte of padding).
    #[test]
    fn maria_gtid_two_phase_alter_flags() {
        let start = hex_body("05 00 00 00 00 00 00 00 00 00 00 00 29 12 0c 00 00 00 00");
        let g = parse_maria_gtid(&start, 4).unwrap();
        assert_eq!(g.gtid.to_string(), "0-4-5");
        assert!(g.standalone());
        assert_eq!(g.alter, AlterPhase::Start);

        let commit = hex_body(
            "06 00 00 00 00 00 00 00 00 00 00 00 29 14 05 00 00 00 00 00 00 00 0c 00 00 00",
        );
        let g = parse_maria_gtid(&commit, 4).unwrap();
        assert_eq!(g.gtid.to_string(), "0-4-6");
        assert_eq!(g.alter, AlterPhase::Commit(5));
        // The START ALTER's sequence number is required.
        assert!(parse_maria_gtid(&commit[..18], 4).is_err());

        let mut rollback = commit.clone();
        rollback[13] = 0x18;
        assert_eq!(
            parse_maria_gtid(&rollback, 4).unwrap().alter,
            AlterPhase::Rollback(5)
        );

        let dml = hex_body("03 00 00 00 00 00 00 00 00 00 00 00 0c 10 0c 00 00 00 00");
        assert_eq!(parse_maria_gtid(&dml, 4).unwrap().alter, AlterPhase::None);
        // MariaDB 10.x pads the body to 19 bytes with zeros: no extra flags.
        let mut old = 9u64.to_le_bytes().to_vec();
        old.extend([0, 0, 0, 0, 0x0c, 0, 0, 0, 0, 0, 0]);
        assert_eq!(parse_maria_gtid(&old, 1).unwrap().alter, AlterPhase::None);
    }

    /// The extra flags come after the commit id and the xid, whose lengths they skip.
    #[test]
    fn maria_gtid_extra_flags_after_commit_id_and_xid() {
        let mut b = 7u64.to_le_bytes().to_vec();
        b.extend(0u32.to_le_bytes());
        b.push(gtid_flags::GROUP_COMMIT_ID | gtid_flags::PREPARED_XA);
        b.extend(99u64.to_le_bytes());
        b.extend(1u32.to_le_bytes()); // format id
        b.extend([3, 2]); // gtrid, bqual lengths
        b.extend(b"abcde");
        b.push(gtid_flags_extra::MULTI_ENGINE | gtid_flags_extra::COMMIT_ALTER);
        b.push(2); // extra engines
        b.extend(6u64.to_le_bytes());
        assert_eq!(
            parse_maria_gtid(&b, 1).unwrap().alter,
            AlterPhase::Commit(6)
        );
        // An xid longer than the body is an error, not a wrong read.
        assert!(parse_maria_gtid(&b[..20], 1).is_err());
    }

    #[test]
    fn maria_gtid_list_body() {
        let mut b = 2u32.to_le_bytes().to_vec();
        for (d, s, n) in [(0u32, 1u32, 10u64), (1, 2, 7)] {
            b.extend(d.to_le_bytes());
            b.extend(s.to_le_bytes());
            b.extend(n.to_le_bytes());
        }
        assert_eq!(
            parse_maria_gtid_list(&b).unwrap().to_string(),
            "0-1-10,1-2-7"
        );
        assert!(parse_maria_gtid_list(&b[..20]).is_err());
        assert!(parse_maria_gtid_list(&0u32.to_le_bytes())
            .unwrap()
            .is_empty());
    }

    #[test]
    fn uncompress_round_trip() {
        let text = b"INSERT INTO t VALUES (1, 'hello hello hello hello')";
        let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(text).unwrap();
        let z = enc.finish().unwrap();
        let mut data = vec![0x81, text.len() as u8];
        data.extend(z);
        assert_eq!(maria_uncompress(&data, 1 << 30).unwrap(), text);
        data[1] += 1;
        assert!(maria_uncompress(&data, 1 << 30).is_err());
        assert!(maria_uncompress(&[0x00], 1 << 30).is_err());

        // Lengths of more than one byte are stored high byte first (MariaDB
        // `binlog_buf_compress`): 438 = 0x01b6 is `0x82 0x01 0xb6`.
        let text = "ALTER TABLE t ADD COLUMN c INT COMMENT 'long' ".repeat(10);
        let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(text.as_bytes()).unwrap();
        let mut data = vec![0x82];
        data.extend((text.len() as u16).to_be_bytes());
        data.extend(enc.finish().unwrap());
        assert_eq!(maria_uncompress(&data, 1 << 30).unwrap(), text.as_bytes());
        let mut swapped = data.clone();
        swapped.swap(1, 2);
        assert!(maria_uncompress(&swapped, 1 << 30).is_err());
    }

    /// A compressed statement claiming 2 GiB is refused from its header (naming the setting
    /// and the size), before anything is allocated; zlib data inflating past its claim stops
    /// one byte after it.
    #[test]
    fn decompression_is_capped_by_max_event_bytes() {
        let mut data = vec![0x84];
        data.extend((2u32 << 30).to_be_bytes());
        data.extend([0x78, 0x9c, 0x03, 0x00]);
        let e = maria_uncompress(&data, 1 << 30).unwrap_err().to_string();
        assert!(
            e.contains("source.max_event_bytes") && e.contains("2147483648"),
            "{e}"
        );
        // A zlib bomb: 8 MiB of zeros behind a claim of 1000 bytes.
        let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(&vec![0u8; 8 << 20]).unwrap();
        let z = enc.finish().unwrap();
        let mut data = vec![0x82];
        data.extend(1000u16.to_be_bytes());
        data.extend(z);
        let e = maria_uncompress(&data, 1 << 30).unwrap_err().to_string();
        assert!(
            e.contains("expected 1000 bytes after decompression, got 1001"),
            "{e}"
        );
        // Within the setting: taken; over it: refused.
        let text = vec![b'x'; 500];
        let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&text).unwrap();
        let mut data = vec![0x82];
        data.extend(500u16.to_be_bytes());
        data.extend(enc.finish().unwrap());
        assert_eq!(maria_uncompress(&data, 500).unwrap(), text);
        assert!(maria_uncompress(&data, 499).is_err());
    }

    #[test]
    fn query_classes() {
        assert_eq!(classify_query("BEGIN"), QueryKind::Begin);
        assert_eq!(classify_query("  commit"), QueryKind::Commit);
        assert_eq!(classify_query("ROLLBACK"), QueryKind::Rollback);
        assert_eq!(classify_query("ROLLBACK TO sp1"), QueryKind::Savepoint);
        assert_eq!(classify_query("SAVEPOINT sp1"), QueryKind::Savepoint);
        assert!(matches!(classify_query("XA START X'01'"), QueryKind::Xa(_)));
        assert_eq!(classify_query("BEGINNING"), QueryKind::Other);
        assert_eq!(classify_query("CREATE TABLE t (a int)"), QueryKind::Other);
        assert_eq!(classify_query("COMMITTED_x"), QueryKind::Other);
    }

    #[test]
    fn xa_prepare_body_and_statements_agree_on_the_xid() {
        let mut b = vec![0u8];
        b.extend(1u32.to_le_bytes());
        b.extend(2u32.to_le_bytes());
        b.extend(0u32.to_le_bytes());
        b.extend(b"x1");
        let p = parse_xa_prepare(&b).unwrap();
        assert!(!p.one_phase);
        assert_eq!(p.xid, "x'7831',x'',1");
        assert_eq!(
            parse_xa_statement("XA COMMIT X'7831',X'',1"),
            XaStatement::Commit(p.xid.clone())
        );
        assert_eq!(
            parse_xa_statement("XA ROLLBACK X'7831',X'',1"),
            XaStatement::Rollback(p.xid)
        );
        assert_eq!(
            parse_xa_statement("XA START X'7831',X'',1"),
            XaStatement::Start
        );
        assert_eq!(parse_xa_statement("XA END X'7831',X'',1"), XaStatement::End);
        assert!(parse_xa_prepare(&b[..14]).is_err());
    }

    #[test]
    fn fake_rotate_crc_is_stripped_only_when_it_matches() {
        let header = [1u8; 19];
        let mut body = 4u64.to_le_bytes().to_vec();
        body.extend(b"mysql-bin.000001");
        let mut c = flate2::Crc::new();
        c.update(&header);
        c.update(&body);
        let mut with = body.clone();
        with.extend(c.sum().to_le_bytes());
        assert_eq!(strip_fake_rotate_crc(&header, &with), &body[..]);
        assert_eq!(strip_fake_rotate_crc(&header, &body), &body[..]);
    }
}
