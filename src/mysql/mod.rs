//! The source server: query connections (connecting, flavour, settings, positions), the
//! preflight checks, binlog retention, the timeout of every query round trip, and sluice's own
//! replication connection with its packet framing and the meaning of the server's refusals.
//!
//! In files, each using only files listed before it: `query` (the timeout of a round trip),
//! `tls_setups` (client TLS setups built once and shared), `server` (connecting and reading the server's state), `binlog_errors` (what a refused dump
//! means), `packet` (protocol packets, read cancel-safely), `replication` (the dump connection),
//! `session` (query connections, which over plaintext log in with `replication`'s client first
//! so the server's RSA key is never fetched unasked), `preflight` (the checks of
//! `sluice check`), `retention` (how long the binlog is kept).

pub(crate) mod binlog_errors;
pub mod binlog_listing;
pub(crate) mod packet;
pub(crate) mod preflight;
pub(crate) mod query;
pub mod replication;
pub(crate) mod retention;
pub mod server;
pub mod session;
pub(crate) mod tls_setups;
