//! Why bxctl could not do what was asked: one variant per thing that can go wrong, each
//! with what it was about. `main` prints it once, as `bxctl: …`, and exits with
//! [`Error::exit_code`] (2; 1 is for a thing checked and found bad, which is no error).
//! Text that comes in part from a peer (a refusal's detail, a decode error quoting a frame)
//! is shown as one inert line.

use std::fmt;
use std::io;
use std::path::PathBuf;

use daemon::config::ConfigError;
use daemon::conn::CallError;
use proto::{ErrorCode, WireError};

use crate::dev::DevError;

#[derive(Debug)]
pub enum Error {
    Config(ConfigError),
    /// Writing what bxctl prints.
    Output(io::Error),
    /// A session id given on the command line.
    SessionId(proto::InvalidValue),
    /// A file or directory bxctl reads.
    File {
        path: PathBuf,
        source: io::Error,
    },
    /// `server`'s socket at `path` could not be connected to.
    Reach {
        server: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    /// `server` refused the connection; `peers.{peers}` decides who may connect.
    Refused {
        server: &'static str,
        peers: &'static str,
        refusal: WireError,
    },
    /// The call broke: a frame not sent, not read or not understood.
    Call(CallError),
    /// `server` answered the request with an error.
    Answered {
        server: &'static str,
        refusal: WireError,
    },
    /// An answer of a kind this request never gets.
    Unexpected {
        kind: &'static str,
    },
    /// More approvals wait than one listing carries.
    Omitted {
        omitted: u32,
    },
    /// The chat prompt.
    Prompt(rustyline::error::ReadlineError),
    /// `bxctl dev`.
    Dev(DevError),
}

impl Error {
    /// The status `main` exits with: 2, bxctl could not do what was asked.
    pub fn exit_code(&self) -> u8 {
        2
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(e) => e.fmt(f),
            Self::Output(e) => e.fmt(f),
            Self::SessionId(e) => e.fmt(f),
            Self::File { path, source } => write!(f, "{}: {source}", path.display()),
            Self::Reach {
                server,
                path,
                source,
            } => write!(f, "cannot reach {server} at {}: {source}", path.display()),
            Self::Refused {
                server,
                peers,
                refusal,
            } => {
                let help = match refusal.code {
                    ErrorCode::Refused => format!(
                        "run bxctl as the user, or as a member of the group, that `peers.{peers}` \
                         in the configuration names (after joining a group, log in again)"
                    ),
                    ErrorCode::Unavailable => "try again in a moment".to_owned(),
                    _ => format!("{server}'s log says more"),
                };
                // The detail is the server's, naming users and groups: one inert line.
                write!(
                    f,
                    "{server} refused the connection ({}): {}\nhelp: {help}",
                    refusal.code.name(),
                    inert::line(&refusal.detail)
                )
            }
            Self::Call(e) => f.write_str(&inert::line(&e.to_string())),
            Self::Answered { server, refusal } => write!(
                f,
                "{server} refused: {:?}: {}",
                refusal.code,
                inert::line(&refusal.detail)
            ),
            Self::Unexpected { kind } => write!(f, "unexpected answer {kind}"),
            Self::Omitted { omitted } => write!(
                f,
                "{omitted} more approvals wait than fit in one answer; answer some and list again"
            ),
            Self::Prompt(e) => e.fmt(f),
            Self::Dev(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Config(e) => Some(e),
            Self::Output(e) | Self::File { source: e, .. } | Self::Reach { source: e, .. } => {
                Some(e)
            }
            Self::SessionId(e) => Some(e),
            Self::Call(e) => Some(e),
            Self::Prompt(e) => Some(e),
            Self::Dev(e) => Some(e),
            Self::Refused { .. }
            | Self::Answered { .. }
            | Self::Unexpected { .. }
            | Self::Omitted { .. } => None,
        }
    }
}

impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Self {
        Self::Config(e)
    }
}

impl From<DevError> for Error {
    fn from(e: DevError) -> Self {
        Self::Dev(e)
    }
}

/// A failed call to `server` (brokerd, loopd), for the owner: a connection the server
/// refused says so in the server's words, with a `help:` line naming the setting
/// (`peers.{peers}`) that decides who may connect.
pub(crate) fn call_failed(
    server: &'static str,
    peers: &'static str,
) -> impl Fn(CallError) -> Error {
    move |e| match e {
        CallError::Refused(refusal) => Error::Refused {
            server,
            peers,
            refusal,
        },
        other => Error::Call(other),
    }
}

/// What `server` answered when it is an error, else the answer.
pub(crate) fn answered(server: &'static str, msg: proto::Message) -> Result<proto::Message, Error> {
    match msg {
        proto::Message::Error(refusal) => Err(Error::Answered { server, refusal }),
        other => Ok(other),
    }
}

/// An answer of a kind the request never gets.
pub(crate) fn unexpected(msg: &proto::Message) -> Error {
    Error::Unexpected { kind: msg.kind() }
}
