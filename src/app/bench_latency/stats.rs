//! The pure measures of `sluice bench-latency`: the id in a record key, the lag's slope and
//! whether it is bounded, and the latency percentiles as milliseconds. No clock, no I/O.

use hdrhistogram::Histogram;
use serde::Serialize;

/// The share of the rate the lag's slope may reach and still count as bounded (1%).
///
/// The lag (rows committed at the source and not yet received) is sampled once a second, and
/// between two samples it moves by up to one commit interval's rows: with the default
/// `commit.max_ms = 100`, a tenth of the rate. Least squares over the minute of samples a full
/// run has bring such a bounded jitter's slope to well under 0.1% of the rate, so a 1%
/// tolerance does not flag a pipeline that keeps up, while a pipeline that falls behind by 1%
/// of the rate (36,000 rows an hour at 10,000 rows/s) is flagged. Over a few seconds, as in
/// the tests, the slope is noisy and `bounded` tells little.
pub const SLOPE_TOLERANCE: f64 = 0.01;

/// The seconds of lag samples the slope is fitted over: the last minute.
pub const SLOPE_WINDOW_S: f64 = 60.0;

/// What a record key told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyId {
    /// The id, a whole number from 0 to 2^64 − 1.
    Id(u64),
    /// No key, not JSON, no such field, or not a whole number.
    Unparsed,
}

/// The id in a record key: the field `field` of a JSON object (`{"id":5}`, sluice's JSON keys),
/// or of its `payload` object when the key is a Kafka Connect envelope
/// (`{"schema":{…},"payload":{"id":5}}`, Debezium's JSON keys with schemas). Anything else is
/// [`KeyId::Unparsed`]; keys come from the topic and may hold anything.
pub fn key_id(key: Option<&[u8]>, field: &str) -> KeyId {
    let Some(key) = key else {
        return KeyId::Unparsed;
    };
    let Ok(serde_json::Value::Object(obj)) = serde_json::from_slice::<serde_json::Value>(key)
    else {
        return KeyId::Unparsed;
    };
    let value = match (obj.get("schema"), obj.get("payload")) {
        (Some(_), Some(serde_json::Value::Object(payload))) => payload.get(field),
        _ => obj.get(field),
    };
    match value.and_then(serde_json::Value::as_u64) {
        Some(id) => KeyId::Id(id),
        None => KeyId::Unparsed,
    }
}

/// The least-squares slope of `samples` (seconds, value): value units per second. `None` with
/// fewer than two samples or when they all share one time.
pub fn slope(samples: &[(f64, f64)]) -> Option<f64> {
    if samples.len() < 2 {
        return None;
    }
    let n = samples.len() as f64;
    let mean_t = samples.iter().map(|s| s.0).sum::<f64>() / n;
    let mean_v = samples.iter().map(|s| s.1).sum::<f64>() / n;
    let (mut cov, mut var) = (0.0, 0.0);
    for (t, v) in samples {
        cov += (t - mean_t) * (v - mean_v);
        var += (t - mean_t) * (t - mean_t);
    }
    (var > 0.0 && cov.is_finite()).then(|| cov / var)
}

/// The samples of the last [`SLOPE_WINDOW_S`] seconds before the last one.
pub fn last_window(samples: &[(f64, f64)]) -> &[(f64, f64)] {
    let Some(&(last, _)) = samples.last() else {
        return samples;
    };
    let from = samples.partition_point(|s| s.0 < last - SLOPE_WINDOW_S);
    &samples[from..]
}

/// Whether a lag growing by `slope` rows per second is bounded at `rate` rows per second: the
/// slope is at most [`SLOPE_TOLERANCE`] of the rate.
pub fn bounded(slope: f64, rate: f64) -> bool {
    slope <= SLOPE_TOLERANCE * rate
}

