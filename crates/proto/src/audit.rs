use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::allowance::Scope;
use crate::approval::Refusal;
use crate::attest::WitnessRef;
use crate::job::{JobOutcome, RunEnd};
use crate::{CallId, DataClass, DenyReason, Hash32, JobName, SessionId, Timestamp, ToolFailure};

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
        /// The session allowance that approved this call without asking (the owner's
        /// `allow_session` answer to an earlier card, `allowance_granted`); absent when the
        /// owner answered this call's own card.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        allowance: Option<String>,
    },
    Denied {
        reason: DenyReason,
        grant: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// A write the grant allowed (or would have asked for) that cannot be made, found
    /// before anything was asked or written: brokerd's look at the target refused it (a
    /// link, not text, another owner, …), or the new text cannot be computed (an edit whose
    /// old text occurs nowhere or several times, a create over a file that exists). The
    /// call's answer is a failure, labelled like a read of the target (docs/decisions.md
    /// H13). `detail` is brokerd's own words, never a unit's.
    Failed {
        grant: String,
        failure: crate::tools::stage::StageFailure,
        detail: String,
    },
}

/// What a write's decision line proves (docs/decisions.md H10): the file, the content it
/// replaces and the content it leaves. The commit writes only over `old_sha256` (absent:
/// the file must not exist) and only `new_sha256`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteRecord {
    /// The file, as the grant covered it (normalised).
    pub path: String,
    /// SHA-256 of the content found by brokerd's look: absent for a file that did not exist
    /// (a create, an append to a new file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_sha256: Option<Hash32>,
    /// SHA-256 and size of the content the write leaves: absent on a `failed` line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_sha256: Option<Hash32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_size: Option<u64>,
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
    /// The taint the call was decided at: the session's own, raised by the label of the
    /// prompt that produced the call (docs/broker.md, "The audit log"). Lines written
    /// before issue 23 hold the session's own taint.
    pub session_taint: DataClass,
    pub decision: DecisionRecord,
    /// The canonical arguments (sorted keys, no whitespace), when they parsed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canonical: Option<String>,
    /// The witnessed call this decision used: present exactly when the call passed the
    /// witness check (whatever the grant then decided), absent when it was denied before
    /// (`not_witnessed`, `witness_not_runnable`, `witness_mismatch`, `already_run`). This
    /// line is the durable record of the use: brokerd rebuilds the calls used from it at
    /// start (docs/decisions.md W9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub witness: Option<WitnessRef>,
    /// Whether the call was decided untrusted (the session's flag raised by its prompt's):
    /// written only when it was, so a trusted decision's line is as before.
    #[serde(default, skip_serializing_if = "crate::grant::is_false")]
    pub untrusted: bool,
    /// For `write_file` and `edit_file` once brokerd looked at the target: what the write
    /// replaces and leaves. Absent on every other line, which reads as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<WriteRecord>,
}

