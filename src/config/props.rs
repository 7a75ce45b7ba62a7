//! Helpers for the string maps `kafka.properties` and `kafka.topic_config`:
//!
//! - a deserializer that accepts both quoted keys (`"sasl.mechanism" = "PLAIN"`) and TOML
//!   dotted keys (`sasl.mechanism = "PLAIN"`, which TOML turns into nested tables), and
//!   numbers or booleans as values (`linger.ms = 5`), flattening everything into
//!   `"a.b.c" -> "value"`;
//! - a serializer for `kafka.properties` that writes secret values as `***`;
//! - the librdkafka properties sluice sets itself and therefore refuses in
//!   `kafka.properties`.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserializer, Serializer};

use super::secret::{is_secret_key, REDACTED};

/// A librdkafka property that `kafka.properties` may not set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReservedProperty {
    /// librdkafka property name.
    pub key: &'static str,
    /// Why sluice owns it.
    pub reason: &'static str,
    /// What to do instead.
    pub fix: &'static str,
}

/// Properties sluice sets itself (including librdkafka aliases of them).
pub const RESERVED_PROPERTIES: &[ReservedProperty] = &[
    ReservedProperty {
        key: "transactional.id",
        reason: "sluice sets it to \"sluice-<name>\"; exactly-once depends on it (one \
                 transactional id per pipeline fences zombie instances)",
        fix: "remove it; to change the transactional id change `name`",
    },
    ReservedProperty {
        key: "enable.idempotence",
        reason: "sluice sets it to true; exactly-once depends on it, and at-least-once uses it \
                 to avoid duplicates on producer retries",
        fix: "remove it",
    },
    ReservedProperty {
        key: "acks",
        reason: "sluice sets it to \"all\"; exactly-once depends on it",
        fix: "remove it",
    },
    ReservedProperty {
        key: "request.required.acks",
        reason: "it is librdkafka's alias of `acks`, which sluice sets to \"all\"; exactly-once \
                 depends on it",
        fix: "remove it",
    },
    ReservedProperty {
        key: "isolation.level",
        reason: "sluice reads its offsets with \"read_committed\"; exactly-once depends on it",
        fix: "remove it",
    },
    ReservedProperty {
        key: "transaction.timeout.ms",
        reason: "it has its own setting, `kafka.transaction_timeout_ms`",
        fix: "remove it and set `kafka.transaction_timeout_ms` (or \
              SLUICE_KAFKA_TRANSACTION_TIMEOUT_MS) instead",
    },
    ReservedProperty {
        key: "queue.buffering.max.kbytes",
        reason: "it has its own setting, `kafka.max_buffer_kbytes`",
        fix: "remove it and set `kafka.max_buffer_kbytes` (or SLUICE_KAFKA_MAX_BUFFER_KBYTES) \
              instead",
    },
    ReservedProperty {
        key: "bootstrap.servers",
        reason: "it has its own setting, `kafka.bootstrap_servers`",
        fix: "remove it and set `kafka.bootstrap_servers` (or SLUICE_KAFKA_BOOTSTRAP_SERVERS) \
              instead",
    },
    ReservedProperty {
        key: "metadata.broker.list",
        reason: "it is librdkafka's alias of `bootstrap.servers`, which has its own setting, \
                 `kafka.bootstrap_servers`",
        fix: "remove it and set `kafka.bootstrap_servers` (or SLUICE_KAFKA_BOOTSTRAP_SERVERS) \
              instead",
    },
];

/// The reservation for `key` (compared trimmed and case-insensitively), if any.
pub fn reserved_property(key: &str) -> Option<&'static ReservedProperty> {
    let key = key.trim();
    RESERVED_PROPERTIES
        .iter()
        .find(|r| r.key.eq_ignore_ascii_case(key))
}

/// `deserialize_with` for a flat `BTreeMap<String, String>` (see the module doc).
pub(crate) fn deserialize_flat<'de, D>(
    deserializer: D,
) -> Result<BTreeMap<String, String>, D::Error>
where
    D: Deserializer<'de>,
{
    let tree = deserializer.deserialize_map(NodeVisitor)?;
    let mut out = BTreeMap::new();
    match tree {
        Node::Table(entries) => flatten(String::new(), entries, &mut out)?,
        Node::Scalar(_) => {
            return Err(de::Error::custom("expected a table of properties"));
        }
    }
    Ok(out)
}

fn flatten<E: de::Error>(
    prefix: String,
    entries: Vec<(String, Node)>,
    out: &mut BTreeMap<String, String>,
) -> Result<(), E> {
    for (key, node) in entries {
        let full = if prefix.is_empty() {
            key
        } else {
            format!("{prefix}.{key}")
        };
        match node {
            Node::Scalar(value) => {
                if out.contains_key(&full) {
                    return Err(E::custom(format!(
                        "property `{full}` is given twice (once as a quoted key, once as a \
                         dotted key); keep one"
                    )));
                }
                out.insert(full, value);
            }
            Node::Table(inner) => flatten(full, inner, out)?,
        }
    }
    Ok(())
}

enum Node {
    Scalar(String),
    Table(Vec<(String, Node)>),
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string, number or boolean (or a table of them, from dotted keys)")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Scalar(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Node, E> {
        Ok(Node::Scalar(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Scalar(v.to_string()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Scalar(v.to_string()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Scalar(v.to_string()))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Scalar(v.to_string()))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(NodeSeed)?;
            entries.push((key, value));
        }
        Ok(Node::Table(entries))
    }
}

struct NodeSeed;

impl<'de> de::DeserializeSeed<'de> for NodeSeed {
    type Value = Node;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Node, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

/// `serialize_with` for `kafka.properties`: secret values (see
/// [`is_secret_key`]) are written as `***`.
pub(crate) fn serialize_redacted<S: Serializer>(
    map: &BTreeMap<String, String>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let mut out = serializer.serialize_map(Some(map.len()))?;
    for (k, v) in map {
        if is_secret_key(k) {
            out.serialize_entry(k, REDACTED)?;
        } else {
            out.serialize_entry(k, v)?;
        }
    }
    out.end()
}

/// `Debug` helper for `kafka.properties`: secret values shown as `***`.
pub(crate) struct RedactedMap<'a>(pub(crate) &'a BTreeMap<String, String>);

impl fmt::Debug for RedactedMap<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(k, v)| {
                let shown = if is_secret_key(k) {
                    REDACTED
                } else {
                    v.as_str()
                };
                (k, shown)
            }))
            .finish()
    }
}
