//! Message heads: the request line or status line, the header fields, and how the body is
//! framed, decided once here so that every reader frames a message the same way.

use std::io::BufRead;

use super::line::{self, is_field_char, is_token};
use super::{Headers, HttpError, MAX_HEAD, MAX_HEADERS, Version};

/// How a message's body is delimited (RFC 9112 section 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body.
    None,
    Length(u64),
    Chunked,
    /// Until the connection closes (responses only).
    UntilClose,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead {
    pub method: String,
    /// Origin-form: `/path` with an optional `?query`.
    pub target: String,
    pub version: Version,
    pub headers: Headers,
    /// Checked when the head was read; a request without length fields has no body.
    pub framing: Framing,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    pub version: Version,
    pub status: u16,
    pub reason: String,
    pub headers: Headers,
    /// Checked when the head was read, as if the request was not HEAD; see
    /// [`ResponseHead::body_framing`].
    pub framing: Framing,
}

impl ResponseHead {
    /// The framing of this response to a request with `method`: nothing after HEAD, a 1xx,
    /// 204 or 304.
    pub fn body_framing(&self, method: &str) -> Framing {
        if method == "HEAD" || self.status < 200 || self.status == 204 || self.status == 304 {
            Framing::None
        } else {
            self.framing
        }
    }
}

/// Reads a request head. A connection closed before its first byte is `Closed`.
pub fn read_request_head<R: BufRead + ?Sized>(r: &mut R) -> Result<RequestHead, HttpError> {
    let (start, headers) = read_head(r)?;
    let parts: Vec<&[u8]> = start.split(|&b| b == b' ').collect();
    let [method, target, version] = parts[..] else {
        return Err(HttpError::BadRequestLine);
    };
    if !is_token(method) {
        return Err(HttpError::BadMethod);
    }
    if !line::is_origin_form(target) {
        return Err(HttpError::BadTarget);
    }
    let version = parse_version(version).ok_or(HttpError::BadRequestLine)??;
    let framing = message_framing(&headers, version)?.unwrap_or(Framing::None);
    Ok(RequestHead {
        method: String::from_utf8_lossy(method).into_owned(),
        target: String::from_utf8_lossy(target).into_owned(),
        version,
        headers,
        framing,
    })
}

/// Reads a response head (interim 1xx responses included: the caller skips them).
pub fn read_response_head<R: BufRead + ?Sized>(r: &mut R) -> Result<ResponseHead, HttpError> {
    let (start, headers) = read_head(r)?;
    // HTTP-version SP 3DIGIT [ SP reason-phrase ]; a missing reason is tolerated.
    let (version, rest) = split_at_space(&start).ok_or(HttpError::BadStatusLine)?;
    let version = parse_version(version).ok_or(HttpError::BadStatusLine)??;
    let (code, reason) = split_at_space(rest).unwrap_or((rest, b""));
    let status = match code {
        [a @ b'1'..=b'5', b @ b'0'..=b'9', c @ b'0'..=b'9'] => {
            u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0')
        }
        _ => return Err(HttpError::BadStatusLine),
    };
    if !reason.iter().all(|&b| is_field_char(b)) {
        return Err(HttpError::BadStatusLine);
    }
    let framing = message_framing(&headers, version)?.unwrap_or(Framing::UntilClose);
    Ok(ResponseHead {
        version,
        status,
        reason: String::from_utf8_lossy(reason).into_owned(),
        headers,
        framing,
    })
}

fn split_at_space(s: &[u8]) -> Option<(&[u8], &[u8])> {
    let i = s.iter().position(|&b| b == b' ')?;
    Some((&s[..i], &s[i + 1..]))
}

