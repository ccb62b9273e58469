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

use crate::abort::{Abort, Cut, MAX_INTERIM, Refused, before_head};
use crate::proxy::Proxy;
use crate::reply;
use crate::upstream::{Deadline, Failure, UpstreamReader};
use crate::watch::Watch;
use crate::witness::{self, Pushed, WitnessError, Witnessing};

/// The requests forwarded: what loopd needs and nothing else. The target must match
/// exactly (no query, no other spelling).
pub const ALLOWED: [(&str, &str); 4] = [
    ("POST", "/v1/chat/completions"),
    ("GET", "/health"),
    ("GET", "/props"),
    ("GET", "/v1/models"),
];

/// Hop-by-hop fields, and those the proxy writes itself: never forwarded either way.
const NOT_FORWARDED: [&str; 14] = [
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
    // inferproxy's own version field: what arrives under its name is not inferproxy's.
    "x-boxmaker-inferproxy-version",
    // The completion inferproxy witnessed is named by inferproxy alone.
    proto::attest::COMPLETION_HEADER,
];

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
        Err(Some(why)) => {
            log::info(format_args!("{who}: refused with {}: {why}", why.status()));
            reply::error(client, why.status(), why.message());
            return;
        }
    };
    let what = format!("{} {}", head.method, head.target);
    // A chat request is witnessed, or refused: never forwarded unwitnessed.
    let witness = if head.target == "/v1/chat/completions" {
        match proto::attest::witnessable(&body) {
            Ok(prompt) => match Witnessing::start(prompt) {
                Ok(w) => Some(w),
                Err(e) => {
                    let why = Refused::NoId(e);
                    log::error(format_args!("{who}: {what}: {}: {why}", why.status()));
                    return reply::error(client, why.status(), why.message());
                }
            },
            Err(why) => {
                log::info(format_args!("{who}: {what}: refused with 400: {why}"));
                return reply::unwitnessable(client, &why);
            }
        }
    } else {
        None
    };
    // llama-server gave nothing to forward: the client gets our answer.
    let refuse = |why: Refused| {
        proxy.upstream_reached(false);
        log::warn(format_args!("{who}: {what}: {}: {why}", why.status()));
        reply::error(client, why.status(), why.message());
    };
    let upstream = match connect(proxy, &head, &body) {
        Ok(tcp) => tcp,
        Err(why) => return refuse(why),
    };
    let mut up = UpstreamReader::new(
        &upstream,
        client,
        infer.first_byte_timeout,
        infer.idle_timeout,
    );
    let outcome = relay(proxy, &mut up, client, &head, witness.as_ref());
    let waited = up.first_byte_at.map_or_else(
        || "no answer".into(),
        |t| format!("first byte after {:?}", t - started),
    );
    match outcome {
        Ok((status, bytes, end)) => {
            proxy.upstream_reached(true);
            let named = witness
                .as_ref()
                .map_or_else(String::new, |w| format!(" (completion {})", w.completion));
            log::info(format_args!(
                "{who}: {what}: {status}, {bytes} body bytes, {waited}, done after {:?}{}{named}",
                started.elapsed(),
                match end {
                    End::Whole => "",
                    End::ClosedAfterDone => " (the client closed after [DONE])",
                }
            ));
        }
        Err(Abort::Refused(why)) => refuse(why),
        Err(Abort::Cut(why)) => {
            log::warn(format_args!(
                "{who}: {what}: stream cut after {:?} ({waited}): {why}",
                started.elapsed()
            ));
        }
    }
    // Dropping `upstream` closes it: llama-server stops generating for a client that left.
}

