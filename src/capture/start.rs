//! Where streaming begins: the committed position when there is one, else `source.start`
//! resolved against the server ([`resolve_start`], giving a [`ResumePoint`]), and how the
//! dump is requested from there ([`DumpRequest`]; [`dump_sids`] for the SID block of a GTID
//! dump).
//!
//! Invariant: a pipeline that committed resumes exactly at its committed position, a source
//! commit boundary; a committed position of another kind than the server's (a pipeline
//! pointed at another server) is a definite error, never a guess.

use std::collections::BTreeMap;

use mysql_async::Conn;
use mysql_common::packets::{Sid, Tag};

use crate::error::{Error, Result};
use crate::mysql::server::{self, Flavor, ServerInfo};
use crate::position::{FilePos, GtidList, GtidSet, SourcePosition, StartSpec};
use crate::schema::tracked::TableDef;

use super::tracker::Tracker;

/// How the dump is requested from the server.
#[derive(Debug, Clone, PartialEq)]
pub enum DumpRequest {
    /// COM_BINLOG_DUMP from a file and position.
    FilePos(FilePos),
    /// COM_BINLOG_DUMP_GTID with the executed set (MySQL).
    MysqlGtid(GtidSet),
    /// COM_BINLOG_DUMP with `@slave_connect_state` (MariaDB).
    MariadbGtid(GtidList),
}

/// Where streaming begins: the dump request and the tracker state that goes with it.
#[derive(Debug, Clone)]
pub struct ResumePoint {
    /// What to ask the server for.
    pub request: DumpRequest,
    /// Position state at that point.
    pub tracker: Tracker,
    /// Tracked table definitions at that point (the committed schema history, or the
    /// definitions read from information_schema for a new pipeline at `start = "latest"`).
    pub defs: Vec<TableDef>,
    /// `defs` are not in the schema history yet (read at the start of a new pipeline): the
    /// stream writes them first, so they commit with the start position.
    pub defs_unwritten: bool,
    /// A snapshot to run (or go on with) while streaming.
    pub snapshot: Option<crate::snapshot::progress::SnapshotProgress>,
}

