//! One exchange: read the client's request (bounded, within a deadline), refuse what is not
//! on the allowlist, send it to llama-server on a fresh connection, and stream the answer
//! back piece by piece as it arrives.
//!
//! Framing never crosses the proxy: the request body is read whole (at most
//! `max_request_bytes`) and sent on with a Content-Length; the answer's body is decoded by
//! the strict readers and re-framed (the same length, or chunked), so whatever either side
//! sends, the other sees only well-formed messages. One request per connection on both
//! sides (`Connection: close`).

use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::Instant;

use daemon::log;
use strict_http::{
    self, Body, ChunkedWriter, Framing, HttpError, RequestHead, Version, read_request_head,
    read_response_head, read_to_end_limited, write_request, write_response_head,
};

use crate::proxy::Proxy;
use crate::reply;
use crate::upstream::{Deadline, Failure, UpstreamReader};

/// The requests forwarded: what loopd needs and nothing else. The target must match
/// exactly (no query, no other spelling).
pub const ALLOWED: [(&str, &str); 4] = [
    ("POST", "/v1/chat/completions"),
    ("GET", "/health"),
    ("GET", "/props"),
    ("GET", "/v1/models"),
];

const FORBIDDEN: &str = "inferproxy forwards only POST /v1/chat/completions, \
                         GET /health, GET /props and GET /v1/models";

/// Hop-by-hop fields, and those the proxy writes itself: never forwarded either way.
const NOT_FORWARDED: [&str; 12] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "proxy-authorization",
    "proxy-authenticate",
    "content-length",
    "host",
    "expect",
];

/// How many interim (1xx) answers llama-server may send before its real one.
const MAX_INTERIM: usize = 8;

/// How much of the answer is read (and then written) at once.
const RELAY_BUFFER: usize = 64 * 1024;

/// Serves one request on `client` from the admitted peer `who`.
pub(crate) fn exchange(proxy: &Proxy, client: &UnixStream, who: &str) {
    let started = Instant::now();
    let infer = &proxy.infer;
    let deadline = Deadline {
        stream: client,
        until: started + infer.request_timeout,
    };
    let mut reader = BufReader::new(deadline);
    let (head, body) = match read_request(&mut reader, client, infer.max_request_bytes) {
        Ok(request) => request,
        Err(None) => return,
        Err(Some((status, message, detail))) => {
            log::info(format_args!("{who}: refused with {status}: {detail}"));
            reply::error(client, status, message);
            return;
        }
    };
    let what = format!("{} {}", head.method, head.target);
    let upstream = match connect(proxy, &head, &body) {
        Ok(tcp) => tcp,
        Err((status, message, detail)) => {
            log::warn(format_args!("{who}: {what}: {status}: {detail}"));
            reply::error(client, status, message);
            return;
        }
    };
    let mut up = UpstreamReader::new(
        &upstream,
        client,
        infer.first_byte_timeout,
        infer.idle_timeout,
    );
    let outcome = relay(&mut up, client, &head);
    let waited = up.first_byte_at.map_or_else(
        || "no answer".into(),
        |t| format!("first byte after {:?}", t - started),
    );
    match outcome {
        Ok((status, bytes)) => {
            proxy.upstream_reached(true);
            log::info(format_args!(
                "{who}: {what}: {status}, {bytes} body bytes, {waited}, done after {:?}",
                started.elapsed()
            ));
        }
        Err(Abort::BeforeHead(status, message, detail)) => {
            proxy.upstream_reached(false);
            log::warn(format_args!("{who}: {what}: {status}: {detail}"));
            reply::error(client, status, message);
        }
        Err(Abort::Cut(why)) => {
            log::warn(format_args!(
                "{who}: {what}: stream cut after {:?} ({waited}): {why}",
                started.elapsed()
            ));
        }
    }
    // Dropping `upstream` closes it: llama-server stops generating for a client that left.
}

