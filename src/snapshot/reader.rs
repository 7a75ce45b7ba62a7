//! A chunk reader: its own connection to the source, reading one key range of a table inside a
//! consistent snapshot and placing that snapshot in the binlog with read-only watermarks.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use mysql_async::prelude::*;
use mysql_async::{Conn, Row};
use tokio::sync::mpsc;

use super::chunk::{chunk_query, row_limit, split_query, time_limited, ChunkCut, KeyColumn, Range};
use super::filter::RowFilter;
use super::progress::KeyValue;
use super::values::{decode_row, select_list, SESSION_SETUP};
use super::window::Watermark;
use crate::config::SnapshotConfig;
use crate::error::{mysql_error, Error, Result};
use crate::mysql::query::Timed;
use crate::mysql::server::{self, ConnectOptions, Flavor, ServerInfo};
use crate::position::FilePos;
use crate::schema::information_schema::load_table_schema;
use crate::schema::{ServerFlavor, TableSchema};
use crate::value::Value;

/// The purpose of a snapshot transaction's `COMMIT`, for a timeout's message.
const END_SNAPSHOT: &str = "ending a snapshot transaction (COMMIT)";

/// MySQL error: the table does not exist.
const ER_NO_SUCH_TABLE: u16 = 1146;

/// What a request reads.
#[derive(Debug, Clone)]
pub enum Read {
    /// The rows after `after` (from the start when `None`) up to and including `upto`; when
    /// `upto` is `None`, the next `chunk_size` rows.
    Chunk {
        /// Key of the last row before the chunk.
        after: Option<Vec<KeyValue>>,
        /// Key of the chunk's last row (as planned).
        upto: Option<Vec<KeyValue>>,
    },
    /// Up to `count` split points after `after`: the keys that end the next chunks.
    Split {
        /// Key of the last row before the first chunk to plan.
        after: Option<Vec<KeyValue>>,
        /// How many chunks to plan.
        count: usize,
        /// Also estimate the table's rows (the first split of an ad-hoc request).
        estimate: bool,
    },
    /// The whole table in one pass, in batches of `chunk_size` rows (it has no usable key).
    Scan,
}

/// A request to a chunk reader.
#[derive(Debug, Clone)]
pub struct ReadRequest {
    /// Sequence number, returned with the result (a result of a cancelled request is dropped).
    pub seq: u64,
    /// Database.
    pub db: String,
    /// Table.
    pub table: String,
    /// What to read.
    pub what: Read,
    /// Only rows matching this SQL condition (an ad-hoc request's filter).
    pub filter: Option<String>,
    /// Forget the cached shape of the table first (it changed).
    pub fresh: bool,
}

/// One chunk as read.
#[derive(Debug)]
pub struct ChunkRead {
    /// The request's sequence number.
    pub seq: u64,
    /// The table's shape the rows were read with.
    pub schema: Arc<TableSchema>,
    /// Key columns (names); empty for a one-pass scan.
    pub key_names: Vec<String>,
    /// Indexes of the key columns in the rows.
    pub key_idx: Vec<usize>,
    /// The rows, in key order, one value per column of `schema`.
    pub rows: Vec<Vec<Value>>,
    /// Key of the last row read (`None` when no row was read, and in a scan).
    pub last_key: Option<Vec<KeyValue>>,
    /// Where the chunk's snapshot sits in the binlog.
    pub watermark: Watermark,
    /// The read stopped at its row limit: rows of the planned range may be left after
    /// `last_key`.
    pub full: bool,
    /// The table is read to its end (an open-ended chunk that was not full, or a scan's last
    /// batch).
    pub complete: bool,
}

