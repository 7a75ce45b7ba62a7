//! Whether the binlog between two positions of one file may hold DDL, read back with
//! `SHOW BINLOG EVENTS`: a new pipeline's start reads the table definitions between two
//! positions and keeps them only when nothing in between could have changed a table.

use mysql_async::prelude::*;
use mysql_async::{Conn, Row};

use crate::binlog::events::{classify_query, QueryKind};
use crate::error::{mysql_error, Result};
use crate::mysql::query::Timed;
use crate::position::FilePos;

/// At most this many events are read back between the two positions, in pages; a busier
/// window is inconclusive.
const MAX_EVENTS: usize = 50_000;

/// `Ok(Ok(()))` when the events of `from.file` between `from.pos` and `to_pos` hold no DDL;
/// `Ok(Err(reason))` when they may, or when the server could not list them yet.
///
/// The events are listed in pages that double from [`FIRST_PAGE`] to [`LAST_PAGE`] events, each
/// from where the previous one ended, and the listing stops at `to_pos`: the server reads every
/// event of a page, and an event after `to_pos` may still be being written (MySQL writes a
/// large one in parts). When the server meets such an event it refuses the whole listing
/// (ERROR 1220, "binlog truncated in the middle of event"); the page is then asked for again
/// with half as many events, down to one, which starts before `to_pos` and is whole. Only
/// [`MAX_REFUSALS`] refusals make the check inconclusive (the caller reads the definitions
/// again); a refusal never stops the pipeline.
pub async fn ddl_between(
    conn: &mut Conn,
    from: &FilePos,
    to_pos: u64,
) -> Result<std::result::Result<(), String>> {
    // The page starts at the event at `page_from`, or after it (`skip` 1): MariaDB 11 logs
    // the events inside a transaction with `End_log_pos` 0, so the next page starts at the
    // last event seen and skips it.
    let mut page_from = from.pos;
    let mut skip = 0;
    let mut page_size = FIRST_PAGE;
    let mut listed = 0;
    let mut refusals = 0;
    loop {
        let sql = format!(
            "SHOW BINLOG EVENTS IN '{}' FROM {page_from} LIMIT {skip}, {page_size}",
            from.file.replace('\'', "''"),
        );
        let what = format!("reading the binlog events between {from} and {to_pos}");
        let rows: Vec<Row> = match conn.query(sql).timed(what.clone()).await? {
            Ok(rows) => rows,
            Err(mysql_async::Error::Server(se)) if se.code == ER_ERROR_WHEN_EXECUTING_COMMAND => {
                refusals += 1;
                if refusals > MAX_REFUSALS {
                    return Ok(Err(format!(
                        "the server refused to list the binlog events after {}:{page_from} \
                         {MAX_REFUSALS} times (an event there may still be being written): {}",
                        from.file, se.message
                    )));
                }
                // The unreadable event is within this page: a smaller page from the same
                // position reaches fewer events past `to_pos`; a page of one event starts
                // before `to_pos`, where every event is whole, so it is refused only while
                // the file is really unreadable there: wait a moment before asking again.
                if page_size > 1 {
                    page_size /= 2;
                } else {
                    tokio::time::sleep(REFUSED_WAIT).await;
                }
                continue;
            }
            Err(e) => {
                return Err(mysql_error(
                    format!(
                        "{what} (SHOW BINLOG EVENTS needs REPLICATION SLAVE on MySQL, \
                         BINLOG MONITOR on MariaDB)"
                    ),
                    &e,
                ))
            }
        };
        let events = rows.into_iter().map(|r| ListedEvent {
            pos: r.get("Pos").unwrap_or(u64::MAX),
            end_pos: r.get("End_log_pos").unwrap_or(0),
            etype: r.get("Event_type").unwrap_or_default(),
            info: r.get("Info").unwrap_or_default(),
        });
        match scan_page(events, to_pos, page_size) {
            Page::Clean => return Ok(Ok(())),
            Page::MayHoldDdl(reason) => return Ok(Err(reason)),
            Page::Full { events, last_pos } => {
                listed += events;
                if listed >= MAX_EVENTS {
                    return Ok(Err(format!("more than {MAX_EVENTS} events in between")));
                }
                if last_pos < page_from || (last_pos == page_from && skip == 1) {
                    return Ok(Err(format!(
                        "the listing of {} did not move past position {page_from}",
                        from.file
                    )));
                }
                page_from = last_pos;
                skip = 1;
                page_size = (page_size * 2).min(LAST_PAGE);
            }
        }
    }
}

/// MySQL's and MariaDB's ER_ERROR_WHEN_EXECUTING_COMMAND: `SHOW BINLOG EVENTS` met an event it
/// could not read.
const ER_ERROR_WHEN_EXECUTING_COMMAND: u16 = 1220;

/// Refusals of the listing (ERROR 1220) before the check gives up as inconclusive.
const MAX_REFUSALS: u32 = 20;

/// The wait before a refused one-event page is asked for again.
const REFUSED_WAIT: std::time::Duration = std::time::Duration::from_millis(20);

/// The first page of the listing between the two positions, in events (most starts find a few
/// events or none).
const FIRST_PAGE: usize = 4;

