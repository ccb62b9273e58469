//! The owner's side of approvals: listing what waits, and answering it. These kinds are
//! accepted only on owner channels (the admin side of broker.sock, gateway.sock), never on
//! the socket loopd uses.

use serde::{Deserialize, Serialize};

use crate::{CallId, DataClass, Hash32, SessionId, Timestamp};

/// Everything the owner sees before answering, and what the answer binds to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalCard {
    /// 128 bits from the OS RNG, as 32 lower-case hex characters.
    pub approval: String,
    /// SHA-256 over session, call, tool, canonical arguments, grant id and session taint
    /// at request time. An answer must carry it; a changed request no longer matches.
    pub binding: Hash32,
    pub session: SessionId,
    pub call: CallId,
    pub tool: String,
    /// The canonical arguments: quoted data, never prose.
    pub arguments: String,
    pub grant: String,
    pub session_taint: DataClass,
    pub untrusted: bool,
    /// The calls whose results made the session untrusted.
    pub untrusted_by: Vec<CallRef>,
    pub expires: Timestamp,
}

/// One tool call of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallRef {
    pub tool: String,
    pub call: CallId,
}

/// A request with no fields.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalListing {
    pub pending: Vec<ApprovalCard>,
    /// Cards left out so that the listing fits in one frame (the ones expiring last).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub omitted: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Approve,
    Deny,
}

/// The owner's answer to one approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalAnswer {
    pub approval: String,
    pub binding: Hash32,
    pub verdict: Verdict,
    /// The Mattermost post the answer came from, for the audit record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post: Option<String>,
    /// Who answered, as the owner channel saw it (a Mattermost user id). On the admin
    /// socket brokerd ignores this and records the peer's uid and user name instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// Why an answer was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    /// No approval with that id is pending (never issued, or already answered).
    Unknown,
    Expired,
    /// The approval was already answered.
    AlreadyUsed,
    /// The binding does not match the request as it stands now.
    Changed,
    /// The answer came from someone who is not an owner (a Mattermost user id not in
    /// `[gateway] owners`).
    NotOwner,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case", deny_unknown_fields)]
pub enum AnswerOutcome {
    Accepted,
    Refused { refusal: Refusal },
}

/// What brokerd knows of one session: its taint and untrusted flag only ever rise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionQuery {
    pub session: SessionId,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionInfo {
    pub session: SessionId,
    pub taint: DataClass,
    pub untrusted: bool,
    pub untrusted_by: Vec<CallRef>,
}

/// The grant snapshot in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantsInfo {
    pub snapshot: Hash32,
    pub grants: Vec<String>,
}
