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

use crate::Error;
use crate::output::print_json;
use serde_json::json;

/// The day files, in name (and so date) order.
fn files(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|source| Error::File {
            path: dir.to_owned(),
            source,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    Ok(files)
}

/// Calls `each(file name, 1-based line, bytes)` for every line; returns whether the last
/// byte of the last file was a newline. Lines are handed over where they lie in the read
/// buffer; only a line that straddles two reads is gathered into a copy.
pub(crate) fn lines(
    dir: &Path,
    mut each: impl FnMut(&str, u64, &[u8]) -> Result<(), Error>,
) -> Result<bool, Error> {
    let mut ended = true;
    let mut straddling = Vec::new();
    for path in files(dir)? {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let io = |source| Error::File {
            path: path.clone(),
            source,
        };
        let mut reader = BufReader::with_capacity(1 << 16, File::open(&path).map_err(io)?);
        let mut n = 0u64;
        loop {
            let buf = reader.fill_buf().map_err(io)?;
            if buf.is_empty() {
                break;
            }
            let mut rest = buf;
            while let Some(i) = newline(rest) {
                n += 1;
                ended = true;
                if straddling.is_empty() {
                    each(&name, n, &rest[..i])?;
                } else {
                    straddling.extend_from_slice(&rest[..i]);
                    each(&name, n, &straddling)?;
                    straddling.clear();
                }
                rest = &rest[i + 1..];
            }
            straddling.extend_from_slice(rest);
            let read = buf.len();
            reader.consume(read);
        }
        if !straddling.is_empty() {
            n += 1;
            ended = false;
            each(&name, n, &straddling)?;
            straddling.clear();
        }
    }
    Ok(ended)
}

/// Where the first newline in `bytes` is, looking at eight bytes a step (std's memchr
/// is not public, and a byte-at-a-time search costs more than the copy it saves).
fn newline(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut at = 0;
    for chunk in bytes.chunks_exact(8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        // A zero byte in `x` is a newline in `word`; the test has no false positives
        // below the first zero byte, and the exact place is found below.
        let x = u64::from_le_bytes(word) ^ (ONES * u64::from(b'\n'));
        if x.wrapping_sub(ONES) & !x & HIGHS != 0 {
            break;
        }
        at += 8;
    }
    bytes[at..].iter().position(|&b| b == b'\n').map(|i| at + i)
}

/// Exit 0 when the chain is good, 1 when it is broken or there is no audit log to check.
pub fn verify(dir: &Path, json: bool, out: &mut dyn Write) -> Result<ExitCode, Error> {
    // A directory with no day file is no chain: say so rather than call nothing good.
    if files(dir)?.is_empty() {
        if json {
            print_json(
                &json!({ "good": false, "dir": dir.display().to_string(), "error": "no audit log" }),
                out,
            )?;
        } else {
            writeln!(
                out,
                "no audit log in {}: no `*.jsonl` day files to verify\nhelp: brokerd writes them \
                 under `audit/` in the configured home; give that directory with --dir, or \
                 --config for the stack whose log it is",
                dir.display()
            )
            .map_err(Error::Output)?;
        }
        return Ok(ExitCode::from(1));
    }
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
    if json {
        let value = match &result {
            Ok(s) => json!({
                "good": true,
                "dir": dir.display().to_string(),
                "records": s.lines,
                "recovered": s.recovered,
                "next_seq": s.head.next_seq,
                "head": s.head.prev,
                "torn_tail": s.torn_tail.iter().map(|t| json!({"file": t.file, "line": t.line})).collect::<Vec<_>>(),
            }),
            Err(e) => json!({
                "good": false,
                "dir": dir.display().to_string(),
                "error": e.to_string(),
                "file": e.file,
                "line": e.line,
            }),
        };
        print_json(&value, out)?;
        return Ok(if result.is_ok() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    match result {
        Ok(s) => {
            writeln!(
                out,
                "audit chain good: {} records, {} torn lines recovered, next seq {}, head {}",
                s.lines, s.recovered, s.head.next_seq, s.head.prev
            )
            .map_err(Error::Output)?;
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
                .map_err(Error::Output)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            writeln!(out, "audit chain BROKEN at {}", inert::line(&e.to_string()))
                .map_err(Error::Output)?;
            Ok(ExitCode::from(1))
        }
    }
}

pub fn show(dir: &Path, json: bool, out: &mut dyn Write) -> Result<ExitCode, Error> {
    lines(dir, |file, line, bytes| {
        if json {
            out.write_all(bytes).map_err(Error::Output)?;
            return out.write_all(b"\n").map_err(Error::Output);
        }
        let text = match AuditLine::from_slice(bytes) {
            Ok(l) => describe(&l),
            Err(_) => format!(
                "{file}:{line}: not a record ({} bytes; a torn line, see the recovery record)",
                bytes.len()
            ),
        };
        writeln!(out, "{}", inert::line(&text)).map_err(Error::Output)
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
            AuditEvent::NoteRelabelled {
                seq,
                time,
                by,
                name,
                hash,
                old_class,
                old_untrusted,
                class,
                untrusted,
                ..
            } => {
                let label = |c: &proto::DataClass, u: &bool| {
                    format!("{c}{}", if *u { ", untrusted" } else { "" })
                };
                format!(
                    "#{seq} {time} note {name} relabelled by {by}: {} -> {} (bytes {hash})",
                    label(old_class, old_untrusted),
                    label(class, untrusted)
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
            } => format!(
                "#{seq} {time} answer to {approval} by {by} REFUSED: {}",
                refusal.as_str()
            ),
            AuditEvent::JobRunStarted {
                seq,
                time,
                job,
                session,
                peer,
                ..
            } => format!("#{seq} {time} job {job} run started: session {session}, runner {peer}"),
            AuditEvent::JobRunEnded {
                seq,
                time,
                job,
                session,
                ended,
                ..
            } => format!(
                "#{seq} {time} job {job} run ended ({}): session {session}",
                ended.as_str()
            ),
            AuditEvent::ToolFailed {
                seq,
                time,
                session,
                call,
                tool,
                failure,
                ..
            } => format!(
                "#{seq} {time} {session} call {} {tool}: FAILED, {failure}",
                call.0
            ),
            AuditEvent::JobNoteWritten {
                seq,
                time,
                job,
                session,
                note,
                class,
                untrusted,
                ..
            } => format!(
                "#{seq} {time} job {job} delivered to note {note}: session {session}, \
                 labelled {class}{}",
                if *untrusted { ", untrusted" } else { "" }
            ),
            AuditEvent::JobRunRefused {
                seq,
                time,
                peer,
                claimed,
                reason,
                ..
            } => format!("#{seq} {time} job run REFUSED: {peer} claimed job {claimed}: {reason}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newline_is_found_at_every_offset() {
        for len in 0..40 {
            let mut bytes = vec![b'x'; len];
            assert_eq!(newline(&bytes), None);
            for at in 0..len {
                bytes.fill(b'x');
                bytes[at] = b'\n';
                if at + 1 < len {
                    bytes[len - 1] = b'\n';
                }
                assert_eq!(newline(&bytes), Some(at), "len {len} at {at}");
                // Bytes one off a newline in every lane are not one.
                bytes.fill(b'\n' ^ 1);
                bytes[at] = b'\n';
                assert_eq!(newline(&bytes), Some(at), "len {len} at {at}");
            }
        }
    }

    /// Every line comes out whole and numbered, including those that straddle two reads
    /// of the buffer, across files and up to a torn last line.
    #[test]
    fn lines_straddling_reads_come_out_whole() {
        let dir = std::env::temp_dir().join(format!("bxctl-lines-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        // Lengths that do not divide the 64 KiB buffer, so lines land across its ends.
        let first: Vec<Vec<u8>> = (0..900u32)
            .map(|i| vec![b'a' + u8::try_from(i % 26).unwrap_or(0); 150 + (i as usize * 37) % 700])
            .collect();
        let mut text = first.join(&b'\n');
        text.push(b'\n');
        std::fs::write(dir.join("2026-09-17.jsonl"), &text).expect("write");
        std::fs::write(dir.join("2026-09-18.jsonl"), b"").expect("write");
        std::fs::write(dir.join("2026-09-19.jsonl"), b"one\n\ntorn").expect("write");
        let mut got = Vec::new();
        let ended = lines(&dir, |file, n, bytes| {
            got.push((file.to_owned(), n, bytes.to_vec()));
            Ok(())
        })
        .expect("lines");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(!ended, "the last line is torn");
        let mut want: Vec<(String, u64, Vec<u8>)> = first
            .into_iter()
            .zip(1..)
            .map(|(l, n)| ("2026-09-17.jsonl".to_owned(), n, l))
            .collect();
        for (n, l) in [(1, &b"one"[..]), (2, b""), (3, b"torn")] {
            want.push(("2026-09-19.jsonl".to_owned(), n, l.to_vec()));
        }
        assert_eq!(got.len(), want.len());
        assert!(got == want, "lines differ");
    }
}
