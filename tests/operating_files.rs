//! The operating files, checked without running them: the Grafana dashboard and its
//! provisioning (`grafana/`), the Prometheus alert rules (`grafana/alerts/`), and the compose
//! stack (`compose/`, `Dockerfile`).
//!
//! - Every metric an expression or a description names is in [`CATALOGUE`], label names fit
//!   the metric, counters are only read through `rate`/`increase`, and the dashboard shows
//!   every metric of the catalogue.
//! - Every sluice series carries `pipeline`: the dashboard filters by a `$pipeline` variable
//!   and breaks down per target by pipeline too; the alerts keep the label and name it.
//! - Every dashboard panel (rows' nested panels included) queries the provisioned Prometheus
//!   datasource by its uid, and every expression parses (promtool, as recording rules); no two
//!   panels overlap.
//! - `promtool check rules` and the rules' unit tests (`promtool test rules`) pass.
//! - The compose file parses; every file it mounts or builds from exists; the sluice service's
//!   environment names are settings sluice knows; `compose/sluice.toml` loads with sluice's own
//!   configuration loader and that environment; ports, host names and paths agree between
//!   the services, Prometheus and Grafana.
//!
//! Needs no service, only promtool, which `./scripts/services up` unpacks into the download
//! cache (`scripts/lib/promtool` runs it).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// What kind of series a metric is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// One metric of sluice's `GET /metrics`.
struct Metric {
    name: &'static str,
    kind: Kind,
    labels: &'static [&'static str],
}

const fn m(name: &'static str, kind: Kind, labels: &'static [&'static str]) -> Metric {
    Metric { name, kind, labels }
}

/// The label of the cluster metrics.
const CLUSTER_LABELS: &[&str] = &[sluice::metrics::PIPELINE];

/// The metric catalogue of `GET /metrics`: sluice's own per pipeline
/// (`sluice::metrics::CATALOGUE`, the one place each metric is declared), the standard process
/// metrics, and cluster mode's (`sluice::cluster::metrics::CLUSTER_METRICS`, one series per
/// configured pipeline, exported only in cluster mode). That sluice exports them is checked by
/// the metrics integration test (tests/metrics.rs) and, for the cluster ones, by the unit test
/// of `src/cluster/metrics.rs` and tests/cluster.rs.
static CATALOGUE: LazyLock<Vec<Metric>> = LazyLock::new(|| {
    let mut out: Vec<Metric> = sluice::metrics::CATALOGUE
        .iter()
        .map(|d| {
            let kind = match d.kind {
                sluice::metrics::Kind::Counter => Kind::Counter,
                sluice::metrics::Kind::Gauge => Kind::Gauge,
                sluice::metrics::Kind::Histogram => Kind::Histogram,
            };
            m(d.name, kind, d.labels)
        })
        .collect();
    for name in sluice::metrics::PROCESS_METRICS {
        let kind = if name.ends_with("_total") {
            Kind::Counter
        } else {
            Kind::Gauge
        };
        out.push(m(name, kind, &[]));
    }
    for (name, kind, _) in sluice::cluster::metrics::CLUSTER_METRICS {
        let kind = match *kind {
            "counter" => Kind::Counter,
            "gauge" => Kind::Gauge,
            other => panic!("cluster metric {name}: unexpected kind {other}"),
        };
        out.push(m(name, kind, CLUSTER_LABELS));
    }
    out
});

/// Labels Prometheus adds to every scraped series.
const TARGET_LABELS: &[&str] = &["job", "instance"];

/// The alerts the rules must define.
const REQUIRED_ALERTS: &[&str] = &[
    "SluiceDown",
    "SluiceLagHigh",
    "SluiceBinlogRetentionLow",
    "SluiceTransactionsAborting",
    "SluiceStopped",
    "SluicePipelineUnassigned",
    "SluicePipelineAssignedTwice",
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    let path = repo().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// A YAML document as JSON (keys as strings), for uniform access.
fn yaml(rel: &str) -> Value {
    let docs = yaml_rust2::YamlLoader::load_from_str(&read(rel))
        .unwrap_or_else(|e| panic!("{rel} is not valid YAML: {e}"));
    assert_eq!(docs.len(), 1, "{rel}: expected one YAML document");
    to_json(&docs[0], rel)
}

fn to_json(y: &yaml_rust2::Yaml, rel: &str) -> Value {
    use yaml_rust2::Yaml;
    match y {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Integer(i) => Value::from(*i),
        Yaml::Real(r) => Value::from(r.parse::<f64>().unwrap_or(f64::NAN)),
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Array(a) => Value::Array(a.iter().map(|v| to_json(v, rel)).collect()),
        Yaml::Hash(h) => Value::Object(
            h.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Yaml::String(s) => s.clone(),
                        Yaml::Integer(i) => i.to_string(),
                        Yaml::Boolean(b) => b.to_string(),
                        other => panic!("{rel}: unexpected mapping key {other:?}"),
                    };
                    (key, to_json(v, rel))
                })
                .collect(),
        ),
        Yaml::Alias(_) | Yaml::BadValue => panic!("{rel}: unsupported YAML node {y:?}"),
    }
}

