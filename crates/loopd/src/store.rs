//! The session log: `sessions/<id>/<epoch>.jsonl`, one `LogRecord` per line, append only,
//! each line fsynced before the turn goes on (what the owner said is never lost). Files are
//! 0600 and never opened through a symbolic link: one in a log's place, or a log open to
//! group or others, is refused (the model would read it, and a repair would cut it).

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use proto::{Epoch, LogRecord, SessionId, Timestamp};

use crate::core_memory;

/// One session's current epoch, loaded.
#[derive(Debug, Clone)]
pub struct Session {
    pub id: SessionId,
    pub epoch: Epoch,
    pub records: Vec<LogRecord>,
    /// The previous epoch's summary, which this epoch starts from.
    pub summary: Option<String>,
    /// The highest tool call number of the whole session (call numbers never repeat
    /// across epochs: brokerd's unit names and audit records carry them).
    pub last_call: u64,
    /// The core memory this epoch started from, as pinned (`crate::core_memory`); `None` for an
    /// epoch written before loopd pinned core memory, until the turn pins one.
    pub core: Option<String>,
}

impl Session {
    /// The epoch's system prompt: its pinned core memory. The summary it starts from is a
    /// message of its own after it (`prompt::start`).
    pub fn system(&self) -> String {
        self.core
            .as_deref()
            .unwrap_or(core_memory::DEFAULT_CORE)
            .to_owned()
    }

    /// The hash the epoch's `SessionStart` recorded.
    pub fn baseline(&self) -> Option<proto::Hash32> {
        self.records.iter().find_map(|r| match r {
            LogRecord::SessionStart { baseline, .. } => Some(*baseline),
            _ => None,
        })
    }

    pub fn slot(&self) -> Option<u32> {
        self.records.iter().find_map(|r| match r {
            LogRecord::SessionStart { slot, .. } => Some(*slot),
            _ => None,
        })
    }
}

/// Why the session log could not be read or written. Each variant names the file or
/// directory involved (the session and epoch are in its path); the `Display` text is what
/// `session_show` answers and the log shows.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file or directory of the store could not be read, written or synced.
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    /// A log that is not what loopd writes: a symbolic link, not a regular file, or open
    /// to group or others (`daemon::durable::open` says which).
    #[error("{}: {why}", path.display())]
    Refused { path: PathBuf, why: String },
    /// The log went away between two steps of the same operation.
    #[error("{}: vanished while {during}", path.display())]
    Vanished { path: PathBuf, during: &'static str },
    /// A whole line (1-based) that is not a record.
    #[error("{} line {line}: {error}", path.display())]
    Corrupt {
        path: PathBuf,
        line: usize,
        error: serde_json::Error,
    },
    /// A record that cannot be written as JSON (it was not written).
    #[error("{}: a record cannot be encoded: {error}", path.display())]
    Encode {
        path: PathBuf,
        error: serde_json::Error,
    },
    /// The OS gave no random bytes for a new session id.
    #[error("OS RNG: {0}")]
    Random(getrandom::Error),
    /// The new session id was not a valid one.
    #[error("{0}")]
    Id(proto::InvalidValue),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |error| StoreError::Io {
        path: path.to_owned(),
        error,
    }
}

fn vanished<'a>(path: &'a Path, during: &'static str) -> impl FnOnce() -> StoreError + 'a {
    move || StoreError::Vanished {
        path: path.to_owned(),
        during,
    }
}

/// Opens a log for reading (`create` = `None`) or appending, as `daemon::durable::open`
/// allows: `Ok(None)` when it does not exist.
fn open_log(path: &Path, create: Option<u32>) -> Result<Option<File>, StoreError> {
    match daemon::durable::open(path, create, 0o077) {
        Ok(f) => Ok(Some(f)),
        Err(daemon::durable::ReadError::Missing) => Ok(None),
        Err(daemon::durable::ReadError::Refused(why)) => Err(StoreError::Refused {
            path: path.to_owned(),
            why: why.to_string(),
        }),
    }
}

/// The trigger file loopd rewrites after each record it appends (see `Store::changed`).
pub const CHANGED: &str = ".changed";

