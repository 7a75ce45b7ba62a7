//! The sink's cache of registered Avro schema ids, per table version.
//!
//! Invariant: an entry is found by what the registry's answer depends on — the topic (it names
//! the subjects) and the exact key and value schema texts — never by the address of a derived
//! object: the source derives a new `AvroTable` for the same shape whenever it sees a table
//! map again (every binlog rotation), and an address-keyed cache grew by one entry per table
//! at each. Memory is bounded: at most [`VERSIONS_PER_TABLE`] versions per table (the oldest
//! goes first; a version looked up again is simply registered again, which the registry answers
//! with the same id) and at most [`MAX_TABLES`] tables.

use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};

use crate::encode::avro::{AvroTable, SchemaIds};

/// Versions of one table kept at a time.
pub const VERSIONS_PER_TABLE: usize = 4;
/// Tables kept at a time; past it the whole cache starts afresh (lookups register again).
pub const MAX_TABLES: usize = 16_384;

/// What the registry answered for one table version: the ids, or why it refused the schema
/// (rows of that shape go to the dead-letter topic).
pub type Outcome = std::result::Result<SchemaIds, String>;

/// One table version's identity: a fingerprint of topic, key and value schema, plus the texts
/// themselves to rule out fingerprint collisions.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Version {
    fingerprint: u64,
    topic: String,
    key: Option<String>,
    value: String,
}

impl Version {
    fn of(topic: &str, avro: &AvroTable) -> Version {
        let key = avro.key.as_ref().map(|d| d.schema_json.clone());
        let value = avro.value.schema_json.clone();
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (topic, &key, &value).hash(&mut h);
        Version {
            fingerprint: h.finish(),
            topic: topic.to_string(),
            key,
            value,
        }
    }
}

/// The bounded cache, keyed by `db.table`.
#[derive(Default)]
pub struct SchemaIdCache {
    tables: HashMap<String, VecDeque<(Version, Outcome)>>,
}

impl SchemaIdCache {
    /// The cached outcome of `table`'s version `avro` written to `topic`, if any.
    pub fn get(&self, table: &str, topic: &str, avro: &AvroTable) -> Option<&Outcome> {
        let versions = self.tables.get(table)?;
        let want = Version::of(topic, avro);
        versions
            .iter()
            .find(|(v, _)| *v == want)
            .map(|(_, outcome)| outcome)
    }

    /// Remembers the registry's answer for `table`'s version `avro` written to `topic`.
    pub fn insert(&mut self, table: &str, topic: &str, avro: &AvroTable, outcome: Outcome) {
        if !self.tables.contains_key(table) && self.tables.len() >= MAX_TABLES {
            self.tables.clear();
        }
        let version = Version::of(topic, avro);
        let versions = self.tables.entry(table.to_string()).or_default();
        versions.retain(|(v, _)| *v != version);
        if versions.len() >= VERSIONS_PER_TABLE {
            versions.pop_front();
        }
        versions.push_back((version, outcome));
    }

    /// Versions held in all.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.tables.values().map(VecDeque::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::avro::AvroDoc;

    fn table(value: &str) -> AvroTable {
        AvroTable::for_tests(
            Some(AvroDoc {
                schema_json: r#"{"type":"record","name":"Key","fields":[]}"#.into(),
                full_name: "t.Key".into(),
            }),
            AvroDoc {
                schema_json: value.into(),
                full_name: "t.Envelope".into(),
            },
        )
    }

    fn ids(value: u32) -> Outcome {
        Ok(SchemaIds {
            key: Some(1),
            value,
        })
    }

    #[test]
    fn the_same_shape_derived_again_is_found() {
        let mut c = SchemaIdCache::default();
        c.insert("db.t", "topic", &table("v1"), ids(7));
        // A new object of the same shape (as after a binlog rotation) hits the same entry.
        assert_eq!(c.get("db.t", "topic", &table("v1")), Some(&ids(7)));
        for _ in 0..1000 {
            c.insert("db.t", "topic", &table("v1"), ids(7));
        }
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn versions_topics_and_tables_are_told_apart() {
        let mut c = SchemaIdCache::default();
        c.insert("db.t", "topic", &table("v1"), ids(7));
        assert_eq!(c.get("db.t", "topic", &table("v2")), None);
        assert_eq!(c.get("db.t", "other", &table("v1")), None);
        assert_eq!(c.get("db.u", "topic", &table("v1")), None);
        c.insert("db.t", "topic", &table("v2"), Err("refused".into()));
        assert_eq!(
            c.get("db.t", "topic", &table("v2")),
            Some(&Err("refused".into()))
        );
        assert_eq!(c.get("db.t", "topic", &table("v1")), Some(&ids(7)));
    }

    #[test]
    fn memory_is_bounded_per_table_and_in_all() {
        let mut c = SchemaIdCache::default();
        for v in 0..100u32 {
            c.insert("db.t", "topic", &table(&format!("v{v}")), ids(v));
        }
        assert_eq!(c.len(), VERSIONS_PER_TABLE);
        // The newest versions are the ones kept.
        assert_eq!(c.get("db.t", "topic", &table("v99")), Some(&ids(99)));
        assert_eq!(c.get("db.t", "topic", &table("v0")), None);
        for t in 0..(MAX_TABLES + 10) {
            c.insert(&format!("db.t{t}"), "topic", &table("v"), ids(1));
        }
        assert!(c.tables.len() <= MAX_TABLES, "{}", c.tables.len());
    }
}
