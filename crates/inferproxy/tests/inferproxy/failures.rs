//! When llama-server is down, silent, broken or abandoned: a clear answer, never a hang.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use strict_http::HttpError;

use crate::support::{PATIENCE, Proxy, STREAM_HEAD, Upstream, chat_body, chunk};

/// The proxy's own error answer: status and message.
fn error_of(proxy: &Proxy, path: &str) -> (u16, String) {
    let method = if path == "/v1/chat/completions" {
        "POST"
    } else {
        "GET"
    };
    let body = if method == "POST" {
        chat_body()
    } else {
        Vec::new()
    };
    let (status, headers, body) = proxy.call(method, path, &body);
    assert_eq!(
        headers.get("content-type"),
        Some("application/json; charset=utf-8")
    );
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[test]
fn upstream_down_is_502() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let proxy = Proxy::start(port, "");
    let (status, body) = error_of(&proxy, "/health");
    assert_eq!(status, 502);
    assert!(body.contains("llama-server is not reachable"), "{body}");
    assert!(
        !body.contains("refused"),
        "internal error text stays in the log: {body}"
    );
    assert!(
        proxy.log().contains("Connection refused"),
        "{}",
        proxy.log()
    );
}

#[test]
fn a_silent_upstream_is_504_within_the_first_byte_timeout() {
    let up = Upstream::start(|_, _| std::thread::sleep(PATIENCE));
    let proxy = Proxy::start(up.port, "first_byte_timeout = \"500ms\"");
    let start = Instant::now();
    let (status, body) = error_of(&proxy, "/v1/chat/completions");
    let took = start.elapsed();
    assert_eq!(status, 504);
    assert!(body.contains("did not answer in time"), "{body}");
    assert!(
        took >= Duration::from_millis(450) && took < Duration::from_secs(3),
        "{took:?}"
    );
}

#[test]
fn a_broken_upstream_answer_is_502() {
    for bad in [
        &b""[..],
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n",
        b"HTTP/1.1 200 OK\nContent-Length: 2\n\n{}",
        b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
        b"SSH-2.0-OpenSSH\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Le",
    ] {
        let up = Upstream::start(move |_, stream| {
            let _ = stream.write_all(bad);
        });
        let proxy = Proxy::start(up.port, "");
        let (status, body) = error_of(&proxy, "/health");
        assert_eq!(status, 502, "{:?}", String::from_utf8_lossy(bad));
        assert!(body.contains("llama-server answered badly"), "{body}");
    }
}

#[test]
fn endless_interim_answers_are_502() {
    let up = Upstream::start(|_, stream| {
        let _ = stream.write_all(&b"HTTP/1.1 100 Continue\r\n\r\n".repeat(9));
    });
    let proxy = Proxy::start(up.port, "");
    assert_eq!(error_of(&proxy, "/health").0, 502);
}

#[test]
fn interim_answers_from_upstream_are_skipped() {
    let up = Upstream::start(|_, stream| {
        let _ = stream.write_all(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
        );
    });
    let proxy = Proxy::start(up.port, "");
    let (status, _, body) = proxy.call("GET", "/health", b"");
    assert_eq!((status, body.as_slice()), (200, &b"{}"[..]));
}

/// A stream that stops after its first event, and what the client then sees.
fn cut_stream(
    upstream_then: fn(&mut std::net::TcpStream),
    infer: &str,
) -> (Vec<u8>, HttpError, Duration) {
    let up = Upstream::start(move |_, stream| {
        let mut first = STREAM_HEAD.to_vec();
        first.extend_from_slice(&chunk(b"data: {\"n\":1}\n\n"));
        stream.write_all(&first).expect("first");
        upstream_then(stream);
    });
    let proxy = Proxy::start(up.port, infer);
    let resp = strict_http::request(
        proxy.connect(),
        "POST",
        "/v1/chat/completions",
        &[],
        &chat_body(),
    )
    .expect("head");
    assert_eq!(resp.status, 200);
    let mut body = resp.body;
    let mut got = vec![0u8; 15];
    body.read_exact(&mut got).expect("the first event");
    let start = Instant::now();
    let err = body
        .read_to_end(&mut got)
        .expect_err("the stream must end short");
    (got, HttpError::from_io(err), start.elapsed())
}

#[test]
fn an_upstream_silent_mid_stream_is_cut_short_after_the_idle_timeout() {
    let (got, err, took) = cut_stream(|_| std::thread::sleep(PATIENCE), "idle_timeout = \"500ms\"");
    assert_eq!(got, b"data: {\"n\":1}\n\n");
    assert!(
        matches!(err, HttpError::Truncated),
        "the client sees the cut: {err:?}"
    );
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[test]
fn an_upstream_that_dies_mid_stream_is_passed_on_as_a_cut() {
    let (got, err, _) = cut_stream(|s| drop(s.shutdown(std::net::Shutdown::Both)), "");
    assert_eq!(got, b"data: {\"n\":1}\n\n");
    assert!(matches!(err, HttpError::Truncated), "{err:?}");
    let (_, err, _) = cut_stream(|s| drop(s.write_all(b"zz\r\n")), "");
    assert!(
        matches!(err, HttpError::Truncated),
        "a malformed chunk is a cut: {err:?}"
    );
}

#[test]
fn a_client_that_leaves_mid_stream_stops_the_upstream() {
    let (tx, rx) = mpsc::channel();
    let up = Upstream::start(move |_, stream| {
        stream.write_all(STREAM_HEAD).expect("head");
        // Keep generating until the proxy closes the connection.
        let start = Instant::now();
        while start.elapsed() < PATIENCE {
            if stream
                .write_all(&chunk(b"data: {\"token\":\"x\"}\n\n"))
                .is_err()
            {
                let _ = tx.send(start.elapsed());
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    let proxy = Proxy::start(up.port, "");
    let resp = strict_http::request(
        proxy.connect(),
        "POST",
        "/v1/chat/completions",
        &[],
        &chat_body(),
    )
    .expect("head");
    let mut body = resp.body;
    let mut some = [0u8; 21];
    body.read_exact(&mut some).expect("a token");
    drop(body);
    let stopped = rx
        .recv_timeout(PATIENCE)
        .expect("the upstream connection was closed");
    assert!(stopped < Duration::from_secs(5), "{stopped:?}");
}

#[test]
fn a_client_that_leaves_before_the_first_byte_stops_the_upstream() {
    let (tx, rx) = mpsc::channel();
    let up = Upstream::start(move |_, stream| {
        // Think, and watch whether the proxy hangs up meanwhile.
        let mut buf = [0u8; 1];
        let _ = tx.send(stream.read(&mut buf).map_err(|e| e.kind()));
    });
    let proxy = Proxy::start(up.port, "first_byte_timeout = \"60s\"");
    let mut s = proxy.connect();
    let body = chat_body();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(&[head.as_bytes(), &body].concat())
        .expect("request");
    up.next();
    let start = Instant::now();
    drop(s);
    let read = rx.recv_timeout(PATIENCE).expect("the upstream noticed");
    assert_eq!(read, Ok(0), "the proxy closed the upstream connection");
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
}
