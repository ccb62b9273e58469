//! brokerd's chat side, `broker.sock` in the chat ↔ broker pair directory
//! (`sockets.chat_broker`; docs/decisions.md X4, an extension of the brief's deviation 2 as
//! J1 is): the channels that hand the owner's words to loopd (`bxctl chat`, gatewayd)
//! register each message's digest here first. It takes `owner_message` only, from the
//! peers loopd's chat socket admits (`peers.chat`, `peers.gateway`): whoever may chat with
//! loopd as the owner may say what the owner said. Nothing else is decided here.

use std::convert::Infallible;

use daemon::accept::Activity;
use daemon::conn::Conn;
use daemon::serve::{self, Policy};
use daemon::service::Halt;
use proto::{Envelope, Message};

use crate::broker::Broker;

/// The socket's name in logs and refusals.
pub const NAME: &str = "chat";

/// Who may connect: those who may chat with loopd.
pub fn policy(broker: &Broker) -> Policy {
    let c = &broker.config;
    Policy {
        name: NAME,
        peers: c
            .peers
            .chat
            .iter()
            .chain(c.peers.gateway.iter())
            .cloned()
            .collect(),
        max_connections: c.broker.max_connections,
        idle: c.broker.idle_timeout,
        frame: c.broker.frame_deadline,
    }
}

/// Serves each admitted channel (`start::framed` calls it for each).
pub fn serve(broker: &Broker, mut conn: Conn, who: &str, activity: &Activity, halt: &Halt) {
    let served: Result<(), Infallible> =
        serve::requests(&mut conn, NAME, who, activity, |conn, env| {
            let id = env.id;
            Ok(match env.msg {
                Message::OwnerMessage(m) => match broker.register_owner(m.digest) {
                    Ok(()) => conn
                        .write(&Envelope::last(id, Message::OwnerRegistered(m)))
                        .is_ok(),
                    Err(fatal) => {
                        halt.stop("a request on the chat socket", fatal);
                        false
                    }
                },
                msg => {
                    serve::forbid(conn, id, NAME, who, msg.kind());
                    false
                }
            })
        });
    let Ok(()) = served;
}
