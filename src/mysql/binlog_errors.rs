//! What the server's refusals of a binlog dump mean, recognised by error code and text.
//!
//! Invariant: a refusal is read by the server's error code first
//! (`ER_MASTER_FATAL_ERROR_READING_BINLOG`, 1236, for everything the dump thread refuses),
//! then by the text the server sends with it; never by searching an error's rendered message
//! for digits, which a file position or a GTID can contain too.

use crate::error::{mysql_error, Error};

/// `ER_MASTER_FATAL_ERROR_READING_BINLOG`: the dump thread refused or stopped the stream.
pub const ER_BINLOG_DUMP: u16 = 1236;

/// What a 1236 refusal says about the resume position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DumpRefusal {
    /// The binlog holding the position (or the GTIDs after it) was purged, or never existed.
    Purged,
    /// The position is *ahead* of the server: the server has fewer transactions than the
    /// offset says were read (MySQL "Slave has more GTIDs than the master has"; MariaDB "…
    /// which is not in the master's binlog" for a GTID newer than its own, or a diverged
    /// history). Typical after a failover to a server that lost the last transactions.
    AheadOfServer,
    /// The server dropped this dump because another replica connected with the same
    /// `server_id` (MariaDB `ER_SLAVE_SAME_ID`, 4052; MySQL a 1236 saying so).
    SameServerId,
    /// Another refusal (a corrupt binlog, a bad position inside an event, …).
    Other,
}

/// MariaDB's `ER_SLAVE_SAME_ID`: another replica with this `server_id` connected.
pub const ER_SAME_SERVER_ID: u16 = 4052;

/// Reads a refusal from the server's code and message; `None` when it is not a dump refusal.
pub fn dump_refusal(code: u16, message: &str) -> Option<DumpRefusal> {
    let m = message.to_ascii_lowercase();
    if code == ER_SAME_SERVER_ID
        || (code == ER_BINLOG_DUMP && m.contains("same server_uuid/server_id"))
    {
        return Some(DumpRefusal::SameServerId);
    }
    if code != ER_BINLOG_DUMP {
        return None;
    }
    let ahead = m.contains("more gtids than")
        || m.contains("has diverged")
        || (m.contains("not in the master's binlog") && m.contains("higher sequence numbers"))
        || m.contains("the slave has executed more")
        || m.contains("the replica has executed more");
    if ahead {
        return Some(DumpRefusal::AheadOfServer);
    }
    let purged = m.contains("purged")
        || m.contains("could not find first log file")
        || m.contains("not in the master's binlog")
        || m.contains("not in the source's binlog")
        || m.contains("is missing the gtid")
        || m.contains("could not find gtid state");
    Some(if purged {
        DumpRefusal::Purged
    } else {
        DumpRefusal::Other
    })
}

