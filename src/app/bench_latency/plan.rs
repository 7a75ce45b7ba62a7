//! What one run of `sluice bench-latency` is asked to do ([`LatencyBench`]), checked and
//! turned into a [`Plan`]: the open-loop schedule of source transactions, the number of writer
//! connections, the table and the statements that fill it. Pure: no connection, no clock.

use std::fmt::Write as _;

use crate::app::bench_produce::filler_text;

/// How fast the driver writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rate {
    /// Rows per second on an open-loop schedule: transaction `k` is due `k × txn_rows / rate`
    /// seconds after the start, however long the earlier ones took.
    Fixed(u64),
    /// As fast as the connections can commit (closed loop): the maximum source rate.
    Max,
}

/// The most rows per second a fixed rate may ask for.
pub const MAX_RATE: u64 = 10_000_000;

/// The most rows per source transaction.
pub const MAX_TXN_ROWS: u64 = 10_000;

/// The most writer connections.
pub const MAX_CONNECTIONS: usize = 256;

/// The largest payload (`v` column) in bytes: a `VARCHAR` of letters and digits, one byte each,
/// well inside a row's 65,535 bytes in every character set.
pub const MAX_PAYLOAD_BYTES: usize = 16_000;

/// Writer connections when `--connections` is left out and the rate is `max`.
pub const MAX_RATE_CONNECTIONS: usize = 8;

/// Source transactions per second one writer connection is given by default: a commit of a
/// few rows takes well under a millisecond on a local server.
const TXNS_PER_CONNECTION: u64 = 1_000;

/// The smallest in-flight cap: the rows of a second at a low rate must fit.
pub const MIN_IN_FLIGHT: usize = 1_000;

/// Parses `--rate`: a whole number of rows per second, or `max`.
pub fn parse_rate(text: &str) -> std::result::Result<Rate, String> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("max") {
        return Ok(Rate::Max);
    }
    match text.parse::<u64>() {
        Ok(r) if (1..=MAX_RATE).contains(&r) => Ok(Rate::Fixed(r)),
        _ => Err(format!(
            "expected rows per second from 1 to {MAX_RATE}, or `max` (as fast as the \
             connections commit), got {text:?}"
        )),
    }
}

/// One run of the latency benchmark, as given on the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyBench {
    /// The source server: `mysql://user[:password]@host:port[/db]`.
    pub source: String,
    /// The table written: `db.table`, or `table` in the database of [`LatencyBench::source`].
    pub table: String,
    /// Kafka bootstrap servers of the consumer.
    pub bootstrap: String,
    /// The topic the pipeline writes the table's changes to.
    pub topic: String,
    /// The rate of rows.
    pub rate: Rate,
    /// Rows per source transaction.
    pub txn_rows: u64,
    /// Writer connections; `None`: [`default_connections`].
    pub connections: Option<usize>,
    /// Seconds written before the measurement starts.
    pub warmup_s: u64,
    /// Seconds measured after the warm-up.
    pub seconds: u64,
    /// How long to wait, after the last row was written, for the rows not received yet.
    pub drain_timeout_s: u64,
    /// How long to wait for the topic to appear when it does not exist yet.
    pub topic_wait_s: u64,
    /// Bytes of the `v` column of every row.
    pub payload_bytes: usize,
    /// The consumer's `fetch.wait.max.ms`.
    pub fetch_wait_ms: u64,
    /// The field of the record key that holds the id.
    pub key_field: String,
    /// The most rows written and not yet received at any time; more is an error.
    pub max_in_flight: usize,
    /// A transaction sent more than this late against the schedule sets `driver_behind`.
    pub behind_limit_ms: u64,
    /// Further librdkafka properties of the consumer (`-X key=value`).
    pub properties: Vec<(String, String)>,
}

/// A table `db`.`name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableName {
    /// The database.
    pub db: String,
    /// The table.
    pub name: String,
}

impl std::fmt::Display for TableName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.db, self.name)
    }
}

impl TableName {
    /// The name quoted for SQL: `` `db`.`name` ``.
    pub fn quoted(&self) -> String {
        format!("`{}`.`{}`", self.db, self.name)
    }
}

/// Parses `--table`: `db.table`, or `table` when the source URL names a database (`url_db`).
/// Names may hold any character but a backquote and are not empty.
pub fn parse_table(text: &str, url_db: Option<&str>) -> std::result::Result<TableName, String> {
    let (db, name) = match text.split_once('.') {
        Some((db, name)) => (db.to_string(), name.to_string()),
        None => match url_db {
            Some(db) if !db.is_empty() => (db.to_string(), text.to_string()),
            _ => {
                return Err(format!(
                    "--table {text:?} names no database and the --source URL has none: write \
                     --table db.{text}"
                ))
            }
        },
    };
    let bad = |s: &str| s.is_empty() || s.contains('`') || s.contains('.');
    if bad(&db) || bad(&name) {
        return Err(format!(
            "--table {text:?}: expected db.table, two non-empty names without a dot or a \
             backquote"
        ));
    }
    Ok(TableName { db, name })
}

