use std::io::{self, BufReader, Read};

use crate::{Expect, OneByte, both_ways};
use strict_http::{
    Body, Framing, HttpError, MAX_HEAD, MAX_HEADERS, Version, read_request_head, read_response_head,
};

fn request(input: &[u8]) -> Result<strict_http::RequestHead, HttpError> {
    let [mut whole, mut split] = both_ways(input);
    let a = read_request_head(&mut whole);
    let b = read_request_head(&mut split);
    assert_eq!(format!("{a:?}"), format!("{b:?}"), "split reads differ");
    a
}

fn refused(input: &str) -> HttpError {
    request(input.as_bytes()).expect_err(input)
}

#[test]
fn a_request_head_is_parsed() {
    let head = request(
        b"POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: localhost\r\n\
          content-TYPE:application/json \t\r\nContent-Length: 12\r\nX-Empty:\r\n\r\nbody",
    )
    .expect("valid");
    assert_eq!(head.method, "POST");
    assert_eq!(head.target, "/v1/chat/completions?x=1");
    assert_eq!(head.version, Version::Http11);
    assert_eq!(head.headers.get("Content-Type"), Some("application/json"));
    assert_eq!(head.headers.get("x-empty"), Some(""));
    assert_eq!(head.headers.len(), 4);
    assert_eq!(head.framing, Framing::Length(12));

    let head = request(b"GET / HTTP/1.0\r\n\r\n").expect("1.0");
    assert_eq!(
        (head.version, head.framing),
        (Version::Http10, Framing::None)
    );
    let head = request(b"POST / HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n").expect("te");
    assert_eq!(head.framing, Framing::Chunked);
    let head = request(b"POST / HTTP/1.1\r\nContent-Length: 007\r\n\r\n").expect("zeros");
    assert_eq!(head.framing, Framing::Length(7));
}

#[test]
fn malformed_lines_are_refused() {
    let cases: &[(&str, Expect)] = &[
        ("GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n", |e| {
            matches!(e, HttpError::ObsFold)
        }),
        ("GET / HTTP/1.1\r\nA: b\r\n\tc\r\n\r\n", |e| {
            matches!(e, HttpError::ObsFold)
        }),
        ("GET / HTTP/1.1\r\nA: b\rc\r\n\r\n", |e| {
            matches!(e, HttpError::BareCr)
        }),
        ("GET / HTTP/1.1\r\r\n\r\n", |e| {
            matches!(e, HttpError::BareCr)
        }),
        ("GET / HTTP/1.1\n\n", |e| matches!(e, HttpError::BareLf)),
        ("GET / HTTP/1.1\r\nA: b\n\r\n", |e| {
            matches!(e, HttpError::BareLf)
        }),
        ("GET / HTTP/1.1\r\nA B: c\r\n\r\n", |e| {
            matches!(e, HttpError::BadHeaderName)
        }),
        ("GET / HTTP/1.1\r\nA(: c\r\n\r\n", |e| {
            matches!(e, HttpError::BadHeaderName)
        }),
        ("GET / HTTP/1.1\r\n: c\r\n\r\n", |e| {
            matches!(e, HttpError::BadHeaderName)
        }),
        ("GET / HTTP/1.1\r\nnocolon\r\n\r\n", |e| {
            matches!(e, HttpError::BadHeaderName)
        }),
        ("GET / HTTP/1.1\r\nA : c\r\n\r\n", |e| {
            matches!(e, HttpError::SpaceBeforeColon)
        }),
        ("GET / HTTP/1.1\r\nA\t: c\r\n\r\n", |e| {
            matches!(e, HttpError::SpaceBeforeColon)
        }),
        (
            "GET / HTTP/1.1\r\nA: b\0c\r\n\r\n",
            |e| matches!(e, HttpError::BadHeaderValue { name } if name == "A"),
        ),
        ("GET / HTTP/1.1\r\nA: b\x7fc\r\n\r\n", |e| {
            matches!(e, HttpError::BadHeaderValue { .. })
        }),
        ("GET / HTTP/1.1\r\nA: caf\u{e9}\r\n\r\n", |e| {
            matches!(e, HttpError::BadHeaderValue { .. })
        }),
        ("\r\nGET / HTTP/1.1\r\n\r\n", |e| {
            matches!(e, HttpError::BadRequestLine)
        }),
        ("GET  / HTTP/1.1\r\n\r\n", |e| {
            matches!(e, HttpError::BadRequestLine)
        }),
        ("GET / HTTP/1.1 \r\n\r\n", |e| {
            matches!(e, HttpError::BadRequestLine)
        }),
        ("GET /\r\n\r\n", |e| matches!(e, HttpError::BadRequestLine)),
        ("GET / http/1.1\r\n\r\n", |e| {
            matches!(e, HttpError::BadRequestLine)
        }),
        ("GET / HTTP/2.0\r\n\r\n", |e| {
            matches!(e, HttpError::UnsupportedVersion)
        }),
        ("GET / HTTP/0.9\r\n\r\n", |e| {
            matches!(e, HttpError::UnsupportedVersion)
        }),
        ("G(T / HTTP/1.1\r\n\r\n", |e| {
            matches!(e, HttpError::BadMethod)
        }),
        ("GET http://h/ HTTP/1.1\r\n\r\n", |e| {
            matches!(e, HttpError::BadTarget)
        }),
        ("GET * HTTP/1.1\r\n\r\n", |e| {
            matches!(e, HttpError::BadTarget)
        }),
        ("GET /a#b HTTP/1.1\r\n\r\n", |e| {
            matches!(e, HttpError::BadTarget)
        }),
        ("GET /\x01 HTTP/1.1\r\n\r\n", |e| {
            matches!(e, HttpError::BadTarget)
        }),
    ];
    for (input, expected) in cases {
        let err = refused(input);
        assert!(expected(&err), "{input:?}: {err:?}");
        if !matches!(err, HttpError::UnsupportedVersion) {
            assert_eq!(err.status(), 400, "{input:?}");
        }
    }
    assert_eq!(refused("GET / HTTP/2.0\r\n\r\n").status(), 505);
}