fn str_at<'a>(v: &'a Value, pointer: &str, what: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{what}: no string at {pointer}"))
}

fn catalogue(name: &str) -> Option<&'static Metric> {
    CATALOGUE.iter().find(|m| m.name == name)
}

fn metric_re() -> Regex {
    Regex::new(r"\b(?:sluice|process)_[a-z_]+\b").unwrap()
}

/// The catalogue metric a series name belongs to (`_bucket`, `_sum`, `_count` of a histogram
/// belong to the histogram), or `None`.
fn metric_of(series: &str) -> Option<&'static Metric> {
    if let Some(m) = catalogue(series) {
        return Some(m);
    }
    ["_bucket", "_sum", "_count"].iter().find_map(|suffix| {
        series
            .strip_suffix(suffix)
            .and_then(catalogue)
            .filter(|m| m.kind == Kind::Histogram)
    })
}

/// Every metric name in `text` (expressions, descriptions) must be in the catalogue; returns
/// the catalogue metrics named.
fn names_in(text: &str, place: &str) -> BTreeSet<&'static str> {
    metric_re()
        .find_iter(text)
        .map(|hit| {
            metric_of(hit.as_str())
                .unwrap_or_else(|| {
                    panic!(
                        "{place}: `{}` is not in the metric catalogue (CATALOGUE; src/metrics/catalogue.rs, or CLUSTER_METRICS; src/cluster/metrics.rs)",
                        hit.as_str()
                    )
                })
                .name
        })
        .collect()
}

/// Label names of a `{...}` matcher list (values may contain anything within quotes).
fn matcher_labels(inner: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut name = String::new();
    let (mut in_value, mut in_quote, mut escaped) = (false, false, false);
    for c in inner.chars() {
        if in_quote {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_quote = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_quote = true,
            ',' => {
                in_value = false;
                name.clear();
            }
            '=' | '!' | '~' if !in_value => {
                in_value = true;
                out.push(name.trim().to_string());
            }
            _ if !in_value => name.push(c),
            _ => {}
        }
    }
    out
}

/// Checks the PromQL expression `expr` (and the label names of its legend, if any) against the
/// catalogue: metric names, labels in selectors and in `by`/`without`/`on`/`ignoring`
/// clauses, counters only under `rate`/`increase`. Returns the catalogue metrics it uses.
fn check_expr(expr: &str, legend: Option<&str>, place: &str) -> BTreeSet<&'static str> {
    let mut used = BTreeSet::new();
    let mut allowed: BTreeSet<&str> = TARGET_LABELS.iter().copied().collect();
    for hit in metric_re().find_iter(expr) {
        let series = hit.as_str();
        let metric = metric_of(series).unwrap_or_else(|| {
            panic!("{place}: `{series}` in `{expr}` is not in the metric catalogue (CATALOGUE, CLUSTER_METRICS)")
        });
        used.insert(metric.name);
        allowed.extend(metric.labels.iter().copied());
        let bucket = metric.kind == Kind::Histogram && series.ends_with("_bucket");
        if bucket {
            allowed.insert("le");
        }
        if metric.kind == Kind::Counter {
            let before = expr[..hit.start()].trim_end();
            assert!(
                before.ends_with("rate(") || before.ends_with("increase("),
                "{place}: counter {series} must be read through rate() or increase(): `{expr}`"
            );
        }
        if let Some(rest) = expr[hit.end()..].strip_prefix('{') {
            let inner = &rest[..rest
                .find('}')
                .unwrap_or_else(|| panic!("{place}: unclosed selector in `{expr}`"))];
            for label in matcher_labels(inner) {
                assert!(
                    TARGET_LABELS.contains(&label.as_str())
                        || metric.labels.contains(&label.as_str())
                        || (bucket && label == "le"),
                    "{place}: {series} has no label `{label}` (catalogue labels: {:?}): `{expr}`",
                    metric.labels
                );
            }
        }
    }
    let grouping = Regex::new(r"\b(?:by|without|on|ignoring)\s*\(([^)]*)\)").unwrap();
    for caps in grouping.captures_iter(expr) {
        for label in caps[1].split(',').map(str::trim).filter(|l| !l.is_empty()) {
            assert!(
                allowed.contains(label),
                "{place}: grouping label `{label}` belongs to none of the metrics of `{expr}`"
            );
        }
    }
    if let Some(legend) = legend {
        let template = Regex::new(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}").unwrap();
        for caps in template.captures_iter(legend) {
            assert!(
                allowed.contains(&caps[1]),
                "{place}: legend `{legend}` names label `{}`, which `{expr}` does not have",
                &caps[1]
            );
        }
    }
    used
}

