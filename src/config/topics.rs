//! The names of sluice's own topics: each pipeline keeps its offsets and schema history in
//! topics of its own, `_sluice_offsets.<name>` and `_sluice_schema_history.<name>`, unless
//! `kafka.offsets_topic` / `kafka.schema_history_topic` say otherwise.
//!
//! Why per pipeline: a topic that several producers write to has a last stable offset (LSO)
//! that any of them can hold back with an open transaction; a `read_committed` reader cannot
//! read past it. In a topic of its own, after fencing, no producer but the pipeline writes.

use super::{route, Config, KafkaConfig, Problem};

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

/// The topics derived from `name` (when not set explicitly) must be legal topic names. A
/// name that breaks its own rule is reported as that (renaming is the fix then), so this
/// speaks only for names the pipeline rule accepts.
pub(super) fn validate_derived(config: &Config, problems: &mut Vec<Problem>) {
    if super::is_valid_pipeline_name(&config.name) {
        problems.extend(derived_problem(&config.name, &config.kafka));
    }
}

/// The problem of default topic names that `name` makes illegal, if any.
pub(super) fn derived_problem(name: &str, k: &KafkaConfig) -> Option<Problem> {
    let derived = [
        (
            "kafka.offsets_topic",
            k.offsets_topic.is_none(),
            default_offsets_topic(name),
        ),
        (
            "kafka.schema_history_topic",
            k.schema_history_topic.is_none(),
            default_schema_history_topic(name),
        ),
    ];
    let bad: Vec<(&str, String)> = derived
        .into_iter()
        .filter(|(_, is_default, topic)| *is_default && !route::is_valid_topic_name(topic))
        .map(|(setting, _, topic)| (setting, topic))
        .collect();
    if bad.is_empty() {
        return None;
    }
    let topics: Vec<String> = bad
        .iter()
        .map(|(s, t)| format!("`{t}` ({} bytes) for {s}", t.len()))
        .collect();
    let settings: Vec<&str> = bad.iter().map(|(s, _)| *s).collect();
    Some(Problem::new(
        "name",
        format!(
            "{name:?}, which makes the default topic names {} illegal",
            topics.join(" and ")
        ),
        "a name that gives legal topic names: 1 to 249 characters from [a-zA-Z0-9._-]",
        format!(
            "choose a shorter name, or set {} to legal topic names",
            settings.join(" and ")
        ),
    ))
}
