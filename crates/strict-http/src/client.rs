//! Writing heads, and the blocking one-request client loopd uses on infer.sock. Timeouts
//! are the stream's own (`set_read_timeout` before calling).

use std::io::{BufReader, Read, Write};

use super::head;
use super::line::{self, is_token};
use super::{Body, Headers, HttpError, read_response_head, read_to_end_limited};

/// How many interim (1xx) responses a client skips before giving up on a final one.
const MAX_INTERIM: usize = 8;

/// A response whose body has not been read yet: `body` streams it as it arrives.
#[derive(Debug)]
pub struct Response<S> {
    pub status: u16,
    pub reason: String,
    pub headers: Headers,
    pub body: Body<BufReader<S>>,
}

impl<S: Read> Response<S> {
    /// Reads the whole body, refusing more than `limit` bytes.
    pub fn read_body(self, limit: u64) -> Result<Vec<u8>, HttpError> {
        read_to_end_limited(self.body, limit)
    }
}

/// Sends one request on `stream` and reads the response head. `headers` must not frame
/// the body (Content-Length and Transfer-Encoding are written here); `Host: localhost` is
/// added when absent. Interim 1xx responses are skipped.
pub fn request<S: Read + Write>(
    mut stream: S,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Response<S>, HttpError> {
    write_request(&mut stream, method, path, headers, body)?;
    let mut reader = BufReader::new(stream);
    for _ in 0..MAX_INTERIM {
        let head = read_response_head(&mut reader)?;
        match head.status {
            101 => return Err(HttpError::UnexpectedUpgrade),
            100..=199 => continue,
            _ => {}
        }
        let framing = head.body_framing(method);
        return Ok(Response {
            status: head.status,
            reason: head.reason,
            headers: head.headers,
            body: Body::new(reader, framing, None)?,
        });
    }
    Err(HttpError::BadStatusLine)
}

/// Writes a request with a Content-Length body in one `write_all`, then flushes. The
/// length is sent whenever there is a body or the method usually has one.
pub fn write_request<W: Write + ?Sized>(
    w: &mut W,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<(), HttpError> {
    if !is_token(method.as_bytes()) {
        return Err(HttpError::BadMethod);
    }
    if !line::is_origin_form(target.as_bytes()) {
        return Err(HttpError::BadTarget);
    }
    let mut out = format!("{method} {target} HTTP/1.1\r\n");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        out.push_str("Host: localhost\r\n");
    }
    for (name, value) in headers {
        if is_framing(name) {
            return Err(HttpError::FramingHeaderToSend {
                name: (*name).to_owned(),
            });
        }
        push_field(&mut out, name, value)?;
    }
    if !body.is_empty() || matches!(method, "POST" | "PUT" | "PATCH") {
        out.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    w.write_all(&bytes)?;
    w.flush()?;
    Ok(())
}

/// Writes `HTTP/1.1 status reason` and `headers` (framing included: the caller knows how it
/// will send the body) in one `write_all`, then flushes.
pub fn write_response_head<W: Write + ?Sized>(
    w: &mut W,
    status: u16,
    reason: &str,
    headers: &[(&str, &str)],
) -> Result<(), HttpError> {
    if !(100..=599).contains(&status) || !reason.bytes().all(line::is_field_char) {
        return Err(HttpError::BadStatusLine);
    }
    let mut out = format!("HTTP/1.1 {status} {reason}\r\n");
    for (name, value) in headers {
        push_field(&mut out, name, value)?;
    }
    out.push_str("\r\n");
    w.write_all(out.as_bytes())?;
    w.flush()?;
    Ok(())
}

fn is_framing(name: &str) -> bool {
    name.eq_ignore_ascii_case("content-length") || name.eq_ignore_ascii_case("transfer-encoding")
}

fn push_field(out: &mut String, name: &str, value: &str) -> Result<(), HttpError> {
    head::check_field(name, value)?;
    out.push_str(name);
    out.push_str(": ");
    out.push_str(value);
    out.push_str("\r\n");
    Ok(())
}