/// Runs `scripts/lib/promtool ARGS` in `dir`; panics with its output unless it succeeds.
fn promtool(args: &[&str], dir: &Path) -> String {
    let wrapper = repo().join("scripts/lib/promtool");
    let out = Command::new(&wrapper)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", wrapper.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(127) {
        panic!(
            "promtool is not installed: run ./scripts/services up (it unpacks Debian's \
             prometheus package into the download cache)\n{stderr}"
        );
    }
    assert!(
        out.status.success(),
        "promtool {} failed ({}):\n{stdout}\n{stderr}",
        args.join(" "),
        out.status
    );
    format!("{stdout}{stderr}")
}

// ---------------------------------------------------------------------------------------
// Grafana

/// The uid of the provisioned Prometheus datasource.
fn datasource_uid() -> String {
    let ds = yaml("grafana/provisioning/datasources/prometheus.yml");
    let list = ds["datasources"].as_array().expect("datasources list");
    assert_eq!(list.len(), 1, "one provisioned datasource");
    assert_eq!(str_at(&list[0], "/type", "datasource"), "prometheus");
    str_at(&list[0], "/uid", "datasource").to_string()
}

/// Every panel, rows' nested panels included.
fn all_panels(panels: &[Value]) -> Vec<&Value> {
    let mut out = Vec::new();
    for p in panels {
        out.push(p);
        if let Some(nested) = p.get("panels").and_then(Value::as_array) {
            out.extend(all_panels(nested));
        }
    }
    out
}

fn dashboard() -> Value {
    serde_json::from_str(&read("grafana/dashboards/sluice.json"))
        .expect("grafana/dashboards/sluice.json is not valid JSON")
}

fn assert_datasource(ds: &Value, uid: &str, place: &str) {
    assert_eq!(
        ds.get("type").and_then(Value::as_str),
        Some("prometheus"),
        "{place}: datasource type must be prometheus: {ds}"
    );
    assert_eq!(
        ds.get("uid").and_then(Value::as_str),
        Some(uid),
        "{place}: datasource must be the provisioned one (uid {uid}): {ds}"
    );
}

/// The dashboard's expressions with `$variables` replaced so that promtool can parse them.
fn concrete(expr: &str) -> String {
    expr.replace("$__rate_interval", "1m")
        .replace("$__interval", "1m")
        .replace("$job", "sluice")
        .replace("$instance", ".*")
        .replace("$pipeline", ".*")
}

/// Every selector of a sluice metric in `expr` (the `{...}` after its name), for the checks of
/// the `pipeline` label.
fn sluice_selectors(expr: &str) -> Vec<(&str, &str)> {
    let re = Regex::new(r"\b(sluice_[a-z_]+)\{([^}]*)\}").unwrap();
    re.captures_iter(expr)
        .map(|c| {
            let (name, inner) = (c.get(1).unwrap(), c.get(2).unwrap());
            (name.as_str(), inner.as_str())
        })
        .collect()
}

/// The label lists of the `by`/`on` clauses of `expr`.
fn groupings(expr: &str) -> Vec<Vec<String>> {
    let re = Regex::new(r"\b(?:by|on)\s*\(([^)]*)\)").unwrap();
    re.captures_iter(expr)
        .map(|c| c[1].split(',').map(|l| l.trim().to_string()).collect())
        .collect()
}

#[test]
fn dashboard_panels_query_the_provisioned_datasource() {
    let uid = datasource_uid();
    let d = dashboard();
    assert!(
        d["schemaVersion"].as_i64().unwrap_or(0) >= 36,
        "schemaVersion {} is older than Grafana 9",
        d["schemaVersion"]
    );
    assert!(!str_at(&d, "/uid", "dashboard").is_empty(), "dashboard uid");
    let panels = all_panels(d["panels"].as_array().expect("panels"));
    let mut ids = BTreeSet::new();
    let mut queried = 0;
    for p in &panels {
        let title = p["title"].as_str().unwrap_or("?");
        let place = format!("panel {:?} ({})", title, p["id"]);
        assert!(
            ids.insert(p["id"].as_i64().expect("panel id")),
            "{place}: duplicate id"
        );
        assert!(p.get("gridPos").is_some(), "{place}: no gridPos");
        if p["type"] == "row" {
            continue;
        }
        assert_datasource(&p["datasource"], &uid, &place);
        let targets = p["targets"].as_array().filter(|t| !t.is_empty());
        let targets = targets.unwrap_or_else(|| panic!("{place}: no targets"));
        let mut refs = BTreeSet::new();
        for t in targets {
            assert_datasource(&t["datasource"], &uid, &format!("{place} target"));
            assert!(
                refs.insert(str_at(t, "/refId", &place)),
                "{place}: duplicate refId"
            );
            assert!(
                !str_at(t, "/expr", &place).trim().is_empty(),
                "{place}: empty expr"
            );
        }
        queried += 1;
    }
    assert!(queried >= 20, "only {queried} panels with queries");
    // Rows: at least one collapsed row keeps its panels nested, and they were checked above.
    assert!(
        panels.iter().any(|p| p["type"] == "row"
            && p["collapsed"] == true
            && p["panels"].as_array().is_some_and(|a| !a.is_empty())),
        "expected a collapsed row with nested panels"
    );
    for v in d["templating"]["list"].as_array().expect("templating list") {
        if v["type"] == "query" {
            assert_datasource(&v["datasource"], &uid, &format!("variable {}", v["name"]));
            check_expr(
                str_at(v, "/definition", "variable"),
                None,
                &format!("variable {}", v["name"]),
            );
        }
    }
}

