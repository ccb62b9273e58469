//! `bxctl audit verify`: the whole chain from the stored bytes, and brokerd's checkpoint
//! (`audit/checkpoint.json`, docs/decisions.md A8) against them: the link of its seq must end
//! at its file and offset, on its line, with its hash. brokerd's start trusts the lines
//! before the checkpoint, so this (and brokerd's daily check, `--brokerd`) is where a change
//! to them is found.

use std::io::{Read, Write};
use std::path::Path;
use std::process::ExitCode;

use proto::chain::{ChainVerifier, line_hash};
use proto::checkpoint::{self, Checkpoint};
use serde_json::json;

use super::read::{files, lines};
use crate::Error;
use crate::output::print_json;

/// What became of the checkpoint.
enum Judged {
    None,
    Unreadable(String),
    /// The chain broke before it could be judged.
    Unjudged(Checkpoint),
    Agrees(Checkpoint),
    Disagrees(Checkpoint, String),
}

fn read_checkpoint(dir: &Path) -> Result<Option<Checkpoint>, String> {
    let path = dir.join(checkpoint::FILE);
    let file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let mut bytes = Vec::new();
    file.take(checkpoint::MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > checkpoint::MAX_BYTES {
        return Err(format!("larger than {} bytes", checkpoint::MAX_BYTES));
    }
    Checkpoint::decode(&bytes)
        .map(Some)
        .map_err(|e| e.to_string())
}

/// Exit 0 when the chain is good and the checkpoint (if any) agrees with it, 1 when not or
/// there is no audit log to check.
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
    let cp = read_checkpoint(dir);
    let wanted = cp.as_ref().ok().and_then(Option::as_ref);
    let mut verifier = ChainVerifier::default();
    let mut broken = None;
    // Where the line being read ends in its file; where the last line pushed ended; where
    // the link of the checkpoint's seq ended, once judged; what its own line said.
    let (mut file_at, mut offset) = (String::new(), 0u64);
    let mut pushed: Option<(String, u64)> = None;
    let mut linked_at = None;
    let mut at_line: Option<Result<(), String>> = None;
    let ended = lines(dir, |file, line, bytes| {
        if file != file_at {
            file_at = file.to_owned();
            offset = 0;
        }
        offset += u64::try_from(bytes.len()).unwrap_or(u64::MAX) + 1;
        if let Some(cp) = wanted
            && cp.file == file
            && cp.end == offset
        {
            at_line = Some(if line_hash(bytes) != cp.hash {
                Err(format!(
                    "its line hashes to {}, not {}",
                    line_hash(bytes),
                    cp.hash
                ))
            } else if line != cp.line {
                Err(format!("its line is line {line}, not {}", cp.line))
            } else {
                Ok(())
            });
        }
        let before = pushed.clone();
        let mut seen = |l: &proto::AuditLine| {
            if wanted.is_some_and(|cp| cp.seq == l.seq()) {
                linked_at = before.clone();
            }
        };
        if broken.is_none()
            && let Err(e) = verifier.push_visiting(file, line, bytes, &mut seen)
        {
            broken = Some(e);
        }
        pushed = Some((file.to_owned(), offset));
        Ok(())
    })?;
    let result = match broken {
        Some(e) => Err(e),
        None => {
            let before = pushed.clone();
            verifier.finish_visiting(ended, &mut |l| {
                if wanted.is_some_and(|cp| cp.seq == l.seq()) {
                    linked_at = before.clone();
                }
            })
        }
    };
    let judged = match cp {
        Ok(None) => Judged::None,
        Err(why) => Judged::Unreadable(why),
        Ok(Some(cp)) if result.is_err() => Judged::Unjudged(cp),
        Ok(Some(cp)) => match at_line {
            Some(Err(why)) => Judged::Disagrees(cp, why),
            None => {
                let why = format!("no line ends at byte {} of {}", cp.end, cp.file);
                Judged::Disagrees(cp, why)
            }
            Some(Ok(())) if linked_at != Some((cp.file.clone(), cp.end)) => {
                let why = format!("the link of seq {} is not the line it names", cp.seq);
                Judged::Disagrees(cp, why)
            }
            Some(Ok(())) => Judged::Agrees(cp),
        },
    };
    let good = result.is_ok() && matches!(judged, Judged::None | Judged::Agrees(_));
    let code = if good {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    if json {
        let checkpoint = match &judged {
            Judged::None => serde_json::Value::Null,
            Judged::Unreadable(why) => json!({ "agrees": false, "error": why }),
            Judged::Unjudged(cp) => {
                json!({ "seq": cp.seq, "file": cp.file, "line": cp.line, "agrees": null })
            }
            Judged::Agrees(cp) => {
                json!({ "seq": cp.seq, "file": cp.file, "line": cp.line, "agrees": true })
            }
            Judged::Disagrees(cp, why) => json!({
                "seq": cp.seq, "file": cp.file, "line": cp.line, "agrees": false, "error": why,
            }),
        };
        let value = match &result {
            Ok(s) => json!({
                "good": good,
                "dir": dir.display().to_string(),
                "records": s.lines,
                "recovered": s.recovered,
                "next_seq": s.head.next_seq,
                "head": s.head.prev,
                "torn_tail": s.torn_tail.iter().map(|t| json!({"file": t.file, "line": t.line})).collect::<Vec<_>>(),
                "checkpoint": checkpoint,
            }),
            Err(e) => json!({
                "good": false,
                "dir": dir.display().to_string(),
                "error": e.to_string(),
                "file": e.file,
                "line": e.line,
                "checkpoint": checkpoint,
            }),
        };
        print_json(&value, out)?;
        return Ok(code);
    }
    match &result {
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
        }
        Err(e) => {
            writeln!(out, "audit chain BROKEN at {}", inert::line(&e.to_string()))
                .map_err(Error::Output)?;
        }
    }
    let path = dir.join(checkpoint::FILE);
    let remedy = format!(
        "brokerd does not start on it; once the chain is good, remove {} and brokerd \
         verifies the whole log at its next start",
        path.display()
    );
    let said = match &judged {
        Judged::None => None,
        Judged::Agrees(cp) => Some(format!(
            "checkpoint at seq {} ({} line {}) agrees: brokerd's starts verify from there",
            cp.seq, cp.file, cp.line
        )),
        Judged::Unjudged(cp) => Some(format!(
            "checkpoint at seq {} ({} line {}) not judged: the chain breaks before it",
            cp.seq, cp.file, cp.line
        )),
        Judged::Unreadable(why) => Some(format!(
            "checkpoint {} UNREADABLE: {why}; {remedy}",
            path.display()
        )),
        Judged::Disagrees(cp, why) => Some(format!(
            "checkpoint at seq {} ({} line {}) DISAGREES with the log: {why}; {remedy}",
            cp.seq, cp.file, cp.line
        )),
    };
    if let Some(said) = said {
        writeln!(out, "{}", inert::line(&said)).map_err(Error::Output)?;
    }
    Ok(code)
}
