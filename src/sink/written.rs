//! The last offset a transaction wrote on each partition, from the delivery reports: where
//! [`super::seal`] expects each commit marker. Pure data.

use std::collections::HashMap;

/// The last acknowledged offset per topic and partition (from the delivery reports).
#[derive(Debug, Default)]
pub struct Written {
    by_topic: HashMap<String, Vec<i64>>,
}

impl Written {
    /// Notes an acknowledged record.
    pub fn note(&mut self, topic: &str, partition: i32, offset: i64) {
        let Ok(p) = usize::try_from(partition) else {
            return;
        };
        if p > u16::MAX as usize || offset < 0 {
            return;
        }
        let offsets = match self.by_topic.get_mut(topic) {
            Some(v) => v,
            None => self.by_topic.entry(topic.to_string()).or_default(),
        };
        if offsets.len() <= p {
            offsets.resize(p + 1, -1);
        }
        offsets[p] = offsets[p].max(offset);
    }

    /// Forgets everything noted (a transaction begins).
    pub fn clear(&mut self) {
        for v in self.by_topic.values_mut() {
            v.clear();
        }
        // A pipeline that stopped writing to many topics does not keep their names.
        if self.by_topic.len() > 1024 {
            self.by_topic.clear();
        }
    }

    /// Takes the noted `(topic, partition, last offset)`, sorted.
    pub fn take(&mut self) -> Vec<(String, i32, i64)> {
        let mut out: Vec<(String, i32, i64)> = self
            .by_topic
            .iter()
            .flat_map(|(t, v)| {
                v.iter()
                    .enumerate()
                    .filter(|(_, o)| **o >= 0)
                    .map(move |(p, o)| (t.clone(), p as i32, *o))
            })
            .collect();
        out.sort();
        self.clear();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_offset_per_partition_is_kept_and_taken_once() {
        let mut w = Written::default();
        w.note("a", 1, 7);
        w.note("a", 1, 5);
        w.note("a", 0, 2);
        w.note("b", 2, 9);
        w.note("b", -1, 9);
        w.note("b", 3, -1);
        assert_eq!(
            w.take(),
            vec![
                ("a".to_string(), 0, 2),
                ("a".to_string(), 1, 7),
                ("b".to_string(), 2, 9)
            ]
        );
        assert!(w.take().is_empty());
        w.note("b", 0, 1);
        assert_eq!(w.take(), vec![("b".to_string(), 0, 1)]);
    }
}
