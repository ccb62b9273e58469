//! Bounded line reading and the character classes of RFC 9110/9112.

use std::io::{BufRead, ErrorKind};

use super::HttpError;

/// Reads one CRLF-terminated line into `out`, without the CRLF. At most `budget` bytes
/// (CRLF included) are taken; more is `too_long`, found before it is buffered. `Ok(false)`
/// means the stream ended before the line's first byte; an end within it is `Truncated`.
pub(crate) fn read_crlf_line<R: BufRead + ?Sized>(
    r: &mut R,
    out: &mut Vec<u8>,
    budget: usize,
    too_long: impl Fn() -> HttpError,
) -> Result<bool, HttpError> {
    out.clear();
    if !read_to_lf(r, out, budget, too_long)? {
        return if out.is_empty() {
            Ok(false)
        } else {
            Err(HttpError::Truncated)
        };
    }
    out.pop(); // the LF
    if out.pop() != Some(b'\r') {
        return Err(HttpError::BareLf);
    }
    if out.contains(&b'\r') {
        return Err(HttpError::BareCr);
    }
    Ok(true)
}

/// Appends bytes up to and including the next LF, or up to the end of the stream; tells
/// whether an LF ended it. More than `budget` bytes is `too_long`, found before buffering.
pub(crate) fn read_to_lf<R: BufRead + ?Sized>(
    r: &mut R,
    out: &mut Vec<u8>,
    budget: usize,
    too_long: impl Fn() -> HttpError,
) -> Result<bool, HttpError> {
    let start = out.len();
    loop {
        let buf = match r.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(HttpError::from_io(e)),
        };
        if buf.is_empty() {
            return Ok(false);
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if out.len() - start + take > budget {
            return Err(too_long());
        }
        out.extend_from_slice(&buf[..take]);
        r.consume(take);
        if done {
            return Ok(true);
        }
    }
}

/// tchar: what a method, a header name or a transfer coding is made of.
pub(crate) fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

pub(crate) fn is_token(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&b| is_tchar(b))
}

/// A request target we take and send: origin-form, `/` then visible ASCII, no fragment.
pub(crate) fn is_origin_form(target: &[u8]) -> bool {
    target.first() == Some(&b'/') && target.iter().all(|&b| b.is_ascii_graphic() && b != b'#')
}

/// Visible ASCII, space and tab: a field value or reason phrase (obs-text refused).
pub(crate) fn is_field_char(b: u8) -> bool {
    b == b' ' || b == b'\t' || b.is_ascii_graphic()
}

pub(crate) fn is_ows(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

pub(crate) fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = s {
        if !is_ows(*first) {
            break;
        }
        s = rest;
    }
    while let [rest @ .., last] = s {
        if !is_ows(*last) {
            break;
        }
        s = rest;
    }
    s
}

/// Parses one `name: value` field line (as a head or a trailer holds).
pub(crate) fn parse_field(line: &[u8]) -> Result<(String, String), HttpError> {
    if line.first().is_some_and(|&b| is_ows(b)) {
        return Err(HttpError::ObsFold);
    }
    let colon = line
        .iter()
        .position(|&b| b == b':')
        .ok_or(HttpError::BadHeaderName)?;
    let name = &line[..colon];
    if name.last().is_some_and(|&b| is_ows(b)) {
        return Err(HttpError::SpaceBeforeColon);
    }
    if !is_token(name) {
        return Err(HttpError::BadHeaderName);
    }
    // A token is ASCII, so this cannot fail.
    let name = String::from_utf8_lossy(name).into_owned();
    let value = trim_ows(&line[colon + 1..]);
    if !value.iter().all(|&b| is_field_char(b)) {
        return Err(HttpError::BadHeaderValue { name });
    }
    Ok((name, String::from_utf8_lossy(value).into_owned()))
}
