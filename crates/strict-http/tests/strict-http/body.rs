use std::io::{self, BufReader, Read, Write};

use crate::{Expect, OneByte, ThenWait, both_ways};
use strict_http::{
    Body, Chunked, ChunkedWriter, ContentLength, Framing, HttpError, MAX_HEADERS,
    read_to_end_limited,
};

/// Reads a chunked body fed whole and one byte per read; both must agree.
fn chunked(input: &[u8], limit: Option<u64>) -> Result<Vec<u8>, HttpError> {
    let [whole, split] = both_ways(input);
    let read = |r: Box<dyn io::BufRead + '_>| {
        let mut out = Vec::new();
        Chunked::new(r, limit)
            .read_to_end(&mut out)
            .map(|_| out)
            .map_err(HttpError::from_io)
    };
    let (a, b) = (read(whole), read(split));
    assert_eq!(format!("{a:?}"), format!("{b:?}"), "split reads differ");
    a
}

#[test]
fn chunked_bodies_are_decoded() {
    let cases: &[(&str, &str)] = &[
        ("5\r\nhello\r\n0\r\n\r\n", "hello"),
        ("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", "hello world"),
        ("A\r\n0123456789\r\n0\r\n\r\n", "0123456789"),
        ("a\r\n0123456789\r\n0\r\n\r\n", "0123456789"),
        // 19 digits with leading zeros is still a small size.
        ("0000000000000000003\r\nabc\r\n0\r\n\r\n", "abc"),
        // Extensions are checked and dropped.
        ("3;name=value;q=\"a b\"\r\nabc\r\n0;last\r\n\r\n", "abc"),
        ("3 ;ext\r\nabc\r\n0\r\n\r\n", "abc"),
        // Trailers are read and dropped.
        ("3\r\nabc\r\n0\r\nX-Trailer: 1\r\nY: 2\r\n\r\n", "abc"),
        ("0\r\n\r\n", ""),
    ];
    for (input, expected) in cases {
        let out = chunked(input.as_bytes(), Some(1024)).expect(input);
        assert_eq!(String::from_utf8_lossy(&out), *expected, "{input:?}");
    }
}

#[test]
fn malformed_chunks_are_refused() {
    let cases: &[(&str, Expect)] = &[
        ("g\r\n", |e| matches!(e, HttpError::BadChunkSize)),
        ("\r\n", |e| matches!(e, HttpError::BadChunkSize)),
        ("-5\r\n", |e| matches!(e, HttpError::BadChunkSize)),
        ("0x5\r\n", |e| matches!(e, HttpError::BadChunkSize)),
        ("+5\r\n", |e| matches!(e, HttpError::BadChunkSize)),
        ("5 \r\nhello\r\n", |e| matches!(e, HttpError::BadChunkSize)),
        ("5;\x01\r\nhello\r\n", |e| {
            matches!(e, HttpError::BadChunkSize)
        }),
        ("5;a\rb\r\n", |e| matches!(e, HttpError::BareCr)),
        ("5\nhello\n", |e| matches!(e, HttpError::BareLf)),
        ("10000000000000000\r\n", |e| {
            matches!(e, HttpError::BadChunkSize)
        }),
        ("5\r\nhelloX\r\n0\r\n\r\n", |e| {
            matches!(e, HttpError::BadChunkEnd)
        }),
        ("5\r\nhello\n0\r\n\r\n", |e| matches!(e, HttpError::BareLf)),
        ("5\r\nhello\r\r\n0\r\n\r\n", |e| {
            matches!(e, HttpError::BadChunkEnd)
        }),
        ("0\r\nA: b\r\n c\r\n\r\n", |e| {
            matches!(e, HttpError::ObsFold)
        }),
        ("0\r\nA b\r\n\r\n", |e| {
            matches!(e, HttpError::BadHeaderName)
        }),
        // Ends early: in a size line, in data, before the last chunk, in the trailers.
        ("5", |e| matches!(e, HttpError::Truncated)),
        ("5\r\nhel", |e| matches!(e, HttpError::Truncated)),
        ("5\r\nhello\r\n", |e| matches!(e, HttpError::Truncated)),
        ("5\r\nhello", |e| matches!(e, HttpError::Truncated)),
        ("0\r\nA: b\r\n", |e| matches!(e, HttpError::Truncated)),
        ("", |e| matches!(e, HttpError::Truncated)),
    ];
    for (input, expected) in cases {
        let err = chunked(input.as_bytes(), None).expect_err(input);
        assert!(expected(&err), "{input:?}: {err:?}");
    }
}