/// The pipeline error for a failed dump request or stream: purged and ahead-of-server
/// refusals get their own definite messages with what to do; everything else is classified
/// as usual. `ctx` says where; `resume` is the position asked for.
pub fn dump_error(ctx: &str, err: &mysql_async::Error, resume: &str) -> Error {
    let refusal = match err {
        mysql_async::Error::Server(se) => dump_refusal(se.code, &se.message),
        _ => None,
    };
    match refusal {
        Some(DumpRefusal::Purged) => Error::definite(format!(
            "{ctx}: the source no longer has the binlog at the resume position ({resume}): it \
             was purged or never existed (server error {err}). Data between the committed offset \
             and the oldest binlog is gone from the binlog; take a new snapshot of the tables \
             (`snapshot.on_purged = \"resnapshot\"`) or move the pipeline with `sluice offsets \
             set --position <pos>` (e.g. from SHOW BINARY LOGS), and raise binlog retention \
             (`binlog_expire_logs_seconds`)"
        )),
        Some(DumpRefusal::AheadOfServer) => Error::definite(format!(
            "{ctx}: the source has fewer transactions than the committed offset ({resume}) says \
             were read (server error {err}): this server is behind the one the offset was read \
             from, e.g. a failover to a replica that had not received the last transactions, or \
             a primary whose binlog end was lost. Nothing was written. Fix: point source.url at \
             a server that has every transaction up to the offset, or, accepting that the \
             changes after the server's own position will not be read again, move the \
             pipeline with `sluice offsets set --position <pos>` to a position of this server \
             (SHOW MASTER STATUS / @@gtid_binlog_pos)"
        )),
        Some(DumpRefusal::SameServerId) => Error::transient(format!(
            "{ctx}: the source closed this replication connection because another replica \
             connected with the same server_id (server error {err}). Either another sluice \
             instance of this pipeline took over (the next attempt finds its claim and stops \
             with exit 3), or another replica or pipeline uses the same `source.server_id`: \
             give each its own (retrying until then, as each connection drops the other's)"
        )),
        _ => mysql_error(ctx, err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn purged_binlogs_are_recognised_on_both_servers() {
        for m in [
            "Could not find first log file name in binary log index file",
            "Cannot replicate because the source purged required binary logs. Replicate the \
             missing transactions from elsewhere, or provision a new replica from backup.",
            "The slave is connecting using CHANGE MASTER TO MASTER_AUTO_POSITION = 1, but the \
             master has purged binary logs containing GTIDs that the slave requires.",
            "Error: connecting slave requested to start from GTID 0-1-5, which is not in the \
             master's binlog",
            "Error: The binlog on the master is missing the GTID 0-1-5 requested by the slave \
             (even though a subsequent sequence number does exist), and GTID strict mode is \
             enabled",
        ] {
            assert_eq!(dump_refusal(1236, m), Some(DumpRefusal::Purged), "{m}");
        }
    }

    #[test]
    fn a_server_behind_the_offset_gets_its_own_answer() {
        for m in [
            "Slave has more GTIDs than the master has, using the master's SERVER_UUID. This may \
             indicate that the end of the binary log was truncated",
            "Error: connecting slave requested to start from GTID 0-1-900, which is not in the \
             master's binlog. Since the master's binlog contains GTIDs with higher sequence \
             numbers, it probably means that the slave has diverged due to executing extra \
             erroneous transactions",
        ] {
            assert_eq!(
                dump_refusal(1236, m),
                Some(DumpRefusal::AheadOfServer),
                "{m}"
            );
        }
    }

    #[test]
    fn another_replica_with_the_same_server_id_is_transient() {
        use crate::error::ErrorKind;
        let mariadb = "A slave with the same server_uuid/server_id as this slave has connected \
                       to the master; the first event 'mysql-bin.000007' at 212833576";
        let mysql = "A replica with the same server_uuid/server_id as this replica has \
                     connected to the source; the first event '' at 4";
        assert_eq!(dump_refusal(4052, mariadb), Some(DumpRefusal::SameServerId));
        assert_eq!(dump_refusal(1236, mysql), Some(DumpRefusal::SameServerId));
        let e = dump_error(
            "binlog stream",
            &mysql_async::Error::Server(mysql_async::ServerError {
                code: 4052,
                message: mariadb.into(),
                state: "HY000".into(),
            }),
            "gtid:0-1-5",
        );
        assert_eq!(e.kind(), ErrorKind::Transient);
        assert!(e.to_string().contains("source.server_id"), "{e}");
    }

    #[test]
    fn only_the_code_makes_a_refusal() {
        // The digits 1236 in a message (a position, a GTID) mean nothing.
        assert_eq!(dump_refusal(1146, "table mysql-bin.001236 purged"), None);
        assert_eq!(
            dump_refusal(1236, "binlog truncated in the middle of event"),
            Some(DumpRefusal::Other)
        );
    }

    #[test]
    fn errors_are_definite_and_name_the_way_out() {
        use crate::error::ErrorKind;
        let server = |code, message: &str| {
            mysql_async::Error::Server(mysql_async::ServerError {
                code,
                message: message.into(),
                state: "HY000".into(),
            })
        };
        let e = dump_error(
            "binlog stream",
            &server(
                1236,
                "Could not find first log file name in binary log index file",
            ),
            "file:mysql-bin.000009:4",
        );
        assert_eq!(e.kind(), ErrorKind::Definite);
        assert!(e.to_string().contains("purged"), "{e}");
        assert!(e.to_string().contains("sluice offsets set"), "{e}");
        let e = dump_error(
            "binlog stream",
            &server(1236, "Slave has more GTIDs than the master has"),
            "gtid:x:1-9",
        );
        assert!(e.to_string().contains("fewer transactions"), "{e}");
        // A lost connection stays transient.
        let e = dump_error(
            "binlog stream",
            &mysql_async::Error::Io(mysql_async::IoError::Io(std::io::Error::other("reset"))),
            "gtid:x:1-9",
        );
        assert_eq!(e.kind(), ErrorKind::Transient);
    }
}
