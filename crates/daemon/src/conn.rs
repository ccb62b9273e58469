//! A framed connection with deadlines: a peer may sit idle between requests for
//! `idle`, but once a frame has started it must arrive whole within `frame`. A silent or
//! slow peer is dropped; a peer waiting for an answer is not (nothing is read then).

use std::io::{self, BufReader, Read};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use proto::{Envelope, FrameError, Message, ReadError, WireError};

/// Reads go through a buffer, so that a frame that has arrived whole costs one `recv`
/// (not one for the length and one for the body), and the read timeout is set only when
/// it changes: a request then costs its peer one `recv` and one `send`.
#[derive(Debug)]
pub struct Conn {
    reader: BufReader<DeadlineReader>,
}

impl Conn {
    /// A peer that stops reading is dropped after `frame` (when not zero) rather than
    /// blocking the writer (and whatever it holds) forever.
    pub fn new(stream: UnixStream, idle: Duration, frame: Duration) -> Self {
        if !frame.is_zero() {
            // A socket whose timeout cannot be set still works; it only lacks the bound.
            let _ = stream.set_write_timeout(Some(frame));
        }
        Self {
            reader: BufReader::new(DeadlineReader {
                stream,
                idle,
                frame,
                started: None,
                timeout: None,
            }),
        }
    }

    /// A client connection to the socket at `path`, with generous deadlines: a client
    /// waits as long as the server takes to answer (an approval may take minutes).
    pub fn connect(path: &Path) -> io::Result<Self> {
        let stream = UnixStream::connect(path)?;
        Ok(Self::new(
            stream,
            Duration::from_secs(3600),
            Duration::from_secs(60),
        ))
    }

    /// Reads one envelope, or a typed error. A timeout is `ReadError::Frame(Io)` with kind
    /// `WouldBlock` or `TimedOut`.
    pub fn read(&mut self) -> Result<Envelope, ReadError> {
        // A frame whose first bytes came in with the previous one has started already:
        // its deadline runs from now, not from its next byte.
        let started = (!self.reader.buffer().is_empty()).then(Instant::now);
        self.reader.get_mut().started = started;
        proto::read_envelope(&mut self.reader)
    }

    /// A second handle on this connection's socket, for another thread: to shut it down
    /// (cancelling a call under way) or to watch for the peer's hang-up (`hangup`).
    pub fn handle(&self) -> io::Result<UnixStream> {
        self.reader.get_ref().stream.try_clone()
    }

    /// Who is on the other end, from the kernel (SO_PEERCRED): for a socket whose answer
    /// depends on which admitted peer asks (brokerd's jobs side).
    pub fn peer(&self) -> io::Result<crate::peer::PeerIdentity> {
        crate::peer::identify(&self.reader.get_ref().stream)
    }

    pub fn write(&mut self, envelope: &Envelope) -> Result<(), FrameError> {
        proto::write_envelope(&mut &self.reader.get_ref().stream, envelope)
    }

    /// Sends a typed refusal as the final frame for `id`.
    pub fn refuse(&mut self, id: u64, code: proto::ErrorCode, detail: &str) {
        // The peer may already be gone; there is nobody left to tell.
        let _ = self.write(&Envelope::last(id, Message::error(code, detail)));
    }

    /// Sends one request and returns the final answer, handing each earlier (partial)
    /// frame to `partial`. A server that refuses the connection itself (the peer check, a
    /// server stopping or full) writes an error with id 0 and closes without reading the
    /// request: that error is [`CallError::Refused`], even when sending the request then
    /// failed because the server had already closed.
    pub fn call(
        &mut self,
        id: u64,
        msg: Message,
        mut partial: impl FnMut(&Envelope),
    ) -> Result<Envelope, CallError> {
        if let Err(e) = self.write(&Envelope::last(id, msg)) {
            // The server is gone, so reading cannot wait: its refusal, if it sent one, is
            // already here.
            if matches!(&e, FrameError::Io(io) if closed(io))
                && let Ok(Envelope {
                    msg: Message::Error(refusal),
                    ..
                }) = self.read()
            {
                return Err(CallError::Refused(refusal));
            }
            return Err(CallError::Send(e));
        }
        loop {
            let env = self.read().map_err(CallError::Receive)?;
            if env.id != id {
                return Err(match env.msg {
                    Message::Error(refusal) => CallError::Refused(refusal),
                    _ => CallError::WrongId {
                        sent: id,
                        got: env.id,
                    },
                });
            }
            if env.r#final {
                return Ok(env);
            }
            partial(&env);
        }
    }
}

/// Why a call got no answer. Each text prints what it wraps, which `source()` does not
/// return (docs/decisions.md F16).
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("sending: {0}")]
    Send(FrameError),
    #[error("receiving: {0}")]
    Receive(ReadError),
    #[error("answer for request {got}, expected {sent}")]
    WrongId { sent: u64, got: u64 },
    /// The server refused the connection before reading the request; its error says why
    /// (`refused`: not a peer this socket admits; `unavailable`: try again later).
    #[error("refused ({}): {}", .0.code.name(), .0.detail)]
    Refused(WireError),
}

/// Whether a read error is only a deadline passing (the peer went quiet).
pub fn is_timeout(e: &ReadError) -> bool {
    matches!(e, ReadError::Frame(FrameError::Io(io)) if is_timeout_io(io))
}

/// Whether writing failed because the peer has closed its end.
fn closed(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
    )
}

/// Whether an I/O error is only a read or write timeout: `WouldBlock` (what a socket with a
/// timeout says on Unix) or `TimedOut`.
pub fn is_timeout_io(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

#[derive(Debug)]
struct DeadlineReader {
    stream: UnixStream,
    idle: Duration,
    frame: Duration,
    /// When the frame being read started (its first byte arrived).
    started: Option<Instant>,
    /// The read timeout the socket has now, once set.
    timeout: Option<Duration>,
}

impl Read for DeadlineReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let timeout = match self.started {
            None => self.idle,
            Some(t) => self
                .frame
                .checked_sub(t.elapsed())
                .filter(|d| !d.is_zero())
                .ok_or_else(|| io::Error::new(io::ErrorKind::TimedOut, "frame deadline"))?,
        };
        if self.timeout != Some(timeout) {
            self.stream.set_read_timeout(Some(timeout))?;
            self.timeout = Some(timeout);
        }
        let n = (&self.stream).read(buf)?;
        if n > 0 && self.started.is_none() {
            self.started = Some(Instant::now());
        }
        Ok(n)
    }
}
