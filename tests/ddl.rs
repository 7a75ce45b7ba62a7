//! Tracked schemas against the real servers (MariaDB on 3306, MySQL 9.7 on 3307), read-only
//! apart from each test's own database `sluice_ddl_<random>`:
//!
//! * a table definition loaded from information_schema, the one parsed from the table's
//!   `SHOW CREATE TABLE`, and the schema of the table's TABLE_MAP agree (with the table map's
//!   optional metadata, and with all of it stripped so that the definition supplies it);
//! * the DDL statements as the server writes them into the binlog, parsed and applied to
//!   tracked definitions, give what information_schema says afterwards;
//! * the check for DDL between two binlog positions (a new pipeline's start) answers while
//!   large events are being written after the second position: the server refuses to list an
//!   event it is still writing, and that refusal must be "read again", never a stopped
//!   pipeline.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::StreamExt;
use mysql_async::prelude::*;
use mysql_async::BinlogStreamRequest;
use mysql_common::binlog::consts::BinlogVersion;
use mysql_common::binlog::consts::StatusVarKey;
use mysql_common::binlog::events::{
    EventData, FormatDescriptionEvent, StatusVarVal, TableMapEvent,
};
use mysql_common::binlog::BinlogCtx;
use mysql_common::io::ParseBuf;
use mysql_common::proto::MySerialize;
use sluice::mysql::binlog_listing::ddl_between;
use sluice::position::FilePos;
use sluice::schema::ddl::{parse_ddl, parse_ddl_with, DdlChange, DdlParse, SqlMode};
use sluice::schema::information_schema::{list_base_tables, load_table_defs, load_table_schema};
use sluice::schema::tracked::{TableDef, TableName};
use sluice::schema::{charset_kind, ColumnKind, ServerFlavor, TableSchema};
use support::*;

per_flavor!(
    all:
    loaded_parsed_and_logged_definitions_agree,
    binlog_ddl_keeps_tracked_definitions_current,
    the_ddl_check_answers_while_large_events_are_being_written,
);

fn server_flavor(f: Flavor) -> ServerFlavor {
    if f.mysql {
        ServerFlavor::MySql
    } else {
        ServerFlavor::MariaDb
    }
}

/// The end of the server's last binlog.
async fn binlog_end(c: &mut mysql_async::Conn) -> (String, u64) {
    let rows: Vec<mysql_async::Row> = c.query("SHOW BINARY LOGS").await.expect("SHOW BINARY LOGS");
    let last = rows.last().expect("binary logging is on");
    (
        last.get::<String, _>(0).expect("log name"),
        last.get::<u64, _>(1).expect("log size"),
    )
}

/// A QUERY event.
struct Query {
    default_db: String,
    sql: String,
    /// The `sql_mode` status variable.
    sql_mode: u64,
}

/// MariaDB's GTID event type.
const MARIA_GTID: u8 = 162;

/// Whether a MariaDB GTID event body opens a START ALTER or ROLLBACK ALTER group
/// (`binlog_alter_two_phase`): `flags_extra` (after seq_no u64, domain u32, flags2 u8, the
/// commit id u64 with flags2 & 2, the xid with flags2 & (64 | 128)) has bit 2 or 8. Such a
/// group's ALTER takes effect only at its COMMIT ALTER, which carries the statement again.
fn alter_not_committed(body: &[u8]) -> bool {
    let flags2 = body[12];
    let mut at = 13;
    if flags2 & 2 != 0 {
        at += 8;
    }
    if flags2 & (64 | 128) != 0 {
        at += 6 + usize::from(body[at + 4]) + usize::from(body[at + 5]);
    }
    body.get(at).is_some_and(|extra| extra & (2 | 8) != 0)
}