/// What a request produced.
#[derive(Debug)]
pub enum ReadOutcome {
    /// A chunk (or a batch of a scan).
    Chunk(ChunkRead),
    /// Split points.
    Split {
        /// The request's sequence number.
        seq: u64,
        /// The key's column names.
        key_names: Vec<String>,
        /// Keys ending the next chunks, ascending.
        bounds: Vec<Vec<KeyValue>>,
        /// Fewer than asked were found: after the last bound only a chunk's worth is left.
        end: bool,
        /// The server's row estimate, when asked.
        estimate: Option<u64>,
    },
    /// The table has no usable key: it can only be read in one pass.
    NoKey {
        /// The request's sequence number.
        seq: u64,
    },
    /// The table cannot be read (gone, or the filter is refused): why.
    Skip {
        /// The request's sequence number.
        seq: u64,
        /// Why.
        reason: String,
    },
}

/// A failed read: server errors keep their code (a missing table or a refused filter ends
/// the table's snapshot; other errors end the attempt).
enum Failure {
    Server(String, mysql_async::Error),
    Other(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Other(e)
    }
}

impl Failure {
    fn code(&self) -> Option<u16> {
        match self {
            Failure::Server(_, mysql_async::Error::Server(e)) => Some(e.code),
            _ => None,
        }
    }

    fn into_error(self) -> Error {
        match self {
            Failure::Server(context, e) => mysql_error(context, &e),
            Failure::Other(e) => e,
        }
    }
}

/// Server errors that say nothing about the statement (the server is busy, going away or
/// killed the query): the attempt is retried rather than the filter blamed.
const TRANSIENT_CODES: &[u16] = &[1040, 1053, 1205, 1213, 1317, 1927];

/// The server's "statement time limit exceeded": MySQL's ER_QUERY_TIMEOUT (also the
/// `max_execution_time` an operator may set) and MariaDB's ER_STATEMENT_TIMEOUT.
const STATEMENT_TIMEOUT_CODES: &[u16] = &[3024, 1969];

/// The cached facts of one table.
struct TableInfo {
    schema: Arc<TableSchema>,
    key: Vec<KeyColumn>,
    key_idx: Vec<usize>,
    select: String,
}

/// A chunk reader on its own connection.
pub struct Reader {
    conn: Conn,
    flavor: Flavor,
    chunk_size: usize,
    /// `snapshot.chunk_max_bytes`.
    chunk_max_bytes: usize,
    /// `snapshot.statement_timeout_ms`.
    statement_timeout: Option<Duration>,
    tables: HashMap<(String, String), Arc<TableInfo>>,
    /// Average row bytes of each table's last chunk, for the next chunk's `LIMIT`.
    row_bytes: HashMap<(String, String), usize>,
}

impl Reader {
    /// Connects and prepares the session. Snapshots on MySQL need `gtid_mode = ON`: without
    /// GTIDs no read-only watermark can tell which transactions a snapshot saw.
    pub async fn connect(
        options: &ConnectOptions,
        info: &ServerInfo,
        cfg: &SnapshotConfig,
    ) -> Result<Self> {
        if info.flavor == Flavor::MySql && !info.gtid_mode {
            return Err(Error::definite(
                "snapshots on MySQL need gtid_mode=ON: the watermarks that place each chunk in \
                 the binlog without writing to the source are GTID sets. Enable GTIDs (SET \
                 PERSIST gtid_mode, stepping through OFF_PERMISSIVE and ON_PERMISSIVE with \
                 enforce_gtid_consistency=ON), or start without a snapshot (source.start = \
                 \"latest\" / \"earliest\")",
            ));
        }
        let mut conn = crate::mysql::session::connect(options).await?;
        for sql in SESSION_SETUP
            .iter()
            .copied()
            .chain(["SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"])
        {
            conn.query_drop(sql)
                .timed(format!("preparing the snapshot session ({sql})"))
                .await?
                .map_err(|e| mysql_error(format!("preparing the snapshot session ({sql})"), &e))?;
        }
        Ok(Reader {
            conn,
            flavor: info.flavor,
            chunk_size: cfg.chunk_size,
            chunk_max_bytes: usize::try_from(cfg.chunk_max_bytes).unwrap_or(usize::MAX),
            statement_timeout: cfg.statement_timeout(),
            tables: HashMap::new(),
            row_bytes: HashMap::new(),
        })
    }

