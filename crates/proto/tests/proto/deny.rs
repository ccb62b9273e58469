//! Deny reasons: the name a reason is shown by is the name it has on the wire.

use proto::DenyReason;

/// Every variant; the match makes a new variant fail to compile until it is listed.
fn all() -> [DenyReason; 18] {
    let all = [
        DenyReason::NoGrant,
        DenyReason::GrantExpired,
        DenyReason::TaintTooHigh,
        DenyReason::DeniedByGrant,
        DenyReason::ApprovalRefused,
        DenyReason::ApprovalExpired,
        DenyReason::InvalidArguments,
        DenyReason::UnknownTool,
        DenyReason::TooManyPendingApprovals,
        DenyReason::ShuttingDown,
        DenyReason::JobNotRunning,
        DenyReason::NotWitnessed,
        DenyReason::WitnessNotRunnable,
        DenyReason::WitnessMismatch,
        DenyReason::AlreadyRun,
        DenyReason::ApprovalChanged,
        DenyReason::WriteDown,
        DenyReason::UntrustedWrite,
    ];
    for reason in all {
        match reason {
            DenyReason::NoGrant
            | DenyReason::GrantExpired
            | DenyReason::TaintTooHigh
            | DenyReason::DeniedByGrant
            | DenyReason::ApprovalRefused
            | DenyReason::ApprovalExpired
            | DenyReason::InvalidArguments
            | DenyReason::UnknownTool
            | DenyReason::TooManyPendingApprovals
            | DenyReason::ShuttingDown
            | DenyReason::JobNotRunning
            | DenyReason::NotWitnessed
            | DenyReason::WitnessNotRunnable
            | DenyReason::WitnessMismatch
            | DenyReason::AlreadyRun
            | DenyReason::ApprovalChanged
            | DenyReason::WriteDown
            | DenyReason::UntrustedWrite => {}
        }
    }
    all
}

#[test]
fn as_str_is_the_serde_name() {
    for reason in all() {
        let wire = serde_json::to_string(&reason).expect("encode");
        assert_eq!(wire, format!("\"{}\"", reason.as_str()));
    }
}

#[test]
fn the_write_refusals_have_their_names() {
    assert_eq!(DenyReason::WriteDown.as_str(), "write_down");
    assert_eq!(DenyReason::UntrustedWrite.as_str(), "untrusted_write");
}
