//! The session logs (`sessions/<id>/<epoch>.jsonl`, loopd's, append only): what each log
//! gained since the last run is indexed record by record (what the owner said, the model's
//! text, tool results as loopd logged them), in the partition of the session's label as
//! brokerd exported it (`session-labels/<id>.json`; none: secret and untrusted). The logs'
//! lengths are taken before the label is read, and only bytes below them are indexed: they
//! were written before the label was read, and labels only rise. When a session's label
//! changes, all its records move to the new partition.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use noteindex::{Batch, Label, UNKNOWN};
use proto::notes::SessionLabel;
use proto::{LogRecord, SessionId};

use crate::state::{LogDone, SessionDone, Stamp};
use crate::{Error, Paths};

/// The largest label file read.
const MAX_LABEL: u64 = 4096;

/// Indexes what the logs gained; returns how many records were indexed or removed.
pub fn pass(
    paths: &Paths,
    done: &mut BTreeMap<String, SessionDone>,
    batches: &mut [Batch<'_>],
) -> Result<usize, Error> {
    let mut seen = BTreeSet::new();
    let mut changed = 0;
    for entry in crate::entries(&paths.sessions)? {
        let Some(id) = entry.to_str().filter(|n| SessionId::new(*n).is_ok()) else {
            continue;
        };
        let dir = paths.sessions.join(&entry);
        if !std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        seen.insert(id.to_owned());
        changed += session(paths, id, done, batches)?;
    }
    changed += crate::forget(done, &seen, batches, Batch::remove_session)?;
    Ok(changed)
}

/// One session's logs, opened with their lengths (before its label is read).
fn logs(paths: &Paths, id: &str) -> Result<Vec<(u64, File, u64, u64)>, Error> {
    let dir = paths.sessions.join(id);
    let mut logs = Vec::new();
    for entry in crate::entries(&dir)? {
        let Some(epoch) = entry
            .to_str()
            .and_then(|n| n.strip_suffix(".jsonl"))
            .and_then(|e| e.parse::<u64>().ok())
        else {
            continue;
        };
        // Never through a link, only a regular file (as loopd opens it).
        let Ok(file) = daemon::durable::open(&dir.join(&entry), None, 0) else {
            continue;
        };
        let meta = file.metadata().map_err(Error::io(&dir))?;
        let stamp = Stamp::of(&meta);
        logs.push((epoch, file, stamp.ino, stamp.size));
    }
    logs.sort_by_key(|l| l.0);
    Ok(logs)
}

/// The session's label as brokerd exported it; none (or one it cannot read) is secret
/// and untrusted.
fn label(paths: &Paths, id: &str) -> (Option<Stamp>, Label) {
    let path = paths.session_labels.join(format!("{id}.json"));
    let stamp = Stamp::at(&path);
    let label = daemon::durable::read_file(&path, 0o022, MAX_LABEL)
        .ok()
        .and_then(|b| serde_json::from_slice::<SessionLabel>(&b).ok())
        .map_or(UNKNOWN, |l| Label {
            class: l.class,
            untrusted: l.untrusted,
        });
    (stamp, label)
}

fn session(
    paths: &Paths,
    id: &str,
    done: &mut BTreeMap<String, SessionDone>,
    batches: &mut [Batch<'_>],
) -> Result<usize, Error> {
    let logs = logs(paths, id)?;
    let (label_stamp, label) = label(paths, id);
    let part = label.position();
    let old = done.get(id);
    let moved = old.is_none_or(|o| o.part != part);
    let unchanged = !moved
        && old.is_some_and(|o| {
            o.label == label_stamp
                && o.logs.len() == logs.len()
                && logs.iter().all(|(e, _, ino, len)| {
                    o.logs.get(e).is_some_and(|d| d.ino == *ino && d.at == *len)
                })
        });
    if unchanged {
        return Ok(0);
    }
    let mut changed = 0;
    if moved {
        for b in batches.iter_mut() {
            b.remove_session(id)?;
        }
        changed += 1;
    }
    let mut now = BTreeMap::new();
    for (epoch, mut file, ino, len) in logs {
        let from = match old.and_then(|o| o.logs.get(&epoch)) {
            Some(d) if !moved && d.ino == ino && d.at <= len => d.at,
            _ => 0,
        };
        let at = if from == len {
            from
        } else {
            if !moved {
                // What a run that did not record its progress may have put there.
                for b in batches.iter_mut() {
                    b.remove_log_from(id, epoch, from)?;
                }
            }
            let path = paths.sessions.join(id).join(format!("{epoch}.jsonl"));
            let (at, n) = index_log(&mut file, (id, epoch), from, len, &mut batches[part])
                .map_err(|e| match e {
                    LogFailure::Io(e) => Error::io(&path)(e),
                    LogFailure::Index(e) => Error::Index(e),
                })?;
            changed += n;
            at
        };
        now.insert(epoch, LogDone { ino, at });
    }
    if let Some(o) = old {
        for gone in o.logs.keys().filter(|e| !now.contains_key(e)) {
            for b in batches.iter_mut() {
                b.remove_log_from(id, *gone, 0)?;
            }
            changed += 1;
        }
    }
    done.insert(
        id.to_owned(),
        SessionDone {
            label: label_stamp,
            part,
            logs: now,
        },
    );
    Ok(changed)
}

/// Indexes the whole lines of bytes `from..len` of one log; returns the end of the last
/// whole line and how many records were indexed. A line that is not a record is skipped
/// (loopd refuses such a log; the index only loses that line).
fn index_log(
    file: &mut File,
    (id, epoch): (&str, u64),
    from: u64,
    len: u64,
    batch: &mut Batch<'_>,
) -> Result<(u64, usize), LogFailure> {
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(from)).map_err(LogFailure::Io)?;
    file.take(len - from)
        .read_to_end(&mut bytes)
        .map_err(LogFailure::Io)?;
    let mut at = from;
    let mut n = 0;
    let mut rest = bytes.as_slice();
    while let Some(end) = rest.iter().position(|&b| b == b'\n') {
        let line = &rest[..end];
        if let Some(text) = serde_json::from_slice::<LogRecord>(line)
            .ok()
            .as_ref()
            .and_then(text_of)
            && !text.trim().is_empty()
        {
            batch
                .put_record(id, epoch, at, &text)
                .map_err(LogFailure::Index)?;
            n += 1;
        }
        at += u64::try_from(end + 1).unwrap_or(0);
        rest = &rest[end + 1..];
    }
    Ok((at, n))
}

/// Why a log's new lines were not indexed.
#[derive(Debug)]
enum LogFailure {
    Io(std::io::Error),
    Index(noteindex::IndexError),
}

/// The words of a log record that a search finds: what the owner said, the model's text
/// and tool calls, a tool's result, an epoch's summary.
fn text_of(record: &LogRecord) -> Option<String> {
    match record {
        LogRecord::User { content, .. } | LogRecord::ToolResult { content, .. } => {
            Some(content.clone())
        }
        LogRecord::Assistant {
            content,
            tool_calls,
            ..
        } => {
            let mut text = content.clone().unwrap_or_default();
            for call in tool_calls {
                text.push('\n');
                text.push_str(&call.name);
                text.push(' ');
                text.push_str(&call.arguments);
            }
            Some(text)
        }
        LogRecord::EpochEnd { summary, .. } => Some(summary.clone()),
        _ => None,
    }
}