    /// The cached facts of `db.table` (read when missing or `fresh`); `Err(reason)` when the
    /// table is gone.
    async fn info(
        &mut self,
        db: &str,
        table: &str,
        fresh: bool,
    ) -> Result<std::result::Result<Arc<TableInfo>, String>> {
        let name = (db.to_string(), table.to_string());
        if fresh {
            self.tables.remove(&name);
        }
        if let Some(i) = self.tables.get(&name) {
            return Ok(Ok(i.clone()));
        }
        Ok(match self.table_info(db, table).await? {
            Ok(i) => {
                let i = Arc::new(i);
                self.tables.insert(name, i.clone());
                Ok(i)
            }
            Err(reason) => Err(reason),
        })
    }

    /// Carries out one request; a scan sends its batches to `out` as it goes.
    pub async fn serve(
        &mut self,
        req: &ReadRequest,
        out: &mpsc::Sender<Result<ReadOutcome>>,
    ) -> Result<Option<ReadOutcome>> {
        if let Some(Err(e)) = req.filter.as_deref().map(RowFilter::parse) {
            // Refused when requested; a filter stored by an earlier version may still be.
            return Ok(Some(ReadOutcome::Skip {
                seq: req.seq,
                reason: format!(
                    "the filter {:?} is refused: {e}",
                    req.filter.as_deref().unwrap_or("")
                ),
            }));
        }
        let info = match self.info(&req.db, &req.table, req.fresh).await? {
            Ok(i) => i,
            Err(reason) => {
                return Ok(Some(ReadOutcome::Skip {
                    seq: req.seq,
                    reason,
                }))
            }
        };
        let result = match &req.what {
            Read::Split {
                after,
                count,
                estimate,
            } => {
                let estimate = if *estimate {
                    Some(estimate_rows(&mut self.conn, &req.db, &req.table).await?)
                } else {
                    None
                };
                self.split(req, &info, after.as_deref(), *count, estimate)
                    .await
            }
            Read::Chunk { after, upto } => {
                self.chunk(req, &info, after.as_deref(), upto.as_deref())
                    .await
            }
            Read::Scan => self.scan(req, &info, out).await.map(|()| None),
        };
        match result {
            Ok(o) => Ok(o),
            Err(f)
                if f.code()
                    .is_some_and(|c| STATEMENT_TIMEOUT_CODES.contains(&c)) =>
            {
                let why = format!(
                    "a snapshot query of {}.{} ran longer than its time limit \
                     (snapshot.statement_timeout_ms = {} ms, or the server's own \
                     max_execution_time / max_statement_time)",
                    req.db,
                    req.table,
                    self.statement_timeout.map_or(0, |d| d.as_millis())
                );
                match &req.filter {
                    Some(filter) => Ok(Some(ReadOutcome::Skip {
                        seq: req.seq,
                        reason: format!("{why} with the filter {filter:?}"),
                    })),
                    None => Err(Error::definite(format!(
                        "{why}: {}; fix: raise snapshot.statement_timeout_ms (0: no limit) or \
                         lower snapshot.chunk_size",
                        f.into_error()
                    ))),
                }
            }
            Err(f) if f.code() == Some(ER_NO_SUCH_TABLE) => {
                self.tables.remove(&(req.db.clone(), req.table.clone()));
                Ok(Some(ReadOutcome::Skip {
                    seq: req.seq,
                    reason: "the table no longer exists".into(),
                }))
            }
            Err(f)
                if req.filter.is_some()
                    && f.code().is_some_and(|c| !TRANSIENT_CODES.contains(&c)) =>
            {
                Ok(Some(ReadOutcome::Skip {
                    seq: req.seq,
                    reason: format!(
                        "the server refused the filter {:?}: {}",
                        req.filter.as_deref().unwrap_or(""),
                        f.into_error()
                    ),
                }))
            }
            Err(f) => Err(f.into_error()),
        }
    }

