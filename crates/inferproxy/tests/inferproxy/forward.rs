//! What is allowed goes through byte for byte, and a stream goes through as it arrives.

use std::io::{Read, Write};

use strict_http::SseReader;

use crate::support::{Gate, Proxy, STREAM_HEAD, Upstream, answer, chat_body, chunk};

const PROPS: &str = r#"{"default_generation_settings":{"n_ctx":4096},"total_slots":1}"#;
const MODELS: &str = r#"{"object":"list","data":[{"id":"SmolLM2","object":"model"}]}"#;
const CHAT: &str = r#"{"choices":[{"finish_reason":"stop","index":0,"message":{"role":"assistant","content":"4"}}],"object":"chat.completion"}"#;

/// Answers each allowed path the way llama-server does, with a Content-Length body.
fn llama() -> Upstream {
    Upstream::start(|seen, stream| {
        let bytes = match seen.head.target.as_str() {
            "/health" => answer(
                "200 OK",
                "application/json; charset=utf-8",
                r#"{"status":"ok"}"#,
            ),
            "/props" => answer("200 OK", "application/json; charset=utf-8", PROPS),
            "/v1/models" => answer("200 OK", "application/json; charset=utf-8", MODELS),
            "/v1/chat/completions" => answer("200 OK", "application/json; charset=utf-8", CHAT),
            _ => answer("404 Not Found", "text/plain", "no"),
        };
        let _ = stream.write_all(&bytes);
    })
}

#[test]
fn allowed_requests_and_their_answers_pass_unchanged() {
    let up = llama();
    let proxy = Proxy::start(up.port, "");
    for (method, path, expected) in [
        ("GET", "/health", r#"{"status":"ok"}"#),
        ("GET", "/props", PROPS),
        ("GET", "/v1/models", MODELS),
        ("POST", "/v1/chat/completions", CHAT),
    ] {
        let request = chat_body();
        let body: &[u8] = if method == "POST" { &request } else { b"" };
        let (status, headers, got) = proxy.call(method, path, body);
        assert_eq!(status, 200, "{method} {path}");
        assert_eq!(String::from_utf8_lossy(&got), expected, "{method} {path}");
        assert_eq!(
            headers.get("content-type"),
            Some("application/json; charset=utf-8")
        );
        assert_eq!(headers.get("server"), Some("llama.cpp"));
        assert_eq!(headers.get("access-control-allow-origin"), Some(""));
        assert_eq!(
            headers.get("content-length"),
            Some(expected.len().to_string().as_str())
        );
        assert_eq!(headers.get("connection"), Some("close"));
        assert!(
            !headers.contains("keep-alive"),
            "hop-by-hop fields stay behind"
        );

        let seen = up.next();
        assert_eq!(
            (seen.head.method.as_str(), seen.head.target.as_str()),
            (method, path)
        );
        assert_eq!(seen.body, body);
        assert_eq!(
            seen.head.headers.get("host"),
            Some(format!("127.0.0.1:{}", up.port).as_str())
        );
        assert_eq!(seen.head.headers.get("connection"), Some("close"));
    }
}

#[test]
fn the_request_reaches_upstream_exactly_without_hop_by_hop_fields() {
    let up = llama();
    let proxy = Proxy::start(up.port, "");
    let body = String::from_utf8(chat_body())
        .expect("utf-8")
        .replace("What is 2+2?", "caf\\u00e9 \\ud83d\\ude00");
    let body = body.as_bytes();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: whatever\r\nContent-Type: application/json\r\n\
         X-Custom: kept\r\nConnection: keep-alive, X-Hop\r\nX-Hop: dropped\r\nKeep-Alive: timeout=1\r\n\
         TE: trailers\r\nUpgrade: h2c\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let mut request = head.into_bytes();
    request.extend_from_slice(body);
    let answer = proxy.raw(&request);
    let mut reader = &answer[..];
    let head = strict_http::read_response_head(&mut reader).expect("answer head");
    assert_eq!(head.status, 200);
    assert_eq!(reader, CHAT.as_bytes());

    let seen = up.next();
    assert_eq!(seen.body, body, "the body is forwarded byte for byte");
    let names: Vec<&str> = seen.head.headers.iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "Content-Type",
            "X-Custom",
            "Host",
            "Connection",
            "Content-Length"
        ]
    );
    assert_eq!(
        seen.head.headers.get("content-type"),
        Some("application/json")
    );
    assert_eq!(
        seen.head.headers.get("content-length"),
        Some(body.len().to_string().as_str())
    );
}

