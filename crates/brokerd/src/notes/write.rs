//! A note write: what the write unit left in its per-call directory is checked, and brokerd
//! writes the note itself (temp file, fsync, rename) with the label it computed: `replace`
//! takes the writer's, `append` the higher of the note's and the writer's. Text an
//! untrusted session wrote gets a header line brokerd writes; a body line that would read
//! as one is escaped. And the owner's relabel.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use proto::approval::CallRef;
use proto::notes::{HEADER_MARK, MAX_NOTE, NoteRecord, NoteRelabel, NoteRelabelled, file_name};
use proto::tools::{MAX_ARGUMENTS, NoteMode};
use proto::{AuditEvent, AuditLine, DataClass, Hash32, Timestamp};

use super::{NoteError, Notes, escape_body};
use crate::audit::{AuditError, AuditLog};
use crate::policy::Labels;
use crate::sessions::{MAX_UNTRUSTED_BY, SessionState};

/// A note write's outcome: what the model is told, and the label of what that tells of the
/// note as it was (an append's: the note's; otherwise none).
#[derive(Debug)]
pub struct Committed {
    pub read: Labels,
    pub answer: Result<String, NoteError>,
}

impl Notes {
    /// A fresh, empty directory the write unit `unit` may write into: only brokerd can
    /// reach it on the host (its parents are brokerd's, 0700), and the unit, which runs as
    /// another user, finds it bound writable.
    pub fn incoming(&self, unit: &str) -> Result<PathBuf, NoteError> {
        let dir = self.incoming.join(unit);
        match std::fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(NoteError::io(&dir)(e));
            }
            _ => {}
        }
        std::fs::create_dir(&dir).map_err(NoteError::io(&dir))?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777))
            .map_err(NoteError::io(&dir))?;
        Ok(dir)
    }

    /// Removes a write unit's directory (best effort: a leftover is cleared at next start).
    pub fn discard(&self, dir: &Path) {
        let _ = std::fs::remove_dir_all(dir);
    }

    /// Checks what the write unit for `name` left in `dir` and writes the note, labelled
    /// from `writer` (the session's state now). Returns what the model is told, and the
    /// label of what that tells of the note as it was.
    pub fn commit(
        &self,
        name: &str,
        mode: NoteMode,
        dir: &Path,
        writer: &SessionState,
    ) -> Committed {
        let text = match left_text(name, dir) {
            Ok(text) => text,
            Err(e) => {
                return Committed {
                    read: Labels::NONE,
                    answer: Err(e),
                };
            }
        };
        let _held = self.lock();
        let old = self.find(name);
        let appends = matches!(mode, NoteMode::Append);
        // Something brokerd cannot read where the note is (a link, not a regular file, or
        // larger than a note may be): an append to it is refused, never a replace of it.
        let unreadable = old.bytes.is_none() && std::fs::symlink_metadata(self.path(name)).is_ok();
        // An append's answer, written or refused, holds the note as it was (its size and
        // hash, its label, or that it is there): it reads as a read of the note would (a
        // `write_file`'s is labelled like a read of its file likewise, H9).
        let read = match appends && (old.bytes.is_some() || unreadable) {
            true => old.labels,
            false => Labels::NONE,
        };
        let answer = match appends && unreadable {
            true => Err(NoteError::Unreadable {
                name: name.to_owned(),
            }),
            false => self.write_held(name, mode, text, old, writer),
        };
        Committed { read, answer }
    }

    /// [`Notes::commit`]'s write, the notes' lock held: `old` is the note as it is.
    fn write_held(
        &self,
        name: &str,
        mode: NoteMode,
        text: String,
        old: super::Found,
        writer: &SessionState,
    ) -> Result<String, NoteError> {
        // What the record goes back to if the note cannot be written (a full disk, say).
        let previous = old.record.clone().filter(|_| old.matches);
        let mut block = String::new();
        if writer.untrusted {
            block.push_str(&header(writer));
        }
        block.push_str(&escape_body(&text));
        let (bytes, labels, mut sources) = match (mode, old.bytes) {
            (NoteMode::Append, Some(mut bytes)) => {
                if !bytes.is_empty() && !bytes.ends_with(b"\n") {
                    bytes.push(b'\n');
                }
                bytes.extend_from_slice(block.as_bytes());
                let sources = old.record.map(|r| r.untrusted_by).unwrap_or_default();
                (bytes, old.labels.join(writer.labels()), sources)
            }
            _ => (block.into_bytes(), writer.labels(), Vec::new()),
        };
        let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        if size > MAX_NOTE {
            return Err(NoteError::TooLarge {
                name: name.to_owned(),
                size,
            });
        }
        for call in &writer.untrusted_by {
            if sources.len() < MAX_UNTRUSTED_BY && !sources.contains(call) {
                sources.push(call.clone());
            }
        }
        let record = NoteRecord {
            name: name.to_owned(),
            hash: Hash32::digest(&bytes),
            class: labels.class,
            untrusted: labels.untrusted,
            untrusted_by: sources,
            time: Timestamp::now(),
            session: Some(writer.session.clone()),
        };
        // The record first: a crash before the note's rename leaves old bytes that no
        // longer match, which read as secret and untrusted (never lower).
        self.store_record(&record)?;
        let path = self.path(name);
        let tmp = self.dir.join(format!(".{}.tmp", file_name(name)));
        if let Err(e) = daemon::durable::replace_file(&path, &tmp, &bytes, 0o600) {
            // The note kept its old bytes: so does its record (best effort; a record that
            // stays new only makes the old bytes read as secret and untrusted).
            let _ = std::fs::remove_file(&tmp);
            match &previous {
                Some(r) => {
                    let _ = self.store_record(r);
                }
                None => {
                    let _ = std::fs::remove_file(self.record_path(name));
                }
            }
            return Err(NoteError::Io {
                path: e.path,
                error: e.source,
            });
        }
        // 0644, whatever brokerd's umask: a read unit runs as another user; on the host only
        // brokerd's own directory leads here.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))
            .map_err(NoteError::io(&path))?;
        Ok(format!(
            "note {name} written ({} bytes, sha256 {}, labelled {}{})",
            bytes.len(),
            record.hash,
            labels.class,
            if labels.untrusted { ", untrusted" } else { "" }
        ))
    }

    /// The owner's relabel (`r`, asked by `by`): the note's bytes as they are now get the
    /// label asked for, audited with the old label, the new one and the hash before the
    /// record changes. `Ok(Err)`: refused (no such note, a bad name, a full disk); `Err`:
    /// the audit took no line, and nothing changed.
    pub fn relabel(
        &self,
        r: &NoteRelabel,
        by: &str,
        audit: &Mutex<AuditLog>,
    ) -> Result<Result<NoteRelabelled, NoteError>, AuditError> {
        match self.relabel_audited(&r.name, r.class, r.untrusted, by, audit) {
            Ok(Ok(done)) => Ok(Ok(done)),
            Ok(Err(fatal)) => Err(fatal),
            Err(refused) => Ok(Err(refused)),
        }
    }

    fn relabel_audited(
        &self,
        name: &str,
        class: DataClass,
        untrusted: bool,
        by: &str,
        audit: &Mutex<AuditLog>,
    ) -> Result<Result<NoteRelabelled, AuditError>, NoteError> {
        proto::notes::check_name(name).map_err(NoteError::Name)?;
        let _held = self.lock();
        let found = self.find(name);
        let bytes = found.bytes.ok_or_else(|| NoteError::Missing {
            name: name.to_owned(),
        })?;
        let hash = Hash32::digest(&bytes);
        let done = NoteRelabelled {
            name: name.to_owned(),
            hash,
            old_class: found.labels.class,
            old_untrusted: found.labels.untrusted,
            class,
            untrusted,
        };
        let audited = daemon::lock(audit).append(|seq, time, prev| {
            AuditLine::Event(AuditEvent::NoteRelabelled {
                seq,
                time,
                prev,
                by: by.to_owned(),
                name: done.name.clone(),
                hash: done.hash,
                old_class: done.old_class,
                old_untrusted: done.old_untrusted,
                class: done.class,
                untrusted: done.untrusted,
            })
        });
        if let Err(e) = audited {
            return Ok(Err(e));
        }
        self.store_record(&NoteRecord {
            name: name.to_owned(),
            hash,
            class,
            untrusted,
            untrusted_by: found.record.map(|r| r.untrusted_by).unwrap_or_default(),
            time: Timestamp::now(),
            session: None,
        })?;
        Ok(Ok(done))
    }

    fn store_record(&self, record: &NoteRecord) -> Result<(), NoteError> {
        let path = self.record_path(&record.name);
        let tmp = self.labels.join(format!(".{}.json.tmp", record.name));
        let text = serde_json::to_vec(record).unwrap_or_default();
        // 0644: the indexer, another user under systemd, reads it.
        daemon::durable::replace_file(&path, &tmp, &text, 0o644).map_err(|e| NoteError::Io {
            path: e.path,
            error: e.source,
        })
    }
}