    /// Up to `count` keys ending the next chunks after `after`.
    async fn split(
        &mut self,
        req: &ReadRequest,
        info: &TableInfo,
        mut after: Option<&[KeyValue]>,
        count: usize,
        estimate: Option<u64>,
    ) -> std::result::Result<Option<ReadOutcome>, Failure> {
        if info.key.is_empty() {
            return Ok(Some(ReadOutcome::NoKey { seq: req.seq }));
        }
        let mut bounds: Vec<Vec<KeyValue>> = Vec::with_capacity(count);
        let mut end = false;
        while bounds.len() < count {
            let (sql, params) = split_query(&req.db, &req.table, &info.key, after, self.chunk_size)
                .map_err(|e| snapshot_error(req, e))?;
            let sql = time_limited(&sql, self.flavor, self.statement_timeout);
            let row: Option<Row> = self
                .conn
                .exec_first(&sql, params)
                .timed(format!("planning snapshot chunks ({sql})"))
                .await?
                .map_err(|e| Failure::Server(format!("planning snapshot chunks ({sql})"), e))?;
            let Some(row) = row else {
                end = true;
                break;
            };
            let key = row_key(&row, 0, info.key.len()).ok_or_else(|| {
                snapshot_error(req, "a key column is NULL at a chunk boundary".into())
            })?;
            bounds.push(key);
            after = bounds.last().map(Vec::as_slice);
        }
        Ok(Some(ReadOutcome::Split {
            seq: req.seq,
            key_names: info.key.iter().map(|k| k.name.clone()).collect(),
            bounds,
            end,
            estimate,
        }))
    }

    /// One chunk in its own consistent snapshot.
    async fn chunk(
        &mut self,
        req: &ReadRequest,
        info: &TableInfo,
        after: Option<&[KeyValue]>,
        upto: Option<&[KeyValue]>,
    ) -> std::result::Result<Option<ReadOutcome>, Failure> {
        // A planned range holds about a chunk; rows inserted into it since it was planned may
        // make it larger, up to twice a chunk per read (the rest is read as another chunk).
        // Wide rows ask for fewer: about what `chunk_max_bytes` holds.
        let limit = if upto.is_some() {
            self.chunk_size.saturating_mul(2)
        } else {
            self.chunk_size
        };
        let name = (req.db.clone(), req.table.clone());
        let limit = row_limit(
            limit,
            self.chunk_max_bytes,
            self.row_bytes.get(&name).copied(),
        );
        let range = Range {
            after,
            upto,
            filter: req.filter.as_deref(),
        };
        let (sql, params) = chunk_query(
            &req.db,
            &req.table,
            &info.select,
            &info.key,
            &range,
            Some(limit),
        )
        .map_err(|e| snapshot_error(req, e))?;
        let sql = time_limited(&sql, self.flavor, self.statement_timeout);
        let watermark = self.begin_snapshot().await?;
        let read = self.read_rows(&sql, params, info, limit).await;
        // Ends the read-only transaction whatever happened (a server error of the COMMIT is
        // no concern of a read-only transaction; a timeout means the connection is dead).
        let commit = self.conn.query_drop("COMMIT").timed(END_SNAPSHOT).await;
        let (rows, last_key, cut) = read?;
        let _ = commit?;
        if let Some(avg) = cut.bytes().checked_div(cut.rows()) {
            self.row_bytes.insert(name, avg.max(1));
        }
        // Stopped at the row limit or at the bytes: rows of the range may be left after the
        // last key; the next chunk starts after it.
        let full = rows.len() >= limit || cut.bytes() >= self.chunk_max_bytes;
        Ok(Some(ReadOutcome::Chunk(ChunkRead {
            seq: req.seq,
            schema: info.schema.clone(),
            key_names: info.key.iter().map(|k| k.name.clone()).collect(),
            key_idx: info.key_idx.clone(),
            rows,
            last_key,
            watermark: watermark.clone(),
            full,
            complete: upto.is_none() && !full,
        })))
    }

