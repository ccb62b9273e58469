//! A small, strict, bounded HTTP/1.1 over any `Read`/`Write` (a Unix socket or TCP), std
//! only: inferproxy parses requests and upstream responses with it, loopd calls infer.sock
//! with its client and reads the SSE stream with its event reader (brief decision 13).
//!
//! Strict: lines end in CRLF (a bare CR or LF is refused), no obs-fold, header names are
//! tokens, values visible ASCII with spaces and tabs (no obs-text), one Content-Length at
//! most, never Content-Length together with Transfer-Encoding, and no transfer coding but
//! `chunked`: whatever two parsers could frame differently (request smuggling) is refused.
//! Bounded: a head is at most [`MAX_HEAD`] bytes and [`MAX_HEADERS`] fields, a chunk-size
//! line at most [`MAX_CHUNK_LINE`] bytes, and no length the peer announces is ever
//! allocated: bodies are streamed, or read whole only up to the caller's limit.

mod body;
mod client;
mod head;
mod line;
mod sse;

use std::io;

pub use body::{
    Body, Buffered, Chunked, ChunkedWriter, ContentLength, UntilClose, read_to_end_limited,
};
pub use client::{Response, request, write_request, write_response_head};
pub use head::{Framing, RequestHead, ResponseHead, read_request_head, read_response_head};
pub use sse::{Event, EventParser, MAX_SSE_EVENT, MAX_SSE_LINE, SseReader, sse_line};

/// The most bytes a message head (start line, fields, final CRLF) may take.
pub const MAX_HEAD: usize = 16 * 1024;
/// The most header fields (or trailer fields) a message may have.
pub const MAX_HEADERS: usize = 100;
/// The most bytes a chunk-size line (size, extensions, CRLF) may take.
pub const MAX_CHUNK_LINE: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Http10,
    Http11,
}

impl Version {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http10 => "HTTP/1.0",
            Self::Http11 => "HTTP/1.1",
        }
    }
}

/// Header fields in the order received, names as spelled; look-ups ignore case.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headers(Vec<(String, String)>);

impl Headers {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a field. Nothing is checked here; writers check what they send.
    pub fn push(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.0.push((name.into(), value.into()));
    }

    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn get_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Why a message could not be read or written. Peer bytes are never quoted except a
/// refused transfer coding (with `{:?}`), so the text is safe to log. The I/O error's text
/// is printed, and `source()` does not return it (docs/decisions.md F16).
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("i/o: {0}")]
    Io(io::Error),
    /// The peer closed the connection before the first byte of a message head.
    #[error("connection closed before a message")]
    Closed,
    /// The peer closed the connection in the middle of a message.
    #[error("connection closed in the middle of a message")]
    Truncated,
    #[error("message head over {limit} bytes")]
    HeadTooLarge { limit: usize },
    #[error("more than {limit} header fields")]
    TooManyHeaders { limit: usize },
    /// A CR not followed by LF.
    #[error("a CR not followed by LF")]
    BareCr,
    /// A line ended by LF alone.
    #[error("a line ended by LF without CR")]
    BareLf,
    /// A field line starting with a space or tab (obsolete line folding).
    #[error("a folded header line (obs-fold)")]
    ObsFold,
    #[error("malformed request line")]
    BadRequestLine,
    #[error("the method is not a token")]
    BadMethod,
    /// Only origin-form targets (`/path?query`) of visible ASCII are accepted.
    #[error("the request target is not an origin-form path")]
    BadTarget,
    #[error("not HTTP/1.1 or HTTP/1.0")]
    UnsupportedVersion,
    #[error("malformed status line")]
    BadStatusLine,
    #[error("a header name that is not a token")]
    BadHeaderName,
    /// Whitespace between a field name and its colon.
    #[error("whitespace between a header name and colon")]
    SpaceBeforeColon,
    #[error("invalid characters in header {name}")]
    BadHeaderValue { name: String },
    #[error("Content-Length is not a decimal number")]
    BadContentLength,
    #[error("more than one Content-Length")]
    DuplicateContentLength,
    /// Content-Length and Transfer-Encoding together: two parsers could frame it apart.
    #[error("both Content-Length and Transfer-Encoding")]
    LengthWithTransferEncoding,
    #[error("transfer coding {value:?} (only chunked is accepted)")]
    UnsupportedTransferEncoding { value: String },
    #[error("malformed chunk-size line")]
    BadChunkSize,
    #[error("chunk-size line over {limit} bytes")]
    ChunkLineTooLong { limit: usize },
    /// Chunk data not followed by CRLF.
    #[error("chunk data not followed by CRLF")]
    BadChunkEnd,
    #[error("body over {limit} bytes")]
    BodyTooLarge { limit: u64 },
    /// A 101 Switching Protocols answer: nothing here speaks another protocol.
    #[error("unexpected 101 Switching Protocols")]
    UnexpectedUpgrade,
    #[error("event-stream line over {limit} bytes")]
    SseLineTooLong { limit: usize },
    #[error("event over {limit} bytes")]
    SseEventTooLarge { limit: usize },
    #[error("event-stream line is not UTF-8")]
    SseNotUtf8,
    /// A field we were asked to send that we would refuse to receive.
    #[error("refusing to send invalid header {name:?}")]
    InvalidHeaderToSend { name: String },
    /// Content-Length or Transfer-Encoding given to a writer that frames the body itself.
    #[error("refusing to send {name}: the writer frames the body")]
    FramingHeaderToSend { name: String },
}

impl HttpError {
    /// Takes back an error that went through `io::Error` (a body reader's `Read`).
    pub fn from_io(e: io::Error) -> Self {
        if !e.get_ref().is_some_and(|inner| inner.is::<Self>()) {
            return Self::Io(e);
        }
        let kind = e.kind();
        match e.into_inner().map(|inner| inner.downcast::<Self>()) {
            Some(Ok(http)) => *http,
            Some(Err(other)) => Self::Io(io::Error::new(kind, other)),
            None => Self::Io(io::Error::from(kind)),
        }
    }

    /// Whether this is only a read or write timeout on the underlying stream: `WouldBlock`
    /// (what a socket with a timeout says on Unix) or `TimedOut`.
    pub fn is_timeout(&self) -> bool {
        matches!(self, Self::Io(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut))
    }

    /// The status a server answers a request that failed this way with.
    pub fn status(&self) -> u16 {
        match self {
            Self::Io(_) if self.is_timeout() => 408,
            Self::HeadTooLarge { .. } | Self::TooManyHeaders { .. } => 431,
            Self::BodyTooLarge { .. } => 413,
            Self::UnsupportedTransferEncoding { .. } => 501,
            Self::UnsupportedVersion => 505,
            _ => 400,
        }
    }
}

impl From<io::Error> for HttpError {
    fn from(e: io::Error) -> Self {
        Self::from_io(e)
    }
}

impl From<HttpError> for io::Error {
    fn from(e: HttpError) -> Self {
        match e {
            HttpError::Io(e) => e,
            HttpError::Truncated | HttpError::Closed => {
                io::Error::new(io::ErrorKind::UnexpectedEof, e)
            }
            other => io::Error::new(io::ErrorKind::InvalidData, other),
        }
    }
}

/// The standard reason phrase for the statuses boxmaker sends itself.
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Content Too Large",
        417 => "Expectation Failed",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}
