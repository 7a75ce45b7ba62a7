//! The API in-process: a server on 127.0.0.1:0 whose stream end is a small task answering
//! requests (it knows two tables) and publishing progress.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::watch;

use super::client::{Client, Totals};
use super::*;
use crate::snapshot::adhoc::{channel, Accepted, Inbox};
use crate::snapshot::progress::{SnapshotProgress, TableProgress};

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
            b = b.body(body.to_string());
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
}

async fn start(listen: &str, token: Option<&str>) -> Running {
    let (control, inbox) = channel();
    fake_stream(inbox);
    start_with(control, listen, token).await
}

async fn start_with(control: SnapshotControl, listen: &str, token: Option<&str>) -> Running {
    let cfg = ApiConfig {
        enabled: true,
        listen: listen.into(),
        token: Secret::new(token.unwrap_or_default().to_string()),
    };
    let (stop, stop_rx) = watch::channel(false);
    let state = ApiState::new(control, cfg.token().map(str::to_owned));
    let server = serve(&cfg, state, stop_rx).await.unwrap();
    assert_ne!(server.addr.port(), 0);
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    Running { server, stop, http }
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
        enabled: true,
        listen: api.server.addr.to_string(),
        token: Secret::default(),
    };
    let (_stop, rx) = watch::channel(false);
    let e = serve(&cfg, ApiState::new(control, None), rx)
        .await
        .err()
        .unwrap();
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