    /// Starts a consistent-snapshot transaction and places it in the binlog.
    async fn begin_snapshot(&mut self) -> std::result::Result<Watermark, Failure> {
        let low = match self.flavor {
            Flavor::MySql => Some(server::mysql_gtid_var(&mut self.conn, "gtid_executed").await?),
            Flavor::MariaDb => None,
        };
        self.conn
            .query_drop("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            .timed("starting a snapshot transaction")
            .await?
            .map_err(|e| Failure::Server("starting a snapshot transaction".into(), e))?;
        let mark = match low {
            Some(low) => {
                let high = server::mysql_gtid_var(&mut self.conn, "gtid_executed").await;
                high.map(|high| Watermark::Gtid { low, high })
            }
            None => self.mariadb_snapshot_position().await.map(Watermark::Exact),
        };
        if mark.is_err() {
            let _ = self.conn.query_drop("COMMIT").timed(END_SNAPSHOT).await;
        }
        Ok(mark?)
    }

    /// The rows of one chunk query, in key order, up to `limit` rows or
    /// `snapshot.chunk_max_bytes` ([`ChunkCut`]), with the key of the last row kept. After a
    /// cut the rest of the result is read and dropped (the connection must be drained).
    async fn read_rows(
        &mut self,
        sql: &str,
        params: Vec<mysql_async::Value>,
        info: &TableInfo,
        limit: usize,
    ) -> std::result::Result<(Vec<Vec<Value>>, Option<Vec<KeyValue>>, ChunkCut), Failure> {
        let n = info.schema.columns.len();
        let k = info.key.len();
        let mut cut = ChunkCut::new(limit, self.chunk_max_bytes);
        let mut rows = Vec::new();
        let mut last_raw: Option<Vec<mysql_async::Value>> = None;
        let what = format!("reading a snapshot chunk ({sql})");
        let context = || what.clone();
        let mut result = self
            .conn
            .exec_iter(sql, params)
            .timed(&what)
            .await?
            .map_err(|e| Failure::Server(context(), e))?;
        // The timeout bounds each row: a long chunk that keeps sending never times out.
        loop {
            let row = result
                .next()
                .timed(&what)
                .await?
                .map_err(|e| Failure::Server(context(), e))?;
            let Some(mut row) = row else { break };
            // The raw key values appended after the select list (moved out, not decoded).
            last_raw = Some(
                (n..n + k)
                    .map(|i| row.take(i).unwrap_or(mysql_async::Value::NULL))
                    .collect(),
            );
            let values = decode_row(&info.schema, row)?;
            let ends = cut.take(crate::value::row_bytes(&values));
            rows.push(values);
            if ends {
                break;
            }
        }
        // Drains what a cut left (bounded by the query's LIMIT; nothing is kept).
        while result
            .next()
            .timed(&what)
            .await?
            .map_err(|e| Failure::Server(context(), e))?
            .is_some()
        {}
        drop(result);
        let last_key = match last_raw {
            Some(raw) if k > 0 => Some(
                raw.iter()
                    .map(KeyValue::from_mysql)
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| {
                        Error::definite(format!(
                            "snapshot of `{}`.`{}`: a key column is NULL in the last row of a \
                             chunk",
                            info.schema.db, info.schema.table
                        ))
                    })?,
            ),
            _ => None,
        };
        Ok((rows, last_key, cut))
    }

