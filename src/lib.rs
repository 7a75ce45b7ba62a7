//! sluice: exactly-once MySQL/MariaDB binlog → Apache Kafka change data capture.
//!
//! ```text
//!  preflight ─▶ sink: init_transactions (fences older instances)
//!                 └▶ offsets store: last committed position (read_committed)
//!  source: binlog stream from that position ─▶ schema (TABLE_MAP, FULL metadata)
//!     ─▶ router (table → topic, key) ─▶ [bounded channel of Change]
//!     ─▶ sink thread: encode (JSON) ─▶ produce rows of whole source transactions
//!                      + one offset record ─▶ commit_transaction (all-or-nothing)
//! ```
//!
//! See `docs/architecture.md` for why a crash at any point neither loses nor duplicates.

pub mod api;
pub mod app;
pub mod channel;
pub mod config;
pub mod encode;
pub mod error;
pub mod metrics;
pub mod model;
pub mod ops;
pub mod pipeline;
pub mod position;
pub mod registry;
pub mod retry;
pub mod schema;
pub mod shutdown;
pub mod sink;
pub mod snapshot;
pub mod source;
pub mod value;
