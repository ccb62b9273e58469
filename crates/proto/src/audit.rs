use serde::{Deserialize, Serialize};

use crate::{CallId, DataClass, DenyReason, Hash32, SessionId, Timestamp};

/// What brokerd decided, internally tagged: `{"outcome":"allowed",…}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case", deny_unknown_fields)]
pub enum DecisionRecord {
    Allowed {
        grant: String,
    },
    Approved {
        grant: String,
        approver: String,
        post: Option<String>,
    },
    Denied {
        reason: DenyReason,
        grant: Option<String>,
    },
}

/// One line of `audit/YYYY-MM-DD.jsonl`. `prev` is the SHA-256 of the previous line's stored
/// bytes (32 zero bytes for the first line ever written).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditRecord {
    pub seq: u64,
    pub time: Timestamp,
    pub prev: Hash32,
    pub session: SessionId,
    pub call: CallId,
    pub tool: String,
    /// The model's arguments text, in full.
    pub arguments: String,
    pub session_taint: DataClass,
    pub decision: DecisionRecord,
}