#[test]
fn chunk_lines_and_trailers_are_bounded() {
    let long = format!("5;{}\r\nhello\r\n0\r\n\r\n", "x".repeat(5000));
    let err = chunked(long.as_bytes(), None).expect_err("long line");
    assert!(matches!(err, HttpError::ChunkLineTooLong { .. }), "{err:?}");

    let mut endless = Chunked::new(BufReader::new(io::repeat(b'1')), None);
    let err = HttpError::from_io(endless.read(&mut [0; 16]).expect_err("endless"));
    assert!(matches!(err, HttpError::ChunkLineTooLong { .. }), "{err:?}");

    let trailers: String = (0..=MAX_HEADERS).map(|i| format!("T{i}: v\r\n")).collect();
    let input = format!("0\r\n{trailers}\r\n");
    let err = chunked(input.as_bytes(), None).expect_err("many trailers");
    assert!(matches!(err, HttpError::TooManyHeaders { .. }), "{err:?}");
}

#[test]
fn a_huge_chunk_is_refused_from_its_size_line() {
    // Only the size line is there: were its data read, this would be `Truncated`.
    for size in ["ffffffffffffffff", "100001", "FFFFFFFF"] {
        let input = format!("{size}\r\n");
        let err = chunked(input.as_bytes(), Some(1 << 20)).expect_err(size);
        assert!(matches!(err, HttpError::BodyTooLarge { limit } if limit == 1 << 20));
        assert_eq!(err.status(), 413);
    }
    // The limit counts the whole body, not one chunk.
    let err = chunked(b"3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n", Some(5)).expect_err("total");
    assert!(matches!(err, HttpError::BodyTooLarge { .. }), "{err:?}");
    chunked(b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n", Some(5)).expect("exactly the limit");

    // Without a limit, the largest size is streamed, never allocated: what arrives is
    // handed out, and the end of the stream is a truncation.
    let mut body = Chunked::new(&b"ffffffffffffffff\r\nabc"[..], None);
    let mut buf = [0u8; 8];
    assert_eq!(body.read(&mut buf).expect("data"), 3);
    assert_eq!(&buf[..3], b"abc");
    let err = HttpError::from_io(body.read(&mut buf).expect_err("end"));
    assert!(matches!(err, HttpError::Truncated), "{err:?}");
}

#[test]
fn a_chunk_is_handed_out_before_the_next_arrives() {
    let mut body = Chunked::new(BufReader::new(ThenWait(b"5\r\nhello\r\n")), None);
    let mut buf = [0u8; 64];
    assert_eq!(body.read(&mut buf).expect("first chunk"), 5);
    assert_eq!(&buf[..5], b"hello");
    let err = body.read(&mut buf).expect_err("nothing more yet");
    assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
    assert!(HttpError::from_io(err).is_timeout());
}

#[test]
fn read_ready_takes_what_has_arrived_and_never_waits_for_more() {
    // Three chunks have arrived, the third only in part: all of it is handed out at once,
    // and nothing more is asked of the socket (which would say WouldBlock).
    let arrived = b"3\r\nabc\r\n3;x\r\ndef\r\n4\r\nghi";
    let reader = BufReader::new(ThenWait(arrived));
    let mut body = Body::new(reader, Framing::Chunked, None).expect("body");
    let mut buf = [0u8; 64];
    let n = body.read_ready(&mut buf).expect("what arrived");
    assert_eq!(&buf[..n], b"abcdefghi");
    let err = body.read_ready(&mut buf).expect_err("nothing more yet");
    assert!(err.is_timeout(), "{err:?}");

    // The next size line has not arrived whole: stop before it.
    for partial in [
        &b"3\r\nabc\r\n3\r"[..],
        b"3\r\nabc\r\n3\r\n",
        b"3\r\nabc\r",
        b"3\r\nabc\r\n0\r\n",
    ] {
        let reader = BufReader::new(ThenWait(partial));
        let mut body = Body::new(reader, Framing::Chunked, None).expect("body");
        assert_eq!(
            body.read_ready(&mut buf).expect("first chunk"),
            3,
            "{partial:?}"
        );
    }
    // The whole body arrived: read to its end in one call, then the end.
    let mut body = Body::new(
        &b"2\r\nab\r\n2\r\ncd\r\n0\r\n\r\n"[..],
        Framing::Chunked,
        None,
    )
    .expect("body");
    assert_eq!(body.read_ready(&mut buf).expect("all"), 4);
    assert_eq!(body.read_ready(&mut buf).expect("end"), 0);
    // What arrived before a malformed part or a limit is handed out first; the error
    // comes with the next read.
    for (input, limit) in [
        (&b"2\r\nab\r\nzz\r\n"[..], None),
        (b"2\r\nab\r\n2\n", None),
        (b"2\r\nab\rX2\r\ncd", None),
        (b"2\r\nab\r\n2\r\ncd\r\n", Some(3)),
    ] {
        let mut body = Body::new(input, Framing::Chunked, limit).expect("body");
        assert_eq!(body.read_ready(&mut buf).expect("first"), 2, "{input:?}");
        body.read_ready(&mut buf).expect_err("then the error");
    }
    let mut body = Body::new(&b"abcdef"[..], Framing::UntilClose, Some(4)).expect("body");
    let mut small = [0u8; 3];
    assert_eq!(body.read_ready(&mut small).expect("within the limit"), 3);
    body.read_ready(&mut small).expect_err("past the limit");
    // A small buffer is filled and no more.
    let mut body = Body::new(&b"5\r\nhello\r\n0\r\n\r\n"[..], Framing::Chunked, None).expect("");
    assert_eq!(body.read_ready(&mut buf[..2]).expect("two"), 2);

    let reader = BufReader::new(ThenWait(b"hello"));
    let mut body = Body::new(reader, Framing::Length(10), None).expect("body");
    assert_eq!(body.read_ready(&mut buf).expect("what arrived"), 5);
    let reader = BufReader::new(ThenWait(b"hello"));
    let mut body = Body::new(reader, Framing::UntilClose, None).expect("body");
    assert_eq!(body.read_ready(&mut buf).expect("what arrived"), 5);
}

#[test]
fn content_length_bodies_stop_at_their_length() {
    let mut reader = &b"helloGET"[..];
    let mut body = ContentLength::new(&mut reader, 5);
    let mut out = String::new();
    body.read_to_string(&mut out).expect("body");
    assert_eq!((out.as_str(), body.remaining()), ("hello", 0));
    assert_eq!(reader, b"GET");

    let mut short = ContentLength::new(BufReader::with_capacity(1, OneByte(b"hel")), 5);
    let err = HttpError::from_io(short.read_to_end(&mut Vec::new()).expect_err("short"));
    assert!(matches!(err, HttpError::Truncated), "{err:?}");

    // A huge announced length is refused at once against a limit...
    let err = Body::new(&b""[..], Framing::Length(u64::MAX), Some(10)).expect_err("huge");
    assert!(matches!(err, HttpError::BodyTooLarge { limit: 10 }));
    // ... and without one only streamed.
    let mut body = Body::new(&b"abc"[..], Framing::Length(u64::MAX), None).expect("body");
    assert_eq!(body.read(&mut [0u8; 8]).expect("data"), 3);
    assert!(body.read(&mut [0u8; 8]).is_err());
}

#[test]
fn close_delimited_and_empty_bodies() {
    let mut body = Body::new(&b"to the end"[..], Framing::UntilClose, None).expect("body");
    let mut out = String::new();
    body.read_to_string(&mut out).expect("read");
    assert_eq!(out, "to the end");

    let body = Body::new(&b"0123456789"[..], Framing::UntilClose, Some(4)).expect("body");
    let err = read_to_end_limited(body, 100).expect_err("limit");
    assert!(
        matches!(err, HttpError::BodyTooLarge { limit: 4 }),
        "{err:?}"
    );

    let mut body = Body::new(&b"next"[..], Framing::None, Some(0)).expect("empty");
    assert_eq!(body.read(&mut [0u8; 4]).expect("empty"), 0);
    assert_eq!(body.into_inner(), b"next");
}

#[test]
fn read_to_end_limited_allows_the_limit_and_no_more() {
    assert_eq!(read_to_end_limited(&b"abcd"[..], 4).expect("4"), b"abcd");
    let err = read_to_end_limited(&b"abcde"[..], 4).expect_err("5");
    assert!(matches!(err, HttpError::BodyTooLarge { limit: 4 }));
    // Memory follows what arrives: an endless stream stops at the limit.
    let err = read_to_end_limited(io::repeat(0), 1 << 16).expect_err("endless");
    assert!(matches!(err, HttpError::BodyTooLarge { .. }));
}

#[test]
fn the_chunked_writer_round_trips() {
    let mut w = ChunkedWriter::new(Vec::new());
    w.write_all(b"hello").expect("write");
    assert_eq!(w.write(b"").expect("empty"), 0);
    w.write_all(&[b'x'; 300]).expect("write");
    let bytes = w.finish().expect("finish");
    let mut expected = b"5\r\nhello\r\n12c\r\n".to_vec();
    expected.extend_from_slice(&[b'x'; 300]);
    expected.extend_from_slice(b"\r\n0\r\n\r\n");
    assert_eq!(bytes, expected);
    let out = chunked(&bytes, Some(305)).expect("decode");
    assert_eq!(out.len(), 305);
}
