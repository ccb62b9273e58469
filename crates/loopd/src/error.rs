//! Why loopd did not start or stopped serving: one variant per step of the start-up, each
//! with what it was working on. `main` prints it once and exits with its status
//! ([`daemon::exit::Status`]). Each text is whole: it prints what it wraps, which
//! `source()` does not return (docs/decisions.md F16).
//! A turn that cannot run is a `TurnError`, answered on its connection; loopd goes on.

use std::io;
use std::path::PathBuf;

use config::ConfigError;
use daemon::listen::ListenError;
use daemon::service::StartError;

use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The sockets systemd passed cannot be taken.
    #[error("sockets from systemd: {0}")]
    Inherit(ListenError),
    /// The configuration cannot be read or is not valid.
    #[error("configuration: {0}")]
    Config(ConfigError),
    /// The configuration names nobody who may chat (`peers.chat`).
    #[error(
        "configuration: {}: peers.chat is not set: name who may chat with loopd",
        config.display()
    )]
    NoChatPeer { config: PathBuf },
    /// `--check-config` could not write its answer.
    #[error("cannot write to stdout: {0}")]
    Output(io::Error),
    /// The session store (`home/sessions`) cannot be opened.
    #[error("session store: {0}")]
    Store(StoreError),
    /// loop.sock cannot be taken or bound.
    #[error("loop.sock: {0}")]
    Listen(ListenError),
    /// The service could not start serving.
    #[error("{0}")]
    Start(StartError),
}

impl daemon::exit::Status for Error {
    /// Every variant is listed, so a new one is given its status on purpose: 1, loopd did
    /// not start (the table is in `main.rs`).
    fn exit_code(&self) -> u8 {
        match self {
            Self::Inherit(_)
            | Self::Config(_)
            | Self::NoChatPeer { .. }
            | Self::Output(_)
            | Self::Store(_)
            | Self::Listen(_)
            | Self::Start(_) => 1,
        }
    }
}

/// Why a turn could not run at all (not a model error: those end the turn in its reply).
/// The owner's client gets only "see loopd's log"; the log gets this text.
#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    /// `chat_send` named a session that is not on disk.
    #[error("no session {0}")]
    NoSession(proto::SessionId),
    /// The session log could not be read or written.
    #[error("session log: {0}")]
    Store(StoreError),
}

impl From<StoreError> for TurnError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}
