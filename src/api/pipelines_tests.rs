//! One API in front of several pipelines: `GET /pipelines`, the `/pipelines/{name}/...`
//! paths acting on their pipeline only, the single-pipeline paths answering 409 with several
//! and 503 with none, the aggregated `GET /readyz`, the token on the named mutating paths and
//! the client asking a named pipeline. Answers are checked against `docs/openapi.yaml`.

use super::*;

/// The operators' handle of a pipeline named `name`, counted in `metrics`.
fn named_ops(name: &str, metrics: Arc<crate::metrics::Metrics>) -> Arc<Ops> {
    let text = format!(
        "name = \"{name}\"\n[source]\nurl = \"mysql://sluice:pw@127.0.0.1:3306\"\n\
         server_id = 7\ninclude = [\"shop\\\\..*\"]\n[kafka]\n\
         bootstrap_servers = \"127.0.0.1:9092\"\n"
    );
    let cfg =
        crate::config::load_from_str(&text, Vec::new()).unwrap_or_else(|e| panic!("{e}\n{text}"));
    Ops::new(&cfg, 60.0, metrics)
}

/// A server and the directory it serves (shared: pipelines may come and go).
struct Many {
    api: Running,
    pipelines: Pipelines,
    /// The pipelines' metrics, registered in the server's registry while it runs.
    _metrics: Vec<crate::metrics::Registration>,
}

impl Many {
    fn ops(&self, name: &str) -> Arc<Ops> {
        self.pipelines
            .get(name)
            .unwrap_or_else(|| panic!("no pipeline {name}"))
            .ops
    }
}

/// A handle of pipeline `name` whose stream is [`fake_stream`], with its metrics registered in
/// `registry`.
fn pipeline(
    name: &str,
    registry: &prometheus::Registry,
) -> (PipelineHandle, crate::metrics::Registration) {
    let registration = crate::metrics::Metrics::register(name, registry).unwrap();
    let (control, inbox) = channel();
    fake_stream(inbox);
    let ops = named_ops(name, registration.metrics().clone());
    (PipelineHandle { ops, control }, registration)
}

/// A server on 127.0.0.1:0 of pipelines `names`, with `token`. Its `Running::ops` belongs to
/// no pipeline served: use [`Many::ops`].
async fn start_many(names: &[&str], token: Option<&str>) -> Many {
    let cfg = ApiConfig {
        listen: "127.0.0.1:0".into(),
        token: Secret::new(token.unwrap_or_default().to_string()),
        ..ApiConfig::default()
    };
    let registry = prometheus::Registry::new();
    let pipelines = Pipelines::new();
    let mut registrations = Vec::new();
    for name in names {
        let (handle, registration) = pipeline(name, &registry);
        pipelines.insert(name, handle);
        registrations.push(registration);
    }
    let (stop, stop_rx) = watch::channel(false);
    let state = ApiState::new(pipelines.clone(), cfg.token().map(str::to_owned), registry);
    let server = serve(&cfg, state, stop_rx).await.unwrap();
    let unused = crate::metrics::Metrics::register("unused", &prometheus::Registry::new()).unwrap();
    let api = Running {
        server,
        stop,
        http: reqwest::Client::builder().no_proxy().build().unwrap(),
        ops: named_ops("unused", unused.metrics().clone()),
        pipelines: pipelines.clone(),
        _metrics: unused,
    };
    Many {
        api,
        pipelines,
        _metrics: registrations,
    }
}

const SINGLE: [(&str, &str); 7] = [
    ("GET", "/status"),
    ("GET", "/config"),
    ("GET", "/tables"),
    ("GET", "/snapshots"),
    ("POST", "/pause"),
    ("POST", "/resume"),
    ("POST", "/snapshots"),
];

