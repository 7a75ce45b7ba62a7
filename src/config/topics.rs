//! The names of sluice's own topics: each pipeline keeps its offsets and schema history in
//! topics of its own, `_sluice_offsets.<name>` and `_sluice_schema_history.<name>`, unless
//! `kafka.offsets_topic` / `kafka.schema_history_topic` say otherwise.
//!
//! Why per pipeline: a topic that several producers write to has a last stable offset (LSO)
//! that any of them can hold back with an open transaction; a `read_committed` reader cannot
//! read past it. In a topic of its own, after fencing, no producer but the pipeline writes.

use super::{route, Config, Problem};

/// The offsets topic that every pipeline shared before topics per pipeline; read once, when a
/// pipeline's own topic is empty, to move its committed offset over.
pub const SHARED_OFFSETS_TOPIC: &str = "_sluice_offsets";

/// The schema-history topic every pipeline shared before topics per pipeline.
pub const SHARED_SCHEMA_HISTORY_TOPIC: &str = "_sluice_schema_history";

/// `_sluice_offsets.<name>`.
pub fn default_offsets_topic(name: &str) -> String {
    format!("{SHARED_OFFSETS_TOPIC}.{name}")
}

/// `_sluice_schema_history.<name>`.
pub fn default_schema_history_topic(name: &str) -> String {
    format!("{SHARED_SCHEMA_HISTORY_TOPIC}.{name}")
}

/// The topics derived from `name` (when not set explicitly) must be legal topic names.
pub(super) fn validate_derived(config: &Config, problems: &mut Vec<Problem>) {
    let k = &config.kafka;
    let derived = [
        (
            "kafka.offsets_topic",
            k.offsets_topic.is_none(),
            default_offsets_topic(&config.name),
        ),
        (
            "kafka.schema_history_topic",
            k.schema_history_topic.is_none(),
            default_schema_history_topic(&config.name),
        ),
    ];
    for (setting, is_default, topic) in derived {
        if is_default && !route::is_valid_topic_name(&topic) {
            problems.push(Problem::new(
                "name",
                format!(
                    "{:?}, which makes the default {setting} `{topic}` ({} bytes) an illegal \
                     Kafka topic name",
                    config.name,
                    topic.len()
                ),
                "a name that gives legal topic names: 1 to 249 characters from \
                 [a-zA-Z0-9._-] in all",
                format!(
                    "rename the pipeline (name = \"shop\"), or set {setting} to a legal topic \
                     name"
                ),
            ));
        }
    }
}
