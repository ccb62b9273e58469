//! The audit hash chain, as pure functions over stored bytes. brokerd (the writer and its
//! recovery) and `bxctl audit verify` share this code, so there is one definition of a good
//! chain. It never re-serialises: `hash(line)` is SHA-256 over the exact stored bytes of the
//! line without its newline.

use crate::{AuditEvent, AuditLine, Hash32, TornLine};

pub fn line_hash(line: &[u8]) -> Hash32 {
    Hash32::digest(line)
}

/// Where verification stopped and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file} line {line}: {reason}")]
pub struct ChainError {
    pub file: String,
    /// 1-based.
    pub line: u64,
    pub reason: String,
}

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
/// names its length and hash; the chain then continues from the last complete line. That
/// start can be cut short too, leaving a torn recovery line, and so can the next: the
/// recovery line that finally completes names every line since the last link, the torn
/// one first and the interrupted recovery lines after it.
///
/// So the verifier holds lines back in a run: normally just the last line fed. A line that
/// cannot be a link (it does not parse, or its `seq` or `prev` do not follow) stays in the
/// run while the lines after it could be recovery lines cut short (they start like one and
/// do not parse); a recovery line naming exactly the run accounts for it. Anything else
/// after a line that cannot be a link is refused at that line, as before.
#[derive(Debug)]
pub struct ChainVerifier {
    head: ChainHead,
    /// The lines after `head` not judged yet, in order.
    run: Vec<Held>,
    /// Whether the run's last line is a recovery record naming every line before it.
    closed: bool,
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
    /// The lines at the very end that are not links and that no recovery line names yet:
    /// a torn line (no newline) and what follows it, or a last line that an interrupted
    /// start already ended with a newline (it is then not an audit line at all). brokerd
    /// names them all in one recovery line at its next start. Empty for a clean end.
    pub torn_tail: Vec<TornLine>,
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
            run: Vec::new(),
            closed: false,
            lines: 0,
            recovered: 0,
        }
    }

    /// Feeds one line (without its newline).
    pub fn push(&mut self, file: &str, line: u64, bytes: &[u8]) -> Result<(), ChainError> {
        self.push_visiting(file, line, bytes, &mut |_| {})
    }

    /// [`ChainVerifier::push`], showing `linked` each line the moment it is judged a link
    /// of the chain (in chain order; a line held back is shown when it is judged).
    pub fn push_visiting(
        &mut self,
        file: &str,
        line: u64,
        bytes: &[u8],
        linked: &mut dyn FnMut(&AuditLine),
    ) -> Result<(), ChainError> {
        let current = Held {
            file: file.to_owned(),
            line,
            parsed: AuditLine::from_slice(bytes),
            len: bytes.len(),
            hash: line_hash(bytes),
        };
        if !self.run.is_empty() {
            if recovers(&current, &self.run) {
                self.closed = true;
            } else if let Err(e) = self.settle(linked) {
                // The run cannot be settled: only the recovery line of a start that was
                // cut short may follow it.
                if current.parsed.is_ok() || !may_be_torn_recovery(bytes) {
                    return Err(e);
                }
                self.closed = false;
            }
        }
        self.run.push(current);
        Ok(())
    }

    /// Ends verification. `last_had_newline` says whether the stored bytes ended with a
    /// newline; if not, the lines still held are torn and are reported rather than refused.
    /// So are they when the last line ended with a newline but is not an audit line: a
    /// torn line that an interrupted start ended before it died (whoever can rewrite the
    /// last line can as well drop its newline, so this weakens nothing).
    pub fn finish(self, last_had_newline: bool) -> Result<ChainSummary, ChainError> {
        self.finish_visiting(last_had_newline, &mut |_| {})
    }

    /// [`ChainVerifier::finish`], showing `linked` the last links, as
    /// [`ChainVerifier::push_visiting`] does.
    pub fn finish_visiting(
        mut self,
        last_had_newline: bool,
        linked: &mut dyn FnMut(&AuditLine),
    ) -> Result<ChainSummary, ChainError> {
        let open = !last_had_newline || self.run.last().is_some_and(|l| l.parsed.is_err());
        let torn_tail = if open {
            self.run.drain(..).map(Held::torn).collect()
        } else {
            self.settle(linked)?;
            Vec::new()
        };
        Ok(ChainSummary {
            head: self.head,
            lines: self.lines,
            recovered: self.recovered,
            torn_tail,
        })
    }

    /// Judges the run: its last line must be a link, and the lines before it, if any, must
    /// be what that line (a recovery record) names. Changes nothing when it fails.
    fn settle(&mut self, linked: &mut dyn FnMut(&AuditLine)) -> Result<(), ChainError> {
        if self.run.len() > 1 && !self.closed {
            let first = &self.run[0];
            return Err(ChainError {
                file: first.file.clone(),
                line: first.line,
                reason: format!(
                    "this line and the {} after it are not links of the chain (a torn line, \
                     then recovery lines of starts that were cut short), and no recovery \
                     line names them",
                    self.run.len() - 1
                ),
            });
        }
        if let Some(last) = self.run.last() {
            self.head = link(self.head, last)?;
            self.lines += 1;
            if let Ok(line) = &last.parsed {
                linked(line);
            }
        }
        self.recovered += u64::try_from(self.run.len().saturating_sub(1)).unwrap_or(u64::MAX);
        self.run.clear();
        self.closed = false;
        Ok(())
    }
}

