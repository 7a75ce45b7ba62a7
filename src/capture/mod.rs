//! The capture stage: one replication connection, binlog events decoded into whole source
//! transactions and sent to the sink over a bounded channel.
//!
//! Invariants:
//! * Positions sent to the sink (`Commit`, `Progress`) are always source commit boundaries:
//!   the end of an XID / COMMIT / standalone DDL, or a point between transactions.
//! * Rows are only sent between a `Begin` and its `Commit`; a transaction that touches no
//!   included table sends no `Begin` at all (only, now and then, `Progress`).
//! * An event type sluice does not know is a definite error naming the type and position.
//!
//! Resuming is safe because the stream always (re)starts from the last *committed* position
//! (GTID state or file/pos), which is where a whole transaction ended.
//!
//! In files, each using only files listed before it: `settings` (what the stage is given),
//! `tracker` (the position the stream is at), `start` (where streaming begins and how the
//! dump is requested), `send` (one change to the sink), `assembler` (binlog events into whole
//! source transactions), `xa` (a committed XA group read again), `pump` (the stream loop), `seed`
//! (the first table definitions of a pipeline that starts at "now").

mod assembler;
mod pump;
pub(crate) mod seed;
mod send;
mod settings;
mod start;
mod tracker;
mod xa;

/// For `crate::fuzz_entry`, which feeds events to it.
pub(crate) use self::assembler::Assembler;
pub use self::assembler::SkipSet;
pub use self::pump::run;
pub use self::settings::SourceSettings;
pub use self::start::{resolve_start, ResumePoint};
pub use self::tracker::Tracker;
