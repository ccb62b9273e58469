//! A completed exchange logs nothing at warning level: loopd closes its connection as soon
//! as it has read `data: [DONE]`, before inferproxy writes the body's terminating
//! zero-length chunk (or before llama-server sends it). A client that leaves before
//! `[DONE]` is still a cut stream, logged as a warning.

use std::time::{Duration, Instant};

use strict_http::SseReader;

use crate::support::{Gate, Proxy, STREAM_HEAD, Upstream, chunk};

const EVENTS: [&str; 3] = [
    "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"content\":\"4\"}}]}\n\n",
    "data: {\"choices\":[{\"finish_reason\":\"stop\",\"index\":0,\"delta\":{}}]}\n\n",
    "data: [DONE]\n\n",
];

/// How llama-server ends the body after the events, once the client has gone.
#[derive(Debug, Clone, Copy)]
enum Ending {
    /// The terminating chunk comes after the client closed.
    LastChunkLate,
    /// No terminating chunk: the connection stays open until inferproxy gives up on it.
    Never,
}

/// An upstream that sends the first `sent` events (each a chunk), waits until the client
/// has gone, then sends the rest and ends as `ending` says.
fn upstream(sent: usize, gone: Gate, ending: Ending) -> Upstream {
    Upstream::start(move |_, stream| {
        let mut out = STREAM_HEAD.to_vec();
        for e in &EVENTS[..sent] {
            out.extend_from_slice(&chunk(e.as_bytes()));
        }
        std::io::Write::write_all(stream, &out).expect("events");
        assert!(gone.wait(), "the client never left");
        match ending {
            Ending::LastChunkLate => {
                std::thread::sleep(Duration::from_millis(50));
                let mut rest = Vec::new();
                for e in &EVENTS[sent..] {
                    rest.extend_from_slice(&chunk(e.as_bytes()));
                }
                rest.extend_from_slice(b"0\r\n\r\n");
                let _ = std::io::Write::write_all(stream, &rest);
            }
            Ending::Never => std::thread::sleep(Duration::from_secs(3)),
        }
    })
}

/// Reads the first `sent` events (the last is `[DONE]` when all are sent), closes like
/// loopd, and returns the proxy's log once it has logged the exchange.
fn exchange(sent: usize, ending: Ending) -> String {
    let gone = Gate::new();
    let up = upstream(sent, gone.clone(), ending);
    let proxy = Proxy::start(up.port, "");
    let resp = proxy.chat().expect("request");
    let mut sse = SseReader::new(resp.body);
    for _ in 0..sent {
        sse.next_event().expect("event").expect("an event");
    }
    drop(sse);
    gone.open();
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let log = proxy.log();
        if log.contains("POST /v1/chat/completions: ") {
            return log;
        }
        assert!(
            Instant::now() < until,
            "the exchange was never logged: {log}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn warnings(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.starts_with("warning: ") || l.starts_with("error: "))
        .collect()
}

#[test]
fn a_client_that_closes_after_done_is_a_completed_exchange() {
    for ending in [Ending::LastChunkLate, Ending::Never] {
        let log = exchange(EVENTS.len(), ending);
        assert!(warnings(&log).is_empty(), "{ending:?}: {log}");
        assert!(
            log.contains("200, ") && log.contains("the client closed after [DONE]"),
            "{ending:?}: {log}"
        );
    }
}

#[test]
fn a_client_that_leaves_before_done_is_still_a_cut_stream() {
    for ending in [Ending::LastChunkLate, Ending::Never] {
        let log = exchange(EVENTS.len() - 1, ending);
        let warned = warnings(&log);
        assert!(
            warned.len() == 1 && warned[0].contains("stream cut"),
            "{ending:?}: {log}"
        );
    }
}
