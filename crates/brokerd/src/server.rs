//! The two broker sockets. What a connection may ask is decided by the socket it arrived
//! on: the loopd side takes tool requests only, the admin side approvals, answers and
//! read-only queries. Every peer is checked with SO_PEERCRED; one thread per connection;
//! a malformed frame gets a typed error and the connection is closed, the daemon serves on.

use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use daemon::config::Peer;
use daemon::conn::{self, Conn};
use daemon::{log, peer};
use proto::{Envelope, ErrorCode, FrameError, Message, ReadError};

use crate::broker::{Broker, Fatal};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Shared with loopd: tool requests only.
    Loop,
    /// Shared with the owner's admin group: approvals, answers, queries.
    Admin,
}

impl Side {
    pub fn name(self) -> &'static str {
        match self {
            Self::Loop => "loop",
            Self::Admin => "admin",
        }
    }
}

/// Counts shared by the accept loops and the main thread.
#[derive(Debug, Default)]
pub struct Activity {
    connections: AtomicUsize,
    /// Requests being served now; shutdown waits for these to finish their writes.
    pub busy: AtomicUsize,
    pub stopping: AtomicBool,
}

/// Accepts connections on `listener` until the process ends.
pub fn accept_loop(
    broker: Arc<Broker>,
    side: Side,
    listener: UnixListener,
    activity: Arc<Activity>,
) {
    let rule = match side {
        Side::Loop => broker.config.peers.loopd.clone(),
        Side::Admin => broker.config.peers.admin.clone(),
    };
    for stream in listener.incoming() {
        let stream = match stream {
            Ok(s) => s,
            Err(e) => {
                log::warn(format_args!("{} socket: accept: {e}", side.name()));
                continue;
            }
        };
        if activity.stopping.load(Ordering::SeqCst) {
            refuse(stream, ErrorCode::Refused, "brokerd is stopping");
            continue;
        }
        let max = broker.config.broker.max_connections;
        if activity.connections.load(Ordering::SeqCst) >= max {
            log::warn(format_args!(
                "{} socket: at {max} connections, refusing one",
                side.name()
            ));
            refuse(stream, ErrorCode::Refused, "too many connections");
            continue;
        }
        let who = match admitted(&stream, &rule) {
            Ok(who) => who,
            Err(why) => {
                log::warn(format_args!("{} socket: refused {why}", side.name()));
                refuse(stream, ErrorCode::Refused, "this socket does not admit you");
                continue;
            }
        };
        activity.connections.fetch_add(1, Ordering::SeqCst);
        let (broker, activity) = (broker.clone(), activity.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("{}-conn", side.name()))
            .spawn(move || {
                let outcome = serve(&broker, side, stream, &who, &activity);
                activity.connections.fetch_sub(1, Ordering::SeqCst);
                if let Err(Fatal(why)) = outcome {
                    // Durable state can no longer be written: answering anything now could
                    // acknowledge what is not on disk. Stop; systemd restarts us and
                    // recovery runs at start.
                    log::error(format_args!("fatal: {why}; stopping"));
                    std::process::exit(70);
                }
            });
        if let Err(e) = spawned {
            log::error(format_args!("cannot start a connection thread: {e}"));
        }
    }
}

fn admitted(stream: &UnixStream, rule: &Peer) -> Result<String, String> {
    let who = peer::identify(stream).map_err(|e| format!("a peer (SO_PEERCRED: {e})"))?;
    if peer::admits(rule, &who) {
        Ok(who.to_string())
    } else {
        Err(format!("{who} (pid {}), not {rule:?}", who.pid))
    }
}

fn refuse(stream: UnixStream, code: ErrorCode, detail: &str) {
    Conn::new(stream, Default::default(), Default::default()).refuse(0, code, detail);
}

/// Serves one connection until it closes, errs or idles out.
fn serve(
    broker: &Broker,
    side: Side,
    stream: UnixStream,
    who: &str,
    activity: &Activity,
) -> Result<(), Fatal> {
    let b = &broker.config.broker;
    let mut conn = Conn::new(stream, b.idle_timeout, b.frame_deadline);
    loop {
        let env = match conn.read() {
            Ok(env) => env,
            Err(ReadError::Frame(FrameError::Closed)) => return Ok(()),
            Err(e) if conn::is_timeout(&e) => return Ok(()),
            Err(e) => {
                log::warn(format_args!("{} socket: {who}: {e}", side.name()));
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
        activity.busy.fetch_add(1, Ordering::SeqCst);
        let keep = handle(broker, side, &mut conn, env, who);
        activity.busy.fetch_sub(1, Ordering::SeqCst);
        if !keep? {
            return Ok(());
        }
    }
}

/// Handles one request; `Ok(false)` closes the connection.
fn handle(
    broker: &Broker,
    side: Side,
    conn: &mut Conn,
    env: Envelope,
    who: &str,
) -> Result<bool, Fatal> {
    let id = env.id;
    match (side, env.msg) {
        (Side::Loop, Message::ToolRequest(req)) => {
            let mut alive = true;
            broker.tool_request(id, &req, &mut |frame| {
                if alive && conn.write(&frame).is_err() {
                    // loopd went away; the decision is audited and stands.
                    alive = false;
                }
            })?;
            Ok(alive)
        }
        (Side::Admin, msg @ Message::ToolRequest(_)) | (Side::Loop, msg) => {
            log::warn(format_args!(
                "{} socket: {who} sent {}, which this socket does not accept",
                side.name(),
                msg.kind()
            ));
            conn.refuse(
                id,
                ErrorCode::ForbiddenKind,
                &format!(
                    "{} is not accepted on the {} socket",
                    msg.kind(),
                    side.name()
                ),
            );
            Ok(false)
        }
        (Side::Admin, msg) => {
            let reply = broker.admin(msg, who)?;
            let close = matches!(reply, Message::Error(_));
            Ok(conn.write(&Envelope::last(id, reply)).is_ok() && !close)
        }
    }
}
