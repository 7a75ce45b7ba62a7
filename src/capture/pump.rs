//! The stream loop, [`run`]: one replication connection, its events through the
//! [`Assembler`], their changes forwarded to the sink (after an XA replay when one is due),
//! and a running snapshot's chunks and ad-hoc snapshot requests taken between source
//! transactions.
//!
//! Invariants: every wait of the loop is cancel-safe (whichever branch wins, the others lose
//! nothing); changes leave in batches ([`Outbox`]), the batch at hand sent before the loop
//! waits for anything (an event the connection has already read joins it first); snapshot
//! chunks and ad-hoc requests go in only at a transaction boundary; the loop ends on shutdown,
//! a transient error (a disconnect, silence past three heartbeats) or a definite one.

use std::time::Duration;

use futures_util::FutureExt;
use tokio::sync::{mpsc, watch};

use crate::error::{mysql_error, Error, Result};
use crate::mysql::binlog_errors;
use crate::mysql::replication::{self, Replication};
use crate::mysql::server::{Flavor, ServerInfo};
use crate::pipeline::{Change, ChangeSender, HistoryUpdate, SchemaEvent};
use crate::schema::tracked::TableDef;
use crate::snapshot::coordinator::Snapshotter;

use super::assembler::{Assembler, SkipSet};
use super::send::Outbox;
use super::settings::SourceSettings;
use super::start::{dump_sids, DumpRequest, ResumePoint};
use super::tracker::Tracker;
use super::xa::replay_xa;