#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    pub fn open(home: &Path) -> Result<Self, StoreError> {
        let dir = home.join("sessions");
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        Ok(Self { dir })
    }

    fn session_dir(&self, id: &SessionId) -> PathBuf {
        self.dir.join(id.as_str())
    }

    fn epoch_file(&self, id: &SessionId, epoch: Epoch) -> PathBuf {
        self.session_dir(id).join(format!("{}.jsonl", epoch.0))
    }

    fn core_file(&self, id: &SessionId, epoch: Epoch) -> PathBuf {
        self.session_dir(id).join(format!("{}.core", epoch.0))
    }

    /// Keeps `core` as the core memory epoch `epoch` starts from: temp file, fsync, rename,
    /// directory fsync, before the epoch's first record (so every `SessionStart` has its pin).
    pub fn pin_core(&self, id: &SessionId, epoch: Epoch, core: &str) -> Result<(), StoreError> {
        let dir = self.session_dir(id);
        let fresh = !dir.exists();
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let path = self.core_file(id, epoch);
        let tmp = dir.join(format!(".{}.core.tmp", epoch.0));
        daemon::durable::replace_file(&path, &tmp, core.as_bytes(), 0o600).map_err(|e| {
            StoreError::Io {
                path: e.path,
                error: e.source,
            }
        })?;
        if fresh {
            File::open(&self.dir)
                .and_then(|d| d.sync_all())
                .map_err(io(&self.dir))?;
        }
        Ok(())
    }

    /// Pins the owner's current core memory for a new epoch, durably, and returns it.
    pub fn pin_current_core(
        &self,
        core_file: &Path,
        id: &SessionId,
        epoch: Epoch,
    ) -> Result<String, StoreError> {
        let core = core_memory::current(core_file);
        self.pin_core(id, epoch, &core)?;
        Ok(core)
    }

    /// The core memory a loaded epoch started from. An epoch written before loopd pinned
    /// core memory has no pin: the current `core.md` is pinned for it from now on, and a
    /// warning says when that is not what its baseline was computed from.
    pub fn core_of_epoch(&self, core_file: &Path, session: &Session) -> Result<String, StoreError> {
        let (id, epoch) = (&session.id, session.epoch);
        if let Some(core) = self.pinned_core(id, epoch)? {
            return Ok(core);
        }
        let core = self.pin_current_core(core_file, id, epoch)?;
        let start = core_memory::baseline(&core, session.summary.as_deref());
        if session.baseline().is_some_and(|b| b != start) {
            daemon::log::warn(format_args!(
                "session {id} epoch {}: no pinned core memory, and core.md has changed since \
                 the epoch began; its requests use today's core.md from now on",
                epoch.0
            ));
        }
        Ok(core)
    }

    /// The core memory pinned for `epoch`, `None` when there is none; refused like a log
    /// that is not what loopd writes (a link, open to others, over the limit, not UTF-8).
    pub fn pinned_core(&self, id: &SessionId, epoch: Epoch) -> Result<Option<String>, StoreError> {
        let path = self.core_file(id, epoch);
        let bytes = match daemon::durable::read_file(&path, 0o077, core_memory::MAX_CORE) {
            Ok(b) => b,
            Err(daemon::durable::ReadError::Missing) => return Ok(None),
            Err(daemon::durable::ReadError::Refused(why)) => {
                return Err(StoreError::Refused {
                    path,
                    why: why.to_string(),
                });
            }
        };
        String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| StoreError::Refused {
                path,
                why: "not UTF-8".into(),
            })
    }

    /// Every session id on disk.
    pub fn ids(&self) -> Result<Vec<SessionId>, StoreError> {
        let mut ids: Vec<SessionId> = std::fs::read_dir(&self.dir)
            .map_err(io(&self.dir))?
            .filter_map(|e| e.ok())
            .filter_map(|e| SessionId::new(e.file_name().to_string_lossy().into_owned()).ok())
            .collect();
        ids.sort();
        Ok(ids)
    }

    /// The session's epochs, oldest first.
    pub fn epochs(&self, id: &SessionId) -> Result<Vec<Epoch>, StoreError> {
        let dir = self.session_dir(id);
        let mut epochs: Vec<Epoch> = match std::fs::read_dir(&dir) {
            Ok(d) => d
                .filter_map(|e| e.ok())
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.strip_suffix(".jsonl")?.parse().ok().map(Epoch)
                })
                .collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io(&dir)(e)),
        };
        epochs.sort();
        Ok(epochs)
    }

    pub fn read_epoch(&self, id: &SessionId, epoch: Epoch) -> Result<Vec<LogRecord>, StoreError> {
        let path = self.epoch_file(id, epoch);
        let file = open_log(&path, None)?.ok_or_else(vanished(&path, "read"))?;
        let mut records = Vec::new();
        let mut reader = BufReader::new(file);
        let mut n = 0;
        loop {
            let mut line = String::new();
            let got = reader.read_line(&mut line).map_err(io(&path))?;
            // A last line without its newline is a write still going on, or one that died
            // (the turn path cuts those): it is not a record yet.
            if got == 0 || !line.ends_with('\n') {
                break;
            }
            n += 1;
            let line = line.trim_end_matches('\n');
            let record = serde_json::from_str(line).map_err(|error| StoreError::Corrupt {
                path: path.clone(),
                line: n,
                error,
            })?;
            records.push(record);
        }
        Ok(records)
    }

    /// The session's current (newest) epoch, or `None` when it does not exist.
    pub fn load(&self, id: &SessionId) -> Result<Option<Session>, StoreError> {
        let epochs = self.epochs(id)?;
        let Some(&epoch) = epochs.last() else {
            return Ok(None);
        };
        let mut summary = None;
        let mut last_call = 0;
        let mut records = Vec::new();
        for e in &epochs {
            records = self.read_epoch(id, *e)?;
            for r in &records {
                match r {
                    LogRecord::ToolResult { call, .. } => last_call = last_call.max(call.0),
                    // Every tool call the model made got (or will get) the next number,
                    // even one that never reached its result (loopd died in between).
                    LogRecord::Assistant { tool_calls, .. } => {
                        last_call += u64::try_from(tool_calls.len()).unwrap_or(0);
                    }
                    LogRecord::EpochEnd { summary: s, .. } if *e < epoch => {
                        summary = Some(s.clone());
                    }
                    _ => {}
                }
            }
        }
        Ok(Some(Session {
            id: id.clone(),
            epoch,
            records,
            core: self.pinned_core(id, epoch)?,
            summary,
            last_call,
        }))
    }

    /// The session's newest epoch, `None` when the session does not exist. Only the
    /// directory is read.
    pub fn current_epoch(&self, id: &SessionId) -> Result<Option<Epoch>, StoreError> {
        Ok(self.epochs(id)?.last().copied())
    }

    /// Cuts a torn last line from the session's newest epoch. Call it only while holding the
    /// session's lock (no append can be under way then).
    pub fn repair(&self, id: &SessionId) -> Result<(), StoreError> {
        if let Some(epoch) = self.current_epoch(id)? {
            cut_torn_tail(&self.epoch_file(id, epoch))?;
        }
        Ok(())
    }

    /// Appends one record to the session's epoch file and fsyncs it.
    pub fn append(
        &self,
        id: &SessionId,
        epoch: Epoch,
        record: &LogRecord,
    ) -> Result<(), StoreError> {
        let dir = self.session_dir(id);
        let fresh = !dir.exists();
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let path = self.epoch_file(id, epoch);
        let mut line = serde_json::to_vec(record).map_err(|error| StoreError::Encode {
            path: path.clone(),
            error,
        })?;
        line.push(b'\n');
        let new_file = !path.exists();
        let mut file = open_log(&path, Some(0o600))?.ok_or_else(vanished(&path, "written"))?;
        file.write_all(&line).map_err(io(&path))?;
        file.sync_data().map_err(io(&path))?;
        if new_file {
            File::open(&dir)
                .and_then(|d| d.sync_all())
                .map_err(io(&dir))?;
        }
        if fresh {
            File::open(&self.dir)
                .and_then(|d| d.sync_all())
                .map_err(io(&self.dir))?;
        }
        self.changed();
        Ok(())
    }

    /// Rewrites `sessions/.changed` (the time of the append), which the indexer's path unit
    /// watches: a path unit does not see appends inside `sessions/<id>/`. Only a hint, not
    /// synced: a lost one is caught by the indexer's next run, which looks at every log.
    /// Not a session id (it has a dot), so every walk of `sessions/` passes it by.
    fn changed(&self) {
        let path = self.dir.join(CHANGED);
        if let Err(e) = std::fs::write(&path, Timestamp::now().to_string()) {
            daemon::log::warn(format_args!("{}: {e}", path.display()));
        }
    }

    /// A new session id: the date and 64 random bits.
    pub fn new_id(now: Timestamp) -> Result<SessionId, StoreError> {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes).map_err(StoreError::Random)?;
        let date: String = now
            .to_string()
            .chars()
            .take(10)
            .filter(|c| *c != '-')
            .collect();
        let hex = proto::hex(&bytes);
        SessionId::new(format!("s-{date}-{hex}")).map_err(StoreError::Id)
    }
}