/// `(x, y, w, h)` of a panel.
fn grid(p: &Value, place: &str) -> (i64, i64, i64, i64) {
    let at = |k: &str| {
        p["gridPos"][k]
            .as_i64()
            .unwrap_or_else(|| panic!("{place}: gridPos.{k}"))
    };
    (at("x"), at("y"), at("w"), at("h"))
}

/// No two of `panels` share a cell, and each fits the 24 columns.
fn assert_no_overlap(panels: &[&Value], what: &str) {
    let boxes: Vec<(String, (i64, i64, i64, i64))> = panels
        .iter()
        .map(|p| {
            let place = format!(
                "{what}: panel {:?} ({})",
                p["title"].as_str().unwrap_or("?"),
                p["id"]
            );
            let g = grid(p, &place);
            (place, g)
        })
        .collect();
    for (i, (a, (x, y, w, h))) in boxes.iter().enumerate() {
        assert!(
            *x >= 0 && *y >= 0 && *w > 0 && *h > 0 && x + w <= 24,
            "{a}: gridPos {:?} does not fit the 24 columns",
            (x, y, w, h)
        );
        for (b, (x2, y2, w2, h2)) in &boxes[i + 1..] {
            let apart = x + w <= *x2 || x2 + w2 <= *x || y + h <= *y2 || y2 + h2 <= *y;
            assert!(apart, "{a} overlaps {b}");
        }
    }
}

/// The layout: the top-level panels (a collapsed row one unit high, its panels not laid out)
/// do not overlap, nor do the panels of each collapsed row, which lie below it.
#[test]
fn dashboard_panels_do_not_overlap() {
    let d = dashboard();
    let top: Vec<&Value> = d["panels"].as_array().expect("panels").iter().collect();
    assert_no_overlap(&top, "dashboard");
    for row in top.iter().filter(|p| p["type"] == "row") {
        let title = row["title"].as_str().unwrap_or("?");
        let (_, row_y, _, _) = grid(row, title);
        let nested: Vec<&Value> = row["panels"].as_array().into_iter().flatten().collect();
        assert_no_overlap(&nested, &format!("row {title:?}"));
        for p in nested {
            assert!(
                grid(p, title).1 > row_y,
                "row {title:?}: panel {:?} lies above its row",
                p["title"]
            );
        }
    }
}

#[test]
fn dashboard_uses_the_catalogue_and_shows_all_of_it() {
    let d = dashboard();
    let mut used = BTreeSet::new();
    for p in all_panels(d["panels"].as_array().expect("panels")) {
        let place = format!("panel {:?}", p["title"].as_str().unwrap_or("?"));
        for field in ["title", "description"] {
            used.extend(names_in(p[field].as_str().unwrap_or(""), &place));
        }
        for t in p["targets"].as_array().into_iter().flatten() {
            let legend = t["legendFormat"].as_str();
            used.extend(check_expr(str_at(t, "/expr", &place), legend, &place));
        }
    }
    let missing: Vec<_> = CATALOGUE
        .iter()
        .map(|m| m.name)
        .filter(|n| !used.contains(n))
        .collect();
    assert!(
        missing.is_empty(),
        "metrics of the catalogue that no dashboard panel shows: {missing:?}"
    );
}

