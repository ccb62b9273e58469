//! One listening side: its name, whether the configuration has it and where it listens,
//! who it admits beside its own peers (the broker's cap and deadlines), and the loop that
//! serves a connection's requests.

use std::convert::Infallible;
use std::path::PathBuf;

use config::{Config, Peer};
use daemon::accept::Activity;
use daemon::conn::Conn;
use daemon::serve::{self, Policy};
use daemon::service::Halt;
use proto::Envelope;

use crate::Fatal;
use crate::broker::Broker;

/// One of brokerd's listening sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// `sockets.loop_broker`, shared with loopd: tool requests only.
    Loop,
    /// `sockets.admin_broker`, the owner's admin group: approvals, answers, queries, the
    /// reload and the full verification of the audit log.
    Admin,
    /// `sockets.chat_broker`, the channels that chat as the owner: their owner messages.
    Chat,
    /// `witness.sock`, shared with inferproxy only: its witness reports.
    Witness,
    /// `sockets.jobs_broker`, the job runners: a run's registration, note and end.
    Jobs,
}

impl Side {
    /// Every side, in the order [`listen`] binds them.
    pub const ALL: [Self; 5] = [
        Self::Loop,
        Self::Admin,
        Self::Chat,
        Self::Witness,
        Self::Jobs,
    ];

    /// The socket's name in logs and refusals.
    pub fn name(self) -> &'static str {
        match self {
            Self::Loop => "loop",
            Self::Admin => "admin",
            Self::Chat => "chat",
            Self::Witness => "witness",
            Self::Jobs => "jobs",
        }
    }

    /// Whether the configuration has the side: the chat side with a channel that may chat
    /// as the owner (`peers.chat`, `peers.gateway`), the jobs side with a job; the others
    /// always.
    pub(super) fn enabled(self, config: &Config) -> bool {
        match self {
            Self::Chat => config.peers.chat.is_some() || config.peers.gateway.is_some(),
            Self::Jobs => !config.jobs.is_empty(),
            Self::Loop | Self::Admin | Self::Witness => true,
        }
    }

    pub(super) fn path(self, config: &Config) -> PathBuf {
        let s = &config.sockets;
        match self {
            Self::Loop => s.loop_broker_sock(),
            Self::Admin => s.admin_broker_sock(),
            Self::Chat => s.chat_broker_sock(),
            Self::Witness => s.infer_broker_sock(),
            Self::Jobs => s.jobs_broker_sock(),
        }
    }
}

/// A side's policy: `peers`, and the broker's cap and deadlines.
pub(super) fn admitting(broker: &Broker, side: Side, peers: Vec<Peer>) -> Policy {
    let b = &broker.config.broker;
    Policy {
        name: side.name(),
        peers,
        max_connections: b.max_connections,
        idle: b.idle_timeout,
        frame: b.frame_deadline,
    }
}

/// Serves one connection until it closes, errs or idles out, handing each request to
/// `handle` (`Ok(false)` closes the connection). A durable-state failure stops the role
/// (main exits 70; systemd restarts brokerd and recovery runs): answering anything now could
/// acknowledge what is not on disk. It is reported while its request still counts as in
/// flight, so a drain under way cannot end, and the role return success, before it.
pub(super) fn requests(
    side: Side,
    conn: &mut Conn,
    who: &str,
    activity: &Activity,
    halt: &Halt,
    mut handle: impl FnMut(&mut Conn, Envelope) -> Result<bool, Fatal>,
) {
    // inferproxy's requests are its reports.
    let what = if side == Side::Witness {
        "a report"
    } else {
        "a request"
    };
    let served: Result<(), Infallible> =
        serve::requests(conn, side.name(), who, activity, |conn, env| {
            Ok(handle(conn, env).unwrap_or_else(|fatal| {
                halt.stop(&format!("{what} on the {} socket", side.name()), fatal);
                false
            }))
        });
    let Ok(()) = served;
}
