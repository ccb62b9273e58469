//! Why brokerd could not start, or stopped serving, and the exit status each gives: `main`
//! prints the error once and exits with its status (`daemon::exit`; the table is in
//! `main.rs`). Each variant's text is whole: it prints what it wraps (docs/decisions.md
//! F16), and names the file, socket or grant a person needs to act on.

use std::io;

use config::ConfigError;
use daemon::listen::ListenError;
use daemon::service::StartError;
use grants::GrantsError;

use crate::Fatal;
use crate::audit::AuditError;
use crate::context::accounting::LogError;
use crate::context::witness::StoreError;
use crate::jobs::JobGrantError;
use crate::notes::NoteError;
use crate::run::programs::HandsError;
use crate::run::tool_spec::UnitError;
use crate::sessions::StateError;

/// The exit status when brokerd could not start (or a one-shot mode failed).
pub const EXIT_FAILURE: u8 = 1;
/// The exit status when durable state failed while serving (docs/decisions.md B10): systemd
/// restarts brokerd on it, and the start recovers the audit log.
pub const EXIT_FATAL: u8 = 70;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The sockets systemd passed could not be taken.
    #[error("{0}")]
    Inherit(ListenError),
    /// The configuration file could not be read or is not valid.
    #[error("{0}")]
    Config(ConfigError),
    /// A grant file could not be read or is not valid.
    #[error("{0}")]
    Grants(GrantsError),
    /// A job grant could not work with the configuration (an unknown job, an `ask` with no
    /// gateway).
    #[error("{0}")]
    JobGrants(JobGrantError),
    /// The hands' configuration, or a grant with it: a program not configured, a write of
    /// brokerd's own files, no hands user, a systemd without `PrivatePIDs=`.
    #[error("{0}")]
    Hands(HandsError),
    /// `broker.consult.url` is not a URL brokerd's URL rules take (http or https, a host, no
    /// user name): every consult would fail at its call, so the start fails instead.
    #[error("broker.consult.url: {0}")]
    ConsultUrl(grants::constraints::UrlError),
    /// `--print-tool-unit` has no unit to print for the grant.
    #[error("{0}")]
    ToolUnit(UnitError),
    /// `--flows` met a grant of a tool the analysis cannot make a call of.
    #[error("{0}")]
    Flows(crate::policy::flows::UnknownTool),
    /// What `--check-config`, `--flows` or `--print-tool-unit` prints could not be written.
    #[error("cannot write to stdout: {0}")]
    Stdout(io::Error),
    /// The audit log could not be opened, or its chain does not verify.
    #[error("{0}")]
    AuditOpen(AuditError),
    /// The session state could not be read.
    #[error("{0}")]
    Sessions(StateError),
    /// The notes directory or brokerd's record of it could not be made ready.
    #[error("{}", .0.for_owner())]
    Notes(NoteError),
    /// The accounting could not be opened or read.
    #[error("{0}")]
    Accounting(LogError),
    /// The grants brokerd starts with could not be audited.
    #[error("{0}")]
    FirstSnapshot(Fatal),
    /// One of brokerd's listening sides (`sockets::Side::name`) could not be taken or bound.
    #[error("{error}")]
    Listen {
        socket: &'static str,
        error: ListenError,
    },
    /// The configuration names no `peers.infer`: no witness, so no call could ever run.
    #[error(
        "peers.infer is not set: brokerd runs only calls inferproxy witnessed, and admits \
         inferproxy on witness.sock by it"
    )]
    NoInferPeer,
    /// An MCP server's pin file does not read.
    #[error("{0}")]
    Pins(crate::pins::PinsError),
    /// The witness store could not be opened or read back.
    #[error("witness store: {0}")]
    Witness(StoreError),
    /// The start-up could not watch signals or start a thread.
    #[error("{0}")]
    Service(StartError),
    /// Serving stopped: durable state failed under `by` (a socket's request, the gateway
    /// link, the grants reload), so nothing more may be answered.
    #[error("fatal ({by}): {fatal}; stopping")]
    Stopped { by: String, fatal: Fatal },
}

impl daemon::exit::Status for Error {
    /// [`EXIT_FATAL`] once serving stopped on durable state, [`EXIT_FAILURE`] for everything
    /// that kept brokerd from starting.
    fn exit_code(&self) -> u8 {
        match self {
            Self::Stopped { .. } => EXIT_FATAL,
            Self::Inherit(_)
            | Self::Config(_)
            | Self::Grants(_)
            | Self::JobGrants(_)
            | Self::Hands(_)
            | Self::ConsultUrl(_)
            | Self::ToolUnit(_)
            | Self::Flows(_)
            | Self::Stdout(_)
            | Self::AuditOpen(_)
            | Self::Sessions(_)
            | Self::Notes(_)
            | Self::Accounting(_)
            | Self::FirstSnapshot(_)
            | Self::Listen { .. }
            | Self::NoInferPeer
            | Self::Pins(_)
            | Self::Witness(_)
            | Self::Service(_) => EXIT_FAILURE,
        }
    }
}

impl From<StartError> for Error {
    /// A halt carries the [`Fatal`] a brokerd thread stopped on; it is taken back out.
    fn from(e: StartError) -> Self {
        match e {
            StartError::Halted { by, error } => match error.downcast::<Fatal>() {
                Ok(fatal) => Self::Stopped { by, fatal: *fatal },
                Err(error) => Self::Service(StartError::Halted { by, error }),
            },
            other => Self::Service(other),
        }
    }
}
