//! A recording relay between inferproxy and the real server: it forwards every request as
//! it came (one per connection, as inferproxy sends them), streams the answer back, and
//! keeps, for each chat completion, the request body, the tokens the slot held just before
//! it (read through a hook, while no request runs) and the answer's stream events. The
//! measures are computed from that record after the session.

use std::io::{BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use strict_http::{Body, ChunkedWriter, read_request_head, read_to_end_limited};

/// One chat completion as it passed.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub request: Value,
    /// The request body's bytes, as they came.
    pub body: Vec<u8>,
    /// From the request's head read to the answer's last byte relayed.
    pub elapsed: Duration,
    /// The tokens the slot held before this request.
    pub held: Vec<i64>,
    pub status: u16,
    /// The `data:` events of the answer, parsed (`[DONE]` left out).
    pub events: Vec<Value>,
}

impl Exchange {
    /// The last `timings` of the answer.
    pub fn timings(&self) -> Option<&Value> {
        self.events.iter().rev().find_map(|e| e.get("timings"))
    }

    pub fn finish_reason(&self) -> Option<&str> {
        self.events
            .iter()
            .filter_map(|e| e["choices"][0]["finish_reason"].as_str())
            .next_back()
    }
}

type Hook = dyn Fn() -> Vec<i64> + Send + Sync;

/// The relay, listening on a loopback port until the process ends.
pub struct Recorder {
    pub addr: String,
    log: Arc<Log>,
}

/// The exchanges recorded, and how many chat completions have begun: one that began is
/// recorded a moment after its client saw `[DONE]`.
#[derive(Default)]
struct Log {
    begun: AtomicUsize,
    done: Mutex<Vec<Exchange>>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("addr", &self.addr)
            .finish()
    }
}

impl Recorder {
    /// Relays to `upstream` (`host:port`); `held` is asked before each chat completion.
    pub fn start(upstream: String, held: impl Fn() -> Vec<i64> + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the recorder");
        let addr = listener.local_addr().expect("address").to_string();
        let log = Arc::new(Log::default());
        let hook: Arc<Hook> = Arc::new(held);
        let (log2, up) = (Arc::clone(&log), upstream);
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (log, hook, up) = (Arc::clone(&log2), Arc::clone(&hook), up.clone());
                std::thread::spawn(move || relay(client, &up, &*hook, &log));
            }
        });
        Self { addr, log }
    }

    /// The chat completions so far, once every one that began is recorded (at most 10 s).
    pub fn exchanges(&self) -> Vec<Exchange> {
        let begun = self.log.begun.load(Ordering::SeqCst);
        let done = || {
            let list = self.log.done.lock().map(|l| l.clone()).unwrap_or_default();
            (list.len() >= begun).then_some(list)
        };
        crate::wait_until(
            "the recorder's last exchange",
            Duration::from_secs(10),
            done,
        )
    }
}

const SKIP: [&str; 5] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
];

fn relay(client: TcpStream, upstream: &str, held: &Hook, log: &Log) {
    let _ = client.set_read_timeout(Some(Duration::from_secs(60)));
    let mut reader = BufReader::new(client.try_clone().expect("clone"));
    let Ok(head) = read_request_head(&mut reader) else {
        return;
    };
    let started = Instant::now();
    let body = Body::new(&mut reader, head.framing, None)
        .and_then(|b| read_to_end_limited(b, 64 * 1024 * 1024))
        .expect("request body");
    let chat = head.method == "POST" && head.target == "/v1/chat/completions";
    if chat {
        log.begun.fetch_add(1, Ordering::SeqCst);
    }
    let before = if chat { held() } else { Vec::new() };
    let headers: Vec<(&str, &str)> = head
        .headers
        .iter()
        .filter(|(n, _)| !SKIP.iter().any(|s| n.eq_ignore_ascii_case(s)))
        .chain([("Connection", "close")])
        .collect();
    let up = TcpStream::connect(upstream).expect("connect upstream");
    let resp = strict_http::request(up, &head.method, &head.target, &headers, &body)
        .expect("upstream answer");
    let status = resp.status;
    let out_headers: Vec<(String, String)> = resp
        .headers
        .iter()
        .filter(|(n, _)| !SKIP.iter().any(|s| n.eq_ignore_ascii_case(s)))
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .collect();
    let mut fields: Vec<(&str, &str)> = out_headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    fields.push(("Connection", "close"));
    fields.push(("Transfer-Encoding", "chunked"));
    let mut out = client;
    if strict_http::write_response_head(&mut out, status, &resp.reason, &fields).is_err() {
        return;
    }
    let mut writer = ChunkedWriter::new(&mut out);
    let mut captured = Vec::new();
    let mut upstream_body = resp.body;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match upstream_body.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                captured.extend_from_slice(&buf[..n]);
                if writer
                    .write_all(&buf[..n])
                    .and_then(|()| writer.flush())
                    .is_err()
                {
                    break;
                }
            }
        }
    }
    let _ = writer.finish();
    if chat {
        let request = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let events = String::from_utf8_lossy(&captured)
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter(|d| *d != "[DONE]")
            .filter_map(|d| serde_json::from_str(d).ok())
            .collect();
        if let Ok(mut log) = log.done.lock() {
            log.push(Exchange {
                request,
                body: body.clone(),
                elapsed: started.elapsed(),
                held: before,
                status,
                events,
            });
        }
    }
}
