//! One record of the accounting, and how the records of a message are made: its kind, its
//! digest (or, for a session's own answer, the chain of the prompt it answers), its label,
//! and the calls that made it untrusted.

use proto::approval::CallRef;
use proto::attest::ChatMessage;
use proto::composed;
use proto::{Hash32, ToolResponse};
use serde::{Deserialize, Serialize};

use crate::policy::Labels;

/// What the owner's words, brokerd's notices and the core memory are: private, trusted
/// (the one value, [`Labels::OWNER`]).
pub const OWNER: Labels = Labels::OWNER;

/// The most calls kept as the reason one record is untrusted (for approval cards).
pub const MAX_SOURCES: usize = 4;

/// `into` with the calls of `more` added, each once, at most [`MAX_SOURCES`].
pub(super) fn add_sources(into: &mut Vec<CallRef>, more: &[CallRef]) {
    for c in more {
        if into.len() >= MAX_SOURCES {
            break;
        }
        if !into.contains(c) {
            into.push(c.clone());
        }
    }
}

/// Where the chain of a prompt's digests starts ([`chain`]).
pub(super) fn chain_start() -> Hash32 {
    Hash32::digest(b"boxmaker prompt chain")
}

/// The chain of a prompt's digests after one more message `digest`: the key of that message
/// at exactly that place, after exactly those messages. A witnessed answer is kept under the
/// chain of its prompt and itself ([`Kind::Reply`]), so the session that received it (whose
/// next prompt continues that prompt with that answer) finds it there, at its own prompt's
/// label, whatever other sessions received the same text.
pub(super) fn chain(prefix: Hash32, digest: &Hash32) -> Hash32 {
    Hash32::of_parts([
        b"chain".as_slice(),
        prefix.as_bytes().as_slice(),
        digest.as_bytes().as_slice(),
    ])
}

/// Why a digest is accounted for (kept in the record, for the reader of the file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A tool message brokerd can expect from what it returned, or a notice loopd writes for
    /// a witnessed call in place of a result.
    Tool,
    /// A witnessed answer, or another form loopd may replay it as.
    Answer,
    /// An owner's message a channel registered.
    Owner,
    /// The system message of a registered core memory.
    Core,
    /// A witnessed completion ([`completion_key`]): its prompt's labels and its calls' ids.
    Completion,
    /// A witnessed answer (or another form of it) kept under the chain of the prompt that
    /// produced it ([`chain`]): where a prompt continues that prompt with it, it is that
    /// session's own answer, labelled by that prompt alone (issue 23 point 5).
    Reply,
}

/// One durable record: `digest` is accounted at `label`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    pub kind: Kind,
    pub digest: Hash32,
    pub label: Labels,
    /// A completion's calls' ids, as the model gave them (the tool messages name them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<String>,
    /// For an untrusted record, the calls whose results made it so (at most
    /// [`MAX_SOURCES`]): what an approval card names as where its label came from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<CallRef>,
}

/// The records of the tool message loopd makes of `r` for the call `tool_call_id`, and of
/// its form cut short for a summary, at `label` (made untrusted by `sources`).
pub(super) fn tool_records(
    tool_call_id: &str,
    r: &ToolResponse,
    label: Labels,
    sources: &[CallRef],
) -> Vec<Record> {
    let text = composed::tool_text(r);
    let cut = composed::trimmed(&text);
    std::iter::once(text)
        .chain(cut)
        .map(|t| {
            record(
                Kind::Tool,
                ChatMessage::tool(tool_call_id, t.as_str()).digest(),
                label,
                sources,
            )
        })
        .collect()
}

/// One record; its sources are kept only when it is untrusted.
pub(super) fn record(kind: Kind, digest: Hash32, label: Labels, sources: &[CallRef]) -> Record {
    let mut kept = Vec::new();
    if label.untrusted {
        add_sources(&mut kept, sources);
    }
    Record {
        kind,
        digest,
        label,
        calls: Vec::new(),
        sources: kept,
    }
}
