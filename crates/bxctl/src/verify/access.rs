//! The two sockets bxctl may use, for the checks: brokerd's admin side and loopd's chat side
//! (with brokerd's chat side, where the replay's messages are registered as the owner's).
//!
//! Both admit a peer by SO_PEERCRED against `peers.admin` and `peers.chat`, which under
//! systemd name the owner's groups. root is no member of them, so `sudo bxctl verify`
//! connects with that group as its effective group id, as `sudo -g GROUP` would: the
//! kernel records the credentials at `connect`, and the effective group goes back to root's
//! at once. Any other user connects as it is.
//!
//! Why a socket could not be used decides what the check says: nothing listening is the
//! deployment's fault (`FAIL`); a directory closed to this user, or a peer check that
//! refused it, is the caller's (`warn`, and the run exits 2).

use std::path::PathBuf;

use config::{Config, Peer};
use daemon::conn::{CallError, Conn};
use proto::{ErrorCode, Message};

use super::report::{Check, Part};
use crate::Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// brokerd's admin side (`peers.admin`).
    Admin,
    /// loopd's chat socket (`peers.chat`).
    Chat,
    /// brokerd's chat side, where the owner's words are registered (`peers.chat`).
    ChatBroker,
}

impl Side {
    fn server(self) -> &'static str {
        match self {
            Self::Admin | Self::ChatBroker => "brokerd",
            Self::Chat => "loopd",
        }
    }

    fn peers(self) -> &'static str {
        match self {
            Self::Admin => "admin",
            Self::Chat | Self::ChatBroker => "chat",
        }
    }

    fn path(self, config: &Config) -> PathBuf {
        match self {
            Self::Admin => config.sockets.admin_broker_sock(),
            Self::Chat => config.sockets.chat_loop_sock(),
            Self::ChatBroker => config.sockets.chat_broker_sock(),
        }
    }

    fn rule(self, config: &Config) -> Option<Peer> {
        match self {
            Self::Admin => Some(config.peers.admin.clone()),
            Self::Chat | Self::ChatBroker => config.peers.chat.clone(),
        }
    }
}

/// Why a side could not be used.
#[derive(Debug, Clone)]
pub enum Trouble {
    /// Nothing answers there: the stack (or under systemd its socket unit) is not up.
    Down { said: String, help: Option<String> },
    /// This user may not use it.
    Closed { said: String, help: Option<String> },
    /// The call broke, or the server answered with an error.
    Broke { said: String },
}

impl Trouble {
    /// bxctl's own words for `e`, split into the finding and its `help:` line.
    fn from_error(e: &Error, closed: bool) -> Self {
        let text = e.to_string();
        let (said, help) = match text.split_once("\nhelp: ") {
            Some((s, h)) => (s.to_owned(), Some(h.to_owned())),
            None => (text, None),
        };
        if closed {
            Self::Closed { said, help }
        } else {
            Self::Down { said, help }
        }
    }

    fn call(side: Side, e: CallError) -> Self {
        match e {
            CallError::Refused(refusal) if refusal.code == ErrorCode::Refused => Self::from_error(
                &Error::Refused {
                    server: side.server(),
                    peers: side.peers(),
                    refusal,
                },
                true,
            ),
            other => Self::Broke {
                said: format!("{}: {other}", side.server()),
            },
        }
    }
}

/// Runs `f` with `rule`'s group as the effective group id when bxctl runs as root and the
/// rule names a group; otherwise as it is.
pub fn as_peer<T>(rule: Option<&Peer>, f: impl FnOnce() -> T) -> T {
    use nix::unistd::{Group, Uid, getegid, setegid};
    let gid = match rule {
        Some(Peer::Group(name)) if Uid::effective().is_root() => {
            Group::from_name(name).ok().flatten().map(|g| g.gid)
        }
        _ => None,
    };
    let Some(gid) = gid else {
        return f();
    };
    let before = getegid();
    // A failed switch leaves root's group: the peer check then says so, in its words.
    let switched = setegid(gid).is_ok();
    let result = f();
    if switched {
        let _ = setegid(before);
    }
    result
}

/// A connection to `side`, made as [`as_peer`] says.
pub fn connect(config: &Config, side: Side) -> Result<Conn, Trouble> {
    let path = side.path(config);
    let rule = side.rule(config);
    as_peer(rule.as_ref(), || Conn::connect(&path)).map_err(|source| {
        let closed = source.kind() == std::io::ErrorKind::PermissionDenied;
        Trouble::from_error(
            &Error::Reach {
                server: side.server(),
                path: path.clone(),
                error: source,
            },
            closed,
        )
    })
}

/// One request to `side` and its final answer; an error answer is [`Trouble::Broke`].
pub fn call(config: &Config, side: Side, msg: Message) -> Result<Message, Trouble> {
    let mut conn = connect(config, side)?;
    let reply = conn
        .call(1, msg, |_| {})
        .map_err(|e| Trouble::call(side, e))?;
    match reply.msg {
        Message::Error(refusal) => Err(Trouble::Broke {
            said: format!(
                "{} answered {}: {}",
                side.server(),
                refusal.code.name(),
                refusal.detail
            ),
        }),
        other => Ok(other),
    }
}

/// A failed call's verdict for the check `check`: `FAIL` when the deployment does not
/// answer or broke, an unreached `warn` when this user may not ask.
pub fn judged(part: Part, check: &str, trouble: Trouble) -> Check {
    match trouble {
        Trouble::Down { said, help } => {
            let c = Check::fail(part, check, said);
            match help {
                Some(h) => c.help(h),
                None => c,
            }
        }
        Trouble::Closed { said, help } => {
            let c = Check::unreached(part, check, format!("not checked: {said}"));
            c.help(help.unwrap_or_else(|| {
                "run `sudo bxctl verify`, or bxctl as a member of the owner's admin and chat \
                 groups"
                    .to_owned()
            }))
        }
        Trouble::Broke { said } => Check::fail(part, check, said)
            .help("the role's log says more (under systemd: `journalctl -u boxmaker-brokerd -u boxmaker-loopd`)"),
    }
}

/// Runs `f` as the chat side's peer (brokerd's registration of the owner's words).
pub fn as_chat_peer<T>(config: &Config, f: impl FnOnce() -> T) -> T {
    as_peer(Side::ChatBroker.rule(config).as_ref(), f)
}