/// A refusal: the status, the message the client gets, and the detail only the log gets.
type Refusal = (u16, &'static str, String);

/// The request head and its whole body; `Err(None)` when the client sent nothing at all.
fn read_request<R: Read>(
    reader: &mut BufReader<R>,
    client: &UnixStream,
    max: u64,
) -> Result<(RequestHead, Vec<u8>), Option<Refusal>> {
    let head = match read_request_head(reader) {
        Ok(head) => head,
        Err(HttpError::Closed) => return Err(None),
        Err(e) => return Err(Some((e.status(), request_message(&e), e.to_string()))),
    };
    if !ALLOWED.contains(&(head.method.as_str(), head.target.as_str())) {
        let detail = format!(
            "{:?} {:?} is not on the allowlist",
            head.method, head.target
        );
        return Err(Some((403, FORBIDDEN, detail)));
    }
    let continue_100 = match head.headers.get("expect") {
        None => false,
        Some(v) if v.eq_ignore_ascii_case("100-continue") => true,
        Some(_) => {
            let detail = "an Expect other than 100-continue".to_owned();
            return Err(Some((
                417,
                "only Expect: 100-continue is understood",
                detail,
            )));
        }
    };
    let refuse = |e: HttpError| Some((e.status(), request_message(&e), e.to_string()));
    let body = Body::new(&mut *reader, head.framing, Some(max)).map_err(refuse)?;
    if continue_100 && head.framing != Framing::None {
        let _ = (&*client).write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
    }
    let body = read_to_end_limited(body, max).map_err(refuse)?;
    Ok((head, body))
}

fn request_message(e: &HttpError) -> &'static str {
    match e.status() {
        408 => "the request did not arrive in time",
        413 => "the request body is too large",
        431 => "the request head is too large",
        501 => "only chunked transfer coding is understood",
        505 => "only HTTP/1.1 and HTTP/1.0 are understood",
        _ => "malformed request",
    }
}

/// Connects to llama-server and sends the request on: the client's end-to-end fields, our
/// Host, `Connection: close`, the body with its length.
fn connect(proxy: &Proxy, head: &RequestHead, body: &[u8]) -> Result<TcpStream, Refusal> {
    let infer = &proxy.infer;
    let addr = infer.upstream.addr;
    let tcp = TcpStream::connect_timeout(&addr, infer.connect_timeout).map_err(|e| {
        let timed_out = daemon::conn::is_timeout_io(&e);
        proxy.upstream_reached(false);
        if timed_out {
            (
                504,
                "llama-server did not accept the connection in time",
                format!("connect {addr}: {e}"),
            )
        } else {
            (
                502,
                "llama-server is not reachable",
                format!("connect {addr}: {e}"),
            )
        }
    })?;
    let _ = tcp.set_nodelay(true);
    let _ = tcp.set_write_timeout(Some(infer.idle_timeout));
    let listed = listed_in_connection(&head.headers);
    let mut fields: Vec<(&str, &str)> = head
        .headers
        .iter()
        .filter(|(name, _)| forwarded(name, &listed))
        .collect();
    fields.push(("Host", &infer.upstream.host));
    fields.push(("Connection", "close"));
    write_request(&mut &tcp, &head.method, &head.target, &fields, body).map_err(|e| {
        proxy.upstream_reached(false);
        (
            502,
            "llama-server is not reachable",
            format!("sending the request: {e}"),
        )
    })?;
    Ok(tcp)
}

/// The fields a `Connection` header names: hop-by-hop too.
fn listed_in_connection(headers: &strict_http::Headers) -> Vec<String> {
    headers
        .get_all("connection")
        .flat_map(|v| v.split(','))
        .map(|name| name.trim().to_ascii_lowercase())
        .collect()
}

fn forwarded(name: &str, listed: &[String]) -> bool {
    let lower = name.to_ascii_lowercase();
    !NOT_FORWARDED.contains(&lower.as_str()) && !listed.contains(&lower)
}

