//! What a request must look like before any handler sees it: a `Host` that is an IP address,
//! a loopback name or in `api.allowed_hosts` (DNS rebinding), and for the mutating endpoints
//! no `Origin` outside `api.allowed_origins` (cross-site requests from a page the operator
//! opens) and a JSON body or none (a browser's "simple" `text/plain` POST needs no preflight);
//! and each request answered within `api.request_timeout_ms`.
//!
//! Invariant: these checks read headers only; a refused request is answered 403, 415 or 408
//! with a sentence naming the setting that would allow it, and changes nothing.

use std::net::IpAddr;

use axum::http::{header, HeaderMap};

/// Whether a request with this `Host` header may be served: none (HTTP/1.0), an IP address
/// (a rebinding attack needs a name), a loopback name, or a name of `allowed` (compared
/// without case, with the port when the entry has one, else with any port).
pub(super) fn host_allowed(host: Option<&str>, allowed: &[String]) -> bool {
    let Some(host) = host.map(str::trim) else {
        return true;
    };
    let (name, _port) = split_host_port(host);
    if name.parse::<IpAddr>().is_ok() {
        return true;
    }
    let name = name.to_ascii_lowercase();
    if name == "localhost" || name.ends_with(".localhost") {
        return true;
    }
    allowed.iter().any(|entry| {
        let entry = entry.trim();
        let (entry_name, entry_port) = split_host_port(entry);
        if entry_port.is_some() {
            entry.eq_ignore_ascii_case(host)
        } else {
            entry_name.eq_ignore_ascii_case(&name)
        }
    })
}

/// `host` and `port` of `host[:port]` (`[v6]:port` too), without the brackets.
fn split_host_port(text: &str) -> (&str, Option<&str>) {
    if let Some(rest) = text.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((ip, tail)) => (ip, tail.strip_prefix(':')),
            None => (text, None),
        };
    }
    match text.rsplit_once(':') {
        // One colon: name:port; more: a bare IPv6 address.
        Some((name, port)) if !name.contains(':') => (name, Some(port)),
        _ => (text, None),
    }
}

/// Whether a mutating request's `Origin` (when it has one) is allowed: only origins of
/// `allowed` (exact, without case). `null` (sandboxed pages, file://) never is.
pub(super) fn origin_allowed(origin: Option<&str>, allowed: &[String]) -> bool {
    match origin.map(str::trim) {
        None => true,
        Some(origin) => allowed
            .iter()
            .any(|a| a.trim().trim_end_matches('/').eq_ignore_ascii_case(origin)),
    }
}

/// Whether the request carries a body: a non-zero `Content-Length` or any
/// `Transfer-Encoding`.
pub(super) fn has_body(headers: &HeaderMap) -> bool {
    headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim() != "0")
}

/// Whether the `Content-Type` is JSON: `application/json`, parameters (`; charset=utf-8`)
/// allowed.
pub(super) fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn hosts_by_address_loopback_name_or_list() {
        let none = hosts(&[]);
        for ok in [
            "127.0.0.1:8089",
            "10.1.2.3",
            "[::1]:8089",
            "::1",
            "localhost:8089",
            "LOCALHOST",
            "api.localhost:1",
        ] {
            assert!(host_allowed(Some(ok), &none), "{ok}");
        }
        assert!(host_allowed(None, &none));
        for refused in [
            "evil.example:8089",
            "rebind.attacker.test",
            "localhost.attacker.test",
            "sluice:8089",
            "",
        ] {
            assert!(!host_allowed(Some(refused), &none), "{refused}");
        }
        let list = hosts(&["sluice:8089", "Metrics.Internal"]);
        assert!(host_allowed(Some("sluice:8089"), &list));
        assert!(host_allowed(Some("SLUICE:8089"), &list));
        assert!(
            !host_allowed(Some("sluice:9999"), &list),
            "the port is part of the entry"
        );
        assert!(!host_allowed(Some("sluice"), &list));
        assert!(
            host_allowed(Some("metrics.internal:1234"), &list),
            "any port"
        );
        assert!(host_allowed(Some("metrics.internal"), &list));
    }

    #[test]
    fn origins_only_from_the_list() {
        let list = hosts(&["https://ops.example.com", "http://localhost:3000/"]);
        assert!(origin_allowed(None, &list));
        assert!(origin_allowed(Some("https://ops.example.com"), &list));
        assert!(origin_allowed(Some("http://localhost:3000"), &list));
        assert!(!origin_allowed(
            Some("https://ops.example.com.evil.test"),
            &list
        ));
        assert!(!origin_allowed(Some("http://ops.example.com"), &list));
        assert!(!origin_allowed(Some("null"), &list));
        assert!(!origin_allowed(Some("http://127.0.0.1:8089"), &hosts(&[])));
    }

    #[test]
    fn bodies_and_their_type() {
        let mut h = HeaderMap::new();
        assert!(!has_body(&h));
        h.insert(header::CONTENT_LENGTH, "0".parse().unwrap());
        assert!(!has_body(&h));
        h.insert(header::CONTENT_LENGTH, "12".parse().unwrap());
        assert!(has_body(&h));
        assert!(!is_json(&h));
        h.insert(header::CONTENT_TYPE, "text/plain".parse().unwrap());
        assert!(!is_json(&h));
        h.insert(
            header::CONTENT_TYPE,
            "Application/JSON; charset=utf-8".parse().unwrap(),
        );
        assert!(is_json(&h));
        let mut chunked = HeaderMap::new();
        chunked.insert(header::TRANSFER_ENCODING, "chunked".parse().unwrap());
        assert!(has_body(&chunked));
    }
}
