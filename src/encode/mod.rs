//! Encoders: (table schema, row change) → Kafka key/value bytes.

pub mod json;
pub mod json_value;
