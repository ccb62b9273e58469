use serde::{Deserialize, Serialize};

use std::fmt;

use crate::attest::WitnessRef;
use crate::{CallId, DataClass, SessionId, Timestamp};

/// loopd asks brokerd to run one tool call the model made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolRequest {
    pub session: SessionId,
    pub call: CallId,
    pub tool: String,
    /// The model's JSON object, carried unparsed: brokerd validates it against the tool's
    /// argument types, never loopd.
    pub arguments: String,
    /// The call inferproxy witnessed the model make: brokerd runs nothing else, and each
    /// witnessed call once. Optional on the wire only so that the pre-M1 shape still parses
    /// (proto grows additively, the brief's decision 10): brokerd denies a request without
    /// one as `not_witnessed`, as it denies one naming a call nobody witnessed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub witness: Option<WitnessRef>,
}

/// brokerd's answer, internally tagged: `{"status":"result",…}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case", deny_unknown_fields)]
pub enum ToolResponse {
    /// The owner has been asked. Never the final frame: the answer follows on the same
    /// connection.
    PendingApproval {
        approval: String,
        expires: Timestamp,
    },
    /// The tool ran. `class` and `untrusted` come from the grant, never from the tool.
    Result {
        content: String,
        class: DataClass,
        untrusted: bool,
        truncated: bool,
    },
    /// The tool ran and failed; not a policy decision. `failure` says how the run ended
    /// when it did not end by the tool's own report: a limit stopped it, or it died.
    Failed {
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failure: Option<ToolFailure>,
    },
    Denied {
        reason: DenyReason,
        /// Why, for a person (for example which field of the arguments was wrong).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DenyReason {
    NoGrant,
    GrantExpired,
    TaintTooHigh,
    DeniedByGrant,
    ApprovalRefused,
    ApprovalExpired,
    /// The arguments are not exactly the tool's schema (duplicate key, unknown field,
    /// wrong type).
    InvalidArguments,
    /// No tool has that name.
    UnknownTool,
    /// Too many approvals are waiting for the owner already.
    TooManyPendingApprovals,
    /// brokerd was stopping while the call waited for the owner (or was about to ask).
    ShuttingDown,
    /// The call is in a job session whose run is not in progress (it finished, or never
    /// began): a job session's id is good only while its run lasts.
    JobNotRunning,
    /// The call names no completion inferproxy witnessed (none after the wait, or one whose
    /// record is no longer kept), or no call at that index of it.
    NotWitnessed,
    /// The witnessed answer did not end normally (`length` cut it): its calls never run.
    WitnessNotRunnable,
    /// The tool or the arguments differ, byte for byte, from the call the model made.
    WitnessMismatch,
    /// That witnessed call was run (or decided) before: each runs at most once.
    AlreadyRun,
    /// The owner answered a card whose labels no longer held: the session rose after the
    /// card was shown, so what the owner saw is no longer the request. brokerd's denial,
    /// never the owner's.
    ApprovalChanged,
    /// A write from a session above the lowest label a grant covering the target gives it
    /// (no write down, docs/decisions.md H9). Never asked.
    WriteDown,
    /// A write from an untrusted session where a grant covering the target says only the
    /// owner writes (`untrusted = false`), without the write grant's `if_untrusted = "ask"`.
    UntrustedWrite,
}

impl DenyReason {
    /// The reason's wire name, as serde writes it (without the quotes).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoGrant => "no_grant",
            Self::GrantExpired => "grant_expired",
            Self::TaintTooHigh => "taint_too_high",
            Self::DeniedByGrant => "denied_by_grant",
            Self::ApprovalRefused => "approval_refused",
            Self::ApprovalExpired => "approval_expired",
            Self::InvalidArguments => "invalid_arguments",
            Self::UnknownTool => "unknown_tool",
            Self::TooManyPendingApprovals => "too_many_pending_approvals",
            Self::ShuttingDown => "shutting_down",
            Self::JobNotRunning => "job_not_running",
            Self::NotWitnessed => "not_witnessed",
            Self::WitnessNotRunnable => "witness_not_runnable",
            Self::WitnessMismatch => "witness_mismatch",
            Self::AlreadyRun => "already_run",
            Self::ApprovalChanged => "approval_changed",
            Self::WriteDown => "write_down",
            Self::UntrustedWrite => "untrusted_write",
        }
    }
}

