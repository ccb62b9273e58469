use serde::{Deserialize, Serialize};

use crate::approval::{
    AnswerOutcome, ApprovalAnswer, ApprovalListing, Empty, GrantsInfo, SessionInfo, SessionQuery,
};
use crate::chat::{ChatEvent, ChatReply, ChatSend, SessionListing, SessionRecords, SessionShow};
use crate::gateway::{ApprovalHeard, ApprovalPosted, ApprovalUpdate, ApprovalWait};
use crate::job::{
    JobDelivered, JobFinish, JobNote, JobNoted, JobRegister, JobRegistered, JobResult,
};
use crate::{ToolRequest, ToolResponse};

/// The only protocol version this build speaks. A frame with another `v` is answered with
/// [`ErrorCode::BadVersion`] and the connection is closed.
pub const PROTOCOL_VERSION: u32 = 1;

/// One frame's content: `{"v":1,"id":7,"final":true,"msg":{"kind":…,"body":…}}`.
///
/// `id` is chosen by the requester and echoed on every frame of the response; a response
/// may span several frames and only the last has `final: true`. Requests are single frames
/// with `final: true`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    pub v: u32,
    pub id: u64,
    pub r#final: bool,
    pub msg: Message,
}

impl Envelope {
    /// A single-frame message (a request, or the last frame of a response).
    pub fn last(id: u64, msg: Message) -> Self {
        Self {
            v: PROTOCOL_VERSION,
            id,
            r#final: true,
            msg,
        }
    }

    /// A frame of a response that more frames will follow.
    pub fn partial(id: u64, msg: Message) -> Self {
        Self {
            v: PROTOCOL_VERSION,
            id,
            r#final: false,
            msg,
        }
    }
}

