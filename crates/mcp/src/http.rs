//! MCP's Streamable HTTP transport over plain `http://` (no TLS here): every message is
//! one POST on a connection of its own (`Connection: close`), accepting
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
use std::io::{self, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use strict_http::{Body, HttpError, SseReader};

use crate::PROTOCOL_VERSION;
use crate::error::McpError;
use crate::transport::Transport;

type EventStream = SseReader<Body<BufReader<Timed>>>;

/// A connection whose every read and write waits only until the session's deadline as it
/// stands: a socket timeout counts from each read, so a server trickling bytes (an event
/// stream's keep-alive comments every 15 s, say) would hold a plain one forever.
#[derive(Debug)]
struct Timed {
    stream: TcpStream,
    deadline: Arc<Mutex<Instant>>,
}

impl Timed {
    fn left(&self) -> io::Result<std::time::Duration> {
        let deadline = *self
            .deadline
            .lock()
            .map_err(|_| io::Error::other("the deadline's lock is poisoned"))?;
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the session's deadline passed",
            ));
        }
        Ok(left)
    }
}

impl Read for Timed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.left()?;
        self.stream.set_read_timeout(Some(left))?;
        self.stream.read(buf)
    }
}

impl Write for Timed {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let left = self.left()?;
        self.stream.set_write_timeout(Some(left))?;
        self.stream.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }
}

/// A Streamable HTTP endpoint, `http://host[:port]/path`.
#[derive(Debug)]
pub struct StreamableHttp {
    addresses: Vec<SocketAddr>,
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
    /// The endpoint at `url`, resolved now. Only `http://` URLs without user information.
    pub fn new(url: &str, max_message: usize) -> Result<Self, McpError> {
        let (authority, _) = split(url)?;
        let with_port = if authority.ends_with(']') || !authority.contains(':') {
            format!("{authority}:80")
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
        let (authority, path) = split(url)?;
        if addresses.is_empty() {
            return Err(bad_url(url, "has no address to connect to"));
        }
        Ok(Self {
            addresses,
            host: authority.to_owned(),
            target: path.to_owned(),
            max_message,
            session: None,
            queue: VecDeque::new(),
            stream: None,
            deadline: Arc::new(Mutex::new(Instant::now())),
        })
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
        let stream = Timed {
            stream: self.connect(deadline)?,
            deadline: self.deadline.clone(),
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

/// An `http://` URL's authority and its path (`/` when it has none).
fn split(url: &str) -> Result<(&str, &str), McpError> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| bad_url(url, "is not http:// (this transport has no TLS)"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.is_empty() || authority.contains('@') {
        return Err(bad_url(url, "has no host, or has user information"));
    }
    Ok((authority, path))
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
