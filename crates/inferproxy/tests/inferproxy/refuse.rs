//! What is not allowed never reaches llama-server, and each refusal is a typed answer.

use std::io::{Read, Write};

use crate::support::{Gate, Proxy, STREAM_HEAD, TempDir, Upstream, answer, chat_body, chunk};

fn any_upstream() -> Upstream {
    Upstream::start(|_, stream| {
        let _ = stream.write_all(&answer("200 OK", "application/json", "{}"));
    })
}

/// Parses an answer of the proxy's own: status and the JSON error's `type`.
fn refusal(bytes: &[u8]) -> (u16, String) {
    let mut reader = bytes;
    let head = strict_http::read_response_head(&mut reader).expect("answer head");
    assert_eq!(
        head.headers.get("content-type"),
        Some("application/json; charset=utf-8")
    );
    assert_eq!(head.headers.get("connection"), Some("close"));
    let body = String::from_utf8_lossy(reader).into_owned();
    assert!(
        body.starts_with(&format!(
            "{{\"error\":{{\"code\":{},\"message\":\"",
            head.status
        )),
        "{body}"
    );
    let kind = body
        .rsplit_once("\"type\":\"")
        .map(|(_, t)| t.trim_end_matches("\"}}").to_owned())
        .expect("type");
    (head.status, kind)
}

#[test]
fn everything_but_the_four_requests_is_forbidden() {
    let up = any_upstream();
    let proxy = Proxy::start(up.port, "");
    for (method, target) in [
        ("GET", "/slots"),
        ("GET", "/slots?fail_on_no_slot=1"),
        ("POST", "/slots/0?action=save"),
        ("POST", "/slots/0?action=erase"),
        ("POST", "/props"),
        ("POST", "/completion"),
        ("POST", "/completions"),
        ("POST", "/v1/completions"),
        ("POST", "/tokenize"),
        ("POST", "/detokenize"),
        ("POST", "/apply-template"),
        ("POST", "/embedding"),
        ("GET", "/metrics"),
        ("POST", "/lora-adapters"),
        ("GET", "/v1/chat/completions"),
        ("PUT", "/v1/chat/completions"),
        ("POST", "/chat/completions"),
        ("POST", "/v1/chat/completions?x=1"),
        ("POST", "/v1/chat/%63ompletions"),
        ("POST", "/v1/chat/completions/"),
        ("POST", "/v1//chat/completions"),
        ("GET", "//health"),
        ("GET", "/./health"),
        ("GET", "/health/"),
        ("GET", "/HEALTH"),
        ("HEAD", "/health"),
        ("DELETE", "/v1/models"),
        ("OPTIONS", "/v1/models"),
    ] {
        let request =
            format!("{method} {target} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{{}}");
        let (status, kind) = refusal(&proxy.raw(request.as_bytes()));
        assert_eq!(
            (status, kind.as_str()),
            (403, "forbidden"),
            "{method} {target}"
        );
    }
    up.saw_nothing();
}

#[test]
fn a_request_over_the_size_limit_is_413() {
    let up = any_upstream();
    let body = chat_body();
    let limit = body.len();
    let proxy = Proxy::start(up.port, &format!("max_request_bytes = {limit}"));
    // Refused from its Content-Length, before the body is sent.
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
        limit + 1
    );
    assert_eq!(refusal(&proxy.raw(head.as_bytes())).0, 413);
    // A chunked body, refused once it passes the limit.
    let mut chunked =
        b"POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    chunked.extend_from_slice(&chunk(&vec![b'x'; limit - 24]));
    chunked.extend_from_slice(&chunk(&[b'x'; 25]));
    chunked.extend_from_slice(b"0\r\n\r\n");
    assert_eq!(refusal(&proxy.raw(&chunked)).0, 413);
    up.saw_nothing();
    // Exactly the limit goes through.
    let (status, _, _) = proxy.call("POST", "/v1/chat/completions", &body);
    assert_eq!(status, 200);
    assert_eq!(up.next().body.len(), limit);
}