/// Every message kind, adjacently tagged: `{"kind":"tool_request","body":{…}}`.
/// A new kind is one new variant here and its body type in a module of its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    content = "body",
    rename_all = "snake_case",
    deny_unknown_fields
)]
pub enum Message {
    ToolRequest(ToolRequest),
    ToolResponse(ToolResponse),
    Error(WireError),
    /// Owner channel: what approvals are pending. Answered with `approval_listing`.
    ApprovalList(Empty),
    ApprovalListing(ApprovalListing),
    /// Owner channel: approve or deny one approval. Answered with `approval_answered`.
    ApprovalAnswer(ApprovalAnswer),
    ApprovalAnswered(AnswerOutcome),
    /// Owner channel: a session's taint and untrusted flag. Answered with `session_info`.
    SessionQuery(SessionQuery),
    SessionInfo(SessionInfo),
    /// Owner channel: the grant snapshot in force. Answered with `grants_info`.
    GrantsQuery(Empty),
    GrantsInfo(GrantsInfo),
    /// Chat channel (loop.sock): the owner's message; answered by `chat_event` frames and a
    /// final `chat_reply`.
    ChatSend(ChatSend),
    ChatEvent(ChatEvent),
    ChatReply(ChatReply),
    /// Chat channel: the sessions loopd holds. Answered with `session_listing`.
    SessionList(Empty),
    SessionListing(SessionListing),
    /// Chat channel: one session's log. Answered with `session_records`.
    SessionShow(SessionShow),
    SessionRecords(SessionRecords),
    /// gateway.sock (brokerd to gatewayd): post an approval for the owner. Answered with
    /// `approval_posted`.
    ApprovalPost(crate::approval::ApprovalCard),
    ApprovalPosted(ApprovalPosted),
    /// gateway.sock: the answers heard on approval posts. Answered with `approval_heard`.
    ApprovalWait(ApprovalWait),
    ApprovalHeard(ApprovalHeard),
    /// gateway.sock: show what became of an answer or an approval. Answered with
    /// `approval_updated`.
    ApprovalUpdate(ApprovalUpdate),
    ApprovalUpdated(Empty),
    /// Owner channel or chat channel: how the role is. Answered with `broker_status` on the
    /// admin side of broker.sock, `loop_status` on loop.sock.
    StatusQuery(Empty),
    BrokerStatus(crate::status::BrokerStatus),
    LoopStatus(crate::status::LoopStatus),
    /// Owner channel: load the grants directory again. Answered with `grants_reloaded`.
    GrantsReload(Empty),
    GrantsReloaded(crate::status::Reloaded),
    /// Owner channel: the notes and their labels. Answered with `notes_listing`.
    NotesQuery(crate::notes::NotesQuery),
    NotesListing(crate::notes::NotesListing),
    /// Owner channel: relabel one note (audited). Answered with `note_relabelled`.
    NoteRelabel(crate::notes::NoteRelabel),
    NoteRelabelled(crate::notes::NoteRelabelled),
    /// Owner channel: search every note. Answered with `notes_found`.
    NotesSearch(crate::notes::NotesSearch),
    NotesFound(crate::notes::NotesFound),
    /// jobs.sock (a job runner to brokerd): start a run. Answered with `job_registered`;
    /// the run lasts until `job_finish` or the connection closes.
    JobRegister(JobRegister),
    JobRegistered(JobRegistered),
    /// jobs.sock: the run has finished. Answered with `job_finished`.
    JobFinish(JobFinish),
    JobFinished(Empty),
    /// jobs.sock, while the run lasts: write the run's result to the job's note (its
    /// `deliver = "note:NAME"`) with the session's label. Answered with `job_noted`.
    JobNote(JobNote),
    JobNoted(JobNoted),
    /// The jobs side of gateway.sock (a runner to gatewayd): post a run's result in the
    /// job's thread. Answered with `job_delivered`.
    JobResult(JobResult),
    JobDelivered(JobDelivered),
    /// witness.sock (inferproxy to brokerd): one completion inferproxy forwarded, before
    /// its `[DONE]`. Answered with `witness_recorded` once the record is on disk.
    WitnessReport(crate::attest::WitnessReport),
    WitnessRecorded(crate::attest::WitnessRecorded),
    /// chat-broker's `broker.sock` (`bxctl chat`, gatewayd to brokerd): the owner's message
    /// about to be handed to loopd. Answered with `owner_registered` once it is on disk.
    OwnerMessage(crate::attest::OwnerMessage),
    OwnerRegistered(crate::attest::OwnerMessage),
    /// Owner channel: verify the whole audit chain, and write the checkpoint there.
    /// Answered with `audit_verified` (docs/decisions.md A8).
    AuditVerify(Empty),
    AuditVerified(crate::checkpoint::AuditVerified),
    /// gateway.sock: that verification failed; post it for the owner. Answered with
    /// `audit_alerted`.
    AuditAlert(crate::gateway::AuditAlert),
    AuditAlerted(crate::gateway::AuditAlerted),
    /// Owner channel (admin side only): end a session allowance now. Answered with
    /// `allowance_revoked`.
    AllowanceRevoke(crate::allowance::AllowanceRevoke),
    AllowanceRevoked(crate::allowance::RevokeOutcome),
    /// Owner channel: the MCP servers and their pins. Answered with `mcp_listing`.
    McpQuery(crate::mcp::McpQuery),
    McpListing(crate::mcp::McpListing),
    /// Owner channel: list a server's tools in a unit, for the owner to look at. Answered
    /// with `mcp_probed`.
    McpProbe(crate::mcp::McpProbe),
    McpProbed(crate::mcp::McpProbed),
    /// Owner channel: pin what the last probe showed (audited). Answered with `mcp_pinned`.
    McpPin(crate::mcp::McpPin),
    McpPinned(crate::mcp::McpPinned),
    /// loopd's side of broker.sock, and witness.sock: the tools a chat request may offer
    /// (boxmaker's and the pinned MCP tools). Answered with `tools_offered`.
    ToolsQuery(crate::mcp::ToolsQuery),
    ToolsOffered(crate::mcp::ToolsOffered),
    /// Owner channel: what the grants let a hostile model do without asking. Answered with
    /// `flows_report` (docs/verify.md).
    FlowsQuery(Empty),
    FlowsReport(crate::flows::FlowsReport),
    /// Owner channel: a failed `bxctl verify --alert`'s lines, for the owner's channel
    /// (audited). Answered with `verify_alerted` (docs/verify.md).
    VerifyAlert(crate::alert::VerifyAlert),
    VerifyAlerted(crate::alert::VerifyAlerted),
    /// gateway.sock: post those lines for the owner. Answered with `verify_posted`.
    VerifyPost(crate::alert::VerifyPost),
    VerifyPosted(crate::alert::VerifyPosted),
}

