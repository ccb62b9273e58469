//! Body readers (Content-Length, chunked, until close) and the chunked writer. A reader
//! hands out bytes as they arrive, never waits to fill the caller's buffer, and never
//! allocates by a length the peer announced. Errors come out of `Read` as `io::Error`s
//! wrapping an [`HttpError`]; [`HttpError::from_io`] takes them back.

use std::io::{self, BufRead, BufReader, Read, Write};

use super::head::{Framing, read_fields};
use super::line::{self, is_field_char, is_ows};
use super::{HttpError, MAX_CHUNK_LINE, MAX_HEAD};

/// A body of exactly `len` bytes. Ending early is `Truncated`.
#[derive(Debug)]
pub struct ContentLength<R> {
    inner: R,
    remaining: u64,
}

impl<R: Read> ContentLength<R> {
    pub fn new(inner: R, len: u64) -> Self {
        Self {
            inner,
            remaining: len,
        }
    }

    pub fn remaining(&self) -> u64 {
        self.remaining
    }

    pub fn into_inner(self) -> R {
        self.inner
    }
}

impl<R: Read> Read for ContentLength<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.remaining == 0 || buf.is_empty() {
            return Ok(0);
        }
        let want = usize::try_from(self.remaining).map_or(buf.len(), |r| r.min(buf.len()));
        let n = self.inner.read(&mut buf[..want])?;
        if n == 0 {
            return Err(HttpError::Truncated.into());
        }
        self.remaining -= n as u64;
        Ok(n)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before a chunk-size line.
    Size,
    /// Inside a chunk's data, this much left.
    Data(u64),
    /// After a chunk's data: its CRLF.
    DataEnd,
    Done,
}

/// A chunked body. Extensions are checked for control characters and dropped; the trailer
/// section is read (bounded like a head) and discarded. With a limit, a chunk that would
/// pass it is refused from its size line, before any of its data is read.
#[derive(Debug)]
pub struct Chunked<R> {
    inner: R,
    state: State,
    limit: Option<u64>,
    total: u64,
    line: Vec<u8>,
}

impl<R: BufRead> Chunked<R> {
    pub fn new(inner: R, limit: Option<u64>) -> Self {
        Self {
            inner,
            state: State::Size,
            limit,
            total: 0,
            line: Vec::new(),
        }
    }

    pub fn into_inner(self) -> R {
        self.inner
    }

    /// Whether the way to the next data byte has fully arrived and is well-formed, so that
    /// reading on can neither wait for the peer nor fail (an error is left to the next
    /// read, after what already arrived has been handed out). The last chunk counts as not
    /// arrived: its trailers might not have.
    fn next_data_buffered(&self, held: &[u8]) -> bool {
        let held = match self.state {
            State::Data(_) => return !held.is_empty(),
            State::DataEnd => match held.strip_prefix(b"\r\n") {
                Some(rest) => rest,
                None => return false,
            },
            State::Size => held,
            State::Done => return false,
        };
        let Some(end) = held.iter().position(|&b| b == b'\n') else {
            return false;
        };
        let size = match held[..end].strip_suffix(b"\r").map(chunk_size) {
            Some(Ok(size)) if size > 0 => size,
            _ => return false,
        };
        let within = self
            .limit
            .is_none_or(|limit| self.total.saturating_add(size) <= limit);
        end < MAX_CHUNK_LINE && within && held.len() > end + 1
    }

