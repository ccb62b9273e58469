//! What one run is, whichever runner runs it: its spec (the invocation, what it binds, the
//! addresses it may reach, its secret and limits), what it produced, its unit's name, and
//! the checks every runner makes before it starts anything.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use grants::unitpath::check_credential_name;

/// The resource limits of one run, from the grant and brokerd's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// The most content bytes a result may carry; more is cut and reported as truncated.
    pub max_result_bytes: u64,
    /// Wall-clock limit for the whole run.
    pub time_limit: Duration,
    /// The unit's `MemoryMax=` (systemd runner only).
    pub memory_max_bytes: u64,
    /// The unit's `TasksMax=` (systemd runner only).
    pub tasks_max: u32,
}

impl Limits {
    /// The time limit as systemd's `RuntimeMaxSec=` reads it, exact to the millisecond,
    /// rounded up so a limit never becomes zero (which systemd reads as infinity).
    pub(super) fn runtime_max_sec(&self) -> String {
        let ms = self.time_limit.as_millis().max(1);
        if ms.is_multiple_of(1000) {
            format!("{}s", ms / 1000)
        } else {
            format!("{ms}ms")
        }
    }
}

/// A secret handed to the tool as a systemd credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Secret {
    /// The credential's name, the file name under the tool's `$CREDENTIALS_DIRECTORY`.
    pub name: String,
    /// Where brokerd itself holds it: its own `$CREDENTIALS_DIRECTORY/<name>`.
    pub source: PathBuf,
}

/// Everything one run needs; built by brokerd from the decision and the grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSpec {
    /// `boxmaker-tool-<session>-<call>`, see [`unit_name`].
    pub unit: String,
    /// What the tool reads. Its `roots` are the deciding grant's path prefixes (absolute,
    /// normalised), which the tool checks the path against again.
    pub invocation: proto::toolrun::ToolInvocation,
    /// For a path call, the one path the systemd runner binds read-only into the tool's
    /// root: what the call covers, resolved by brokerd ([`crate::run::bind`]).
    pub bind: Option<crate::run::bind::Bind>,
    /// For `note_write`: the empty per-call directory bound writable (the only writable
    /// place the unit has), where the tool leaves the note's text for brokerd.
    pub write_bind: Option<crate::run::bind::Bind>,
    /// For a search: the published index partitions it reaches, each a file bound
    /// read-only (published files never change, so the unit reads them whole).
    pub index_binds: Vec<crate::run::bind::Bind>,
    /// The resolved addresses of the granted hosts; empty means no network at all.
    pub addresses: Vec<IpAddr>,
    pub secret: Option<Secret>,
    pub limits: Limits,
    /// For the hands (`write_file`, `edit_file`, `run`): the stage the unit is sent
    /// instead of `invocation` (whose `call` is still what the decision must allow), and
    /// what the unit is (`crate::run::hands`).
    pub stage: Option<crate::run::hands::StageSpec>,
    /// For an MCP server's session (`boxmaker-tool mcp-call` or `mcp-pin`): what the tool
    /// reads instead of `invocation`, and what the server's unit binds.
    pub mcp: Option<McpRun>,
}

/// One MCP session in a unit: the tool's mode and input, the grant's paths bound
/// read-only, and the server's own files (its closure outside the runner's binds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpRun {
    pub input: McpInput,
    /// The deciding grant's `paths`, each bound read-only where it is.
    pub binds: Vec<crate::run::bind::Bind>,
    /// `[[mcp]] binds`: bound read-only, skipped when missing.
    pub closure: Vec<String>,
}

/// What `boxmaker-tool` is asked in an MCP unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpInput {
    /// `mcp-call`: one call of a pinned tool, decided by policy.
    Call(proto::mcp::McpCallInvocation),
    /// `mcp-pin`: the server's tool list, for the owner to look at (no call is made).
    Pin(proto::mcp::McpPinInvocation),
}

impl McpInput {
    /// The tool's command-line mode.
    pub fn mode(&self) -> &'static str {
        match self {
            Self::Call(_) => "mcp-call",
            Self::Pin(_) => "mcp-pin",
        }
    }

    /// The JSON written to the tool's stdin.
    pub fn to_vec(&self) -> serde_json::Result<Vec<u8>> {
        match self {
            Self::Call(c) => serde_json::to_vec(c),
            Self::Pin(p) => serde_json::to_vec(p),
        }
    }
}

