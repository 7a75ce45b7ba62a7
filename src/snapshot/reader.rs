//! A chunk reader: its own connection to the source, reading one key range of a table inside a
//! consistent snapshot and placing that snapshot in the binlog with read-only watermarks.

use std::collections::HashMap;
use std::sync::Arc;

use mysql_async::prelude::*;
use mysql_async::{Conn, Row};

use super::chunk::{chunk_query, KeyColumn};
use super::progress::KeyValue;
use super::values::{decode_row, select_list, SESSION_SETUP};
use super::window::Watermark;
use crate::error::{mysql_error, Error, Result};
use crate::position::{FilePos, GtidSet};
use crate::schema::information_schema::load_table_schema;
use crate::schema::{ServerFlavor, TableSchema};
use crate::source::server::{self, ConnectOptions, Flavor, ServerInfo};
use crate::value::Value;

/// MySQL error: the table does not exist.
const ER_NO_SUCH_TABLE: u16 = 1146;

/// What to read: the chunk of `db.table` after `after` (from the start when `None`).
#[derive(Debug, Clone)]
pub struct ReadRequest {
    /// Sequence number, returned with the result (a result of a cancelled request is dropped).
    pub seq: u64,
    /// Database.
    pub db: String,
    /// Table.
    pub table: String,
    /// Key of the last emitted row.
    pub after: Option<Vec<KeyValue>>,
    /// Forget the cached shape of the table first (it changed).
    pub fresh: bool,
}

/// One chunk as read.
#[derive(Debug)]
pub struct ChunkRead {
    /// The request's sequence number.
    pub seq: u64,
    /// Database.
    pub db: String,
    /// Table.
    pub table: String,
    /// The table's shape the rows were read with.
    pub schema: Arc<TableSchema>,
    /// Key columns (names), and their indexes in `schema`.
    pub key_names: Vec<String>,
    /// Indexes of the key columns in the rows.
    pub key_idx: Vec<usize>,
    /// The rows, in key order, one value per column of `schema`.
    pub rows: Vec<Vec<Value>>,
    /// Key of the last row read (`None` when no row was read).
    pub last_key: Option<Vec<KeyValue>>,
    /// Where the chunk's snapshot sits in the binlog.
    pub watermark: Watermark,
    /// Fewer rows than a full chunk: the table is read to its end.
    pub complete: bool,
}

/// What a request produced.
#[derive(Debug)]
pub enum ReadOutcome {
    /// A chunk.
    Chunk(ChunkRead),
    /// The table cannot be read by chunks (gone, or no usable key): why.
    Skip {
        /// The request's sequence number.
        seq: u64,
        /// Why.
        reason: String,
    },
}

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
    tables: HashMap<(String, String), Arc<TableInfo>>,
}

impl Reader {
    /// Connects and prepares the session. Snapshots on MySQL need `gtid_mode = ON`: without
    /// GTIDs no read-only watermark can tell which transactions a snapshot saw.
    pub async fn connect(
        options: &ConnectOptions,
        info: &ServerInfo,
        chunk_size: usize,
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
        let mut conn = server::connect(options).await?;
        for sql in SESSION_SETUP
            .iter()
            .copied()
            .chain(["SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"])
        {
            conn.query_drop(sql)
                .await
                .map_err(|e| mysql_error(format!("preparing the snapshot session ({sql})"), &e))?;
        }
        Ok(Reader {
            conn,
            flavor: info.flavor,
            chunk_size,
            tables: HashMap::new(),
        })
    }

