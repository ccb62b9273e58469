//! brokerd's loop side, `broker.sock` in the loop ↔ broker pair directory
//! (`sockets.loop_broker`), shared with loopd: tool requests, and the tools a chat request
//! may offer (`tools_query`). Each is served by the
//! broker (`Broker::tool_request`) while loopd's connection waits, and answered with the
//! decision, or the result; a `pending_approval` frame first when the owner is asked. Any
//! other kind is refused and the connection closed, brokerd serves on.

use daemon::conn::Conn;
use daemon::serve::{self, Policy};
use proto::{Envelope, Message};

use super::side::{self, Side};
use crate::Fatal;
use crate::broker::Broker;

/// Who may connect: loopd (`peers.loopd`).
pub fn policy(broker: &Broker) -> Policy {
    side::admitting(broker, Side::Loop, vec![broker.config.peers.loopd.clone()])
}

/// One tool request; `Ok(false)` closes the connection (loopd went away, or another kind).
pub fn handle(broker: &Broker, conn: &mut Conn, env: Envelope, who: &str) -> Result<bool, Fatal> {
    let id = env.id;
    match env.msg {
        Message::ToolRequest(req) => {
            let mut alive = true;
            let requester = conn.handle().ok();
            broker.tool_request(id, &req, requester.as_ref(), &mut |frame| {
                if alive && conn.write(&frame).is_err() {
                    // loopd went away; the decision is audited and stands.
                    alive = false;
                }
            })?;
            Ok(alive)
        }
        // What a chat request may offer: loopd builds its requests from it, and inferproxy
        // compares them with brokerd's own answer (docs/decisions.md W3).
        Message::ToolsQuery(_) => {
            let offered = Message::ToolsOffered(broker.pins.offered());
            Ok(conn.write(&Envelope::last(id, offered)).is_ok())
        }
        msg => {
            serve::forbid(conn, id, Side::Loop.name(), who, msg.kind());
            Ok(false)
        }
    }
}
