//! Reading the log through proto's `ChainVerifier` (the verifier `bxctl audit verify`
//! uses), a line at a time: at start from the checkpoint (or the first line) to the end,
//! which also says what the log ends in; and, for a full verification while brokerd serves,
//! from the first line to a link the writer had reached, checking the checkpoint on the way.
//!
//! The writer leaves lines behind it that are not links of the chain only at the very end
//! of the log: a torn line (a write was cut short), then, for every start that was itself
//! cut short while recovering, the newline it ended the torn line with and its own torn
//! recovery line. The verifier reports them all (`ChainSummary::torn_tail`), and the
//! recovery line this start writes names them all.
//!
//! Anything else that does not verify refuses start.

use std::fs;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use proto::chain::{ChainError, ChainHead, ChainVerifier, line_hash};
use proto::checkpoint::Checkpoint;
use proto::{AuditLine, Hash32, TornLine};

use super::AuditError;
use super::checkpoint::Problem;
use super::files::{self, Entry};

/// Where a line of the log ends: its file, the offset after its newline, its line number
/// (1-based) in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spot {
    pub file: String,
    pub end: u64,
    pub line: u64,
}

/// A link of the chain and where it ends: what a checkpoint names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    pub at: Spot,
    pub seq: u64,
    pub hash: Hash32,
    /// Torn lines that recovery lines up to it account for.
    pub recovered: u64,
}

/// What part of the log a walk reads.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Range<'a> {
    /// From the line after this checkpoint (already checked against the bytes), else from
    /// the first line.
    pub from: Option<&'a Checkpoint>,
    /// To this link, else to the end of the log.
    pub to: Option<&'a Position>,
    /// A checkpoint the lines read must agree with: the link of its seq ends where it says.
    pub agree: Option<&'a Checkpoint>,
    /// Set when brokerd stops: the walk ends early with [`AuditError::Stopped`] (it looks
    /// before each file and every 4096 lines).
    pub stop: Option<&'a AtomicBool>,
}

/// What a walk found.
#[derive(Debug)]
pub(super) struct Scan {
    /// Day file names, in name (= chain) order; all of them, read or not.
    pub files: Vec<String>,
    pub head: ChainHead,
    /// Links of the chain, in the whole log (those up to the checkpoint counted from it).
    pub lines: u64,
    /// Torn lines that recovery lines account for, in the whole log.
    pub recovered: u64,
    /// The lines at the end that no recovery line names yet.
    pub tail: Option<Tail>,
    /// Where the last link ends, if the log has one.
    pub last: Option<Spot>,
    /// Where the last file read ends.
    pub end: Option<Spot>,
    /// Bytes read (the checkpoint's own line not counted).
    pub read: u64,
}

#[derive(Debug)]
pub(super) struct Tail {
    /// Every line since the last link, in order: the torn one first.
    pub lines: Vec<TornLine>,
    /// The newest file does not end with a newline: the last line is still open.
    pub needs_newline: bool,
}

