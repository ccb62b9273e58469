//! The indexer's progress (`index/work/state.json`): for each note the file and record it
//! indexed (their stat stamps) and its partition; for each session its label record, its
//! partition and, per epoch log, up to which byte it indexed; the stamp of each published
//! file. Written after the partitions commit (temp file, fsync, rename): a crash in between
//! makes the next run redo that work, which is idempotent. A missing or unreadable state
//! means a rebuild from the files.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::Error;

/// The state file's format; another one is rebuilt from the files.
const VERSION: u32 = 1;

/// The largest state file read (about 200 bytes per document source).
const MAX_STATE: u64 = 256 * 1024 * 1024;

/// What identifies one version of a file without reading it: any write changes its
/// change time, a replacement its inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
}

impl Stamp {
    pub fn of(meta: &std::fs::Metadata) -> Self {
        Self {
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: meta.mtime().saturating_mul(1_000_000_000) + meta.mtime_nsec(),
            ctime_ns: meta.ctime().saturating_mul(1_000_000_000) + meta.ctime_nsec(),
        }
    }

    /// The file at `path` itself (a link is not followed), `None` when there is none.
    pub fn at(path: &Path) -> Option<Self> {
        std::fs::symlink_metadata(path).ok().map(|m| Self::of(&m))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoteDone {
    pub note: Stamp,
    pub record: Option<Stamp>,
    /// Its partition, a place in `noteindex::LABELS`; `None` when it was not indexed (not
    /// a regular file, or too large to be a note).
    pub part: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogDone {
    pub ino: u64,
    /// The end of the last whole line indexed.
    pub at: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionDone {
    pub label: Option<Stamp>,
    pub part: usize,
    /// By epoch.
    pub logs: BTreeMap<u64, LogDone>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    pub version: u32,
    pub notes: BTreeMap<String, NoteDone>,
    pub sessions: BTreeMap<String, SessionDone>,
    /// By partition file name: the stamp of the file published there.
    pub published: BTreeMap<String, Stamp>,
    /// When the working partitions were last checked whole (seconds since the epoch; 0:
    /// never, as in a state written before this was kept).
    #[serde(default)]
    pub checked: u64,
}

impl Default for State {
    fn default() -> Self {
        Self {
            version: VERSION,
            notes: BTreeMap::new(),
            sessions: BTreeMap::new(),
            published: BTreeMap::new(),
            checked: 0,
        }
    }
}

impl State {
    /// The state at `path`; `None` when it is missing, unreadable or of another version
    /// (the caller rebuilds).
    pub fn load(path: &Path) -> Option<Self> {
        let bytes = daemon::durable::read_file(path, 0o022, MAX_STATE).ok()?;
        let state: Self = serde_json::from_slice(&bytes).ok()?;
        (state.version == VERSION).then_some(state)
    }

    pub fn save(&self, path: &Path) -> Result<(), Error> {
        let tmp = path.with_file_name(".state.json.tmp");
        let bytes = serde_json::to_vec(self).unwrap_or_default();
        daemon::durable::replace_file(path, &tmp, &bytes, 0o600).map_err(|e| Error::Io {
            path: e.path,
            error: e.source,
        })
    }
}
