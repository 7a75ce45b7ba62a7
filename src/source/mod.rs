//! The binlog source: server access, preflight checks, event parsing, row decoding and the
//! streaming stage that assembles whole source transactions.

pub mod binlog_errors;
pub mod events;
#[cfg(test)]
pub mod fixtures;
mod json_diff;
pub mod packet;
pub mod payload;
pub mod preflight;
pub mod query;
pub mod replication;
pub mod retention;
pub mod rows;
pub mod seed;
pub mod server;
pub mod stream;
pub mod verify;
