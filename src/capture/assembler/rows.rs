//! Rows events: decoded with the TABLE_MAP cached for their table id and sent in their
//! source transaction.
//!
//! Invariant: rows go out only inside an open transaction, after its `Begin`, never for a
//! transaction being skipped or a prepared XA group, and only from complete row images.

use mysql_common::binlog::events::Event;

use crate::binlog::rows::parse_rows_event;
use crate::error::{Error, Result};
use crate::pipeline::Change;

use super::Assembler;

impl Assembler {
    pub(super) fn on_rows(
        &mut self,
        ev: &Event,
        etype: u8,
        start_pos: u64,
        out: &mut Vec<Change>,
    ) -> Result<()> {
        let post_header_len = ev
            .fde()
            .event_type_header_lengths()
            .get(usize::from(etype).saturating_sub(1))
            .copied()
            .filter(|l| *l == 6 || *l == 8)
            .unwrap_or(8);
        let hdr = parse_rows_event(etype, post_header_len, ev.data()).map_err(|e| {
            Error::definite(format!("rows event at {}: {e}", self.at(start_pos))).caused_by(e)
        })?;
        let Some(entry) = self.tables.get(&hdr.table_id) else {
            return Err(Error::definite(format!(
                "rows event for unknown table id {} at {} (no TABLE_MAP before it)",
                hdr.table_id,
                self.at(start_pos)
            )));
        };
        let Some((ctx, decoder)) = &entry.route else {
            return Ok(());
        };
        let at = super::At {
            file: &self.tracker.file,
            pos: start_pos,
        };
        let Some(txn) = self.txn.as_mut() else {
            return Err(Error::definite(format!(
                "rows event outside a transaction at {at}"
            )));
        };
        if txn.skip || txn.xa {
            return Ok(());
        }
        if let Some((image, absent)) = hdr.incomplete_image() {
            return Err(Error::definite(format!(
                "rows event of {}.{} at {at}: its {image} image leaves out {absent} of {} \
                 columns, so the transaction was written with binlog_row_image=MINIMAL or \
                 NOBLOB (a session or global override); sluice needs complete images to emit \
                 exact changes and emits nothing of this transaction. Fix: SET GLOBAL \
                 binlog_row_image='FULL' (and in the server config), make sure no application \
                 sets it per session, then restart sluice",
                ctx.schema.db, ctx.schema.table, hdr.column_count
            )));
        }
        self.rows_buf.clear();
        decoder.decode(&hdr, &mut self.rows_buf).map_err(|e| {
            Error::definite(format!(
                "decoding rows of {}.{} at {at}: {e}",
                ctx.schema.db, ctx.schema.table
            ))
            .caused_by(e)
        })?;
        if !txn.begun {
            txn.begun = true;
            out.push(Change::Begin(txn.meta.clone()));
        }
        let ts_us = txn
            .commit_us
            .unwrap_or(u64::from(ev.header().timestamp()) * 1_000_000);
        out.push(Change::Rows {
            table: ctx.clone(),
            kind: hdr.kind,
            rows: std::mem::take(&mut self.rows_buf),
            pos: start_pos,
            ts_us,
            marks: crate::model::ReadMarks::STREAM,
        });
        Ok(())
    }
}
