//! A small HTTP/1.1 server side: request heads and bodies (`Content-Length` or chunked,
//! `Expect: 100-continue` answered), responses with `Content-Length`, and chunked streams.
//!
//! Connections are kept alive like llama-server's (`Keep-Alive: timeout=5, max=100`): up to
//! 100 requests, closed after 5 s idle, after `Connection: close`, after an HTTP/1.0 request
//! without `Connection: keep-alive`, and after every error status (the real server sends
//! `Connection: close` with its errors). Streams use `Transfer-Encoding: chunked`, one chunk
//! per SSE event, as the real server does.

use std::io::{self, BufRead, Read, Write};

/// Largest request head and body accepted.
const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 32 * 1024 * 1024;

/// Requests served on one connection before it is closed.
pub const MAX_REQUESTS: usize = 100;

/// One request.
#[derive(Debug, Clone)]
pub struct Request {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path without the query.
    pub path: String,
    /// The query string (after `?`), possibly empty.
    pub query: String,
    /// The body.
    pub body: Vec<u8>,
    /// Whether the client lets the connection stay open.
    pub keep_alive: bool,
}

/// Why no request could be read.
#[derive(Debug)]
pub enum ReadError {
    /// The peer closed (or went idle) between requests.
    Closed,
    /// A broken request: answer 400 and close.
    Bad(String),
    /// I/O failure mid-request.
    Io(io::Error),
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

fn read_line(r: &mut impl BufRead, budget: &mut usize) -> Result<String, ReadError> {
    let mut line = Vec::new();
    let limit = u64::try_from(*budget).unwrap_or(u64::MAX);
    r.by_ref().take(limit).read_until(b'\n', &mut line)?;
    if !line.ends_with(b"\n") {
        return Err(if line.is_empty() {
            ReadError::Closed
        } else if line.len() >= *budget {
            ReadError::Bad("request head too large".into())
        } else {
            ReadError::Bad("connection closed mid-request".into())
        });
    }
    *budget -= line.len();
    let text = String::from_utf8(line).map_err(|_| ReadError::Bad("head is not UTF-8".into()))?;
    Ok(text.trim_end_matches(['\r', '\n']).to_owned())
}

/// Reads one request; `interim` receives `100 Continue` when the client expects it.
pub fn read_request(r: &mut impl BufRead, interim: &mut impl Write) -> Result<Request, ReadError> {
    let mut budget = MAX_HEAD;
    let mut line = read_line(r, &mut budget)?;
    while line.is_empty() {
        // Tolerate stray CRLFs between requests (RFC 9112 section 2.2).
        line = read_line(r, &mut budget)?;
    }
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(ReadError::Bad(format!("bad request line {line:?}")));
    };
    let http10 = match version {
        "HTTP/1.1" => false,
        "HTTP/1.0" => true,
        _ => return Err(ReadError::Bad(format!("unsupported version {version:?}"))),
    };
    let mut length = None;
    let mut chunked = false;
    let mut expect_continue = false;
    let mut connection = String::new();
    loop {
        let header = read_line(r, &mut budget).map_err(|e| match e {
            ReadError::Closed => ReadError::Bad("connection closed mid-head".into()),
            other => other,
        })?;
        if header.is_empty() {
            break;
        }
        let Some((name, value)) = header.split_once(':') else {
            return Err(ReadError::Bad(format!("bad header line {header:?}")));
        };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => {
                let n: usize = value
                    .parse()
                    .map_err(|_| ReadError::Bad("bad Content-Length".into()))?;
                length = Some(n);
            }
            "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
            "expect" => expect_continue = value.eq_ignore_ascii_case("100-continue"),
            "connection" => connection = value.to_ascii_lowercase(),
            _ => {}
        }
    }
    if expect_continue && (chunked || length.unwrap_or(0) > 0) {
        interim.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        interim.flush()?;
    }
    let body = if chunked {
        read_chunked(r)?
    } else {
        let n = length.unwrap_or(0);
        if n > MAX_BODY {
            return Err(ReadError::Bad("request body too large".into()));
        }
        let mut body = vec![0; n];
        r.read_exact(&mut body)?;
        body
    };
    let keep_alive = if http10 {
        connection.contains("keep-alive")
    } else {
        !connection.contains("close")
    };
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    Ok(Request {
        method: method.to_owned(),
        path: path.to_owned(),
        query: query.to_owned(),
        body,
        keep_alive,
    })
}

fn read_chunked(r: &mut impl BufRead) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    loop {
        let mut budget = 1024;
        let size_line = read_line(r, &mut budget)?;
        let size_hex = size_line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_hex, 16)
            .map_err(|_| ReadError::Bad("bad chunk size".into()))?;
        if size == 0 {
            // Trailers, then the empty line.
            let mut budget = MAX_HEAD;
            while !read_line(r, &mut budget)?.is_empty() {}
            return Ok(body);
        }
        if body.len() + size > MAX_BODY {
            return Err(ReadError::Bad("request body too large".into()));
        }
        let start = body.len();
        body.resize(start + size, 0);
        r.read_exact(&mut body[start..])?;
        let mut crlf = [0; 2];
        r.read_exact(&mut crlf)?;
        if crlf != *b"\r\n" {
            return Err(ReadError::Bad("chunk not followed by CRLF".into()));
        }
    }
}

/// The reason phrase of the statuses the fake sends.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

fn common_headers(status: u16) -> String {
    format!(
        "HTTP/1.1 {status} {}\r\nServer: llama.cpp\r\nAccess-Control-Allow-Origin: \r\n",
        reason(status)
    )
}

fn connection_header(keep_alive: bool) -> &'static str {
    if keep_alive {
        "Keep-Alive: timeout=5, max=100\r\n"
    } else {
        "Connection: close\r\n"
    }
}

/// Writes a whole response with `Content-Length`.
pub fn write_response(
    w: &mut impl Write,
    status: u16,
    content_type: &str,
    body: &[u8],
    keep_alive: bool,
) -> io::Result<()> {
    let head = format!(
        "{}Content-Type: {content_type}\r\nContent-Length: {}\r\n{}\r\n",
        common_headers(status),
        body.len(),
        connection_header(keep_alive)
    );
    w.write_all(head.as_bytes())?;
    w.write_all(body)?;
    w.flush()
}

/// Writes the head of a `text/event-stream` response (chunked).
pub fn write_stream_head(w: &mut impl Write, keep_alive: bool) -> io::Result<()> {
    let head = format!(
        "{}X-Accel-Buffering: no\r\nContent-Type: text/event-stream\r\n\
         Transfer-Encoding: chunked\r\n{}\r\n",
        common_headers(200),
        connection_header(keep_alive)
    );
    w.write_all(head.as_bytes())?;
    w.flush()
}

/// Writes one chunk (never empty: an empty chunk would end the body).
pub fn write_chunk(w: &mut impl Write, data: &[u8]) -> io::Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    w.write_all(format!("{:x}\r\n", data.len()).as_bytes())?;
    w.write_all(data)?;
    w.write_all(b"\r\n")?;
    w.flush()
}

/// Ends a chunked body.
pub fn write_last_chunk(w: &mut impl Write) -> io::Result<()> {
    w.write_all(b"0\r\n\r\n")?;
    w.flush()
}
