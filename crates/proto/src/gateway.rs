//! gateway.sock: brokerd asks the owner through gatewayd. brokerd is the client and always
//! the requester (pre-M1 section 4), over one long-lived connection:
//!
//! - `approval_post` (an [`ApprovalCard`](crate::approval::ApprovalCard)) → `approval_posted`:
//!   gatewayd makes the approval's root post, or finds the one it made for that id before
//!   (posting again after a reconnect never posts twice).
//! - `approval_wait` → `approval_heard`: the answers heard on approval posts, from anyone,
//!   numbered; gatewayd holds the request up to `wait_ms` while there is none. Each wait
//!   acknowledges the answers before `ack`: gatewayd forgets an answer (and counts its
//!   reaction as passed on) only then, so one lost on the way is handed over again.
//!   Whether an answer counts (an owner's, in time, not used, not changed) is brokerd's call.
//! - `approval_update` → `approval_updated`: what became of an answer or of the approval,
//!   shown on the post.
//! - `audit_alert` → `audit_alerted`: brokerd's verification of its whole audit chain failed
//!   (the daily timer's); gatewayd posts it in the channel for the owner.
//! - `verify_post` → `verify_posted`: an admin peer's failed `bxctl verify --alert`, which
//!   brokerd audited; gatewayd posts its lines inert (their types are in [`crate::alert`]).

use serde::{Deserialize, Serialize};

use crate::approval::{ApprovalAnswer, Refusal, Verdict};

/// The longest `approval_wait` gatewayd holds.
pub const MAX_WAIT_MS: u32 = 10_000;

/// The most answers one `approval_heard` carries; the rest wait for the next.
pub const MAX_HEARD: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalPosted {
    pub approval: String,
    /// The Mattermost post id of the approval's root post.
    pub post: String,
}

/// The audit log does not verify: `detail` is brokerd's (the file and line, why), `time`
/// when brokerd found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditAlert {
    pub time: crate::Timestamp,
    pub detail: String,
}

/// The alert's post.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditAlerted {
    pub post: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalWait {
    /// How long to hold the request while nothing is heard, at most [`MAX_WAIT_MS`].
    pub wait_ms: u32,
    /// Every answer numbered below this was received; 0 acknowledges nothing.
    pub ack: u64,
}

/// Answers heard on approval posts, oldest first, numbered from `first` on. Each carries
/// `post` and `by`. Numbers start at 1 and never repeat within one gatewayd process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalHeard {
    pub first: u64,
    pub answers: Vec<ApprovalAnswer>,
    /// gatewayd's version (its package version), for `bxctl status` through brokerd.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalUpdate {
    pub approval: String,
    pub update: Update,
}

/// What became of an answer (refused) or of the approval (decided or expired).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case", deny_unknown_fields)]
pub enum Update {
    /// One answer was not taken; the approval, if still pending, waits on.
    Refused { by: String, refusal: Refusal },
    /// The approval was answered (`by` is a Mattermost user id, or the local admin's
    /// uid and user name when answered with `bxctl approve`).
    Decided { verdict: Verdict, by: String },
    /// Nobody answered in time.
    Expired,
    /// brokerd stopped while the approval waited: the call was denied (`shutting_down`).
    Stopped,
}
