//! One connection's socket with the session's deadline on every read and write, under
//! both the plain and the TLS connection.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A connection whose every read and write waits only until the session's deadline as it
/// stands: a socket timeout counts from each read, so a server trickling bytes (an event
/// stream's keep-alive comments every 15 s, say) would hold a plain one forever.
#[derive(Debug)]
pub(super) struct Timed {
    pub(super) stream: TcpStream,
    pub(super) deadline: Arc<Mutex<Instant>>,
}

impl Timed {
    fn left(&self) -> io::Result<std::time::Duration> {
        let deadline = *self
            .deadline
            .lock()
            .map_err(|_| io::Error::other("the deadline's lock is poisoned"))?;
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the session's deadline passed",
            ));
        }
        Ok(left)
    }
}

impl Read for Timed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.left()?;
        self.stream.set_read_timeout(Some(left))?;
        self.stream.read(buf)
    }
}

impl Write for Timed {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let left = self.left()?;
        self.stream.set_write_timeout(Some(left))?;
        self.stream.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }
}
