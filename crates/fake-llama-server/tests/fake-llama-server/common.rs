//! Shared by the test modules: starting servers, a small HTTP/1.1 client, SSE parsing and
//! the JSON structure comparison.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Map, Value};

// ---- processes ---------------------------------------------------------------------------

/// A directory removed when dropped.
#[derive(Debug)]
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "fake-llama-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).expect("create temp dir");
        Self(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A server process that printed `listening on ADDR`; killed when dropped.
#[derive(Debug)]
pub struct Server {
    child: Child,
    pub addr: SocketAddr,
    /// The server's files, removed after it is killed.
    _dir: TempDir,
}

impl Server {
    /// Starts `cmd` (stdin and stdout piped) and waits up to `wait` for its first line.
    pub fn start(mut cmd: Command, dir: TempDir, wait: Duration) -> Self {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the server process");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = match rx.recv_timeout(wait) {
            Ok(line) => line,
            Err(_) => {
                let _ = child.kill();
                panic!("{cmd:?} printed no `listening on` line within {wait:?}");
            }
        };
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| {
                let _ = child.kill();
                panic!("{cmd:?}: first line {line:?} is not `listening on ADDR`")
            });
        Self {
            child,
            addr,
            _dir: dir,
        }
    }

    /// The fake with `script` (TOML text).
    pub fn fake(script: &str) -> Self {
        let dir = TempDir::new("fake");
        let path = dir.0.join("script.toml");
        std::fs::write(&path, script).expect("write script");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_fake-llama-server"));
        cmd.args(["--listen", "127.0.0.1:0", "--script"]).arg(&path);
        Self::start(cmd, dir, Duration::from_secs(10))
    }

    pub fn get(&self, path: &str) -> Response {
        Conn::open(self.addr).send("GET", path, None)
    }

    pub fn post(&self, path: &str, body: &Value) -> Response {
        Conn::open(self.addr).send("POST", path, Some(body.to_string().as_bytes()))
    }

    pub fn post_raw(&self, path: &str, body: &[u8]) -> Response {
        Conn::open(self.addr).send("POST", path, Some(body))
    }

    pub fn chat(&self, body: &Value) -> Response {
        self.post("/v1/chat/completions", body)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---- HTTP client ---------------------------------------------------------------------------

/// A response as read off the wire.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The body ended as its framing said (false: the peer closed early).
    pub complete: bool,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn events(&self) -> Vec<Event> {
        parse_sse(&String::from_utf8_lossy(&self.body))
    }
}

/// One kept-alive connection.
#[derive(Debug)]
pub struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Conn {
    pub fn open(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(300)))
            .expect("timeout");
        let reader = BufReader::new(stream.try_clone().expect("clone stream"));
        Self {
            reader,
            writer: stream,
        }
    }

    pub fn send(&mut self, method: &str, path: &str, body: Option<&[u8]>) -> Response {
        let mut head = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
        if let Some(body) = body {
            head.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            ));
        }
        head.push_str("\r\n");
        self.writer.write_all(head.as_bytes()).expect("send head");
        if let Some(body) = body {
            self.writer.write_all(body).expect("send body");
        }
        self.read_response()
    }

    fn read_line(&mut self) -> Option<String> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.trim_end_matches(['\r', '\n']).to_owned()),
        }
    }

    fn read_response(&mut self) -> Response {
        let status_line = self.read_line().expect("a status line");
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
        let mut headers = Vec::new();
        while let Some(line) = self.read_line() {
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').expect("header line");
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
        let mut response = Response {
            status,
            headers,
            body: Vec::new(),
            complete: false,
        };
        if response
            .header("transfer-encoding")
            .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
        {
            response.complete = self.read_chunked(&mut response.body);
        } else if let Some(n) = response.header("content-length") {
            let n: usize = n.parse().expect("Content-Length");
            let mut body = Vec::new();
            let got = (&mut self.reader)
                .take(n as u64)
                .read_to_end(&mut body)
                .unwrap_or(0);
            response.complete = got == n;
            response.body = body;
        } else {
            let _ = self.reader.read_to_end(&mut response.body);
            response.complete = true;
        }
        response
    }

    fn read_chunked(&mut self, body: &mut Vec<u8>) -> bool {
        loop {
            let Some(size_line) = self.read_line() else {
                return false;
            };
            let Ok(size) = usize::from_str_radix(size_line.split(';').next().unwrap_or(""), 16)
            else {
                return false;
            };
            if size == 0 {
                return self.read_line().is_some();
            }
            let mut chunk = vec![0; size + 2];
            if self.reader.read_exact(&mut chunk).is_err() {
                return false;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    }
}

// ---- SSE -----------------------------------------------------------------------------------

/// One `data:` event.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Json(Value),
    Done,
    /// A `data:` line that is not JSON.
    Garbage(String),
}

pub fn parse_sse(text: &str) -> Vec<Event> {
    text.split("\n\n")
        .filter_map(|block| block.trim().strip_prefix("data:").map(str::trim))
        .map(|data| match data {
            "[DONE]" => Event::Done,
            _ => {
                serde_json::from_str(data).map_or_else(|_| Event::Garbage(data.into()), Event::Json)
            }
        })
        .collect()
}

/// The kind of a stream event, for comparing streams whose contents differ.
pub fn event_kind(event: &Event) -> &'static str {
    let Event::Json(v) = event else {
        return if *event == Event::Done {
            "done"
        } else {
            "garbage"
        };
    };
    let Some(choice) = v["choices"].as_array().and_then(|c| c.first()) else {
        return "usage";
    };
    if !choice["finish_reason"].is_null() {
        return "finish";
    }
    let delta = &choice["delta"];
    if delta.get("role").is_some() {
        "role"
    } else if let Some(call) = delta["tool_calls"].as_array().and_then(|c| c.first()) {
        if call.get("id").is_some() {
            "tool_call_first"
        } else {
            "tool_call_fragment"
        }
    } else if delta.get("reasoning_content").is_some() {
        "reasoning"
    } else if delta.get("content").is_some() {
        "content"
    } else {
        "other"
    }
}

