//! The API in-process: a server on 127.0.0.1:0 whose stream end is a small task answering
//! requests (it knows two tables) and publishing progress, and whose operators' handle
//! belongs to a configuration no pipeline runs. Answers are checked against the schemas of
//! `docs/openapi.yaml`.
//!
//! Each server has its pipeline's metrics (pipeline `shop`) in a registry of its own, which
//! its `GET /metrics` renders.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{json, Value};
use tokio::sync::watch;
use yaml_rust2::{Yaml, YamlLoader};

use super::access::{bearer_token, same_bytes};
use super::client::{Client, Totals};
use super::*;
use crate::ops::{Ops, TableInfo};
use crate::snapshot::adhoc::{channel, Accepted, AdhocRequest, Inbox, Rejected, SnapshotControl};
use crate::snapshot::progress::{SnapshotProgress, TableProgress};

/// The source password of the configuration behind the API: `GET /config` must not show it.
const SOURCE_PASSWORD: &str = "Src-Pa55word";

const KNOWN: [&str; 2] = ["shop.orders", "shop.items"];

/// Answers requests like the stream: unknown tables are invalid; accepted ones get entries in
/// the progress, which then advance by 250 rows every 20 ms to their estimate of 1000 and
/// are done.
fn fake_stream(inbox: Inbox) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let rx = inbox.receiver();
        let mut rx = rx.lock().await;
        let mut n = 0;
        while let Some(cmd) = rx.recv().await {
            let request = cmd.request;
            if let Some(bad) = request.tables.iter().find(|t| !KNOWN.contains(&t.as_str())) {
                let _ = cmd.reply.send(Err(Rejected::Invalid(format!(
                    "table {bad} is not included in the pipeline"
                ))));
                continue;
            }
            n += 1;
            let id = request.id.clone().unwrap_or_else(|| format!("req-{n}"));
            let tables: Vec<TableProgress> = request
                .tables
                .iter()
                .map(|name| {
                    let (db, table) = name.split_once('.').unwrap();
                    let mut t = TableProgress::new(db, table, 1000);
                    t.request = Some(id.clone());
                    t.filter = request.filter.clone();
                    t
                })
                .collect();
            let mut progress = SnapshotProgress {
                started_ms: 1,
                then_stop: false,
                tables,
                finished_tables: 0,
                finished_rows: 0,
                finished_requests: Vec::new(),
            };
            inbox.publish(Some(Arc::new(progress.clone())));
            let _ = cmd.reply.send(Ok(Accepted {
                id,
                tables: request.tables.clone(),
            }));
            let inbox = inbox.clone();
            tokio::spawn(async move {
                while !progress.done() {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    if let Some(t) = progress.tables.iter_mut().find(|t| !t.done) {
                        t.rows += 250;
                        t.chunks += 1;
                        t.done = t.rows >= t.estimate;
                    }
                    inbox.publish(Some(Arc::new(progress.clone())));
                }
            });
        }
    })
}

struct Running {
    server: ApiServer,
    stop: watch::Sender<bool>,
    http: reqwest::Client,
    ops: Arc<Ops>,
    /// The directory the server serves.
    pipelines: Pipelines,
    /// The pipeline's metrics, registered in the server's registry while it runs.
    _metrics: crate::metrics::Registration,
}

impl Running {
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.server.addr)
    }

    async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
        token: Option<&str>,
    ) -> (u16, Value) {
        let mut b = self.http.request(method.parse().unwrap(), self.url(path));
        if let Some(body) = body {
            b = b
                .header("Content-Type", "application/json")
                .body(body.to_string());
        }
        if let Some(t) = token {
            b = b.header("Authorization", format!("Bearer {t}"));
        }
        let r = b.send().await.unwrap();
        let status = r.status().as_u16();
        let text = r.text().await.unwrap();
        let json = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text:?}"));
        (status, json)
    }

    /// Like [`Running::call`], and checks the answer against the schema `docs/openapi.yaml`
    /// gives for the endpoint and status.
    async fn checked(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
        token: Option<&str>,
    ) -> (u16, Value) {
        let (status, v) = self.call(method, path, body, token).await;
        assert_documented(method, path, status, &v);
        (status, v)
    }

    /// A `GET` of a non-JSON endpoint: status, content type, body.
    async fn text(&self, path: &str) -> (u16, String, String) {
        let r = self.http.get(self.url(path)).send().await.unwrap();
        let status = r.status().as_u16();
        let content_type = r
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        (status, content_type, r.text().await.unwrap())
    }
}

async fn start(listen: &str, token: Option<&str>) -> Running {
    let (control, inbox) = channel();
    fake_stream(inbox);
    start_with(control, listen, token).await
}

async fn start_with(control: SnapshotControl, listen: &str, token: Option<&str>) -> Running {
    let cfg = ApiConfig {
        listen: listen.into(),
        token: Secret::new(token.unwrap_or_default().to_string()),
        ..ApiConfig::default()
    };
    start_configured(control, cfg).await
}

