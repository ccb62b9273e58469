//! What the model reads of each tool's answer. The tools it is offered are
//! `proto::attest::tools`' (inferproxy witnesses only a request that offers exactly those).

use proto::{DataClass, ToolResponse};

/// What the model reads of a tool's answer, and the labels brokerd gave it (loopd keeps
/// them for the owner's eyes only; brokerd holds the session's real taint).
pub fn for_model(r: &ToolResponse) -> (String, DataClass, bool, bool) {
    match r {
        ToolResponse::Result {
            content,
            class,
            untrusted,
            truncated,
        } => (content.clone(), *class, *untrusted, *truncated),
        ToolResponse::Denied { reason, detail } => {
            let detail = detail
                .as_deref()
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            (
                format!("denied by the owner's policy ({}){detail}", reason.as_str()),
                DataClass::Private,
                false,
                false,
            )
        }
        ToolResponse::Failed { message, .. } => (
            format!("the tool failed: {message}"),
            DataClass::Private,
            true,
            false,
        ),
        ToolResponse::PendingApproval { .. } => {
            ("no answer".into(), DataClass::Private, false, false)
        }
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