/// Every sluice series carries `pipeline`: the dashboard filters each selector by the
/// `$pipeline` variable, and a `by`/`on` clause over sluice metrics that keeps `instance` (a
/// per-target breakdown or match) keeps `pipeline` too, so two pipelines of one process never
/// merge or collide.
#[test]
fn dashboard_selects_and_breaks_down_by_pipeline() {
    let d = dashboard();
    let names: Vec<&str> = d["templating"]["list"]
        .as_array()
        .expect("templating list")
        .iter()
        .filter_map(|v| v["name"].as_str())
        .collect();
    assert!(
        names.contains(&"pipeline"),
        "no variable pipeline: {names:?}"
    );
    for p in all_panels(d["panels"].as_array().expect("panels")) {
        let place = format!("panel {:?}", p["title"].as_str().unwrap_or("?"));
        for t in p["targets"].as_array().into_iter().flatten() {
            let expr = str_at(t, "/expr", &place);
            for (name, inner) in sluice_selectors(expr) {
                assert!(
                    inner.contains(r#"pipeline=~"$pipeline""#),
                    "{place}: {name} is not filtered by pipeline=~\"$pipeline\": `{expr}`"
                );
            }
            if sluice_selectors(expr).is_empty() {
                continue;
            }
            for labels in groupings(expr) {
                if labels.iter().any(|l| l == "instance") {
                    assert!(
                        labels.iter().any(|l| l == "pipeline"),
                        "{place}: a breakdown by instance keeps pipeline: `{expr}`"
                    );
                }
            }
        }
    }
}

#[test]
fn dashboard_expressions_parse() {
    let d = dashboard();
    let mut rules = Vec::new();
    for p in all_panels(d["panels"].as_array().expect("panels")) {
        for t in p["targets"].as_array().into_iter().flatten() {
            rules.push(serde_json::json!({
                "record": format!("dashboard:panel_{}_{}", p["id"], str_at(t, "/refId", "target")),
                "expr": concrete(str_at(t, "/expr", "target")),
            }));
        }
    }
    // JSON is YAML: promtool parses every expression as a recording rule.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("dashboard.rules.yml");
    let doc = serde_json::json!({"groups": [{"name": "dashboard", "rules": rules}]});
    std::fs::write(&file, doc.to_string()).expect("write rules");
    let out = promtool(&["check", "rules", file.to_str().unwrap()], dir.path());
    assert!(
        out.contains(&format!("{} rules found", rules.len())),
        "promtool: {out}"
    );
}

#[test]
fn dashboard_provisioning_points_at_the_dashboards() {
    let prov = yaml("grafana/provisioning/dashboards/sluice.yml");
    let providers = prov["providers"].as_array().expect("providers");
    assert_eq!(providers.len(), 1);
    assert_eq!(str_at(&providers[0], "/type", "provider"), "file");
    let path = str_at(&providers[0], "/options/path", "provider");
    // The compose stack mounts grafana/dashboards there.
    let compose = Compose::load();
    assert_eq!(
        compose.mount_source("grafana", path),
        Some(repo().join("grafana/dashboards")),
        "the dashboards provider reads {path}, which must be where grafana/dashboards is mounted"
    );
}

// ---------------------------------------------------------------------------------------
// Alert rules

const RULES: &str = "grafana/alerts/sluice.rules.yml";

#[test]
fn alert_rules_use_the_catalogue_and_say_what_to_do() {
    let rules = yaml(RULES);
    let mut alerts = BTreeSet::new();
    for group in rules["groups"].as_array().expect("groups") {
        for rule in group["rules"].as_array().expect("rules") {
            let name = str_at(rule, "/alert", "rule");
            alerts.insert(name.to_string());
            let place = format!("alert {name}");
            let expr = str_at(rule, "/expr", &place);
            check_expr(expr, None, &place);
            // An alert on sluice's series names its pipeline: its aggregations and matches
            // keep the label, and its summary says which pipeline.
            if !sluice_selectors(expr).is_empty() {
                for labels in groupings(expr) {
                    assert!(
                        labels.iter().any(|l| l == "pipeline"),
                        "{place}: `by`/`on` ({}) drops the label pipeline: `{expr}`",
                        labels.join(", ")
                    );
                }
                let summary = str_at(rule, "/annotations/summary", &place);
                assert!(
                    summary.contains("$labels.pipeline"),
                    "{place}: the summary names no pipeline: {summary}"
                );
            }
            let severity = str_at(rule, "/labels/severity", &place);
            assert!(
                ["warning", "critical"].contains(&severity),
                "{place}: severity {severity}"
            );
            for key in ["summary", "description"] {
                let text = str_at(rule, &format!("/annotations/{key}"), &place);
                assert!(text.len() > 20, "{place}: {key} too short");
                names_in(text, &place);
            }
        }
    }
    for required in REQUIRED_ALERTS {
        assert!(alerts.contains(*required), "no alert {required}");
    }
    // Each alert has a unit test in the rules' test file.
    let tests = read("grafana/alerts/sluice.rules.test.yml");
    for alert in &alerts {
        assert!(
            tests.contains(&format!("alertname: {alert}\n")),
            "grafana/alerts/sluice.rules.test.yml has no test of {alert}"
        );
    }
}

#[test]
fn promtool_checks_and_unit_tests_the_alert_rules() {
    let alerts = repo().join("grafana/alerts");
    let out = promtool(&["check", "rules", "sluice.rules.yml"], &alerts);
    assert!(out.contains("SUCCESS"), "promtool check rules: {out}");
    let out = promtool(&["test", "rules", "sluice.rules.test.yml"], &alerts);
    assert!(out.contains("SUCCESS"), "promtool test rules: {out}");
}

// ---------------------------------------------------------------------------------------
// The compose stack

/// `compose/docker-compose.yml`, parsed.
struct Compose {
    doc: Value,
}

impl Compose {
    const FILE: &'static str = "compose/docker-compose.yml";

    fn load() -> Compose {
        Compose {
            doc: yaml(Self::FILE),
        }
    }

    fn dir() -> PathBuf {
        repo().join("compose")
    }

    fn service(&self, name: &str) -> &Value {
        let s = &self.doc["services"][name];
        assert!(s.is_object(), "{}: no service {name}", Self::FILE);
        s
    }

    fn services(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.doc["services"].as_object().expect("services").iter()
    }

    /// `(source, target)` of each volume of `service` (short syntax).
    fn volumes(&self, service: &str) -> Vec<(String, String)> {
        self.service(service)["volumes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| {
                let v = v.as_str().expect("volumes in short syntax");
                let mut parts = v.split(':');
                let src = parts.next().unwrap().to_string();
                let dst = parts
                    .next()
                    .unwrap_or_else(|| panic!("{service}: volume {v} has no target"))
                    .to_string();
                (src, dst)
            })
            .collect()
    }

    /// The repo path mounted at `target` (or at a folder containing it) in `service`.
    fn mount_source(&self, service: &str, target: &str) -> Option<PathBuf> {
        self.volumes(service).into_iter().find_map(|(src, dst)| {
            let rest = target.strip_prefix(&dst)?;
            if !(rest.is_empty() || rest.starts_with('/')) || !src.starts_with('.') {
                return None;
            }
            Some(normalize(
                &Self::dir().join(&src).join(rest.trim_start_matches('/')),
            ))
        })
    }

    /// The environment of `service` as written (mapping or list syntax).
    fn environment(&self, service: &str) -> BTreeMap<String, String> {
        let env = &self.service(service)["environment"];
        let scalar = |v: &Value| match v {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        };
        match env {
            Value::Object(map) => map.iter().map(|(k, v)| (k.clone(), scalar(v))).collect(),
            Value::Array(list) => list
                .iter()
                .map(|v| {
                    let s = v.as_str().expect("environment entry");
                    let (k, v) = s.split_once('=').unwrap_or((s, ""));
                    (k.to_string(), v.to_string())
                })
                .collect(),
            Value::Null => BTreeMap::new(),
            other => panic!("{service}: environment {other}"),
        }
    }

    /// `(host ip, host port, container port)` of each published port of `service`.
    fn ports(&self, service: &str) -> Vec<(String, u16, u16)> {
        self.service(service)["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                let p = p.as_str().expect("ports as strings");
                let parts: Vec<&str> = p.split('/').next().unwrap().split(':').collect();
                let [ip, host, container] = parts[..] else {
                    panic!("{service}: publish {p} as \"ip:host:container\" (loopback only)")
                };
                (
                    ip.to_string(),
                    host.parse().expect("host port"),
                    container.parse().expect("container port"),
                )
            })
            .collect()
    }
}

