//! The two broker sockets. What a connection may ask is decided by the socket it arrived
//! on: the loopd side takes tool requests only, the admin side approvals, answers,
//! read-only queries and the full verification of the audit log (`audit_verify`). Peers, the connection cap and threads are `daemon::serve`'s; a
//! malformed frame gets a typed error and the connection is closed, the daemon serves on.

use std::convert::Infallible;
use std::sync::Arc;

use daemon::accept::Activity;
use daemon::conn::Conn;
use daemon::serve::{self, Policy};
use daemon::service::Halt;
use proto::{Envelope, Message};

use crate::Fatal;
use crate::broker::Broker;
use crate::sockets::admin::{self, AdminRequest};

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

/// How one side serves: its peer, and the broker's cap and deadlines.
pub fn policy(broker: &Broker, side: Side) -> Policy {
    let b = &broker.config.broker;
    Policy {
        name: side.name(),
        peers: vec![match side {
            Side::Loop => broker.config.peers.loopd.clone(),
            Side::Admin => broker.config.peers.admin.clone(),
        }],
        max_connections: b.max_connections,
        idle: b.idle_timeout,
        frame: b.frame_deadline,
    }
}

/// What serves each admitted connection on one side.
pub fn handler(
    broker: Arc<Broker>,
    side: Side,
    activity: Arc<Activity>,
    halt: Halt,
) -> impl Fn(Conn, &str) + Send + Sync + 'static {
    move |conn: Conn, who: &str| serve(&broker, side, conn, who, &activity, &halt)
}

/// Serves one connection until it closes, errs or idles out. A durable-state failure stops
/// the role (main exits 70; systemd restarts us and recovery runs): answering anything now
/// could acknowledge what is not on disk. It is reported while its request still counts as
/// in flight, so a drain under way cannot end, and the role return success, before it.
fn serve(broker: &Broker, side: Side, mut conn: Conn, who: &str, activity: &Activity, halt: &Halt) {
    let served: Result<(), Infallible> =
        serve::requests(&mut conn, side.name(), who, activity, |conn, env| {
            Ok(
                handle(broker, side, conn, env, who, activity).unwrap_or_else(|fatal| {
                    halt.stop(&format!("a request on the {} socket", side.name()), fatal);
                    false
                }),
            )
        });
    let Ok(()) = served;
}

/// Handles one request; `Ok(false)` closes the connection.
fn handle(
    broker: &Broker,
    side: Side,
    conn: &mut Conn,
    env: Envelope,
    who: &str,
    activity: &Activity,
) -> Result<bool, Fatal> {
    let id = env.id;
    let refused = match (side, env.msg) {
        // The whole chain, read while brokerd serves; ended early when brokerd stops.
        (Side::Admin, Message::AuditVerify(_)) => {
            let verified = crate::broker::audit_verify::verify(broker, &activity.stopping)?;
            let reply = Envelope::last(id, Message::AuditVerified(verified));
            return Ok(conn.write(&reply).is_ok());
        }
        (Side::Loop, Message::ToolRequest(req)) => {
            let mut alive = true;
            let requester = conn.handle().ok();
            broker.tool_request(id, &req, requester.as_ref(), &mut |frame| {
                if alive && conn.write(&frame).is_err() {
                    // loopd went away; the decision is audited and stands.
                    alive = false;
                }
            })?;
            return Ok(alive);
        }
        (Side::Admin, msg) => match AdminRequest::try_from(msg) {
            Ok(req) => {
                let reply = admin::reply(broker, req, who)?;
                return Ok(conn.write(&Envelope::last(id, reply)).is_ok());
            }
            Err(msg) => msg,
        },
        (Side::Loop, msg) => msg,
    };
    serve::forbid(conn, id, side.name(), who, refused.kind());
    Ok(false)
}