    fn read_body(&mut self, buf: &mut [u8]) -> Result<usize, HttpError> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            match self.state {
                State::Done => return Ok(0),
                State::Size => {
                    let limit = MAX_CHUNK_LINE;
                    let too_long = || HttpError::ChunkLineTooLong { limit };
                    if !line::read_crlf_line(&mut self.inner, &mut self.line, limit, too_long)? {
                        return Err(HttpError::Truncated);
                    }
                    let size = chunk_size(&self.line)?;
                    if size == 0 {
                        let too_long = || HttpError::HeadTooLarge { limit: MAX_HEAD };
                        read_fields(&mut self.inner, MAX_HEAD, too_long)?;
                        self.state = State::Done;
                        return Ok(0);
                    }
                    if let Some(limit) = self.limit
                        && self.total.saturating_add(size) > limit
                    {
                        return Err(HttpError::BodyTooLarge { limit });
                    }
                    self.state = State::Data(size);
                }
                State::Data(left) => {
                    let want = usize::try_from(left).map_or(buf.len(), |l| l.min(buf.len()));
                    let n = loop {
                        match self.inner.read(&mut buf[..want]) {
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                            other => break other?,
                        }
                    };
                    if n == 0 {
                        return Err(HttpError::Truncated);
                    }
                    self.total += n as u64;
                    self.state = match left - n as u64 {
                        0 => State::DataEnd,
                        rest => State::Data(rest),
                    };
                    return Ok(n);
                }
                State::DataEnd => {
                    let end = || HttpError::BadChunkEnd;
                    if !line::read_crlf_line(&mut self.inner, &mut self.line, 2, end)? {
                        return Err(HttpError::Truncated);
                    }
                    if !self.line.is_empty() {
                        return Err(HttpError::BadChunkEnd);
                    }
                    self.state = State::Size;
                }
            }
        }
    }
}

impl<R: BufRead> Read for Chunked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_body(buf).map_err(io::Error::from)
    }
}

/// `1*HEXDIG [ BWS ";" extensions ]`: at most 16 significant digits (a u64); extensions
/// may hold only visible ASCII, spaces and tabs.
fn chunk_size(line: &[u8]) -> Result<u64, HttpError> {
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    let (hex, rest) = line.split_at(digits);
    let significant = hex.iter().skip_while(|&&b| b == b'0').count();
    if digits == 0 || significant > 16 {
        return Err(HttpError::BadChunkSize);
    }
    let ext = &rest[rest.iter().take_while(|&&b| is_ows(b)).count()..];
    let ext_ok = match ext.split_first() {
        None => rest.is_empty(),
        Some((b';', more)) => more.iter().all(|&b| is_field_char(b)),
        Some(_) => false,
    };
    if !ext_ok {
        return Err(HttpError::BadChunkSize);
    }
    hex.iter().try_fold(0u64, |acc, &b| {
        let digit = u64::from(char::from(b).to_digit(16).ok_or(HttpError::BadChunkSize)?);
        acc.checked_mul(16)
            .and_then(|a| a.checked_add(digit))
            .ok_or(HttpError::BadChunkSize)
    })
}

/// A body until the connection closes, with an optional limit.
#[derive(Debug)]
pub struct UntilClose<R> {
    inner: R,
    limit: Option<u64>,
    total: u64,
}

impl<R: Read> Read for UntilClose<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.total += n as u64;
        match self.limit {
            Some(limit) if self.total > limit => Err(HttpError::BodyTooLarge { limit }.into()),
            _ => Ok(n),
        }
    }
}

/// A message body framed as its head says.
#[derive(Debug)]
pub enum Body<R> {
    Empty(R),
    Length(ContentLength<R>),
    Chunked(Chunked<R>),
    UntilClose(UntilClose<R>),
}

impl<R: BufRead> Body<R> {
    /// With a `limit`, a longer Content-Length is refused at once, and a chunked or
    /// close-delimited body as soon as it passes the limit.
    pub fn new(inner: R, framing: Framing, limit: Option<u64>) -> Result<Self, HttpError> {
        Ok(match framing {
            Framing::None | Framing::Length(0) => Self::Empty(inner),
            Framing::Length(len) => match limit {
                Some(limit) if len > limit => return Err(HttpError::BodyTooLarge { limit }),
                _ => Self::Length(ContentLength::new(inner, len)),
            },
            Framing::Chunked => Self::Chunked(Chunked::new(inner, limit)),
            Framing::UntilClose => Self::UntilClose(UntilClose {
                inner,
                limit,
                total: 0,
            }),
        })
    }

