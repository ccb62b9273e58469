//! The notes and their labels, of which brokerd is the one writer.
//!
//! brokerd is the one owner of the notes directory: only it
//! writes there, each write through temp file, fsync and rename, and it records each note's
//! hash and label in its own state (`note-state/labels/<name>.json`, written the same way),
//! never the tool's word. A note whose bytes do not match the record (edited on disk, or
//! never written by brokerd) reads as secret and untrusted until the owner relabels it.
//!
//! The tool units: `note_read` has the one named note bound, `note_list` the directory,
//! both read-only, and each is labelled by what was bound (a listing by every file in the
//! directory); `note_write` has only an empty per-call directory (`note-state/incoming/<unit>`)
//! into which it writes the new text, which brokerd checks and moves into place (`write`).
//! A note call's run builds on these (`run`).

mod error;
mod forged;
mod index;
pub mod run;
mod write;

use std::collections::BTreeMap;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use proto::notes::{MAX_NOTE, NoteInfo, NoteRecord, NotesListing, file_name, name_of_file};

use crate::policy::Labels;
pub use error::NoteError;
pub use forged::escape_body;
pub use index::NoteIndex;

/// What a note reads as when brokerd cannot vouch for its bytes.
pub const UNKNOWN: Labels = Labels {
    class: noteindex::UNKNOWN.class,
    untrusted: noteindex::UNKNOWN.untrusted,
};

#[derive(Debug)]
pub struct Notes {
    dir: PathBuf,
    labels: PathBuf,
    incoming: PathBuf,
    /// Held by a write while it moves a note into place, and by a listing from its labels
    /// to the end of its unit: a listing never sees a note its label did not count.
    lock: Mutex<()>,
    /// The search index the indexer publishes, which brokerd only reads.
    index: NoteIndex,
}

/// A note as brokerd finds it now: the bytes (when it could read them) and the label a read
/// of them takes.
#[derive(Debug)]
pub struct Found {
    pub bytes: Option<Vec<u8>>,
    pub labels: Labels,
    pub matches: bool,
    pub record: Option<NoteRecord>,
}

fn mkdir(path: &Path) -> Result<(), NoteError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(NoteError::io(path))
}

impl Notes {
    /// Creates the directories when missing, clears per-call directories a stopped brokerd
    /// left behind, and finds the published search index under `index`.
    pub fn open(dir: PathBuf, state: &Path, index: &Path) -> Result<Self, NoteError> {
        let labels = state.join("labels");
        let incoming = state.join("incoming");
        for d in [&dir, &labels] {
            mkdir(d)?;
        }
        // A list unit runs as another user and lists it where it is bound, and the indexer
        // (another user under systemd) reads the notes and their label records; on the host
        // only brokerd's own state directories (and under systemd /var/lib/private, 0700)
        // lead here. systemd's StateDirectoryMode= resets them at each start, so they are
        // set here; so is each record's mode (records written before were 0600).
        for d in [&dir, state, &labels] {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755))
                .map_err(NoteError::io(d))?;
        }
        // Only a record of another mode is changed: a chmod changes the change time, and the
        // indexer takes a record whose change time moved as one to read again.
        for entry in std::fs::read_dir(&labels).map_err(NoteError::io(&labels))? {
            let path = entry.map_err(NoteError::io(&labels))?.path();
            if std::fs::symlink_metadata(&path)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o7777 != 0o644)
            {
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))
                    .map_err(NoteError::io(&path))?;
            }
        }
        match std::fs::remove_dir_all(&incoming) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(NoteError::io(&incoming)(e));
            }
            _ => {}
        }
        mkdir(&incoming)?;
        Ok(Self {
            dir,
            labels,
            incoming,
            lock: Mutex::new(()),
            index: NoteIndex::new(index),
        })
    }

    pub fn index(&self) -> &NoteIndex {
        &self.index
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        daemon::lock(&self.lock)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(file_name(name))
    }

    fn record_path(&self, name: &str) -> PathBuf {
        self.labels.join(format!("{name}.json"))
    }

    /// brokerd's record of a note, if it has one. A record it cannot read is no record
    /// (the note then reads as secret and untrusted).
    pub fn record(&self, name: &str) -> Option<NoteRecord> {
        let path = self.record_path(name);
        // 0644 (the indexer reads it), never writable by anyone but brokerd.
        let bytes = daemon::durable::read_file(&path, 0o022, noteindex::MAX_RECORD).ok()?;
        noteindex::record_of(name, &bytes)
    }

    /// The note `name` as it is on disk now, with the label a read of it takes.
    pub fn find(&self, name: &str) -> Found {
        let path = self.path(name);
        let bytes = is_regular(&path)
            .then(|| daemon::durable::read_file(&path, 0, MAX_NOTE).ok())
            .flatten();
        // The bytes first, then the record (labels only rise); the indexer's rule too.
        let record = self.record(name);
        let (label, matches) = noteindex::note_label(bytes.as_deref(), record.as_ref());
        let labels = Labels {
            class: label.class,
            untrusted: label.untrusted,
        };
        Found {
            bytes,
            labels,
            matches,
            record,
        }
    }

    /// Every file in the notes directory, by file name, with the label it reads as: what a
    /// unit with the directory bound could read. A file that is no note (another name, a
    /// link, a directory) reads as secret and untrusted.
    pub fn scan(&self) -> Result<BTreeMap<String, (Found, Option<String>)>, NoteError> {
        let mut all = BTreeMap::new();
        for entry in std::fs::read_dir(&self.dir).map_err(NoteError::io(&self.dir))? {
            let entry = entry.map_err(NoteError::io(&self.dir))?;
            let file = entry.file_name().to_string_lossy().into_owned();
            let note = entry
                .file_name()
                .to_str()
                .and_then(name_of_file)
                .map(str::to_owned);
            let found = match &note {
                Some(name) => self.find(name),
                None => Found {
                    bytes: None,
                    labels: UNKNOWN,
                    matches: false,
                    record: None,
                },
            };
            all.insert(file, (found, note));
        }
        Ok(all)
    }

    /// The label of a listing: every file in the directory joined.
    pub fn list_labels(&self) -> Result<Labels, NoteError> {
        Ok(self
            .scan()?
            .values()
            .fold(Labels::NONE, |l, (f, _)| l.join(f.labels)))
    }

    /// For the owner: every note with its label, and with `name` that note's text.
    pub fn listing(&self, name: Option<&str>) -> Result<NotesListing, NoteError> {
        if let Some(name) = name {
            proto::notes::check_name(name).map_err(NoteError::Name)?;
            let found = self.find(name);
            let text = found
                .bytes
                .as_ref()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .ok_or_else(|| match std::fs::symlink_metadata(self.path(name)) {
                    Ok(_) => NoteError::Unreadable {
                        name: name.to_owned(),
                    },
                    Err(_) => NoteError::Missing {
                        name: name.to_owned(),
                    },
                })?;
            return Ok(NotesListing {
                notes: vec![info(file_name(name), found)],
                text: Some(text),
            });
        }
        let notes = self
            .scan()?
            .into_iter()
            .map(|(file, (found, _))| info(file, found))
            .collect();
        Ok(NotesListing { notes, text: None })
    }
}

/// Whether `path` is a regular file itself (not a link, FIFO, device or directory), looked
/// at without opening it: opening a FIFO would block.
fn is_regular(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file())
}

fn info(file: String, found: Found) -> NoteInfo {
    NoteInfo {
        file,
        class: found.labels.class,
        untrusted: found.labels.untrusted,
        matches: found.matches,
        record: found.record,
    }
}