/// The request head and its whole body; `Err(None)` when the client sent nothing at all.
fn read_request<R: Read>(
    reader: &mut BufReader<R>,
    client: &UnixStream,
    max: u64,
) -> Result<(RequestHead, Vec<u8>), Option<Refused>> {
    let head = match read_request_head(reader) {
        Ok(head) => head,
        Err(HttpError::Closed) => return Err(None),
        Err(e) => return Err(Some(Refused::Request(e))),
    };
    if !ALLOWED.contains(&(head.method.as_str(), head.target.as_str())) {
        return Err(Some(Refused::NotAllowed {
            method: head.method,
            target: head.target,
        }));
    }
    let continue_100 = match head.headers.get("expect") {
        None => false,
        Some(v) if v.eq_ignore_ascii_case("100-continue") => true,
        Some(v) => {
            let value = v.to_owned();
            return Err(Some(Refused::Expect { value }));
        }
    };
    let refuse = |e: HttpError| Some(Refused::Request(e));
    let body = Body::new(&mut *reader, head.framing, Some(max)).map_err(refuse)?;
    if continue_100 && head.framing != Framing::None {
        let _ = (&*client).write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
    }
    let body = read_to_end_limited(body, max).map_err(refuse)?;
    Ok((head, body))
}

/// Connects to llama-server and sends the request on: the client's end-to-end fields, our
/// Host, `Connection: close`, the body with its length.
fn connect(proxy: &Proxy, head: &RequestHead, body: &[u8]) -> Result<TcpStream, Refused> {
    let infer = &proxy.infer;
    let addr = infer.upstream.addr;
    let tcp = TcpStream::connect_timeout(&addr, infer.connect_timeout)
        .map_err(|error| Refused::Connect { addr, error })?;
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
    write_request(&mut &tcp, &head.method, &head.target, &fields, body).map_err(Refused::Send)?;
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

/// How a relayed answer ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The whole body went to the client.
    Whole,
    /// An event stream whose `data: [DONE]` event went to the client, which then closed
    /// (as loopd does) before the end of the HTTP body (the terminating zero-length chunk):
    /// the client has the whole answer, so this is a completed exchange, not a cut.
    ClosedAfterDone,
}

/// The last bytes relayed, enough to see whether an event stream's last event was
/// `data: [DONE]`.
#[derive(Debug, Default)]
struct Tail(Vec<u8>);

impl Tail {
    const KEEP: usize = 32;

    fn push(&mut self, bytes: &[u8]) {
        self.0
            .extend_from_slice(&bytes[bytes.len().saturating_sub(Self::KEEP)..]);
        let extra = self.0.len().saturating_sub(Self::KEEP);
        self.0.drain(..extra);
    }

    fn done(&self) -> bool {
        self.0.trim_ascii_end().ends_with(b"data: [DONE]")
    }
}

/// Whether a cut after `tail` is a client that closed after the stream's `[DONE]`.
fn closed_after_done(cut: &Cut, event_stream: bool, tail: &Tail) -> bool {
    let left = match cut {
        Cut::Client(_) => true,
        Cut::Upstream(e) => Failure::of(e) == Failure::ClientGone,
        Cut::Left(_) | Cut::WriteHead(_) | Cut::Framing(_) | Cut::Witness(_) => false,
    };
    left && event_stream && tail.done()
}

