//! Reading llama-server's answer with its two deadlines (before the first byte, then
//! between bytes), while noticing a client that went away: the wait is cut into short
//! slices and the client's socket is checked between them, so an abandoned generation is
//! stopped (closing the upstream connection makes llama-server stop) within a slice.

use std::io::{self, Read};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use daemon::peer;
use strict_http::HttpError;

/// How often a wait for llama-server looks whether the client is still there.
const LIVENESS_SLICE: Duration = Duration::from_millis(500);

/// The client closed its connection while we waited for llama-server.
#[derive(Debug, thiserror::Error)]
#[error("the client went away")]
pub(crate) struct ClientGone;

/// llama-server sent nothing for the whole deadline.
#[derive(Debug, thiserror::Error)]
#[error("{}", if *.before_first_byte {
    "llama-server sent nothing before the first-byte deadline"
} else {
    "llama-server fell silent for the idle deadline"
})]
pub(crate) struct Silent {
    pub before_first_byte: bool,
}

/// What went wrong while talking to llama-server, from an error that came through the
/// HTTP readers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    ClientGone,
    Silent,
    /// Refused, reset, closed early or malformed.
    Broken,
}

impl Failure {
    pub fn of(e: &HttpError) -> Self {
        let HttpError::Io(io) = e else {
            return Self::Broken;
        };
        match io.get_ref() {
            Some(inner) if inner.is::<ClientGone>() => Self::ClientGone,
            Some(inner) if inner.is::<Silent>() => Self::Silent,
            _ => Self::Broken,
        }
    }
}

/// A reader over the upstream connection that enforces the deadlines.
#[derive(Debug)]
pub(crate) struct UpstreamReader<'a> {
    tcp: &'a TcpStream,
    client: &'a UnixStream,
    first_byte: Duration,
    idle: Duration,
    started: bool,
    timeout: Option<Duration>,
    /// When the first byte arrived.
    pub first_byte_at: Option<Instant>,
}

impl<'a> UpstreamReader<'a> {
    pub fn new(
        tcp: &'a TcpStream,
        client: &'a UnixStream,
        first_byte: Duration,
        idle: Duration,
    ) -> Self {
        Self {
            tcp,
            client,
            first_byte,
            idle,
            started: false,
            timeout: None,
            first_byte_at: None,
        }
    }
}

impl Read for UpstreamReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let limit = if self.started {
            self.idle
        } else {
            self.first_byte
        };
        let since = Instant::now();
        loop {
            let left = limit
                .checked_sub(since.elapsed())
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    let silent = Silent {
                        before_first_byte: !self.started,
                    };
                    io::Error::new(io::ErrorKind::TimedOut, silent)
                })?;
            let slice = left.min(LIVENESS_SLICE);
            if self.timeout != Some(slice) {
                self.tcp.set_read_timeout(Some(slice))?;
                self.timeout = Some(slice);
            }
            match (&*self.tcp).read(buf) {
                Ok(n) => {
                    if n > 0 && !self.started {
                        self.started = true;
                        self.first_byte_at = Some(Instant::now());
                    }
                    return Ok(n);
                }
                Err(e) if daemon::conn::is_timeout_io(&e) => {
                    if peer::hung_up(self.client) {
                        return Err(io::Error::new(io::ErrorKind::ConnectionAborted, ClientGone));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// Reads the client's request within one overall deadline, so a client that trickles its
/// bytes cannot hold a connection slot.
#[derive(Debug)]
pub(crate) struct Deadline<'a> {
    pub stream: &'a UnixStream,
    pub until: Instant,
}

impl Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        self.stream.set_read_timeout(Some(left))?;
        (&*self.stream).read(buf)
    }
}