#[tokio::test]
async fn several_pipelines_are_served_by_name() {
    let many = start_many(&["b", "a"], None).await;
    let api = &many.api;
    let (a, b) = (many.ops("a"), many.ops("b"));
    a.metrics().set_state("streaming");
    a.metrics()
        .resumed_from(None, crate::model::clock::now_ms());
    b.metrics().set_state("starting");

    // The list, sorted by name, with each one's state.
    let (status, v) = api.checked("GET", "/pipelines", None, None).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        v,
        json!({"pipelines": [
            {"name": "a", "state": "streaming", "paused": false},
            {"name": "b", "state": "starting", "paused": false},
        ]})
    );

    // Each path answers for its own pipeline.
    let (status, v) = api.checked("GET", "/pipelines/a/status", None, None).await;
    assert_eq!((status, &v["state"]), (200, &json!("streaming")), "{v}");
    let (status, v) = api.checked("GET", "/pipelines/b/status", None, None).await;
    assert_eq!((status, &v["state"]), (200, &json!("starting")), "{v}");
    for name in ["a", "b"] {
        let (status, v) = api
            .checked("GET", &format!("/pipelines/{name}/config"), None, None)
            .await;
        assert_eq!((status, &v["name"]), (200, &json!(name)), "{v}");
    }
    a.set_tables(vec![TableInfo {
        table: "shop.orders".into(),
        topic: "a.shop.orders".into(),
        format: "json".into(),
        key_columns: vec!["id".into()],
        key_source: "primary key".into(),
    }]);
    let (_, v) = api.checked("GET", "/pipelines/a/tables", None, None).await;
    assert_eq!(v["tables"].as_array().map(Vec::len), Some(1), "{v}");
    let (_, v) = api.checked("GET", "/pipelines/b/tables", None, None).await;
    assert_eq!(v, json!({"tables": []}));

    // Pausing a leaves b alone.
    let (status, v) = api.checked("POST", "/pipelines/a/pause", None, None).await;
    assert_eq!((status, v), (202, json!({"paused": true, "changed": true})));
    assert!(a.is_paused());
    assert!(!b.is_paused());
    let (_, v) = api.checked("GET", "/pipelines", None, None).await;
    assert_eq!(
        (&v["pipelines"][0]["paused"], &v["pipelines"][1]["paused"]),
        (&json!(true), &json!(false)),
        "{v}"
    );
    let (_, v) = api.checked("GET", "/pipelines/b/status", None, None).await;
    assert_eq!(v["paused"], false, "{v}");
    // The paused one refuses snapshot requests, naming its own resume path; b takes them.
    let body = Some(r#"{"tables":["shop.orders"]}"#);
    let (status, v) = api
        .checked("POST", "/pipelines/a/snapshots", body, None)
        .await;
    assert_eq!(status, 503, "{v}");
    assert!(error_text(&v).contains("POST /pipelines/a/resume,"), "{v}");
    let (status, v) = api
        .checked("POST", "/pipelines/b/snapshots", body, None)
        .await;
    assert_eq!(status, 202, "{v}");
    let (_, v) = api
        .checked("GET", "/pipelines/b/snapshots", None, None)
        .await;
    assert!(v["snapshot"].is_object(), "{v}");
    let (_, v) = api
        .checked("GET", "/pipelines/a/snapshots", None, None)
        .await;
    assert_eq!(v, json!({"snapshot": null}));
    let (status, _) = api.checked("POST", "/pipelines/a/resume", None, None).await;
    assert_eq!(status, 202);
    assert!(!a.is_paused());

    // An unknown name: 404 naming the pipelines.
    for (method, path) in [
        ("GET", "/pipelines/nope/status"),
        ("POST", "/pipelines/nope/pause"),
    ] {
        let (status, v) = api.checked(method, path, None, None).await;
        assert_eq!(status, 404, "{path}: {v}");
        let text = error_text(&v);
        assert!(text.contains("\"nope\"") && text.contains("a, b"), "{v}");
    }

    // The single-pipeline paths are ambiguous: 409 naming both and the path to use.
    for (method, path) in SINGLE {
        let (status, v) = api.checked(method, path, body, None).await;
        assert_eq!(status, 409, "{method} {path}: {v}");
        let text = error_text(&v);
        assert!(
            text.contains("2 pipelines (a, b)")
                && text.contains(&format!("use /pipelines/{{name}}{path}")),
            "{v}"
        );
    }
    assert!(!a.is_paused() && !b.is_paused());

    // A templated path with another method: 405 naming what it takes.
    let (status, v) = api.call("GET", "/pipelines/a/pause", None, None).await;
    assert_eq!(status, 405, "{v}");
    assert!(
        error_text(&v).contains("it takes POST /pipelines/{name}/pause;"),
        "{v}"
    );

    // Readiness: each pipeline's, and together ready only when every one is.
    let (status, v) = api.checked("GET", "/readyz", None, None).await;
    assert_eq!(status, 503, "{v}");
    assert_eq!(v["ready"], false, "{v}");
    let each = v["pipelines"].as_object().unwrap();
    assert_eq!(each.keys().collect::<Vec<_>>(), ["a", "b"], "{v}");
    assert_eq!(
        (&each["a"]["ready"], &each["b"]["ready"]),
        (&json!(true), &json!(false))
    );
    assert_eq!(each["b"]["state"], "starting", "{v}");
    let (status, v) = api.checked("GET", "/pipelines/a/readyz", None, None).await;
    assert_eq!((status, &v["ready"]), (200, &json!(true)), "{v}");
    let (status, v) = api.checked("GET", "/pipelines/b/readyz", None, None).await;
    assert_eq!((status, &v["ready"]), (503, &json!(false)), "{v}");
    b.metrics().set_state("streaming");
    b.metrics()
        .resumed_from(None, crate::model::clock::now_ms());
    let (status, v) = api.checked("GET", "/readyz", None, None).await;
    assert_eq!((status, &v["ready"]), (200, &json!(true)), "{v}");
}

