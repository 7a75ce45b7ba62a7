//! Byte and time limits of the source side: `source.max_event_bytes` (the largest binlog event,
//! decompressed statement and inner event of a compressed transaction sluice reads, so that no
//! length claimed by the stream can make it allocate more), `source.channel_max_bytes` (the
//! bytes the source → sink channel holds), `source.query_timeout_ms` (how long a query
//! connection may stay silent) and `snapshot.chunk_max_bytes` (the bytes of one snapshot chunk).

use super::Problem;

/// The default `source.max_event_bytes`: 1 GiB, the server's own `max_allowed_packet` ceiling.
pub const DEFAULT_MAX_EVENT_BYTES: u64 = 1 << 30;

/// The smallest `source.max_event_bytes` accepted.
pub const MIN_MAX_EVENT_BYTES: u64 = 4096;

/// The largest `source.max_event_bytes` accepted: the largest event size a binlog event header
/// can express.
pub const MAX_MAX_EVENT_BYTES: u64 = u32::MAX as u64;

/// The default `source.channel_max_bytes`: 64 MiB.
pub const DEFAULT_CHANNEL_MAX_BYTES: u64 = 64 << 20;

/// The smallest `source.channel_max_bytes` accepted.
pub const MIN_CHANNEL_MAX_BYTES: u64 = 65_536;

/// The largest `source.channel_max_bytes` accepted (the budget is counted in `u32` permits).
pub const MAX_CHANNEL_MAX_BYTES: u64 = u32::MAX as u64;

/// The default `source.query_timeout_ms`: 60 s of silence on a query connection.
pub const DEFAULT_QUERY_TIMEOUT_MS: u64 = 60_000;

/// The default `snapshot.chunk_max_bytes`: 32 MiB.
pub const DEFAULT_CHUNK_MAX_BYTES: u64 = 32 << 20;

/// The smallest `snapshot.chunk_max_bytes` accepted.
pub const MIN_CHUNK_MAX_BYTES: u64 = 4096;

/// The largest `snapshot.chunk_max_bytes` accepted: 4 GiB.
pub const MAX_CHUNK_MAX_BYTES: u64 = 1 << 32;

pub(super) fn default_max_event_bytes() -> u64 {
    DEFAULT_MAX_EVENT_BYTES
}

pub(super) fn default_channel_max_bytes() -> u64 {
    DEFAULT_CHANNEL_MAX_BYTES
}

pub(super) fn default_query_timeout_ms() -> u64 {
    DEFAULT_QUERY_TIMEOUT_MS
}

pub(super) fn default_chunk_max_bytes() -> u64 {
    DEFAULT_CHUNK_MAX_BYTES
}

/// A problem when `v` is outside `min..=max`: names the setting, its variable and the default.
fn check_range(
    problems: &mut Vec<Problem>,
    path: &str,
    v: u64,
    (min, max): (u64, u64),
    default: u64,
    what: &str,
) {
    if !(min..=max).contains(&v) {
        let var = super::env::env_var_name(&path.split('.').collect::<Vec<_>>());
        problems.push(Problem::new(
            path,
            v.to_string(),
            format!("{what} between {min} and {max}"),
            format!("set {path} (or {var}), e.g. {default} (the default)"),
        ));
    }
}

/// The values [`validate`] checks, each named by its setting.
pub(super) struct Limits {
    /// `source.max_event_bytes`.
    pub max_event_bytes: u64,
    /// `source.channel_max_bytes`.
    pub channel_max_bytes: u64,
    /// `source.query_timeout_ms`.
    pub query_timeout_ms: u64,
    /// `snapshot.chunk_max_bytes`.
    pub chunk_max_bytes: u64,
}

/// Checks the limits of `source` and `snapshot`.
pub(super) fn validate(limits: &Limits, problems: &mut Vec<Problem>) {
    check_range(
        problems,
        "source.max_event_bytes",
        limits.max_event_bytes,
        (MIN_MAX_EVENT_BYTES, MAX_MAX_EVENT_BYTES),
        DEFAULT_MAX_EVENT_BYTES,
        "bytes",
    );
    check_range(
        problems,
        "source.channel_max_bytes",
        limits.channel_max_bytes,
        (MIN_CHANNEL_MAX_BYTES, MAX_CHANNEL_MAX_BYTES),
        DEFAULT_CHANNEL_MAX_BYTES,
        "bytes",
    );
    // 0 turns the timeout off; otherwise at least a second (a shorter one would cut off
    // ordinary queries on a busy server) and at most a day.
    let t = limits.query_timeout_ms;
    if t != 0 && !(1000..=86_400_000).contains(&t) {
        problems.push(Problem::new(
            "source.query_timeout_ms",
            t.to_string(),
            "0 (no timeout) or milliseconds between 1000 and 86400000",
            format!(
                "set source.query_timeout_ms (or SLUICE_SOURCE_QUERY_TIMEOUT_MS), e.g. \
                 {DEFAULT_QUERY_TIMEOUT_MS} (the default)"
            ),
        ));
    }
    check_range(
        problems,
        "snapshot.chunk_max_bytes",
        limits.chunk_max_bytes,
        (MIN_CHUNK_MAX_BYTES, MAX_CHUNK_MAX_BYTES),
        DEFAULT_CHUNK_MAX_BYTES,
        "bytes",
    );
}
