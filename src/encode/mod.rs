//! Encoders: (table schema, row change) → Kafka key/value bytes.

pub mod avro;
pub mod change;
pub mod connect_schema;
pub mod envelope;
pub mod inet_text;
pub mod json;
pub mod json_value;
pub mod key_header;
pub mod point;
pub mod projection;
pub(crate) mod table_ctx;
pub mod uuid_text;
