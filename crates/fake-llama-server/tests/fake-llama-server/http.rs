//! The HTTP/1.1 server side (`http`): request bodies, `Expect`, closed and broken requests, heads.

use std::io;

use fake_llama_server::http::{
    ReadError, Request, read_request, write_chunk, write_last_chunk, write_response,
};

fn read(raw: &[u8]) -> (Result<Request, ReadError>, Vec<u8>) {
    let mut interim = Vec::new();
    let result = read_request(&mut io::BufReader::new(raw), &mut interim);
    (result, interim)
}

#[test]
fn reads_length_and_chunked_bodies_and_answers_expect() {
    let (req, interim) = read(
        b"POST /v1/chat/completions?x=1 HTTP/1.1\r\nContent-Length: 2\r\n\
          Expect: 100-continue\r\n\r\n{}",
    );
    let req = req.expect("request");
    assert_eq!(
        (req.path.as_str(), req.query.as_str(), &req.body[..]),
        ("/v1/chat/completions", "x=1", &b"{}"[..])
    );
    assert!(req.keep_alive);
    assert_eq!(interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    let (req, _) = read(
        b"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n\
          3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n",
    );
    let req = req.expect("chunked request");
    assert_eq!(req.body, b"abcde");
    assert!(!req.keep_alive);
    let (req, _) = read(b"GET /health HTTP/1.0\r\n\r\n");
    assert!(!req.expect("1.0 request").keep_alive);
}

#[test]
fn tells_a_closed_connection_from_a_broken_request() {
    assert!(matches!(read(b"").0, Err(ReadError::Closed)));
    assert!(matches!(read(b"GARBAGE\r\n\r\n").0, Err(ReadError::Bad(_))));
    assert!(matches!(
        read(b"GET / HTTP/1.1\r\nHost").0,
        Err(ReadError::Bad(_))
    ));
}

#[test]
fn writes_heads_like_llama_server() {
    let mut out = Vec::new();
    write_response(
        &mut out,
        200,
        "application/json; charset=utf-8",
        b"{}",
        true,
    )
    .expect("write");
    let text = String::from_utf8(out).expect("utf-8");
    assert!(text.starts_with("HTTP/1.1 200 OK\r\nServer: llama.cpp\r\n"));
    assert!(text.contains("Content-Length: 2\r\nKeep-Alive: timeout=5, max=100\r\n\r\n{}"));
    let mut out = Vec::new();
    write_chunk(&mut out, b"data: x\n\n").expect("chunk");
    write_last_chunk(&mut out).expect("last");
    assert_eq!(out, b"9\r\ndata: x\n\n\r\n0\r\n\r\n");
}