/// Writer connections for a rate when `--connections` is left out: one per
/// [`TXNS_PER_CONNECTION`] source transactions per second, at least 2 (a commit that waits
/// does not stall the schedule), at most 32; [`MAX_RATE_CONNECTIONS`] for `max`.
pub fn default_connections(rate: Rate, txn_rows: u64) -> usize {
    match rate {
        Rate::Max => MAX_RATE_CONNECTIONS,
        Rate::Fixed(r) => {
            let txns = r.div_ceil(txn_rows.max(1));
            txns.div_ceil(TXNS_PER_CONNECTION).clamp(2, 32) as usize
        }
    }
}

/// A checked run: everything [`LatencyBench`] asked for, and what follows from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The table written.
    pub table: TableName,
    /// The rate.
    pub rate: Rate,
    /// Rows per source transaction.
    pub txn_rows: u64,
    /// Writer connections.
    pub connections: usize,
    /// The warm-up, in microseconds from the start.
    pub warmup_us: u64,
    /// The end of the writing, in microseconds from the start: warm-up and measured seconds.
    pub end_us: u64,
    /// Open loop: the transactions of the whole run (every one due before [`Plan::end_us`]).
    /// `None` for `max`: transactions are written until [`Plan::end_us`].
    pub txns: Option<u64>,
    /// The most rows in flight.
    pub max_in_flight: usize,
    /// The rows' `v`: letters and digits.
    pub payload: String,
}

impl Plan {
    /// Checks the options (the database of the table from the source URL's path, if any) and
    /// derives the plan; the error names the option, what it got and what it takes.
    pub fn new(bench: &LatencyBench, url_db: Option<&str>) -> std::result::Result<Plan, String> {
        let table = parse_table(&bench.table, url_db)?;
        if !(1..=MAX_TXN_ROWS).contains(&bench.txn_rows) {
            return Err(format!(
                "--txn-rows {}: expected 1 to {MAX_TXN_ROWS} rows per source transaction",
                bench.txn_rows
            ));
        }
        if bench.seconds == 0 {
            return Err("--seconds 0: the measured window needs at least 1 second".into());
        }
        if let Some(c) = bench.connections {
            if !(1..=MAX_CONNECTIONS).contains(&c) {
                return Err(format!(
                    "--connections {c}: expected 1 to {MAX_CONNECTIONS} writer connections"
                ));
            }
        }
        if !(1..=MAX_PAYLOAD_BYTES).contains(&bench.payload_bytes) {
            return Err(format!(
                "--payload-bytes {}: expected 1 to {MAX_PAYLOAD_BYTES}",
                bench.payload_bytes
            ));
        }
        if bench.max_in_flight < MIN_IN_FLIGHT {
            return Err(format!(
                "--max-in-flight {}: expected at least {MIN_IN_FLIGHT} rows",
                bench.max_in_flight
            ));
        }
        if bench.key_field.is_empty() {
            return Err("--key-field is empty: name the key's id field, e.g. `id`".into());
        }
        if bench.fetch_wait_ms > 10_000 {
            return Err(format!(
                "--fetch-wait-ms {}: expected at most 10000 (a short wait measures better)",
                bench.fetch_wait_ms
            ));
        }
        let warmup_us = bench.warmup_s.saturating_mul(1_000_000);
        let end_us = warmup_us.saturating_add(bench.seconds.saturating_mul(1_000_000));
        let txns = match bench.rate {
            Rate::Fixed(rate) => Some(txns_before(end_us, rate, bench.txn_rows)),
            Rate::Max => None,
        };
        let connections = bench
            .connections
            .unwrap_or_else(|| default_connections(bench.rate, bench.txn_rows));
        let payload = String::from_utf8(filler_text(bench.payload_bytes))
            .map_err(|e| format!("the payload is not text: {e}"))?;
        Ok(Plan {
            table,
            rate: bench.rate,
            txn_rows: bench.txn_rows,
            connections,
            warmup_us,
            end_us,
            txns,
            max_in_flight: bench.max_in_flight,
            payload,
        })
    }

    /// When transaction `k` is due, in microseconds from the start (open loop); `None` for
    /// `max`, where a transaction is due as soon as a connection is free.
    pub fn due_us(&self, k: u64) -> Option<u64> {
        match self.rate {
            Rate::Fixed(rate) => Some(due_us(k, rate, self.txn_rows)),
            Rate::Max => None,
        }
    }

    /// The ids of transaction `k` when the run's ids start after `base`.
    pub fn ids(&self, base: u64, k: u64) -> std::ops::RangeInclusive<u64> {
        let first = base + 1 + k * self.txn_rows;
        first..=first + self.txn_rows - 1
    }

