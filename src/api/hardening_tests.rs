//! The API against a web page and a misbehaving client: a foreign `Host` (DNS rebinding), a
//! cross-origin POST, a body that is not JSON, headers that never end, an idle kept-alive
//! connection, more connections than allowed and a body that never arrives. Real sockets on
//! 127.0.0.1.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::*;

async fn start_cfg(cfg: ApiConfig) -> Running {
    let (control, inbox) = channel();
    fake_stream(inbox);
    start_configured(control, cfg).await
}

fn loopback() -> ApiConfig {
    ApiConfig {
        listen: "127.0.0.1:0".into(),
        ..ApiConfig::default()
    }
}

/// Sends `request` as raw bytes and reads until the server closes (or `within` passes);
/// returns what was read and whether the server closed the connection in time.
async fn raw(api: &Running, request: &[u8], within: Duration) -> (String, bool) {
    let mut tcp = TcpStream::connect(api.server.addr).await.unwrap();
    tcp.write_all(request).await.unwrap();
    read_until_closed(&mut tcp, within).await
}

async fn read_until_closed(tcp: &mut TcpStream, within: Duration) -> (String, bool) {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, tcp.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (String::from_utf8_lossy(&got).into(), true),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => return (String::from_utf8_lossy(&got).into(), false),
        }
    }
}

#[tokio::test]
async fn a_foreign_host_is_refused_everywhere() {
    let api = start_cfg(ApiConfig {
        allowed_hosts: vec!["sluice:8089".into()],
        ..loopback()
    })
    .await;
    for (host, want) in [
        ("rebind.attacker.test", 403),
        ("localhost.attacker.test:8089", 403),
        ("sluice:9999", 403),
        ("sluice:8089", 200),
        ("localhost", 200),
        ("127.0.0.1", 200),
    ] {
        for path in ["/config", "/status", "/metrics"] {
            let r = api
                .http
                .get(api.url(path))
                .header("Host", host)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), want, "{path} with Host {host}");
            if want == 403 {
                let body = r.text().await.unwrap();
                assert!(body.contains("api.allowed_hosts"), "{body}");
                assert!(!body.contains(SOURCE_PASSWORD), "{body}");
            }
        }
    }
}

#[tokio::test]
async fn a_cross_origin_post_changes_nothing() {
    let api = start_cfg(loopback()).await;
    // What a page's form or fetch(..., {mode: "no-cors"}) sends: no preflight is needed.
    let r = api
        .http
        .post(api.url("/pause"))
        .header("Origin", "https://evil.example")
        .header("Content-Type", "text/plain")
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
    let body = r.text().await.unwrap();
    assert!(body.contains("api.allowed_origins"), "{body}");
    assert!(!api.ops.is_paused(), "a refused request must not pause");
    let r = api
        .http
        .post(api.url("/snapshots"))
        .header("Origin", "null")
        .header("Content-Type", "application/json")
        .body(r#"{"tables":["shop.orders"]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 403, "a sandboxed page's `null` origin");

    let allowed = start_cfg(ApiConfig {
        allowed_origins: vec!["https://ops.example.com".into()],
        ..loopback()
    })
    .await;
    let r = allowed
        .http
        .post(allowed.url("/pause"))
        .header("Origin", "https://ops.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 202, "an allowed origin, no body");
    assert!(allowed.ops.is_paused());
    // Reading endpoints do not look at Origin (the browser withholds the answer anyway).
    let r = api
        .http
        .get(api.url("/status"))
        .header("Origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
}

#[tokio::test]
async fn a_body_that_is_not_json_is_refused() {
    let api = start_cfg(loopback()).await;
    for content_type in [
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
    ] {
        let mut b = api
            .http
            .post(api.url("/snapshots"))
            .body(r#"{"tables":["shop.orders"]}"#);
        if let Some(ct) = content_type {
            b = b.header("Content-Type", ct);
        }
        let r = b.send().await.unwrap();
        assert_eq!(r.status().as_u16(), 415, "{content_type:?}");
        assert!(r.text().await.unwrap().contains("application/json"));
    }
    assert!(!api.ops.is_paused());
    let (status, _) = api.call("POST", "/pause", None, None).await;
    assert_eq!(status, 202, "a POST without a body stays valid");
    let r = api
        .http
        .post(api.url("/resume"))
        .header("Content-Type", "application/json; charset=utf-8")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 202);
}

#[tokio::test]
async fn headers_that_never_end_and_idle_connections_are_closed() {
    let api = start_cfg(ApiConfig {
        header_timeout_ms: 300,
        ..loopback()
    })
    .await;
    let started = Instant::now();
    let (got, closed) = raw(
        &api,
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1\r\n",
        Duration::from_secs(5),
    )
    .await;
    assert!(closed, "a request head that never ends is closed");
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "{:?}",
        started.elapsed()
    );
    assert!(!got.contains("200 OK"), "{got}");

    // One answered request, then nothing: the kept-alive connection is closed too.
    let mut tcp = TcpStream::connect(api.server.addr).await.unwrap();
    tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let started = Instant::now();
    let (got, closed) = read_until_closed(&mut tcp, Duration::from_secs(5)).await;
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    assert!(closed, "an idle kept-alive connection is closed");
    assert!(started.elapsed() < Duration::from_secs(4));
}

#[tokio::test]
async fn connections_beyond_the_cap_are_closed() {
    let api = start_cfg(ApiConfig {
        max_connections: 2,
        ..loopback()
    })
    .await;
    let mut held = Vec::new();
    for _ in 0..2 {
        let tcp = TcpStream::connect(api.server.addr).await.unwrap();
        held.push(tcp);
    }
    // Let the server accept both before the third arrives.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (got, closed) = raw(
        &api,
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        Duration::from_secs(3),
    )
    .await;
    assert!(
        closed && got.is_empty(),
        "the third connection is closed unanswered: {got:?}"
    );
    drop(held.pop());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (got, _) = raw(
        &api,
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        Duration::from_secs(3),
    )
    .await;
    assert!(
        got.starts_with("HTTP/1.1 200"),
        "a freed slot serves again: {got:?}"
    );
}

#[tokio::test]
async fn a_body_that_never_arrives_is_answered_408() {
    let api = start_cfg(ApiConfig {
        request_timeout_ms: 300,
        ..loopback()
    })
    .await;
    let (got, _) = raw(
        &api,
        b"POST /snapshots HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
          Content-Length: 100\r\n\r\n{\"tables\":",
        Duration::from_secs(5),
    )
    .await;
    assert!(got.starts_with("HTTP/1.1 408"), "{got:?}");
    assert!(got.contains("api.request_timeout_ms"), "{got:?}");
}
