//! The HTTP API of a running pipeline and `sluice snapshot`'s answers when it cannot reach one.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::*;

async fn get(url: &str) -> (u16, Value) {
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let r = http.get(url).send().await.unwrap();
    let status = r.status().as_u16();
    (
        status,
        serde_json::from_str(&r.text().await.unwrap()).unwrap(),
    )
}

#[tokio::test]
async fn a_running_pipeline_serves_the_api() {
    let p = Pipeline::new(MARIADB, "api", "");
    let (_c, mut child) = p.start_with(&[("t", "(id INT PRIMARY KEY)")]).await;
    let addr = p.api_addr(Duration::from_secs(30));
    assert!(addr.ip().is_loopback() && addr.port() != 0, "{addr}");
    assert_eq!(
        get(&format!("http://{addr}/healthz")).await,
        (200, json!({"status": "ok"}))
    );
    // start = "latest": no snapshot.
    assert_eq!(
        get(&format!("http://{addr}/snapshots")).await,
        (200, json!({"snapshot": null}))
    );
    let (status, v) = get(&format!("http://{addr}/metrics-not-yet")).await;
    assert_eq!(status, 404, "{v}");

    // `sluice snapshot` cannot know a port 0 server's port.
    let (code, out) = p.command(&["snapshot", "--table", &format!("{}.t", p.db)]);
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("port 0") && out.contains("api.listen"),
        "{out}"
    );

    let st = terminate(&mut child);
    assert!(st.success(), "{st:?}; log:\n{}", p.log());
    // The API stopped with the pipeline.
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    assert!(http
        .get(format!("http://{addr}/healthz"))
        .send()
        .await
        .is_err());
}

#[test]
fn snapshot_command_names_the_address_when_nothing_listens() {
    let p = Pipeline::new(MARIADB, "apicli", "");
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    p.edit_config(
        "listen = \"127.0.0.1:0\"",
        &format!("listen = \"127.0.0.1:{port}\""),
    );
    let (code, out) = p.command(&["snapshot", "--table", "a.b", "--no-wait"]);
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("is `sluice run` running with the API enabled")
            && out.contains(&format!("127.0.0.1:{port}")),
        "{out}"
    );
}

#[test]
fn a_taken_api_port_stops_run_naming_the_setting() {
    let p = Pipeline::new(MARIADB, "apiport", "");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    p.edit_config("listen = \"127.0.0.1:0\"", &format!("listen = \"{addr}\""));
    let (code, out) = p.command(&["run"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("api.listen") && out.contains(&addr.to_string()),
        "{out}"
    );
    assert_nothing_written(&p);
}