    /// `CREATE TABLE IF NOT EXISTS` for the table: `id BIGINT PRIMARY KEY, v VARCHAR(n)`.
    pub fn create_sql(&self) -> String {
        format!(
            "CREATE TABLE IF NOT EXISTS {} (id BIGINT PRIMARY KEY, v VARCHAR({}) NOT NULL)",
            self.table.quoted(),
            self.payload.len()
        )
    }

    /// The statement of one source transaction: one `INSERT` of the rows `ids` (autocommit:
    /// the transaction is committed when it returns), into `sql` (emptied first).
    pub fn insert_sql(&self, sql: &mut String, ids: std::ops::RangeInclusive<u64>) {
        sql.clear();
        // Writing to a String cannot fail.
        let _ = write!(sql, "INSERT INTO {} (id, v) VALUES ", self.table.quoted());
        for (i, id) in ids.enumerate() {
            let sep = if i == 0 { "" } else { "," };
            let _ = write!(sql, "{sep}({id},'{}')", self.payload);
        }
    }
}

/// When transaction `k` is due, in microseconds from the start, at `rate` rows per second in
/// transactions of `txn_rows` rows: `k × txn_rows / rate` seconds, rounded down.
pub fn due_us(k: u64, rate: u64, txn_rows: u64) -> u64 {
    let us = u128::from(k) * u128::from(txn_rows) * 1_000_000 / u128::from(rate.max(1));
    u64::try_from(us).unwrap_or(u64::MAX)
}

