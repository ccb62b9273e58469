//! Accepting connections the same way in every role: a thread per connection up to a cap,
//! every peer checked with SO_PEERCRED against the socket's rule, typed refusals for the
//! rest. What a connection may ask is the handler's business, decided by the socket.

use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use proto::ErrorCode;

use crate::config::Peer;
use crate::conn::Conn;
use crate::{log, peer};

/// How one socket serves.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The socket's name in logs (`loop`, `admin`, `chat`, …).
    pub name: &'static str,
    /// Who may connect: any one of these.
    pub peers: Vec<Peer>,
    pub max_connections: usize,
    /// Idle time allowed between frames, and the deadline for one frame once started.
    pub idle: Duration,
    pub frame: Duration,
}

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

/// Accepts on `listener` until the process ends, calling `handle(conn, who)` on a thread
/// of its own for each admitted peer; `who` is the peer as the kernel names it.
pub fn accept_loop<F>(
    listener: UnixListener,
    policy: Policy,
    activity: Arc<Activity>,
    handle: Arc<F>,
) where
    F: Fn(Conn, &str) + Send + Sync + 'static,
{
    let name = policy.name;
    // Each socket has its own cap: one side filling its connections (a compromised loopd,
    // say) never locks the owner out of the other.
    let connections = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        let stream = match stream {
            Ok(s) => s,
            Err(e) => {
                log::warn(format_args!("{name} socket: accept: {e}"));
                continue;
            }
        };
        if activity.stopping.load(Ordering::SeqCst) {
            refuse(
                stream,
                ErrorCode::Unavailable,
                &format!("the {name} socket is stopping: try again once it has restarted"),
            );
            continue;
        }
        if connections.load(Ordering::SeqCst) >= policy.max_connections {
            log::warn(format_args!(
                "{name} socket: at {} connections, refusing one",
                policy.max_connections
            ));
            refuse(
                stream,
                ErrorCode::Unavailable,
                &format!(
                    "the {name} socket is at its limit of {} connections: try again shortly",
                    policy.max_connections
                ),
            );
            continue;
        }
        let who = match peer::identify(&stream) {
            Ok(who) if policy.peers.iter().any(|p| peer::admits(p, &who)) => who.to_string(),
            Ok(who) => {
                log::warn(format_args!(
                    "{name} socket: refused {who} (pid {}), not one of {:?}",
                    who.pid, policy.peers
                ));
                refuse(
                    stream,
                    ErrorCode::Refused,
                    &format!(
                        "the {name} socket admits only {}; you are {who}",
                        admitted(&policy.peers)
                    ),
                );
                continue;
            }
            Err(e) => {
                log::warn(format_args!("{name} socket: SO_PEERCRED: {e}"));
                refuse(
                    stream,
                    ErrorCode::Refused,
                    &format!("the {name} socket could not learn who you are (SO_PEERCRED)"),
                );
                continue;
            }
        };
        let conn = Conn::new(stream, policy.idle, policy.frame);
        let slot = Slot::take(&connections);
        let handle = handle.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("{name}-conn"))
            .spawn(move || {
                // Released when the thread ends, even by a panic.
                let _slot = slot;
                handle(conn, &who);
            });
        if let Err(e) = spawned {
            // The closure, and the slot in it, were dropped with the error.
            log::error(format_args!("{name} socket: cannot start a thread: {e}"));
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

/// Refuses a connection before reading anything from it: the refusal has id 0 (no request
/// was read), and the client reads it even when its own request could no longer be sent.
fn refuse(stream: UnixStream, code: ErrorCode, detail: &str) {
    Conn::new(stream, Duration::ZERO, Duration::ZERO).refuse(0, code, detail);
}

/// `user a or group b`: who a socket admits, for its refusals.
fn admitted(peers: &[Peer]) -> String {
    let names: Vec<String> = peers.iter().map(ToString::to_string).collect();
    names.join(" or ")
}

/// Serves one connection's requests until it closes, errs or idles out: each request (a
/// single final frame) goes to `handle`, which answers it on the connection and returns
/// whether to go on. A malformed frame gets a typed error and closes the connection.
/// `name` and `who` are for the log; `activity` counts each request while it is handled.
pub fn requests<E>(
    conn: &mut Conn,
    name: &str,
    who: &str,
    activity: &Activity,
    mut handle: impl FnMut(&mut Conn, proto::Envelope) -> Result<bool, E>,
) -> Result<(), E> {
    use proto::{FrameError, ReadError};
    loop {
        let env = match conn.read() {
            Ok(env) => env,
            Err(ReadError::Frame(FrameError::Closed)) => return Ok(()),
            Err(e) if crate::conn::is_timeout(&e) => return Ok(()),
            Err(e) => {
                log::warn(format_args!("{name} socket: {who}: {e}"));
                conn.refuse(e.id().unwrap_or(0), e.code(), &e.to_string());
                return Ok(());
            }
        };
        if !env.r#final {
            conn.refuse(
                env.id,
                ErrorCode::BadMessage,
                "a request is a single final frame",
            );
            return Ok(());
        }
        let _busy = activity.busy();
        if !handle(conn, env)? {
            return Ok(());
        }
    }
}

/// Refuses a request of a kind the socket `name` does not take, and logs it; the caller
/// then closes the connection.
pub fn forbid(conn: &mut Conn, id: u64, name: &str, who: &str, kind: &str) {
    log::warn(format_args!(
        "{name} socket: {who} sent {kind}, which this socket does not accept"
    ));
    conn.refuse(
        id,
        ErrorCode::ForbiddenKind,
        &format!("{kind} is not accepted on the {name} socket"),
    );
}

#[cfg(test)]
#[path = "serve_tests.rs"]
mod tests;
