//! MCP's Streamable HTTP transport over `http://`, or `https://` through rustls with the
//! webpki roots only (the certificate checked against the URL's host; no other trust can
//! be added): every message is one POST on a connection of its own (`Connection: close`),
//! accepting
//! `application/json` and `text/event-stream`. A JSON answer is one message; an event
//! stream is read lazily, one event per receive, so the client can answer a request the
//! server makes in the middle of it (the answer is a POST of its own, which gets
//! `202 Accepted`). A new stream takes the place of an older one still open, whose answer
//! the client has already read. The `Mcp-Session-Id` the server gives is sent back on every later POST,
//! with `MCP-Protocol-Version`. The GET stream for unsolicited server messages is never
//! opened: nothing the server says unasked is wanted.
//!
//! Every read waits only until the deadline (the socket's read timeout), every message is
//! at most the limit, and every HTTP message goes through `strict-http`.

use std::collections::VecDeque;
use std::io::BufReader;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use strict_http::{Body, HttpError, SseReader};

use crate::PROTOCOL_VERSION;
use crate::error::McpError;
use crate::transport::Transport;

mod timed;
mod tls;

use timed::Timed;
use tls::Conn;

type EventStream = SseReader<Body<BufReader<Conn>>>;

/// A Streamable HTTP endpoint, `http://host[:port]/path` or `https://…`.
#[derive(Debug)]
pub struct StreamableHttp {
    addresses: Vec<SocketAddr>,
    /// For `https://`: the TLS client and the name the certificate must carry.
    tls: Option<tls::Tls>,
    /// Headers of the caller's own on every POST (a server's API key).
    extra: Vec<(String, String)>,
    host: String,
    target: String,
    max_message: usize,
    session: Option<String>,
    queue: VecDeque<Vec<u8>>,
    /// The event stream an answer is still coming on.
    stream: Option<EventStream>,
    /// The deadline of the call under way, which every read and write of every connection
    /// waits on.
    deadline: Arc<Mutex<Instant>>,
}

impl StreamableHttp {
    /// The endpoint at `url`, resolved now. Only `http://` and `https://` URLs without user
    /// information.
    pub fn new(url: &str, max_message: usize) -> Result<Self, McpError> {
        let (authority, _, secure) = split(url)?;
        let with_port = if authority.ends_with(']') || !authority.contains(':') {
            format!("{authority}:{}", if secure { 443 } else { 80 })
        } else {
            authority.to_owned()
        };
        let addresses: Vec<SocketAddr> = with_port
            .to_socket_addrs()
            .map_err(|e| bad_url(url, &format!("does not resolve: {e}")))?
            .collect();
        Self::at(url, addresses, max_message)
    }

    /// The endpoint at `url`, connected to at `addresses` only: no name is resolved here
    /// (a tool's unit has no resolver; brokerd resolved the host and its unit admits
    /// exactly these addresses).
    pub fn at(url: &str, addresses: Vec<SocketAddr>, max_message: usize) -> Result<Self, McpError> {
        Self::with_trust(url, addresses, max_message, tls::webpki)
    }

    /// [`Self::at`] with the TLS client `trust` makes (the webpki roots in production; a
    /// test's own root in this crate's tests only).
    fn with_trust(
        url: &str,
        addresses: Vec<SocketAddr>,
        max_message: usize,
        trust: fn() -> Result<Arc<rustls::ClientConfig>, McpError>,
    ) -> Result<Self, McpError> {
        let (authority, path, secure) = split(url)?;
        if addresses.is_empty() {
            return Err(bad_url(url, "has no address to connect to"));
        }
        let tls = if secure {
            Some(tls::Tls::new(trust()?, authority).map_err(|why| bad_url(url, &why))?)
        } else {
            None
        };
        Ok(Self {
            addresses,
            tls,
            extra: Vec::new(),
            host: authority.to_owned(),
            target: path.to_owned(),
            max_message,
            session: None,
            queue: VecDeque::new(),
            stream: None,
            deadline: Arc::new(Mutex::new(Instant::now())),
        })
    }

    /// Sends `name: value` on every POST besides the transport's own headers (the caller
    /// keeps it from naming one of those).
    #[must_use]
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.extra.push((name.to_owned(), value.to_owned()));
        self
    }

    fn set_deadline(&self, deadline: Instant) {
        if let Ok(mut d) = self.deadline.lock() {
            *d = deadline;
        }
    }

    fn connect(&self, deadline: Instant) -> Result<TcpStream, McpError> {
        let mut last = None;
        for address in &self.addresses {
            let wait = remaining(deadline, "a connection")?;
            match TcpStream::connect_timeout(address, wait) {
                Ok(stream) => return Ok(stream),
                Err(e) => last = Some(e),
            }
        }
        Err(McpError::Io {
            detail: format!(
                "cannot connect to {}: {}",
                self.host,
                last.map(|e| e.to_string()).unwrap_or_default()
            ),
        })
    }
}