impl Held {
    fn torn(self) -> TornLine {
        TornLine {
            file: self.file,
            line: self.line,
            torn_bytes: u64::try_from(self.len).unwrap_or(u64::MAX),
            torn_sha256: self.hash,
        }
    }
}

/// The head after `held`, if it is a valid link after `head`.
fn link(head: ChainHead, held: &Held) -> Result<ChainHead, ChainError> {
    let fail = |reason: String| ChainError {
        file: held.file.clone(),
        line: held.line,
        reason,
    };
    let parsed = held
        .parsed
        .as_ref()
        .map_err(|e| fail(format!("not an audit line: {e}")))?;
    if parsed.seq() != head.next_seq {
        return Err(fail(format!(
            "seq is {}, expected {}",
            parsed.seq(),
            head.next_seq
        )));
    }
    if parsed.prev() != head.prev {
        return Err(fail(format!(
            "prev is {}, but the previous line hashes to {}",
            parsed.prev(),
            head.prev
        )));
    }
    Ok(ChainHead {
        next_seq: head.next_seq + 1,
        prev: held.hash,
    })
}

/// How brokerd's recovery lines start: a line cut short inside one is a prefix of this, or
/// (cut later) starts with it.
const RECOVERY_START: &[u8] = br#"{"kind":"recovery","#;

fn may_be_torn_recovery(bytes: &[u8]) -> bool {
    bytes.starts_with(RECOVERY_START) || (!bytes.is_empty() && RECOVERY_START.starts_with(bytes))
}

/// Whether `line` is a recovery record naming exactly the lines of `run`, in order.
fn recovers(line: &Held, run: &[Held]) -> bool {
    let Ok(AuditLine::Event(AuditEvent::Recovery {
        file,
        line: torn_line,
        torn_bytes,
        torn_sha256,
        interrupted,
        ..
    })) = &line.parsed
    else {
        return false;
    };
    let first = [(file, *torn_line, *torn_bytes, torn_sha256)];
    let rest = interrupted
        .iter()
        .map(|t| (&t.file, t.line, t.torn_bytes, &t.torn_sha256));
    run.len() == 1 + interrupted.len()
        && first
            .into_iter()
            .chain(rest)
            .zip(run)
            .all(|((f, l, n, h), held)| {
                *f == held.file
                    && l == held.line
                    && usize::try_from(n).is_ok_and(|n| n == held.len)
                    && *h == held.hash
            })
}