/// Opens a replication connection (or takes `connected`, one opened beforehand), starts the
/// stream at `resume` and pumps changes into `tx` until shutdown, a disconnect (transient
/// error) or a definite error.
pub async fn run(
    settings: &SourceSettings,
    info: &ServerInfo,
    resume: ResumePoint,
    tx: ChangeSender,
    skip: SkipSet,
    shutdown: watch::Receiver<bool>,
    connected: Option<Replication>,
) -> Result<()> {
    let mut stream = open_stream(settings, info, &resume.request, connected).await?;
    let mut asm = Assembler::new(
        info.flavor,
        settings.router.clone(),
        resume.tracker.clone(),
        skip,
    );
    asm.set_defs(resume.defs.iter().cloned());
    asm.set_max_event_bytes(settings.max_event_bytes);
    let snap = Some(Snapshotter::new(
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
    let mut pump = Pump {
        settings,
        info,
        asm,
        snap,
        outbox: Outbox::new(tx),
        shutdown,
        out: Vec::with_capacity(8),
    };
    if resume.defs_unwritten
        && !resume.defs.is_empty()
        && pump.write_start_defs(&resume.defs).await? == Flow::Stop
    {
        return Ok(());
    }
    let silence = settings.heartbeat * 3 + Duration::from_secs(5);
    if pump.snap.is_some() && pump.snapshot_step().await? == Flow::Stop {
        return Ok(());
    }
    // Events taken since the last wait (bounds how long a stream that is never idle keeps
    // shutdown, snapshot results and commands waiting).
    let mut unwaited = 0usize;
    loop {
        if !pump.outbox.is_empty() {
            // Changes wait to be sent. The next event, if the stream already has it, joins
            // their batch without a wait: polled once, a `next_event` that has to wait for
            // the socket is dropped, which loses nothing (it keeps any partial packet in the
            // connection, see below). Else the batch goes to the sink before anything waits.
            if unwaited < MAX_UNWAITED_EVENTS {
                if let Some(n) = stream.next_event().now_or_never() {
                    unwaited += 1;
                    let handled =
                        match event_or_error(Ok(n), pump.asm.tracker(), silence, &resume.request) {
                            Ok(ev) => pump.on_event(&ev).await,
                            Err(e) => Err(e),
                        };
                    match handled {
                        Ok(Flow::Go) => continue,
                        Ok(Flow::Stop) => return Ok(()),
                        Err(e) => {
                            // What the events before the failing one gave goes to the sink
                            // first, as it did before changes travelled in batches: the whole
                            // transactions before a bad event are still committed.
                            pump.outbox.flush_or_stop(&mut pump.shutdown).await;
                            return Err(e);
                        }
                    }
                }
            }
            if !pump.outbox.flush_or_stop(&mut pump.shutdown).await {
                return Ok(());
            }
        }
        unwaited = 0;
        // Cancel safety: whichever branch wins, the others' futures are dropped, and each
        // loses nothing then. `watch::Receiver::changed`, `mpsc::Receiver::recv` (the snapshot
        // pool's results behind `next_snapshot_result`, the API's commands) are cancel-safe
        // by tokio's contract: a message is only taken when the future completes.
        // `Replication::next_event` keeps every partial packet in the connection (the packet
        // reader is a state machine over its own buffers), so a half-read event, dropped here
        // or by the silence timeout, continues at the next call: no byte of the stream is lost.
        let next = tokio::select! {
            biased;
            _ = pump.shutdown.changed() => return Ok(()),
            r = next_snapshot_result(&mut pump.snap) => Next::Snapshot(Box::new(r)),
            c = next_command(&mut commands), if pump.asm.at_boundary() => Next::Command(c),
            n = tokio::time::timeout(silence, stream.next_event()) => Next::Event(n),
        };
        let flow = match next {
            Next::Command(None) => {
                commands = None;
                Flow::Go
            }
            Next::Command(Some(cmd)) => pump.on_command(cmd).await?,
            Next::Snapshot(r) => pump.on_snapshot_result(*r).await?,
            Next::Event(n) => {
                let ev = event_or_error(n, pump.asm.tracker(), silence, &resume.request)?;
                pump.on_event(&ev).await?
            }
        };
        if flow == Flow::Stop {
            return Ok(());
        }
    }
}

/// Most events taken from the stream, while changes wait to be sent, before the loop waits
/// (and looks at shutdown, snapshot results and commands) again.
const MAX_UNWAITED_EVENTS: usize = 1024;

/// Opens the replication connection and asks for the binlog from `request` on.
async fn open_stream(
    settings: &SourceSettings,
    info: &ServerInfo,
    request: &DumpRequest,
    connected: Option<Replication>,
) -> Result<Replication> {
    let hb_ns = settings
        .heartbeat
        .as_nanos()
        .min(u128::from(u32::MAX) * 1_000_000) as u64;
    let mut conn = match connected {
        Some(c) => c,
        None => Replication::connect(&settings.connect).await?,
    };
    conn.set_max_event_bytes(settings.max_event_bytes);
    conn.query_drop(&format!("SET @master_heartbeat_period = {hb_ns}"))
        .await
        .map_err(|e| mysql_error("setting the heartbeat period", &e))?;
    if info.flavor == Flavor::MariaDb {
        conn.query_drop("SET @mariadb_slave_capability = 4")
            .await
            .map_err(|e| mysql_error("announcing GTID capability", &e))?;
        if let DumpRequest::MariadbGtid(list) = request {
            conn.query_drop(&format!("SET @slave_connect_state = '{list}'"))
                .await
                .map_err(|e| mysql_error("setting @slave_connect_state", &e))?;
            conn.query_drop("SET @slave_gtid_strict_mode = 1")
                .await
                .map_err(|e| mysql_error("setting @slave_gtid_strict_mode", &e))?;
        }
    }
    let req = match request {
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
    tracing::info!(?request, "requesting the binlog stream");
    conn.start_dump(&req).await.map_err(|e| {
        binlog_errors::dump_error("requesting the binlog stream", &e, &format!("{request:?}"))
    })?;
    Ok(conn)
}

/// The event the stream gave, or the error its absence is: silence past the timeout, the
/// stream closed by the source, or a read that failed.
fn event_or_error<E>(
    next: std::result::Result<
        std::result::Result<Option<E>, replication::ReadError>,
        tokio::time::error::Elapsed,
    >,
    tracker: &Tracker,
    silence: Duration,
    request: &DumpRequest,
) -> Result<E> {
    match next {
        Err(_) => Err(Error::transient(format!(
            "no binlog event or heartbeat for {silence:?}: the replication connection is \
             presumed dead (at {}:{})",
            tracker.file, tracker.pos
        ))),
        Ok(Ok(None)) => Err(Error::transient(format!(
            "the source closed the binlog stream at {}:{}",
            tracker.file, tracker.pos
        ))),
        Ok(Err(e)) => {
            let at = format!("{}:{}", tracker.file, tracker.pos);
            Err(match e {
                replication::ReadError::Conn(e) => binlog_errors::dump_error(
                    &format!("binlog stream at {at}"),
                    &e,
                    &format!("{request:?}"),
                ),
                other => other.into_error(at),
            })
        }
        Ok(Ok(Some(ev))) => Ok(ev),
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

/// The stream loop's state between its waits: the assembler, the snapshot in progress that
/// observes every change before the sink gets it, and the way to the sink (the channel, and
/// the shutdown signal a blocked send watches).
struct Pump<'a> {
    settings: &'a SourceSettings,
    info: &'a ServerInfo,
    asm: Assembler,
    /// The snapshot in progress, if any.
    snap: Option<Snapshotter>,
    /// The changes on their way to the sink, gathered into the channel's batches.
    outbox: Outbox,
    /// Set when the pipeline stops.
    shutdown: watch::Receiver<bool>,
    /// The changes of the event at hand, not sent yet.
    out: Vec<Change>,
}

impl Pump<'_> {
    /// The definitions read at the start go into the schema history with the start position,
    /// before anything is read from the binlog.
    async fn write_start_defs(&mut self, defs: &[TableDef]) -> Result<Flow> {
        let history = defs
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
        let first = &defs[0];
        let seed = [
            Change::Schema(SchemaEvent {
                db: first.db.clone(),
                table: first.table.clone(),
                record: None,
                history,
            }),
            Change::Progress(self.asm.tracker().checkpoint(crate::model::clock::now_ms())),
        ];
        for change in seed {
            if self
                .outbox
                .observed_send(&mut self.snap, change)
                .await
                .is_err()
            {
                return Ok(Flow::Stop);
            }
        }
        Ok(Flow::Go)
    }

    /// An ad-hoc snapshot request, at a transaction boundary: accepted (or refused) by the
    /// snapshot, answered once its checkpoint is on its way to the sink.
    async fn on_command(&mut self, cmd: crate::snapshot::adhoc::Command) -> Result<Flow> {
        let Some(s) = self.snap.as_mut() else {
            return Ok(Flow::Go);
        };
        let answer = s.accept(cmd.request);
        let Ok(a) = &answer else {
            let _ = cmd.reply.send(answer);
            return Ok(Flow::Go);
        };
        tracing::info!(id = %a.id, tables = ?a.tables, "ad-hoc snapshot accepted");
        // It commits with the next checkpoint: send one now, then answer (a dropped
        // reply tells the caller the pipeline stopped).
        let change = Change::Progress(self.asm.tracker().checkpoint(crate::model::clock::now_ms()));
        if self
            .outbox
            .observed_send(&mut self.snap, change)
            .await
            .is_err()
            || self.outbox.flush().await.is_err()
        {
            return Ok(Flow::Stop);
        }
        let _ = cmd.reply.send(answer);
        self.snapshot_step().await
    }

    /// A chunk reader's result, handed to the snapshot; then a snapshot step.
    async fn on_snapshot_result(
        &mut self,
        r: Option<Result<crate::snapshot::reader::ReadOutcome>>,
    ) -> Result<Flow> {
        if let Some(s) = self.snap.as_mut() {
            match r {
                Some(Ok(outcome)) => s.on_result(outcome)?,
                Some(Err(e)) => return Err(e.context("reading a snapshot chunk")),
                None => return Err(Error::transient("the snapshot reader stopped")),
            }
        }
        self.snapshot_step().await
    }

    /// One binlog event through the assembler, its changes forwarded; a payload's inner
    /// events one at a time, their changes forwarded before the next is decompressed (memory
    /// holds one inner event, not the transaction). Then a snapshot step.
    async fn on_event(&mut self, ev: &mysql_common::binlog::events::Event) -> Result<Flow> {
        if self.asm.starts_payload(ev) {
            let mut rd = self.asm.open_payload(ev)?;
            while let Some(inner) = rd.next_event()? {
                self.asm.on_inner_event(&inner, &mut self.out)?;
                if self.forward(inner.header().timestamp()).await? == Flow::Stop {
                    return Ok(Flow::Stop);
                }
            }
        } else {
            self.asm.on_event(ev, &mut self.out)?;
        }
        if self.forward(ev.header().timestamp()).await? == Flow::Stop {
            return Ok(Flow::Stop);
        }
        if self.snap.is_some() {
            return self.snapshot_step().await;
        }
        Ok(Flow::Go)
    }

    /// At a transaction boundary, emits the snapshot chunks that are ready and asks for more.
    /// A finished snapshot ends here (and so does the pipeline when it was to stop then).
    async fn snapshot_step(&mut self) -> Result<Flow> {
        let Some(s) = self.snap.as_mut() else {
            return Ok(Flow::Go);
        };
        if !self.asm.at_boundary() {
            return Ok(Flow::Go);
        }
        if let Some(changes) = s.try_emit(self.asm.tracker())? {
            for change in changes {
                if !self.outbox.send_or_stop(&mut self.shutdown, change).await {
                    return Ok(Flow::Stop);
                }
            }
        }
        if s.step(self.asm.tracker().mysql.as_ref()).await? {
            let stop = s.then_stop();
            tracing::info!(stop, "snapshot finished");
            if stop {
                // Everything read goes to the sink before the stream ends.
                self.outbox.flush_or_stop(&mut self.shutdown).await;
                return Ok(Flow::Stop);
            }
        }
        Ok(Flow::Go)
    }

    /// Sends the changes of one event (its header's timestamp `ts`) to the sink, after
    /// reading a committed XA group again when the event asks for it.
    async fn forward(&mut self, ts: u32) -> Result<Flow> {
        if let Some(replay) = self.asm.take_replay() {
            for change in self.out.drain(..) {
                if self
                    .outbox
                    .observed_send(&mut self.snap, change)
                    .await
                    .is_err()
                {
                    return Ok(Flow::Stop);
                }
            }
            let defs: Vec<TableDef> = self.asm.defs().cloned().collect();
            let sent_begin = replay_xa(
                self.settings,
                self.info,
                &replay,
                defs,
                &mut self.outbox,
                &mut self.snap,
            )
            .await?;
            self.asm.finish_replay(sent_begin, ts, &mut self.out);
        }
        if self.out.is_empty() {
            self.asm.maybe_progress(&mut self.out, false);
        }
        for mut change in self.out.drain(..) {
            if let Some(s) = self.snap.as_mut() {
                s.observe(&mut change);
            }
            if !self.outbox.send_or_stop(&mut self.shutdown, change).await {
                return Ok(Flow::Stop);
            }
        }
        Ok(Flow::Go)
    }
}