/// A last line without its newline is a write that died before its fsync returned, so
/// nothing went on from it (every record is fsynced before the turn continues): cut it, so
/// the session loads and the next record starts on a line of its own.
fn cut_torn_tail(path: &Path) -> Result<(), StoreError> {
    // The last byte tells: a whole file is read only when its tail is torn.
    let Some(mut file) = open_log(path, None)? else {
        return Ok(());
    };
    let len = file.metadata().map_err(io(path))?.len();
    if len == 0 {
        return Ok(());
    }
    let mut last = [0u8; 1];
    file.seek(SeekFrom::End(-1))
        .and_then(|_| file.read_exact(&mut last))
        .map_err(io(path))?;
    if last[0] == b'\n' {
        return Ok(());
    }
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.read_to_end(&mut bytes))
        .map_err(io(path))?;
    let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    // The same file, opened for writing the same way (an append handle may truncate).
    let file = open_log(path, Some(0o600))?.ok_or_else(vanished(path, "repaired"))?;
    file.set_len(u64::try_from(keep).unwrap_or(0))
        .map_err(io(path))?;
    file.sync_all().map_err(io(path))?;
    daemon::log::warn(format_args!(
        "{}: cut a torn last line of {} bytes (a write that never completed)",
        path.display(),
        bytes.len() - keep
    ));
    Ok(())
}
