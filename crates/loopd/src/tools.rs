//! What the model reads of each tool's answer. The tools it is offered are
//! `proto::attest::tools`' (inferproxy witnesses only a request that offers exactly those).

use proto::{DataClass, ToolResponse};

/// What the model reads of a tool's answer, and the labels brokerd gave it (loopd keeps
/// them for the owner's eyes only; brokerd holds the session's real taint).
pub fn for_model(r: &ToolResponse) -> (String, DataClass, bool, bool) {
    // The text is proto's (`composed::tool_text`): brokerd recomputes the tool message.
    let text = proto::composed::tool_text(r);
    match r {
        ToolResponse::Result {
            class,
            untrusted,
            truncated,
            ..
        } => (text, *class, *untrusted, *truncated),
        ToolResponse::Denied { .. } | ToolResponse::PendingApproval { .. } => {
            (text, DataClass::Private, false, false)
        }
        ToolResponse::Failed { .. } => (text, DataClass::Private, true, false),
    }
}

/// How a call that gave no result ended, for the session log (the owner's eyes).
pub fn outcome(r: &ToolResponse) -> Option<proto::CallOutcome> {
    match r {
        ToolResponse::Denied { reason, .. } => Some(proto::CallOutcome::Denied { reason: *reason }),
        ToolResponse::Failed { .. } | ToolResponse::PendingApproval { .. } => {
            Some(proto::CallOutcome::Failed)
        }
        ToolResponse::Result { .. } => None,
    }
}
