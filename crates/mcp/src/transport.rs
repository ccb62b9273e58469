//! How messages reach the server and come back. [`Stdio`] is MCP's stdio transport: one
//! JSON-RPC message per line, newline-delimited, over the server's stdin and stdout (any
//! `Read`/`Write` pair). A thread reads the lines, so every receive waits only until the
//! caller's deadline; a line is never held past the message limit.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::time::Instant;

use crate::error::McpError;

/// The two directions of a session, one message at a time.
pub trait Transport {
    /// Sends one message: a JSON text without a newline. A transport that waits for the
    /// server while sending waits at most until `deadline`.
    fn send(&mut self, message: &str, deadline: Instant) -> Result<(), McpError>;

    /// Sends a message no answer is due for (a notification, or the answer to the server's
    /// request): a transport that gets a reply to it anyway drops the reply unread.
    fn send_notice(&mut self, message: &str, deadline: Instant) -> Result<(), McpError> {
        self.send(message, deadline)
    }

    /// The next message from the server, waiting at most until `deadline`. `waiting_for`
    /// names the answer due, for the error.
    fn receive(&mut self, deadline: Instant, waiting_for: &str) -> Result<Vec<u8>, McpError>;
}

/// What the reading thread hands over.
enum Line {
    Message(Vec<u8>),
    /// The server's output ended.
    Closed,
    /// A line passed the message limit: reading stopped there.
    TooLarge,
    Failed(String),
}

/// MCP's stdio transport over a reader (the server's stdout) and a writer (its stdin).
#[derive(Debug)]
pub struct Stdio<W: Write> {
    writer: W,
    lines: Receiver<Line>,
    max_message: usize,
    /// What ended the reading, once it ended: every later receive reports it again.
    ended: Option<McpError>,
}

impl std::fmt::Debug for Line {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Message(m) => write!(f, "Message({} bytes)", m.len()),
            Self::Closed => f.write_str("Closed"),
            Self::TooLarge => f.write_str("TooLarge"),
            Self::Failed(e) => write!(f, "Failed({e})"),
        }
    }
}

impl<W: Write> Stdio<W> {
    /// Starts the reading thread on `reader`. It holds at most one line in hand and one
    /// waiting, each at most `max_message` bytes; it ends at the end of `reader`, at a line
    /// over the limit, or once this transport is dropped and a line is ready.
    pub fn new<R: Read + Send + 'static>(reader: R, writer: W, max_message: usize) -> Self {
        let (tx, rx) = sync_channel(1);
        std::thread::spawn(move || read_lines(BufReader::new(reader), &tx, max_message));
        Self {
            writer,
            lines: rx,
            max_message,
            ended: None,
        }
    }

    /// Gives the writer back (to close the server's stdin by dropping it, say).
    pub fn into_writer(self) -> W {
        self.writer
    }
}

impl<W: Write> Transport for Stdio<W> {
    /// A pipe write does not wait on a deadline: the caller stops a server that does not
    /// read (the toolkit kills its process group when the session's time is up).
    fn send(&mut self, message: &str, _deadline: Instant) -> Result<(), McpError> {
        let mut line = Vec::with_capacity(message.len() + 1);
        line.extend_from_slice(message.as_bytes());
        line.push(b'\n');
        self.writer
            .write_all(&line)
            .and_then(|()| self.writer.flush())
            .map_err(|e| McpError::Io {
                detail: format!("writing to the server: {e}"),
            })
    }

    fn receive(&mut self, deadline: Instant, waiting_for: &str) -> Result<Vec<u8>, McpError> {
        if let Some(e) = &self.ended {
            return Err(e.clone());
        }
        let wait = deadline.saturating_duration_since(Instant::now());
        let ended = match self.lines.recv_timeout(wait) {
            Ok(Line::Message(m)) => return Ok(m),
            Err(RecvTimeoutError::Timeout) => {
                return Err(McpError::Timeout {
                    waiting_for: waiting_for.to_owned(),
                    after: wait,
                });
            }
            Ok(Line::Closed) | Err(RecvTimeoutError::Disconnected) => McpError::Closed {
                waiting_for: waiting_for.to_owned(),
            },
            Ok(Line::TooLarge) => McpError::MessageTooLarge {
                limit: self.max_message,
            },
            Ok(Line::Failed(detail)) => McpError::Io { detail },
        };
        self.ended = Some(ended.clone());
        Err(ended)
    }
}

/// The reading thread: lines to `tx` until the end, a line over `max` or a failure.
fn read_lines<R: Read>(mut reader: BufReader<R>, tx: &SyncSender<Line>, max: usize) {
    let mut line = Vec::new();
    loop {
        let available = match reader.fill_buf() {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let _ = tx.send(Line::Failed(format!("reading from the server: {e}")));
                return;
            }
        };
        if available.is_empty() {
            // A last line without its newline is still a message.
            if !line.iter().all(u8::is_ascii_whitespace) && tx.send(Line::Message(line)).is_err() {
                return;
            }
            let _ = tx.send(Line::Closed);
            return;
        }
        let (taken, complete) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        let take = if complete { taken - 1 } else { taken };
        if line.len() + take > max {
            let _ = tx.send(Line::TooLarge);
            return;
        }
        line.extend_from_slice(&available[..take]);
        reader.consume(taken);
        if complete {
            let message = std::mem::take(&mut line);
            // Blank lines between messages carry nothing.
            if !message.iter().all(u8::is_ascii_whitespace)
                && tx.send(Line::Message(message)).is_err()
            {
                return;
            }
        }
    }
}
