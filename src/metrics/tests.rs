//! The catalogue, a pipeline's series and how several pipelines share a registry.

use super::*;
use crate::position::FilePos;

#[test]
fn catalogue_names_follow_the_conventions() {
    let mut seen = std::collections::HashSet::new();
    for d in CATALOGUE {
        assert!(seen.insert(d.name), "{} twice", d.name);
        assert!(d.name.starts_with("sluice_"), "{}", d.name);
        match d.kind {
            Kind::Counter => assert!(d.name.ends_with("_total"), "{}", d.name),
            _ => assert!(!d.name.ends_with("_total"), "{}", d.name),
        }
        if d.unit == "seconds" || d.unit == "bytes" {
            assert!(
                d.name.contains(&format!("_{}", d.unit)) || d.name.ends_with("_offset"),
                "{} in {} should say so in its name",
                d.name,
                d.unit
            );
        }
        for l in d.labels {
            assert!(
                [
                    "pipeline",
                    "version",
                    "state",
                    "table",
                    "op",
                    "result",
                    "kind",
                    "source_id"
                ]
                .contains(l),
                "{}: label {l} is not one of the bounded ones",
                d.name
            );
        }
        assert!(d.help.len() > 20, "{} needs a real help text", d.name);
    }
}

#[test]
fn every_metric_is_labelled_with_its_pipeline() {
    for d in CATALOGUE {
        assert_eq!(
            d.labels.first(),
            Some(&PIPELINE),
            "{} lists `pipeline` first",
            d.name
        );
        assert_eq!(
            d.labels.iter().filter(|l| **l == PIPELINE).count(),
            1,
            "{}",
            d.name
        );
    }
    let md = catalogue_markdown();
    for line in md.lines().skip(2) {
        let labels = line.split(" | ").nth(3).unwrap_or_default();
        assert!(labels.starts_with("pipeline"), "{line}");
    }
}

/// The text of a registry holding only the series of `pipeline` (kept registered while rendering).
fn rendered(pipeline: &str, tables: &[&str]) -> String {
    let registry = Registry::new();
    let registration = Metrics::register(pipeline, &registry).expect("a fresh registry");
    registration
        .metrics()
        .register_tables(tables.iter().copied());
    render(&registry)
}

