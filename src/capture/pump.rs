//! The stream loop, [`run`]: one replication connection, its events through the
//! [`Assembler`], their changes forwarded to the sink (after an XA replay when one is due),
//! and a running snapshot's chunks and ad-hoc snapshot requests taken between source
//! transactions.
//!
//! Invariants: every wait of the loop is cancel-safe (whichever branch wins, the others lose
//! nothing); snapshot chunks and ad-hoc requests go in only at a transaction boundary; the
//! loop ends on shutdown, a transient error (a disconnect, silence past three heartbeats) or
//! a definite one.

use std::time::Duration;

use tokio::sync::{mpsc, watch};

use crate::error::{mysql_error, Error, Result};
use crate::mysql::binlog_errors;
use crate::mysql::replication::{self, Replication};
use crate::mysql::server::{Flavor, ServerInfo};
use crate::pipeline::{Change, ChangeSender, HistoryUpdate, SchemaEvent};
use crate::schema::tracked::TableDef;
use crate::snapshot::coordinator::Snapshotter;

use super::assembler::{Assembler, SkipSet};
use super::send::send;
use super::settings::SourceSettings;
use super::start::{dump_sids, DumpRequest, ResumePoint};
use super::xa::replay_xa;

/// Opens a replication connection, starts the stream at `resume` and pumps changes into `tx` until shutdown, a
/// disconnect (transient error) or a definite error.
pub async fn run(
    settings: &SourceSettings,
    info: &ServerInfo,
    resume: ResumePoint,
    tx: ChangeSender,
    skip: SkipSet,
    mut shutdown: watch::Receiver<bool>,
) -> Result<()> {
    let hb_ns = settings
        .heartbeat
        .as_nanos()
        .min(u128::from(u32::MAX) * 1_000_000) as u64;
    let mut conn = Replication::connect(&settings.connect).await?;
    conn.set_max_event_bytes(settings.max_event_bytes);
    conn.query_drop(&format!("SET @master_heartbeat_period = {hb_ns}"))
        .await
        .map_err(|e| mysql_error("setting the heartbeat period", &e))?;
    if info.flavor == Flavor::MariaDb {
        conn.query_drop("SET @mariadb_slave_capability = 4")
            .await
            .map_err(|e| mysql_error("announcing GTID capability", &e))?;
        if let DumpRequest::MariadbGtid(list) = &resume.request {
            conn.query_drop(&format!("SET @slave_connect_state = '{list}'"))
                .await
                .map_err(|e| mysql_error("setting @slave_connect_state", &e))?;
            conn.query_drop("SET @slave_gtid_strict_mode = 1")
                .await
                .map_err(|e| mysql_error("setting @slave_gtid_strict_mode", &e))?;
        }
    }
    let req = match &resume.request {
        DumpRequest::FilePos(fp) => replication::dump_request(
            settings.server_id,
            Some(fp.file.as_bytes()),
            fp.pos,
            None,
            false,
        ),
        DumpRequest::MysqlGtid(set) => {
            replication::dump_request(settings.server_id, None, 4, Some(dump_sids(set)?), false)
        }
        DumpRequest::MariadbGtid(_) => {
            replication::dump_request(settings.server_id, None, 4, None, false)
        }
    };
    tracing::info!(request = ?resume.request, "requesting the binlog stream");
    conn.start_dump(&req).await.map_err(|e| {
        binlog_errors::dump_error(
            "requesting the binlog stream",
            &e,
            &format!("{:?}", resume.request),
        )
    })?;
    let mut stream = conn;

    let mut asm = Assembler::new(
        info.flavor,
        settings.router.clone(),
        resume.tracker.clone(),
        skip,
    );
    asm.set_defs(resume.defs.iter().cloned());
    asm.set_max_event_bytes(settings.max_event_bytes);
    let mut snap = Some(Snapshotter::new(
        resume.snapshot.clone(),
        &settings.connect,
        info,
        &settings.snapshot,
        settings.router.clone(),
        settings.adhoc.clone(),
    ));
    // Ad-hoc snapshot requests (the HTTP API), taken between source transactions.
    let inbox = settings.adhoc.as_ref().map(|i| i.receiver());
    let mut commands = match &inbox {
        Some(m) => Some(m.lock().await),
        None => None,
    };
    if resume.defs_unwritten && !resume.defs.is_empty() {
        // The definitions read at the start go into the schema history with the start position,
        // before anything is read from the binlog.
        let history = resume
            .defs
            .iter()
            .map(|d| {
                serde_json::to_vec(d)
                    .map(|b| HistoryUpdate {
                        db: d.db.clone(),
                        table: d.table.clone(),
                        shape: Some(b),
                    })
                    .map_err(|e| Error::definite(format!("encoding a table definition: {e}")))
            })
            .collect::<Result<Vec<_>>>()?;
        let first = &resume.defs[0];
        let seed = [
            Change::Schema(SchemaEvent {
                db: first.db.clone(),
                table: first.table.clone(),
                record: None,
                history,
            }),
            Change::Progress(asm.tracker().checkpoint(crate::model::clock::now_ms())),
        ];
        for mut change in seed {
            if let Some(s) = snap.as_mut() {
                s.observe(&mut change);
            }
            if send(&tx, change).await.is_err() {
                return Ok(());
            }
        }
    }
    let silence = settings.heartbeat * 3 + Duration::from_secs(5);
    let mut out = Vec::with_capacity(8);
    if snap.is_some() && snapshot_step(&mut snap, &asm, &tx, &mut shutdown).await? == Flow::Stop {
        return Ok(());
    }
    loop {
        // Cancel safety: whichever branch wins, the others' futures are dropped, and each
        // loses nothing then. `watch::Receiver::changed`, `mpsc::Receiver::recv` (the snapshot
        // pool's results behind `next_snapshot_result`, the API's commands) are cancel-safe
        // by tokio's contract: a message is only taken when the future completes.
        // `Replication::next_event` keeps every partial packet in the connection (the packet
        // reader is a state machine over its own buffers), so a half-read event, dropped here
        // or by the silence timeout, continues at the next call: no byte of the stream is lost.
        let next = tokio::select! {
            biased;
            _ = shutdown.changed() => return Ok(()),
            r = next_snapshot_result(&mut snap) => Next::Snapshot(Box::new(r)),
            c = next_command(&mut commands), if asm.at_boundary() => Next::Command(c),
            n = tokio::time::timeout(silence, stream.next_event()) => Next::Event(n),
        };
        let next = match next {
            Next::Command(None) => {
                commands = None;
                continue;
            }
            Next::Command(Some(cmd)) => {
                let Some(s) = snap.as_mut() else { continue };
                let answer = s.accept(cmd.request);
                let Ok(a) = &answer else {
                    let _ = cmd.reply.send(answer);
                    continue;
                };
                tracing::info!(id = %a.id, tables = ?a.tables, "ad-hoc snapshot accepted");
                // It commits with the next checkpoint: send one now, then answer (a dropped
                // reply tells the caller the pipeline stopped).
                let mut change =
                    Change::Progress(asm.tracker().checkpoint(crate::model::clock::now_ms()));
                s.observe(&mut change);
                if send(&tx, change).await.is_err() {
                    return Ok(());
                }
                let _ = cmd.reply.send(answer);
                if snapshot_step(&mut snap, &asm, &tx, &mut shutdown).await? == Flow::Stop {
                    return Ok(());
                }
                continue;
            }
            Next::Snapshot(r) => {
                if let Some(s) = snap.as_mut() {
                    match *r {
                        Some(Ok(outcome)) => s.on_result(outcome)?,
                        Some(Err(e)) => return Err(e.context("reading a snapshot chunk")),
                        None => return Err(Error::transient("the snapshot reader stopped")),
                    }
                }
                if snapshot_step(&mut snap, &asm, &tx, &mut shutdown).await? == Flow::Stop {
                    return Ok(());
                }
                continue;
            }
            Next::Event(n) => n,
        };
        let ev = match next {
            Err(_) => {
                return Err(Error::transient(format!(
                    "no binlog event or heartbeat for {silence:?}: the replication connection is \
                     presumed dead (at {}:{})",
                    asm.tracker().file,
                    asm.tracker().pos
                )))
            }
            Ok(Ok(None)) => {
                return Err(Error::transient(format!(
                    "the source closed the binlog stream at {}:{}",
                    asm.tracker().file,
                    asm.tracker().pos
                )))
            }
            Ok(Err(e)) => {
                let at = format!("{}:{}", asm.tracker().file, asm.tracker().pos);
                return Err(match e {
                    replication::ReadError::Conn(e) => binlog_errors::dump_error(
                        &format!("binlog stream at {at}"),
                        &e,
                        &format!("{:?}", resume.request),
                    ),
                    other => other.into_error(at),
                });
            }
            Ok(Ok(Some(ev))) => ev,
        };
        if asm.starts_payload(&ev) {
            // Inner events one at a time, their changes forwarded before the next is
            // decompressed: memory holds one inner event, not the transaction.
            let mut rd = asm.open_payload(&ev)?;
            while let Some(inner) = rd.next_event()? {
                asm.on_inner_event(&inner, &mut out)?;
                let ts = inner.header().timestamp();
                if !forward(
                    settings,
                    info,
                    &mut asm,
                    ts,
                    &mut out,
                    Outlet {
                        tx: &tx,
                        shutdown: &mut shutdown,
                        snap: &mut snap,
                    },
                )
                .await?
                {
                    return Ok(());
                }
            }
        } else {
            asm.on_event(&ev, &mut out)?;
        }
        let ts = ev.header().timestamp();
        if !forward(
            settings,
            info,
            &mut asm,
            ts,
            &mut out,
            Outlet {
                tx: &tx,
                shutdown: &mut shutdown,
                snap: &mut snap,
            },
        )
        .await?
        {
            return Ok(());
        }
        if snap.is_some() && snapshot_step(&mut snap, &asm, &tx, &mut shutdown).await? == Flow::Stop
        {
            return Ok(());
        }
    }
}

