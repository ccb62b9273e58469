//! Reading the log at start: every day file in name order through proto's `ChainVerifier`
//! (the same verifier `bxctl audit verify` uses), which also says what the log ends in.
//!
//! The writer leaves lines behind it that are not links of the chain only at the very end
//! of the log: a torn line (a write was cut short), then, for every start that was itself
//! cut short while recovering, the newline it ended the torn line with and its own torn
//! recovery line. The verifier reports them all (`ChainSummary::torn_tail`), and the
//! recovery line this start writes names them all.
//!
//! Anything else that does not verify refuses start.

use std::fs;
use std::path::Path;

use proto::chain::{ChainError, ChainHead, ChainVerifier};
use proto::{AuditLine, TornLine};

use super::AuditError;
use super::files::{self, Entry};

/// What the log holds.
#[derive(Debug)]
pub(super) struct Scan {
    /// Day file names, in name (= chain) order.
    pub files: Vec<String>,
    pub head: ChainHead,
    /// Lines that are links of the chain.
    pub lines: u64,
    /// Torn lines that earlier starts already recovered.
    pub recovered: u64,
    /// The lines at the end that no recovery line names yet.
    pub tail: Option<Tail>,
}

#[derive(Debug)]
pub(super) struct Tail {
    /// Every line since the last link, in order: the torn one first.
    pub lines: Vec<TornLine>,
    /// The newest file does not end with a newline: the last line is still open.
    pub needs_newline: bool,
}

/// `linked` is shown every link of the chain, in order.
pub(super) fn scan(dir: &Path, linked: &mut dyn FnMut(&AuditLine)) -> Result<Scan, AuditError> {
    let files = day_files(dir)?;
    let chain_err = |source: ChainError| AuditError::Chain {
        dir: dir.to_owned(),
        source,
    };
    let mut verifier = ChainVerifier::default();
    let mut terminated = true;
    for (index, name) in files.iter().enumerate() {
        let bytes = files::read_log(&dir.join(name))?;
        if bytes.is_empty() {
            // A day file created just before a crash: harmless.
            continue;
        }
        terminated = bytes.ends_with(b"\n");
        let body = &bytes[..bytes.len() - usize::from(terminated)];
        if !terminated && index + 1 != files.len() {
            let count = body.split(|b| *b == b'\n').count();
            return Err(chain_err(ChainError {
                file: name.clone(),
                line: u64::try_from(count).unwrap_or(u64::MAX),
                reason: "this line has no newline, but the file is not the newest; brokerd \
                         only ever leaves a torn line at the very end of the log"
                    .into(),
            }));
        }
        for (n, text) in body.split(|b| *b == b'\n').enumerate() {
            let line = u64::try_from(n).unwrap_or(u64::MAX).saturating_add(1);
            verifier
                .push_visiting(name, line, text, linked)
                .map_err(&chain_err)?;
        }
    }
    let summary = verifier
        .finish_visiting(terminated, linked)
        .map_err(&chain_err)?;
    let tail = (!summary.torn_tail.is_empty()).then_some(Tail {
        lines: summary.torn_tail,
        needs_newline: !terminated,
    });
    Ok(Scan {
        files,
        head: summary.head,
        lines: summary.lines,
        recovered: summary.recovered,
        tail,
    })
}

/// The day files, sorted. A `*.jsonl` with another name is refused: readers walk every
/// `*.jsonl` in name order, so a stray one would sit somewhere in the chain.
fn day_files(dir: &Path) -> Result<Vec<String>, AuditError> {
    let io = |op| {
        move |source| AuditError::Io {
            path: dir.to_owned(),
            op,
            source,
        }
    };
    let mut names = Vec::new();
    for entry in fs::read_dir(dir).map_err(io("list"))? {
        let name = entry.map_err(io("list"))?.file_name();
        match files::classify(&name) {
            Entry::Day(day) => names.push(day),
            Entry::Other => {}
            Entry::Foreign => {
                return Err(AuditError::Unsafe {
                    path: dir.join(name),
                    reason: "only brokerd's YYYY-MM-DD.jsonl files may end in .jsonl here".into(),
                });
            }
        }
    }
    names.sort();
    Ok(names)
}
