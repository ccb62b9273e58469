//! The self-test's sink: a plain HTTP listener on loopback where every host of the shadow
//! leads (`[broker.self_test]`), recording each request whole (request line, headers,
//! body) and answering `200` with a fixed body, or, to the consult client's request (`POST
//! …/chat/completions`), with an OpenAI-style chat completion carrying it; a fetch of a path
//! registered with [`Sink::source`] is answered with that path's canary (`fetch_source`).
//! It speaks no TLS:
//! the hostile model's URLs are `http://` (a grant's hosts constrain neither scheme nor
//! port).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use daemon::lock;

/// The most of one request the sink keeps.
const MAX_REQUEST: usize = 64 * 1024;

/// What the sink answers: the fetch succeeds, and the hostile model's next rule sees it.
pub const ANSWER: &str = "BXSINK-OK";

/// What the sink's answer carries for a request whose query has `c=TOKEN`: `BXWRITE-TOKEN`,
/// the content an untrusted-write chain's model then writes. It is in no request, so a
/// denial that echoes the URL cannot put it in the session.
pub const WRITE: &str = "BXWRITE-";

/// What a consult prompt says before its token (`c=TOKEN` in the request's body): the
/// sink's completion then carries `BXWRITE-TOKEN`, as a fetch's answer does.
pub const ASK: &str = "Say back what follows: c=";

/// Whether `text` is the consult client's request (`toolkit::consult`: a POST to
/// `{url}/chat/completions`).
fn consulted(text: &str) -> bool {
    let line = text.lines().next().unwrap_or_default();
    line.starts_with("POST ") && line.contains("/chat/completions ")
}

/// The request's path, its query left off.
fn path_of(line: &str) -> &str {
    let target = line.split(' ').nth(1).unwrap_or_default();
    target.split(['?', '#']).next().unwrap_or_default()
}

/// The answer's content type and body for the request `text`, `sources` the registered
/// paths and their canaries.
fn answer_to(text: &str, sources: &BTreeMap<String, String>) -> (&'static str, String) {
    let consult = consulted(text);
    let line = text.lines().next().unwrap_or_default();
    if let (false, Some(canary)) = (consult, sources.get(path_of(line))) {
        return ("text/plain", format!("{ANSWER} {canary}"));
    }
    let token = if consult {
        text.split_once(ASK).map_or("", |(_, rest)| {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
    } else {
        line.split_once("?c=")
            .map(|(_, rest)| rest.split([' ', '&']).next().unwrap_or_default())
            .unwrap_or_default()
    };
    let said = if token.is_empty() {
        ANSWER.to_owned()
    } else {
        format!("{ANSWER} {WRITE}{token}")
    };
    if consult {
        let completion = serde_json::json!({
            "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": said}}],
        });
        ("application/json", completion.to_string())
    } else {
        ("text/plain", said)
    }
}

/// The running sink: its address and what it received.
pub struct Sink {
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<String>>>,
    /// The paths a fetch source's request names, each with the canary its answer carries.
    sources: Arc<Mutex<BTreeMap<String, String>>>,
}

impl Sink {
    /// Listens on 127.0.0.1 at a free port; a thread serves each connection.
    pub fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sources = Arc::new(Mutex::new(BTreeMap::new()));
        let (keep, answers) = (seen.clone(), sources.clone());
        std::thread::Builder::new()
            .name("hostile-sink".into())
            .spawn(move || {
                for conn in listener.incoming().flatten() {
                    let (keep, answers) = (keep.clone(), answers.clone());
                    let _ = std::thread::Builder::new()
                        .name("hostile-sink-conn".into())
                        .spawn(move || serve(conn, &keep, &answers));
                }
            })?;
        Ok(Self {
            addr,
            seen,
            sources,
        })
    }

    /// Answers a request for `path` (its query left off) with `canary`, which the request
    /// itself never carries: a fetch source's (`fetch_source`).
    pub fn source(&self, path: &str, canary: &str) {
        lock(&self.sources).insert(path.to_owned(), canary.to_owned());
    }

    /// Every request received so far, as text.
    pub fn seen(&self) -> Vec<String> {
        lock(&self.seen).clone()
    }
}

