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
    pub const STANDALONE: u8 = 1;
    /// A commit id follows.
    pub const GROUP_COMMIT_ID: u8 = 2;
    /// The group is an XA PREPARE.
    pub const PREPARED_XA: u8 = 64;
    /// The group is an XA COMMIT/ROLLBACK.
    pub const COMPLETED_XA: u8 = 128;
}

/// A parsed MariaDB GTID event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MariaGtidEvent {
    /// The GTID (the server id comes from the event header).
    pub gtid: MariadbGtid,
    /// `flags2`.
    pub flags: u8,
}

impl MariaGtidEvent {
    /// A single-statement group (DDL): it ends after its one QUERY event.
    pub fn standalone(&self) -> bool {
        self.flags & gtid_flags::STANDALONE != 0
    }
}

/// Parses a MariaDB GTID event body: `seq_no u64, domain_id u32, flags2 u8, ...`.
pub fn parse_maria_gtid(body: &[u8], server_id: u32) -> Result<MariaGtidEvent, EventError> {
    let seq_no =
        le_u64(body, 0).ok_or_else(|| err("MariaDB GTID", "body shorter than 13 bytes"))?;
    let domain_id =
        le_u32(body, 8).ok_or_else(|| err("MariaDB GTID", "body shorter than 13 bytes"))?;
    let flags = *body
        .get(12)
        .ok_or_else(|| err("MariaDB GTID", "body shorter than 13 bytes"))?;
    Ok(MariaGtidEvent {
        gtid: MariadbGtid {
            domain_id,
            server_id,
            seq_no,
        },
        flags,
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
pub fn maria_uncompress(data: &[u8]) -> Result<Vec<u8>, EventError> {
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
    let mut out = Vec::with_capacity(len.min(64 << 20));
    flate2::read::ZlibDecoder::new(&data[1 + n..])
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
    use std::io::Write;

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
        assert_eq!(maria_uncompress(&data).unwrap(), text);
        data[1] += 1;
        assert!(maria_uncompress(&data).is_err());
        assert!(maria_uncompress(&[0x00]).is_err());

        // Lengths of more than one byte are stored high byte first (MariaDB
        // `binlog_buf_compress`): 438 = 0x01b6 is `0x82 0x01 0xb6`.
        let text = "ALTER TABLE t ADD COLUMN c INT COMMENT 'long' ".repeat(10);
        let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(text.as_bytes()).unwrap();
        let mut data = vec![0x82];
        data.extend((text.len() as u16).to_be_bytes());
        data.extend(enc.finish().unwrap());
        assert_eq!(maria_uncompress(&data).unwrap(), text.as_bytes());
        let mut swapped = data.clone();
        swapped.swap(1, 2);
        assert!(maria_uncompress(&swapped).is_err());
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
