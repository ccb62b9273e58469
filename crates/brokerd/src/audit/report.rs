//! What the writer tells its caller: a line that is on disk, and what an open found and
//! recovered, as a start says it in its log.

use std::fmt;

use proto::chain::ChainHead;
use proto::checkpoint::Checkpoint;
use proto::{Hash32, TornLine};

/// A line that is on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    pub seq: u64,
    /// SHA-256 of the stored line: the next line's `prev`.
    pub hash: Hash32,
}

/// What `open` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenReport {
    /// Day files found, empty ones included.
    pub files: usize,
    /// Chain links found (not counting a recovery line this open wrote).
    pub lines: u64,
    /// Torn lines that earlier starts had already recovered.
    pub earlier_recoveries: u64,
    /// The torn lines this open recovered, if the log ended with any.
    pub recovered: Option<Recovered>,
    /// Where the next line continues.
    pub head: ChainHead,
    /// The checkpoint the verification began after (none: it began at the first line).
    pub from: Option<Checkpoint>,
    /// Bytes of day files read, past the checkpoint.
    pub read: u64,
}

/// The lines at the end of the log that this open kept and accounted for with one
/// `recovery` line: a torn line, then the torn recovery lines of starts cut short.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// In order; never empty.
    pub torn: Vec<TornLine>,
    /// Whether this open had to end the last of them with a newline (false when an
    /// earlier, interrupted start already had).
    pub newline_added: bool,
    /// The recovery line.
    pub recovery: Appended,
}

impl fmt::Display for OpenReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} records in {} files, next seq {}",
            self.lines, self.files, self.head.next_seq
        )?;
        match &self.from {
            Some(cp) => write!(
                f,
                "; verified past its checkpoint (seq {}, {} line {}): {} bytes read",
                cp.seq, cp.file, cp.line, self.read
            )?,
            None => write!(
                f,
                "; verified from its first line: {} bytes read",
                self.read
            )?,
        }
        if let Some(r) = &self.recovered
            && let Some(first) = r.torn.first()
        {
            write!(
                f,
                "; recovered a torn line ({} bytes) at {} line {}",
                first.torn_bytes, first.file, first.line
            )?;
            if r.torn.len() > 1 {
                write!(
                    f,
                    " and the {} torn recovery lines of starts cut short after it",
                    r.torn.len() - 1
                )?;
            }
        }
        Ok(())
    }
}
