//! Reading the log at start: every day file in name order through proto's `ChainVerifier`
//! (the same verifier `bxctl audit verify` uses), then a decision about the last line.
//!
//! The writer leaves at most one line behind it that is not a link of the chain, and only
//! at the very end of the log:
//! - torn: the last file does not end with a newline (a write was cut short);
//! - terminated: the last line ends with a newline but is not an audit line at all. That is
//!   a torn line whose newline start-up recovery wrote before it died, ahead of the
//!   recovery line. Treating it as torn weakens nothing: whoever can rewrite the last line
//!   can as well drop its newline.
//!
//! Anything else that does not verify refuses start.

use std::fs;
use std::path::Path;

use proto::AuditLine;
use proto::chain::{ChainError, ChainHead, ChainVerifier};

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
    pub tail: Tail,
}

#[derive(Debug)]
pub(super) enum Tail {
    Clean,
    /// The last file does not end with a newline.
    Torn(Line),
    /// The last line is not an audit line but ends with a newline.
    Terminated(Line),
}

/// The last line of the newest file read so far, inside that file's bytes.
struct Last {
    /// Index into the day file names.
    file: usize,
    line: u64,
    text: std::ops::Range<usize>,
    bytes: Vec<u8>,
    terminated: bool,
}

impl Last {
    fn text(&self) -> &[u8] {
        &self.bytes[self.text.clone()]
    }
}

/// One stored line (without its newline).
#[derive(Debug)]
pub(super) struct Line {
    pub file: String,
    /// 1-based within its file.
    pub line: u64,
    pub bytes: Vec<u8>,
}

pub(super) fn scan(dir: &Path) -> Result<Scan, AuditError> {
    let files = day_files(dir)?;
    let chain_err = |source: ChainError| AuditError::Chain {
        dir: dir.to_owned(),
        source,
    };
    let mut verifier = ChainVerifier::default();
    // The verifier holds every line back by one; this loop holds back only the last line of
    // the newest file read so far (inside the file's own buffer), so that the final line
    // of the log can be judged on its own below.
    let mut last: Option<Last> = None;
    // The file index and line of the line pushed just before the final one.
    let mut before_last: Option<(usize, u64)> = None;
    for (index, name) in files.iter().enumerate() {
        let bytes = files::read_log(&dir.join(name))?;
        if bytes.is_empty() {
            // A day file created just before a crash: harmless.
            continue;
        }
        let terminated = bytes.ends_with(b"\n");
        let body_len = bytes.len() - usize::from(terminated);
        let body = &bytes[..body_len];
        let count = body.split(|b| *b == b'\n').count();
        if !terminated && index + 1 != files.len() {
            return Err(chain_err(ChainError {
                file: name.clone(),
                line: u64::try_from(count).unwrap_or(u64::MAX),
                reason: "this line has no newline, but the file is not the newest; brokerd \
                         only ever leaves a torn line at the very end of the log"
                    .into(),
            }));
        }
        if let Some(held) = last.take() {
            verifier
                .push(&files[held.file], held.line, held.text())
                .map_err(&chain_err)?;
            before_last = Some((held.file, held.line));
        }
        let mut start = 0;
        for (n, text) in body.split(|b| *b == b'\n').enumerate().take(count - 1) {
            let line = u64::try_from(n).unwrap_or(u64::MAX).saturating_add(1);
            verifier.push(name, line, text).map_err(&chain_err)?;
            before_last = Some((index, line));
            start += text.len() + 1;
        }
        last = Some(Last {
            file: index,
            line: u64::try_from(count).unwrap_or(u64::MAX),
            text: start..body_len,
            bytes,
            terminated,
        });
    }
    let Some(held) = last else {
        let summary = verifier.finish(true).map_err(&chain_err)?;
        return Ok(Scan {
            files,
            head: summary.head,
            lines: summary.lines,
            recovered: summary.recovered,
            tail: Tail::Clean,
        });
    };
    let final_terminated = held.terminated;
    if let Err(e) = verifier.push(&files[held.file], held.line, held.text()) {
        let before_last = before_last.map(|(file, line)| (files[file].as_str(), line));
        return Err(chain_err(explain_double_tear(
            e,
            before_last,
            final_terminated,
        )));
    }
    let final_line = Line {
        file: files[held.file].clone(),
        line: held.line,
        bytes: held.text().to_vec(),
    };
    // Everything before the final line is verified; the final line is still held back.
    let summary = verifier.finish(false).map_err(&chain_err)?;
    let mut scan = Scan {
        files,
        head: summary.head,
        lines: summary.lines,
        recovered: summary.recovered,
        tail: Tail::Clean,
    };
    if !final_terminated {
        scan.tail = Tail::Torn(final_line);
        return Ok(scan);
    }
    let mut last_link = ChainVerifier::new(summary.head);
    last_link
        .push(&final_line.file, final_line.line, &final_line.bytes)
        .map_err(&chain_err)?;
    match last_link.finish(true) {
        Ok(end) => {
            scan.head = end.head;
            scan.lines += end.lines;
        }
        Err(_) if serde_json::from_slice::<AuditLine>(&final_line.bytes).is_err() => {
            scan.tail = Tail::Terminated(final_line);
        }
        Err(e) => return Err(chain_err(e)),
    }
    Ok(scan)
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

/// A torn line followed by a torn line: start-up recovery itself was cut short while
/// writing its recovery line. The chain cannot be extended past two adjacent non-links
/// (a recovery line accounts for the one line right before it), so say so plainly.
fn explain_double_tear(
    e: ChainError,
    before_last: Option<(&str, u64)>,
    final_terminated: bool,
) -> ChainError {
    let at_before_last = before_last.is_some_and(|(file, line)| file == e.file && line == e.line);
    if final_terminated || !at_before_last {
        return e;
    }
    ChainError {
        reason: format!(
            "{}; the line after it is torn too, as when brokerd was killed while recovering a \
             torn line, and two torn lines in a row cannot be recovered",
            e.reason
        ),
        ..e
    }
}