/// The audit log's other line kinds, tagged by `kind`. Like decisions, every line carries
/// `seq` and `prev`, so one verifier walks the whole chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AuditEvent {
    /// A grant snapshot took effect (at start and on every reload). `grants` are the ids
    /// in force.
    GrantsLoaded {
        seq: u64,
        time: Timestamp,
        prev: Hash32,
        snapshot: Hash32,
        grants: Vec<String>,
        /// The canonical text ([`crate::Grant::canonical`]) of each grant this line records,
        /// by id: every grant when `since` is absent (the first snapshot of each start), else
        /// the grants new or changed since the `grants_loaded` line `since`. Lines written
        /// before texts were recorded have none.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        texts: BTreeMap<String, String>,
        /// The seq of the `grants_loaded` line whose snapshot this one replaced; a grant in
        /// `grants` without a text here is unchanged since then.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        since: Option<u64>,
    },
    /// A reload (SIGHUP) was refused: the grant files did not load, and the snapshot `kept`
    /// stays in force. `reason` names the file, the place and why.
    GrantsRefused {
        seq: u64,
        time: Timestamp,
        prev: Hash32,
        kept: Hash32,
        reason: String,
    },
    /// At start, the log ended in lines that are not links of the chain: a torn line (the
    /// writer died inside it), maybe followed by the recovery lines of starts that were cut
    /// short in turn. They are kept as they are, and the chain continues from the last
    /// complete line. `file`, `line` (1-based), `torn_bytes` and `torn_sha256` name the
    /// first of them; `interrupted` names the rest, in order.
    Recovery {
        seq: u64,
        time: Timestamp,
        prev: Hash32,
        file: String,
        line: u64,
        torn_bytes: u64,
        torn_sha256: Hash32,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        interrupted: Vec<TornLine>,
    },
    /// The owner was asked; the decision follows as an `approved` or `denied` record.
    ApprovalRequested {
        seq: u64,
        time: Timestamp,
        prev: Hash32,
        approval: String,
        binding: Hash32,
        session: SessionId,
        call: CallId,
        tool: String,
        grant: String,
        expires: Timestamp,
    },
    /// An answer that was not taken: unknown, expired, reused or for a changed request.
    ApprovalRefused {
        seq: u64,
        time: Timestamp,
        prev: Hash32,
        approval: String,
        by: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        post: Option<String>,
        refusal: Refusal,
    },
    /// The owner relabelled a note (`bxctl notes relabel`): its old and new label, bound
    /// to the hash of the bytes it holds.
    NoteRelabelled {
        seq: u64,
        time: Timestamp,
        prev: Hash32,
        by: String,
        name: String,
        hash: Hash32,
        old_class: DataClass,
        old_untrusted: bool,
        class: DataClass,
        untrusted: bool,
    },
    /// A job run began: brokerd minted `session` for `job`, which it took from `peer`
    /// (SO_PEERCRED's user, or under `bxctl dev` the runner's claim).
    JobRunStarted {
        seq: u64,
        time: Timestamp,
        prev: Hash32,
        job: JobName,
        session: SessionId,
        peer: String,
    },
    /// A job run ended: from now on every call in `session` is denied.
    JobRunEnded {
        seq: u64,
        time: Timestamp,
        prev: Hash32,
        job: JobName,
        session: SessionId,
        ended: RunEnd,
        /// The run's outcome as its runner reported it (absent when it went away first).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outcome: Option<JobOutcome>,
    },
    /// A tool run ended without a result of the tool's own: a limit of its unit stopped it
    /// (`out_of_memory`, `time_limit`) or it died. The tool's own words are not recorded.
    ToolFailed {
        seq: u64,
        time: Timestamp,
        prev: Hash32,
        session: SessionId,
        call: CallId,
        tool: String,
        failure: ToolFailure,
    },
    /// A job's run delivered its result to a note (`deliver = "note:NAME"`): brokerd wrote
    /// `note` from `session`, labelled as the session was then (`class`, `untrusted`).
    JobNoteWritten {
        seq: u64,
        time: Timestamp,
        prev: Hash32,
        job: JobName,
        session: SessionId,
        note: String,
        class: DataClass,
        untrusted: bool,
    },
    /// A runner's registration was refused: `peer` claimed `claimed`, and `reason` says
    /// why it may not run it (another job's user, not a job's user, an unknown job).
    JobRunRefused {
        seq: u64,
        time: Timestamp,
        prev: Hash32,
        peer: String,
        claimed: JobName,
        reason: String,
    },
    /// A grant change for one session: the owner answered approval `approval` with
    /// `allow_session`, so later calls of `session` under grant `grant` (as its text was:
    /// `grant_text`, the SHA-256 of its canonical text) whose subject falls in `scope` run
    /// without asking until `expires`, while the label each is decided at stays at or below
    /// `session_taint` and `untrusted`. Written before the call it came with is decided.
    AllowanceGranted {
        seq: u64,
        time: Timestamp,
        prev: Hash32,
        allowance: String,
        approval: String,
        session: SessionId,
        tool: String,
        grant: String,
        grant_text: Hash32,
        scope: Scope,
        session_taint: DataClass,
        #[serde(default, skip_serializing_if = "crate::grant::is_false")]
        untrusted: bool,
        by: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        post: Option<String>,
        expires: Timestamp,
    },
    /// The owner ended an allowance before its time (`bxctl approvals revoke`).
    AllowanceRevoked {
        seq: u64,
        time: Timestamp,
        prev: Hash32,
        allowance: String,
        by: String,
    },
    /// The owner pinned an MCP server (`bxctl mcp pin`): from now on its tools are offered
    /// as `tools` say, and a call runs only while the server's live list hashes to `hash`.
    McpPinned {
        seq: u64,
        time: Timestamp,
        prev: Hash32,
        by: String,
        server: String,
        hash: Hash32,
        tools: Vec<String>,
    },
    /// An MCP server asked the client something during a call (sampling, elicitation,
    /// roots, ...): every request was refused, and none reached the model or the owner.
    McpRefused {
        seq: u64,
        time: Timestamp,
        prev: Hash32,
        session: SessionId,
        call: CallId,
        server: String,
        refused: Vec<crate::mcp::McpRefused>,
    },
    /// An admin peer (`by`) handed brokerd a failed `bxctl verify`'s lines for the owner's
    /// channel, and what became of them.
    VerifyAlerted {
        seq: u64,
        time: Timestamp,
        prev: Hash32,
        by: String,
        lines: Vec<String>,
        outcome: crate::alert::AlertOutcome,
    },
}