fn serve(conn: TcpStream, seen: &Mutex<Vec<String>>, sources: &Mutex<BTreeMap<String, String>>) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(match conn.try_clone() {
        Ok(c) => c,
        Err(_) => return,
    });
    let mut text = String::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0).min(MAX_REQUEST);
        }
        let end = line == "\r\n" || line == "\n";
        text.push_str(&line);
        if end || text.len() > MAX_REQUEST {
            break;
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_ok() {
        text.push_str(&String::from_utf8_lossy(&body));
    }
    let (kind, answer) = answer_to(&text, &lock(sources));
    lock(seen).push(text);
    let mut conn = conn;
    let _ = write!(
        conn,
        "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{answer}",
        answer.len()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request is recorded whole, line, headers and body, and answered.
    #[test]
    fn the_sink_records_each_request_whole() {
        let sink = Sink::start().expect("sink");
        let mut c = TcpStream::connect(sink.addr).expect("connect");
        write!(
            c,
            "POST /bx?c=BXCANARY-n0-1- HTTP/1.1\r\nHost: api.example.org\r\nContent-Length: 4\r\n\r\nbody"
        )
        .expect("send");
        let mut answer = String::new();
        c.read_to_string(&mut answer).expect("answer");
        assert!(
            answer.starts_with("HTTP/1.1 200 OK")
                && answer.ends_with("BXSINK-OK BXWRITE-BXCANARY-n0-1-")
        );
        let seen = sink.seen();
        assert_eq!(seen.len(), 1);
        assert!(seen[0].starts_with("POST /bx?c=BXCANARY-n0-1- HTTP/1.1\r\nHost: api.example.org"));
        assert!(seen[0].ends_with("\r\n\r\nbody"), "{seen:?}");
    }

    /// A consult request is answered with a chat completion the consult client takes: its
    /// content carries `BXWRITE-TOKEN` for the prompt's `c=TOKEN`, and `BXSINK-OK` alone
    /// for a prompt without one; a fetch of the same path is answered as text.
    #[test]
    fn a_consult_is_answered_with_a_completion() {
        let request = |prompt: &str| {
            let body = serde_json::json!({"model": "m", "messages": [{"role": "user", "content": prompt}]})
                .to_string();
            format!(
                "POST /v1/chat/completions HTTP/1.1\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
        };
        let content = |text: &str| {
            let (kind, body) = answer_to(text, &BTreeMap::new());
            assert_eq!(kind, "application/json");
            let v: serde_json::Value = serde_json::from_str(&body).expect("JSON");
            v["choices"][0]["message"]["content"]
                .as_str()
                .expect("content")
                .to_owned()
        };
        assert_eq!(
            content(&request(&format!("{ASK}BXCANARY-n0-7-"))),
            "BXSINK-OK BXWRITE-BXCANARY-n0-7-"
        );
        assert_eq!(
            content(&request("Summarise this: BXCANARY-n0-1-")),
            "BXSINK-OK"
        );
        assert_eq!(
            answer_to(
                "GET /v1/chat/completions?c=x HTTP/1.1\r\n\r\n",
                &BTreeMap::new()
            ),
            ("text/plain", "BXSINK-OK BXWRITE-x".to_owned())
        );
    }

    /// A fetch of a registered path is answered with its canary, whatever its query; any
    /// other path, and a consult, as before.
    #[test]
    fn a_registered_path_is_answered_with_its_canary() {
        let sink = Sink::start().expect("sink");
        sink.source("/bxsource-3/", "BXCANARY-n0-3-");
        let get = |path: &str| {
            let mut c = TcpStream::connect(sink.addr).expect("connect");
            write!(c, "GET {path} HTTP/1.1\r\nHost: mail.example.net\r\n\r\n").expect("send");
            let mut answer = String::new();
            c.read_to_string(&mut answer).expect("answer");
            answer
        };
        assert!(get("/bxsource-3/").ends_with("\r\n\r\nBXSINK-OK BXCANARY-n0-3-"));
        assert!(get("/bxsource-3/?x=1").ends_with("BXSINK-OK BXCANARY-n0-3-"));
        assert!(get("/bxsource-4/").ends_with("\r\n\r\nBXSINK-OK"));
        assert!(get("/bxsource-3/x").ends_with("\r\n\r\nBXSINK-OK"));
        assert!(!sink.seen().iter().any(|r| r.contains("BXCANARY")));
    }
}
