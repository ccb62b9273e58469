//! brokerd's chat side, `broker.sock` in the chat ↔ broker pair directory
//! (`sockets.chat_broker`; docs/decisions.md X4, an extension of the brief's deviation 2 as
//! J1 is): the channels that hand the owner's words to loopd (`bxctl chat`, gatewayd)
//! register each message's digest here first. It takes `owner_message` only, from the
//! peers loopd's chat socket admits (`peers.chat`, `peers.gateway`): whoever may chat with
//! loopd as the owner may say what the owner said. Nothing else is decided here.

use daemon::conn::Conn;
use daemon::serve::{self, Policy};
use proto::{Envelope, Message};

use super::side::{self, Side};
use crate::Fatal;
use crate::broker::Broker;

/// Who may connect: those who may chat with loopd.
pub fn policy(broker: &Broker) -> Policy {
    let peers = &broker.config.peers;
    let chatting = peers.chat.iter().chain(peers.gateway.iter());
    side::admitting(broker, Side::Chat, chatting.cloned().collect())
}

/// One request of a channel: its owner message, registered before it is acknowledged.
pub fn handle(broker: &Broker, conn: &mut Conn, env: Envelope, who: &str) -> Result<bool, Fatal> {
    let id = env.id;
    Ok(match env.msg {
        Message::OwnerMessage(m) => {
            broker.register_owner(m.digest)?;
            conn.write(&Envelope::last(id, Message::OwnerRegistered(m)))
                .is_ok()
        }
        msg => {
            serve::forbid(conn, id, Side::Chat.name(), who, msg.kind());
            false
        }
    })
}