/// One stored line that is not a link of the chain, as a recovery record names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TornLine {
    pub file: String,
    /// 1-based within `file`.
    pub line: u64,
    pub torn_bytes: u64,
    /// SHA-256 of the line's stored bytes (without a newline).
    pub torn_sha256: Hash32,
}

/// Any line of the audit log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AuditLine {
    Decision(AuditRecord),
    Event(AuditEvent),
}

impl AuditLine {
    /// Parses one stored line. brokerd writes every event with `kind` first and every
    /// decision with `seq` first, so the line's first key says which type to parse: one
    /// strict typed parse instead of serde's untagged trial, which buffers the whole line.
    ///
    /// A line that is UTF-8 as a whole (every line brokerd writes) is parsed as text, so
    /// that serde_json does not check the UTF-8 of each string again; any other line goes
    /// to the byte parser, which refuses it with the same error as ever.
    pub fn from_slice(line: &[u8]) -> Result<Self, serde_json::Error> {
        let event = line.starts_with(br#"{"kind":"#);
        match (std::str::from_utf8(line), event) {
            (Ok(text), true) => serde_json::from_str(text).map(Self::Event),
            (Ok(text), false) => serde_json::from_str(text).map(Self::Decision),
            (Err(_), true) => serde_json::from_slice(line).map(Self::Event),
            (Err(_), false) => serde_json::from_slice(line).map(Self::Decision),
        }
    }

    pub fn seq(&self) -> u64 {
        match self {
            Self::Decision(r) => r.seq,
            Self::Event(
                AuditEvent::GrantsLoaded { seq, .. }
                | AuditEvent::GrantsRefused { seq, .. }
                | AuditEvent::Recovery { seq, .. }
                | AuditEvent::ApprovalRequested { seq, .. }
                | AuditEvent::ApprovalRefused { seq, .. }
                | AuditEvent::NoteRelabelled { seq, .. }
                | AuditEvent::JobRunStarted { seq, .. }
                | AuditEvent::JobRunEnded { seq, .. }
                | AuditEvent::ToolFailed { seq, .. }
                | AuditEvent::JobNoteWritten { seq, .. }
                | AuditEvent::JobRunRefused { seq, .. }
                | AuditEvent::AllowanceGranted { seq, .. }
                | AuditEvent::AllowanceRevoked { seq, .. }
                | AuditEvent::McpPinned { seq, .. }
                | AuditEvent::McpRefused { seq, .. }
                | AuditEvent::VerifyAlerted { seq, .. },
            ) => *seq,
        }
    }

    pub fn prev(&self) -> Hash32 {
        match self {
            Self::Decision(r) => r.prev,
            Self::Event(
                AuditEvent::GrantsLoaded { prev, .. }
                | AuditEvent::GrantsRefused { prev, .. }
                | AuditEvent::Recovery { prev, .. }
                | AuditEvent::ApprovalRequested { prev, .. }
                | AuditEvent::ApprovalRefused { prev, .. }
                | AuditEvent::NoteRelabelled { prev, .. }
                | AuditEvent::JobRunStarted { prev, .. }
                | AuditEvent::JobRunEnded { prev, .. }
                | AuditEvent::ToolFailed { prev, .. }
                | AuditEvent::JobNoteWritten { prev, .. }
                | AuditEvent::JobRunRefused { prev, .. }
                | AuditEvent::AllowanceGranted { prev, .. }
                | AuditEvent::AllowanceRevoked { prev, .. }
                | AuditEvent::McpPinned { prev, .. }
                | AuditEvent::McpRefused { prev, .. }
                | AuditEvent::VerifyAlerted { prev, .. },
            ) => *prev,
        }
    }

    pub fn time(&self) -> Timestamp {
        match self {
            Self::Decision(r) => r.time,
            Self::Event(
                AuditEvent::GrantsLoaded { time, .. }
                | AuditEvent::GrantsRefused { time, .. }
                | AuditEvent::Recovery { time, .. }
                | AuditEvent::ApprovalRequested { time, .. }
                | AuditEvent::ApprovalRefused { time, .. }
                | AuditEvent::NoteRelabelled { time, .. }
                | AuditEvent::JobRunStarted { time, .. }
                | AuditEvent::JobRunEnded { time, .. }
                | AuditEvent::ToolFailed { time, .. }
                | AuditEvent::JobNoteWritten { time, .. }
                | AuditEvent::JobRunRefused { time, .. }
                | AuditEvent::AllowanceGranted { time, .. }
                | AuditEvent::AllowanceRevoked { time, .. }
                | AuditEvent::McpPinned { time, .. }
                | AuditEvent::McpRefused { time, .. }
                | AuditEvent::VerifyAlerted { time, .. },
            ) => *time,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text path and the byte path agree: the same value for a good line, the same
    /// error for a line that is not UTF-8 (which only the byte path sees).
    #[test]
    fn a_line_reads_the_same_as_text_or_as_bytes() {
        let line = serde_json::to_vec(&AuditLine::Decision(AuditRecord {
            seq: 3,
            time: Timestamp::from_millis(1_789_632_300_000).expect("time"),
            prev: Hash32::from_bytes([9; 32]),
            session: SessionId::new("s-1").expect("id"),
            call: CallId(3),
            tool: "read_file".into(),
            arguments: r#"{"path":"/home/é\n"}"#.into(),
            session_taint: DataClass::Private,
            decision: DecisionRecord::Denied {
                reason: DenyReason::NoGrant,
                grant: None,
                detail: Some("no grant covers \"x\"".into()),
            },
            canonical: None,
            witness: None,
            untrusted: false,
            write: None,
        }))
        .expect("encode");
        let parsed = AuditLine::from_slice(&line).expect("good line");
        assert_eq!(
            parsed,
            AuditLine::Decision(serde_json::from_slice(&line).expect("bytes"))
        );
        let at = line.windows(4).position(|w| w == b"home").expect("home");
        for bad in [&[0xff][..], &[0xc3], &[0xed, 0xa0, 0x80]] {
            let mut torn = line.clone();
            torn.splice(at..at, bad.iter().copied());
            let by_bytes = serde_json::from_slice::<AuditRecord>(&torn).expect_err("not UTF-8");
            let got = AuditLine::from_slice(&torn).expect_err("not UTF-8");
            assert_eq!(got.to_string(), by_bytes.to_string());
        }
        let zeros = "0".repeat(64);
        let mut event = format!(
            r#"{{"kind":"grants_loaded","seq":0,"time":"2026-09-17T08:05:00.000Z","prev":"{zeros}","snapshot":"{zeros}","grants":["g"]}}"#
        )
        .into_bytes();
        assert!(AuditLine::from_slice(&event).is_ok());
        let g = event.len() - 4;
        event[g] = 0xff;
        let event = &event[..];
        assert_eq!(
            AuditLine::from_slice(event).map_err(|e| e.to_string()),
            serde_json::from_slice::<AuditEvent>(event)
                .map(AuditLine::Event)
                .map_err(|e| e.to_string())
        );
    }
}
