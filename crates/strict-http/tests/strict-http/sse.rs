use std::io::{self, BufReader};

use crate::OneByte;
use strict_http::{Body, Event, Framing, HttpError, SseReader};

fn events(input: &[u8]) -> Result<Vec<Event>, HttpError> {
    let collect = |mut r: SseReader<Box<dyn io::Read + '_>>| {
        let mut out = Vec::new();
        while let Some(event) = r.next_event()? {
            out.push(event);
        }
        Ok(out)
    };
    let a = collect(SseReader::new(Box::new(input) as Box<dyn io::Read>));
    let b = collect(SseReader::new(Box::new(OneByte(input)) as Box<dyn io::Read>));
    assert_eq!(format!("{a:?}"), format!("{b:?}"), "split reads differ");
    a
}

fn data(events: &[Event]) -> Vec<&str> {
    events.iter().map(|e| e.data.as_str()).collect()
}

#[test]
fn a_llama_server_stream_is_read_event_by_event() {
    let stream = b"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n\
                   data: {\"choices\":[]}\n\ndata: [DONE]\n\n";
    let got = events(stream).expect("stream");
    assert_eq!(
        data(&got),
        [
            "{\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}",
            "{\"choices\":[]}",
            "[DONE]"
        ]
    );
}

#[test]
fn fields_comments_and_line_endings() {
    let stream = b": a comment\r\nevent: delta\r\nid: 7\r\ndata: one\r\ndata:two\r\ndata\r\n\r\n\
                   retry: 10\nunknown: x\ndata:  spaced\n\n";
    let got = events(stream).expect("stream");
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].event.as_deref(), Some("delta"));
    assert_eq!(got[0].id.as_deref(), Some("7"));
    assert_eq!(got[0].data, "one\ntwo\n");
    assert_eq!(got[1].event, None);
    assert_eq!(got[1].data, " spaced");
}

#[test]
fn events_without_data_and_partial_events_are_dropped() {
    let got = events(b"event: ping\n\n: only a comment\n\ndata: a\n\ndata: partial\n").expect("");
    assert_eq!(data(&got), ["a"]);
    let got = events(b"data: no blank line at the end\n").expect("partial");
    assert!(got.is_empty());
    let got = events(b"data: no line end at all").expect("partial line");
    assert!(got.is_empty());
    let got = events(b"\xef\xbb\xbfdata: after a BOM\n\n").expect("bom");
    assert_eq!(data(&got), ["after a BOM"]);
}

#[test]
fn refusals() {
    let err = events(b"data: a\rdata: b\n\n").expect_err("bare cr");
    assert!(matches!(err, HttpError::BareCr), "{err:?}");
    let err = events(b"data: \xff\n\n").expect_err("not utf-8");
    assert!(matches!(err, HttpError::SseNotUtf8), "{err:?}");

    let mut r = SseReader::with_limits(&b"data: 0123456789\n\n"[..], 8, 100);
    let err = r.next_event().expect_err("long line");
    assert!(
        matches!(err, HttpError::SseLineTooLong { limit: 8 }),
        "{err:?}"
    );
    let mut r = SseReader::with_limits(&b"data: 01234\r\n\n"[..], 11, 100);
    assert_eq!(
        r.next_event().expect("at the limit").expect("event").data,
        "01234"
    );

    let many = "data: 0123456789\n".repeat(20) + "\n";
    let mut r = SseReader::with_limits(many.as_bytes(), 100, 100);
    let err = r.next_event().expect_err("big event");
    assert!(
        matches!(err, HttpError::SseEventTooLarge { limit: 100 }),
        "{err:?}"
    );

    // An endless line stops at the limit instead of filling memory.
    let mut r = SseReader::with_limits(io::repeat(b'a'), 1024, 4096);
    let err = r.next_event().expect_err("endless");
    assert!(matches!(err, HttpError::SseLineTooLong { .. }), "{err:?}");
}

#[test]
fn over_a_chunked_body_split_anywhere() {
    let body = chunks(&["data: a", "\n\nda", "ta: [DON", "E]\n", "\n"], true);
    let reader = BufReader::with_capacity(1, OneByte(&body));
    let chunked = Body::new(reader, Framing::Chunked, None).expect("body");
    let mut sse = SseReader::new(chunked);
    let mut got = Vec::new();
    while let Some(event) = sse.next_event().expect("event") {
        got.push(event.data);
    }
    assert_eq!(got, ["a", "[DONE]"]);
}

#[test]
fn a_truncated_body_is_an_error_not_the_end() {
    // The chunked body stops without its last chunk: the stream was cut, and the reader
    // must say so rather than report a clean end.
    let body = chunks(&["data: a", "\n\n", "data: b"], false);
    let chunked = Body::new(&body[..], Framing::Chunked, None).expect("body");
    let mut sse = SseReader::new(chunked);
    assert_eq!(sse.next_event().expect("first").expect("event").data, "a");
    let err = sse.next_event().expect_err("cut");
    assert!(matches!(err, HttpError::Truncated), "{err:?}");
}

/// A chunked body of `pieces`, with its last chunk when `end`.
fn chunks(pieces: &[&str], end: bool) -> Vec<u8> {
    let mut out: String = pieces
        .iter()
        .map(|p| format!("{:x}\r\n{p}\r\n", p.len()))
        .collect();
    if end {
        out.push_str("0\r\n\r\n");
    }
    out.into_bytes()
}
