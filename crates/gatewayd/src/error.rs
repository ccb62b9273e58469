//! Why gatewayd could not start or serve: one variant per thing that can go wrong, each with
//! what it was about. `main` prints it once and exits with its status
//! ([`daemon::exit::Status`]); each text prints what it wraps (docs/decisions.md F16).

use std::io;
use std::path::PathBuf;

use config::ConfigError;
use daemon::listen::ListenError;
use daemon::service::StartError;

use crate::state::StateError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The sockets systemd passed could not be taken, or gateway.sock not bound.
    #[error("{0}")]
    Listen(ListenError),
    #[error("{0}")]
    Config(ConfigError),
    /// The configuration has no `[gateway]` table.
    #[error(
        "{}: no [gateway] table: name the Mattermost server, owners and channel",
        config.display()
    )]
    NoGateway { config: PathBuf },
    /// `peers.broker` is not set: nobody would be admitted on gateway.sock.
    #[error(
        "{}: peers.broker is not set: name who may connect to gateway.sock",
        config.display()
    )]
    NoBrokerPeer { config: PathBuf },
    /// Neither `$CREDENTIALS_DIRECTORY` nor `gateway.token_file` says where the token is.
    #[error("no $CREDENTIALS_DIRECTORY and no gateway.token_file")]
    NoCredentials,
    #[error("the bot token {}: {error}", path.display())]
    Token { path: PathBuf, error: io::Error },
    /// `--check-config`: `gateway.token_file` is set but cannot be found (the token in it is
    /// read, and checked, only at start).
    #[error(
        "gateway.token_file {}: {error}: put the bot's token there, or remove \
         token_file to read the systemd credential gateway.token_credential",
        path.display()
    )]
    TokenFileMissing { path: PathBuf, error: io::Error },
    #[error("the bot token {} is empty", path.display())]
    EmptyToken { path: PathBuf },
    /// The durable state refuses the start.
    #[error("{0}")]
    State(StateError),
    #[error("{0}")]
    Start(StartError),
    /// `--check-config` could not say so on stdout.
    #[error("stdout: {0}")]
    Stdout(io::Error),
}

impl daemon::exit::Status for Error {
    /// 1 for every error (0 is success; clap's usage errors exit 2 before `run`). Every
    /// variant is listed, so a new one is given its status on purpose; the table is in
    /// `main.rs` and docs/architecture.md.
    fn exit_code(&self) -> u8 {
        match self {
            Self::Listen(_)
            | Self::Config(_)
            | Self::NoGateway { .. }
            | Self::NoBrokerPeer { .. }
            | Self::NoCredentials
            | Self::Token { .. }
            | Self::TokenFileMissing { .. }
            | Self::EmptyToken { .. }
            | Self::State(_)
            | Self::Start(_)
            | Self::Stdout(_) => 1,
        }
    }
}

impl From<ListenError> for Error {
    fn from(e: ListenError) -> Self {
        Self::Listen(e)
    }
}

impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Self {
        Self::Config(e)
    }
}

impl From<StateError> for Error {
    fn from(e: StateError) -> Self {
        Self::State(e)
    }
}

impl From<StartError> for Error {
    fn from(e: StartError) -> Self {
        Self::Start(e)
    }
}
