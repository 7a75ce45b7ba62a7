//! sluice: exactly-once MySQL/MariaDB binlog → Apache Kafka change data capture.
//!
//! ```text
//!  app: preflight (mysql::preflight) ─▶ sink: init_transactions (fences older instances)
//!                      └▶ offsets store: last committed position (read_committed)
//!  mysql: binlog dump from that position (mysql::replication)
//!     ─▶ binlog: events checked and parsed (binlog::verify, events, payload, table_map)
//!     ─▶ capture: whole source transactions (capture::assembler, capture::pump)
//!     ─▶ schema (TABLE_MAP + tracked definitions) ─▶ rows (binlog::rows → model::RowImage)
//!     ─▶ router (config::route: table → topic, key) ─▶ [bounded channel of pipeline::Change]
//!     ─▶ sink thread: encode (JSON or Avro) ─▶ produce rows of whole source transactions
//!                      + one offset record ─▶ commit_transaction (all-or-nothing)
//!  snapshot: chunks read beside the stream, merged into it by watermark windows
//! ```
//!
//! `model` holds what flows between the stages and depends on none of them. The public modules
//! are the surface the CLI, the integration tests and the benches use; everything else
//! (`capture`, `channel`, `ops`, `retry` and the inner files of the stages) is `pub(crate)`. See
//! `docs/architecture.md` for the map of every file and for why a crash at any point neither
//! loses nor duplicates.
//!
//! `fuzz_entry` (hidden from the documentation) is no API: the fuzz targets of `fuzz/` reach the
//! crate-private parsers through it.

// The documentation is for contributors and is built with `--document-private-items`, where a
// public item's link to a crate-private one resolves; broken links still fail the build.
#![allow(rustdoc::private_intra_doc_links)]

pub mod api;
pub mod app;
pub mod binlog;
pub(crate) mod capture;
pub(crate) mod channel;
pub mod cluster;
pub mod config;
pub mod encode;
pub mod error;
#[doc(hidden)]
pub mod fuzz_entry;
pub mod metrics;
pub mod model;
pub mod mysql;
pub(crate) mod ops;
pub mod panic_report;
pub mod pipeline;
pub mod position;
pub mod registry;
pub(crate) mod retry;
pub mod schema;
pub mod shutdown;
pub mod sink;
pub mod snapshot;
pub mod startup;
pub mod value;