enum Abort {
    /// Nothing was sent to the client yet: answer with this error.
    BeforeHead(u16, &'static str, String),
    /// The answer had started: the client connection is closed short (a chunked body
    /// without its last chunk, or fewer bytes than its length), which the client sees.
    Cut(String),
}

/// Reads llama-server's answer and streams it to the client. `Ok((status, body bytes))`.
fn relay(
    up: &mut UpstreamReader<'_>,
    client: &UnixStream,
    request: &RequestHead,
) -> Result<(u16, u64), Abort> {
    let mut up = BufReader::with_capacity(RELAY_BUFFER, up);
    let mut interim = 0;
    let head = loop {
        let head = read_response_head(&mut up).map_err(|e| before_head(&e))?;
        match head.status {
            101 => {
                let detail = "llama-server answered 101 Switching Protocols".into();
                return Err(Abort::BeforeHead(
                    502,
                    "llama-server answered badly",
                    detail,
                ));
            }
            100..=199 if interim < MAX_INTERIM => interim += 1,
            100..=199 => {
                let detail = format!("more than {MAX_INTERIM} interim answers");
                return Err(Abort::BeforeHead(
                    502,
                    "llama-server answered badly",
                    detail,
                ));
            }
            _ => break head,
        }
    };
    let framing = head.body_framing(&request.method);
    // An HTTP/1.0 client cannot read chunked: it gets the body up to the close.
    let chunk_out = matches!(framing, Framing::Chunked | Framing::UntilClose)
        && request.version == Version::Http11;
    let listed = listed_in_connection(&head.headers);
    let mut fields: Vec<(&str, String)> = head
        .headers
        .iter()
        .filter(|(name, _)| forwarded(name, &listed))
        .map(|(n, v)| (n, v.to_owned()))
        .collect();
    match framing {
        Framing::None => {}
        Framing::Length(n) => fields.push(("Content-Length", n.to_string())),
        Framing::Chunked | Framing::UntilClose if chunk_out => {
            fields.push(("Transfer-Encoding", "chunked".into()));
        }
        Framing::Chunked | Framing::UntilClose => {}
    }
    fields.push(("Connection", "close".into()));
    let fields: Vec<(&str, &str)> = fields.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let mut out = client;
    write_response_head(&mut out, head.status, &head.reason, &fields)
        .map_err(|e| Abort::Cut(format!("writing the head to the client: {e}")))?;

    let mut body = Body::new(up, framing, None).map_err(|e| Abort::Cut(e.to_string()))?;
    let mut buf = vec![0u8; RELAY_BUFFER];
    let mut total = 0u64;
    let mut chunked = chunk_out.then(|| ChunkedWriter::new(out));
    loop {
        // Everything that has arrived, without waiting for more; then out it goes at once.
        let n = match body.read_ready(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => return Err(Abort::Cut(cut_reason(&e))),
        };
        let written = match chunked.as_mut() {
            Some(w) => w.write_all(&buf[..n]),
            None => out.write_all(&buf[..n]),
        };
        written.map_err(|e| Abort::Cut(format!("the client went away: {e}")))?;
        total += n as u64;
    }
    if let Some(w) = chunked {
        w.finish()
            .map_err(|e| Abort::Cut(format!("the client went away: {e}")))?;
    }
    Ok((head.status, total))
}

fn before_head(e: &HttpError) -> Abort {
    match Failure::of(e) {
        Failure::ClientGone => Abort::Cut(e.to_string()),
        Failure::Silent => {
            Abort::BeforeHead(504, "llama-server did not answer in time", e.to_string())
        }
        Failure::Broken => Abort::BeforeHead(502, "llama-server answered badly", e.to_string()),
    }
}

fn cut_reason(e: &HttpError) -> String {
    match Failure::of(e) {
        Failure::ClientGone => format!("while waiting for llama-server: {e}"),
        Failure::Silent | Failure::Broken => format!("llama-server: {e}"),
    }
}
