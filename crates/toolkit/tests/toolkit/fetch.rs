//! http_fetch: only the granted addresses, no redirects followed, the cap, the timeout, TLS.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::thread;
use std::time::{Duration, Instant};

use crate::support::{failed, fetch, local, ok, response, run, serve_once};

#[test]
fn http_fetch_connects_to_the_granted_address_without_dns() {
    let (port, server) = serve_once(|_| response("200 OK", "", "the body"));
    // example.test cannot resolve: only the granted address can have been used.
    let out = run(
        &fetch(format!("http://example.test:{port}/x?q=1"), local(port)),
        None,
    );
    assert_eq!(ok(out), ("the body".into(), false));
    let request = server.join().expect("server");
    assert!(request.starts_with("GET /x?q=1 HTTP/1.1\r\n"), "{request}");
    assert!(
        request
            .to_ascii_lowercase()
            .contains(&format!("host: example.test:{port}\r\n")),
        "{request}"
    );
}

#[test]
fn http_fetch_reports_a_redirect_without_following_it() {
    let (port, server) = serve_once(|_| response("302 Found", "Location: /elsewhere\r\n", ""));
    let out = run(
        &fetch(format!("http://example.test:{port}/x"), local(port)),
        None,
    );
    let (text, truncated) = ok(out);
    assert!(
        text.starts_with(&format!(
            "redirect (302 Found) to http://example.test:{port}/elsewhere\n"
        )),
        "{text}"
    );
    assert!(!truncated);
    server.join().expect("server");
}

#[test]
fn http_fetch_fails_on_404() {
    let (port, server) = serve_once(|_| response("404 Not Found", "", "no such page"));
    let out = run(
        &fetch(format!("http://example.test:{port}/x"), local(port)),
        None,
    );
    failed(out, "HTTP 404 Not Found");
    server.join().expect("server");
}

#[test]
fn http_fetch_truncates_an_oversized_body() {
    let body = "x".repeat(100_000);
    let (port, server) = serve_once(move |_| response("200 OK", "", &body));
    let mut inv = fetch(format!("http://example.test:{port}/big"), local(port));
    inv.max_bytes = 10;
    assert_eq!(ok(run(&inv, None)), ("x".repeat(10), true));
    server.join().expect("server");
}

#[test]
fn http_fetch_gives_up_at_the_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    // Accepts, reads the request, never answers; ends when the tool hangs up.
    let server = thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        let mut sink = Vec::new();
        let _ = stream.read_to_end(&mut sink);
    });
    let mut inv = fetch(format!("http://example.test:{port}/slow"), local(port));
    inv.timeout_ms = 300;
    let start = Instant::now();
    failed(run(&inv, None), "timed out after 300 ms");
    assert!(start.elapsed() < Duration::from_secs(5));
    server.join().expect("server");
}

#[test]
fn http_fetch_reaches_nothing_but_the_granted_addresses() {
    // A port with nothing listening: the connection is refused.
    let closed = TcpListener::bind("127.0.0.1:0").expect("bind");
    let closed_port = closed.local_addr().expect("addr").port();
    drop(closed);
    let out = run(
        &fetch(
            format!("http://example.test:{closed_port}/"),
            local(closed_port),
        ),
        None,
    );
    failed(out, "connection refused");
    // A server that is up but not granted is never contacted.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let out = run(
        &fetch(format!("http://example.test:{port}/"), local(closed_port)),
        None,
    );
    failed(out, &format!("on port {port}"));
    listener.set_nonblocking(true).expect("nonblocking");
    assert!(listener.accept().is_err(), "the server was contacted");
    failed(
        run(&fetch("file:///etc/passwd".into(), local(port)), None),
        "only http",
    );
}

#[test]
fn https_speaks_tls_and_fails_cleanly_against_a_plain_server() {
    // No certificate can be made here without a new dependency; this proves the https path
    // goes through rustls (a TLS handshake, not plain text) and fails as an answer.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server = thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        let mut hello = [0u8; 5];
        stream.read_exact(&mut hello).expect("read");
        let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
        hello
    });
    let out = run(
        &fetch(format!("https://example.test:{port}/"), local(port)),
        None,
    );
    failed(out, &format!("https://example.test:{port}/"));
    // 0x16: a TLS handshake record.
    assert_eq!(server.join().expect("server")[0], 0x16);
}