/// How many transactions are due before `end_us`: the `k` with [`due_us`] `< end_us`.
pub fn txns_before(end_us: u64, rate: u64, txn_rows: u64) -> u64 {
    // due_us(k) < end  ⇔  k·txn_rows·1e6 / rate < end  ⇔  k·txn_rows·1e6 < end·rate
    // (floor division), so k < end·rate / (txn_rows·1e6), rounded up.
    let num = u128::from(end_us) * u128::from(rate.max(1));
    let den = u128::from(txn_rows.max(1)) * 1_000_000;
    u64::try_from(num.div_ceil(den)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bench() -> LatencyBench {
        LatencyBench {
            source: "mysql://root@127.0.0.1:3306".into(),
            table: "lat.t".into(),
            bootstrap: "127.0.0.1:9092".into(),
            topic: "lat.t".into(),
            rate: Rate::Fixed(1000),
            txn_rows: 1,
            connections: None,
            warmup_s: 2,
            seconds: 10,
            drain_timeout_s: 30,
            topic_wait_s: 30,
            payload_bytes: 100,
            fetch_wait_ms: 5,
            key_field: "id".into(),
            max_in_flight: 1_000_000,
            behind_limit_ms: 100,
            properties: Vec::new(),
        }
    }

    #[test]
    fn rates_are_whole_rows_per_second_or_max() {
        assert_eq!(parse_rate("1000"), Ok(Rate::Fixed(1000)));
        assert_eq!(parse_rate(" 50000 "), Ok(Rate::Fixed(50_000)));
        assert_eq!(parse_rate("max"), Ok(Rate::Max));
        assert_eq!(parse_rate("MAX"), Ok(Rate::Max));
        for bad in ["0", "-5", "1.5", "", "fast", "10000001"] {
            let e = parse_rate(bad).unwrap_err();
            assert!(
                e.contains("rows per second") && e.contains("max"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn tables_are_db_dot_name_or_the_urls_database() {
        let t = parse_table("lat_db.t1", None).unwrap();
        assert_eq!((t.db.as_str(), t.name.as_str()), ("lat_db", "t1"));
        assert_eq!(t.quoted(), "`lat_db`.`t1`");
        assert_eq!(t.to_string(), "lat_db.t1");
        assert_eq!(parse_table("t1", Some("d")).unwrap().quoted(), "`d`.`t1`");
        assert!(parse_table("t1", None).unwrap_err().contains("db.t1"));
        assert!(parse_table("t1", Some("")).is_err());
        for bad in ["a.", ".t", "a.b.c", "a`.t", "a.t`"] {
            assert!(parse_table(bad, None).is_err(), "{bad}");
        }
    }

    #[test]
    fn default_connections_follow_the_transaction_rate() {
        assert_eq!(default_connections(Rate::Fixed(200), 1), 2);
        assert_eq!(default_connections(Rate::Fixed(1000), 1), 2);
        assert_eq!(default_connections(Rate::Fixed(10_000), 1), 10);
        assert_eq!(default_connections(Rate::Fixed(10_000), 10), 2);
        assert_eq!(default_connections(Rate::Fixed(50_000), 1), 32);
        assert_eq!(default_connections(Rate::Fixed(50_000), 10), 5);
        assert_eq!(default_connections(Rate::Max, 1), MAX_RATE_CONNECTIONS);
    }

    #[test]
    fn options_are_checked_and_name_what_is_wrong() {
        let plan = Plan::new(&bench(), None).unwrap();
        assert_eq!(plan.connections, 2);
        assert_eq!((plan.warmup_us, plan.end_us), (2_000_000, 12_000_000));
        assert_eq!(plan.txns, Some(12_000));
        assert_eq!(plan.payload.len(), 100);
        assert!(plan.payload.bytes().all(|b| b.is_ascii_alphanumeric()));
        let max = Plan::new(
            &LatencyBench {
                rate: Rate::Max,
                ..bench()
            },
            None,
        )
        .unwrap();
        assert_eq!((max.txns, max.due_us(5)), (None, None));
        let cases: Vec<(LatencyBench, &str)> = vec![
            (
                LatencyBench {
                    txn_rows: 0,
                    ..bench()
                },
                "--txn-rows 0",
            ),
            (
                LatencyBench {
                    seconds: 0,
                    ..bench()
                },
                "--seconds 0",
            ),
            (
                LatencyBench {
                    connections: Some(0),
                    ..bench()
                },
                "--connections 0",
            ),
            (
                LatencyBench {
                    payload_bytes: 0,
                    ..bench()
                },
                "--payload-bytes 0",
            ),
            (
                LatencyBench {
                    max_in_flight: 10,
                    ..bench()
                },
                "--max-in-flight 10",
            ),
            (
                LatencyBench {
                    key_field: String::new(),
                    ..bench()
                },
                "--key-field",
            ),
            (
                LatencyBench {
                    fetch_wait_ms: 60_000,
                    ..bench()
                },
                "--fetch-wait-ms 60000",
            ),
            (
                LatencyBench {
                    table: "t".into(),
                    ..bench()
                },
                "--table \"t\"",
            ),
        ];
        for (b, want) in cases {
            let e = Plan::new(&b, None).unwrap_err();
            assert!(e.contains(want), "{want}: {e}");
        }
    }

    #[test]
    fn statements_insert_the_transactions_ids() {
        let plan = Plan::new(
            &LatencyBench {
                txn_rows: 3,
                payload_bytes: 4,
                ..bench()
            },
            None,
        )
        .unwrap();
        assert_eq!(plan.ids(100, 0), 101..=103);
        assert_eq!(plan.ids(100, 2), 107..=109);
        let mut sql = String::from("left over");
        plan.insert_sql(&mut sql, plan.ids(100, 1));
        let v = &plan.payload;
        assert_eq!(
            sql,
            format!("INSERT INTO `lat`.`t` (id, v) VALUES (104,'{v}'),(105,'{v}'),(106,'{v}')")
        );
        assert_eq!(
            plan.create_sql(),
            "CREATE TABLE IF NOT EXISTS `lat`.`t` (id BIGINT PRIMARY KEY, v VARCHAR(4) NOT NULL)"
        );
    }

    #[test]
    fn the_schedule_of_a_known_rate() {
        assert_eq!(due_us(0, 1000, 1), 0);
        assert_eq!(due_us(1, 1000, 1), 1000);
        assert_eq!(due_us(3, 1000, 10), 30_000);
        assert_eq!(due_us(1, 3, 1), 333_333);
        assert_eq!(txns_before(1_000_000, 1000, 1), 1000);
        assert_eq!(txns_before(1_000_000, 1000, 10), 100);
        assert_eq!(txns_before(1_000_000, 3, 1), 3);
        assert_eq!(txns_before(1_000_000, 7, 10), 1);
        assert_eq!(txns_before(0, 1000, 1), 0);
    }

    proptest! {
        /// Due times never go back, every transaction counted by `txns_before` is due before
        /// the end and the next one is not, and the rows due in a window hit the rate to
        /// within one transaction.
        #[test]
        fn the_schedule_is_monotone_and_hits_the_rate(
            rate in 1u64..=MAX_RATE,
            txn_rows in 1u64..=MAX_TXN_ROWS,
            end_us in 0u64..=200_000_000,
            k in 0u64..=10_000_000,
        ) {
            prop_assert!(due_us(k, rate, txn_rows) <= due_us(k + 1, rate, txn_rows));
            let n = txns_before(end_us, rate, txn_rows);
            if n > 0 {
                prop_assert!(due_us(n - 1, rate, txn_rows) < end_us);
            }
            prop_assert!(due_us(n, rate, txn_rows) >= end_us);
            let ideal = end_us as f64 * rate as f64 / 1e6;
            let rows = (n * txn_rows) as f64;
            prop_assert!(rows >= ideal - 1e-6 && rows < ideal + txn_rows as f64 + 1e-6,
                "{} rows for {} ideal", rows, ideal);
        }
    }
}