    /// The connection, for the next message once this body has been read to its end.
    pub fn into_inner(self) -> R {
        match self {
            Self::Empty(r) => r,
            Self::Length(b) => b.into_inner(),
            Self::Chunked(b) => b.into_inner(),
            Self::UntilClose(b) => b.inner,
        }
    }
}

/// A reader that can show what it already holds, so that a body can hand out everything
/// that has arrived without waiting for more.
pub trait Buffered {
    fn buffered(&self) -> &[u8];
}

impl<R: Read> Buffered for BufReader<R> {
    fn buffered(&self) -> &[u8] {
        self.buffer()
    }
}

impl Buffered for &[u8] {
    fn buffered(&self) -> &[u8] {
        self
    }
}

impl<T: Buffered + ?Sized> Buffered for &mut T {
    fn buffered(&self) -> &[u8] {
        (**self).buffered()
    }
}

impl<R: BufRead + Buffered> Body<R> {
    /// Reads what has arrived: waits for the first byte if none has, then takes whatever
    /// else is already buffered (across chunk boundaries) without waiting again. A proxy
    /// that writes each such read at once streams without delay and without a write per
    /// upstream chunk.
    pub fn read_ready(&mut self, buf: &mut [u8]) -> Result<usize, HttpError> {
        let mut n = self.read(buf).map_err(HttpError::from_io)?;
        while n > 0 && n < buf.len() && self.more_buffered() {
            match self.read(&mut buf[n..]).map_err(HttpError::from_io)? {
                0 => break,
                m => n += m,
            }
        }
        Ok(n)
    }

    fn more_buffered(&self) -> bool {
        match self {
            Self::Empty(_) => false,
            Self::Length(b) => b.remaining > 0 && !b.inner.buffered().is_empty(),
            Self::Chunked(b) => b.next_data_buffered(b.inner.buffered()),
            Self::UntilClose(b) => {
                let held = b.inner.buffered().len() as u64;
                held > 0 && b.limit.is_none_or(|l| b.total.saturating_add(held) <= l)
            }
        }
    }
}

impl<R: BufRead> Read for Body<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Empty(_) => Ok(0),
            Self::Length(b) => b.read(buf),
            Self::Chunked(b) => b.read(buf),
            Self::UntilClose(b) => b.read(buf),
        }
    }
}

/// Reads `r` to its end, refusing more than `limit` bytes (memory grows with what arrives,
/// never with what was announced).
pub fn read_to_end_limited<R: Read>(r: R, limit: u64) -> Result<Vec<u8>, HttpError> {
    let mut out = Vec::new();
    r.take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(HttpError::from_io)?;
    if out.len() as u64 > limit {
        return Err(HttpError::BodyTooLarge { limit });
    }
    Ok(out)
}

/// Writes each `write` as one chunk in one `write_all` (so a stream's pieces leave as they
/// come); an empty write sends nothing. [`ChunkedWriter::finish`] sends the last chunk.
#[derive(Debug)]
pub struct ChunkedWriter<W: Write> {
    inner: W,
    buf: Vec<u8>,
}

impl<W: Write> ChunkedWriter<W> {
    pub fn new(inner: W) -> Self {
        Self {
            inner,
            buf: Vec::new(),
        }
    }

    /// Ends the body (`0\r\n\r\n`, no trailers) and flushes.
    pub fn finish(mut self) -> io::Result<W> {
        self.inner.write_all(b"0\r\n\r\n")?;
        self.inner.flush()?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for ChunkedWriter<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if data.is_empty() {
            // A zero-size chunk would end the body.
            return Ok(0);
        }
        self.buf.clear();
        self.buf
            .extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
        self.buf.extend_from_slice(data);
        self.buf.extend_from_slice(b"\r\n");
        self.inner.write_all(&self.buf)?;
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