async fn start_configured(control: SnapshotControl, cfg: ApiConfig) -> Running {
    let registry = prometheus::Registry::new();
    let metrics = crate::metrics::Metrics::register("shop", &registry).unwrap();
    let ops = ops(cfg.ready_max_lag_seconds, metrics.metrics().clone());
    let (stop, stop_rx) = watch::channel(false);
    let pipelines = Pipelines::new();
    pipelines.insert(
        "shop",
        PipelineHandle {
            ops: ops.clone(),
            control,
        },
    );
    let state = ApiState::new(pipelines.clone(), cfg.token().map(str::to_owned), registry);
    let server = serve(&cfg, state, stop_rx).await.unwrap();
    assert_ne!(server.addr.port(), 0);
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    Running {
        server,
        stop,
        http,
        ops,
        pipelines,
        _metrics: metrics,
    }
}

/// A cluster view as cluster mode sets one.
fn cluster_view() -> crate::api::ClusterView {
    Arc::new(|| {
        json!({
            "group": "g",
            "client_id": "sluice-g-host-1",
            "assigned": ["shop"],
            "rebalances": 1,
            "pipelines": [{"name": "shop", "assigned": true, "state": "streaming"}],
        })
    })
}

#[tokio::test]
async fn the_cluster_view_is_served_in_cluster_mode_only() {
    let api = start("127.0.0.1:0", None).await;
    let (status, v) = api.checked("GET", "/cluster", None, None).await;
    assert_eq!(status, 404, "{v}");
    assert!(error_text(&v).contains("cluster mode"), "{v}");
    api.pipelines.set_cluster_view(cluster_view());
    let (status, v) = api.checked("GET", "/cluster", None, None).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["assigned"], json!(["shop"]));
    assert_eq!(v["pipelines"][0]["state"], "streaming");
}

/// The operators' handle of a pipeline configured with [`SOURCE_PASSWORD`] and an API token,
/// counted in `metrics`.
fn ops(max_lag_seconds: f64, metrics: Arc<crate::metrics::Metrics>) -> Arc<Ops> {
    let text = format!(
        "name = \"shop\"\n[source]\nurl = \"mysql://sluice:{SOURCE_PASSWORD}@127.0.0.1:3306\"\n\
         server_id = 7\ninclude = [\"shop\\\\..*\"]\n[kafka]\n\
         bootstrap_servers = \"127.0.0.1:9092\"\n[api]\ntoken = \"{SOURCE_PASSWORD}-api\"\n"
    );
    let cfg =
        crate::config::load_from_str(&text, Vec::new()).unwrap_or_else(|e| panic!("{e}\n{text}"));
    Ops::new(&cfg, max_lag_seconds, metrics)
}

/// The path of `e` as a request names it: `{name}` is the pipeline `shop` these servers run.
fn served(e: &Endpoint) -> String {
    e.path.replace("{name}", "shop")
}

fn error_text(v: &Value) -> &str {
    v["error"]
        .as_str()
        .unwrap_or_else(|| panic!("no error text: {v}"))
}

#[test]
fn the_rule_for_mutating_endpoints() {
    use MutationAccess::*;
    for (addr, without, with) in [
        ("127.0.0.1:8089", Open, Token),
        ("127.8.9.10:1", Open, Token),
        ("[::1]:8089", Open, Token),
        ("0.0.0.0:8089", Refused, Token),
        ("[::]:8089", Refused, Token),
        ("10.1.2.3:8089", Refused, Token),
        ("192.168.0.5:0", Refused, Token),
        ("[::ffff:127.0.0.1]:8089", Refused, Token),
    ] {
        let a: SocketAddr = addr.parse().unwrap();
        assert_eq!(mutation_access(&a, false), without, "{addr}");
        assert_eq!(mutation_access(&a, true), with, "{addr}");
    }
    assert_eq!(bearer_token("Bearer abc"), Some("abc"));
    assert_eq!(bearer_token("bearer  abc "), Some("abc"));
    assert_eq!(bearer_token("Basic abc"), None);
    assert_eq!(bearer_token("Bearer "), None);
    assert!(same_bytes(b"abc", b"abc"));
    assert!(!same_bytes(b"abc", b"abd") && !same_bytes(b"abc", b"ab"));
}

