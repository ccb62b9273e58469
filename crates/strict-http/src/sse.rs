//! Server-sent events over a body reader (the WHATWG event-stream format, as llama-server
//! streams chat completions): `field: value` lines, an event ends at a blank line, `data`
//! lines join with `\n`, `:` lines are comments. Lines end in LF or CRLF; a bare CR (which
//! the format would allow) is refused like everywhere in this module. Bounded per line and
//! per event; a partial event at the end of the stream is dropped, as the format says.

use std::io::{BufReader, Read};

use super::HttpError;
use super::line::read_to_lf;

/// Default limits: one llama-server chunk is a JSON line of well under this.
pub const MAX_SSE_LINE: usize = 1024 * 1024;
pub const MAX_SSE_EVENT: usize = 4 * 1024 * 1024;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Event {
    /// The `event:` field, when given.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The `id:` field, when given.
    pub id: Option<String>,
}

#[derive(Debug)]
pub struct SseReader<R> {
    inner: BufReader<R>,
    max_line: usize,
    max_event: usize,
    line: Vec<u8>,
    first: bool,
}

/// One line of an event stream, `raw` with its LF (and any CR before it): without its
/// ending, a bare CR refused, at most `limit` bytes, UTF-8, and the first line of a stream
/// (`first`) without its byte-order mark.
pub fn sse_line(raw: &[u8], first: bool, limit: usize) -> Result<&str, HttpError> {
    let mut line = raw.strip_suffix(b"\n").unwrap_or(raw);
    line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.contains(&b'\r') {
        return Err(HttpError::BareCr);
    }
    if line.len() > limit {
        return Err(HttpError::SseLineTooLong { limit });
    }
    let text = std::str::from_utf8(line).map_err(|_| HttpError::SseNotUtf8)?;
    Ok(if first {
        text.strip_prefix('\u{feff}').unwrap_or(text)
    } else {
        text
    })
}

/// The events of a stream, line by line ([`sse_line`]'s): `line` gives an event at the
/// blank line that ends one with data.
#[derive(Debug, Clone, Default)]
pub struct EventParser {
    event: Event,
    data: Option<String>,
    size: usize,
    max_event: usize,
}

impl EventParser {
    pub fn new(max_event: usize) -> Self {
        Self {
            max_event,
            ..Self::default()
        }
    }

    /// The data the event under way holds so far, each line ended by `\n`.
    pub fn data(&self) -> Option<&str> {
        self.data.as_deref()
    }

    /// Takes one line; at a blank line, the event it ends (when it had data).
    pub fn line(&mut self, line: &str) -> Result<Option<Event>, HttpError> {
        if line.is_empty() {
            let event = std::mem::take(&mut self.event);
            self.size = 0;
            return Ok(self.data.take().map(|mut text| {
                text.pop(); // the last `\n`
                Event {
                    data: text,
                    ..event
                }
            }));
        }
        self.size += line.len();
        if self.size > self.max_event {
            return Err(HttpError::SseEventTooLarge {
                limit: self.max_event,
            });
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "" => {} // a comment
            "data" => {
                let text = self.data.get_or_insert_with(String::new);
                text.push_str(value);
                text.push('\n');
            }
            "event" => self.event.event = Some(value.to_owned()),
            "id" if !value.contains('\0') => self.event.id = Some(value.to_owned()),
            _ => {} // `retry` and unknown fields are ignored
        }
        Ok(None)
    }
}

impl<R: Read> SseReader<R> {
    pub fn new(body: R) -> Self {
        Self::with_limits(body, MAX_SSE_LINE, MAX_SSE_EVENT)
    }

    pub fn with_limits(body: R, max_line: usize, max_event: usize) -> Self {
        Self {
            inner: BufReader::new(body),
            max_line,
            max_event,
            line: Vec::new(),
            first: true,
        }
    }

    /// The next event with data, or `None` at the end of the stream. Events without any
    /// `data` line are skipped, as a browser would.
    pub fn next_event(&mut self) -> Result<Option<Event>, HttpError> {
        let mut events = EventParser::new(self.max_event);
        loop {
            self.line.clear();
            let limit = self.max_line;
            let too_long = || HttpError::SseLineTooLong { limit };
            if !read_to_lf(&mut self.inner, &mut self.line, limit + 2, too_long)? {
                return Ok(None);
            }
            let first = std::mem::take(&mut self.first);
            let line = sse_line(&self.line, first, limit)?;
            if let Some(event) = events.line(line)? {
                return Ok(Some(event));
            }
        }
    }

    pub fn into_inner(self) -> R {
        self.inner.into_inner()
    }
}