#[test]
fn every_catalogue_metric_is_exported_from_the_start() {
    // The process registry: the process metrics come with it.
    let registration =
        Metrics::register("exported-from-the-start", registry()).expect("a name of its own");
    registration.metrics().register_tables(["shop.orders"]);
    let text = render(registry());
    for d in CATALOGUE {
        // GTID series exist once there is a source.
        if d.labels.contains(&"source_id") {
            continue;
        }
        assert!(
            text.contains(&format!("# TYPE {} {}", d.name, d.kind.as_str())),
            "{} missing from\n{text}",
            d.name
        );
    }
    for p in PROCESS_METRICS {
        assert!(text.contains(p), "{p} missing");
    }
    let p = r#"pipeline="exported-from-the-start""#;
    assert!(text.contains(&format!(
        r#"sluice_events_written_total{{op="r",{p},table="shop.orders"}} 0"#
    )));
    assert!(text.contains(&format!(r#"sluice_pipeline_state{{{p},state="fenced"}} 0"#)));
    assert!(text.contains(&format!(
        r#"sluice_transactions_total{{{p},result="aborted"}} 0"#
    )));
    assert!(text.contains(&format!(r#"sluice_lag_seconds{{{p}}} 0"#)));
}

#[test]
fn a_table_never_snapshotted_has_its_series_at_zero() {
    let text = rendered("shop", &["shop.orders"]);
    let zero = [
        "sluice_dead_letter_records_total",
        "sluice_snapshot_rows_scanned",
        "sluice_snapshot_rows_estimated",
        "sluice_snapshot_chunks_done",
        "sluice_snapshot_chunks_expected",
        "sluice_snapshot_running",
    ];
    for name in zero {
        assert!(
            text.contains(&format!(
                r#"{name}{{pipeline="shop",table="shop.orders"}} 0"#
            )),
            "{name} of shop.orders at 0:\n{text}"
        );
    }
}

#[test]
fn registering_again_keeps_the_values() {
    let m = Metrics::new("shop");
    m.register_tables(["shop.orders"]);
    m.dead_letter.with_label_values(&["shop.orders"]).inc_by(3);
    m.snapshot_scanned
        .with_label_values(&["shop.orders"])
        .set(42);
    m.register_tables(["shop.orders"]);
    assert_eq!(m.dead_letter.with_label_values(&["shop.orders"]).get(), 3);
    assert_eq!(
        m.snapshot_scanned.with_label_values(&["shop.orders"]).get(),
        42
    );
}

#[test]
fn positions_become_numbers() {
    let m = Metrics::new("shop");
    let p = SourcePosition::MariadbGtid {
        gtid_list: "0-1-42,3-7-9".parse().expect("a MariaDB GTID list"),
        file_pos: None,
    };
    m.read_position(&p);
    assert_eq!(m.read_gtid.with_label_values(&["0"]).get(), 42);
    assert_eq!(m.read_gtid.with_label_values(&["3"]).get(), 9);
    let f =
        SourcePosition::FilePos(FilePos::new("mysql-bin.000012", 4711).expect("a file position"));
    m.read_position(&f);
    assert_eq!(m.read_file_index.get(), 12);
    assert_eq!(m.read_offset.get(), 4711);
    let g = SourcePosition::MysqlGtid {
        gtid_set: "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77"
            .parse()
            .expect("a MySQL GTID set"),
        file_pos: None,
    };
    m.resumed_from(Some(&g), 1_000);
    assert_eq!(
        m.committed_gtid
            .with_label_values(&["3e11fa47-71ca-11e1-9e33-c80aa9429562"])
            .get(),
        77
    );
    assert!(m.lag_seconds() > 1_000_000.0, "ts 1000 ms is decades ago");
}

#[test]
fn commits_count_what_was_written() {
    let m = Metrics::new("shop");
    let pos = SourcePosition::FilePos(FilePos::new("bin.000003", 120).expect("a file position"));
    let written = [
        (("shop.orders".to_string(), "c"), 3u64),
        (("shop.orders".to_string(), "d"), 1),
    ];
    let dlq = [("shop.items".to_string(), 2u64)];
    let stats = CommitStats {
        written: &written,
        dead_letters: &dlq,
        records: 6,
        bytes: 600,
        duration: Duration::from_millis(12),
        position: &pos,
        source_ts_ms: crate::model::clock::now_ms() - 2_000,
        snapshot: None,
    };
    m.committed(&stats);
    m.committed(&stats);
    m.aborted();
    assert_eq!(
        m.events_written
            .with_label_values(&["shop.orders", "c"])
            .get(),
        6
    );
    assert_eq!(m.dead_letter.with_label_values(&["shop.items"]).get(), 4);
    assert_eq!(m.written_bytes.get(), 1200);
    assert_eq!(m.transactions.with_label_values(&["committed"]).get(), 2);
    assert_eq!(m.transactions.with_label_values(&["aborted"]).get(), 1);
    assert_eq!(m.commit_duration.get_sample_count(), 2);
    assert_eq!(m.transaction_events.get_sample_sum(), 12.0);
    assert_eq!(m.committed_file_index.get(), 3);
    let lag = m.lag_seconds();
    assert!((1.9..10.0).contains(&lag), "lag {lag}");
    let s = m.status();
    assert_eq!(s.committed_position.as_deref(), Some("file:bin.000003:120"));
}

#[test]
fn states_are_exclusive() {
    let m = Metrics::new("shop");
    m.set_state("paused");
    m.set_state("streaming");
    let on: Vec<_> = STATES
        .iter()
        .filter(|s| m.pipeline_state.with_label_values(&[s]).get() == 1)
        .collect();
    assert_eq!(on, vec![&"streaming"]);
    assert_eq!(m.state(), "streaming");
}

#[test]
fn the_markdown_catalogue_lists_every_metric() {
    let md = catalogue_markdown();
    for d in CATALOGUE {
        assert!(md.contains(&format!("`{}`", d.name)));
    }
}

#[test]
fn two_pipelines_render_side_by_side() {
    let registry = Registry::new();
    let orders = Metrics::register("orders", &registry).expect("first");
    let billing = Metrics::register("billing", &registry).expect("second");
    orders.metrics().register_tables(["shop.orders"]);
    billing.metrics().register_tables(["pay.invoices"]);
    orders.metrics().set_state("streaming");
    billing.metrics().set_state("paused");
    orders.metrics().reconnect();
    let text = render(&registry);
    for want in [
        r#"sluice_pipeline_state{pipeline="orders",state="streaming"} 1"#,
        r#"sluice_pipeline_state{pipeline="billing",state="paused"} 1"#,
        r#"sluice_pipeline_state{pipeline="billing",state="streaming"} 0"#,
        r#"sluice_reconnects_total{pipeline="orders"} 1"#,
        r#"sluice_reconnects_total{pipeline="billing"} 0"#,
        r#"sluice_events_read_total{op="c",pipeline="orders",table="shop.orders"} 0"#,
        r#"sluice_events_read_total{op="c",pipeline="billing",table="pay.invoices"} 0"#,
    ] {
        assert!(text.contains(want), "{want} in\n{text}");
    }
    // One family per metric, one series of each pipeline in it.
    for d in CATALOGUE {
        if d.labels.contains(&"source_id") {
            continue;
        }
        let head = format!("# TYPE {} {}", d.name, d.kind.as_str());
        assert_eq!(text.matches(&head).count(), 1, "{head}");
    }
    assert_eq!(text.matches("sluice_written_bytes_total{").count(), 2);
    // Every sluice series names its pipeline.
    for line in text.lines().filter(|l| l.starts_with("sluice_")) {
        assert!(
            line.contains(r#"pipeline="orders""#) || line.contains(r#"pipeline="billing""#),
            "{line}"
        );
    }
    // The same name twice is refused, and leaves the registry as it was.
    let again = Metrics::register("orders", &registry);
    assert!(again.is_err());
    assert_eq!(render(&registry), text);
}

#[test]
fn unregistering_a_pipeline_removes_its_series_only() {
    let registry = Registry::new();
    let kept = Metrics::register("kept", &registry).expect("first");
    let removed = Metrics::register("removed", &registry).expect("second");
    kept.metrics().register_tables(["shop.orders"]);
    removed.metrics().register_tables(["shop.orders"]);
    let handle = removed.metrics().clone();
    drop(removed);
    // A handle still held (a task not ended yet) counts into nothing rendered.
    handle.reconnect();
    let text = render(&registry);
    assert!(!text.contains(r#"pipeline="removed""#), "{text}");
    assert!(
        text.contains(r#"sluice_reconnects_total{pipeline="kept"} 0"#),
        "{text}"
    );
    assert!(
        text.contains(r#"sluice_snapshot_running{pipeline="kept",table="shop.orders"} 0"#),
        "{text}"
    );
    // The name is free again: a pipeline of that name starts afresh.
    let back = Metrics::register("removed", &registry).expect("registered again");
    let text = render(&registry);
    assert!(
        text.contains(r#"sluice_reconnects_total{pipeline="removed"} 0"#),
        "{text}"
    );
    drop(back);
    drop(kept);
    assert!(!render(&registry).contains("sluice_"));
}

#[test]
fn the_lag_is_computed_when_rendered() {
    let registry = Registry::new();
    let registration = Metrics::register("lagging", &registry).expect("fresh");
    let ten_s_ago = crate::model::clock::now_ms() - 10_000;
    registration.metrics().resumed_from(None, ten_s_ago);
    let text = render(&registry);
    let lag: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix(r#"sluice_lag_seconds{pipeline="lagging"} "#))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no lag in\n{text}"));
    assert!((10.0..60.0).contains(&lag), "lag {lag}");
}

mod readme {
    /// The README's metric catalogue is this module's, between its markers.
    #[test]
    fn readme_lists_the_catalogue() {
        let readme = include_str!("../../README.md");
        let begin = "<!-- metrics:begin (generated from src/metrics/catalogue.rs CATALOGUE) -->\n";
        let end = "<!-- metrics:end -->";
        let want = super::catalogue_markdown();
        let got = readme
            .split_once(begin)
            .and_then(|(_, rest)| rest.split_once(end))
            .map(|(table, _)| table);
        if let Ok(path) = std::env::var("SLUICE_WRITE_CATALOGUE") {
            std::fs::write(path, &want).expect("write the catalogue");
        }
        assert_eq!(
            got,
            Some(want.as_str()),
            "README.md's metric catalogue (between {begin:?} and {end:?}) is not CATALOGUE's; \
             run with SLUICE_WRITE_CATALOGUE=<file> to get the table"
        );
    }
}