impl RunSpec {
    /// Every path bound read-only: the call's, the index partitions, an MCP grant's paths.
    pub fn read_binds(&self) -> impl Iterator<Item = &crate::run::bind::Bind> {
        let mcp = self.mcp.iter().flat_map(|m| m.binds.iter());
        self.bind.iter().chain(self.index_binds.iter()).chain(mcp)
    }

    /// The tool's command-line mode (none for boxmaker's own tools) and its stdin.
    pub fn input(&self) -> serde_json::Result<(Option<&'static str>, Vec<u8>)> {
        match &self.mcp {
            Some(m) => Ok((Some(m.input.mode()), m.input.to_vec()?)),
            None => Ok((None, serde_json::to_vec(&self.invocation)?)),
        }
    }
}

/// What a run produced. `content` is at most `max_result_bytes` long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunOutcome {
    Ok {
        content: String,
        truncated: bool,
    },
    /// `failure` is how the run ended when the tool did not say (a limit, a signal, an
    /// exit status); `None` for the tool's own report and for a run that never started.
    Failed {
        message: String,
        failure: Option<proto::ToolFailure>,
    },
    /// A hands unit's answer, as it gave it (the broker checks it against what it asked).
    Staged(proto::tools::stage::StageOutput),
}

impl RunOutcome {
    pub(crate) fn failed(message: impl Into<String>) -> Self {
        Self::Failed {
            message: message.into(),
            failure: None,
        }
    }
}

/// The unit name of one call. Session ids are `[a-z0-9-]` and the call is a number, so the
/// name needs no escaping; the call is the last `-` component, so no two (session, call)
/// pairs share a name. The `boxmaker-tool-` prefix is what the polkit rule admits and keeps
/// the DynamicUser name from ever equalling a static user's (reference pitfall).
pub fn unit_name(session: &proto::SessionId, call: proto::CallId) -> String {
    format!("{UNIT_PREFIX}{}-{}", session.as_str(), call.0)
}

pub(super) const UNIT_PREFIX: &str = "boxmaker-tool-";

/// Why a runner refuses a run before starting anything.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    /// A result, time or memory limit of zero.
    #[error("every limit must be above zero")]
    ZeroLimit,
    /// A `tasks_max` of zero.
    #[error("tasks_max must be above zero")]
    ZeroTasks,
    /// The secret's name is no credential name (`grants::unitpath`'s reason).
    #[error("{0}")]
    Credential(String),
    /// The unit name is not `boxmaker-tool-[a-z0-9-]+`.
    #[error("unit name {0:?} is not {UNIT_PREFIX}[a-z0-9-]+")]
    UnitName(String),
    /// A path systemd would not read literally, or a granted path it must not bind
    /// (`grants::unitpath`'s reason).
    #[error("{0}")]
    Path(String),
    /// A path that is not UTF-8.
    #[error("path {} is not UTF-8", .0.display())]
    NotUtf8(PathBuf),
    /// A bind entry of the runner's with a bad part.
    #[error("bind {bind:?}: {reason}")]
    Bind { bind: String, reason: String },
    /// An address no granted host may have.
    #[error("address {0} cannot be a granted host's address")]
    Address(IpAddr),
    /// A unit that writes the owner's files, and no `broker.hands_user` to run it as.
    #[error("broker.hands_user is not set: nobody to run a write unit as")]
    NoHandsUser,
}

/// What both runners check before starting anything.
pub(super) fn check_common(spec: &RunSpec) -> Result<(), CheckError> {
    let l = &spec.limits;
    if l.max_result_bytes == 0 || l.time_limit.is_zero() || l.memory_max_bytes == 0 {
        // A zero RuntimeMaxSec= or MemoryMax= means "no limit" or "no memory" to systemd;
        // neither is what a grant with a limit of zero could have meant.
        return Err(CheckError::ZeroLimit);
    }
    if l.tasks_max == 0 {
        return Err(CheckError::ZeroTasks);
    }
    if let Some(secret) = &spec.secret {
        check_credential_name(&secret.name).map_err(|e| CheckError::Credential(e.to_string()))?;
    }
    Ok(())
}