/// Resolves where to start: the committed position if there is one, else `start`.
pub async fn resolve_start(
    conn: &mut Conn,
    info: &ServerInfo,
    committed: Option<&SourcePosition>,
    start: &StartSpec,
) -> Result<ResumePoint> {
    let tracker = |file: &str, pos: u64| Tracker {
        file: file.to_string(),
        pos,
        mysql: None,
        mariadb: None,
        xa_prepared: BTreeMap::new(),
    };
    if let Some(pos) = committed {
        return match (pos, info.flavor) {
            (SourcePosition::FilePos(fp), _) => Ok(ResumePoint {
                request: DumpRequest::FilePos(fp.clone()),
                tracker: tracker(&fp.file, fp.pos),
                defs: Vec::new(),
                defs_unwritten: false,
                snapshot: None,
            }),
            (SourcePosition::MysqlGtid { gtid_set, file_pos }, Flavor::MySql) => {
                let mut t = tracker("", 4);
                if let Some(fp) = file_pos {
                    t = tracker(&fp.file, fp.pos);
                }
                t.mysql = Some(gtid_set.clone());
                Ok(ResumePoint {
                    request: DumpRequest::MysqlGtid(gtid_set.clone()),
                    tracker: t,
                    defs: Vec::new(),
                    defs_unwritten: false,
                    snapshot: None,
                })
            }
            (
                SourcePosition::MariadbGtid {
                    gtid_list,
                    file_pos,
                },
                Flavor::MariaDb,
            ) => {
                let mut t = tracker("", 4);
                if let Some(fp) = file_pos {
                    t = tracker(&fp.file, fp.pos);
                }
                t.mariadb = Some(gtid_list.clone());
                let request = if gtid_list.is_empty() {
                    match file_pos {
                        Some(fp) => DumpRequest::FilePos(fp.clone()),
                        None => DumpRequest::MariadbGtid(gtid_list.clone()),
                    }
                } else {
                    DumpRequest::MariadbGtid(gtid_list.clone())
                };
                Ok(ResumePoint {
                    request,
                    tracker: t,
                    defs: Vec::new(),
                    defs_unwritten: false,
                    snapshot: None,
                })
            }
            (p, f) => Err(Error::definite(format!(
                "the committed position {p} is a {} position but the source is {f:?}: the \
                 pipeline was pointed at another server; reset it with `sluice offsets set \
                 --position <pos>` or use another `name`",
                p.kind()
            ))),
        };
    }
    match start {
        StartSpec::FilePos(fp) => Ok(ResumePoint {
            request: DumpRequest::FilePos(fp.clone()),
            tracker: tracker(&fp.file, fp.pos),
            defs: Vec::new(),
            defs_unwritten: false,
            snapshot: None,
        }),
        StartSpec::MysqlGtid(set) => {
            if info.flavor != Flavor::MySql || !info.gtid_mode {
                return Err(Error::definite(format!(
                    "`source.start` is a MySQL GTID set but the source ({}) {}",
                    info.version,
                    if info.flavor == Flavor::MariaDb {
                        "is MariaDB: give a MariaDB GTID list such as gtid:0-1-42"
                    } else {
                        "has gtid_mode OFF: use file:<name>:<pos>"
                    }
                )));
            }
            let mut t = tracker("", 4);
            t.mysql = Some(set.clone());
            Ok(ResumePoint {
                request: DumpRequest::MysqlGtid(set.clone()),
                tracker: t,
                defs: Vec::new(),
                defs_unwritten: false,
                snapshot: None,
            })
        }
        StartSpec::MariadbGtid(list) => {
            if info.flavor != Flavor::MariaDb {
                return Err(Error::definite(
                    "`source.start` is a MariaDB GTID list but the source is MySQL: give a MySQL \
                     GTID set (uuid:1-5) or file:<name>:<pos>",
                ));
            }
            let mut t = tracker("", 4);
            t.mariadb = Some(list.clone());
            Ok(ResumePoint {
                request: DumpRequest::MariadbGtid(list.clone()),
                tracker: t,
                defs: Vec::new(),
                defs_unwritten: false,
                snapshot: None,
            })
        }
        StartSpec::Earliest => {
            if info.flavor == Flavor::MySql && info.gtid_mode {
                let purged = server::mysql_gtid_var(conn, "gtid_purged").await?;
                let mut t = tracker("", 4);
                t.mysql = Some(purged.clone());
                return Ok(ResumePoint {
                    request: DumpRequest::MysqlGtid(purged),
                    tracker: t,
                    defs: Vec::new(),
                    defs_unwritten: false,
                    snapshot: None,
                });
            }
            let logs = server::binary_logs(conn).await?;
            let first = logs.first().ok_or_else(|| {
                Error::definite("the source has no binary logs: enable `log_bin`")
            })?;
            Ok(ResumePoint {
                request: DumpRequest::FilePos(FilePos {
                    file: first.clone(),
                    pos: 4,
                }),
                tracker: tracker(first, 4),
                defs: Vec::new(),
                defs_unwritten: false,
                snapshot: None,
            })
        }
        // A snapshot streams from "now" too (the pipeline plans it: see `seed`).
        StartSpec::Latest | StartSpec::Initial | StartSpec::SnapshotOnly => {
            let fp = server::current_file_pos(conn, info).await?;
            let mut t = tracker(&fp.file, fp.pos);
            match info.flavor {
                Flavor::MySql if info.gtid_mode => {
                    let set = server::mysql_gtid_var(conn, "gtid_executed").await?;
                    t.mysql = Some(set.clone());
                    Ok(ResumePoint {
                        request: DumpRequest::MysqlGtid(set),
                        tracker: t,
                        defs: Vec::new(),
                        defs_unwritten: false,
                        snapshot: None,
                    })
                }
                Flavor::MariaDb => {
                    let list = server::mariadb_binlog_gtid_pos(conn).await?;
                    t.mariadb = Some(list);
                    Ok(ResumePoint {
                        request: DumpRequest::FilePos(fp),
                        tracker: t,
                        defs: Vec::new(),
                        defs_unwritten: false,
                        snapshot: None,
                    })
                }
                Flavor::MySql => Ok(ResumePoint {
                    request: DumpRequest::FilePos(fp),
                    tracker: t,
                    defs: Vec::new(),
                    defs_unwritten: false,
                    snapshot: None,
                }),
            }
        }
    }
}