/// `None`: not an HTTP version at all; `Some(Err)`: a version this code does not speak.
fn parse_version(v: &[u8]) -> Option<Result<Version, HttpError>> {
    match v {
        b"HTTP/1.1" => Some(Ok(Version::Http11)),
        b"HTTP/1.0" => Some(Ok(Version::Http10)),
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor]
            if major.is_ascii_digit() && minor.is_ascii_digit() =>
        {
            Some(Err(HttpError::UnsupportedVersion))
        }
        _ => None,
    }
}

/// The start line and the fields of one head, within [`MAX_HEAD`] and [`MAX_HEADERS`].
fn read_head<R: BufRead + ?Sized>(r: &mut R) -> Result<(Vec<u8>, Headers), HttpError> {
    let too_long = || HttpError::HeadTooLarge { limit: MAX_HEAD };
    let mut budget = MAX_HEAD;
    let mut start = Vec::new();
    if !line::read_crlf_line(r, &mut start, budget, too_long)? {
        return Err(HttpError::Closed);
    }
    budget -= start.len() + 2;
    if start.is_empty() {
        // RFC 9112 lets a server skip blank lines before a request; strictness does not.
        return Err(HttpError::BadRequestLine);
    }
    let headers = read_fields(r, budget, too_long)?;
    Ok((start, headers))
}

/// Field lines up to the empty line, within `budget` bytes and [`MAX_HEADERS`] fields.
/// Also reads a chunked body's trailer section.
pub(crate) fn read_fields<R: BufRead + ?Sized>(
    r: &mut R,
    mut budget: usize,
    too_long: impl Fn() -> HttpError + Copy,
) -> Result<Headers, HttpError> {
    let mut headers = Headers::new();
    let mut text = Vec::new();
    loop {
        if !line::read_crlf_line(r, &mut text, budget, too_long)? {
            return Err(HttpError::Truncated);
        }
        budget -= text.len() + 2;
        if text.is_empty() {
            return Ok(headers);
        }
        if headers.len() == MAX_HEADERS {
            return Err(HttpError::TooManyHeaders { limit: MAX_HEADERS });
        }
        let (name, value) = line::parse_field(&text)?;
        headers.push(name, value);
    }
}

/// The framing the length fields announce, or `None` when there are none. Refuses every
/// combination two parsers could read differently.
fn message_framing(headers: &Headers, version: Version) -> Result<Option<Framing>, HttpError> {
    let lengths: Vec<&str> = headers.get_all("content-length").collect();
    let codings: Vec<&str> = headers.get_all("transfer-encoding").collect();
    if lengths.len() > 1 {
        return Err(HttpError::DuplicateContentLength);
    }
    if !lengths.is_empty() && !codings.is_empty() {
        return Err(HttpError::LengthWithTransferEncoding);
    }
    if let Some(first) = codings.first() {
        let value = codings.join(", ");
        // HTTP/1.0 has no transfer codings: such a message is faulty framing (RFC 9112 6.1).
        if codings.len() > 1 || !first.eq_ignore_ascii_case("chunked") || version == Version::Http10
        {
            return Err(HttpError::UnsupportedTransferEncoding { value });
        }
        return Ok(Some(Framing::Chunked));
    }
    match lengths.first() {
        Some(text) => Ok(Some(Framing::Length(parse_length(text)?))),
        None => Ok(None),
    }
}

/// 1*DIGIT, nothing else (no sign, no list, no spaces), and it must fit in a u64.
fn parse_length(text: &str) -> Result<u64, HttpError> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(HttpError::BadContentLength);
    }
    text.parse().map_err(|_| HttpError::BadContentLength)
}

/// Checks a field before it is sent: what we would refuse to receive, we never send.
pub(crate) fn check_field(name: &str, value: &str) -> Result<(), HttpError> {
    let value_ok = value.bytes().all(is_field_char)
        && !value.starts_with([' ', '\t'])
        && !value.ends_with([' ', '\t']);
    if is_token(name.as_bytes()) && value_ok {
        Ok(())
    } else {
        Err(HttpError::InvalidHeaderToSend {
            name: name.escape_debug().to_string(),
        })
    }
}
