//! Rows of the one-table fault tests (`t (id INT PRIMARY KEY, v INT)`): insert a range, count
//! what a read_committed consumer sees per id, assert every row exactly once.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{consume, exec, Flavor};

/// Ids of the rows in `topic` as a read_committed consumer sees them, with their counts.
pub fn committed_ids(topic: &str, want: usize) -> BTreeMap<i64, usize> {
    let recs = consume(
        &[topic.to_string()],
        "read_committed",
        want,
        Duration::from_secs(2),
        Duration::from_secs(60),
    );
    let mut ids = BTreeMap::new();
    for r in recs {
        let Some(v) = r.value else { continue };
        let id = v["after"]["id"].as_i64().expect("after.id");
        *ids.entry(id).or_insert(0) += 1;
    }
    ids
}

pub fn assert_exactly_once(flavor: Flavor, ids: &BTreeMap<i64, usize>, n: i64, log: &str) {
    let missing: Vec<i64> = (1..=n).filter(|i| !ids.contains_key(i)).collect();
    let dup: Vec<(&i64, &usize)> = ids.iter().filter(|(_, c)| **c > 1).collect();
    assert!(
        missing.is_empty() && dup.is_empty() && ids.len() == n as usize,
        "[{}] {n} rows: missing {missing:?}, duplicated {dup:?}; log:\n{log}",
        flavor.name
    );
}

pub async fn insert(c: &mut mysql_async::Conn, db: &str, from: i64, to: i64) {
    for id in from..=to {
        exec(c, &[&format!("INSERT INTO {db}.t VALUES ({id}, 0)")]).await;
    }
}