    /// The whole table (matching the filter) in one consistent snapshot, sent to `out` in
    /// batches of `chunk_size` rows or `chunk_max_bytes` as they are read (the bounded channel
    /// holds the read back while the stream catches up, so memory holds a few batches, not the
    /// table).
    async fn scan(
        &mut self,
        req: &ReadRequest,
        info: &TableInfo,
        out: &mpsc::Sender<Result<ReadOutcome>>,
    ) -> std::result::Result<(), Failure> {
        let range = Range {
            filter: req.filter.as_deref(),
            ..Range::default()
        };
        let (sql, params) = chunk_query(&req.db, &req.table, &info.select, &[], &range, None)
            .map_err(|e| snapshot_error(req, e))?;
        let watermark = self.begin_snapshot().await?;
        let chunk_size = self.chunk_size;
        let mut cut = ChunkCut::new(chunk_size, self.chunk_max_bytes);
        let conn = &mut self.conn;
        let what = format!("scanning a table ({sql})");
        let read: std::result::Result<(), Failure> = async {
            let mut result = conn
                .exec_iter(sql.as_str(), params)
                .timed(&what)
                .await?
                .map_err(|e| Failure::Server(format!("scanning a table ({sql})"), e))?;
            let mut rows = Vec::with_capacity(chunk_size);
            loop {
                let row = result
                    .next()
                    .timed(&what)
                    .await?
                    .map_err(|e| Failure::Server(format!("scanning a table ({sql})"), e))?;
                let last = row.is_none();
                let mut ends = last;
                if let Some(row) = row {
                    let values = decode_row(&info.schema, row)?;
                    ends |= cut.take(crate::value::row_bytes(&values));
                    rows.push(values);
                }
                if ends {
                    cut.reset();
                    let batch = ChunkRead {
                        seq: req.seq,
                        schema: info.schema.clone(),
                        key_names: Vec::new(),
                        key_idx: Vec::new(),
                        rows: std::mem::replace(&mut rows, Vec::with_capacity(chunk_size)),
                        last_key: None,
                        watermark: watermark.clone(),
                        full: !last,
                        complete: last,
                    };
                    if out.send(Ok(ReadOutcome::Chunk(batch))).await.is_err() {
                        return Ok(());
                    }
                }
                if last {
                    return Ok(());
                }
            }
        }
        .await;
        let commit = self.conn.query_drop("COMMIT").timed(END_SNAPSHOT).await;
        read?;
        let _ = commit?;
        Ok(())
    }