#[test]
fn a_chunked_request_body_is_sent_on_with_its_length() {
    let up = llama();
    let proxy = Proxy::start(up.port, "");
    let body = chat_body();
    let (a, b) = body.split_at(3);
    let mut request = b"POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\
          3;ext=1\r\n"
        .to_vec();
    request.extend_from_slice(a);
    request.extend_from_slice(format!("\r\n{:x}\r\n", b.len()).as_bytes());
    request.extend_from_slice(b);
    request.extend_from_slice(b"\r\n0\r\nTrailer: x\r\n\r\n");
    let answer = proxy.raw(&request);
    assert!(answer.starts_with(b"HTTP/1.1 200 OK\r\n"));
    let seen = up.next();
    assert_eq!(seen.body, body);
    let length = body.len().to_string();
    assert_eq!(
        seen.head.headers.get("content-length"),
        Some(length.as_str())
    );
    assert!(!seen.head.headers.contains("transfer-encoding"));
}

/// The first events of a real llama-server stream (reference/llama-server), then the end.
fn events() -> Vec<String> {
    let delta = |d: &str| {
        format!(
            "data: {{\"choices\":[{{\"finish_reason\":null,\"index\":0,\"delta\":{d}}}],\
             \"created\":1796002625,\"id\":\"chatcmpl-3SbX\",\"model\":\"SmolLM2\",\
             \"object\":\"chat.completion.chunk\"}}\n\n"
        )
    };
    vec![
        delta(r#"{"role":"assistant","content":null}"#),
        delta(r#"{"reasoning_content":"\n\nThe"}"#),
        delta(r#"{"reasoning_content":" answer"}"#),
        delta(r#"{"content":"4"}"#),
        "data: [DONE]\n\n".into(),
    ]
}

/// An upstream that sends the head and the first event, then waits at `gate` before the
/// rest: if the proxy buffered, the test would never see the first event and the gate
/// would time out.
fn streaming(gate: Gate) -> Upstream {
    Upstream::start(move |seen, stream| {
        if seen.head.target == "/health" {
            let ok = answer(
                "200 OK",
                "application/json; charset=utf-8",
                r#"{"status":"ok"}"#,
            );
            let _ = stream.write_all(&ok);
            return;
        }
        let events = events();
        let mut first = STREAM_HEAD.to_vec();
        first.extend_from_slice(&chunk(events[0].as_bytes()));
        stream.write_all(&first).expect("first event");
        assert!(gate.wait(), "the first event never reached the client");
        for e in &events[1..] {
            stream.write_all(&chunk(e.as_bytes())).expect("event");
        }
        stream.write_all(b"0\r\n\r\n").expect("end");
    })
}

#[test]
fn a_stream_is_forwarded_as_it_arrives() {
    let gate = Gate::new();
    let up = streaming(gate.clone());
    let proxy = Proxy::start(up.port, "");
    let resp = strict_http::request(
        proxy.connect(),
        "POST",
        "/v1/chat/completions",
        &[("Content-Type", "application/json")],
        &chat_body(),
    )
    .expect("request");
    assert_eq!(resp.status, 200);
    assert_eq!(resp.headers.get("content-type"), Some("text/event-stream"));
    assert_eq!(resp.headers.get("x-accel-buffering"), Some("no"));
    assert_eq!(resp.headers.get("transfer-encoding"), Some("chunked"));
    let mut body = resp.body;
    // Read the raw payload: the first event, whole, before upstream sends anything else.
    let expected = events();
    let mut first = vec![0u8; expected[0].len()];
    body.read_exact(&mut first)
        .expect("the first event arrives alone");
    assert_eq!(first, expected[0].as_bytes());
    gate.open();
    let mut rest = Vec::new();
    body.read_to_end(&mut rest)
        .expect("the rest, with the last chunk");
    assert_eq!(rest, expected[1..].concat().as_bytes(), "byte for byte");
}

#[test]
fn the_stream_reads_as_events_through_the_client() {
    let gate = Gate::new();
    gate.open();
    let up = streaming(gate);
    let proxy = Proxy::start(up.port, "");
    let resp = strict_http::request(
        proxy.connect(),
        "POST",
        "/v1/chat/completions",
        &[],
        &chat_body(),
    )
    .expect("request");
    let mut sse = SseReader::new(resp.body);
    let mut got = Vec::new();
    while let Some(event) = sse.next_event().expect("event") {
        got.push(event.data);
    }
    assert_eq!(got.len(), 5);
    assert_eq!(got[4], "[DONE]");
    assert!(got[3].contains(r#""content":"4""#));
}

#[test]
fn a_second_connection_is_served_while_a_first_streams() {
    let gate = Gate::new();
    let up = streaming(gate.clone());
    let proxy = Proxy::start(up.port, "");
    let resp = strict_http::request(
        proxy.connect(),
        "POST",
        "/v1/chat/completions",
        &[],
        &chat_body(),
    )
    .expect("first request");
    let mut first = resp.body;
    let mut buf = [0u8; 16];
    first
        .read_exact(&mut buf)
        .expect("the first stream has started");
    // The first stream is held open upstream; another connection is answered meanwhile.
    let (status, _, body) = proxy.call("GET", "/health", b"");
    assert_eq!((status, body.as_slice()), (200, &br#"{"status":"ok"}"#[..]));
    gate.open();
    let mut rest = Vec::new();
    first.read_to_end(&mut rest).expect("the first stream ends");
    assert!(rest.ends_with(b"data: [DONE]\n\n"));
}

#[test]
fn an_http_1_0_client_gets_the_stream_up_to_the_close() {
    let gate = Gate::new();
    gate.open();
    let up = streaming(gate);
    let proxy = Proxy::start(up.port, "");
    let body = chat_body();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.0\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let answer = proxy.raw(&[head.as_bytes(), &body].concat());
    let mut reader = &answer[..];
    let head = strict_http::read_response_head(&mut reader).expect("head");
    assert_eq!(head.status, 200);
    assert!(
        !head.headers.contains("transfer-encoding"),
        "1.0 has no chunked"
    );
    assert_eq!(head.framing, strict_http::Framing::UntilClose);
    assert_eq!(reader, events().concat().as_bytes());
}

/// inferproxy states its version on each answer, its own and upstream's (loopd shows it in
/// `bxctl status`); a field of that name from upstream is not passed on as inferproxy's.
#[test]
fn every_answer_carries_inferproxys_version_and_never_upstreams_claim() {
    let name = proto::status::INFERPROXY_VERSION_HEADER;
    let up = Upstream::start(move |_, stream| {
        let mut bytes = answer("200 OK", "application/json", r#"{"status":"ok"}"#);
        let at = bytes.windows(2).position(|w| w == b"\r\n").expect("line") + 2;
        bytes.splice(at..at, format!("{name}: 99.0.0-forged\r\n").into_bytes());
        let _ = stream.write_all(&bytes);
    });
    let proxy = Proxy::start(up.port, "");
    let ours = env!("CARGO_PKG_VERSION");
    let (status, headers, _) = proxy.call("GET", "/health", b"");
    assert_eq!(status, 200);
    assert_eq!(headers.get(name), Some(ours));
    assert_eq!(headers.get_all(name).count(), 1, "{headers:?}");
    // An answer of inferproxy's own (a path it refuses) carries it too.
    let (status, headers, _) = proxy.call("GET", "/slots", b"");
    assert_eq!(status, 403);
    assert_eq!(headers.get(name), Some(ours));
}
