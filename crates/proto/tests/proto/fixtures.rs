use std::collections::BTreeSet;

use proto::toolrun::{ToolInvocation, ToolOutput};
use proto::{
    AuditEvent, AuditLine, AuditRecord, DecisionRecord, DenyReason, Envelope, LogRecord, Message,
    ToolResponse, read_envelope, write_envelope,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::fixtures;

/// Decodes a fixture and encodes it again: the bytes must be identical.
fn round_trip<T: DeserializeOwned + Serialize>(name: &str, bytes: &[u8]) -> T {
    let value: T =
        serde_json::from_slice(bytes).unwrap_or_else(|e| panic!("{name} does not decode: {e}"));
    let again = serde_json::to_vec(&value).expect("encode");
    assert_eq!(
        String::from_utf8_lossy(&again),
        String::from_utf8_lossy(bytes),
        "{name} does not re-encode to the same bytes"
    );
    value
}

#[test]
fn every_message_fixture_round_trips_and_every_kind_has_one() {
    let mut kinds = BTreeSet::new();
    for (name, bytes) in fixtures("message_") {
        let env: Envelope = round_trip(&name, &bytes);
        // Exhaustive on purpose: a new kind does not compile until it is listed here.
        let kind = match &env.msg {
            Message::ToolResponse(r) => match r {
                ToolResponse::PendingApproval { .. } => {
                    assert!(!env.r#final, "{name}: pending_approval is never final");
                    "tool_response/pending_approval"
                }
                ToolResponse::Result { .. } => "tool_response/result",
                ToolResponse::Failed { .. } => "tool_response/failed",
                ToolResponse::Denied { .. } => "tool_response/denied",
            },
            m @ (Message::ToolRequest(_)
            | Message::Error(_)
            | Message::ApprovalList(_)
            | Message::ApprovalListing(_)
            | Message::ApprovalAnswer(_)
            | Message::ApprovalAnswered(_)
            | Message::SessionQuery(_)
            | Message::SessionInfo(_)
            | Message::GrantsQuery(_)
            | Message::GrantsInfo(_)
            | Message::ChatSend(_)
            | Message::ChatEvent(_)
            | Message::ChatReply(_)
            | Message::SessionList(_)
            | Message::SessionListing(_)
            | Message::SessionShow(_)
            | Message::SessionRecords(_)
            | Message::ApprovalPost(_)
            | Message::ApprovalPosted(_)
            | Message::ApprovalWait(_)
            | Message::ApprovalHeard(_)
            | Message::ApprovalUpdate(_)
            | Message::ApprovalUpdated(_)
            | Message::StatusQuery(_)
            | Message::BrokerStatus(_)
            | Message::LoopStatus(_)
            | Message::GrantsReload(_)
            | Message::GrantsReloaded(_)
            | Message::NotesQuery(_)
            | Message::NotesListing(_)
            | Message::NoteRelabel(_)
            | Message::NoteRelabelled(_)
            | Message::NotesSearch(_)
            | Message::NotesFound(_)
            | Message::JobRegister(_)
            | Message::JobRegistered(_)
            | Message::JobFinish(_)
            | Message::JobFinished(_)
            | Message::JobNote(_)
            | Message::JobNoted(_)
            | Message::JobResult(_)
            | Message::JobDelivered(_)
            | Message::WitnessReport(_)
            | Message::WitnessRecorded(_)
            | Message::OwnerMessage(_)
            | Message::OwnerRegistered(_)
            | Message::AuditVerify(_)
            | Message::AuditVerified(_)
            | Message::AuditAlert(_)
            | Message::AuditAlerted(_)
            | Message::AllowanceRevoke(_)
            | Message::AllowanceRevoked(_)
            | Message::McpQuery(_)
            | Message::McpListing(_)
            | Message::McpProbe(_)
            | Message::McpProbed(_)
            | Message::McpPin(_)
            | Message::McpPinned(_)
            | Message::ToolsQuery(_)
            | Message::ToolsOffered(_)
            | Message::FlowsQuery(_)
            | Message::FlowsReport(_)
            | Message::VerifyAlert(_)
            | Message::VerifyAlerted(_)
            | Message::VerifyPost(_)
            | Message::VerifyPosted(_)) => m.kind(),
        };
        assert!(
            name.starts_with(&format!("message_{}", kind.replace('/', "_"))),
            "{name} holds a {kind}"
        );
        kinds.insert(kind);
    }
    let expected: BTreeSet<_> = [
        "tool_request",
        "tool_response/pending_approval",
        "tool_response/result",
        "tool_response/failed",
        "tool_response/denied",
        "error",
        "approval_list",
        "approval_listing",
        "approval_answer",
        "approval_answered",
        "session_query",
        "session_info",
        "grants_query",
        "grants_info",
        "chat_send",
        "chat_event",
        "chat_reply",
        "session_list",
        "session_listing",
        "session_show",
        "session_records",
        "approval_post",
        "approval_posted",
        "approval_wait",
        "approval_heard",
        "approval_update",
        "approval_updated",
        "status_query",
        "broker_status",
        "loop_status",
        "grants_reload",
        "grants_reloaded",
        "notes_query",
        "notes_listing",
        "note_relabel",
        "note_relabelled",
        "notes_search",
        "notes_found",
        "job_register",
        "job_registered",
        "job_finish",
        "job_finished",
        "job_note",
        "job_noted",
        "job_result",
        "job_delivered",
        "witness_report",
        "witness_recorded",
        "owner_message",
        "owner_registered",
        "audit_verify",
        "audit_verified",
        "audit_alert",
        "audit_alerted",
        "allowance_revoke",
        "allowance_revoked",
        "mcp_query",
        "mcp_listing",
        "mcp_probe",
        "mcp_probed",
        "mcp_pin",
        "mcp_pinned",
        "tools_query",
        "tools_offered",
        "flows_query",
        "flows_report",
        "verify_alert",
        "verify_alerted",
        "verify_post",
        "verify_posted",
    ]
    .into_iter()
    .collect();
    assert_eq!(kinds, expected);
}

#[test]
fn every_log_fixture_round_trips_and_every_type_has_one() {
    let mut types = BTreeSet::new();
    for (name, bytes) in fixtures("log_") {
        let rec: LogRecord = round_trip(&name, &bytes);
        types.insert(match rec {
            LogRecord::SessionStart { .. } => "session_start",
            LogRecord::User { .. } => "user",
            LogRecord::Assistant { .. } => "assistant",
            LogRecord::ToolResult { .. } => "tool_result",
            LogRecord::CacheLoss { .. } => "cache_loss",
            LogRecord::EpochEnd { .. } => "epoch_end",
            LogRecord::Withdrawn { .. } => "withdrawn",
        });
    }
    assert_eq!(types.len(), 7, "{types:?}");
}

#[test]
fn every_audit_fixture_round_trips_and_every_line_kind_has_one() {
    let mut kinds = BTreeSet::new();
    for (name, bytes) in fixtures("audit_") {
        let line: AuditLine = round_trip(&name, &bytes);
        kinds.insert(match line {
            AuditLine::Decision(rec) => match rec.decision {
                DecisionRecord::Allowed { .. } => "allowed",
                DecisionRecord::Approved { .. } => "approved",
                DecisionRecord::Denied { .. } => "denied",
                DecisionRecord::Failed { .. } => "failed",
            },
            AuditLine::Event(ev) => match ev {
                AuditEvent::GrantsLoaded { .. } => "grants_loaded",
                AuditEvent::GrantsRefused { .. } => "grants_refused",
                AuditEvent::Recovery { .. } => "recovery",
                AuditEvent::ApprovalRequested { .. } => "approval_requested",
                AuditEvent::ApprovalRefused { .. } => "approval_refused",
                AuditEvent::NoteRelabelled { .. } => "note_relabelled",
                AuditEvent::JobRunStarted { .. } => "job_run_started",
                AuditEvent::JobRunEnded { .. } => "job_run_ended",
                AuditEvent::JobNoteWritten { .. } => "job_note_written",
                AuditEvent::JobRunRefused { .. } => "job_run_refused",
                AuditEvent::ToolFailed { .. } => "tool_failed",
                AuditEvent::AllowanceGranted { .. } => "allowance_granted",
                AuditEvent::AllowanceRevoked { .. } => "allowance_revoked",
                AuditEvent::McpPinned { .. } => "mcp_pinned",
                AuditEvent::McpRefused { .. } => "mcp_refused",
                AuditEvent::VerifyAlerted { .. } => "verify_alerted",
            },
        });
    }
    assert_eq!(kinds.len(), 20, "{kinds:?}");
}

#[test]
fn recorded_grant_texts_are_canonical_grants() {
    for name in [
        "audit_grants_loaded_texts.json",
        "audit_grants_loaded_since.json",
    ] {
        let bytes = std::fs::read(crate::fixture_dir().join(name)).expect("fixture");
        let Ok(AuditEvent::GrantsLoaded { texts, grants, .. }) = serde_json::from_slice(&bytes)
        else {
            panic!("{name} is a grants_loaded line");
        };
        assert!(!texts.is_empty(), "{name}");
        for (id, text) in &texts {
            assert!(grants.contains(id), "{name}: {id} is not in force");
            let grant = proto::Grant::from_toml(text).unwrap_or_else(|e| panic!("{id}: {e}"));
            assert_eq!(&grant.canonical(), text, "{name}: {id}");
        }
    }
}

#[test]
fn pre_m1_audit_fixtures_are_plain_audit_records() {
    for name in [
        "audit_allowed.json",
        "audit_approved.json",
        "audit_approved_local.json",
        "audit_denied.json",
        "audit_denied_no_grant.json",
    ] {
        let bytes = std::fs::read(crate::fixture_dir().join(name)).expect("fixture");
        let _: AuditRecord = round_trip(name, &bytes);
    }
}

#[test]
fn tool_run_fixtures_round_trip() {
    for (name, bytes) in fixtures("toolrun_invocation") {
        let _: ToolInvocation = round_trip(&name, &bytes);
    }
    for (name, bytes) in fixtures("toolrun_output") {
        let _: ToolOutput = round_trip(&name, &bytes);
    }
}

#[test]
fn every_deny_reason_has_its_wire_name() {
    let table = [
        (DenyReason::NoGrant, "\"no_grant\""),
        (DenyReason::GrantExpired, "\"grant_expired\""),
        (DenyReason::TaintTooHigh, "\"taint_too_high\""),
        (DenyReason::DeniedByGrant, "\"denied_by_grant\""),
        (DenyReason::ApprovalRefused, "\"approval_refused\""),
        (DenyReason::ApprovalExpired, "\"approval_expired\""),
        (DenyReason::InvalidArguments, "\"invalid_arguments\""),
        (DenyReason::UnknownTool, "\"unknown_tool\""),
        (
            DenyReason::TooManyPendingApprovals,
            "\"too_many_pending_approvals\"",
        ),
        (DenyReason::ShuttingDown, "\"shutting_down\""),
        (DenyReason::JobNotRunning, "\"job_not_running\""),
    ];
    for (reason, text) in table {
        assert_eq!(serde_json::to_string(&reason).expect("encode"), text);
        assert_eq!(
            serde_json::from_str::<DenyReason>(text).expect("decode"),
            reason
        );
    }
}

#[test]
fn a_fixture_travels_through_a_frame_unchanged() {
    let (name, bytes) = fixtures("message_tool_request").remove(0);
    let env: Envelope = serde_json::from_slice(&bytes).expect("decode");
    let mut wire = Vec::new();
    write_envelope(&mut wire, &env).expect("write");
    let len = u32::try_from(bytes.len()).expect("len");
    assert_eq!(&wire[..4], &len.to_be_bytes(), "{name}: length prefix");
    assert_eq!(&wire[4..], &bytes[..], "{name}: body");
    let back = read_envelope(&mut wire.as_slice()).expect("read");
    assert_eq!(back, env);
}

/// The pre-M1 seed's tool request (no witness: it predates them) still parses and writes
/// back byte for byte (the brief's decision 10); the witness is absent, not defaulted to
/// something brokerd could claim, and a witnessed request still carries it.
#[test]
fn the_seed_tool_request_parses_without_a_witness() {
    for name in [
        "message_tool_request.json",
        "message_tool_request_seed.json",
    ] {
        let bytes = std::fs::read(crate::fixture_dir().join(name)).expect("fixture");
        let env: Envelope = round_trip(name, &bytes);
        let Message::ToolRequest(req) = env.msg else {
            panic!("{name} holds a tool request");
        };
        assert_eq!(req.witness, None, "{name}");
    }
    let (name, bytes) = fixtures("message_tool_request_witnessed").remove(0);
    let env: Envelope = round_trip(&name, &bytes);
    let Message::ToolRequest(req) = env.msg else {
        panic!("{name} holds a tool request");
    };
    assert!(req.witness.is_some(), "{name}");
}
