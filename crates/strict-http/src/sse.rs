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
        let mut event = Event::default();
        let mut data: Option<String> = None;
        let mut size = 0usize;
        let max_event = self.max_event;
        loop {
            let Some(line) = self.next_line()? else {
                return Ok(None);
            };
            if line.is_empty() {
                if let Some(mut text) = data.take() {
                    text.pop(); // the last `\n`
                    event.data = text;
                    return Ok(Some(event));
                }
                event = Event::default();
                size = 0;
                continue;
            }
            size += line.len();
            if size > max_event {
                return Err(HttpError::SseEventTooLarge { limit: max_event });
            }
            let (field, value) = match line.split_once(':') {
                Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                None => (line, ""),
            };
            match field {
                "" => {} // a comment
                "data" => {
                    let text = data.get_or_insert_with(String::new);
                    text.push_str(value);
                    text.push('\n');
                }
                "event" => event.event = Some(value.to_owned()),
                "id" if !value.contains('\0') => event.id = Some(value.to_owned()),
                _ => {} // `retry` and unknown fields are ignored
            }
        }
    }

    /// One line without its ending, borrowed from the reader's line buffer; `None` at the
    /// end of the stream (a last line without an ending is dropped with its event).
    fn next_line(&mut self) -> Result<Option<&str>, HttpError> {
        self.line.clear();
        let limit = self.max_line;
        let too_long = || HttpError::SseLineTooLong { limit };
        if !read_to_lf(&mut self.inner, &mut self.line, limit + 2, too_long)? {
            return Ok(None);
        }
        self.line.pop();
        if self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        if self.line.contains(&b'\r') {
            return Err(HttpError::BareCr);
        }
        if self.line.len() > limit {
            return Err(HttpError::SseLineTooLong { limit });
        }
        let mut text = std::str::from_utf8(&self.line).map_err(|_| HttpError::SseNotUtf8)?;
        if std::mem::take(&mut self.first) {
            text = text.strip_prefix('\u{feff}').unwrap_or(text);
        }
        Ok(Some(text))
    }

    pub fn into_inner(self) -> R {
        self.inner.into_inner()
    }
}
