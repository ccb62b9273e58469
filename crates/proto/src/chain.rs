//! The audit hash chain, as pure functions over stored bytes. brokerd (the writer and its
//! recovery) and `bxctl audit verify` share this code, so there is one definition of a good
//! chain. It never re-serialises: `hash(line)` is SHA-256 over the exact stored bytes of the
//! line without its newline.

use std::fmt;

use crate::{AuditEvent, AuditLine, Hash32};

pub fn line_hash(line: &[u8]) -> Hash32 {
    Hash32::digest(line)
}

/// Where verification stopped and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainError {
    pub file: String,
    /// 1-based.
    pub line: u64,
    pub reason: String,
}

impl fmt::Display for ChainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} line {}: {}", self.file, self.line, self.reason)
    }
}

impl std::error::Error for ChainError {}

/// The state after the last verified line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainHead {
    /// The `seq` the next line must carry.
    pub next_seq: u64,
    /// The hash the next line's `prev` must carry.
    pub prev: Hash32,
}

impl ChainHead {
    pub const GENESIS: Self = Self {
        next_seq: 0,
        prev: Hash32::ZERO,
    };
}

/// Feeds lines in order (files in name order, lines in file order) and checks every link.
///
/// A line that is not followed by a newline is torn (the writer died inside it). brokerd,
/// on its next start, keeps it, ends it with a newline and appends a `recovery` line that
/// names its length and hash; the chain then continues from the last complete line. So the
/// verifier holds each line back by one: if the next line is a recovery naming it, the
/// held line is skipped; otherwise it must be a valid link.
#[derive(Debug)]
pub struct ChainVerifier {
    head: ChainHead,
    held: Option<Held>,
    lines: u64,
    recovered: u64,
}

/// A line fed but not yet judged: parsed once, with what the checks need of its bytes.
#[derive(Debug)]
struct Held {
    file: String,
    line: u64,
    parsed: Result<AuditLine, serde_json::Error>,
    len: usize,
    hash: Hash32,
}

/// What a whole verification found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainSummary {
    pub head: ChainHead,
    /// Lines that are links of the chain.
    pub lines: u64,
    /// Torn lines that a recovery line accounts for.
    pub recovered: u64,
    /// The very last line had no newline and no recovery yet (brokerd adds one at start).
    pub torn_tail: Option<(String, u64)>,
}

impl Default for ChainVerifier {
    fn default() -> Self {
        Self::new(ChainHead::GENESIS)
    }
}

impl ChainVerifier {
    pub fn new(head: ChainHead) -> Self {
        Self {
            head,
            held: None,
            lines: 0,
            recovered: 0,
        }
    }

    /// Feeds one line (without its newline).
    pub fn push(&mut self, file: &str, line: u64, bytes: &[u8]) -> Result<(), ChainError> {
        let current = Held {
            file: file.to_owned(),
            line,
            parsed: AuditLine::from_slice(bytes),
            len: bytes.len(),
            hash: line_hash(bytes),
        };
        if let Some(held) = self.held.take() {
            if recovers(&current, &held) {
                self.recovered += 1;
            } else {
                self.link(&held)?;
            }
        }
        self.held = Some(current);
        Ok(())
    }

    /// Ends verification. `last_had_newline` says whether the stored bytes ended with a
    /// newline; if not, the last line is torn and is reported rather than refused.
    pub fn finish(mut self, last_had_newline: bool) -> Result<ChainSummary, ChainError> {
        let mut torn_tail = None;
        if let Some(held) = self.held.take() {
            if last_had_newline {
                self.link(&held)?;
            } else {
                torn_tail = Some((held.file, held.line));
            }
        }
        Ok(ChainSummary {
            head: self.head,
            lines: self.lines,
            recovered: self.recovered,
            torn_tail,
        })
    }

    fn link(&mut self, held: &Held) -> Result<(), ChainError> {
        let fail = |reason: String| ChainError {
            file: held.file.clone(),
            line: held.line,
            reason,
        };
        let parsed = held
            .parsed
            .as_ref()
            .map_err(|e| fail(format!("not an audit line: {e}")))?;
        if parsed.seq() != self.head.next_seq {
            return Err(fail(format!(
                "seq is {}, expected {}",
                parsed.seq(),
                self.head.next_seq
            )));
        }
        if parsed.prev() != self.head.prev {
            return Err(fail(format!(
                "prev is {}, but the previous line hashes to {}",
                parsed.prev(),
                self.head.prev
            )));
        }
        self.head = ChainHead {
            next_seq: self.head.next_seq + 1,
            prev: held.hash,
        };
        self.lines += 1;
        Ok(())
    }
}

/// Whether `line` is a recovery record naming `torn` exactly.
fn recovers(line: &Held, torn: &Held) -> bool {
    let Ok(AuditLine::Event(AuditEvent::Recovery {
        file,
        line: torn_line,
        torn_bytes,
        torn_sha256,
        ..
    })) = &line.parsed
    else {
        return false;
    };
    *file == torn.file
        && *torn_line == torn.line
        && usize::try_from(*torn_bytes).is_ok_and(|n| n == torn.len)
        && *torn_sha256 == torn.hash
}