impl Message {
    /// The wire name of this message's kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::ToolRequest(_) => "tool_request",
            Self::ToolResponse(_) => "tool_response",
            Self::Error(_) => "error",
            Self::ApprovalList(_) => "approval_list",
            Self::ApprovalListing(_) => "approval_listing",
            Self::ApprovalAnswer(_) => "approval_answer",
            Self::ApprovalAnswered(_) => "approval_answered",
            Self::SessionQuery(_) => "session_query",
            Self::SessionInfo(_) => "session_info",
            Self::GrantsQuery(_) => "grants_query",
            Self::GrantsInfo(_) => "grants_info",
            Self::ChatSend(_) => "chat_send",
            Self::ChatEvent(_) => "chat_event",
            Self::ChatReply(_) => "chat_reply",
            Self::SessionList(_) => "session_list",
            Self::SessionListing(_) => "session_listing",
            Self::SessionShow(_) => "session_show",
            Self::SessionRecords(_) => "session_records",
            Self::ApprovalPost(_) => "approval_post",
            Self::ApprovalPosted(_) => "approval_posted",
            Self::ApprovalWait(_) => "approval_wait",
            Self::ApprovalHeard(_) => "approval_heard",
            Self::ApprovalUpdate(_) => "approval_update",
            Self::ApprovalUpdated(_) => "approval_updated",
            Self::StatusQuery(_) => "status_query",
            Self::BrokerStatus(_) => "broker_status",
            Self::LoopStatus(_) => "loop_status",
            Self::GrantsReload(_) => "grants_reload",
            Self::GrantsReloaded(_) => "grants_reloaded",
            Self::NotesQuery(_) => "notes_query",
            Self::NotesListing(_) => "notes_listing",
            Self::NoteRelabel(_) => "note_relabel",
            Self::NoteRelabelled(_) => "note_relabelled",
            Self::NotesSearch(_) => "notes_search",
            Self::NotesFound(_) => "notes_found",
            Self::JobRegister(_) => "job_register",
            Self::JobRegistered(_) => "job_registered",
            Self::JobFinish(_) => "job_finish",
            Self::JobFinished(_) => "job_finished",
            Self::JobNote(_) => "job_note",
            Self::JobNoted(_) => "job_noted",
            Self::JobResult(_) => "job_result",
            Self::JobDelivered(_) => "job_delivered",
            Self::WitnessReport(_) => "witness_report",
            Self::WitnessRecorded(_) => "witness_recorded",
            Self::OwnerMessage(_) => "owner_message",
            Self::OwnerRegistered(_) => "owner_registered",
            Self::McpQuery(_) => "mcp_query",
            Self::McpListing(_) => "mcp_listing",
            Self::McpProbe(_) => "mcp_probe",
            Self::McpProbed(_) => "mcp_probed",
            Self::McpPin(_) => "mcp_pin",
            Self::McpPinned(_) => "mcp_pinned",
            Self::ToolsQuery(_) => "tools_query",
            Self::ToolsOffered(_) => "tools_offered",
            Self::AuditVerify(_) => "audit_verify",
            Self::AuditVerified(_) => "audit_verified",
            Self::AuditAlert(_) => "audit_alert",
            Self::AuditAlerted(_) => "audit_alerted",
            Self::AllowanceRevoke(_) => "allowance_revoke",
            Self::AllowanceRevoked(_) => "allowance_revoked",
            Self::FlowsQuery(_) => "flows_query",
            Self::FlowsReport(_) => "flows_report",
            Self::VerifyAlert(_) => "verify_alert",
            Self::VerifyAlerted(_) => "verify_alerted",
            Self::VerifyPost(_) => "verify_post",
            Self::VerifyPosted(_) => "verify_posted",
        }
    }

    /// A typed refusal.
    pub fn error(code: ErrorCode, detail: impl Into<String>) -> Self {
        Self::Error(WireError {
            code,
            detail: detail.into(),
        })
    }
}

/// A typed refusal. `detail` is for a person; programs act on `code`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireError {
    pub code: ErrorCode,
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The length prefix was zero, over `MAX_FRAME`, or the body was cut short.
    BadFrame,
    /// The envelope's `v` is not [`PROTOCOL_VERSION`].
    BadVersion,
    /// The body is not a valid envelope (bad JSON, unknown field, wrong type, bad value).
    BadMessage,
    /// The receiver failed; the detail is in its own log, never on the wire.
    Internal,
    /// This socket does not accept this message kind (for example an approval sent on the
    /// socket loopd uses). Decided by the socket, never by what the peer claims.
    ForbiddenKind,
    /// The peer is not who this socket admits (SO_PEERCRED); the detail names who it
    /// admits. Sent with id 0 before the request is read, and the connection is closed.
    Refused,
    /// The server is stopping or at its connection limit: the same peer may try again
    /// later. Sent with id 0 before the request is read, and the connection is closed.
    Unavailable,
    /// A notes request on the owner's channel was not done (no such note, a bad name, the
    /// disk); the detail says which.
    NoteRefused,
    /// An MCP request on the owner's channel was not done (no such server, no list to pin,
    /// another list than the one shown, a pin the configuration names); the detail says
    /// which.
    McpRefused,
    /// A `verify_alert` out of bounds (no line, too many, too long, a line break); the
    /// detail says which.
    AlertRefused,
}

impl ErrorCode {
    /// The name on the wire (`bad_frame`, `refused`, …), for people.
    pub fn name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    }
}