    /// `binlog_snapshot_file` and `binlog_snapshot_position` of the open consistent snapshot.
    async fn mariadb_snapshot_position(&mut self) -> Result<FilePos> {
        let rows: Vec<(String, String)> = self
            .conn
            .query("SHOW STATUS LIKE 'binlog_snapshot_%'")
            .timed("reading the snapshot's binlog position")
            .await?
            .map_err(|e| mysql_error("reading the snapshot's binlog position", &e))?;
        let get = |name: &str| {
            rows.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        match (get("binlog_snapshot_file"), get("binlog_snapshot_position")) {
            (Some(file), Some(pos)) if !file.is_empty() => Ok(FilePos {
                file,
                pos: pos.parse().map_err(|_| {
                    Error::definite(format!("binlog_snapshot_position is {pos:?}, not a number"))
                })?,
            }),
            other => Err(Error::definite(format!(
                "the server reports no binlog position for the snapshot \
                 (binlog_snapshot_file/position: {other:?}); is log_bin on?"
            ))),
        }
    }

    /// The shape and chunk key of a table (no key when it has neither a primary key nor a
    /// unique index of NOT NULL columns): `Err(reason)` when the table is gone.
    async fn table_info(
        &mut self,
        db: &str,
        table: &str,
    ) -> Result<std::result::Result<TableInfo, String>> {
        let flavor = ServerFlavor::from(self.flavor);
        let schema = match load_table_schema(&mut self.conn, db, table, flavor).await {
            Ok(s) => s,
            Err(e) if e.kind() == crate::error::ErrorKind::Transient => {
                return Ok(Err("the table no longer exists".into()))
            }
            Err(e) => return Err(e),
        };
        let key_names: Vec<String> = if schema.primary_key.is_empty() {
            // Neither: no key (the table is read in one pass).
            self.unique_not_null_key(db, table)
                .await?
                .unwrap_or_default()
        } else {
            schema
                .primary_key
                .iter()
                .map(|&i| schema.columns[i].name.clone())
                .collect()
        };
        let key_idx: Vec<usize> = key_names
            .iter()
            .map(|n| schema.columns.iter().position(|c| &c.name == n))
            .collect::<Option<_>>()
            .ok_or_else(|| {
                Error::definite(format!("key of `{db}`.`{table}` not among its columns"))
            })?;
        let collations = self.key_collations(db, table).await?;
        let key = key_names
            .iter()
            .map(|n| KeyColumn {
                name: n.clone(),
                collation: collations.get(n).cloned(),
            })
            .collect();
        Ok(Ok(TableInfo {
            select: select_list(&schema),
            schema: Arc::new(schema),
            key,
            key_idx,
        }))
    }

    /// The smallest unique index whose columns are all NOT NULL, if any.
    async fn unique_not_null_key(&mut self, db: &str, table: &str) -> Result<Option<Vec<String>>> {
        let rows: Vec<(String, String, u64, String)> = self
            .conn
            .exec(
                "SELECT s.INDEX_NAME, s.COLUMN_NAME, s.SEQ_IN_INDEX, c.IS_NULLABLE \
                 FROM information_schema.STATISTICS s JOIN information_schema.COLUMNS c \
                 ON c.TABLE_SCHEMA = s.TABLE_SCHEMA AND c.TABLE_NAME = s.TABLE_NAME \
                 AND c.COLUMN_NAME = s.COLUMN_NAME \
                 WHERE s.TABLE_SCHEMA = ? AND s.TABLE_NAME = ? AND s.NON_UNIQUE = 0 \
                 ORDER BY s.INDEX_NAME, s.SEQ_IN_INDEX",
                (db, table),
            )
            .timed(format!("reading the unique indexes of `{db}`.`{table}`"))
            .await?
            .map_err(|e| {
                mysql_error(
                    format!("reading the unique indexes of `{db}`.`{table}`"),
                    &e,
                )
            })?;
        let mut indexes: Vec<(String, Vec<String>, bool)> = Vec::new();
        for (index, column, _, nullable) in rows {
            let not_null = !nullable.eq_ignore_ascii_case("YES");
            match indexes.iter_mut().find(|(i, _, _)| *i == index) {
                Some((_, cols, ok)) => {
                    cols.push(column);
                    *ok &= not_null;
                }
                None => indexes.push((index, vec![column], not_null)),
            }
        }
        Ok(indexes
            .into_iter()
            .filter(|(_, _, ok)| *ok)
            .min_by_key(|(name, cols, _)| (cols.len(), name.clone()))
            .map(|(_, cols, _)| cols))
    }

    /// Charset and collation of the table's character columns.
    async fn key_collations(
        &mut self,
        db: &str,
        table: &str,
    ) -> Result<HashMap<String, (String, String)>> {
        let rows: Vec<(String, Option<String>, Option<String>)> = self
            .conn
            .exec(
                "SELECT COLUMN_NAME, CHARACTER_SET_NAME, COLLATION_NAME \
                 FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
                (db, table),
            )
            .timed(format!("reading the collations of `{db}`.`{table}`"))
            .await?
            .map_err(|e| mysql_error(format!("reading the collations of `{db}`.`{table}`"), &e))?;
        Ok(rows
            .into_iter()
            .filter_map(|(c, cs, coll)| Some((c, (cs?, coll?))))
            .collect())
    }
}

/// The key columns of a result row, starting at column `from`.
fn row_key(row: &Row, from: usize, len: usize) -> Option<Vec<KeyValue>> {
    (0..len)
        .map(|k| row.as_ref(from + k).and_then(KeyValue::from_mysql))
        .collect()
}

fn snapshot_error(req: &ReadRequest, e: String) -> Failure {
    Failure::Other(Error::definite(format!(
        "snapshot of `{}`.`{}`: {e}",
        req.db, req.table
    )))
}

/// The server's row estimate of one table (`information_schema.TABLES.TABLE_ROWS`; 0 when the
/// engine keeps none), for a table an ad-hoc request adds.
async fn estimate_rows(conn: &mut Conn, db: &str, table: &str) -> Result<u64> {
    let n: Option<Option<u64>> = conn
        .exec_first(
            "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
            (db, table),
        )
        .timed(format!("estimating the rows of `{db}`.`{table}`"))
        .await?
        .map_err(|e| mysql_error(format!("estimating the rows of `{db}`.`{table}`"), &e))?;
    Ok(n.flatten().unwrap_or(0))
}
