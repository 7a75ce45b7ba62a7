//! [`SourceSettings`]: what the source stage is given — where the server is and how to
//! connect, the replica server id, the heartbeat, the table filter and routes, how snapshots
//! read, where ad-hoc snapshot requests come from and the largest event read.
//!
//! Plain data: the stream loop and the XA replay read the same settings, and nothing in them
//! changes while the stage runs.

use std::sync::Arc;
use std::time::Duration;

use crate::config::route::Router;
use crate::mysql::server;

/// Settings of the source stage.
#[derive(Clone)]
pub struct SourceSettings {
    /// Where the server is and how to connect (TLS, timeout).
    pub connect: server::ConnectOptions,
    /// The replica server id sluice registers with.
    pub server_id: u32,
    /// Heartbeat period asked of the server; silence for 3 periods is a dead connection.
    pub heartbeat: Duration,
    /// Table filter and routes.
    pub router: Arc<Router>,
    /// How snapshots read.
    pub snapshot: crate::config::SnapshotConfig,
    /// Where ad-hoc snapshot requests come from (the HTTP API), if anywhere.
    pub adhoc: Option<crate::snapshot::adhoc::Inbox>,
    /// `source.max_event_bytes`: the largest event read, decompressed statement or inner event
    /// of a compressed transaction.
    pub max_event_bytes: u64,
}
