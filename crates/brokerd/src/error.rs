//! Why brokerd could not start, or stopped serving, and the exit status each gives: `main`
//! prints the error once and exits with [`Error::exit_code`] (the table is in `main.rs`).

use std::fmt;
use std::io;

use daemon::config::ConfigError;
use daemon::listen::ListenError;
use daemon::service::StartError;
use grants::GrantsError;

use crate::Fatal;
use crate::audit::AuditError;
use crate::jobs::JobGrantError;
use crate::run::tool_spec::UnitError;
use crate::sessions::StateError;
use crate::sockets::loopd::Side;

/// The exit status when brokerd could not start (or a one-shot mode failed).
pub const EXIT_FAILURE: u8 = 1;
/// The exit status when durable state failed while serving (docs/decisions.md B10): systemd
/// restarts brokerd on it, and the start recovers the audit log.
pub const EXIT_FATAL: u8 = 70;

/// Each variant's source names the file, socket or grant a person needs to act on.
#[derive(Debug)]
pub enum Error {
    /// The sockets systemd passed could not be taken.
    Inherit(ListenError),
    /// The configuration file could not be read or is not valid.
    Config(ConfigError),
    /// A grant file could not be read or is not valid.
    Grants(GrantsError),
    /// A job grant could not work with the configuration (an unknown job, an `ask` with no
    /// gateway).
    JobGrants(JobGrantError),
    /// `--print-tool-unit` has no unit to print for the grant.
    ToolUnit(UnitError),
    /// What `--check-config` or `--print-tool-unit` prints could not be written.
    Stdout(io::Error),
    /// The audit log could not be opened, or its chain does not verify.
    AuditOpen(AuditError),
    /// The session state could not be read.
    Sessions(StateError),
    /// The notes directory or brokerd's record of it could not be made ready.
    Notes(crate::notes::NoteError),
    /// The accounting could not be opened or read.
    Accounting(crate::context::accounting::LogError),
    /// The grants brokerd starts with could not be audited.
    FirstSnapshot(Fatal),
    /// One of the two broker sockets could not be taken or bound.
    Socket { side: Side, source: ListenError },
    /// The jobs socket could not be taken or bound.
    JobsSocket(ListenError),
    /// The chat socket could not be taken or bound.
    ChatSocket(ListenError),
    /// The configuration names no `peers.infer`: no witness, so no call could ever run.
    NoInferPeer,
    /// The witness store could not be opened or read back.
    Witness(crate::context::witness::StoreError),
    /// The witness socket could not be taken or bound.
    WitnessSocket(ListenError),
    /// The start-up could not watch signals or start a thread.
    Service(StartError),
    /// Serving stopped: durable state failed under `by` (a socket's request, the gateway
    /// link, the grants reload), so nothing more may be answered.
    Stopped { by: String, source: Fatal },
}

impl Error {
    /// What `main` exits with: [`EXIT_FATAL`] once serving stopped on durable state,
    /// [`EXIT_FAILURE`] for everything that kept brokerd from starting.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Stopped { .. } => EXIT_FATAL,
            Self::Inherit(_)
            | Self::Config(_)
            | Self::Grants(_)
            | Self::JobGrants(_)
            | Self::JobsSocket(_)
            | Self::ChatSocket(_)
            | Self::NoInferPeer
            | Self::Witness(_)
            | Self::WitnessSocket(_)
            | Self::ToolUnit(_)
            | Self::Stdout(_)
            | Self::AuditOpen(_)
            | Self::Sessions(_)
            | Self::Notes(_)
            | Self::Accounting(_)
            | Self::FirstSnapshot(_)
            | Self::Socket { .. }
            | Self::Service(_) => EXIT_FAILURE,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Inherit(e)
            | Self::Socket { source: e, .. }
            | Self::JobsSocket(e)
            | Self::ChatSocket(e)
            | Self::WitnessSocket(e) => e.fmt(f),
            Self::NoInferPeer => f.write_str(
                "peers.infer is not set: brokerd runs only calls inferproxy witnessed, and \
                 admits inferproxy on witness.sock by it",
            ),
            Self::Witness(e) => write!(f, "witness store: {e}"),
            Self::Config(e) => e.fmt(f),
            Self::JobGrants(e) => e.fmt(f),
            Self::Grants(e) => e.fmt(f),
            Self::ToolUnit(e) => e.fmt(f),
            Self::Stdout(e) => write!(f, "cannot write to stdout: {e}"),
            Self::AuditOpen(e) => e.fmt(f),
            Self::Sessions(e) => e.fmt(f),
            Self::Notes(crate::notes::NoteError::Io { path, source }) => {
                write!(f, "{}: {source}", path.display())
            }
            Self::Notes(e) => e.fmt(f),
            Self::Accounting(e) => e.fmt(f),
            Self::FirstSnapshot(e) => e.fmt(f),
            Self::Service(e) => e.fmt(f),
            Self::Stopped { by, source } => {
                write!(f, "fatal ({by}): {source}; stopping")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Inherit(e)
            | Self::Socket { source: e, .. }
            | Self::JobsSocket(e)
            | Self::ChatSocket(e)
            | Self::WitnessSocket(e) => Some(e),
            Self::NoInferPeer => None,
            Self::Witness(e) => Some(e),
            Self::Config(e) => Some(e),
            Self::JobGrants(e) => Some(e),
            Self::Grants(e) => Some(e),
            Self::ToolUnit(e) => Some(e),
            Self::Stdout(e) => Some(e),
            Self::AuditOpen(e) => Some(e),
            Self::Sessions(e) => Some(e),
            Self::Notes(e) => Some(e),
            Self::Accounting(e) => Some(e),
            Self::FirstSnapshot(e) | Self::Stopped { source: e, .. } => Some(e),
            Self::Service(e) => Some(e),
        }
    }
}

impl From<StartError> for Error {
    /// A halt carries the [`Fatal`] a brokerd thread stopped on; it is taken back out.
    fn from(e: StartError) -> Self {
        match e {
            StartError::Halted { by, source } => match source.downcast::<Fatal>() {
                Ok(fatal) => Self::Stopped { by, source: *fatal },
                Err(source) => Self::Service(StartError::Halted { by, source }),
            },
            other => Self::Service(other),
        }
    }
}
