//! Why gatewayd could not start or serve: one variant per thing that can go wrong, each with
//! what it was about. `main` prints it once and exits with [`Error::exit_code`].

use std::fmt;
use std::io;
use std::path::PathBuf;

use config::ConfigError;
use daemon::listen::ListenError;
use daemon::service::StartError;

use crate::state::StateError;

#[derive(Debug)]
pub enum Error {
    /// The sockets systemd passed could not be taken, or gateway.sock not bound.
    Listen(ListenError),
    Config(ConfigError),
    /// The configuration has no `[gateway]` table.
    NoGateway {
        config: PathBuf,
    },
    /// `peers.broker` is not set: nobody would be admitted on gateway.sock.
    NoBrokerPeer {
        config: PathBuf,
    },
    /// Neither `$CREDENTIALS_DIRECTORY` nor `gateway.token_file` says where the token is.
    NoCredentials,
    Token {
        path: PathBuf,
        source: io::Error,
    },
    /// `--check-config`: `gateway.token_file` is set but cannot be found (the token in it is
    /// read, and checked, only at start).
    TokenFileMissing {
        path: PathBuf,
        source: io::Error,
    },
    EmptyToken {
        path: PathBuf,
    },
    /// The durable state refuses the start.
    State(StateError),
    Start(StartError),
    /// `--check-config` could not say so on stdout.
    Stdout(io::Error),
}

impl Error {
    /// The exit status `main` ends with: 1 for every error (0 is success; clap's usage
    /// errors exit 2 before `run`). docs/gateway.md lists them.
    pub fn exit_code(&self) -> u8 {
        1
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Listen(e) => e.fmt(f),
            Self::Config(e) => e.fmt(f),
            Self::NoGateway { config } => write!(
                f,
                "{}: no [gateway] table: name the Mattermost server, owners and channel",
                config.display()
            ),
            Self::NoBrokerPeer { config } => write!(
                f,
                "{}: peers.broker is not set: name who may connect to gateway.sock",
                config.display()
            ),
            Self::NoCredentials => {
                f.write_str("no $CREDENTIALS_DIRECTORY and no gateway.token_file")
            }
            Self::Token { path, source } => {
                write!(f, "the bot token {}: {source}", path.display())
            }
            Self::EmptyToken { path } => write!(f, "the bot token {} is empty", path.display()),
            Self::TokenFileMissing { path, source } => write!(
                f,
                "gateway.token_file {}: {source}: put the bot's token there, or remove \
                 token_file to read the systemd credential gateway.token_credential",
                path.display()
            ),
            Self::State(e) => e.fmt(f),
            Self::Start(e) => e.fmt(f),
            Self::Stdout(e) => write!(f, "stdout: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Listen(e) => Some(e),
            Self::Config(e) => Some(e),
            Self::Token { source, .. }
            | Self::TokenFileMissing { source, .. }
            | Self::Stdout(source) => Some(source),
            Self::State(e) => Some(e),
            Self::Start(e) => Some(e),
            Self::NoGateway { .. }
            | Self::NoBrokerPeer { .. }
            | Self::NoCredentials
            | Self::EmptyToken { .. } => None,
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
