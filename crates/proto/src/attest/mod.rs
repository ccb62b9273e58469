//! Attested context (issue 17, docs/decisions.md W1–W4): inferproxy witnesses every
//! completion it forwards and reports it to brokerd, which runs only the tool calls it was
//! told the model made.
//!
//! This module holds what both ends must compute alike: the canonical form of a chat message
//! and its digest ([`canonical`]), the fixed list of request fields a witnessable request
//! may carry ([`request`]), the assembly of a streamed answer ([`answer`]), the tool
//! definitions the model is offered and their hash ([`tools`]), and the wire bodies of
//! `witness.sock` (`witness_report`, `witness_recorded`) and a tool request's
//! [`WitnessRef`].

pub mod answer;
mod call;
pub mod canonical;
pub mod request;
pub mod tools;

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{Hash32, InvalidValue};

pub use answer::{Answer, AnswerError, MAX_ANSWER_BYTES, Piece, Timings};
pub use call::{ToolCall, WitnessedCall};
pub use canonical::{ChatMessage, ChatRole, MessageCall, MessageFunction};
pub use request::{Unwitnessable, WITNESSABLE_FIELDS, witnessable, witnessable_with};
pub use tools::{definitions, hash_of, mcp_function, offered, tools_hash};

/// The response header in which inferproxy names the completion it witnessed.
pub const COMPLETION_HEADER: &str = "x-boxmaker-completion";

/// One completion inferproxy forwarded: `c-` and 32 lower-case hex digits (128 random
/// bits, inferproxy's own).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CompletionId(String);

impl CompletionId {
    pub const LEN: usize = 34;

    pub fn new(value: impl Into<String>) -> Result<Self, InvalidValue> {
        let value = value.into();
        let digits = value.strip_prefix("c-").ok_or_else(|| {
            InvalidValue::new("completion id", "must start with \"c-\"".to_owned())
        })?;
        if digits.len() != 32
            || !digits
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        {
            return Err(InvalidValue::new(
                "completion id",
                "must be \"c-\" and 32 lower-case hex digits",
            ));
        }
        Ok(Self(value))
    }

    /// The id of 16 random bytes.
    pub fn from_random(bytes: [u8; 16]) -> Self {
        Self(format!("c-{}", crate::hex(&bytes)))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CompletionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for CompletionId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for CompletionId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::error::deserialize_str(d, |text| Self::new(text))
    }
}

/// inferproxy to brokerd on `witness.sock`: one completion it forwarded, sent before the
/// stream's `[DONE]` reaches loopd.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WitnessReport {
    pub completion: CompletionId,
    /// The digest of each message of the request, in order ([`ChatMessage::digest`]).
    pub prompt: Vec<Hash32>,
    /// The digest of the assistant message the answer is replayed as
    /// ([`Answer::message`]).
    pub answer: Hash32,
    /// The answer's tool calls in order, exactly as the model emitted them.
    pub calls: Vec<WitnessedCall>,
    /// The answer's `finish_reason` (`none` when the stream gave none).
    pub finish: String,
    /// Whether `finish` is a normal end (`stop` or `tool_calls`): only then may its calls
    /// run.
    pub runnable: bool,
    /// The digests of the other forms an honest loopd may send the answer back as
    /// ([`crate::composed::answer_forms`]: its replay without withdrawn calls, the summary
    /// message of a summary), which brokerd accounts at the same labels as `answer`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forms: Vec<Hash32>,
}

/// brokerd's answer to a [`WitnessReport`]: the record is on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WitnessRecorded {
    pub completion: CompletionId,
}

/// An owner's message a channel hands loopd: the digest of its `user` message
/// ([`crate::composed::owner`]). brokerd accounts it private and trusted (docs/decisions.md X4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnerMessage {
    pub digest: Hash32,
}

impl OwnerMessage {
    /// The registration of the owner's `text`.
    pub fn of(text: &str) -> Self {
        Self {
            digest: ChatMessage::user(text).digest(),
        }
    }
}

/// Which witnessed call a tool request is: the completion and the call's position in that
/// answer's `tool_calls`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WitnessRef {
    pub completion: CompletionId,
    pub index: u32,
}

/// What loopd keeps of the witness with an answer in its session log: the completion
/// inferproxy named, and for each call the `assistant` record keeps, its index in that
/// completion's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerWitness {
    pub completion: CompletionId,
    pub calls: Vec<u32>,
}

impl AnswerWitness {
    /// The witness of the `i`-th call the record keeps.
    pub fn of_call(&self, i: usize) -> Option<WitnessRef> {
        self.calls.get(i).map(|&index| WitnessRef {
            completion: self.completion.clone(),
            index,
        })
    }
}