/// The one file the unit was to leave, `<name>.md`, as text; anything else is refused.
fn left_text(name: &str, dir: &Path) -> Result<String, NoteError> {
    let expected = file_name(name);
    let unexpected = |what: String| NoteError::Unexpected {
        name: name.to_owned(),
        what,
    };
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(NoteError::io(dir))? {
        let entry = entry.map_err(NoteError::io(dir))?;
        entries.push(entry.file_name().to_string_lossy().into_owned());
    }
    match &entries[..] {
        [one] if *one == expected => {}
        [] => return Err(unexpected("nothing".into())),
        _ => return Err(unexpected(format!("{} entries", entries.len()))),
    }
    let path = dir.join(&expected);
    // Not opened unless it is a regular file: opening a FIFO the unit left would block.
    if !super::is_regular(&path) {
        return Err(unexpected("something that is not a regular file".into()));
    }
    let max = u64::try_from(MAX_ARGUMENTS).unwrap_or(u64::MAX);
    let bytes = daemon::durable::read_file(&path, 0, max)
        .map_err(|e| unexpected(format!("a file brokerd refuses ({e})")))?;
    match String::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') => Ok(text),
        _ => Err(NoteError::NotText {
            name: name.to_owned(),
        }),
    }
}

/// The header above text an untrusted session wrote: who, when, after reading what.
fn header(writer: &SessionState) -> String {
    let sources: Vec<String> = writer.untrusted_by.iter().map(source).collect();
    format!(
        "{HEADER_MARK} written by untrusted session {} at {}, after reading: {}\n",
        writer.session,
        Timestamp::now(),
        if sources.is_empty() {
            "(not recorded)".to_owned()
        } else {
            sources.join(", ")
        }
    )
}

/// One untrusted source, on one line whatever the model named.
fn source(call: &CallRef) -> String {
    let read = call
        .read
        .as_deref()
        .map(|r| {
            // Nothing hidden, no line break: the header stays one line, and no text after
            // a break inside it could read as a header line of its own.
            let r: String = r
                .chars()
                .map(|c| if inert::hidden(c) { '?' } else { c })
                .collect();
            format!(" ({r})")
        })
        .unwrap_or_default();
    format!("{} call {}{read}", call.tool, call.call.0)
}