/// Microseconds as milliseconds, to the microsecond.
pub fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// The latency figures of a histogram of microseconds, in milliseconds; all `None` when it is
/// empty.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Percentiles {
    /// The median.
    pub p50_ms: Option<f64>,
    /// The 99th percentile.
    pub p99_ms: Option<f64>,
    /// The 99.9th percentile.
    pub p999_ms: Option<f64>,
    /// The largest latency (to the histogram's precision, like the percentiles).
    pub max_ms: Option<f64>,
    /// The mean.
    pub mean_ms: Option<f64>,
}

impl Percentiles {
    /// The figures of `hist`. Each percentile is the highest value of its bucket (0.1%
    /// precision), as is the maximum, so p50 ≤ p99 ≤ p99.9 ≤ max.
    pub fn of(hist: &Histogram<u64>) -> Percentiles {
        if hist.is_empty() {
            return Percentiles {
                p50_ms: None,
                p99_ms: None,
                p999_ms: None,
                max_ms: None,
                mean_ms: None,
            };
        }
        let max = hist.max();
        let at = |q: f64| Some(ms(hist.value_at_quantile(q).min(max)));
        Percentiles {
            p50_ms: at(0.5),
            p99_ms: at(0.99),
            p999_ms: at(0.999),
            max_ms: Some(ms(max)),
            mean_ms: Some(hist.mean().round() / 1000.0),
        }
    }
}