/// Every QUERY event that takes effect (not the START / ROLLBACK ALTER halves of a two-phase
/// ALTER) and the TABLE_MAPs of `db`, from `from` to the end of the binlog.
async fn read_binlog(
    f: Flavor,
    from: &(String, u64),
    db: &str,
) -> (Vec<Query>, Vec<TableMapEvent<'static>>) {
    let mut conn = root(f.port).await;
    if !f.mysql {
        // GTID events as they are (type 162, with their flags): without this capability
        // MariaDB sends an old replica a BEGIN query in their place.
        exec(&mut conn, &["SET @mariadb_slave_capability = 4"]).await;
    }
    let request = BinlogStreamRequest::new(20_000 + rand::random::<u32>() % 40_000)
        .with_filename(from.0.as_bytes())
        .with_pos(from.1)
        .with_non_blocking();
    let mut stream = conn
        .get_binlog_stream(request)
        .await
        .expect("binlog stream");
    let mut queries = Vec::new();
    let mut maps = Vec::new();
    let mut uncommitted_alter = false;
    let read = async {
        while let Some(ev) = stream.next().await {
            let ev = ev.expect("binlog event");
            if ev.header().event_type_raw() == MARIA_GTID {
                uncommitted_alter = alter_not_committed(ev.data());
            }
            match ev.read_data() {
                Ok(Some(EventData::QueryEvent(_))) if uncommitted_alter => {}
                Ok(Some(EventData::QueryEvent(q))) => {
                    let mode = q
                        .status_vars()
                        .get_status_var(StatusVarKey::SqlMode)
                        .and_then(|v| match v.get_value() {
                            Ok(StatusVarVal::SqlMode(m)) => Some(m.0),
                            _ => None,
                        })
                        .unwrap_or(0);
                    queries.push(Query {
                        default_db: q.schema().into_owned(),
                        sql: q.query().into_owned(),
                        sql_mode: mode,
                    });
                }
                Ok(Some(EventData::TableMapEvent(t))) if t.database_name() == db => {
                    maps.push(t.into_owned());
                }
                _ => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("binlog read within 60 s");
    (queries, maps)
}

/// The same table map without optional metadata (as MySQL < 8.0.1 / MariaDB < 10.5 log it).
fn without_optional_metadata(tme: &TableMapEvent<'_>) -> TableMapEvent<'static> {
    let mut body = Vec::new();
    tme.serialize(&mut body);
    let lenenc = |b: &[u8]| -> (usize, usize) {
        match b[0] {
            x @ 0..=250 => (usize::from(x), 1),
            0xfc => (usize::from(u16::from_le_bytes([b[1], b[2]])), 3),
            other => panic!("unexpected length prefix {other}"),
        }
    };
    let mut i = 8; // table id, flags
    i += 1 + usize::from(body[i]) + 1; // database name
    i += 1 + usize::from(body[i]) + 1; // table name
    let (n, k) = lenenc(&body[i..]);
    i += k + n;
    let (m, k) = lenenc(&body[i..]);
    i += k + m + n.div_ceil(8);
    body.truncate(i);
    let fde = FormatDescriptionEvent::new(BinlogVersion::Version4);
    let ctx = BinlogCtx::new(body.len() + 19, &fde, 19);
    let ev: TableMapEvent<'_> = ParseBuf(&body).parse(ctx).expect("stripped table map");
    ev.into_owned()
}

/// A schema with every charset id replaced by its encoding class (the tracked path knows a
/// charset by name, the table map by its exact collation id).
/// The table map's schema with what only the definition knows: MariaDB logs UUID and INET6 as
/// BINARY(16), INET4 as BINARY(4) and VECTOR(n) as VARBINARY(4n); sluice takes those types from the definition.
fn with_tracked_types(mut logged: TableSchema, def: &TableDef) -> TableSchema {
    for (c, d) in logged.columns.iter_mut().zip(&def.columns) {
        match (d.base_type(), &c.kind) {
            ("uuid", ColumnKind::String { max_bytes: 16, .. }) => c.kind = ColumnKind::Uuid,
            ("inet6", ColumnKind::String { max_bytes: 16, .. }) => c.kind = ColumnKind::Inet6,
            ("inet4", ColumnKind::String { max_bytes: 4, .. }) => c.kind = ColumnKind::Inet4,
            ("vector", ColumnKind::String { max_bytes, .. }) => {
                c.kind = ColumnKind::Vector {
                    dimensions: Some(u32::from(*max_bytes / 4)),
                }
            }
            _ => {}
        }
    }
    logged
}

fn by_encoding(mut s: TableSchema) -> TableSchema {
    for c in &mut s.columns {
        match &mut c.kind {
            ColumnKind::String { charset, .. } | ColumnKind::Blob { charset, .. } => {
                *charset = charset_kind(*charset) as u16;
            }
            _ => {}
        }
    }
    s
}

fn parse_create(db: &str, sql: &str) -> TableDef {
    match parse_ddl(Some(db), sql) {
        DdlParse::Changes(mut c) if c.len() == 1 => match c.remove(0) {
            DdlChange::CreateTable { def, .. } => def,
            other => panic!("{sql}\n => {other:?}"),
        },
        other => panic!("{sql}\n => {other:?}"),
    }
}

async fn loaded_parsed_and_logged_definitions_agree(f: Flavor) {
    let db = unique("sluice_ddl");
    let mut c = root(f.port).await;
    let special = if f.mysql {
        "v VECTOR(3),"
    } else if f.mariadb11 {
        // MariaDB 11.7+ has VECTOR too (logged as VARBINARY(4n)).
        "u UUID, i6 INET6, i4 INET4, v VECTOR(3),"
    } else {
        "u UUID, i6 INET6, i4 INET4,"
    };
    let all_types = format!(
        "CREATE TABLE {db}.all_types (
            id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
            ti TINYINT, tiu TINYINT UNSIGNED, b BOOL, si SMALLINT, mi MEDIUMINT UNSIGNED,
            i INT(11), bi BIGINT, d DECIMAL(10,2), dz DECIMAL(7,3) UNSIGNED ZEROFILL,
            f FLOAT, db DOUBLE,
            dt DATE, tm TIME(3), dtm DATETIME(6), ts TIMESTAMP(2) NULL, y YEAR,
            c CHAR(10), vc VARCHAR(100), vl VARCHAR(20) CHARACTER SET latin1 COLLATE latin1_bin,
            vb8 VARCHAR(5) COLLATE utf8mb4_bin,
            bin BINARY(4), vb VARBINARY(30),
            tt TINYTEXT, tx TEXT, mt MEDIUMTEXT, lt LONGTEXT,
            tb TINYBLOB, bl BLOB, mb MEDIUMBLOB, lb LONGBLOB,
            e ENUM('a','b''q','c,d'), s SET('x','y','z') CHARACTER SET latin1,
            bt BIT(10), j JSON, g GEOMETRY, p POINT,
            gv INT AS (i * 2) VIRTUAL, gs INT AS (i + 1) STORED,
            inv INT INVISIBLE,
            {special}
            PRIMARY KEY (id)
        ) DEFAULT CHARSET=utf8mb4"
    );
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {db}"),
            &all_types,
            &format!(
                "CREATE TABLE {db}.keyed (a INT NOT NULL, b VARCHAR(5) NOT NULL, c TEXT, \
                 PRIMARY KEY (b, a)) DEFAULT CHARSET=latin1"
            ),
            &format!("CREATE TABLE {db}.nokey (x INT, y CHAR(2) CHARACTER SET ascii)"),
        ],
    )
    .await;
    let mut tables = vec!["all_types", "keyed", "nokey"];
    if !f.mysql {
        exec(&mut c, &[&format!("CREATE SEQUENCE {db}.seq")]).await;
        tables.push("seq");
    }
    tables.sort();
    assert_eq!(list_base_tables(&mut c, &db).await.expect("list"), tables);

    let pairs: Vec<(String, String)> = tables
        .iter()
        .map(|t| (db.clone(), (*t).to_owned()))
        .collect();
    let loaded = load_table_defs(&mut c, &pairs).await.expect("load");
    assert_eq!(loaded.len(), tables.len());
    for def in &loaded {
        let (_, create): (String, String) = c
            .query_first(format!("SHOW CREATE TABLE {db}.`{}`", def.table))
            .await
            .expect("SHOW CREATE TABLE")
            .expect("a row");
        let parsed = parse_create(&db, &create);
        assert!(
            parsed.agrees_with(def),
            "[{}] information_schema and SHOW CREATE TABLE disagree:\n{create}\n\
             parsed: {parsed:#?}\nloaded: {def:#?}",
            f.name
        );
    }
    let all = &loaded[0];
    assert_eq!(all.table, "all_types");
    assert_eq!(all.primary_key, ["id"]);
    let col = |n: &str| &all.columns[all.column_index(n).expect(n)];
    assert_eq!(col("dz").sql_type, "decimal(7,3) unsigned");
    assert_eq!(col("e").members, ["a", "b'q", "c,d"]);
    assert_eq!(col("vl").charset.as_deref(), Some("latin1"));
    assert!(col("inv").invisible);
    assert!(col("gv").generated.is_some() && col("gs").generated.is_some());
    let keyed = loaded.iter().find(|d| d.table == "keyed").expect("keyed");
    assert_eq!(keyed.primary_key, ["b", "a"]);

    // Third leg: the TABLE_MAP of a row of each table.
    let from = binlog_end(&mut c).await;
    exec(
        &mut c,
        &[
            &format!("INSERT INTO {db}.all_types (i, e, s) VALUES (1, 'b''q', 'x,z')"),
            &format!("INSERT INTO {db}.keyed VALUES (1, 'k', 't')"),
            &format!("INSERT INTO {db}.nokey VALUES (1, 'y')"),
        ],
    )
    .await;
    if !f.mysql {
        let _: Option<i64> = c
            .query_first(format!("SELECT NEXTVAL({db}.seq)"))
            .await
            .expect("nextval");
    }
    let (_, maps) = read_binlog(f, &from, &db).await;
    let sf = server_flavor(f);
    for def in &loaded {
        let tme = maps
            .iter()
            .find(|m| m.table_name() == def.table.as_str())
            .unwrap_or_else(|| panic!("[{}] no TABLE_MAP for {}", f.name, def.table));
        let logged = TableSchema::from_table_map_with_flavor(tme, sf).expect("FULL metadata");
        let logged = with_tracked_types(logged, def);
        let checked = TableSchema::from_table_map_with_def(tme, sf, def)
            .unwrap_or_else(|e| panic!("[{}] {e}", f.name));
        assert_eq!(checked, logged, "[{}] {}", f.name, def.table);
        // Snapshots take the shape from information_schema alone: it must be the table map's.
        let loaded_schema = load_table_schema(&mut c, &db, &def.table, sf)
            .await
            .unwrap_or_else(|e| panic!("[{}] {e}", f.name));
        assert_eq!(
            loaded_schema, logged,
            "[{}] {}: information_schema and the table map give the same schema",
            f.name, def.table
        );
        let bare = without_optional_metadata(tme);
        assert!(TableSchema::from_table_map_with_flavor(&bare, sf).is_err());
        let tracked = TableSchema::from_table_map_with_def(&bare, sf, def)
            .unwrap_or_else(|e| panic!("[{}] {e}", f.name));
        assert_eq!(
            by_encoding(tracked),
            by_encoding(logged),
            "[{}] {}: the definition supplies what the table map lacks",
            f.name,
            def.table
        );
    }
    exec(&mut c, &[&format!("DROP DATABASE {db}")]).await;
}

/// A minimal tracker over parsed binlog DDL, as the stream keeps one.
struct Tracker {
    flavor: ServerFlavor,
    tables: BTreeMap<TableName, TableDef>,
    db_charsets: BTreeMap<String, (Option<String>, Option<String>)>,
}

impl Tracker {
    fn apply(&mut self, q: &Query) {
        let (default_db, sql) = (q.default_db.as_str(), q.sql.as_str());
        let mode = SqlMode::from_bits(q.sql_mode);
        let changes = match parse_ddl_with(Some(default_db), sql, mode, self.flavor) {
            DdlParse::NotDdl => return,
            DdlParse::Changes(c) => c,
            DdlParse::Unparsed { error, .. } => panic!("unparsed: {sql}: {error}"),
        };
        for change in changes {
            match change {
                DdlChange::CreateDatabase {
                    db,
                    charset,
                    collation,
                } => {
                    self.db_charsets.insert(db, (charset, collation));
                }
                DdlChange::CreateTable {
                    table,
                    mut def,
                    if_not_exists,
                    ..
                } => {
                    if if_not_exists && self.tables.contains_key(&table) {
                        continue;
                    }
                    if let Some((Some(cs), co)) = self.db_charsets.get(&table.db) {
                        def.fill_default_charset(cs, co.as_deref());
                    }
                    self.tables.insert(table, def);
                }
                DdlChange::CreateTableLike { table, like, .. } => {
                    let mut def = self.tables[&like].clone();
                    def.db = table.db.clone();
                    def.table = table.table.clone();
                    self.tables.insert(table, def);
                }
                DdlChange::AlterTable { table, ops } => {
                    let mut def = self.tables.remove(&table).expect("tracked");
                    def.apply_all(&ops).unwrap_or_else(|e| panic!("{sql}: {e}"));
                    self.tables.insert(def.name(), def);
                }
                DdlChange::DropTable { tables, .. } => {
                    for t in tables {
                        self.tables.remove(&t);
                    }
                }
                DdlChange::RenameTable { pairs } => {
                    for (from, to) in pairs {
                        let mut def = self.tables.remove(&from).expect("tracked");
                        def.db = to.db.clone();
                        def.table = to.table.clone();
                        self.tables.insert(to, def);
                    }
                }
                DdlChange::DropDatabase { db } => self.tables.retain(|t, _| t.db != db),
                DdlChange::Truncate { .. }
                | DdlChange::AlterDatabase { .. }
                | DdlChange::CreateTableAsSelect { .. } => {}
            }
        }
    }
}

async fn binlog_ddl_keeps_tracked_definitions_current(f: Flavor) {
    let db = unique("sluice_ddl");
    let mut c = root(f.port).await;
    let from = binlog_end(&mut c).await;
    let mut ddl = vec![
        format!("CREATE DATABASE {db} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"),
        format!("USE {db}"),
        "CREATE TABLE t1 (id INT PRIMARY KEY, v VARCHAR(20)) /* a comment */".into(),
        "CREATE TABLE `t2` (`id` bigint unsigned NOT NULL AUTO_INCREMENT, name varchar(50) \
         CHARACTER SET latin1 COLLATE latin1_swedish_ci DEFAULT 'x', e ENUM('a','b''q','c,d') NOT \
         NULL DEFAULT 'a', s SET('x','y'), d DECIMAL(10,2) ZEROFILL, i INT(11) UNSIGNED \
         ZEROFILL, b BOOL, ts TIMESTAMP(3) DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE \
         CURRENT_TIMESTAMP(3), g INT GENERATED ALWAYS AS (i * 2) VIRTUAL, g2 INT AS (i+1) \
         STORED, PRIMARY KEY (`id`), UNIQUE KEY uq (name), KEY k (d)) ENGINE=InnoDB COMMENT='hi'"
            .into(),
        "CREATE TABLE t3 (a SERIAL, b INT)".into(),
        "CREATE TABLE t4 LIKE t2".into(),
        "CREATE TABLE t5 AS SELECT id, v FROM t1".into(),
        "CREATE TABLE IF NOT EXISTS t1 (x int)".into(),
        "ALTER TABLE t1 ADD COLUMN w INT AFTER id, ALGORITHM=INSTANT".into(),
        "ALTER TABLE t1 ADD COLUMN (a INT, b TEXT)".into(),
        "ALTER TABLE t1 ADD c INT FIRST, DROP COLUMN a, MODIFY v VARCHAR(40) NOT NULL, CHANGE b \
         bb MEDIUMTEXT"
            .into(),
        "ALTER TABLE t1 RENAME COLUMN bb TO b2".into(),
        "ALTER TABLE t1 ALTER COLUMN w SET DEFAULT 5".into(),
        "ALTER TABLE t1 ADD INDEX iw (w), ENGINE=InnoDB".into(),
        "ALTER TABLE t1 MODIFY c INT NOT NULL, DROP PRIMARY KEY, ADD PRIMARY KEY (id, c)".into(),
        "ALTER TABLE t1 RENAME TO t1r".into(),
        "RENAME TABLE t1r TO t1, t3 TO t3r".into(),
        "TRUNCATE TABLE t1".into(),
        "ALTER TABLE t1 CONVERT TO CHARACTER SET latin1 COLLATE latin1_swedish_ci".into(),
        "ALTER TABLE t4 ADD x TINYTEXT, CHARACTER SET latin1, ADD y VARCHAR(3)".into(),
        "ALTER TABLE t4 CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin".into(),
        "ALTER TABLE t4 MODIFY E ENUM('a','b''q','c,d','new') NOT NULL, DROP COLUMN g2".into(),
        "CREATE INDEX ix ON t1 (c)".into(),
        "DROP INDEX ix ON t1".into(),
        "DROP TABLE t5".into(),
        "DROP TABLE IF EXISTS t3r, nonexist".into(),
        "CREATE TABLE t6 (id INT NOT NULL, x INT INVISIBLE, j JSON, y YEAR, bt BIT(5), dt \
         DATETIME(6), tm TIME(2), f FLOAT, dd DOUBLE, bl BLOB, tt TINYTEXT, lb LONGBLOB, bi \
         BINARY(16), vb VARBINARY(10), c CHAR(3) CHARACTER SET utf8mb3 COLLATE \
         utf8mb3_general_ci, dc DECIMAL(65,30), p POINT, ge GEOMETRY, CONSTRAINT pk PRIMARY KEY \
         (id))"
            .into(),
        "ALTER TABLE t6 ADD COLUMN z INT DEFAULT (1+2)".into(),
        "ALTER TABLE t6 ADD CONSTRAINT chk CHECK (id > 0)".into(),
        "ALTER TABLE t6 COMMENT = 'c', ROW_FORMAT=DYNAMIC".into(),
        "ALTER TABLE t6 CHANGE COLUMN tt tt2 TEXT AFTER id".into(),
        "CREATE VIEW v1 AS SELECT 1".into(),
        "DROP VIEW v1".into(),
        // Names that need quoting, partitions, keys, defaults that look like comments.
        "CREATE TABLE `we ird` (`a b` INT NOT NULL, `c``d` VARCHAR(5), PRIMARY KEY (`a b`)) \
         /*!50100 PARTITION BY HASH (`a b`) PARTITIONS 2 */"
            .into(),
        "CREATE TABLE fk (id INT PRIMARY KEY, pid INT, txt TEXT, FOREIGN KEY (pid) REFERENCES \
         t6 (id) ON DELETE CASCADE, FULLTEXT KEY ft (txt)) ENGINE=InnoDB"
            .into(),
        "ALTER TABLE fk ADD COLUMN d DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE \
         CURRENT_TIMESTAMP(3) COMMENT 'when' AFTER pid, ADD KEY (d)"
            .into(),
        "ALTER TABLE fk ADD s VARCHAR(40) DEFAULT '/* not a comment */ -- nor # this', \
         ALGORITHM=COPY, LOCK=SHARED"
            .into(),
        "ALTER TABLE fk MODIFY COLUMN txt MEDIUMTEXT CHARACTER SET latin1 COLLATE \
         latin1_general_ci FIRST"
            .into(),
        "ALTER TABLE fk DROP FOREIGN KEY fk_ibfk_1, DROP KEY d".into(),
        "CREATE TABLE ctas2 SELECT id, txt FROM fk".into(),
        "RENAME TABLE fk TO tmp, ctas2 TO fk, tmp TO ctas2".into(),
        format!("TRUNCATE {db}.fk"),
        "CREATE TABLE dflt (a INT, b CHAR(2)) COMMENT 'c' CHARSET latin1 ROW_FORMAT=COMPACT".into(),
        "ALTER TABLE dflt ADD c CHAR(2) CHARACTER SET ascii, CHANGE b b2 CHAR(4) NOT NULL FIRST"
            .into(),
        // ANSI_QUOTES: "x" is an identifier; the QUERY event's sql_mode says so.
        "SET SESSION sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES')".into(),
        r#"CREATE TABLE "ansi" ("a" INT, "b c" VARCHAR(3) DEFAULT 'x')"#.into(),
        r#"ALTER TABLE "ansi" ADD COLUMN "d""q" INT FIRST"#.into(),
        "SET SESSION sql_mode = REPLACE(@@sql_mode, 'ANSI_QUOTES', '')".into(),
    ];
    if f.mysql {
        ddl.extend([
            "CREATE TABLE v (id INT PRIMARY KEY, emb VECTOR(3))".to_owned(),
            "ALTER TABLE v ADD COLUMN e2 VECTOR(4), ALGORITHM=INSTANT".into(),
            "ALTER TABLE t6 ALTER COLUMN x SET VISIBLE, ALTER COLUMN y SET INVISIBLE".into(),
            "SET SESSION sql_generate_invisible_primary_key = ON".into(),
            "CREATE TABLE gipk (x INT)".into(),
            "SET SESSION sql_generate_invisible_primary_key = OFF".into(),
        ]);
    } else {
        ddl.extend([
            "CREATE TABLE m (id INT PRIMARY KEY, u UUID, i6 INET6, i4 INET4, x INT INVISIBLE)"
                .to_owned(),
            "ALTER TABLE m ADD COLUMN IF NOT EXISTS y INT".into(),
            "ALTER TABLE m ADD COLUMN IF NOT EXISTS y INT".into(),
            "ALTER TABLE m DROP COLUMN IF EXISTS nope".into(),
            "CREATE OR REPLACE TABLE m2 (a INT)".into(),
            "CREATE OR REPLACE TABLE m2 (a INT, b INT)".into(),
            "ALTER TABLE m MODIFY COLUMN IF EXISTS y BIGINT".into(),
            "CREATE SEQUENCE s1".into(),
            "CREATE SEQUENCE s2".into(),
            "DROP SEQUENCE s2".into(),
        ]);
    }
    if f.mariadb11 {
        ddl.extend([
            "CREATE TABLE vv (id INT PRIMARY KEY, emb VECTOR(3))".to_owned(),
            "ALTER TABLE vv ADD COLUMN e2 VECTOR(4)".into(),
            "CREATE TABLE dup (id INT PRIMARY KEY, c INT)".into(),
            "INSERT INTO dup VALUES (1, 5), (2, 5)".into(),
        ]);
    }
    for s in &ddl {
        c.query_drop(s.as_str())
            .await
            .unwrap_or_else(|e| panic!("[{}] {s}: {e}", f.name));
    }
    if f.mariadb11 {
        // Fails on the duplicate 5s after its START ALTER was logged: START ALTER, then
        // ROLLBACK ALTER; `z` must not reach the tracked definition.
        let failed = c
            .query_drop("ALTER TABLE dup ADD UNIQUE KEY (c), ADD COLUMN z INT")
            .await;
        assert!(failed.is_err(), "[{}] the ALTER must fail", f.name);
    }
    let (queries, _) = read_binlog(f, &from, &db).await;
    let mut tracker = Tracker {
        flavor: server_flavor(f),
        tables: BTreeMap::new(),
        db_charsets: BTreeMap::new(),
    };
    let mut seen_create_db = false;
    for q in &queries {
        // Only this test's statements (other tests write to the same server).
        if !(q.default_db == db || q.sql.contains(&db)) {
            continue;
        }
        seen_create_db |= q.sql.starts_with("CREATE DATABASE");
        tracker.apply(q);
    }
    assert!(seen_create_db, "[{}] the binlog has the DDL", f.name);

    let names: Vec<(String, String)> = tracker
        .tables
        .keys()
        .map(|t| (t.db.clone(), t.table.clone()))
        .collect();
    let mut listed = list_base_tables(&mut c, &db).await.expect("list");
    listed.sort();
    assert_eq!(
        names.iter().map(|(_, t)| t.clone()).collect::<Vec<_>>(),
        listed,
        "[{}] tracked tables",
        f.name
    );
    let loaded = load_table_defs(&mut c, &names).await.expect("load");
    for def in &loaded {
        let tracked = &tracker.tables[&def.name()];
        assert!(
            tracked.agrees_with(def),
            "[{}] tracked from the binlog vs information_schema:\ntracked: {tracked:#?}\n\
             loaded: {def:#?}",
            f.name
        );
    }

    // The tracked definitions decode the tables' TABLE_MAPs with no optional metadata.
    let from = binlog_end(&mut c).await;
    for (db, table) in &names {
        let tracked = &tracker.tables[&TableName::new(db, table)];
        let name = format!("`{db}`.`{}`", table.replace('`', "``"));
        let sql = if tracked
            .columns
            .iter()
            .any(|c| c.name == "next_not_cached_value")
        {
            format!("SELECT NEXTVAL({name})")
        } else if tracked.column_index("id").is_some() {
            format!("INSERT IGNORE INTO {name} (id) VALUES (7)")
        } else {
            format!("INSERT IGNORE INTO {name} () VALUES ()")
        };
        c.query_drop(&sql)
            .await
            .unwrap_or_else(|e| panic!("[{}] {sql}: {e}", f.name));
    }
    let (_, maps) = read_binlog(f, &from, &db).await;
    let sf = server_flavor(f);
    for (_, table) in &names {
        let tracked = &tracker.tables[&TableName::new(&db, table)];
        let tme = maps
            .iter()
            .find(|m| m.table_name() == table.as_str())
            .unwrap_or_else(|| panic!("[{}] no TABLE_MAP for {table}", f.name));
        let logged = TableSchema::from_table_map_with_flavor(tme, sf).expect("FULL metadata");
        let logged = with_tracked_types(logged, tracked);
        let bare = without_optional_metadata(tme);
        let from_tracked = TableSchema::from_table_map_with_def(&bare, sf, tracked)
            .unwrap_or_else(|e| panic!("[{}] {e}", f.name));
        assert_eq!(
            by_encoding(from_tracked),
            by_encoding(logged),
            "[{}] {table}",
            f.name
        );
    }
    exec(&mut c, &[&format!("DROP DATABASE {db}")]).await;
}

/// Bytes of each row the writers insert: a rows event of this size is written in parts.
const LARGE_ROW: usize = 4 << 20;

/// Rows each of the two writers inserts at most (the binlogs grow by 4 MiB a row).
const LARGE_ROWS_PER_WRITER: u32 = 40;

/// Two connections insert `LARGE_ROW`-byte rows back to back while the start's check for DDL
/// reads the events between two positions taken a moment apart, again and again. The same
/// listing as one unbounded `SHOW BINLOG EVENTS` from the first position (what the check
/// used to run) is tried beside it, and counts how often the server refused it: MySQL, which
/// writes a large event in parts, refuses it while one is being written (the condition;
/// asserted to have happened), MariaDB does not. The check must never fail nor need a second
/// read: every one of them comes out clean (or finds another test's DDL), and it finds an
/// ALTER run between its two positions among the large events.
async fn the_ddl_check_answers_while_large_events_are_being_written(f: Flavor) {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let db = unique("sluice_ddl");
    let mut c = root(f.port).await;
    exec(
        &mut c,
        &[
            &format!("CREATE DATABASE {db}"),
            &format!(
                "CREATE TABLE {db}.large (id INT AUTO_INCREMENT PRIMARY KEY, b LONGBLOB NOT NULL)"
            ),
        ],
    )
    .await;
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let (stop, table) = (stop.clone(), format!("{db}.large"));
            tokio::spawn(async move {
                let mut c = root(f.port).await;
                let mut n = 0u32;
                while !stop.load(Ordering::Relaxed) && n < LARGE_ROWS_PER_WRITER {
                    n += 1;
                    let sql = format!(
                        "INSERT INTO {table} (b) VALUES (REPEAT(CHAR(65 + {w} + {n} % 20), {LARGE_ROW}))"
                    );
                    c.query_drop(sql).await.expect("large insert");
                }
                stop.store(true, Ordering::Relaxed);
            })
        })
        .collect();

    let (mut checks, mut clean, mut again, mut others_ddl, mut refused_raw) =
        (0u32, 0u32, 0u32, 0u32, 0u32);
    // Until a writer is done, or enough checks (on MySQL: three of them beside a refusal).
    while !stop.load(Ordering::Relaxed) && (checks < 200 || (f.mysql && refused_raw < 3)) {
        let (file, p1) = binlog_end(&mut c).await;
        tokio::time::sleep(Duration::from_millis(u64::from(checks % 3))).await;
        let (file2, p2) = binlog_end(&mut c).await;
        if file2 != file || p2 == p1 {
            continue;
        }
        let from = FilePos {
            file: file.clone(),
            pos: p1,
        };
        // Four times between the same positions, each check beside the listing it replaced:
        // the later ones run while more of the large events after `p2` are being written.
        for _ in 0..4 {
            checks += 1;
            match ddl_between(&mut c, &from, p2).await {
                Ok(Ok(())) => clean += 1,
                // Other tests on the server run DDL: a check between positions around one of
                // theirs answers so, rightly.
                Ok(Err(reason)) if reason.starts_with("a statement ran in between") => {
                    others_ddl += 1
                }
                Ok(Err(reason)) => {
                    eprintln!("[{}] inconclusive: {reason}", f.name);
                    again += 1;
                }
                Err(e) => panic!("[{}] the check between {from} and {p2} failed: {e}", f.name),
            }
            let raw: Result<Vec<mysql_async::Row>, _> = c
                .query(format!(
                    "SHOW BINLOG EVENTS IN '{file}' FROM {p1} LIMIT 50000"
                ))
                .await;
            match raw {
                Ok(_) => {}
                Err(mysql_async::Error::Server(se)) if se.code == 1220 => refused_raw += 1,
                Err(e) => panic!("[{}] the unbounded listing failed otherwise: {e}", f.name),
            }
        }
    }

    // An ALTER between the two positions, among the large events, is found.
    let (file, p1) = binlog_end(&mut c).await;
    exec(
        &mut c,
        &[&format!("ALTER TABLE {db}.large ADD COLUMN note INT")],
    )
    .await;
    let (_, p2) = binlog_end(&mut c).await;
    let from = FilePos { file, pos: p1 };
    let mut found = None;
    for _ in 0..50 {
        match ddl_between(&mut c, &from, p2).await.expect("the check") {
            Err(reason) if reason.contains("refused to list") => continue,
            other => {
                found = Some(other);
                break;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.expect("writer");
    }
    exec(&mut c, &[&format!("DROP DATABASE {db}")]).await;
    eprintln!(
        "[{}] {checks} checks: {clean} clean, {others_ddl} around other tests' DDL, {again} \
         read again; the unbounded listing was refused {refused_raw} times",
        f.name
    );
    let found = found.expect("the check answered within 50 tries");
    assert!(
        matches!(&found, Err(reason) if reason.contains("ALTER TABLE")),
        "[{}] the ALTER between the positions: {found:?}",
        f.name
    );
    if f.mysql {
        assert!(
            refused_raw > 0,
            "[{}] the server never refused a listing reaching an event being written in \
             {checks} tries: the condition was not created",
            f.name
        );
    }
    assert_eq!(
        (clean + others_ddl, again),
        (checks, 0),
        "[{}] every check between two positions without DDL comes out clean at once",
        f.name
    );
    assert!(
        checks >= 20,
        "[{}] only {checks} checks while the large rows were written",
        f.name
    );
    // Other tests' DDL may be around many checks, not around all.
    assert!(clean >= 5, "[{}] {clean} of {checks} clean", f.name);
}
