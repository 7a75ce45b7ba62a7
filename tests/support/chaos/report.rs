//! Per-kind fault counts and recovery times, as a table and as JSON; in cluster mode also
//! which member owned the pipeline before and after each fault, and how often it moved.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::Duration;

use super::faults::{Fault, Kind};
use super::members::Owner;

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[Duration], p: f64) -> Option<Duration> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// One line per kind: faults, recovered, p50 and max recovery.
pub struct KindStats {
    /// Faults of the kind.
    pub count: usize,
    /// Faults the pipeline did not recover from within the deadline.
    pub stuck: usize,
    /// Median recovery.
    pub p50: Option<Duration>,
    /// Longest recovery.
    pub max: Option<Duration>,
    /// Faults after which another member owned the pipeline (cluster mode).
    pub moves: usize,
}

/// Statistics per kind.
pub fn per_kind(faults: &[Fault]) -> BTreeMap<Kind, KindStats> {
    let mut by: BTreeMap<Kind, Vec<&Fault>> = BTreeMap::new();
    for f in faults {
        by.entry(f.kind).or_default().push(f);
    }
    by.into_iter()
        .map(|(k, fs)| {
            let mut rec: Vec<Duration> = fs.iter().filter_map(|f| f.recovery).collect();
            rec.sort();
            let stats = KindStats {
                count: fs.len(),
                stuck: fs.len() - rec.len(),
                p50: percentile(&rec, 50.0),
                max: rec.last().copied(),
                moves: fs.iter().filter(|f| f.moved()).count(),
            };
            (k, stats)
        })
        .collect()
}

fn ms(d: Option<Duration>) -> String {
    d.map(|d| d.as_millis().to_string())
        .unwrap_or_else(|| "-".into())
}

/// The table printed at the end of a run; `clustered`: with a column of ownership moves.
pub fn table(faults: &[Fault], clustered: bool) -> String {
    let mut out = format!(
        "{:<16} {:>6} {:>6} {:>12} {:>12}",
        "fault", "count", "stuck", "p50 rec ms", "max rec ms"
    );
    if clustered {
        out += &format!(" {:>6}", "moves");
    }
    out += "\n";
    for (k, s) in per_kind(faults) {
        out += &format!(
            "{:<16} {:>6} {:>6} {:>12} {:>12}",
            k.name(),
            s.count,
            s.stuck,
            ms(s.p50),
            ms(s.max)
        );
        if clustered {
            out += &format!(" {:>6}", s.moves);
        }
        out += "\n";
    }
    out
}

/// Faults after which another member owned the pipeline.
pub fn moves(faults: &[Fault]) -> usize {
    faults.iter().filter(|f| f.moved()).count()
}

/// An owner for the report (its member numbered from 1); null for none.
fn member(o: Option<Owner>) -> serde_json::Value {
    o.map(|o| serde_json::json!({"member": o.member + 1, "start": o.start}))
        .unwrap_or(serde_json::Value::Null)
}

/// The faults and their statistics as JSON.
pub fn json(faults: &[Fault]) -> serde_json::Value {
    let kinds: serde_json::Map<String, serde_json::Value> = per_kind(faults)
        .into_iter()
        .map(|(k, s)| {
            (
                k.name().to_string(),
                serde_json::json!({
                    "count": s.count,
                    "stuck": s.stuck,
                    "recovery_p50_ms": s.p50.map(|d| d.as_millis() as u64),
                    "recovery_max_ms": s.max.map(|d| d.as_millis() as u64),
                    "ownership_moves": s.moves,
                }),
            )
        })
        .collect();
    let list: Vec<serde_json::Value> = faults
        .iter()
        .map(|f| {
            serde_json::json!({
                "kind": f.kind.name(),
                "at_ms": f.at.as_millis() as u64,
                "active_ms": f.active.as_millis() as u64,
                "recovery_ms": f.recovery.map(|d| d.as_millis() as u64),
                "note": f.note,
                "owner_before": member(f.owner_before),
                "owner_after": member(f.owner_after),
            })
        })
        .collect();
    serde_json::json!({"per_kind": kinds, "faults": list, "ownership_moves": moves(faults)})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<Duration> = (1..=10).map(Duration::from_secs).collect();
        assert_eq!(percentile(&v, 50.0), Some(Duration::from_secs(5)));
        assert_eq!(percentile(&v, 100.0), Some(Duration::from_secs(10)));
        assert_eq!(percentile(&v[..1], 50.0), Some(Duration::from_secs(1)));
        assert_eq!(percentile(&[], 50.0), None);
    }
}
