//! XA replay: the prepared part of a committed XA transaction read again, over a second
//! replication connection from the group's recorded start up to its XA_PREPARE, and its
//! rows sent to the sink.
//!
//! Invariants: the replay connection registers with its own server id
//! ([`replay_server_id`]), never the pipeline's (the server would drop the main stream); the
//! group read must end in the XA_PREPARE of the same xid (the assembler checks), else a
//! definite error and nothing of it is written; rows stream through, so memory stays bounded.

use std::time::Duration;

use crate::error::{mysql_error, Error, Result};
use crate::mysql::replication::{self, Replication};
use crate::mysql::server::{Flavor, ServerInfo};
use crate::pipeline::Change;
use crate::schema::tracked::TableDef;
use crate::snapshot::coordinator::Snapshotter;

use super::assembler::{Assembler, XaReplay};
use super::send::Outbox;
use super::settings::SourceSettings;

pub use crate::config::replay_server_id;

/// Reads a committed XA transaction's prepared group again, from its start up to its
/// XA_PREPARE, over a second connection, and sends its rows. Returns whether a `Begin` was sent
/// (the group touched included tables). Memory stays bounded: rows stream through like any
/// others.
pub(super) async fn replay_xa(
    settings: &SourceSettings,
    info: &ServerInfo,
    r: &XaReplay,
    defs: Vec<TableDef>,
    outbox: &mut Outbox,
    snap: &mut Option<Snapshotter>,
) -> Result<bool> {
    tracing::info!(xid = %r.xid, from = %r.from, "XA COMMIT: reading the prepared transaction again");
    let mut stream = Replication::connect(&settings.connect).await?;
    stream.set_max_event_bytes(settings.max_event_bytes);
    if info.flavor == Flavor::MariaDb {
        stream
            .query_drop("SET @mariadb_slave_capability = 4")
            .await
            .map_err(|e| mysql_error("announcing GTID capability", &e))?;
    }
    let req = replication::dump_request(
        replay_server_id(settings.server_id),
        Some(r.from.file.as_bytes()),
        r.from.pos,
        None,
        true,
    );
    stream.start_dump(&req).await.map_err(|e| {
        mysql_error(
            format!("reading prepared XA transaction {} at {}", r.xid, r.from),
            &e,
        )
    })?;
    let mut asm = Assembler::for_replay(info.flavor, settings.router.clone(), &r.from, &r.xid);
    asm.set_defs(defs);
    asm.set_max_event_bytes(settings.max_event_bytes);
    let mut out = Vec::new();
    let mut sent_begin = false;
    while let Some(ev) = tokio::time::timeout(Duration::from_secs(60), stream.next_event())
        .await
        .map_err(|_| {
            Error::transient(format!(
                "reading prepared XA transaction {} timed out",
                r.xid
            ))
        })?
        .map_err(|e| {
            e.into_error(format_args!(
                "{}:{} (prepared XA transaction {})",
                asm.tracker().file,
                asm.tracker().pos,
                r.xid
            ))
        })?
    {
        asm.on_event(&ev, &mut out)?;
        for change in out.drain(..) {
            sent_begin |= matches!(change, Change::Begin(_));
            if outbox.observed_send(snap, change).await.is_err() {
                return Err(Error::transient("the sink stopped during an XA replay"));
            }
        }
        if asm.replay_done() {
            return Ok(sent_begin);
        }
    }
    Err(Error::definite(format!(
        "prepared XA transaction {} at {} ended without its XA_PREPARE event",
        r.xid, r.from
    )))
}
