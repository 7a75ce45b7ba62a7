//! `source.max_event_bytes`: the largest binlog event, decompressed statement and inner event
//! of a compressed transaction sluice reads (so that no length claimed by the stream can make
//! it allocate more).

use super::{Config, Problem};

/// The default `source.max_event_bytes`: 1 GiB, the server's own `max_allowed_packet` ceiling.
pub const DEFAULT_MAX_EVENT_BYTES: u64 = 1 << 30;

/// The smallest `source.max_event_bytes` accepted.
pub const MIN_MAX_EVENT_BYTES: u64 = 4096;

/// The largest `source.max_event_bytes` accepted: the largest event size a binlog event header
/// can express.
pub const MAX_MAX_EVENT_BYTES: u64 = u32::MAX as u64;

pub(super) fn default_max_event_bytes() -> u64 {
    DEFAULT_MAX_EVENT_BYTES
}

pub(super) fn validate(config: &Config, problems: &mut Vec<Problem>) {
    let v = config.source.max_event_bytes;
    if !(MIN_MAX_EVENT_BYTES..=MAX_MAX_EVENT_BYTES).contains(&v) {
        problems.push(Problem::new(
            "source.max_event_bytes",
            v.to_string(),
            format!("bytes between {MIN_MAX_EVENT_BYTES} and {MAX_MAX_EVENT_BYTES}"),
            "set source.max_event_bytes (or SLUICE_SOURCE_MAX_EVENT_BYTES), e.g. 1073741824 \
             (1 GiB, the default)",
        ));
    }
}