impl ToolResponse {
    /// A failure without a typed end (the tool's own report, a call that was not run).
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed {
            message: message.into(),
            failure: None,
        }
    }
}

/// How a tool run ended when the tool did not report its own failure, from the runner's
/// view: for a tool unit, systemd's result for it (`Finished with result: …`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ToolFailure {
    /// The kernel's OOM killer ended it at the unit's `MemoryMax=` (systemd `oom-kill`).
    OutOfMemory,
    /// Its time limit ran out (the unit's `RuntimeMaxSec=`, or brokerd's own deadline).
    TimeLimit,
    /// It was killed by a signal (systemd `signal` or `core-dump`), named like `SIGKILL`
    /// when the runner knows which.
    Signal {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<String>,
    },
    /// It exited with a status other than zero without a result of its own.
    Exited { status: i32 },
    /// The unit ended with another systemd result (`resources`, `protocol`, …).
    Unit { result: String },
    /// An MCP call gave no result: the server's tools changed since the pin, the tool said
    /// it failed, the server broke the protocol or a limit (`boxmaker-tool mcp-call`'s kind).
    Mcp { failure: crate::mcp::McpFailure },
    /// A write's unit refused or failed (`changed`, `exists`, a link below the root, …):
    /// nothing was written (docs/decisions.md H5, H10).
    Write { failure: StageFailure },
}

impl fmt::Display for ToolFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OutOfMemory => f.write_str("out of memory"),
            Self::TimeLimit => f.write_str("time limit"),
            Self::Signal { signal: Some(s) } => write!(f, "killed by signal {s}"),
            Self::Signal { signal: None } => f.write_str("killed by a signal"),
            Self::Exited { status } => write!(f, "exited with status {status}"),
            Self::Unit { result } => write!(f, "unit result {result}"),
            Self::Mcp { failure } => write!(f, "MCP {}", failure.kind()),
            Self::Write { failure } => write!(f, "write not made: {}", failure.as_str()),
        }
    }
}

/// Why a stage refused or failed, by kind; the message says it for a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageFailure {
    /// The invocation is not one brokerd makes (a bad relative path, say).
    Invocation,
    /// A link, a step out of the root or a mount crossed below it.
    Link,
    /// A name on the way is missing, or the target is (replace, edit).
    NotFound,
    /// `create`: the name exists.
    Exists,
    /// Not a regular file, or on the way not a directory.
    NotRegular,
    /// Not UTF-8 text without NUL.
    NotText,
    /// Larger than `hands::MAX_FILE`, before or after the write.
    TooLarge,
    /// The directory or the file belongs to another uid than the unit's, or its group
    /// cannot be kept.
    Owner,
    /// The file has other hard links.
    Linked,
    /// The file has set-uid or set-gid bits.
    SetId,
    /// The file is not what was expected (its hash, or it was replaced meanwhile).
    Changed,
    /// The edit does not apply (no match, several).
    Edit,
    /// The recomputed bytes do not hash to what brokerd expected.
    Disagree,
    /// The file system cannot exchange two names atomically.
    NoExchange,
    /// `run`: the program could not be started.
    Spawn,
    /// Any other system call failure.
    Io,
}

impl StageFailure {
    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Invocation => "invocation",
            Self::Link => "link",
            Self::NotFound => "not_found",
            Self::Exists => "exists",
            Self::NotRegular => "not_regular",
            Self::NotText => "not_text",
            Self::TooLarge => "too_large",
            Self::Owner => "owner",
            Self::Linked => "linked",
            Self::SetId => "set_id",
            Self::Changed => "changed",
            Self::Edit => "edit",
            Self::Disagree => "disagree",
            Self::NoExchange => "no_exchange",
            Self::Spawn => "spawn",
            Self::Io => "io",
        }
    }
}