/// What the stream loop waits for.
enum Next<E> {
    Snapshot(Box<Option<Result<crate::snapshot::reader::ReadOutcome>>>),
    Command(Option<crate::snapshot::adhoc::Command>),
    Event(E),
}

/// Whether the stream goes on.
#[derive(Debug, PartialEq, Eq)]
enum Flow {
    Go,
    Stop,
}

/// The next chunk-reader result, or never when no reader runs.
async fn next_snapshot_result(
    snap: &mut Option<Snapshotter>,
) -> Option<Result<crate::snapshot::reader::ReadOutcome>> {
    match snap.as_mut() {
        Some(s) if s.reading() => s.next_result().await,
        _ => std::future::pending().await,
    }
}

/// The next ad-hoc snapshot request, or never without an API.
async fn next_command(
    commands: &mut Option<
        tokio::sync::MutexGuard<'_, mpsc::Receiver<crate::snapshot::adhoc::Command>>,
    >,
) -> Option<crate::snapshot::adhoc::Command> {
    match commands.as_mut() {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// At a transaction boundary, emits the snapshot chunks that are ready and asks for more.
/// A finished snapshot ends here (and so does the pipeline when it was to stop then).
async fn snapshot_step(
    snap: &mut Option<Snapshotter>,
    asm: &Assembler,
    tx: &ChangeSender,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<Flow> {
    let Some(s) = snap.as_mut() else {
        return Ok(Flow::Go);
    };
    if !asm.at_boundary() {
        return Ok(Flow::Go);
    }
    if let Some(changes) = s.try_emit(asm.tracker())? {
        for change in changes {
            // Cancel safety: `reserve` takes no message (the change stays here until its room
            // is reserved, then goes in synchronously), and `changed` is cancel-safe.
            let bytes = change.approx_bytes();
            tokio::select! {
                biased;
                _ = shutdown.changed() => return Ok(Flow::Stop),
                p = tx.reserve(bytes) => match p {
                    Ok(p) => p.send(change),
                    Err(_) => return Ok(Flow::Stop),
                },
            }
        }
    }
    if s.step(asm.tracker().mysql.as_ref()).await? {
        let stop = s.then_stop();
        tracing::info!(stop, "snapshot finished");
        if stop {
            return Ok(Flow::Stop);
        }
    }
    Ok(Flow::Go)
}

/// The stream loop's way to the sink: the channel, the shutdown signal a blocked send
/// watches, and the snapshotter that observes every change before the sink gets it.
struct Outlet<'a> {
    /// The source → sink channel.
    tx: &'a ChangeSender,
    /// Set when the pipeline stops.
    shutdown: &'a mut watch::Receiver<bool>,
    /// The snapshot in progress, if any.
    snap: &'a mut Option<Snapshotter>,
}

/// Sends the changes of one event to the sink (after reading a committed XA group again when
/// the event asks for it). Returns false when the pipeline is stopping.
async fn forward(
    settings: &SourceSettings,
    info: &ServerInfo,
    asm: &mut Assembler,
    ts: u32,
    out: &mut Vec<Change>,
    outlet: Outlet<'_>,
) -> Result<bool> {
    let Outlet { tx, shutdown, snap } = outlet;
    if let Some(replay) = asm.take_replay() {
        for mut change in out.drain(..) {
            if let Some(s) = snap.as_mut() {
                s.observe(&mut change);
            }
            if send(tx, change).await.is_err() {
                return Ok(false);
            }
        }
        let defs: Vec<TableDef> = asm.defs().cloned().collect();
        let sent_begin = replay_xa(settings, info, &replay, defs, tx, snap).await?;
        asm.finish_replay(sent_begin, ts, out);
    }
    if out.is_empty() {
        asm.maybe_progress(out, false);
    }
    for mut change in out.drain(..) {
        if let Some(s) = snap.as_mut() {
            s.observe(&mut change);
        }
        // Cancel safety: as in `snapshot_step`, `reserve` takes no message.
        let bytes = change.approx_bytes();
        tokio::select! {
            biased;
            _ = shutdown.changed() => return Ok(false),
            p = tx.reserve(bytes) => match p {
                Ok(p) => p.send(change),
                Err(_) => return Ok(false),
            },
        }
    }
    Ok(true)
}