#[tokio::test]
async fn health_request_progress_and_errors() {
    let api = start("127.0.0.1:0", None).await;
    assert_eq!(
        api.call("GET", "/healthz", None, None).await,
        (200, serde_json::json!({"status": "ok"}))
    );
    let (status, v) = api.call("GET", "/snapshots", None, None).await;
    assert_eq!((status, &v), (200, &serde_json::json!({"snapshot": null})));

    let (status, v) = api
        .call(
            "POST",
            "/snapshots",
            Some(r#"{"tables":["shop.orders"],"where":"id > 10"}"#),
            None,
        )
        .await;
    assert_eq!(status, 202, "{v}");
    let accepted: Accepted = serde_json::from_value(v).unwrap();
    assert_eq!(accepted.tables, vec!["shop.orders".to_string()]);
    let (status, v) = api.call("GET", "/snapshots", None, None).await;
    assert_eq!(status, 200);
    let progress: SnapshotProgress = serde_json::from_value(v["snapshot"].clone()).unwrap();
    let entry = &progress.tables[0];
    assert_eq!(entry.request.as_deref(), Some(accepted.id.as_str()));
    assert_eq!(entry.filter.as_deref(), Some("id > 10"));
    assert_eq!(
        (entry.db.as_str(), entry.table.as_str()),
        ("shop", "orders")
    );

    // The stream refuses: 400 with its sentence.
    let (status, v) = api
        .call(
            "POST",
            "/snapshots",
            Some(r#"{"tables":["shop.nope"]}"#),
            None,
        )
        .await;
    assert_eq!(status, 400);
    assert!(error_text(&v).contains("shop.nope"), "{v}");
    // Not JSON, not a request, unknown field: 400 saying what is expected.
    for body in ["{", "[]", r#"{"tables":["shop.orders"],"filter":"x"}"#, ""] {
        let (status, v) = api.call("POST", "/snapshots", Some(body), None).await;
        assert_eq!(status, 400, "{body}: {v}");
        assert!(error_text(&v).contains("\"tables\""), "{body}: {v}");
    }
    // Too large.
    let big = format!(r#"{{"tables":["{}"]}}"#, "x".repeat(MAX_BODY_BYTES));
    let (status, v) = api.call("POST", "/snapshots", Some(&big), None).await;
    assert_eq!(status, 413, "{v}");
    error_text(&v);
    // Unknown path, wrong method: JSON too.
    let (status, v) = api.call("GET", "/nope", None, None).await;
    assert_eq!(status, 404);
    assert!(error_text(&v).contains("/nope"), "{v}");
    let (status, v) = api.call("DELETE", "/snapshots", None, None).await;
    assert_eq!(status, 405);
    assert!(error_text(&v).contains("DELETE"), "{v}");

    api.stop.send(true).unwrap();
    tokio::time::timeout(
        Duration::from_secs(5),
        api.server.join(Duration::from_secs(5)),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn token_is_required_when_configured() {
    let api = start("127.0.0.1:0", Some("s3cret-token")).await;
    const BODY: &str = r#"{"tables":["shop.items"]}"#;
    let body = Some(BODY);
    let (status, v) = api.call("POST", "/snapshots", body, None).await;
    assert_eq!(status, 401);
    assert!(error_text(&v).contains("Authorization: Bearer"), "{v}");
    let (status, v) = api.call("POST", "/snapshots", body, Some("wrong")).await;
    assert_eq!(status, 401);
    assert!(!error_text(&v).contains("s3cret"), "{v}");
    let r = api
        .http
        .post(api.url("/snapshots"))
        .body(BODY)
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.headers()
            .get("www-authenticate")
            .map(|v| v.to_str().unwrap()),
        Some("Bearer realm=\"sluice\"")
    );
    let (status, v) = api
        .call("POST", "/snapshots", body, Some("s3cret-token"))
        .await;
    assert_eq!(status, 202, "{v}");
    // Reading needs no token.
    assert_eq!(api.call("GET", "/snapshots", None, None).await.0, 200);
    assert_eq!(api.call("GET", "/healthz", None, None).await.0, 200);
}

#[tokio::test]
async fn non_loopback_without_token_refuses_mutations() {
    // Every interface (reached here over loopback): no token, so POST is refused.
    let api = start("0.0.0.0:0", None).await;
    let port = api.server.addr.port();
    let url = format!("http://127.0.0.1:{port}/snapshots");
    let r = api
        .http
        .post(&url)
        .body(r#"{"tables":["shop.items"]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
    let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert!(error_text(&v).contains("api.token"), "{v}");
    let r = api.http.get(&url).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
}

#[tokio::test]
async fn a_pipeline_not_streaming_is_unavailable() {
    let (control, inbox) = channel();
    drop(inbox);
    let api = start_with(control, "127.0.0.1:0", None).await;
    let (status, v) = api
        .call(
            "POST",
            "/snapshots",
            Some(r#"{"tables":["shop.items"]}"#),
            None,
        )
        .await;
    assert_eq!(status, 503);
    assert!(error_text(&v).contains("try again"), "{v}");
}

#[tokio::test]
async fn a_taken_port_is_a_definite_error_naming_the_setting() {
    let api = start("127.0.0.1:0", None).await;
    let (control, _inbox) = channel();
    let cfg = ApiConfig {
        listen: api.server.addr.to_string(),
        ..ApiConfig::default()
    };
    let (_stop, rx) = watch::channel(false);
    let metrics = Arc::new(crate::metrics::Metrics::new("shop"));
    let pipelines = Pipelines::new();
    pipelines.insert(
        "shop",
        PipelineHandle {
            ops: ops(60.0, metrics),
            control,
        },
    );
    let state = ApiState::new(pipelines, None, prometheus::Registry::new());
    let e = serve(&cfg, state, rx).await.err().unwrap();
    assert_eq!(e.kind(), crate::error::ErrorKind::Definite);
    let text = e.to_string();
    assert!(
        text.contains("api.listen") && text.contains(&api.server.addr.to_string()),
        "{text}"
    );
}

#[tokio::test]
async fn the_client_follows_a_request_to_done() {
    let api = start("127.0.0.1:0", Some("tok")).await;
    let client = Client::new(api.server.addr, Some("tok".into())).unwrap();
    let accepted = client
        .request(&AdhocRequest {
            tables: vec!["shop.orders".into(), "shop.items".into()],
            filter: None,
            id: None,
        })
        .await
        .unwrap();
    let mut seen = Vec::new();
    let status = client
        .wait_done(
            &accepted.id,
            Duration::from_millis(30),
            Duration::from_secs(5),
            |s| seen.push(s.clone()),
        )
        .await
        .unwrap();
    assert_eq!(
        status.totals,
        Totals {
            rows: 2000,
            estimate: 2000,
            tables: 2,
            done: 2
        }
    );
    assert!(seen.len() >= 2, "{seen:?}");
    assert!(
        seen.windows(2)
            .all(|w| w[0].totals.rows <= w[1].totals.rows),
        "{seen:?}"
    );
    assert!(seen.iter().any(|s| s.rows_per_second.is_some()), "{seen:?}");
    assert!(status.line(&accepted.id).contains("100.0%"));

    // The API's refusals come back as errors with its sentence.
    let e = client
        .request(&AdhocRequest {
            tables: vec!["shop.nope".into()],
            filter: None,
            id: None,
        })
        .await
        .err()
        .unwrap();
    assert_eq!(e.kind(), crate::error::ErrorKind::Definite);
    assert!(
        e.to_string().contains("400") && e.to_string().contains("shop.nope"),
        "{e}"
    );
    let wrong = Client::new(api.server.addr, Some("bad".into())).unwrap();
    let e = wrong
        .request(&AdhocRequest {
            tables: vec!["shop.items".into()],
            filter: None,
            id: None,
        })
        .await
        .err()
        .unwrap();
    assert!(e.to_string().contains("401"), "{e}");
    // A request that never shows up in the progress.
    let e = client
        .wait_done(
            "other",
            Duration::from_millis(20),
            Duration::from_millis(100),
            |_| {},
        )
        .await
        .err()
        .unwrap();
    assert!(e.to_string().contains("did not appear"), "{e}");
}

#[tokio::test]
async fn the_client_says_when_nothing_listens() {
    // A port that was free a moment ago.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let client = Client::new(addr, None).unwrap();
    let e = client.progress().await.err().unwrap();
    assert_eq!(e.kind(), crate::error::ErrorKind::Transient);
    let text = e.to_string();
    assert!(
        text.contains("is `sluice run` running with the API enabled")
            && text.contains(&addr.to_string()),
        "{text}"
    );
    let e = client
        .wait_done(
            "x",
            Duration::from_millis(5),
            Duration::from_secs(5),
            |_| {},
        )
        .await
        .err()
        .unwrap();
    assert!(e.to_string().contains("polls in a row failed"), "{e}");
}

// ---------------------------------------------------------------- the operators' endpoints

#[tokio::test]
async fn reading_endpoints_answer_as_documented() {
    let api = start("127.0.0.1:0", None).await;
    assert_eq!(
        api.checked("GET", "/healthz", None, None).await,
        (200, json!({"status": "ok"}))
    );

    // The status (its state is process-wide: not asserted here) and the pause flag.
    let (status, v) = api.checked("GET", "/status", None, None).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["paused"], false, "{v}");
    assert!(
        v["state"].is_string() && v["lag_seconds"].is_number(),
        "{v}"
    );

    // The configuration, secrets redacted.
    let (status, v) = api.checked("GET", "/config", None, None).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["name"], "shop", "{v}");
    assert_eq!(v["api"]["token"], "***", "{v}");
    assert_eq!(v["api"]["ready_max_lag_seconds"], 60.0, "{v}");
    assert_eq!(v["source"]["server_id"], 7, "{v}");
    assert!(!v.to_string().contains(SOURCE_PASSWORD), "{v}");

    // The tables: none before the source started, then what it published.
    assert_eq!(
        api.checked("GET", "/tables", None, None).await,
        (200, json!({"tables": []}))
    );
    let orders = TableInfo {
        table: "shop.orders".into(),
        topic: "shop.shop.orders".into(),
        format: "json".into(),
        key_columns: vec!["id".into()],
        key_source: "primary key".into(),
    };
    let log = TableInfo {
        table: "shop.log".into(),
        topic: "shop.shop.log".into(),
        format: "avro".into(),
        key_columns: vec![],
        key_source: "none".into(),
    };
    api.ops.set_tables(vec![orders.clone(), log]);
    let (status, v) = api.checked("GET", "/tables", None, None).await;
    assert_eq!(status, 200);
    assert_eq!(v["tables"].as_array().map(Vec::len), Some(2), "{v}");
    assert_eq!(v["tables"][0], serde_json::to_value(&orders).unwrap());
    assert_eq!(v["tables"][1]["key_columns"], json!([]));

    // The metrics: Prometheus text.
    let (status, content_type, text) = api.text("/metrics").await;
    assert_eq!(status, 200);
    assert_eq!(content_type, METRICS_CONTENT_TYPE);
    assert!(
        text.contains("# TYPE sluice_build_info gauge")
            && text.contains(&format!(
                "sluice_build_info{{pipeline=\"shop\",version=\"{}\"}} 1",
                env!("CARGO_PKG_VERSION")
            )),
        "{text}"
    );
    assert!(
        text.contains("# TYPE sluice_pipeline_state gauge"),
        "{text}"
    );

    // The OpenAPI document, as in docs/.
    let (status, content_type, text) = api.text("/openapi.yaml").await;
    assert_eq!(status, 200);
    assert_eq!(content_type, OPENAPI_CONTENT_TYPE);
    assert_eq!(text, OPENAPI_YAML);
    assert_eq!(
        text,
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/openapi.yaml")).unwrap()
    );
}

#[tokio::test]
async fn pause_and_resume_are_idempotent() {
    let api = start("127.0.0.1:0", None).await;
    let (status, v) = api.checked("POST", "/pause", None, None).await;
    assert_eq!((status, v), (202, json!({"paused": true, "changed": true})));
    assert!(api.ops.is_paused());
    let (status, v) = api.checked("POST", "/pause", None, None).await;
    assert_eq!(
        (status, v),
        (200, json!({"paused": true, "changed": false}))
    );
    assert!(api.ops.is_paused());
    let (_, v) = api.checked("GET", "/status", None, None).await;
    assert_eq!(v["paused"], true, "{v}");
    // A paused pipeline takes no snapshot request: 503 at once, saying what to do.
    let (status, v) = api
        .checked(
            "POST",
            "/snapshots",
            Some(r#"{"tables":["shop.orders"]}"#),
            None,
        )
        .await;
    assert_eq!(status, 503, "{v}");
    assert!(error_text(&v).contains("POST /resume"), "{v}");

    let (status, v) = api.checked("POST", "/resume", None, None).await;
    assert_eq!(
        (status, v),
        (202, json!({"paused": false, "changed": true}))
    );
    assert!(!api.ops.is_paused());
    let (status, v) = api.checked("POST", "/resume", None, None).await;
    assert_eq!(
        (status, v),
        (200, json!({"paused": false, "changed": false}))
    );
    let (_, v) = api.checked("GET", "/status", None, None).await;
    assert_eq!(v["paused"], false, "{v}");
    let (status, v) = api
        .checked(
            "POST",
            "/snapshots",
            Some(r#"{"tables":["shop.orders"]}"#),
            None,
        )
        .await;
    assert_eq!(status, 202, "{v}");
    // A body is ignored.
    let (status, _) = api.checked("POST", "/pause", Some("{}"), None).await;
    assert_eq!(status, 202);
}

#[tokio::test]
async fn pause_and_resume_need_the_token() {
    let api = start("127.0.0.1:0", Some("s3cret-token")).await;
    let mutating: Vec<_> = ENDPOINTS.iter().filter(|e| e.mutating).collect();
    assert!(mutating.iter().all(|e| e.method == Method::Post));
    for path in mutating.iter().map(|e| served(e)) {
        let path = path.as_str();
        let (status, v) = api.checked("POST", path, None, None).await;
        assert_eq!(status, 401, "{path}: {v}");
        assert!(error_text(&v).contains("Authorization: Bearer"), "{v}");
        let (status, v) = api.checked("POST", path, None, Some("wrong")).await;
        assert_eq!(status, 401, "{path}: {v}");
        assert!(!error_text(&v).contains("s3cret"), "{v}");
    }
    assert!(!api.ops.is_paused(), "a refused pause must not pause");
    let (status, v) = api
        .checked("POST", "/pause", None, Some("s3cret-token"))
        .await;
    assert_eq!((status, v["paused"].clone()), (202, json!(true)));
    assert!(api.ops.is_paused());
    let (status, _) = api
        .checked("POST", "/resume", None, Some("s3cret-token"))
        .await;
    assert_eq!(status, 202);
    assert!(!api.ops.is_paused());
    // Reading needs no token.
    api.pipelines.set_cluster_view(cluster_view());
    for e in ENDPOINTS.iter().filter(|e| !e.mutating) {
        let r = api.http.get(api.url(&served(e))).send().await.unwrap();
        assert!(
            [200, 503].contains(&r.status().as_u16()),
            "GET {}: {}",
            e.path,
            r.status()
        );
    }

    // No token on every interface: refused.
    let open = start("0.0.0.0:0", None).await;
    let port = open.server.addr.port();
    for path in mutating.iter().map(|e| served(e)) {
        let r = open
            .http
            .post(format!("http://127.0.0.1:{port}{path}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 403, "{path}");
        let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
        assert_documented("POST", &path, 403, &v);
        assert!(error_text(&v).contains("api.token"), "{v}");
    }
    assert!(!open.ops.is_paused());
    let r = open
        .http
        .get(format!("http://127.0.0.1:{port}/status"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
}

#[tokio::test]
async fn readiness_follows_the_pipeline_state() {
    let api = start("127.0.0.1:0", None).await;
    let m = api.ops.metrics().clone();
    let now = crate::model::clock::now_ms();
    m.resumed_from(None, now);

    m.set_state("starting");
    let (status, v) = api.checked("GET", "/readyz", None, None).await;
    assert_eq!(status, 503, "{v}");
    assert_eq!(
        (v["ready"].clone(), v["state"].clone()),
        (json!(false), json!("starting"))
    );
    assert!(v["reason"].as_str().unwrap().contains("starting"), "{v}");
    assert_eq!(v["max_lag_seconds"], 60.0);
    let (_, v) = api.checked("GET", "/status", None, None).await;
    assert_eq!(v["state"], "starting", "{v}");

    m.set_state("streaming");
    let (status, v) = api.checked("GET", "/readyz", None, None).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        (v["ready"].clone(), v["state"].clone()),
        (json!(true), json!("streaming"))
    );
    assert!(v.get("reason").is_none(), "{v}");
    let (_, v) = api.checked("GET", "/status", None, None).await;
    assert_eq!(v["state"], "streaming", "{v}");
    let (_, _, text) = api.text("/metrics").await;
    assert!(
        text.contains("sluice_pipeline_state{pipeline=\"shop\",state=\"streaming\"} 1"),
        "{text}"
    );

    // Too far behind: not ready, saying so.
    m.resumed_from(None, now - 3_600_000);
    let (status, v) = api.checked("GET", "/readyz", None, None).await;
    assert_eq!(status, 503, "{v}");
    let reason = v["reason"].as_str().unwrap();
    assert!(
        reason.contains("lag") && reason.contains("api.ready_max_lag_seconds"),
        "{v}"
    );
    assert!(v["lag_seconds"].as_f64().unwrap() >= 3600.0, "{v}");
    m.resumed_from(None, crate::model::clock::now_ms());
    assert_eq!(api.checked("GET", "/readyz", None, None).await.0, 200);

    m.set_state("paused");
    let (status, v) = api.checked("GET", "/readyz", None, None).await;
    assert_eq!(status, 503, "{v}");
    assert!(v["reason"].as_str().unwrap().contains("/resume"), "{v}");
    m.set_state("snapshotting");
    assert_eq!(api.checked("GET", "/readyz", None, None).await.0, 200);
    m.set_state("starting");
}

#[tokio::test]
async fn unknown_paths_and_methods_name_every_endpoint() {
    let api = start("127.0.0.1:0", None).await;
    let every = ENDPOINTS
        .iter()
        .map(|e| format!("{} {}", e.method.as_str(), e.path))
        .collect::<Vec<_>>();
    let (status, v) = api.call("GET", "/nope", None, None).await;
    assert_eq!(status, 404);
    assert_documented("GET", "/nope", 404, &v);
    for e in &every {
        assert!(error_text(&v).contains(e.as_str()), "{e}: {v}");
    }
    let (status, v) = api.call("GET", "/pause", None, None).await;
    assert_eq!(status, 405, "{v}");
    assert!(error_text(&v).contains("it takes POST /pause;"), "{v}");
    let (status, v) = api.call("PUT", "/snapshots", None, None).await;
    assert_eq!(status, 405, "{v}");
    assert!(
        error_text(&v).contains("it takes GET /snapshots, POST /snapshots;"),
        "{v}"
    );
    for e in &every {
        assert!(error_text(&v).contains(e.as_str()), "{e}: {v}");
    }
    // Every listed endpoint is served (neither 404 nor 405; `/cluster` in cluster mode).
    api.pipelines.set_cluster_view(cluster_view());
    for e in ENDPOINTS {
        let r = api
            .http
            .request(e.method.as_str().parse().unwrap(), api.url(&served(e)))
            .body(r#"{"tables":["shop.items"]}"#)
            .send()
            .await
            .unwrap();
        assert!(
            ![404, 405].contains(&r.status().as_u16()),
            "{} {}: {}",
            e.method.as_str(),
            e.path,
            r.status()
        );
    }
}

// ---------------------------------------------------------------- docs/openapi.yaml

/// `docs/openapi.yaml` as JSON.
fn openapi() -> Value {
    let docs = YamlLoader::load_from_str(OPENAPI_YAML)
        .unwrap_or_else(|e| panic!("docs/openapi.yaml does not parse: {e}"));
    assert_eq!(docs.len(), 1, "docs/openapi.yaml holds one document");
    yaml_to_json(&docs[0])
}

fn yaml_to_json(y: &Yaml) -> Value {
    match y {
        Yaml::Real(r) => r
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .unwrap_or_else(|| panic!("number {r}")),
        Yaml::Integer(i) => json!(i),
        Yaml::String(s) => json!(s),
        Yaml::Boolean(b) => json!(b),
        Yaml::Array(a) => Value::Array(a.iter().map(yaml_to_json).collect()),
        Yaml::Hash(h) => Value::Object(
            h.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Yaml::String(s) => s.clone(),
                        Yaml::Integer(i) => i.to_string(),
                        other => panic!("key {other:?}"),
                    };
                    (key, yaml_to_json(v))
                })
                .collect(),
        ),
        Yaml::Null => Value::Null,
        other => panic!("unexpected YAML node {other:?}"),
    }
}

/// The node a local `$ref` (`#/components/...`) points at.
fn resolve<'a>(doc: &'a Value, reference: &str) -> &'a Value {
    let pointer = reference
        .strip_prefix('#')
        .unwrap_or_else(|| panic!("only local references: {reference}"));
    doc.pointer(pointer)
        .unwrap_or_else(|| panic!("{reference} points at nothing"))
}

/// Whether `v` conforms to `schema`: the part of OpenAPI 3.0's schema objects the document
/// uses (`$ref`, `type`, `nullable`, `enum`, `required`, `properties`,
/// `additionalProperties: false`, `items`, `allOf`, `oneOf`).
fn conforms(doc: &Value, schema: &Value, v: &Value, at: &str) -> Result<(), String> {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        return conforms(doc, resolve(doc, r), v, at);
    }
    if v.is_null() && schema["nullable"] == true {
        return Ok(());
    }
    for s in schema["allOf"].as_array().into_iter().flatten() {
        conforms(doc, s, v, at)?;
    }
    if let Some(one) = schema["oneOf"].as_array() {
        let n = one
            .iter()
            .filter(|s| conforms(doc, s, v, at).is_ok())
            .count();
        if n != 1 {
            return Err(format!("{at}: {v} matches {n} of oneOf"));
        }
    }
    if let Some(values) = schema["enum"].as_array() {
        if !values.contains(v) {
            return Err(format!("{at}: {v} is not one of {values:?}"));
        }
    }
    let fits = match schema["type"].as_str() {
        None => true,
        Some("object") => {
            let Some(o) = v.as_object() else {
                return Err(format!("{at}: {v} is not an object"));
            };
            for r in schema["required"].as_array().into_iter().flatten() {
                let r = r.as_str().unwrap_or_default();
                if !o.contains_key(r) {
                    return Err(format!("{at}: {r} is missing from {v}"));
                }
            }
            for (k, x) in o {
                match schema["properties"].get(k) {
                    Some(s) => conforms(doc, s, x, &format!("{at}.{k}"))?,
                    None if schema["additionalProperties"] == false => {
                        return Err(format!("{at}: {k} is not in the schema"))
                    }
                    None => {}
                }
            }
            true
        }
        Some("array") => {
            let Some(a) = v.as_array() else {
                return Err(format!("{at}: {v} is not an array"));
            };
            for (i, x) in a.iter().enumerate() {
                conforms(doc, &schema["items"], x, &format!("{at}[{i}]"))?;
            }
            true
        }
        Some("string") => v.is_string(),
        Some("integer") => v.is_i64() || v.is_u64(),
        Some("number") => v.is_number(),
        Some("boolean") => v.is_boolean(),
        Some(other) => return Err(format!("{at}: type {other} is not checked here")),
    };
    if fits {
        Ok(())
    } else {
        Err(format!("{at}: {v} is not of type {}", schema["type"]))
    }
}

/// Asserts that `v`, answered with `status` by `method path`, is what `docs/openapi.yaml`
/// documents: the JSON schema of that response (errors of unknown paths: `Error`).
fn assert_documented(method: &str, path: &str, status: u16, v: &Value) {
    let doc = openapi();
    // The document's path: `path` itself, or the template it fits (`/pipelines/{name}/...`).
    let documented = doc["paths"]
        .as_object()
        .and_then(|paths| {
            paths
                .keys()
                .find(|p| *p == path)
                .or_else(|| paths.keys().find(|p| path_fits(p, path)))
        })
        .map_or(path, String::as_str);
    let operation = &doc["paths"][documented][method.to_ascii_lowercase()];
    let schema = if operation.is_null() {
        assert!(
            [404, 405].contains(&status),
            "{method} {path} is not documented"
        );
        json!({"$ref": "#/components/schemas/Error"})
    } else {
        let mut response = &operation["responses"][status.to_string()];
        assert!(
            !response.is_null(),
            "{method} {path} does not document status {status} (answered {v})"
        );
        if let Some(r) = response.get("$ref").and_then(Value::as_str) {
            response = resolve(&doc, r);
        }
        response["content"]["application/json"]["schema"].clone()
    };
    assert!(
        !schema.is_null(),
        "{method} {path} {status}: no JSON schema"
    );
    if let Err(e) = conforms(&doc, &schema, v, "answer") {
        panic!("{method} {path} {status}: the answer does not fit docs/openapi.yaml: {e}");
    }
}

#[test]
fn the_openapi_document_lists_exactly_the_served_endpoints() {
    let doc = openapi();
    assert!(
        doc["openapi"]
            .as_str()
            .unwrap_or_default()
            .starts_with("3.0."),
        "{}",
        doc["openapi"]
    );
    let mut documented = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let key = (method.to_ascii_uppercase(), path.clone());
            let e = ENDPOINTS
                .iter()
                .find(|e| e.method.as_str() == key.0 && e.path == path)
                .unwrap_or_else(|| panic!("{key:?} is documented but not served"));
            // Bearer auth on exactly the mutating endpoints, with their 401 and 403.
            let secured = operation["security"]
                .as_array()
                .is_some_and(|s| s.iter().any(|r| r.get("bearer").is_some()));
            assert_eq!(secured, e.mutating, "{key:?}: security");
            let responses = operation["responses"].as_object().unwrap();
            for code in ["401", "403"] {
                assert_eq!(responses.contains_key(code), e.mutating, "{key:?} {code}");
            }
            assert!(responses.contains_key("503"), "{key:?}: 503 (busy)");
            // Every error answer is the Error schema.
            for (code, response) in responses {
                let response = match response.get("$ref").and_then(Value::as_str) {
                    Some(r) => resolve(&doc, r),
                    None => response,
                };
                assert!(response["description"].is_string(), "{key:?} {code}");
                if code.starts_with('4') {
                    assert_eq!(
                        response["content"]["application/json"]["schema"]["$ref"],
                        "#/components/schemas/Error",
                        "{key:?} {code}"
                    );
                }
            }
            assert!(documented.insert(key));
        }
    }
    let served: BTreeSet<_> = ENDPOINTS
        .iter()
        .map(|e| (e.method.as_str().to_string(), e.path.to_string()))
        .collect();
    assert_eq!(documented, served);
    assert_eq!(served.len(), ENDPOINTS.len(), "an endpoint is listed twice");
    assert_eq!(
        doc["components"]["schemas"]["Error"],
        json!({
            "type": "object",
            "description": "Every error answer.",
            "required": ["error"],
            "additionalProperties": false,
            "properties": {"error": {"type": "string", "description": "What went wrong and what to do."}},
            "example": doc["components"]["schemas"]["Error"]["example"].clone(),
        })
    );
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    // Every reference resolves.
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(o) => {
                if let Some(r) = o.get("$ref").and_then(Value::as_str) {
                    out.push(r.to_string());
                }
                o.values().for_each(|x| refs(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    refs(&doc, &mut all);
    assert!(!all.is_empty());
    for r in all {
        resolve(&doc, &r);
    }
}

#[test]
fn the_schemas_fit_what_the_types_serialize() {
    let doc = openapi();
    let schema = |name: &str| json!({"$ref": format!("#/components/schemas/{name}")});
    let check = |name: &str, v: Value| {
        if let Err(e) = conforms(&doc, &schema(name), &v, name) {
            panic!("{e}");
        }
    };
    // A status with everything set, and the fresh one.
    let mut progress = SnapshotProgress {
        started_ms: 1,
        then_stop: true,
        tables: vec![TableProgress::new("shop", "orders", 10)],
        finished_tables: 0,
        finished_rows: 0,
        finished_requests: Vec::new(),
    };
    progress.tables[0].key = vec!["id".into()];
    progress.tables[0].after = Some(vec![crate::snapshot::progress::KeyValue::Int(4)]);
    progress.tables[0].request = Some("r1".into());
    progress.tables[0].filter = Some("id > 1".into());
    progress.tables[0].scan = true;
    check("SnapshotProgress", serde_json::to_value(&progress).unwrap());
    // After a restart: finished tables and requests only counted.
    let mut restarted = progress.clone();
    restarted.finished_tables = 2;
    restarted.finished_rows = 20;
    restarted.finished_requests = vec!["r0".into()];
    check(
        "SnapshotProgress",
        serde_json::to_value(&restarted).unwrap(),
    );
    check("SnapshotAnswer", json!({ "snapshot": progress }));
    check("SnapshotAnswer", json!({ "snapshot": null }));
    check(
        "SnapshotAccepted",
        serde_json::to_value(Accepted {
            id: "r1".into(),
            tables: vec!["shop.orders".into()],
        })
        .unwrap(),
    );
    check(
        "SnapshotRequest",
        serde_json::to_value(AdhocRequest {
            tables: vec!["shop.orders".into()],
            filter: Some("id > 1".into()),
            id: Some("x".into()),
        })
        .unwrap(),
    );
    check(
        "Readiness",
        serde_json::to_value(crate::ops::readiness("backoff", 1.5, 60.0)).unwrap(),
    );
    let status = crate::metrics::Status {
        state: "streaming",
        read_position: Some("file:bin.000001:4".into()),
        committed_position: Some("file:bin.000001:4".into()),
        committed_at_ms: Some(2),
        committed_source_ts_ms: Some(1),
        lag_seconds: 0.5,
        binlog_retention_headroom_seconds: Some(3600.0),
        snapshot: Some(progress),
        last_error: Some(crate::metrics::LastError {
            kind: "transient".into(),
            message: "m".into(),
            at_ms: 3,
        }),
    };
    check(
        "Status",
        serde_json::to_value(StatusAnswer {
            status,
            paused: true,
        })
        .unwrap(),
    );
    check(
        "Config",
        ops(60.0, Arc::new(crate::metrics::Metrics::new("shop")))
            .config()
            .clone(),
    );
    // Every state the metrics know is in the document's enum, and no other.
    assert_eq!(
        doc["components"]["schemas"]["State"]["enum"],
        json!(crate::metrics::STATES)
    );
}

#[path = "hardening_tests.rs"]
mod hardening;

#[path = "pipelines_tests.rs"]
mod many_pipelines;