/// `path` without `.` and `..` components (the files need not exist).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Resolves compose's `${VAR}`, `${VAR:-default}` and `${VAR:?message}` in `value`: a
/// variable without a default gets `required(VAR)`; `$$` is a literal `$`.
fn interpolate(value: &str, required: impl Fn(&str) -> String) -> String {
    let re = Regex::new(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}").unwrap();
    re.replace_all(value, |c: &regex::Captures| {
        if &c[0] == "$$" {
            return "$".to_string();
        }
        match c.get(2).map(|m| m.as_str()) {
            Some(":-") | Some("-") => c[3].to_string(),
            _ => required(&c[1]),
        }
    })
    .into_owned()
}

#[test]
fn compose_mounts_and_builds_files_that_exist() {
    let compose = Compose::load();
    for want in [
        "mysql",
        "kafka",
        "registry",
        "sluice",
        "prometheus",
        "grafana",
    ] {
        compose.service(want);
    }
    let named: BTreeSet<&String> = compose.doc["volumes"]
        .as_object()
        .map(|v| v.keys().collect())
        .unwrap_or_default();
    for (name, service) in compose.services() {
        for (src, dst) in compose.volumes(name) {
            assert!(
                dst.starts_with('/'),
                "{name}: mount target {dst} is not absolute"
            );
            if src.starts_with('.') || src.starts_with('/') {
                let path = normalize(&Compose::dir().join(&src));
                assert!(
                    path.starts_with(repo()),
                    "{name}: {src} lies outside the repository"
                );
                assert!(
                    path.exists(),
                    "{name}: mounted {src} ({}) missing",
                    path.display()
                );
            } else {
                assert!(named.contains(&src), "{name}: volume {src} is not declared");
            }
        }
        if let Some(build) = service.get("build") {
            let context = normalize(&Compose::dir().join(str_at(build, "/context", name)));
            let dockerfile = build["dockerfile"].as_str().unwrap_or("Dockerfile");
            assert!(
                context.join(dockerfile).is_file(),
                "{name}: no {dockerfile}"
            );
            check_dockerfile(&context, &context.join(dockerfile));
        }
        for (ip, _, _) in compose.ports(name) {
            assert_eq!(
                ip, "127.0.0.1",
                "{name}: publish on the host's loopback only"
            );
        }
    }
}