/// A histogram of latencies in microseconds: 1 µs to one hour, three significant digits.
pub fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3)
        .expect("low ≥ 1, high ≥ 2 × low and 3 digits are valid bounds")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ids_come_from_plain_keys_and_connect_envelopes() {
        let id = |k: &str| key_id(Some(k.as_bytes()), "id");
        assert_eq!(id(r#"{"id":5}"#), KeyId::Id(5));
        assert_eq!(id(r#"{"id":18446744073709551615}"#), KeyId::Id(u64::MAX));
        assert_eq!(
            id(r#"{"schema":{"type":"struct","fields":[]},"payload":{"id":7}}"#),
            KeyId::Id(7)
        );
        assert_eq!(
            key_id(Some(br#"{"pk":9,"id":1}"#), "pk"),
            KeyId::Id(9),
            "another field"
        );
        // A payload without a schema is a plain key with a field named payload.
        assert_eq!(id(r#"{"payload":{"id":7}}"#), KeyId::Unparsed);
        assert_eq!(id(r#"{"payload":{"id":7},"id":3}"#), KeyId::Id(3));
        for bad in [
            "",
            "null",
            "5",
            "[1]",
            "{",
            r#"{"id":-1}"#,
            r#"{"id":1.5}"#,
            r#"{"id":"5"}"#,
            r#"{"ID":5}"#,
            r#"{"schema":{},"payload":null}"#,
            r#"{"schema":{},"payload":{}}"#,
            r#"{"id":18446744073709551616}"#,
            "\u{0}\u{ff}",
        ] {
            assert_eq!(id(bad), KeyId::Unparsed, "{bad:?}");
        }
        assert_eq!(key_id(None, "id"), KeyId::Unparsed);
        assert_eq!(key_id(Some(&[0xff, 0xfe, b'{']), "id"), KeyId::Unparsed);
    }

    #[test]
    fn the_slope_of_known_lines() {
        assert_eq!(slope(&[]), None);
        assert_eq!(slope(&[(1.0, 5.0)]), None);
        assert_eq!(slope(&[(1.0, 5.0), (1.0, 6.0)]), None);
        assert_eq!(slope(&[(0.0, 0.0), (1.0, 2.0)]), Some(2.0));
        let flat: Vec<(f64, f64)> = (0..60).map(|t| (t as f64, 100.0)).collect();
        assert_eq!(slope(&flat), Some(0.0));
        // A sawtooth lag (commits every few samples) has a slope near 0.
        let saw: Vec<(f64, f64)> = (0..60)
            .map(|t| (t as f64, if t % 3 == 0 { 0.0 } else { 1000.0 }))
            .collect();
        assert!(slope(&saw).unwrap().abs() < 10.0);
    }

    #[test]
    fn the_window_is_the_last_minute() {
        let s: Vec<(f64, f64)> = (1..=100).map(|t| (t as f64, 0.0)).collect();
        let w = last_window(&s);
        assert_eq!((w[0].0, w.len()), (40.0, 61));
        assert_eq!(last_window(&s[..10]).len(), 10);
        assert!(last_window(&[]).is_empty());
    }

    #[test]
    fn a_lag_is_bounded_up_to_one_percent_of_the_rate() {
        assert!(bounded(-50.0, 1000.0));
        assert!(bounded(0.0, 1000.0));
        assert!(bounded(10.0, 1000.0));
        assert!(!bounded(10.5, 1000.0));
        assert!(!bounded(f64::NAN.max(1.0), 0.0));
    }

    #[test]
    fn percentiles_in_milliseconds() {
        let mut h = latency_histogram();
        assert_eq!(Percentiles::of(&h).p50_ms, None);
        for us in 1..=1000u64 {
            h.saturating_record(us * 1000);
        }
        let p = Percentiles::of(&h);
        let (p50, p99, p999, max) = (
            p.p50_ms.unwrap(),
            p.p99_ms.unwrap(),
            p.p999_ms.unwrap(),
            p.max_ms.unwrap(),
        );
        assert!((p50 - 500.0).abs() <= 0.5, "{p:?}");
        assert!((p99 - 990.0).abs() <= 1.0, "{p:?}");
        assert!((p999 - 999.0).abs() <= 1.0, "{p:?}");
        assert!((max - 1000.0).abs() <= 1.0, "{p:?}");
        assert!(p50 <= p99 && p99 <= p999 && p999 <= max);
        assert!((p.mean_ms.unwrap() - 500.5).abs() <= 0.5, "{p:?}");
        // Beyond an hour: kept at the top, not lost.
        h.saturating_record(u64::MAX);
        assert_eq!(h.len(), 1001);
        assert_eq!(ms(1234), 1.234);
    }

    proptest! {
        /// The slope of points on a line, however spaced, is the line's slope.
        #[test]
        fn a_line_has_its_slope(
            a in -1e6f64..1e6,
            b in -1e3f64..1e3,
            ts in proptest::collection::btree_set(0u32..10_000, 2..200),
        ) {
            let samples: Vec<(f64, f64)> =
                ts.iter().map(|&t| (t as f64, a + b * t as f64)).collect();
            let s = slope(&samples).unwrap();
            prop_assert!((s - b).abs() <= 1e-6 * (1.0 + b.abs() + a.abs() / 1e3), "{} vs {}", s, b);
        }

        /// Whatever the key bytes, parsing returns (no panic); a plain key and its Connect
        /// envelope give back the id they were written with.
        #[test]
        fn keys_round_trip_and_garbage_is_unparsed(
            id in any::<u64>(),
            junk in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let _ = key_id(Some(&junk), "id");
            let plain = format!("{{\"id\":{id}}}");
            prop_assert_eq!(key_id(Some(plain.as_bytes()), "id"), KeyId::Id(id));
            let env = format!(
                "{{\"schema\":{{\"type\":\"struct\",\"optional\":false}},\"payload\":{plain}}}"
            );
            prop_assert_eq!(key_id(Some(env.as_bytes()), "id"), KeyId::Id(id));
        }

        /// Percentiles are ordered and within the recorded range.
        #[test]
        fn percentiles_are_ordered(values in proptest::collection::vec(0u64..10_000_000, 1..500)) {
            let mut h = latency_histogram();
            for v in &values {
                h.saturating_record(*v);
            }
            let p = Percentiles::of(&h);
            let (p50, p99, p999, max) =
                (p.p50_ms.unwrap(), p.p99_ms.unwrap(), p.p999_ms.unwrap(), p.max_ms.unwrap());
            prop_assert!(p50 <= p99 && p99 <= p999 && p999 <= max);
            let top = *values.iter().max().unwrap();
            prop_assert!(max >= ms(top) && max <= ms(top) * 1.001 + 0.001);
        }
    }
}
