//! The notes' search index (`index/`): one SQLite FTS5 partition per label, which brokerd
//! alone writes, inside its own process, after each note write and relabel it performs
//! (under the notes lock). The notes are the source of truth: at start every partition is
//! checked, a missing or corrupt one is made anew, and all are reconciled with the notes as
//! `scan` finds them (each note's bytes read before its label, a mismatch reading as secret
//! and untrusted). A search unit gets a per-call directory of hard links to the partitions
//! its grant reaches, and is labelled by the highest of them.

use std::collections::BTreeMap;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use daemon::log;
use noteindex::{IndexError, LABELS, Label, Partition};
use proto::{DataClass, Hash32};

use super::{Found, NoteError};
use crate::policy::Labels;

#[derive(Debug)]
pub struct NoteIndex {
    dir: PathBuf,
    search: PathBuf,
    /// In the order of [`LABELS`].
    parts: Mutex<Vec<Partition>>,
}

fn label_of(l: Labels) -> Label {
    Label {
        class: l.class,
        untrusted: l.untrusted,
    }
}

fn index_err(e: IndexError) -> NoteError {
    NoteError::Index(e)
}

/// Opens the partition at `path`, making it anew when it is corrupt.
fn open_partition(path: &Path) -> Result<Partition, NoteError> {
    match Partition::open(path) {
        Err(IndexError::Corrupt { detail, .. }) => {
            log::warn(format_args!(
                "brokerd: the index {} is corrupt ({detail}): rebuilt from the notes",
                path.display()
            ));
            for p in [
                path.to_owned(),
                PathBuf::from(format!("{}-journal", path.display())),
            ] {
                match std::fs::remove_file(&p) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(NoteError::io(&p)(e));
                    }
                    _ => {}
                }
            }
            Partition::open(path).map_err(index_err)
        }
        other => other.map_err(index_err),
    }
}

impl NoteIndex {
    /// Opens every partition under `dir`, making a missing or corrupt one anew.
    pub fn open(dir: &Path) -> Result<Self, NoteError> {
        let search = dir.join("search");
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(dir)
            .map_err(NoteError::io(dir))?;
        match std::fs::remove_dir_all(&search) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(NoteError::io(&search)(e));
            }
            _ => {}
        }
        std::fs::create_dir(&search).map_err(NoteError::io(&search))?;
        let mut parts = Vec::new();
        for label in LABELS {
            let path = dir.join(label.file_name());
            parts.push(open_partition(&path)?);
            // Read by search units, which run as other users.
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))
                .map_err(NoteError::io(&path))?;
        }
        Ok(Self {
            dir: dir.to_owned(),
            search,
            parts: Mutex::new(parts),
        })
    }

    /// Makes the partitions hold exactly `notes` (file name to what brokerd finds there),
    /// each in its label's partition: what a crash or a lost or corrupt partition left out
    /// is put back, what is stale is removed.
    pub fn reconcile(
        &self,
        notes: &BTreeMap<String, (Found, Option<String>)>,
    ) -> Result<(), NoteError> {
        let mut parts = daemon::lock(&self.parts);
        // What each note should be indexed as: its partition, its hash, its text.
        let mut want: BTreeMap<&str, (usize, String, String)> = BTreeMap::new();
        for (found, name) in notes.values() {
            if let (Some(name), Some(bytes)) = (name, &found.bytes) {
                let at = LABELS
                    .iter()
                    .position(|l| *l == label_of(found.labels))
                    .unwrap_or(LABELS.len() - 1);
                let text = String::from_utf8_lossy(bytes).into_owned();
                want.insert(name, (at, Hash32::digest(bytes).to_hex(), text));
            }
        }
        for (at, part) in parts.iter_mut().enumerate() {
            let have: BTreeMap<String, String> =
                part.docs().map_err(index_err)?.into_iter().collect();
            let stale: Vec<&str> = have
                .iter()
                .filter(|(name, hash)| {
                    want.get(name.as_str())
                        .is_none_or(|(a, h, _)| *a != at || h != *hash)
                })
                .map(|(name, _)| name.as_str())
                .collect();
            let missing: Vec<(&str, &str, &str)> = want
                .iter()
                .filter(|(name, (a, hash, _))| *a == at && have.get(**name) != Some(hash))
                .map(|(name, (_, hash, text))| (*name, hash.as_str(), text.as_str()))
                .collect();
            if !stale.is_empty() || !missing.is_empty() {
                part.apply(&stale, &missing).map_err(index_err)?;
            }
        }
        Ok(())
    }

    /// Indexes note `name` as brokerd finds it now, in its label's partition only. Called
    /// under the notes lock. A failure (a full disk) is logged: the partitions stay sound
    /// (each change is one transaction) and the next start reconciles them.
    pub fn update(&self, name: &str, found: &Found) {
        let mut parts = daemon::lock(&self.parts);
        let label = label_of(found.labels);
        for (l, part) in LABELS.iter().zip(parts.iter_mut()) {
            let done = match &found.bytes {
                Some(bytes) if *l == label => part.put(
                    name,
                    &Hash32::digest(bytes).to_hex(),
                    &String::from_utf8_lossy(bytes),
                ),
                _ => part.remove(name),
            };
            if let Err(e) = done {
                log::warn(format_args!("brokerd: note {name} not indexed: {e}"));
            }
        }
    }

    /// A fresh per-call directory for the search unit `unit` holding (hard links to) the
    /// partitions of classes up to `reach` that hold any note, and the label of the highest
    /// of them. Called under the notes lock, held until the unit ends: what is bound does
    /// not change meanwhile, so an empty partition left out could have given nothing.
    pub fn link(&self, unit: &str, reach: DataClass) -> Result<(PathBuf, Labels), NoteError> {
        let parts = daemon::lock(&self.parts);
        let dir = self.search.join(unit);
        self.discard(&dir);
        std::fs::create_dir(&dir).map_err(NoteError::io(&dir))?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))
            .map_err(NoteError::io(&dir))?;
        let mut bound = Labels::NONE;
        for (l, part) in LABELS.into_iter().zip(parts.iter()) {
            if l.class <= reach && !part.is_empty().map_err(index_err)? {
                let file = l.file_name();
                let to = dir.join(&file);
                std::fs::hard_link(self.dir.join(&file), &to).map_err(NoteError::io(&to))?;
                bound = bound.join(Labels {
                    class: l.class,
                    untrusted: l.untrusted,
                });
            }
        }
        Ok((dir, bound))
    }

    /// Removes a search unit's directory (best effort: a leftover is cleared at next start).
    pub fn discard(&self, dir: &Path) {
        let _ = std::fs::remove_dir_all(dir);
    }

    /// For the owner: `query` over every partition, each hit with its partition's label.
    pub fn search_all(&self, query: &str) -> Result<Vec<(noteindex::Hit, Label)>, IndexError> {
        let _parts = daemon::lock(&self.parts);
        let mut all = Vec::new();
        for l in LABELS {
            let path = self.dir.join(l.file_name());
            for hit in noteindex::search(&[path.as_path()], query)? {
                all.push((hit, l));
            }
        }
        all.sort_by(|a, b| a.0.rank.total_cmp(&b.0.rank));
        all.truncate(noteindex::MAX_HITS);
        Ok(all)
    }
}
