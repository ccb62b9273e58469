use serde::{Deserialize, Serialize};

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
    /// The tool ran and failed; not a policy decision.
    Failed { message: String },
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
        }
    }
}
