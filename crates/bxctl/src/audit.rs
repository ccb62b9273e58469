//! Reading the audit log: verification with `proto`'s chain verifier over the stored bytes
//! (never re-serialised), and a listing for a person: one line per record, whatever the
//! record holds (a detail quoting the model, a tool name with a newline) shown by
//! `inert`'s single-line rule, so no record can draw a line that looks like another.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use proto::chain::ChainVerifier;
use proto::{AuditEvent, AuditLine, DecisionRecord};

use crate::{Error, err};

/// The day files, in name (and so date) order.
fn files(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error(format!("{}: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    Ok(files)
}

/// Calls `each(file name, 1-based line, bytes)` for every line; returns whether the last
/// byte of the last file was a newline.
pub(crate) fn lines(
    dir: &Path,
    mut each: impl FnMut(&str, u64, &[u8]) -> Result<(), Error>,
) -> Result<bool, Error> {
    let mut ended = true;
    for path in files(dir)? {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let mut reader = BufReader::with_capacity(
            1 << 16,
            File::open(&path).map_err(|e| Error(format!("{}: {e}", path.display())))?,
        );
        let mut buf = Vec::new();
        let mut n = 0u64;
        loop {
            buf.clear();
            let got = reader
                .read_until(b'\n', &mut buf)
                .map_err(|e| Error(format!("{}: {e}", path.display())))?;
            if got == 0 {
                break;
            }
            n += 1;
            ended = buf.last() == Some(&b'\n');
            if ended {
                buf.pop();
            }
            each(&name, n, &buf)?;
        }
    }
    Ok(ended)
}

pub fn verify(dir: &Path, out: &mut dyn Write) -> Result<ExitCode, Error> {
    let mut verifier = ChainVerifier::default();
    let mut broken = None;
    let ended = lines(dir, |file, line, bytes| {
        if broken.is_none()
            && let Err(e) = verifier.push(file, line, bytes)
        {
            broken = Some(e);
        }
        Ok(())
    })?;
    let result = match broken {
        Some(e) => Err(e),
        None => verifier.finish(ended),
    };
    match result {
        Ok(s) => {
            writeln!(
                out,
                "audit chain good: {} records, {} torn lines recovered, next seq {}, head {}",
                s.lines, s.recovered, s.head.next_seq, s.head.prev
            )
            .map_err(err)?;
            if let Some(first) = s.torn_tail.first() {
                writeln!(
                    out,
                    "note: {} line {} is torn (brokerd stopped while writing it){}; brokerd \
                     records its recovery at its next start",
                    first.file,
                    first.line,
                    match s.torn_tail.len() - 1 {
                        0 => String::new(),
                        n => format!(", and so are the {n} recovery lines after it"),
                    }
                )
                .map_err(err)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            writeln!(out, "audit chain BROKEN at {}", inert::line(&e.to_string())).map_err(err)?;
            Ok(ExitCode::from(1))
        }
    }
}

pub fn show(dir: &Path, json: bool, out: &mut dyn Write) -> Result<ExitCode, Error> {
    lines(dir, |file, line, bytes| {
        if json {
            out.write_all(bytes).map_err(err)?;
            return out.write_all(b"\n").map_err(err);
        }
        let text = match AuditLine::from_slice(bytes) {
            Ok(l) => describe(&l),
            Err(_) => format!(
                "{file}:{line}: not a record ({} bytes; a torn line, see the recovery record)",
                bytes.len()
            ),
        };
        writeln!(out, "{}", inert::line(&text)).map_err(err)
    })?;
    Ok(ExitCode::SUCCESS)
}

fn describe(line: &AuditLine) -> String {
    match line {
        AuditLine::Decision(r) => {
            let what = match &r.decision {
                DecisionRecord::Allowed { grant } => format!("ALLOWED by grant {grant}"),
                DecisionRecord::Approved {
                    grant,
                    approver,
                    post,
                } => format!(
                    "APPROVED by {approver}{} (grant {grant})",
                    post.as_ref()
                        .map(|p| format!(" in post {p}"))
                        .unwrap_or_default()
                ),
                DecisionRecord::Denied {
                    reason,
                    grant,
                    detail,
                } => format!(
                    "DENIED: {}{}{}",
                    reason.as_str(),
                    grant
                        .as_ref()
                        .map(|g| format!(" (grant {g})"))
                        .unwrap_or_default(),
                    detail
                        .as_ref()
                        .map(|d| format!(": {d}"))
                        .unwrap_or_default()
                ),
            };
            format!(
                "#{} {} session {} call {} {} {} [{}] {what}",
                r.seq,
                r.time,
                r.session,
                r.call.0,
                r.tool,
                serde_json::to_string(r.canonical.as_ref().unwrap_or(&r.arguments))
                    .unwrap_or_default(),
                r.session_taint,
            )
        }
        AuditLine::Event(e) => match e {
            AuditEvent::GrantsLoaded {
                seq,
                time,
                snapshot,
                grants,
                texts,
                since,
                ..
            } => {
                let ids = |m: &std::collections::BTreeMap<String, String>| {
                    m.keys().map(String::as_str).collect::<Vec<_>>().join(", ")
                };
                let texts = match since {
                    Some(s) if texts.is_empty() => format!("; none new or changed since #{s}"),
                    Some(s) => format!("; new or changed since #{s}: {}", ids(texts)),
                    None if texts.is_empty() => String::new(),
                    None => "; every grant's text recorded".to_owned(),
                };
                format!(
                    "#{seq} {time} grants loaded: snapshot {snapshot} ({}){texts}",
                    grants.join(", ")
                )
            }
            AuditEvent::GrantsRefused {
                seq,
                time,
                kept,
                reason,
                ..
            } => format!("#{seq} {time} grants reload REFUSED, snapshot {kept} stays: {reason}"),
            AuditEvent::Recovery {
                seq,
                time,
                file,
                line,
                torn_bytes,
                interrupted,
                ..
            } => format!(
                "#{seq} {time} recovery: {file} line {line} was torn ({torn_bytes} bytes kept){}",
                match interrupted.len() {
                    0 => String::new(),
                    n =>
                        format!(", and so were the {n} recovery lines of starts cut short after it"),
                }
            ),
            AuditEvent::ApprovalRequested {
                seq,
                time,
                approval,
                session,
                call,
                tool,
                grant,
                expires,
                ..
            } => format!(
                "#{seq} {time} approval {approval} asked: session {session} call {} {tool} \
                 (grant {grant}), expires {expires}",
                call.0
            ),
            AuditEvent::ApprovalRefused {
                seq,
                time,
                approval,
                by,
                refusal,
                ..
            } => format!("#{seq} {time} answer to {approval} by {by} REFUSED: {refusal:?}"),
        },
    }
}