impl StreamableHttp {
    /// One POST of `message`; its answer queued (JSON) or its stream kept (events), unless
    /// no answer is `wanted`.
    fn post(&mut self, message: &str, deadline: Instant, wanted: bool) -> Result<(), McpError> {
        self.set_deadline(deadline);
        let timed = Timed {
            stream: self.connect(deadline)?,
            deadline: self.deadline.clone(),
        };
        let stream = match &self.tls {
            Some(tls) => tls.connect(timed)?,
            None => Conn::Plain(timed),
        };
        let mut headers = vec![
            ("Host", self.host.as_str()),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", PROTOCOL_VERSION),
            ("Connection", "close"),
        ];
        if let Some(session) = &self.session {
            headers.push(("Mcp-Session-Id", session));
        }
        for (name, value) in &self.extra {
            headers.push((name, value));
        }
        let response =
            strict_http::request(stream, "POST", &self.target, &headers, message.as_bytes())
                .map_err(|e| http_error(e, "an HTTP answer"))?;
        if let Some(session) = response.headers.get("mcp-session-id") {
            self.session = Some(session.to_owned());
        }
        let kind = response.headers.get("content-type").map(|t| {
            t.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        });
        match (response.status, kind.as_deref()) {
            (202, _) => Ok(()),
            (200..=299, _) if !wanted => Ok(()),
            (200, Some("application/json")) => {
                let body = response
                    .read_body(self.max_message as u64)
                    .map_err(|e| match e {
                        HttpError::BodyTooLarge { .. } => McpError::MessageTooLarge {
                            limit: self.max_message,
                        },
                        other => http_error(other, "an HTTP answer"),
                    })?;
                self.queue.push_back(body);
                Ok(())
            }
            (200, Some("text/event-stream")) => {
                // The client asks one thing at a time: a stream still open belongs to an
                // earlier request whose answer was taken (a server should have closed it).
                let max = self.max_message;
                self.stream = Some(SseReader::with_limits(response.body, max, max));
                Ok(())
            }
            (status, kind) => Err(McpError::Io {
                detail: format!("HTTP {status} (content type {})", kind.unwrap_or("none")),
            }),
        }
    }
}

fn bad_url(url: &str, why: &str) -> McpError {
    McpError::Io {
        detail: format!("the URL {url:?} {why}"),
    }
}

/// An `http://` or `https://` URL's authority, its path (`/` when it has none), and
/// whether it is `https://`.
fn split(url: &str) -> Result<(&str, &str, bool), McpError> {
    let (rest, secure) = match (url.strip_prefix("http://"), url.strip_prefix("https://")) {
        (Some(rest), _) => (rest, false),
        (_, Some(rest)) => (rest, true),
        _ => return Err(bad_url(url, "is neither http:// nor https://")),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.is_empty() || authority.contains('@') {
        return Err(bad_url(url, "has no host, or has user information"));
    }
    Ok((authority, path, secure))
}

fn remaining(deadline: Instant, waiting_for: &str) -> Result<std::time::Duration, McpError> {
    let wait = deadline.saturating_duration_since(Instant::now());
    if wait.is_zero() {
        return Err(McpError::Timeout {
            waiting_for: waiting_for.to_owned(),
            after: wait,
        });
    }
    Ok(wait)
}

fn http_error(e: HttpError, waiting_for: &str) -> McpError {
    if e.is_timeout() {
        return McpError::Timeout {
            waiting_for: waiting_for.to_owned(),
            after: std::time::Duration::ZERO,
        };
    }
    McpError::Io {
        detail: format!("HTTP: {e}"),
    }
}

impl Transport for StreamableHttp {
    fn send(&mut self, message: &str, deadline: Instant) -> Result<(), McpError> {
        self.post(message, deadline, true)
    }

    /// A server should answer a notification with `202 Accepted` and no body; whatever else
    /// a success carries is not read.
    fn send_notice(&mut self, message: &str, deadline: Instant) -> Result<(), McpError> {
        self.post(message, deadline, false)
    }

    fn receive(&mut self, deadline: Instant, waiting_for: &str) -> Result<Vec<u8>, McpError> {
        loop {
            if let Some(message) = self.queue.pop_front() {
                return Ok(message);
            }
            self.set_deadline(deadline);
            let Some(events) = self.stream.as_mut() else {
                return Err(McpError::Closed {
                    waiting_for: waiting_for.to_owned(),
                });
            };
            match events.next_event() {
                // A priming event (an id and empty data) carries no message.
                Ok(Some(event)) if event.data.trim().is_empty() => {}
                Ok(Some(event)) => return Ok(event.data.into_bytes()),
                Ok(None) => self.stream = None,
                Err(HttpError::SseEventTooLarge { .. } | HttpError::SseLineTooLong { .. }) => {
                    self.stream = None;
                    return Err(McpError::MessageTooLarge {
                        limit: self.max_message,
                    });
                }
                Err(e) => {
                    self.stream = None;
                    return Err(http_error(e, waiting_for));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
