//! `proto`: the types every boxmaker role speaks, and the frame codec.
//!
//! This crate holds data, the codec and the pure functions both ends of a message must
//! compute alike (the messages loopd composes and brokerd recomputes, in `composed`; the
//! audit chain's hashes, in `chain`). It has no policy, and it does no I/O except reading
//! and writing frames on a stream the caller supplies. The byte-exact fixtures in
//! `tests/fixtures/` are the wire specification; every type here rejects unknown fields,
//! floats and free-form maps, and every constructor validates (invalid input is an error,
//! never a panic).
//!
//! Layout: one module per concern, so that growing the protocol is one obvious edit:
//! a new message kind is a variant of [`Message`] in `message.rs` plus its body type in its
//! own module; a new deny reason is a variant of [`DenyReason`] in `tool.rs`.

pub mod alert;
pub mod allowance;
pub mod approval;
pub mod attest;
mod audit;
pub mod chain;
pub mod chat;
pub mod checkpoint;
mod class;
pub mod composed;
mod error;
pub mod flows;
pub mod frame;
pub mod gateway;
mod grant;
mod ids;
pub mod job;
mod log;
pub mod mcp;
mod message;
pub mod notes;
pub mod status;
mod time;
mod tool;
pub mod toolrun;
pub mod tools;

pub use attest::ToolCall;
pub use audit::{AuditEvent, AuditLine, AuditRecord, DecisionRecord, TornLine, WriteRecord};
pub use class::DataClass;
pub use error::InvalidValue;
pub use frame::{
    FrameError, MAX_FRAME, ReadError, decode_envelope, read_envelope, read_frame, write_envelope,
    write_frame,
};
pub use grant::{Constraints, Grant, IfUntrusted, Mode, TomlError, from_toml};
pub use ids::{CallId, Epoch, Hash32, SessionId, hex};
pub use job::JobName;
pub use log::{CallOutcome, LogRecord, Withdrawal};
pub use message::{Envelope, ErrorCode, Message, PROTOCOL_VERSION, WireError};
pub use time::Timestamp;
pub use tool::{DenyReason, ToolFailure, ToolRequest, ToolResponse};