#[test]
fn ambiguous_framing_is_refused() {
    let cases: &[(&str, Expect)] = &[
        ("Content-Length: 5\r\nContent-Length: 5", |e| {
            matches!(e, HttpError::DuplicateContentLength)
        }),
        ("Content-Length: 5\r\ncontent-length: 6", |e| {
            matches!(e, HttpError::DuplicateContentLength)
        }),
        ("Content-Length: 5, 5", |e| {
            matches!(e, HttpError::BadContentLength)
        }),
        ("Content-Length: +5", |e| {
            matches!(e, HttpError::BadContentLength)
        }),
        ("Content-Length: -1", |e| {
            matches!(e, HttpError::BadContentLength)
        }),
        ("Content-Length: 0x10", |e| {
            matches!(e, HttpError::BadContentLength)
        }),
        ("Content-Length:", |e| {
            matches!(e, HttpError::BadContentLength)
        }),
        ("Content-Length: 18446744073709551616", |e| {
            matches!(e, HttpError::BadContentLength)
        }),
        ("Content-Length: 5\r\nTransfer-Encoding: chunked", |e| {
            matches!(e, HttpError::LengthWithTransferEncoding)
        }),
        ("Transfer-Encoding: chunked\r\nContent-Length: 5", |e| {
            matches!(e, HttpError::LengthWithTransferEncoding)
        }),
        (
            "Transfer-Encoding: gzip",
            |e| matches!(e, HttpError::UnsupportedTransferEncoding { value } if value == "gzip"),
        ),
        ("Transfer-Encoding: gzip, chunked", |e| {
            matches!(e, HttpError::UnsupportedTransferEncoding { .. })
        }),
        ("Transfer-Encoding: chunked, chunked", |e| {
            matches!(e, HttpError::UnsupportedTransferEncoding { .. })
        }),
        (
            "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked",
            |e| matches!(e, HttpError::UnsupportedTransferEncoding { .. }),
        ),
        ("Transfer-Encoding: xchunked", |e| {
            matches!(e, HttpError::UnsupportedTransferEncoding { .. })
        }),
    ];
    for (fields, expected) in cases {
        let input = format!("POST / HTTP/1.1\r\n{fields}\r\n\r\n");
        let err = refused(&input);
        assert!(expected(&err), "{fields:?}: {err:?}");
    }
    let err = refused("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n");
    assert!(matches!(err, HttpError::UnsupportedTransferEncoding { .. }));
    assert_eq!(err.status(), 501);
}

#[test]
fn heads_are_bounded() {
    let long = format!("GET / HTTP/1.1\r\nA: {}\r\n\r\n", "x".repeat(MAX_HEAD));
    let err = refused(&long);
    assert!(matches!(err, HttpError::HeadTooLarge { .. }), "{err:?}");
    assert_eq!(err.status(), 431);

    // An endless line is cut off at the limit, not read forever.
    let mut endless = BufReader::new(io::repeat(b'a'));
    let err = read_request_head(&mut endless).expect_err("endless");
    assert!(matches!(err, HttpError::HeadTooLarge { .. }), "{err:?}");
    let mut endless = BufReader::new(Read::chain(&b"GET / HTTP/1.1\r\n"[..], endless_fields()));
    let err = read_request_head(&mut endless).expect_err("endless fields");
    assert!(matches!(err, HttpError::TooManyHeaders { .. }), "{err:?}");

    // Exactly at the limit passes.
    let start = "GET / HTTP/1.1\r\nA: ";
    let fill = MAX_HEAD - start.len() - 4;
    let exact = format!("{start}{}\r\n\r\n", "x".repeat(fill));
    assert_eq!(exact.len(), MAX_HEAD);
    request(exact.as_bytes()).expect("exactly the limit");
    let over = format!("{start}{}\r\n\r\n", "x".repeat(fill + 1));
    assert!(matches!(refused(&over), HttpError::HeadTooLarge { .. }));

    let fields = |n: usize| -> String {
        let lines: String = (0..n).map(|i| format!("H{i}: v\r\n")).collect();
        format!("GET / HTTP/1.1\r\n{lines}\r\n")
    };
    let head = request(fields(MAX_HEADERS).as_bytes()).expect("100 fields");
    assert_eq!(head.headers.len(), MAX_HEADERS);
    let err = refused(&fields(MAX_HEADERS + 1));
    assert!(matches!(err, HttpError::TooManyHeaders { .. }), "{err:?}");
}