/// The sequence of event kinds with repeats collapsed: `role content+ finish usage done`.
pub fn kind_pattern(events: &[Event]) -> Vec<String> {
    let mut pattern: Vec<String> = Vec::new();
    for kind in events.iter().map(event_kind) {
        match pattern.last_mut() {
            Some(last) if last.trim_end_matches('+') == kind => {
                if !last.ends_with('+') {
                    last.push('+');
                }
            }
            _ => pattern.push(kind.to_owned()),
        }
    }
    pattern
}

/// One representative event per kind, in first-seen order.
pub fn events_by_kind(events: &[Event]) -> Vec<(&'static str, Value)> {
    let mut seen: Vec<(&'static str, Value)> = Vec::new();
    for event in events {
        let kind = event_kind(event);
        if let (Event::Json(v), false) = (event, seen.iter().any(|(k, _)| *k == kind)) {
            seen.push((kind, v.clone()));
        }
    }
    seen
}

// ---- JSON structure ------------------------------------------------------------------------

/// The structure of a value: objects keep their keys with the shapes of their values, arrays
/// become the sorted set of their elements' shapes, scalars become their type name (integers
/// and floats apart).
pub fn shape(v: &Value) -> Value {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(n) if n.is_f64() => "float".into(),
        Value::Number(_) => "integer".into(),
        Value::String(_) => "string".into(),
        Value::Array(items) => {
            let mut shapes: Vec<Value> = items.iter().map(shape).collect();
            shapes.sort_by_key(Value::to_string);
            shapes.dedup();
            Value::Array(shapes)
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), shape(v)))
                .collect::<Map<_, _>>(),
        ),
    }
}

/// Differences between the structures of `expected` and `actual`, one line each.
pub fn shape_diff(expected: &Value, actual: &Value) -> Vec<String> {
    let mut out = Vec::new();
    diff_at("$", &shape(expected), &shape(actual), &mut out);
    out
}

fn diff_at(path: &str, e: &Value, a: &Value, out: &mut Vec<String>) {
    match (e, a) {
        (Value::Object(em), Value::Object(am)) => {
            for (k, ev) in em {
                match am.get(k) {
                    Some(av) => diff_at(&format!("{path}.{k}"), ev, av, out),
                    None => out.push(format!("{path}.{k}: missing (expected {ev})")),
                }
            }
            for (k, av) in am {
                if !em.contains_key(k) {
                    out.push(format!("{path}.{k}: unexpected (got {av})"));
                }
            }
        }
        (Value::Array(ea), Value::Array(aa)) if ea.len() == 1 && aa.len() == 1 => {
            diff_at(&format!("{path}[]"), &ea[0], &aa[0], out);
        }
        _ if e != a => out.push(format!("{path}: expected {e}, got {a}")),
        _ => {}
    }
}

/// Panics with a readable report when the structures differ.
pub fn assert_same_shape(what: &str, expected: &Value, actual: &Value) {
    let diff = shape_diff(expected, actual);
    assert!(
        diff.is_empty(),
        "{what}: the JSON structure differs\n  {}\nexpected: {expected}\nactual:   {actual}",
        diff.join("\n  ")
    );
}

/// A stored transcript of the real server (`tests/transcripts/`).
pub fn transcript(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/transcripts")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("transcript JSON")
}

/// A transcript's SSE events.
pub fn transcript_events(t: &Value) -> Vec<Event> {
    parse_sse(t["response"]["raw_sse"].as_str().expect("raw_sse"))
}

/// Panics unless two streams have the same sequence of event kinds (repeats collapsed) and,
/// kind by kind, the same JSON structure.
pub fn assert_streams_alike(what: &str, expected: &[Event], actual: &[Event]) {
    assert_eq!(
        kind_pattern(actual),
        kind_pattern(expected),
        "{what}: the event sequence differs"
    );
    let actual_kinds = events_by_kind(actual);
    for (kind, expected_event) in events_by_kind(expected) {
        let (_, actual_event) = actual_kinds
            .iter()
            .find(|(k, _)| *k == kind)
            .unwrap_or_else(|| panic!("{what}: no `{kind}` event"));
        assert_same_shape(
            &format!("{what}, `{kind}` event"),
            &expected_event,
            actual_event,
        );
    }
}

/// The value of `llamacpp:{name}` in a `/metrics` text.
pub fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("llamacpp:{name} ")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}