    /// Reads one chunk.
    pub async fn read(&mut self, req: &ReadRequest) -> Result<ReadOutcome> {
        let name = (req.db.clone(), req.table.clone());
        if req.fresh {
            self.tables.remove(&name);
        }
        let info = match self.tables.get(&name) {
            Some(i) => i.clone(),
            None => match self.table_info(&req.db, &req.table).await? {
                Ok(i) => {
                    let i = Arc::new(i);
                    self.tables.insert(name, i.clone());
                    i
                }
                Err(reason) => {
                    return Ok(ReadOutcome::Skip {
                        seq: req.seq,
                        reason,
                    })
                }
            },
        };
        let (sql, params) = chunk_query(
            &req.db,
            &req.table,
            &info.select,
            &info.key,
            req.after.as_deref(),
            self.chunk_size,
        )
        .map_err(|e| Error::definite(format!("snapshot of `{}`.`{}`: {e}", req.db, req.table)))?;
        let low = match self.flavor {
            Flavor::MySql => Some(server::mysql_gtid_var(&mut self.conn, "gtid_executed").await?),
            Flavor::MariaDb => None,
        };
        self.conn
            .query_drop("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            .await
            .map_err(|e| mysql_error("starting a snapshot transaction", &e))?;
        let read = self.read_in_snapshot(&sql, params, &info, low).await;
        // Ends the read-only transaction whatever happened.
        let _ = self.conn.query_drop("COMMIT").await;
        let (rows, last_key, watermark) = match read {
            Ok(r) => r,
            Err(e) if is_no_such_table(&e) => {
                self.tables.remove(&(req.db.clone(), req.table.clone()));
                return Ok(ReadOutcome::Skip {
                    seq: req.seq,
                    reason: "the table no longer exists".into(),
                });
            }
            Err(e) => return Err(e),
        };
        let complete = rows.len() < self.chunk_size;
        Ok(ReadOutcome::Chunk(ChunkRead {
            seq: req.seq,
            db: req.db.clone(),
            table: req.table.clone(),
            schema: info.schema.clone(),
            key_names: info.key.iter().map(|k| k.name.clone()).collect(),
            key_idx: info.key_idx.clone(),
            rows,
            last_key,
            watermark,
            complete,
        }))
    }

    async fn read_in_snapshot(
        &mut self,
        sql: &str,
        params: Vec<mysql_async::Value>,
        info: &TableInfo,
        low: Option<GtidSet>,
    ) -> Result<(Vec<Vec<Value>>, Option<Vec<KeyValue>>, Watermark)> {
        let watermark = match low {
            Some(low) => {
                let high = server::mysql_gtid_var(&mut self.conn, "gtid_executed").await?;
                Watermark::Gtid { low, high }
            }
            None => Watermark::Exact(self.mariadb_snapshot_position().await?),
        };
        let result: Vec<Row> = self
            .conn
            .exec(sql, params)
            .await
            .map_err(|e| mysql_error(format!("reading a snapshot chunk ({sql})"), &e))?;
        let n = info.schema.columns.len();
        let mut rows = Vec::with_capacity(result.len());
        let mut last_key = None;
        let count = result.len();
        for (i, row) in result.into_iter().enumerate() {
            if i + 1 == count {
                let key: Option<Vec<KeyValue>> = (0..info.key.len())
                    .map(|k| row.as_ref(n + k).and_then(KeyValue::from_mysql))
                    .collect();
                last_key = Some(key.ok_or_else(|| {
                    Error::definite(format!(
                        "snapshot of `{}`.`{}`: a key column is NULL in the last row of a chunk",
                        info.schema.db, info.schema.table
                    ))
                })?);
            }
            rows.push(decode_row(&info.schema, row)?);
        }
        Ok((rows, last_key, watermark))
    }

    /// `binlog_snapshot_file` and `binlog_snapshot_position` of the open consistent snapshot.
    async fn mariadb_snapshot_position(&mut self) -> Result<FilePos> {
        let rows: Vec<(String, String)> = self
            .conn
            .query("SHOW STATUS LIKE 'binlog_snapshot_%'")
            .await
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

    /// The shape and chunk key of a table: `Err(reason)` when it cannot be read by chunks.
    async fn table_info(
        &mut self,
        db: &str,
        table: &str,
    ) -> Result<std::result::Result<TableInfo, String>> {
        let flavor = match self.flavor {
            Flavor::MySql => ServerFlavor::MySql,
            Flavor::MariaDb => ServerFlavor::MariaDb,
        };
        let schema = match load_table_schema(&mut self.conn, db, table, flavor).await {
            Ok(s) => s,
            Err(e) if e.kind() == crate::error::ErrorKind::Transient => {
                return Ok(Err("the table no longer exists".into()))
            }
            Err(e) => return Err(e),
        };
        let key_names: Vec<String> = if schema.primary_key.is_empty() {
            match self.unique_not_null_key(db, table).await? {
                Some(k) => k,
                None => {
                    return Ok(Err(
                        "it has neither a primary key nor a unique index of NOT NULL columns \
                         to read it by chunks"
                            .into(),
                    ))
                }
            }
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
            .await
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
            .await
            .map_err(|e| mysql_error(format!("reading the collations of `{db}`.`{table}`"), &e))?;
        Ok(rows
            .into_iter()
            .filter_map(|(c, cs, coll)| Some((c, (cs?, coll?))))
            .collect())
    }
}

fn is_no_such_table(e: &Error) -> bool {
    e.to_string()
        .contains(&format!("ERROR {ER_NO_SUCH_TABLE} "))
        || e.to_string().contains(&format!("({ER_NO_SUCH_TABLE})"))
}
