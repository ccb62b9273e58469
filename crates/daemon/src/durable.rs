//! Replacing a state file so that a crash leaves the old contents or the new, never a mix:
//! temp file, fsync, rename, directory fsync; and reading it back at start, refusing what
//! `replace_file` never makes. brokerd's session files and gatewayd's state file are
//! written and read this way; loopd's append-only session logs are opened with the same
//! refusals.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;

/// The step of a replacement that failed: the file it was acting on, and why. Its text
/// prints the I/O error, which `source()` does not return (docs/decisions.md F16); written
/// by hand because its users read the public field `source` by name.
#[derive(Debug)]
pub struct ReplaceError {
    /// The temp file, the target (for the rename) or its directory (for the fsync).
    pub path: PathBuf,
    pub source: io::Error,
}

impl fmt::Display for ReplaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.source)
    }
}

impl std::error::Error for ReplaceError {}

/// Makes `bytes` the contents of `path`, through `tmp` (in the same directory).
///
/// A stale `tmp` (a write that died before its rename) is removed first; the new one is
/// created afresh with `mode` (before the umask), never through a symlink. Then it is
/// written, fsynced and renamed over `path`, and `path`'s directory is fsynced so the rename
/// itself is durable.
pub fn replace_file(path: &Path, tmp: &Path, bytes: &[u8], mode: u32) -> Result<(), ReplaceError> {
    let at = |p: &Path| {
        let p = p.to_owned();
        move |source| ReplaceError { path: p, source }
    };
    match std::fs::remove_file(tmp) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(at(tmp)(e)),
        _ => {}
    }
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(OFlag::O_NOFOLLOW.bits())
        .open(tmp)
        .map_err(at(tmp))?;
    file.write_all(bytes).map_err(at(tmp))?;
    file.sync_all().map_err(at(tmp))?;
    drop(file);
    std::fs::rename(tmp, path).map_err(at(path))?;
    if let Some(dir) = path.parent() {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(at(dir))?;
    }
    Ok(())
}

/// Why a state file was not read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// There is none (yet).
    #[error("there is none")]
    Missing,
    /// There is one, and it is not what this daemon writes.
    #[error("{0}")]
    Refused(Refusal),
}

/// Why a file that is there is refused, worded for a person (after the file's name).
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// A symbolic link in the last component (O_NOFOLLOW's ELOOP).
    #[error("it is a symbolic link")]
    Link,
    #[error("not a regular file")]
    NotRegular,
    /// `mode` sets the bits `sets`, which the writer never sets.
    #[error("mode {mode:o} sets {sets:o}, which this daemon never does")]
    Mode { mode: u32, sets: u32 },
    /// More than `max` bytes.
    #[error("larger than {max} bytes")]
    TooLarge { max: u64 },
    #[error("cannot open: {0}")]
    Open(io::Error),
    #[error("stat: {0}")]
    Stat(io::Error),
    #[error("reading: {0}")]
    Read(io::Error),
}

/// Reads a state file that [`replace_file`] wrote: never through a symbolic link, only a
/// regular file, none of the mode bits in `forbidden` (what the writer never sets and
/// would let someone else plant or read the state), at most `max` bytes. What is refused
/// says why; a daemon refuses to start on it rather than trust or overwrite it.
pub fn read_file(path: &Path, forbidden: u32, max: u64) -> Result<Vec<u8>, ReadError> {
    let mut file = open(path, None, forbidden)?;
    let mut bytes = Vec::new();
    (&mut file)
        .take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| ReadError::Refused(Refusal::Read(e)))?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > max {
        return Err(ReadError::Refused(Refusal::TooLarge { max }));
    }
    Ok(bytes)
}

/// Opens a log this daemon appends to, for reading (`create` = `None`) or for appending
/// (created with that mode when missing), with the same refusals as [`read_file`]: a link,
/// anything but a regular file, a `forbidden` mode bit.
pub fn open(path: &Path, create: Option<u32>, forbidden: u32) -> Result<File, ReadError> {
    let mut options = OpenOptions::new();
    match create {
        None => options.read(true),
        Some(mode) => options.append(true).create(true).mode(mode),
    };
    let file = options
        .custom_flags(OFlag::O_NOFOLLOW.bits())
        .open(path)
        .map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => ReadError::Missing,
            // O_NOFOLLOW's answer for a link in the last component.
            _ if e.raw_os_error() == Some(nix::errno::Errno::ELOOP as i32) => {
                ReadError::Refused(Refusal::Link)
            }
            _ => ReadError::Refused(Refusal::Open(e)),
        })?;
    let meta = file
        .metadata()
        .map_err(|e| ReadError::Refused(Refusal::Stat(e)))?;
    if !meta.is_file() {
        return Err(ReadError::Refused(Refusal::NotRegular));
    }
    let mode = meta.mode() & 0o7777;
    if mode & forbidden != 0 {
        return Err(ReadError::Refused(Refusal::Mode {
            mode,
            sets: mode & forbidden,
        }));
    }
    Ok(file)
}
