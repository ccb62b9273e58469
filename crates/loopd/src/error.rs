//! Why loopd did not start or stopped serving: one variant per step of the start-up, each
//! with what it was working on. `main` prints it once and maps it to an exit status.
//! A turn that cannot run is a `TurnError`, answered on its connection; loopd goes on.

use std::fmt;
use std::io;
use std::path::PathBuf;

use config::ConfigError;
use daemon::listen::ListenError;
use daemon::service::StartError;

use crate::store::StoreError;

#[derive(Debug)]
pub enum Error {
    /// The sockets systemd passed cannot be taken.
    Inherit(ListenError),
    /// The configuration cannot be read or is not valid.
    Config(ConfigError),
    /// The configuration names nobody who may chat (`peers.chat`).
    NoChatPeer { config: PathBuf },
    /// `--check-config` could not write its answer.
    Output(io::Error),
    /// The session store (`home/sessions`) cannot be opened.
    Store(StoreError),
    /// loop.sock cannot be taken or bound.
    Listen(ListenError),
    /// The service could not start serving.
    Start(StartError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Inherit(e) => write!(f, "sockets from systemd: {e}"),
            Self::Config(e) => write!(f, "configuration: {e}"),
            Self::NoChatPeer { config } => write!(
                f,
                "configuration: {}: peers.chat is not set: name who may chat with loopd",
                config.display()
            ),
            Self::Output(e) => write!(f, "cannot write to stdout: {e}"),
            Self::Store(e) => write!(f, "session store: {e}"),
            Self::Listen(e) => write!(f, "loop.sock: {e}"),
            Self::Start(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Inherit(e) | Self::Listen(e) => Some(e),
            Self::Config(e) => Some(e),
            Self::NoChatPeer { .. } => None,
            Self::Output(e) => Some(e),
            Self::Store(e) => Some(e),
            Self::Start(e) => Some(e),
        }
    }
}

/// Why a turn could not run at all (not a model error: those end the turn in its reply).
/// The owner's client gets only "see loopd's log"; the log gets this text.
#[derive(Debug)]
pub enum TurnError {
    /// `chat_send` named a session that is not on disk.
    NoSession(proto::SessionId),
    /// The session log could not be read or written.
    Store(StoreError),
}

impl fmt::Display for TurnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoSession(id) => write!(f, "no session {id}"),
            Self::Store(e) => write!(f, "session log: {e}"),
        }
    }
}

impl std::error::Error for TurnError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::NoSession(_) => None,
            Self::Store(e) => Some(e),
        }
    }
}

impl From<StoreError> for TurnError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}