fn endless_fields() -> impl Read {
    struct Fields;
    impl Read for Fields {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let line = b"A: b\r\n";
            let n = line.len().min(buf.len());
            buf[..n].copy_from_slice(&line[..n]);
            Ok(n)
        }
    }
    Fields
}

#[test]
fn an_early_end_is_closed_or_truncated() {
    assert!(matches!(request(b""), Err(HttpError::Closed)));
    for partial in [
        "G",
        "GET / HTTP/1.1",
        "GET / HTTP/1.1\r\n",
        "GET / HTTP/1.1\r\nA: b\r\n",
    ] {
        let err = refused(partial);
        assert!(matches!(err, HttpError::Truncated), "{partial:?}: {err:?}");
    }
}

#[test]
fn pipelined_requests_are_read_one_after_another() {
    let input = b"POST /a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello\
                  POST /b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n\
                  GET /c HTTP/1.1\r\n\r\n";
    for reader in both_ways(input) {
        let mut reader = reader;
        let mut targets = Vec::new();
        let mut bodies = Vec::new();
        loop {
            let head = match read_request_head(&mut reader) {
                Ok(head) => head,
                Err(HttpError::Closed) => break,
                Err(e) => panic!("{e}"),
            };
            let mut body = Body::new(&mut reader, head.framing, Some(100)).expect("body");
            let mut text = String::new();
            body.read_to_string(&mut text).expect("read body");
            targets.push(head.target);
            bodies.push(text);
        }
        assert_eq!(targets, ["/a", "/b", "/c"]);
        assert_eq!(bodies, ["hello", "abc", ""]);
    }
}

fn response(input: &str) -> Result<strict_http::ResponseHead, HttpError> {
    let mut split = BufReader::with_capacity(1, OneByte(input.as_bytes()));
    let a = read_response_head(&mut input.as_bytes());
    let b = read_response_head(&mut split);
    assert_eq!(format!("{a:?}"), format!("{b:?}"), "split reads differ");
    a
}

#[test]
fn response_heads_and_their_framing() {
    let head = response("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n").expect("ok");
    assert_eq!((head.status, head.reason.as_str()), (200, "OK"));
    assert_eq!(head.body_framing("POST"), Framing::Chunked);
    assert_eq!(head.body_framing("HEAD"), Framing::None);

    let head = response("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 3\r\n\r\n").expect("");
    assert_eq!((head.status, head.framing), (503, Framing::Length(3)));
    let head = response("HTTP/1.0 200\r\n\r\n").expect("no reason");
    assert_eq!(
        (head.reason.as_str(), head.framing),
        ("", Framing::UntilClose)
    );
    let head = response("HTTP/1.1 204 \r\nContent-Length: 9\r\n\r\n").expect("204");
    assert_eq!(head.body_framing("GET"), Framing::None);
    let head = response("HTTP/1.1 304 Not Modified\r\n\r\n").expect("304");
    assert_eq!(head.body_framing("GET"), Framing::None);
    let head = response("HTTP/1.1 100 Continue\r\n\r\n").expect("100");
    assert_eq!(head.body_framing("GET"), Framing::None);

    for bad in [
        "HTTP/1.1 99 x\r\n\r\n",
        "HTTP/1.1 2000 x\r\n\r\n",
        "HTTP/1.1 600 x\r\n\r\n",
        "HTTP/1.1 20a x\r\n\r\n",
        "HTTP/1.1 200 \x01\r\n\r\n",
        "HTTP/1.1\r\n\r\n",
        "ICY 200 OK\r\n\r\n",
    ] {
        let err = response(bad).expect_err(bad);
        assert!(matches!(err, HttpError::BadStatusLine), "{bad:?}: {err:?}");
    }
    let err =
        response("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n");
    assert!(matches!(err, Err(HttpError::LengthWithTransferEncoding)));
    let err = response("HTTP/1.1 200 OK\r\nA: b\r\n c\r\n\r\n");
    assert!(matches!(err, Err(HttpError::ObsFold)));
}