/// The SID block of COM_BINLOG_DUMP_GTID for `set`: one entry per (uuid, tag) with its
/// half-open intervals. When any entry carries a tag, `mysql_common` writes the whole block in
/// MySQL's tagged format (8.3+: format byte 0x01 in the top byte of the 8-byte count, a
/// varlen tag length and the tag after each UUID); otherwise in the classic format that every
/// MySQL version reads.
pub fn dump_sids(set: &GtidSet) -> Result<Vec<Sid<'static>>> {
    set.intervals()
        .map(|(uuid, tag, ivs)| {
            let mut sid = Sid::new(*uuid.as_bytes()).with_intervals(
                ivs.iter()
                    .map(|&(a, b)| mysql_common::packets::GnoInterval::new(a, b))
                    .collect(),
            );
            if let Some(tag) = tag {
                let tag = Tag::new(tag.to_string()).map_err(|e| {
                    Error::definite(format!("GTID tag `{tag}` of the resume set: {e}"))
                })?;
                sid = sid.with_tag(tag);
            }
            Ok(sid)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::position::Uuid16;
    use mysql_common::packets::ComBinlogDumpGtid;
    use mysql_common::proto::MySerialize;

    /// The SID block of a COM_BINLOG_DUMP_GTID packet, as mysql_common serializes it.
    fn sid_block(set: &str) -> Vec<u8> {
        let set: GtidSet = set.parse().unwrap();
        let cmd = ComBinlogDumpGtid::new(1).with_sids(dump_sids(&set).unwrap());
        let mut buf = Vec::new();
        cmd.serialize(&mut buf);
        // command byte, flags u16, server id u32, filename length u32 (empty), pos u64,
        // block length u32, block.
        let len = u32::from_le_bytes(buf[19..23].try_into().unwrap()) as usize;
        assert_eq!(buf.len(), 23 + len);
        buf[23..].to_vec()
    }

    const U1: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
    const U2: &str = "4e11fa47-71ca-11e1-9e33-c80aa9429562";

    fn uuid(u: &str) -> [u8; 16] {
        *u.parse::<Uuid16>().unwrap().as_bytes()
    }

    fn intervals(out: &mut Vec<u8>, ivs: &[(u64, u64)]) {
        out.extend((ivs.len() as u64).to_le_bytes());
        for (a, b) in ivs {
            out.extend(a.to_le_bytes());
            out.extend(b.to_le_bytes());
        }
    }

    #[test]
    fn untagged_sid_block_is_the_classic_encoding() {
        // Gtid_set::encode, untagged: n_sids u64, then per uuid: 16 bytes, n_intervals u64,
        // [start, end) u64 pairs.
        let mut want = 2u64.to_le_bytes().to_vec();
        want.extend(uuid(U1));
        intervals(&mut want, &[(1, 6), (7, 8)]);
        want.extend(uuid(U2));
        intervals(&mut want, &[(1, 4)]);
        assert_eq!(sid_block(&format!("{U1}:1-5:7,{U2}:1-3")), want);
        assert_eq!(sid_block(""), 0u64.to_le_bytes().to_vec());
    }

    #[test]
    fn tagged_sid_block_is_mysqls_tagged_encoding() {
        // Gtid_set::encode, tagged (MySQL 8.3+): the count word carries the format (1) in its
        // top byte and n_sids in bits 8..56 (MySQL also puts the format in the low byte; its
        // decoder masks that byte off, mysql_common leaves it 0); each entry is uuid, tag as
        // varlen length + bytes (length 0 for untagged entries), n_intervals, intervals.
        let block = sid_block(&format!("{U1}:1-5:7,{U1}:mytag:1-2,{U2}:1-3"));
        let word = u64::from_le_bytes(block[..8].try_into().unwrap());
        assert_eq!(word >> 56, 1);
        assert_eq!((word & 0x00ff_ffff_ffff_ff00) >> 8, 3);
        let mut want = Vec::new();
        want.extend(uuid(U1));
        want.push(0x00); // varlen(0): untagged
        intervals(&mut want, &[(1, 6), (7, 8)]);
        want.extend(uuid(U1));
        want.push(5 << 1); // varlen(5)
        want.extend(b"mytag");
        intervals(&mut want, &[(1, 3)]);
        want.extend(uuid(U2));
        want.push(0x00);
        intervals(&mut want, &[(1, 4)]);
        assert_eq!(&block[8..], &want[..]);
    }
}