/// The largest page of the listing, in events.
const LAST_PAGE: usize = 4_096;

/// One row of `SHOW BINLOG EVENTS`.
struct ListedEvent {
    pos: u64,
    end_pos: u64,
    etype: String,
    info: String,
}

/// What one page of the listing showed.
#[derive(Debug, PartialEq)]
enum Page {
    /// Every event before `to_pos` was seen, none of them DDL.
    Clean,
    /// An event before `to_pos` may be DDL (or the listing cannot be trusted).
    MayHoldDdl(String),
    /// The page was full and ended before `to_pos`: the next page starts after the event at
    /// `last_pos`.
    Full { events: usize, last_pos: u64 },
}

/// Looks at one page of events listed up to `to_pos` (exclusive): a QUERY event other than a
/// transaction's own statements may be DDL. `page_size` is the page's row limit: a page with
/// fewer rows reached the end of what was written.
fn scan_page(events: impl Iterator<Item = ListedEvent>, to_pos: u64, page_size: usize) -> Page {
    let mut n = 0;
    let mut last_pos = 0;
    for ev in events {
        n += 1;
        if ev.pos >= to_pos {
            return Page::Clean;
        }
        if ev.etype.starts_with("Query") && classify_query(&ev.info) == QueryKind::Other {
            let text: String = ev.info.chars().take(200).collect();
            return Page::MayHoldDdl(format!("a statement ran in between: {text}"));
        }
        // 0 on MariaDB 11 inside a transaction: unknown, and the next event is looked at.
        if ev.end_pos >= to_pos {
            return Page::Clean;
        }
        last_pos = ev.pos;
    }
    if n >= page_size {
        Page::Full {
            events: n,
            last_pos,
        }
    } else {
        Page::Clean
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(pos: u64, etype: &str, info: &str) -> ListedEvent {
        ListedEvent {
            pos,
            end_pos: pos + 10,
            etype: etype.to_string(),
            info: info.to_string(),
        }
    }

    #[test]
    fn transactions_between_the_positions_are_not_ddl() {
        let events = vec![
            ev(100, "Gtid", "BEGIN GTID 0-1-7"),
            ev(140, "Table_map", "table_id: 40 (db.t)"),
            ev(190, "Write_rows_v1", "table_id: 40 flags: STMT_END_F"),
            ev(240, "Xid", "COMMIT /* xid=12 */"),
            ev(270, "Query", "BEGIN"),
            ev(330, "Query", "COMMIT"),
            ev(400, "Query", "use `db`; ALTER TABLE t ADD c INT"),
        ];
        assert_eq!(scan_page(events.into_iter(), 400, 100), Page::Clean);
    }

    #[test]
    fn a_ddl_between_the_positions_is_found() {
        let events = vec![
            ev(100, "Gtid", "SET @@SESSION.GTID_NEXT= 'x:1'"),
            ev(
                170,
                "Query",
                "use `db`; ALTER TABLE t ADD c INT /* xid=3 */",
            ),
            ev(300, "Xid", "COMMIT"),
        ];
        let Page::MayHoldDdl(e) = scan_page(events.into_iter(), 400, 100) else {
            panic!("the ALTER was not found");
        };
        assert!(e.contains("ALTER TABLE t ADD c INT"), "{e}");
        let compressed = vec![ev(120, "Query_compressed", "use `db`; DROP TABLE t")];
        assert!(matches!(
            scan_page(compressed.into_iter(), 400, 100),
            Page::MayHoldDdl(_)
        ));
    }

    #[test]
    fn a_full_page_short_of_the_end_goes_on_where_its_last_event_ended() {
        let events = (0..10).map(|i| ev(100 + i * 10, "Write_rows", "table_id: 1"));
        assert_eq!(
            scan_page(events, 1_000, 10),
            Page::Full {
                events: 10,
                last_pos: 190
            }
        );
        let events = (0..10).map(|i| ev(100 + i * 10, "Write_rows", "table_id: 1"));
        assert_eq!(scan_page(events, 1_000, 11), Page::Clean);
        assert_eq!(scan_page(std::iter::empty(), 1_000, 11), Page::Clean);
    }

    #[test]
    fn an_unknown_end_looks_at_the_next_event() {
        // MariaDB 11 inside a transaction: `End_log_pos` 0.
        let mut events = vec![
            ev(100, "Annotate_rows", "INSERT INTO t VALUES (1)"),
            ev(150, "Table_map", "table_id: 1 (db.t)"),
        ];
        events.iter_mut().for_each(|e| e.end_pos = 0);
        assert_eq!(
            scan_page(events.into_iter(), 400, 2),
            Page::Full {
                events: 2,
                last_pos: 150
            }
        );
    }

    #[test]
    fn the_page_stops_at_the_event_that_ends_at_the_end_position() {
        // The last event before `to_pos` ends there: what follows is not looked at, even a
        // statement that would be DDL and a full page.
        let events = vec![
            ev(100, "Write_rows", "table_id: 1"),
            ev(110, "Xid", "COMMIT"),
            ev(120, "Query", "use `db`; DROP TABLE t"),
        ];
        assert_eq!(scan_page(events.into_iter(), 120, 3), Page::Clean);
    }
}
