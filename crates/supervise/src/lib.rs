//! supervise: starting a role as systemd starts a `Type=notify` service, for development
//! and tests only: with a NOTIFY_SOCKET of its own, waiting until it says READY=1, and
//! noticing a child that exits first. For `bxctl dev`, the stack tests, inferproxy's tests
//! and its bench: one way to do it. The role's own half (READY=1, and ending with the `bxctl
//! dev` that started it) is the runtime's, `daemon::notify` and `daemon::parent`; under
//! systemd nothing of this crate runs, so no role links it.

use std::io;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// How often the wait looks whether the child has exited meanwhile.
const POLL: Duration = Duration::from_millis(100);

/// Why a child did not become ready. Each text prints what it wraps, which `source()`
/// does not return (docs/decisions.md F16).
#[derive(Debug, thiserror::Error)]
pub enum NotReady {
    /// The notify socket could not be bound at this path.
    #[error("notify socket {}: {error}", path.display())]
    Bind { path: PathBuf, error: io::Error },
    #[error("cannot start it: {0}")]
    Spawn(io::Error),
    /// The child exited before READY=1.
    #[error("exited ({0}) before READY=1")]
    Exited(ExitStatus),
    /// No READY=1 within the time allowed; the child (if any) was killed.
    #[error("no READY=1 within {0:?}")]
    Timeout(Duration),
    /// The notify socket failed.
    #[error("no READY=1 ({0})")]
    Receive(io::Error),
}

/// Binds a notify socket at `notify` (replacing a stale one), starts `cmd` with
/// NOTIFY_SOCKET naming it, and waits up to `timeout` for READY=1. Returns the child and
/// the socket, on which what the child says after READY=1 (watchdog pings, STATUS=) arrives.
/// A child that does not become ready in time is killed; one that exited is reaped.
pub fn spawn_ready(
    cmd: &mut Command,
    notify: &Path,
    timeout: Duration,
) -> Result<(Child, UnixDatagram), NotReady> {
    let _ = std::fs::remove_file(notify);
    let sock = UnixDatagram::bind(notify).map_err(|error| NotReady::Bind {
        path: notify.to_owned(),
        error,
    })?;
    let mut child = cmd
        .env("NOTIFY_SOCKET", notify)
        .spawn()
        .map_err(NotReady::Spawn)?;
    match await_ready(&sock, timeout, Some(&mut child)) {
        Ok(()) => Ok((child, sock)),
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(e)
        }
    }
}

/// Reads sd_notify datagrams from `sock` until one says READY=1, for at most `timeout`;
/// fails early when `child` exits first. Leaves the socket's read timeout short.
pub fn await_ready(
    sock: &UnixDatagram,
    timeout: Duration,
    mut child: Option<&mut Child>,
) -> Result<(), NotReady> {
    let deadline = Instant::now() + timeout;
    sock.set_read_timeout(Some(POLL))
        .map_err(NotReady::Receive)?;
    let mut buf = [0u8; 4096];
    loop {
        match sock.recv(&mut buf) {
            Ok(n)
                if String::from_utf8_lossy(&buf[..n])
                    .lines()
                    .any(|l| l == "READY=1") =>
            {
                return Ok(());
            }
            Ok(_) => {}
            Err(e) if daemon::conn::is_timeout_io(&e) => {}
            // With a read timeout set, a signal interrupts recv even under SA_RESTART
            // (signal(7)); the wait goes on. Seen once in the stack tests' kill loop.
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(NotReady::Receive(e)),
        }
        if let Some(child) = child.as_deref_mut()
            && let Ok(Some(status)) = child.try_wait()
        {
            return Err(NotReady::Exited(status));
        }
        if Instant::now() >= deadline {
            return Err(NotReady::Timeout(timeout));
        }
    }
}
