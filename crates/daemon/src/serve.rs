//! Serving framed JSON: the shared accept loop with framed refusals and the socket's
//! deadlines, and the requests of one connection, each counted in flight in the
//! [`Activity`] that shutdown drains. What a connection may ask is the handler's business,
//! decided by the socket.

use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::Arc;
use std::time::Duration;

use proto::ErrorCode;

use crate::accept::{self, Activity, Admission, Refusal, Refuse};
use crate::conn::Conn;
use crate::log;
use config::Peer;

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

/// Accepts on `listener` until the process ends (the shared [`accept::accept_loop`]),
/// calling `handle(conn, who)` on a thread of its own for each admitted peer, with the
/// policy's deadlines; refusals are framed errors ([`Framed`]).
pub fn accept_loop<F>(
    listener: UnixListener,
    policy: Policy,
    activity: Arc<Activity>,
    handle: Arc<F>,
) where
    F: Fn(Conn, &str) + Send + Sync + 'static,
{
    let (idle, frame) = (policy.idle, policy.frame);
    let framed = Arc::new(move |stream, who: &str| handle(Conn::new(stream, idle, frame), who));
    accept::accept_loop(&listener, &policy.admission(), &activity, &Framed, &framed);
}

impl Policy {
    /// Who may connect and how many at once: what the accept loop enforces.
    pub fn admission(&self) -> Admission {
        Admission {
            name: self.name,
            peers: self.peers.clone(),
            max_connections: self.max_connections,
        }
    }
}

/// The framed roles' refusal (docs/decisions.md F10): one error frame of id 0, since no
/// request was read, written before closing; the client reads it even when its own request
/// could no longer be sent. Small enough for an empty socket buffer, so it never waits.
#[derive(Debug, Clone, Copy)]
pub struct Framed;

impl Refuse for Framed {
    fn refuse(&self, name: &str, stream: UnixStream, why: &Refusal<'_>) {
        let (code, detail) = match why {
            Refusal::Stopping => (
                ErrorCode::Unavailable,
                format!("the {name} socket is stopping: try again once it has restarted"),
            ),
            Refusal::Full { max } => (
                ErrorCode::Unavailable,
                format!(
                    "the {name} socket is at its limit of {max} connections: try again shortly"
                ),
            ),
            Refusal::NotAdmitted { who, admits } => (
                ErrorCode::Refused,
                format!(
                    "the {name} socket admits only {}; you are {who}",
                    admitted(admits)
                ),
            ),
            Refusal::Unidentified => (
                ErrorCode::Refused,
                format!("the {name} socket could not learn who you are (SO_PEERCRED)"),
            ),
        };
        refuse(stream, code, &detail);
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

/// The one test of this module that needs a private item (`refuse`, which writes the
/// framed refusal); the public behaviour is in `tests/daemon/serve.rs`.
#[cfg(test)]
mod tests {
    use proto::Message;
    use proto::approval::Empty;

    use super::*;
    use crate::conn::CallError;

    #[test]
    fn a_refusal_is_read_even_when_the_request_cannot_be_sent() {
        // The server wrote its refusal and closed before the client wrote: the client's write
        // fails (EPIPE), and the refusal is still what it reports.
        let (client, server) = UnixStream::pair().expect("pair");
        refuse(server, ErrorCode::Refused, "not you");
        let mut conn = Conn::new(client, Duration::from_secs(5), Duration::from_secs(5));
        let e = match conn.call(1, Message::GrantsQuery(Empty {}), |_| {}) {
            Err(CallError::Refused(e)) => e,
            other => panic!("not a refusal: {other:?}"),
        };
        assert_eq!((e.code, e.detail.as_str()), (ErrorCode::Refused, "not you"));
    }
}
