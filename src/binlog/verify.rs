//! Checks of every binlog event of the replication stream before anything decodes it.
//!
//! sluice announces `@master_binlog_checksum = 'CRC32'`, so the server checksums the events it
//! makes up (the ROTATE before the first format description, heartbeats) with CRC32, and
//! every event read from a binlog file carries the checksum that file's FORMAT_DESCRIPTION
//! event names (its algorithm byte; the format description itself always carries one).
//!
//! Invariants of [`EventDecoder::decode`]:
//! * every length is checked first: the 19-byte header is there, the header's `event_size` is
//!   exactly the packet's length, the event holds its checksum, a format description holds its
//!   fixed part. No claimed length reaches the client library's decoder (which panics or
//!   allocates on a wrong one).
//! * with CRC32 on, an event whose checksum does not match is refused ([`Damaged`]): no value
//!   decoded from damaged bytes is ever handed out. The format description's own checksum is
//!   computed as the servers do, with `LOG_EVENT_BINLOG_IN_USE_F` cleared (that one flag bit is
//!   therefore not covered; nothing reads it).
//! * a binlog file written with `binlog_checksum = NONE` has nothing to verify: its events only
//!   get the length checks. A format description whose algorithm byte says NONE but whose
//!   checksum matches CRC32 is a damaged byte, and refused.

use mysql_common::binlog::consts::BinlogVersion;
use mysql_common::binlog::events::Event;
use mysql_common::binlog::EventStreamReader;

use crate::binlog::events::types;

/// Length of the common event header.
pub const HEADER_LEN: usize = 19;

/// Length of an event checksum.
const CRC_LEN: usize = 4;

/// Fixed part of a format description body: binlog version (2), server version (50), create
/// timestamp (4), header length (1); the post-header lengths follow.
const FDE_FIXED: usize = 57;

/// `LOG_EVENT_BINLOG_IN_USE_F`: set in a format description while its file is open; the
/// checksum is computed without it.
const BINLOG_IN_USE: u8 = 0x01;

/// Checksum algorithm codes of the format description.
const ALG_OFF: u8 = 0;
const ALG_CRC32: u8 = 1;

/// Whether the events that follow carry a CRC32.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checksum {
    /// `binlog_checksum = NONE`.
    Off,
    /// `binlog_checksum = CRC32`.
    Crc32,
}

/// An event that failed its checks: what is wrong with it. The caller names the position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damaged {
    /// The event type byte as received (itself possibly damaged).
    pub event_type: u8,
    /// What is wrong.
    pub detail: String,
}

impl std::fmt::Display for Damaged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "event type {}: {}", self.event_type, self.detail)
    }
}

/// Verifies the events of one replication connection and decodes them.
#[derive(Debug)]
pub struct EventDecoder {
    checksum: Checksum,
    esr: EventStreamReader,
}

impl Default for EventDecoder {
    fn default() -> Self {
        EventDecoder::new()
    }
}

impl EventDecoder {
    /// A decoder for a dump sluice asked for with `@master_binlog_checksum = 'CRC32'`: events
    /// before the first format description carry CRC32.
    pub fn new() -> EventDecoder {
        EventDecoder {
            checksum: Checksum::Crc32,
            esr: EventStreamReader::new(BinlogVersion::Version4),
        }
    }

    /// Whether the current events carry a CRC32.
    #[cfg(test)]
    pub fn checksum(&self) -> Checksum {
        self.checksum
    }

    /// Checks `ev` (one event: a dump packet without its leading 0x00) and decodes it.
    pub fn decode(&mut self, ev: &[u8]) -> Result<Event, Damaged> {
        self.check(ev)?;
        let etype = ev[4];
        match self.esr.read(ev) {
            Ok(Some(e)) => Ok(e),
            Ok(None) => Err(damaged(etype, "empty event".into())),
            Err(e) => Err(damaged(etype, format!("undecodable: {e}"))),
        }
    }

