//! Noticing that a peer has hung up while it waits for an answer: loopd's chat client gone
//! mid-turn (the owner pressed Ctrl-C), loopd gone from a call waiting for approval. The
//! peer sends nothing while it waits, so an end of stream ahead of the reader, with nothing
//! unread before it, is a hang-up; bytes ahead are a peer that sends on, never a hang-up.

use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::socket::{MsgFlags, recv};

/// How often [`wait`] looks whether it is still wanted.
pub const TICK: Duration = Duration::from_millis(100);

/// Waits until the peer of `stream` hangs up (true) or `stop` is set, the peer sends
/// something, or the socket fails (false). Reads nothing: what the peer sent stays for the
/// connection's reader.
pub fn wait(stream: &UnixStream, stop: &AtomicBool) -> bool {
    let tick = PollTimeout::try_from(TICK).unwrap_or(PollTimeout::MAX);
    while !stop.load(Ordering::Acquire) {
        // An end of stream reads as readable.
        let mut fds = [PollFd::new(stream.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, tick) {
            Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
            Ok(_) => return hung_up(stream),
            Err(_) => return false,
        }
    }
    false
}

/// Whether the peer has shut down its side and nothing it sent is unread.
pub fn hung_up(stream: &UnixStream) -> bool {
    let mut byte = [0u8; 1];
    matches!(
        recv(
            std::os::fd::AsRawFd::as_raw_fd(stream),
            &mut byte,
            MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT,
        ),
        Ok(0)
    )
}
