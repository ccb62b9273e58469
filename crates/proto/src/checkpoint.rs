//! brokerd's audit checkpoint (`audit/checkpoint.json`, docs/decisions.md A8): how far the
//! chain was verified, and what brokerd rebuilds from the lines up to there, so that a start
//! reads only the lines after it. brokerd writes it; `bxctl audit verify` checks it against
//! the bytes, with the same types.
//!
//! The owner's channel asks brokerd to verify the whole chain (`audit_verify`, what the daily
//! timer's `bxctl audit verify --brokerd` sends), answered with [`AuditVerified`].
//!
//! The file is two lines: the body (JSON), then the SHA-256 of the body's bytes in hex. A
//! file that is not exactly that (torn, garbled, a hash that does not match) is refused, as
//! is a body brokerd does not write.

use serde::{Deserialize, Serialize};

use crate::Hash32;
use crate::attest::WitnessRef;

/// The file's name in the audit directory (not `*.jsonl`: readers of the chain skip it).
pub const FILE: &str = "checkpoint.json";
/// The temp file it is written through.
pub const TMP: &str = "checkpoint.json.tmp";
/// The largest checkpoint read or written.
pub const MAX_BYTES: u64 = 64 << 20;
/// The body's version.
pub const VERSION: u32 = 1;

/// A link of the chain that was verified, and what the lines up to it left for brokerd.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    pub v: u32,
    /// The day file holding the line.
    pub file: String,
    /// The byte offset just after the line's newline, in `file`.
    pub end: u64,
    /// The line's number in `file` (1-based).
    pub line: u64,
    /// The line's `seq`.
    pub seq: u64,
    /// The SHA-256 of the line's bytes (the next line's `prev`).
    pub hash: Hash32,
    /// Torn lines that recovery lines up to it account for.
    pub recovered: u64,
    /// The witnessed calls the decision lines up to it used, of the reports the witness
    /// store kept when it was written (docs/decisions.md W9).
    pub used: Vec<WitnessRef>,
}

/// What brokerd's verification of the whole chain found (`audit_verified`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case", deny_unknown_fields)]
pub enum AuditVerified {
    /// Every line up to the link before `next_seq` verified, and the checkpoint agreed.
    Good {
        records: u64,
        recovered: u64,
        next_seq: u64,
        head: Hash32,
        /// The seq of the checkpoint written there (absent: none could be written; brokerd's
        /// log says why).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        checkpoint: Option<u64>,
    },
    /// The chain does not verify, or the checkpoint does not match it, or a day file could
    /// not be read: brokerd's words, naming the file and line. Also in brokerd's journal,
    /// and posted on Mattermost when the gateway is on.
    Broken { detail: String },
    /// brokerd is stopping: nothing was concluded.
    Stopped,
}

/// Why checkpoint bytes were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CheckpointError(String);

impl Checkpoint {
    /// The file's bytes: the body, a newline, its SHA-256 in hex, a newline.
    pub fn encode(&self) -> Vec<u8> {
        // A struct of strings, numbers and hashes: encoding cannot fail.
        let mut bytes = serde_json::to_vec(self).unwrap_or_default();
        let hash = Hash32::digest(&bytes).to_hex();
        bytes.push(b'\n');
        bytes.extend_from_slice(hash.as_bytes());
        bytes.push(b'\n');
        bytes
    }

    /// Reads the file's bytes back, refusing anything [`Checkpoint::encode`] never makes.
    pub fn decode(bytes: &[u8]) -> Result<Self, CheckpointError> {
        let fail = |why: &str| Err(CheckpointError(why.to_owned()));
        let Some(text) = bytes.strip_suffix(b"\n") else {
            return fail("it does not end with a newline (torn)");
        };
        let Some(at) = text.iter().position(|&b| b == b'\n') else {
            return fail("it has no hash line (torn)");
        };
        let (body, hash) = (&text[..at], &text[at + 1..]);
        let Ok(hash) = std::str::from_utf8(hash)
            .map_err(drop)
            .and_then(|h| Hash32::from_hex(h).map_err(drop))
        else {
            return fail("its second line is not a SHA-256 in hex (garbled)");
        };
        if Hash32::digest(body) != hash {
            return fail("its body does not hash to its second line (garbled)");
        }
        let cp: Self = serde_json::from_slice(body)
            .map_err(|e| CheckpointError(format!("its body is not a checkpoint: {e}")))?;
        if cp.v != VERSION {
            return Err(CheckpointError(format!(
                "version {} (this brokerd writes {VERSION})",
                cp.v
            )));
        }
        if cp.end == 0 {
            return fail("it names no line (offset 0)");
        }
        Ok(cp)
    }
}