    /// The checks of the module doc; updates the checksum setting at a format description.
    pub fn check(&mut self, ev: &[u8]) -> Result<(), Damaged> {
        let Some(header) = ev.get(..HEADER_LEN) else {
            return Err(damaged(
                ev.get(4).copied().unwrap_or(0),
                format!(
                    "{} bytes, shorter than the {HEADER_LEN}-byte event header",
                    ev.len()
                ),
            ));
        };
        let etype = header[4];
        let size = u32::from_le_bytes([header[9], header[10], header[11], header[12]]);
        if size as usize != ev.len() {
            return Err(damaged(
                etype,
                format!(
                    "its header claims {size} bytes, the packet holds {}",
                    ev.len()
                ),
            ));
        }
        if etype == types::FORMAT_DESCRIPTION {
            self.checksum = check_fde(ev)?;
            return Ok(());
        }
        match self.checksum {
            Checksum::Off => Ok(()),
            Checksum::Crc32 => {
                if ev.len() < HEADER_LEN + CRC_LEN {
                    return Err(damaged(
                        etype,
                        format!("{} bytes, too short to hold its checksum", ev.len()),
                    ));
                }
                let (data, crc) = ev.split_at(ev.len() - CRC_LEN);
                verify_crc(etype, crc32(&[data]), crc)
            }
        }
    }
}

/// Checks a format description and returns the checksum setting it announces.
fn check_fde(ev: &[u8]) -> Result<Checksum, Damaged> {
    let etype = types::FORMAT_DESCRIPTION;
    let min = HEADER_LEN + FDE_FIXED + 1 + CRC_LEN;
    if ev.len() < min {
        return Err(damaged(
            etype,
            format!(
                "{} bytes, a format description has at least {min}",
                ev.len()
            ),
        ));
    }
    let body = &ev[HEADER_LEN..];
    let version = u16::from_le_bytes([body[0], body[1]]);
    if version != 4 {
        return Err(damaged(etype, format!("binlog version {version}, not 4")));
    }
    let header_len = body[56];
    if usize::from(header_len) != HEADER_LEN {
        return Err(damaged(
            etype,
            format!("event header length {header_len}, not {HEADER_LEN}"),
        ));
    }
    let server = mysql_common::misc::split_version(&body[2..52]);
    if server < (5, 6, 1) {
        // Servers before checksums (5.6.1) write no algorithm byte; sluice reads none of them
        // (its oldest is MySQL 5.7), so this is a damaged version string.
        return Err(damaged(
            etype,
            format!(
                "server version {}.{}.{} predates binlog checksums (5.6.1)",
                server.0, server.1, server.2
            ),
        ));
    }
    let alg_at = ev.len() - CRC_LEN - 1;
    let (data, crc) = ev.split_at(ev.len() - CRC_LEN);
    let mut head = [0u8; HEADER_LEN];
    head.copy_from_slice(&ev[..HEADER_LEN]);
    head[17] &= !BINLOG_IN_USE;
    match ev[alg_at] {
        ALG_CRC32 => {
            verify_crc(etype, crc32(&[&head, &data[HEADER_LEN..]]), crc)?;
            Ok(Checksum::Crc32)
        }
        ALG_OFF => {
            let as_crc32 = crc32(&[&head, &data[HEADER_LEN..alg_at], &[ALG_CRC32]]);
            if as_crc32.to_le_bytes() == crc {
                return Err(damaged(
                    etype,
                    "its checksum algorithm byte says NONE, but its CRC32 matches with CRC32 \
                     there: the byte is damaged"
                        .into(),
                ));
            }
            Ok(Checksum::Off)
        }
        other => Err(damaged(
            etype,
            format!("unknown checksum algorithm {other} (known: 0 = NONE, 1 = CRC32)"),
        )),
    }
}

fn verify_crc(etype: u8, computed: u32, stored: &[u8]) -> Result<(), Damaged> {
    let stored = u32::from_le_bytes([stored[0], stored[1], stored[2], stored[3]]);
    if computed == stored {
        Ok(())
    } else {
        Err(damaged(
            etype,
            format!(
                "CRC32 mismatch: the event says {stored:#010x}, its bytes give {computed:#010x}"
            ),
        ))
    }
}

fn crc32(parts: &[&[u8]]) -> u32 {
    let mut c = flate2::Crc::new();
    for p in parts {
        c.update(p);
    }
    c.sum()
}

fn damaged(event_type: u8, detail: String) -> Damaged {
    Damaged { event_type, detail }
}

#[cfg(test)]
#[path = "verify_tests.rs"]
mod tests;