/// Every `COPY` source of the Dockerfile exists; the image runs `sluice` as a non-root user.
fn check_dockerfile(context: &Path, dockerfile: &Path) {
    let text = std::fs::read_to_string(dockerfile).expect("Dockerfile");
    for line in text.lines().map(str::trim) {
        let Some(args) = line.strip_prefix("COPY ") else {
            continue;
        };
        if args.contains("--from=") {
            continue;
        }
        let words: Vec<&str> = args
            .split_whitespace()
            .filter(|w| !w.starts_with("--"))
            .collect();
        for src in &words[..words.len() - 1] {
            assert!(
                context.join(src).exists(),
                "Dockerfile: COPY source {src} missing"
            );
        }
    }
    assert!(
        text.contains("ENTRYPOINT [\"sluice\"]"),
        "Dockerfile ENTRYPOINT"
    );
    let user = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("USER "))
        .next_back()
        .expect("Dockerfile sets USER");
    assert!(
        !user.trim().starts_with("root") && !user.trim().starts_with('0'),
        "Dockerfile runs as root"
    );
}

/// The token the test gives to required variables.
const TEST_TOKEN: &str = "test-token-0123456789abcdef";

/// The sluice service's environment, resolved as compose would with `SLUICE_API_TOKEN` set.
fn sluice_env(compose: &Compose) -> Vec<(String, String)> {
    compose
        .environment("sluice")
        .into_iter()
        .map(|(k, v)| {
            let v = interpolate(&v, |var| {
                assert_eq!(
                    var, "SLUICE_API_TOKEN",
                    "unexpected required variable {var}"
                );
                TEST_TOKEN.to_string()
            });
            (k, v)
        })
        .collect()
}

#[test]
fn compose_sluice_config_loads_and_matches_the_stack() {
    let compose = Compose::load();
    let env = compose.environment("sluice");
    let known = sluice::config::env::known_env_vars();
    for name in env.keys().filter(|k| k.starts_with("SLUICE_")) {
        assert!(
            known.contains(name)
                || sluice::config::env::is_read_elsewhere(name)
                || name.starts_with(sluice::config::env::ENV_KAFKA_PROPERTY_PREFIX)
                || name.starts_with(sluice::config::env::ENV_KAFKA_TOPIC_CONFIG_PREFIX),
            "sluice service: {name} is not a setting sluice knows"
        );
    }
    // The token has no default: compose refuses to start without one.
    let token = &env["SLUICE_API_TOKEN"];
    assert!(
        token.starts_with("${SLUICE_API_TOKEN:?"),
        "SLUICE_API_TOKEN must be required (${{SLUICE_API_TOKEN:?...}}), not {token}"
    );

    // The configuration file the image runs with is compose/sluice.toml.
    let dockerfile = read("Dockerfile");
    let config_path = Regex::new(r#"CMD \[.*"--config", "([^"]+)"\]"#)
        .unwrap()
        .captures(&dockerfile)
        .expect("Dockerfile CMD with --config")[1]
        .to_string();
    assert_eq!(
        compose.mount_source("sluice", &config_path),
        Some(repo().join("compose/sluice.toml")),
        "the image reads {config_path}: compose must mount compose/sluice.toml there"
    );

    let text = read("compose/sluice.toml");
    let config = sluice::config::Config::from_str_with_env(&text, sluice_env(&compose))
        .unwrap_or_else(|e| panic!("compose/sluice.toml does not load: {e}"));
    assert!(config.api.enabled, "the API serves /metrics");
    let listen = config.api.listen_addr().expect("api.listen");
    assert!(
        listen.ip().is_unspecified(),
        "api.listen {listen}: Prometheus reaches sluice from another container"
    );
    assert_eq!(
        config.api.token(),
        Some(TEST_TOKEN),
        "api.token from SLUICE_API_TOKEN"
    );
    let ports = compose.ports("sluice");
    assert!(
        ports.iter().any(|(_, _, c)| *c == listen.port()),
        "sluice publishes {ports:?}, but api.listen is {listen}"
    );

    // Host names are compose services, on the ports those services listen on.
    let table: toml::Table = text.parse().expect("TOML");
    let source = url::Url::parse(table["source"]["url"].as_str().unwrap()).expect("source.url");
    assert_eq!(source.host_str(), Some("mysql"));
    assert_eq!(source.port().unwrap_or(3306), 3306);
    compose.service("mysql");
    assert_eq!(config.kafka.bootstrap_servers, "kafka:9092");
    let kafka = compose.environment("kafka");
    assert!(
        kafka["KAFKA_ADVERTISED_LISTENERS"].contains("PLAINTEXT://kafka:9092"),
        "kafka must advertise kafka:9092"
    );
    for (key, want) in [
        ("KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR", "1"),
        ("KAFKA_TRANSACTION_STATE_LOG_MIN_ISR", "1"),
        ("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR", "1"),
    ] {
        assert_eq!(
            kafka.get(key).map(String::as_str),
            Some(want),
            "kafka {key}"
        );
    }
    let registry = url::Url::parse(&config.schema_registry.url).expect("schema_registry.url");
    assert_eq!(registry.host_str(), Some("registry"));
    assert!(
        registry.path().ends_with("/apis/ccompat/v7"),
        "Apicurio's ccompat API"
    );
    assert!(
        compose
            .ports("registry")
            .iter()
            .any(|(_, _, c)| Some(*c) == registry.port()),
        "the registry listens on {:?}",
        registry.port()
    );

    // MySQL: the settings sluice needs, and the user of source.url with its grants.
    let cnf = read("compose/mysql/sluice.cnf");
    let settings: BTreeMap<String, String> = cnf
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().replace('-', "_"), v.trim().to_ascii_uppercase()))
        .collect();
    for (key, want) in [
        ("binlog_format", "ROW"),
        ("binlog_row_image", "FULL"),
        ("binlog_row_metadata", "FULL"),
        ("gtid_mode", "ON"),
        ("enforce_gtid_consistency", "ON"),
    ] {
        assert_eq!(settings.get(key).map(String::as_str), Some(want), "{key}");
    }
    assert!(settings.contains_key("server_id") && settings.contains_key("log_bin"));
    let init = read("compose/mysql/init/01-sluice.sql");
    let user = source.username();
    assert!(
        init.contains(&format!(
            "CREATE USER IF NOT EXISTS '{user}'@'%' IDENTIFIED BY '{}'",
            source.password().unwrap_or("")
        )),
        "the init SQL must create the user of source.url"
    );
    assert!(
        init.contains(&format!(
            "GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{user}'@'%';"
        )),
        "the init SQL must grant what `sluice check` asks for"
    );
    let include = Regex::new(&config.source.include[0]).expect("include regex");
    assert!(
        Regex::new(r"(?m)^CREATE DATABASE IF NOT EXISTS (\w+);")
            .unwrap()
            .captures(&init)
            .is_some_and(|c| include.is_match(&format!("{}.orders", &c[1]))),
        "source.include must match the demo database"
    );
}

