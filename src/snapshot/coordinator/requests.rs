//! Ad-hoc snapshot requests and signals ([`crate::snapshot::adhoc`],
//! [`crate::snapshot::signal`]): [`Snapshotter::accept`] checks a request (from the API or an
//! `execute-snapshot` signal) and adds its tables to the progress; a `stop-snapshot` signal
//! ends the ad-hoc entries it names where they got; a transaction's signals are acted on at
//! its commit.
//!
//! Invariant: a request is refused before it changes the progress (every table is checked
//! first), and it changes the progress only at a transaction boundary, so the next checkpoint
//! commits it exactly once; a signal's, with the signal's own transaction.

use super::{Plan, Snapshotter};
use crate::mysql::server::Flavor;
use crate::snapshot::adhoc::{parse_table_name, Accepted, AdhocRequest, Rejected};
use crate::snapshot::filter::{filter_functions, RowFilter};
use crate::snapshot::progress::TableProgress;
use crate::snapshot::signal::Signal;

impl Snapshotter {
    /// Acts on the signals of the transaction that commits now, so what they ask commits with
    /// it: exactly once, as the transaction itself.
    pub(super) fn take_signals(&mut self) {
        for sig in std::mem::take(&mut self.signalled) {
            match sig {
                Signal::ExecuteSnapshot { id, requests } => {
                    for req in requests {
                        match self.accept(req) {
                            Ok(a) => {
                                tracing::info!(signal = %id, id = %a.id, tables = ?a.tables, "snapshot signal accepted")
                            }
                            Err(e) => {
                                tracing::warn!(signal = %id, reason = %e, "snapshot signal refused")
                            }
                        }
                    }
                }
                Signal::StopSnapshot { id, tables } => self.stop(&id, &tables),
                Signal::Ignored { id, kind } => {
                    tracing::info!(signal = %id, %kind, "signal type not performed by sluice; ignored")
                }
            }
        }
    }

    /// Stops the ad-hoc snapshots of `tables` (`db.table`; all when empty): their entries end
    /// where they got (marked done), their chunks in flight are dropped.
    fn stop(&mut self, id: &str, tables: &[String]) {
        let names: Vec<(String, String)> = tables
            .iter()
            .filter_map(|t| parse_table_name(t).ok())
            .collect();
        let mut stopped = Vec::new();
        for (i, t) in self.progress.tables.iter_mut().enumerate() {
            let named = names.is_empty() || names.iter().any(|(d, n)| *d == t.db && *n == t.table);
            if !t.done && t.request.is_some() && named {
                t.done = true;
                self.plans[i] = Plan::new(t);
                stopped.push(format!("{}.{}", t.db, t.table));
            }
        }
        tracing::info!(signal = %id, ?stopped, "ad-hoc snapshots stopped");
        self.update_shared();
    }

    /// Adds an ad-hoc request's tables to the snapshot (at a transaction boundary: the next
    /// checkpoint commits it).
    pub fn accept(&mut self, req: AdhocRequest) -> std::result::Result<Accepted, Rejected> {
        if self.info.flavor == Flavor::MySql && !self.info.gtid_mode {
            return Err(Rejected::Invalid(
                "snapshots on MySQL need gtid_mode=ON (the read-only watermarks are GTID sets)"
                    .into(),
            ));
        }
        if req.tables.is_empty() {
            return Err(Rejected::Invalid(
                "`tables` is empty: name at least one table as db.table".into(),
            ));
        }
        if let Some(f) = &req.filter {
            if let Err(e) = RowFilter::parse(f) {
                return Err(Rejected::Invalid(format!(
                    "`where` {f:?} is refused: {e}; a filter is one condition over the                      table's own columns (literals, operators, IN (literals), BETWEEN, IS NULL,                      LIKE and the functions {})",
                    filter_functions()
                )));
            }
        }
        let mut names = Vec::new();
        for t in &req.tables {
            let (db, table) = parse_table_name(t).map_err(Rejected::Invalid)?;
            let routed = self.router.table_included(&db, &table)
                && matches!(self.router.route(&db, &table), Ok(Some(_)));
            if !routed {
                return Err(Rejected::Invalid(format!(
                    "{db}.{table} is not captured by this pipeline (it must match \
                     `source.include`, no `source.exclude` and a `[[route]]`)"
                )));
            }
            if !names.contains(&(db.clone(), table.clone())) {
                names.push((db, table));
            }
        }
        let id = match req.id {
            Some(id) if !id.trim().is_empty() => id,
            _ => {
                self.requests_made += 1;
                format!(
                    "snapshot-{}-{}",
                    crate::model::clock::now_ms(),
                    self.requests_made
                )
            }
        };
        if self
            .progress
            .tables
            .iter()
            .any(|t| !t.done && t.request.as_deref() == Some(id.as_str()))
        {
            return Err(Rejected::Invalid(format!(
                "a snapshot request with id {id:?} is still running"
            )));
        }
        if self.progress.done() && self.pending.is_empty() {
            // Nothing runs: the finished entries make way.
            self.progress.tables.clear();
            self.progress.finished_tables = 0;
            self.progress.finished_rows = 0;
            self.progress.finished_requests.clear();
            self.plans.clear();
            self.progress.started_ms = crate::model::clock::now_ms();
        }
        for (db, table) in &names {
            let mut t = TableProgress::new(db, table, 0);
            t.request = Some(id.clone());
            t.filter = req.filter.clone();
            self.plans.push(Plan::new(&t));
            self.progress.tables.push(t);
        }
        if !self.running {
            tracing::info!(%id, "snapshot running");
        }
        self.running = true;
        self.update_shared();
        Ok(Accepted {
            id,
            tables: names.iter().map(|(d, t)| format!("{d}.{t}")).collect(),
        })
    }
}