#[test]
fn malformed_and_smuggling_requests_are_refused() {
    let up = any_upstream();
    let proxy = Proxy::start(up.port, "");
    let path = "POST /v1/chat/completions HTTP/1.1\r\n";
    for (fields, expected) in [
        ("Content-Length: 2\r\nTransfer-Encoding: chunked\r\n", 400),
        ("Content-Length: 2\r\nContent-Length: 2\r\n", 400),
        ("Transfer-Encoding: gzip, chunked\r\n", 501),
        ("Content-Length: 2\r\nX: a\r\n b\r\n", 400),
        ("Content-Length: 2\r\nX: a\rb\r\n", 400),
        ("Content-Length : 2\r\n", 400),
        ("Content-Length: 2\r\nExpect: something\r\n", 417),
    ] {
        let request = format!("{path}{fields}\r\n{{}}");
        assert_eq!(
            refusal(&proxy.raw(request.as_bytes())).0,
            expected,
            "{fields:?}"
        );
    }
    assert_eq!(refusal(&proxy.raw(b"GET /health HTTP/1.1\n\n")).0, 400);
    assert_eq!(refusal(&proxy.raw(b"GET /health HTTP/2.0\r\n\r\n")).0, 505);
    let big = format!("GET /health HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(20_000));
    assert_eq!(refusal(&proxy.raw(big.as_bytes())).0, 431);
    up.saw_nothing();
}

#[test]
fn expect_100_continue_is_answered_before_the_body() {
    let up = any_upstream();
    let proxy = Proxy::start(up.port, "");
    let mut s = proxy.connect();
    let body = chat_body();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).expect("head");
    let mut interim = [0u8; 25];
    s.read_exact(&mut interim).expect("100 Continue");
    assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    s.write_all(&body).expect("body");
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).expect("answer");
    assert!(rest.starts_with(b"HTTP/1.1 200 OK\r\n"));
    assert!(!up.next().head.headers.contains("expect"));
}

#[test]
fn a_slow_request_is_408() {
    let up = any_upstream();
    let proxy = Proxy::start(up.port, "request_timeout = \"300ms\"");
    let mut s = proxy.connect();
    s.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 10\r\n\r\n{")
        .expect("part of a request");
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).expect("answer");
    assert_eq!(refusal(&answer).0, 408);
    up.saw_nothing();
}

#[test]
fn a_peer_other_than_loopd_is_refused() {
    let up = any_upstream();
    let dir = TempDir::new("peer");
    let other = dir.uid() + 1;
    let proxy = Proxy::start_in(dir, other, &format!("http://127.0.0.1:{}", up.port), "");
    let answer = proxy.raw(b"GET /health HTTP/1.1\r\n\r\n");
    assert_eq!(refusal(&answer), (403, "forbidden".into()));
    assert!(proxy.log().contains("refused uid"), "{}", proxy.log());
    up.saw_nothing();
}

#[test]
fn past_max_connections_the_answer_is_503() {
    let gate = Gate::new();
    let held = gate.clone();
    let up = Upstream::start(move |seen, stream| {
        if seen.head.target == "/health" {
            let _ = stream.write_all(&answer("200 OK", "application/json", "{}"));
            return;
        }
        let mut first = STREAM_HEAD.to_vec();
        first.extend_from_slice(&chunk(b"data: {}\n\n"));
        let _ = stream.write_all(&first);
        held.wait();
        let _ = stream.write_all(b"0\r\n\r\n");
    });
    let proxy = Proxy::start(up.port, "max_connections = 1");
    let resp = strict_http::request(
        proxy.connect(),
        "POST",
        "/v1/chat/completions",
        &[],
        &chat_body(),
    )
    .expect("first");
    let mut first = resp.body;
    let mut buf = [0u8; 10];
    first.read_exact(&mut buf).expect("streaming");
    let (status, kind) = refusal(&proxy.raw(b"GET /health HTTP/1.1\r\n\r\n"));
    assert_eq!((status, kind.as_str()), (503, "unavailable_error"));
    gate.open();
    first.read_to_end(&mut Vec::new()).expect("the first ends");
    // The slot is free again.
    let start = std::time::Instant::now();
    loop {
        let answer = proxy.raw(b"GET /health HTTP/1.1\r\n\r\n");
        if answer.starts_with(b"HTTP/1.1 200") {
            break;
        }
        assert!(
            start.elapsed() < crate::support::PATIENCE,
            "the slot was never freed"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