#[test]
fn compose_prometheus_scrapes_sluice_with_the_rules() {
    let compose = Compose::load();
    let prom = yaml("compose/prometheus.yml");
    let target = compose
        .volumes("prometheus")
        .into_iter()
        .find(|(src, _)| src == "./prometheus.yml")
        .expect("compose/prometheus.yml mounted")
        .1;
    let args: Vec<&str> = compose.service("prometheus")["command"]
        .as_array()
        .expect("prometheus command")
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(args.contains(&format!("--config.file={target}").as_str()));

    // The job is `sluice` (the rules and the dashboard select it) and scrapes sluice's API port.
    let jobs = prom["scrape_configs"].as_array().expect("scrape_configs");
    let job = jobs
        .iter()
        .find(|j| j["job_name"] == "sluice")
        .expect("job sluice");
    let targets: Vec<&str> = job["static_configs"][0]["targets"]
        .as_array()
        .expect("targets")
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let text = read("compose/sluice.toml");
    let config = sluice::config::Config::from_str_with_env(&text, sluice_env(&compose))
        .expect("compose/sluice.toml");
    let port = config.api.listen_addr().expect("api.listen").port();
    assert_eq!(targets, [format!("sluice:{port}")]);

    // Every rule file is mounted from the repository; promtool checks the configuration with
    // the container paths replaced by the repository's files.
    let mut rewritten = read("compose/prometheus.yml");
    for rule in prom["rule_files"].as_array().expect("rule_files") {
        let path = rule.as_str().unwrap();
        let source = compose
            .mount_source("prometheus", path)
            .unwrap_or_else(|| panic!("rule file {path} is not mounted into prometheus"));
        assert_eq!(source, repo().join(RULES));
        rewritten = rewritten.replace(path, source.to_str().unwrap());
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("prometheus.yml");
    std::fs::write(&file, rewritten).expect("write");
    let out = promtool(&["check", "config", file.to_str().unwrap()], dir.path());
    assert!(out.contains("SUCCESS"), "promtool check config: {out}");

    // Grafana's datasource is this Prometheus.
    let ds = yaml("grafana/provisioning/datasources/prometheus.yml");
    let url = url::Url::parse(str_at(&ds, "/datasources/0/url", "datasource")).expect("url");
    assert_eq!(url.host_str(), Some("prometheus"));
    assert!(
        compose
            .ports("prometheus")
            .iter()
            .any(|(_, _, c)| Some(*c) == url.port()),
        "grafana's datasource port"
    );
    assert_eq!(
        compose.mount_source(
            "grafana",
            "/etc/grafana/provisioning/datasources/prometheus.yml"
        ),
        Some(repo().join("grafana/provisioning/datasources/prometheus.yml"))
    );
}

#[test]
fn interpolation_follows_compose() {
    let req = |v: &str| format!("<{v}>");
    assert_eq!(interpolate("${A:-x}", req), "x");
    assert_eq!(interpolate("${A-}", req), "");
    assert_eq!(interpolate("${A:?set A}", req), "<A>");
    assert_eq!(interpolate("${A}/$${B}", req), "<A>/${B}");
    assert_eq!(
        matcher_labels(r#"job="a,b", state=~"x|y",le!="1""#),
        ["job", "state", "le"]
    );
}