/// Reads llama-server's answer and streams it to the client; a chat answer (`witness`) is
/// witnessed on the way (`witness::Tee`). `Ok((status, body bytes, how it ended))`.
fn relay(
    proxy: &Proxy,
    up: &mut UpstreamReader<'_>,
    client: &UnixStream,
    request: &RequestHead,
    witness: Option<&Witnessing>,
) -> Result<(u16, u64, End), Abort> {
    let mut up = BufReader::with_capacity(RELAY_BUFFER, up);
    let mut interim = 0;
    let head = loop {
        let head = read_response_head(&mut up).map_err(before_head)?;
        match head.status {
            101 => return Err(Abort::Refused(Refused::Switching)),
            100..=199 if interim < MAX_INTERIM => interim += 1,
            100..=199 => return Err(Abort::Refused(Refused::Interim)),
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
    fields.push((
        proto::status::INFERPROXY_VERSION_HEADER,
        env!("CARGO_PKG_VERSION").into(),
    ));
    if let Some(w) = witness {
        fields.push((proto::attest::COMPLETION_HEADER, w.completion.to_string()));
    }
    let fields: Vec<(&str, &str)> = fields.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let mut out = client;
    write_response_head(&mut out, head.status, &head.reason, &fields)
        .map_err(|e| Abort::Cut(Cut::WriteHead(e)))?;

    let event_stream = head
        .headers
        .get("content-type")
        .is_some_and(|t| t.starts_with("text/event-stream"));
    let mut body = Body::new(up, framing, None).map_err(|e| Abort::Cut(Cut::Framing(e)))?;
    let mut buf = vec![0u8; RELAY_BUFFER];
    let mut total = 0u64;
    let mut tail = Tail::default();
    let mut chunked = chunk_out.then(|| ChunkedWriter::new(out));
    let cut = |cut: Cut, tail: &Tail, total: u64| {
        if closed_after_done(&cut, event_stream, tail) {
            Ok((head.status, total, End::ClosedAfterDone))
        } else {
            Err(Abort::Cut(cut))
        }
    };
    // Only a 200's body is an answer loopd reads as a stream.
    let mut watch = witness
        .filter(|_| head.status == 200)
        .map(|w| (w, Watch::new(proto::composed::asks_summary(&w.prompt))));
    let mut send = |bytes: &[u8], total: &mut u64, tail: &mut Tail| {
        if bytes.is_empty() {
            return Ok(());
        }
        match chunked.as_mut() {
            Some(w) => w.write_all(bytes),
            None => out.write_all(bytes),
        }?;
        *total += bytes.len() as u64;
        tail.push(bytes);
        Ok(())
    };
    loop {
        // Everything that has arrived, without waiting for more; then out it goes at once.
        let n = match body.read_ready(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => return cut(Cut::Upstream(e), &tail, total),
        };
        let next = match watch.as_mut() {
            Some((w, copy)) => copy.push(&buf[..n]).map(|p| (*w, copy, p)),
            None => None,
        };
        let Some((w, copy, pushed)) = next else {
            if let Err(e) = send(&buf[..n], &mut total, &mut tail) {
                return cut(Cut::Client(e), &tail, total);
            }
            continue;
        };
        let (before, after) = match pushed {
            Pushed::Forward(bytes) => (bytes, Ok(None)),
            Pushed::Done { before, held } => (before, Ok(Some(held))),
            Pushed::Broken { before, why } => (before, Err(why)),
        };
        if let Err(e) = send(&before, &mut total, &mut tail) {
            return cut(Cut::Client(e), &tail, total);
        }
        match after {
            Ok(None) => {}
            Ok(Some(held)) => {
                let report = match copy.here() {
                    Ok(tee) => tee.report(w),
                    Err(why) => return Err(Abort::Cut(Cut::Witness(WitnessError::Copy(why)))),
                };
                let timeout = proxy.infer.witness_timeout;
                if let Err(e) = witness::report(&proxy.witness_sock, timeout, report) {
                    return Err(Abort::Cut(Cut::Witness(e)));
                }
                watch = None;
                if let Err(e) = send(&held, &mut total, &mut tail) {
                    return cut(Cut::Client(e), &tail, total);
                }
            }
            Err(why) => return Err(Abort::Cut(Cut::Witness(WitnessError::Copy(why)))),
        }
    }
    if let Some((_, copy)) = watch {
        let rest = copy
            .rest()
            .map_err(|why| Abort::Cut(Cut::Witness(WitnessError::Copy(why))))?;
        if let Err(e) = send(&rest, &mut total, &mut tail) {
            return cut(Cut::Client(e), &tail, total);
        }
    }
    if let Some(w) = chunked
        && let Err(e) = w.finish()
    {
        return cut(Cut::Client(e), &tail, total);
    }
    Ok((head.status, total, End::Whole))
}
