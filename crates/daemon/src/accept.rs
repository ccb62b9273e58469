//! The one accept loop every socket of every role runs: a thread per connection up to a
//! cap, every peer checked with SO_PEERCRED against the socket's rule, and the rest refused
//! before anything is read, in the socket's own protocol (a framed error, an HTTP 503): the
//! [`Refuse`] the role passes. A failed accept (out of file descriptors, say) backs off
//! instead of retrying at once, so the loop never spins. [`Activity`] is what the loops share
//! with the main thread: the requests in flight that shutdown drains, and whether it has begun.

use std::io;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use crate::log;
use crate::peer::{self, PeerIdentity};
use config::Peer;

/// Counts shared by the accept loops and the main thread.
#[derive(Debug, Default)]
pub struct Activity {
    /// Requests being served now; shutdown waits for these to finish their writes.
    pub busy: AtomicUsize,
    pub stopping: AtomicBool,
}

impl Activity {
    /// Marks one request as in flight until the guard drops.
    pub fn busy(&self) -> BusyGuard<'_> {
        self.busy.fetch_add(1, Ordering::SeqCst);
        BusyGuard(self)
    }

    /// Stops accepting and waits up to `drain` for requests in flight.
    pub fn drain(&self, drain: Duration) {
        self.stopping.store(true, Ordering::SeqCst);
        let start = std::time::Instant::now();
        while self.busy.load(Ordering::SeqCst) > 0 && start.elapsed() < drain {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[derive(Debug)]
pub struct BusyGuard<'a>(&'a Activity);

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Who may connect to a socket and how many at once.
#[derive(Debug, Clone)]
pub struct Admission {
    /// The socket's name in logs and refusals (`loop`, `admin`, `chat`, `infer`, …).
    pub name: &'static str,
    /// Who may connect: any one of these.
    pub peers: Vec<Peer>,
    pub max_connections: usize,
}

/// Why a connection was turned away before anything was read from it.
#[derive(Debug)]
pub enum Refusal<'a> {
    /// The role is draining on its way out.
    Stopping,
    /// The socket is at its cap.
    Full { max: usize },
    /// The kernel names a peer the socket does not admit.
    NotAdmitted {
        who: &'a PeerIdentity,
        admits: &'a [Peer],
    },
    /// SO_PEERCRED failed: who it is cannot be known.
    Unidentified,
}

/// How a socket's protocol says no: the framed roles write a typed error frame
/// (`serve::Framed`), inferproxy an HTTP error. Called on the accept thread: an answer that
/// may take time (reading what the client still sends, say) belongs on a thread of its own.
pub trait Refuse: Send + 'static {
    fn refuse(&self, socket: &str, stream: UnixStream, why: &Refusal<'_>);
}

/// Where connections come from: a listener, or in tests a function that fails on purpose.
pub trait Accept {
    fn accept(&self) -> io::Result<UnixStream>;
}

impl Accept for UnixListener {
    fn accept(&self) -> io::Result<UnixStream> {
        UnixListener::accept(self).map(|(stream, _)| stream)
    }
}

/// The first pause after a failed accept; each further failure in a row doubles it, up to
/// [`MAX_BACKOFF`]. Out of descriptors, the pending connection stays queued and accept
/// fails again at once: without the pause the loop would take a whole core.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(5);
/// The longest pause: once descriptors are free again, a connection waits at most this long.
pub const MAX_BACKOFF: Duration = Duration::from_millis(500);

/// Accepts from `listener` until the process ends, calling `handle(stream, who)` on a
/// thread of its own for each admitted peer; `who` is the peer as the kernel names it.
pub fn accept_loop<A, R, H>(
    listener: &A,
    admission: &Admission,
    activity: &Activity,
    refuse: &R,
    handle: &Arc<H>,
) where
    A: Accept,
    R: Refuse,
    H: Fn(UnixStream, &str) + Send + Sync + 'static,
{
    let name = admission.name;
    // Each socket has its own cap: one side filling its connections (a compromised loopd,
    // say) never locks the owner out of the other.
    let connections = Arc::new(AtomicUsize::new(0));
    let mut backoff = Backoff::default();
    loop {
        let stream = match listener.accept() {
            Ok(s) => {
                backoff.succeeded(name);
                s
            }
            Err(e) => {
                backoff.failed(name, &e);
                continue;
            }
        };
        if activity.stopping.load(Ordering::SeqCst) {
            refuse.refuse(name, stream, &Refusal::Stopping);
            continue;
        }
        let max = admission.max_connections;
        if connections.load(Ordering::SeqCst) >= max {
            log::warn(format_args!(
                "{name} socket: at {max} connections, refusing one"
            ));
            refuse.refuse(name, stream, &Refusal::Full { max });
            continue;
        }
        let who = match peer::identify(&stream) {
            Ok(who) if admission.peers.iter().any(|p| peer::admits(p, &who)) => who.to_string(),
            Ok(who) => {
                log::warn(format_args!(
                    "{name} socket: refused {who} (pid {}), not one of {:?}",
                    who.pid, admission.peers
                ));
                let why = Refusal::NotAdmitted {
                    who: &who,
                    admits: &admission.peers,
                };
                refuse.refuse(name, stream, &why);
                continue;
            }
            Err(e) => {
                log::warn(format_args!("{name} socket: SO_PEERCRED: {e}"));
                refuse.refuse(name, stream, &Refusal::Unidentified);
                continue;
            }
        };
        let slot = Slot::take(&connections);
        let handle = handle.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("{name}-conn"))
            .spawn(move || {
                // Released when the thread ends, even by a panic.
                let _slot = slot;
                handle(stream, &who);
            });
        if let Err(e) = spawned {
            // The closure, and the slot and stream in it, were dropped with the error.
            log::error(format_args!("{name} socket: cannot start a thread: {e}"));
        }
    }
}

/// The pause after failed accepts, and the log of a burst of them: one line when it
/// starts, one when accepting works again.
#[derive(Debug, Default)]
struct Backoff {
    /// Failed accepts in a row.
    failures: u64,
    next: Duration,
}

impl Backoff {
    fn failed(&mut self, name: &str, e: &io::Error) {
        // The client gave up between its connect and our accept: nothing of ours is short,
        // and the next accept may well succeed.
        if e.raw_os_error() == Some(nix::errno::Errno::ECONNABORTED as i32) {
            return;
        }
        if self.failures == 0 {
            log::warn(format_args!(
                "{name} socket: accept: {e}; retrying with pauses up to {MAX_BACKOFF:?}"
            ));
            self.next = FIRST_BACKOFF;
        }
        self.failures += 1;
        std::thread::sleep(self.next);
        self.next = (self.next * 2).min(MAX_BACKOFF);
    }

    fn succeeded(&mut self, name: &str) {
        if self.failures > 0 {
            log::info(format_args!(
                "{name} socket: accepting again after {} failed accepts",
                self.failures
            ));
            self.failures = 0;
        }
    }
}

/// One connection's place under the cap, given back on drop.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(count.clone())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}