#[tokio::test]
async fn one_pipeline_answers_by_name_too() {
    let api = start("127.0.0.1:0", None).await;
    let (_, v) = api.checked("GET", "/pipelines", None, None).await;
    assert_eq!(v["pipelines"].as_array().map(Vec::len), Some(1), "{v}");
    assert_eq!(v["pipelines"][0]["name"], "shop", "{v}");
    let (status, single) = api.checked("GET", "/status", None, None).await;
    assert_eq!(status, 200);
    let (status, named) = api
        .checked("GET", "/pipelines/shop/status", None, None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        (&single["state"], &single["paused"]),
        (&named["state"], &named["paused"])
    );
    let (status, v) = api
        .checked("GET", "/pipelines/shop/config", None, None)
        .await;
    assert_eq!((status, &v["name"]), (200, &json!("shop")));
    assert_eq!(
        api.checked("GET", "/readyz", None, None).await.0,
        api.checked("GET", "/pipelines/shop/readyz", None, None)
            .await
            .0
    );
    let (status, v) = api
        .checked("GET", "/pipelines/other/status", None, None)
        .await;
    assert_eq!(status, 404, "{v}");
    assert!(error_text(&v).contains("the pipelines are shop"), "{v}");
    let (status, _) = api
        .checked("POST", "/pipelines/shop/pause", None, None)
        .await;
    assert_eq!(status, 202);
    assert!(api.ops.is_paused());
}

#[tokio::test]
async fn no_pipeline_yet_is_unavailable() {
    let many = start_many(&[], None).await;
    let api = &many.api;
    for (method, path) in SINGLE.iter().copied().chain([("GET", "/readyz")]) {
        let (status, v) = api.checked(method, path, None, None).await;
        assert_eq!(status, 503, "{method} {path}: {v}");
        assert!(
            error_text(&v).contains("no pipeline has started yet"),
            "{v}"
        );
    }
    assert_eq!(
        api.checked("GET", "/pipelines", None, None).await,
        (200, json!({"pipelines": []}))
    );
    let (status, v) = api.checked("GET", "/pipelines/a/status", None, None).await;
    assert_eq!(status, 404, "{v}");
    assert!(
        error_text(&v).contains("no pipeline has started yet"),
        "{v}"
    );

    // The directory is shared: a pipeline registered later is served, a removed one is gone.
    let registry = prometheus::Registry::new();
    let (handle, _registration) = pipeline("a", &registry);
    many.pipelines.insert("a", handle);
    assert_eq!(many.pipelines.names(), ["a"]);
    assert_eq!(api.checked("GET", "/status", None, None).await.0, 200);
    assert_eq!(
        api.checked("GET", "/pipelines/a/status", None, None)
            .await
            .0,
        200
    );
    many.pipelines.remove("a");
    assert!(many.pipelines.is_empty());
    assert_eq!(api.checked("GET", "/status", None, None).await.0, 503);
}

