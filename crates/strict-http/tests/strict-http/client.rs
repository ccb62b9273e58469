use std::io::{self, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use crate::Expect;

use strict_http::{
    Body, ChunkedWriter, Framing, HttpError, SseReader, read_request_head, request, write_request,
    write_response_head,
};

/// Serves one request on a socket pair with `answer`, returning what the server read.
fn serve(
    answer: &'static [u8],
) -> (
    UnixStream,
    std::thread::JoinHandle<(strict_http::RequestHead, Vec<u8>)>,
) {
    let (client, server) = UnixStream::pair().expect("pair");
    client
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let handle = std::thread::spawn(move || {
        let mut reader = BufReader::new(&server);
        let head = read_request_head(&mut reader).expect("request head");
        let mut body = Vec::new();
        Body::new(&mut reader, head.framing, Some(1024))
            .expect("body")
            .read_to_end(&mut body)
            .expect("read body");
        (&server).write_all(answer).expect("answer");
        (head, body)
    });
    (client, handle)
}

#[test]
fn a_request_and_a_streamed_answer() {
    let (client, server) = serve(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n\
          d\r\ndata: hello\n\n\r\ne\r\ndata: [DONE]\n\n\r\n0\r\n\r\n",
    );
    let resp = request(
        &client,
        "POST",
        "/v1/chat/completions",
        &[("Content-Type", "application/json")],
        b"{\"stream\":true}",
    )
    .expect("request");
    assert_eq!((resp.status, resp.reason.as_str()), (200, "OK"));
    assert_eq!(resp.headers.get("content-type"), Some("text/event-stream"));
    let mut sse = SseReader::new(resp.body);
    let mut got = Vec::new();
    while let Some(e) = sse.next_event().expect("event") {
        got.push(e.data);
    }
    assert_eq!(got, ["hello", "[DONE]"]);
    let (head, body) = server.join().expect("server");
    assert_eq!(head.method, "POST");
    assert_eq!(head.headers.get("host"), Some("localhost"));
    assert_eq!(head.headers.get("content-length"), Some("15"));
    assert_eq!(body, b"{\"stream\":true}");
}

#[test]
fn a_get_sends_no_length_and_reads_a_length_body() {
    let (client, server) = serve(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA");
    let resp = request(&client, "GET", "/health", &[("Host", "h")], b"").expect("request");
    assert_eq!(resp.read_body(100).expect("body"), b"ok");
    let (head, _) = server.join().expect("server");
    assert_eq!(head.headers.get("host"), Some("h"));
    assert!(!head.headers.contains("content-length"));
    assert_eq!(head.framing, Framing::None);
}

#[test]
fn interim_answers_are_skipped_and_upgrades_refused() {
    let (client, _server) =
        serve(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n");
    let resp = request(&client, "POST", "/", &[], b"x").expect("request");
    assert_eq!(resp.status, 204);
    assert!(matches!(resp.body, Body::Empty(_)));

    let (client, _server) = serve(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n");
    let err = request(&client, "GET", "/", &[], b"").expect_err("upgrade");
    assert!(matches!(err, HttpError::UnexpectedUpgrade), "{err:?}");
}

#[test]
fn head_responses_have_no_body() {
    let (client, _server) = serve(b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n");
    let resp = request(&client, "HEAD", "/", &[], b"").expect("request");
    assert_eq!(resp.read_body(0).expect("empty"), b"");
}

#[test]
fn a_limit_on_the_answer() {
    let (client, _server) = serve(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789");
    let resp = request(&client, "GET", "/", &[], b"").expect("request");
    let err = resp.read_body(9).expect_err("too long");
    assert!(
        matches!(err, HttpError::BodyTooLarge { limit: 9 }),
        "{err:?}"
    );
}

#[test]
fn a_peer_that_closes_without_answering() {
    let (client, server) = UnixStream::pair().expect("pair");
    drop(server);
    let err = request(&client, "GET", "/", &[], b"").expect_err("closed");
    // Either the write fails (EPIPE) or the read finds the end.
    assert!(
        matches!(err, HttpError::Closed | HttpError::Io(_)),
        "{err:?}"
    );
}

#[test]
fn writers_never_send_what_readers_refuse() {
    let mut out = Vec::new();
    type Fields = Vec<(&'static str, &'static str)>;
    let cases: Vec<(&str, &str, Fields, Expect)> = vec![
        ("G T", "/", vec![], |e| matches!(e, HttpError::BadMethod)),
        ("GET", "/a b", vec![], |e| matches!(e, HttpError::BadTarget)),
        ("GET", "http://h/", vec![], |e| {
            matches!(e, HttpError::BadTarget)
        }),
        ("GET", "/", vec![("X", "a\r\nInjected: 1")], |e| {
            matches!(e, HttpError::InvalidHeaderToSend { .. })
        }),
        ("GET", "/", vec![("X Y", "a")], |e| {
            matches!(e, HttpError::InvalidHeaderToSend { .. })
        }),
        ("GET", "/", vec![("X", " padded")], |e| {
            matches!(e, HttpError::InvalidHeaderToSend { .. })
        }),
        ("POST", "/", vec![("content-length", "1")], |e| {
            matches!(e, HttpError::FramingHeaderToSend { .. })
        }),
        ("POST", "/", vec![("Transfer-Encoding", "chunked")], |e| {
            matches!(e, HttpError::FramingHeaderToSend { .. })
        }),
    ];
    for (method, target, headers, expected) in cases {
        let err = write_request(&mut out, method, target, &headers, b"").expect_err(target);
        assert!(expected(&err), "{method} {target} {headers:?}: {err:?}");
    }
    assert!(out.is_empty(), "nothing written on refusal");

    write_response_head(&mut out, 200, "OK", &[("Transfer-Encoding", "chunked")])
        .expect("response head");
    let mut w = ChunkedWriter::new(&mut out);
    w.write_all(b"hi").expect("chunk");
    w.finish().expect("finish");
    assert_eq!(
        out,
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n"
    );
    let err = write_response_head(&mut Vec::new(), 200, "O\r\nK", &[]).expect_err("reason");
    assert!(matches!(err, HttpError::BadStatusLine));
    let err = write_response_head(&mut Vec::new(), 600, "", &[]).expect_err("status");
    assert!(matches!(err, HttpError::BadStatusLine));
}

#[test]
fn errors_survive_the_trip_through_io_error() {
    let io_err: io::Error = HttpError::BadChunkEnd.into();
    assert_eq!(io_err.kind(), io::ErrorKind::InvalidData);
    assert!(matches!(HttpError::from_io(io_err), HttpError::BadChunkEnd));
    let io_err: io::Error = HttpError::Truncated.into();
    assert_eq!(io_err.kind(), io::ErrorKind::UnexpectedEof);
    let timeout = HttpError::from_io(io::ErrorKind::WouldBlock.into());
    assert!(timeout.is_timeout());
    assert_eq!(timeout.status(), 408);
    let other = HttpError::from_io(io::Error::other("x"));
    assert!(matches!(other, HttpError::Io(_)) && !other.is_timeout());
}
