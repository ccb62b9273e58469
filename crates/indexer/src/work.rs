//! The indexer's working copies (`index/work/<label>.sqlite`, its own, never bound into a
//! unit) and their publication: each changed partition is copied to a temporary file in
//! `index/`, fsynced and renamed over `index/<label>.sqlite`, and the directory fsynced. A
//! published file is never written after its rename, so a search that opened one immutable
//! (or a unit it is bound into) reads the same bytes to its end while the indexer goes on.

use std::fs::File;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use daemon::log;
use noteindex::{Batch, IndexError, LABELS, Label, Partition};

use crate::Error;
use crate::state::{Stamp, State};

#[derive(Debug)]
pub struct Work {
    index: PathBuf,
    dir: PathBuf,
    /// In the order of [`LABELS`], with the inode each was opened at.
    parts: Vec<(Partition, u64)>,
    pub state: State,
}

fn mkdir(path: &Path, mode: u32) -> Result<(), Error> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(mode)
        .create(path)
        .map_err(Error::io(path))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(Error::io(path))
}

fn remove(path: &Path) -> Result<(), Error> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(path)(e)),
        _ => Ok(()),
    }
}

/// How often the working partitions are checked whole ([`Partition::open`]): reading every
/// page of a large index costs seconds, and every change goes through a transaction, so a
/// run in between checks only what opening reads; damage SQLite meets in a pass makes the
/// next pass check whole (and rebuild).
pub const CHECK_EVERY: Duration = Duration::from_secs(3600);

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Work {
    /// Opens the working copies under `index/work/`. With no sound progress state, or a
    /// working partition that is not sound, everything there is removed and rebuilt from
    /// the files (the next pass indexes them all and publishes every partition). They are
    /// checked whole when `whole` is asked, or when the last whole check is
    /// [`CHECK_EVERY`] old.
    pub fn open(index: &Path, whole: bool) -> Result<Self, Error> {
        // The published files are read by search units and brokerd, other users.
        mkdir(index, 0o755)?;
        let dir = index.join("work");
        mkdir(&dir, 0o700)?;
        let state = State::load(&dir.join("state.json"));
        let fresh = state.is_none();
        if fresh {
            Self::wipe(&dir)?;
        }
        let now = now();
        let whole = whole
            || state
                .as_ref()
                .is_none_or(|s| now.saturating_sub(s.checked) >= CHECK_EVERY.as_secs());
        let work = match Self::open_parts(&dir, whole) {
            Ok(parts) => {
                let mut state = state.unwrap_or_default();
                if whole {
                    state.checked = now;
                }
                Self {
                    index: index.to_owned(),
                    dir,
                    parts,
                    state,
                }
            }
            Err(Error::Index(IndexError::Corrupt { path, detail })) => {
                log::warn(format_args!(
                    "boxmaker-indexer: {} is corrupt ({detail}): rebuilding from the files",
                    path.display()
                ));
                Self::wipe(&dir)?;
                Self {
                    index: index.to_owned(),
                    parts: Self::open_parts(&dir, true)?,
                    dir,
                    state: State {
                        checked: now,
                        ..State::default()
                    },
                }
            }
            Err(e) => return Err(e),
        };
        // Saved at once: the empty partitions and the empty state agree.
        if work.state.notes.is_empty() && work.state.sessions.is_empty() {
            work.state.save(&work.dir.join("state.json"))?;
        }
        Ok(work)
    }

    fn open_parts(dir: &Path, whole: bool) -> Result<Vec<(Partition, u64)>, Error> {
        let mut parts = Vec::new();
        for l in LABELS {
            let path = dir.join(l.file_name());
            let part = if whole {
                Partition::open(&path)?
            } else {
                Partition::reopen(&path)?
            };
            let ino = Stamp::at(&path).map_or(0, |s| s.ino);
            parts.push((part, ino));
        }
        Ok(parts)
    }

    /// Removes the working partitions and the state.
    fn wipe(dir: &Path) -> Result<(), Error> {
        for l in LABELS {
            let path = dir.join(l.file_name());
            remove(&path)?;
            remove(&PathBuf::from(format!("{}-journal", path.display())))?;
        }
        remove(&dir.join("state.json"))
    }

    /// Whether the working copies are no longer those on disk (`index/` deleted or
    /// replaced while the indexer runs on): then it opens them anew.
    pub fn stale(&self) -> bool {
        !self.dir.join("state.json").exists()
            || LABELS.iter().zip(&self.parts).any(|(l, (_, ino))| {
                Stamp::at(&self.dir.join(l.file_name())).map(|s| s.ino) != Some(*ino)
            })
    }

    /// One batch (transaction) per partition, in the order of [`LABELS`].
    pub fn batches(&mut self) -> Result<Vec<Batch<'_>>, Error> {
        self.parts
            .iter_mut()
            .map(|(p, _)| p.batch().map_err(Error::Index))
            .collect()
    }

    /// Publishes the partitions `changed` names and every one whose published file is not
    /// the one the indexer published last (missing, replaced, damaged); records the stamps
    /// and saves the state. Returns the labels published.
    pub fn publish(&mut self, changed: &[bool]) -> Result<Vec<Label>, Error> {
        let mut done = Vec::new();
        for (i, l) in LABELS.into_iter().enumerate() {
            let file = l.file_name();
            let target = self.index.join(&file);
            let published = self.state.published.get(&file).copied();
            let intact = published.is_some() && published == Stamp::at(&target);
            if changed.get(i).copied().unwrap_or(true) || !intact {
                let stamp = publish_one(&self.dir.join(&file), &self.index, &file)?;
                self.state.published.insert(file, stamp);
                done.push(l);
            }
        }
        self.state.save(&self.dir.join("state.json"))?;
        Ok(done)
    }
}

/// Takes `index/.lock` exclusively, waiting while another indexer holds it.
pub fn lock(index: &Path) -> Result<nix::fcntl::Flock<File>, Error> {
    mkdir(index, 0o755)?;
    let path = index.join(".lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(&path)
        .map_err(Error::io(&path))?;
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, errno)| Error::io(&path)(std::io::Error::from(errno)))
}

/// Copies the working partition `work` to `dir/.<file>.tmp`, fsyncs it, renames it over
/// `dir/<file>` and fsyncs `dir`. The stamp is taken after the rename.
fn publish_one(work: &Path, dir: &Path, file: &str) -> Result<Stamp, Error> {
    let tmp = dir.join(format!(".{file}.tmp"));
    let target = dir.join(file);
    remove(&tmp)?;
    std::fs::copy(work, &tmp).map_err(Error::io(&tmp))?;
    // Read by search units and brokerd, which run as other users.
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644))
        .map_err(Error::io(&tmp))?;
    File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(Error::io(&tmp))?;
    std::fs::rename(&tmp, &target).map_err(Error::io(&target))?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(Error::io(dir))?;
    Stamp::at(&target).ok_or_else(|| Error::Io {
        path: target.clone(),
        error: std::io::Error::from(std::io::ErrorKind::NotFound),
    })
}