#[tokio::test]
async fn mutating_named_paths_need_the_token() {
    let many = start_many(&["a", "b"], Some("s3cret-token")).await;
    let api = &many.api;
    let body = Some(r#"{"tables":["shop.orders"]}"#);
    for path in [
        "/pipelines/a/pause",
        "/pipelines/a/resume",
        "/pipelines/a/snapshots",
        // Refused before the name is looked at: no answer tells pipelines apart.
        "/pipelines/nope/pause",
    ] {
        let (status, v) = api.checked("POST", path, body, None).await;
        assert_eq!(status, 401, "{path}: {v}");
        assert!(error_text(&v).contains("Authorization: Bearer"), "{v}");
        let (status, v) = api.checked("POST", path, body, Some("wrong")).await;
        assert_eq!(status, 401, "{path}: {v}");
    }
    assert!(!many.ops("a").is_paused(), "a refused pause must not pause");
    let (status, _) = api
        .checked("POST", "/pipelines/a/pause", None, Some("s3cret-token"))
        .await;
    assert_eq!(status, 202);
    assert!(many.ops("a").is_paused() && !many.ops("b").is_paused());
    let (status, _) = api
        .checked("POST", "/pipelines/b/snapshots", body, Some("s3cret-token"))
        .await;
    assert_eq!(status, 202);
    // Reading needs no token.
    assert_eq!(
        api.checked("GET", "/pipelines/a/status", None, None)
            .await
            .0,
        200
    );
}

#[tokio::test]
async fn the_client_asks_the_pipeline_named() {
    let many = start_many(&["a", "b"], None).await;
    let api = &many.api;
    let request = AdhocRequest {
        tables: vec!["shop.items".into()],
        filter: None,
        id: None,
    };
    let client = Client::new(api.server.addr, None)
        .unwrap()
        .for_pipeline(Some("b"));
    let accepted = client.request(&request).await.unwrap();
    let status = client
        .wait_done(
            &accepted.id,
            Duration::from_millis(30),
            Duration::from_secs(5),
            |_| {},
        )
        .await
        .unwrap();
    assert!(status.totals.all_done());
    let (_, v) = api
        .checked("GET", "/pipelines/a/snapshots", None, None)
        .await;
    assert_eq!(v, json!({"snapshot": null}), "a got nothing");

    // Without a name, several pipelines are ambiguous: the error says what to use.
    let e = Client::new(api.server.addr, None)
        .unwrap()
        .for_pipeline(None)
        .request(&request)
        .await
        .err()
        .unwrap();
    assert_eq!(e.kind(), crate::error::ErrorKind::Definite);
    let text = e.to_string();
    assert!(
        text.contains("409") && text.contains("/pipelines/{name}/snapshots"),
        "{text}"
    );
    // An unknown name.
    let e = Client::new(api.server.addr, None)
        .unwrap()
        .for_pipeline(Some("nope"))
        .progress()
        .await
        .err()
        .unwrap();
    assert!(
        e.to_string().contains("GET /pipelines/nope/snapshots") && e.to_string().contains("404"),
        "{e}"
    );
}

#[test]
fn request_paths_fit_endpoint_paths() {
    assert!(path_fits("/status", "/status"));
    assert!(path_fits("/pipelines/{name}/status", "/pipelines/a/status"));
    assert!(path_fits(
        "/pipelines/{name}/status",
        "/pipelines/a%20b/status"
    ));
    assert!(!path_fits("/pipelines/{name}/status", "/pipelines//status"));
    assert!(!path_fits(
        "/pipelines/{name}/status",
        "/pipelines/a/status/x"
    ));
    assert!(!path_fits("/pipelines/{name}/status", "/pipelines/a"));
    assert!(!path_fits("/pipelines/{name}/status", "/status"));
    assert!(!path_fits("/pipelines", "/pipelines/a"));
}

// A runtime for the streams of the handles.
#[tokio::test]
async fn the_directory_keeps_names_sorted_and_survives_a_poisoned_lock() {
    let registry = prometheus::Registry::new();
    let pipelines = Pipelines::new();
    assert!(pipelines.is_empty() && pipelines.names().is_empty());
    let (c, _rc) = pipeline("c", &registry);
    let (a, _ra) = pipeline("a", &registry);
    pipelines.insert("c", c.clone());
    pipelines.insert("a", a);
    pipelines.insert("c", c);
    assert_eq!(pipelines.names(), ["a", "c"]);
    assert_eq!(pipelines.len(), 2);
    assert!(pipelines.get("b").is_none());
    // A panic while the lock is held poisons it; the directory stays usable.
    let clone = pipelines.clone();
    let _ = std::thread::spawn(move || {
        let _guard = clone.by_name.write().unwrap();
        panic!("poisoning the lock on purpose");
    })
    .join();
    assert!(pipelines.by_name.is_poisoned());
    pipelines.remove("c");
    assert_eq!(pipelines.names(), ["a"]);
    assert!(pipelines.get("a").is_some());
}