/// Walks `range` of the log in `dir`; `linked` is shown every link read, in order.
pub(super) fn scan(
    dir: &Path,
    range: Range<'_>,
    linked: &mut dyn FnMut(&AuditLine),
) -> Result<Scan, AuditError> {
    let files = day_files(dir)?;
    let chain_err = |source: ChainError| AuditError::Chain {
        dir: dir.to_owned(),
        chain: source,
    };
    let cp_err = |why: String| AuditError::Checkpoint {
        path: super::checkpoint::path(dir),
        problem: Problem::Mismatch(why),
    };
    let (first, mut verifier, mut pushed, before) = match range.from {
        None => (0, ChainVerifier::default(), None, (0, 0)),
        Some(cp) => {
            let Some(i) = files.iter().position(|f| *f == cp.file) else {
                return Err(cp_err(format!("it names {}, which is not there", cp.file)));
            };
            let head = ChainHead {
                next_seq: cp.seq + 1,
                prev: cp.hash,
            };
            let at = Spot {
                file: cp.file.clone(),
                end: cp.end,
                line: cp.line,
            };
            (
                i,
                ChainVerifier::new(head),
                Some(at),
                (cp.seq + 1, cp.recovered),
            )
        }
    };
    // The spot of the last line pushed, and of the last link judged: the verifier judges a
    // line a link when the next one is pushed (or at the end), and the line it judges is
    // always the last one pushed before.
    let mut last = pushed.clone();
    let mut agreed = None;
    let mut judged = |pushed: &Option<Spot>, l: &AuditLine| {
        if range.agree.is_some_and(|cp| cp.seq == l.seq()) {
            agreed = pushed.clone();
        }
        linked(l);
        pushed.clone()
    };
    let (mut read, mut terminated, mut end) = (0u64, true, None);
    let mut count = 0u64;
    for (index, name) in files.iter().enumerate().skip(first) {
        let (from, line0) = match range.from {
            Some(cp) if index == first => (cp.end, cp.line),
            _ => (0, 0),
        };
        if range.stop.is_some_and(|s| s.load(Ordering::SeqCst)) {
            return Err(AuditError::Stopped);
        }
        let bound = range.to.filter(|p| p.at.file == *name).map(|p| p.at.end);
        let path = dir.join(name);
        let file = files::open_read(&path)?;
        let mut n = line0;
        let mut open_line = false;
        let walked = lines(&file, &path, from, bound, |text, at, newline| {
            n += 1;
            count += 1;
            if range
                .stop
                .is_some_and(|s| count.is_multiple_of(4096) && s.load(Ordering::SeqCst))
            {
                return Err(AuditError::Stopped);
            }
            open_line = !newline;
            if let Some(cp) = range.agree
                && cp.file == *name
                && cp.end == at
                && (line_hash(text) != cp.hash || cp.line != n)
            {
                return Err(cp_err(format!(
                    "the line ending at byte {at} of {name} (line {n}) is not the one it \
                     names (line {}, hash {})",
                    cp.line, cp.hash
                )));
            }
            let mut seen = |l: &AuditLine| last = judged(&pushed, l);
            verifier
                .push_visiting(name, n, text, &mut seen)
                .map_err(&chain_err)?;
            pushed = Some(Spot {
                file: name.clone(),
                end: at,
                line: n,
            });
            Ok(())
        })?;
        read += walked.read;
        end = Some(Spot {
            file: name.clone(),
            end: walked.end,
            line: n,
        });
        if walked.read == 0 {
            // A day file created just before a crash, or nothing after the checkpoint.
            if bound.is_some() {
                break;
            }
            continue;
        }
        terminated = !open_line;
        if open_line && index + 1 != files.len() && bound.is_none() {
            return Err(chain_err(ChainError {
                file: name.clone(),
                line: n,
                reason: "this line has no newline, but the file is not the newest; brokerd \
                         only ever leaves a torn line at the very end of the log"
                    .into(),
            }));
        }
        if bound.is_some() {
            break;
        }
    }
    let mut seen = |l: &AuditLine| last = judged(&pushed, l);
    let summary = verifier
        .finish_visiting(terminated, &mut seen)
        .map_err(&chain_err)?;
    if let Some(cp) = range.agree {
        let names = Some(Spot {
            file: cp.file.clone(),
            end: cp.end,
            line: cp.line,
        });
        if agreed != names {
            return Err(cp_err(format!(
                "no link of seq {} ends at byte {} of {}",
                cp.seq, cp.end, cp.file
            )));
        }
    }
    let tail = (!summary.torn_tail.is_empty()).then_some(Tail {
        lines: summary.torn_tail,
        needs_newline: !terminated,
    });
    Ok(Scan {
        files,
        head: summary.head,
        lines: before.0 + summary.lines,
        recovered: before.1 + summary.recovered,
        tail,
        last: (summary.head.next_seq > 0).then_some(last).flatten(),
        end,
        read,
    })
}

/// How far a file was read.
struct Walked {
    /// Bytes read.
    read: u64,
    /// The offset reading ended at.
    end: u64,
}

/// Calls `each(line, offset after it, whether it ended with a newline)` for every line of
/// `file` from byte `from` (where a line starts) to `to` (where one ends) or the end.
/// Lines are handed over where they lie in the read buffer; only a line that straddles two
/// reads is gathered into a copy.
fn lines(
    file: &fs::File,
    path: &Path,
    from: u64,
    to: Option<u64>,
    mut each: impl FnMut(&[u8], u64, bool) -> Result<(), AuditError>,
) -> Result<Walked, AuditError> {
    let io = |source| AuditError::Io {
        path: path.to_owned(),
        op: "read",
        error: source,
    };
    let mut f = file;
    f.seek(SeekFrom::Start(from)).map_err(io)?;
    let limit = to.map_or(u64::MAX, |to| to.saturating_sub(from));
    let mut reader = BufReader::with_capacity(1 << 16, f.take(limit));
    let (mut at, mut straddling) = (from, Vec::new());
    loop {
        let buf = reader.fill_buf().map_err(io)?;
        if buf.is_empty() {
            break;
        }
        let read = buf.len();
        let mut rest = buf;
        while let Some(i) = rest.iter().position(|&b| b == b'\n') {
            at += u64::try_from(straddling.len() + i + 1).unwrap_or(u64::MAX);
            if straddling.is_empty() {
                each(&rest[..i], at, true)?;
            } else {
                straddling.extend_from_slice(&rest[..i]);
                each(&straddling, at, true)?;
                straddling.clear();
            }
            rest = &rest[i + 1..];
        }
        straddling.extend_from_slice(rest);
        reader.consume(read);
    }
    if !straddling.is_empty() {
        at += u64::try_from(straddling.len()).unwrap_or(u64::MAX);
        each(&straddling, at, false)?;
    }
    Ok(Walked {
        read: at - from,
        end: at,
    })
}

/// The day files, sorted. A `*.jsonl` with another name is refused: readers walk every
/// `*.jsonl` in name order, so a stray one would sit somewhere in the chain.
fn day_files(dir: &Path) -> Result<Vec<String>, AuditError> {
    let io = |op| {
        move |source| AuditError::Io {
            path: dir.to_owned(),
            op,
            error: source,
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
