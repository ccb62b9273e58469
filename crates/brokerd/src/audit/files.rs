//! Opening what lives in the audit directory. Every open refuses a symbolic link in the last
//! path component (O_NOFOLLOW) and then checks the file type on the opened descriptor, so a
//! link planted between a check and an open cannot redirect a write.

use std::fs::{DirBuilder, File, OpenOptions, Permissions};
use std::io::{self, ErrorKind};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg, OFlag};
use proto::Timestamp;

use super::AuditError;

const DIR_MODE: u32 = 0o700;
const FILE_MODE: u32 = 0o600;
pub(super) const LOCK_NAME: &str = ".lock";
const SUFFIX: &str = ".jsonl";

/// O_NONBLOCK only matters if someone planted a FIFO: opening it then returns at once
/// instead of hanging brokerd's start, and the type check below refuses it.
fn flags() -> i32 {
    (OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK).bits()
}

fn io_err(path: &Path, op: &'static str) -> impl FnOnce(io::Error) -> AuditError {
    move |source| {
        if source.raw_os_error() == Some(Errno::ELOOP as i32) {
            AuditError::Unsafe {
                path: path.to_owned(),
                reason: "it is a symbolic link".into(),
            }
        } else {
            AuditError::Io {
                path: path.to_owned(),
                op,
                error: source,
            }
        }
    }
}

/// Creates the directory if missing (0700) and opens it for directory fsyncs. An existing
/// directory is not re-moded, but one writable by group or others is refused: anyone who
/// can write there can plant or rename files.
pub(super) fn open_dir(path: &Path) -> Result<File, AuditError> {
    let created = match DirBuilder::new().mode(DIR_MODE).create(path) {
        Ok(()) => true,
        Err(e) if e.kind() == ErrorKind::AlreadyExists => false,
        Err(e) => return Err(io_err(path, "create the directory")(e)),
    };
    let dir = OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_DIRECTORY).bits())
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(Errno::ENOTDIR as i32) {
                // With O_DIRECTORY, Linux reports a symbolic link as ENOTDIR; the lstat
                // only picks the message, the refusal is already decided.
                let link = path.symlink_metadata().is_ok_and(|m| m.is_symlink());
                AuditError::Unsafe {
                    path: path.to_owned(),
                    reason: if link {
                        "it is a symbolic link"
                    } else {
                        "it is not a directory"
                    }
                    .into(),
                }
            } else {
                io_err(path, "open the directory")(e)
            }
        })?;
    if created {
        // The umask may have taken bits away; make the mode exactly what it should be.
        dir.set_permissions(Permissions::from_mode(DIR_MODE))
            .map_err(io_err(path, "set the mode of"))?;
    }
    let mode = dir.metadata().map_err(io_err(path, "stat"))?.mode();
    if mode & 0o022 != 0 {
        return Err(AuditError::Unsafe {
            path: path.to_owned(),
            reason: format!("the directory is writable by group or others (mode {mode:o})"),
        });
    }
    Ok(dir)
}

/// How long a starting brokerd waits for the lock. A brokerd killed a moment ago can leave a
/// child between fork and exec that still holds the lock's descriptor for an instant; a
/// second brokerd that really runs keeps it, and is refused after this.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// Takes the exclusive lock for the life of the writer, without blocking: a second brokerd
/// fails with a clear message (after `LOCK_WAIT`) rather than hang before it serves.
pub(super) fn take_lock(dir: &Path) -> Result<Flock<File>, AuditError> {
    let start = std::time::Instant::now();
    loop {
        match try_lock(dir) {
            Err(AuditError::Locked { .. }) if start.elapsed() < LOCK_WAIT => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => return other,
        }
    }
}

fn try_lock(dir: &Path) -> Result<Flock<File>, AuditError> {
    let path = dir.join(LOCK_NAME);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(FILE_MODE)
        .custom_flags(flags())
        .open(&path)
        .map_err(io_err(&path, "open the lock file"))?;
    check_regular(&file, &path, false)?;
    Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|(_, errno)| {
        if errno == Errno::EWOULDBLOCK {
            AuditError::Locked { lock: path.clone() }
        } else {
            AuditError::Lock {
                lock: path.clone(),
                error: errno.into(),
            }
        }
    })
}

/// Refuses anything but a regular file, and (for log files) any group or other bits: the
/// log holds full tool arguments.
fn check_regular(file: &File, path: &Path, private: bool) -> Result<(), AuditError> {
    let meta = file.metadata().map_err(io_err(path, "stat"))?;
    if !meta.file_type().is_file() {
        return Err(AuditError::Unsafe {
            path: path.to_owned(),
            reason: "it is not a regular file".into(),
        });
    }
    if private && meta.mode() & 0o077 != 0 {
        return Err(AuditError::Unsafe {
            path: path.to_owned(),
            reason: format!(
                "it is open to group or others (mode {:o}); audit files are 0600",
                meta.mode() & 0o7777
            ),
        });
    }
    Ok(())
}

/// Opens a log file for reading: never through a link, a regular file, 0600.
pub(super) fn open_read(path: &Path) -> Result<File, AuditError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(flags())
        .open(path)
        .map_err(io_err(path, "open"))?;
    check_regular(&file, path, true)?;
    Ok(file)
}

/// Opens an existing log file for appending.
pub(super) fn open_log(path: &Path) -> Result<File, AuditError> {
    let file = OpenOptions::new()
        .append(true)
        .custom_flags(flags())
        .open(path)
        .map_err(io_err(path, "open for appending"))?;
    check_regular(&file, path, true)?;
    Ok(file)
}

/// Creates a new day file. Exclusive: a file that appeared while brokerd holds the lock was
/// not written by it, and is never appended to.
pub(super) fn create_log(path: &Path) -> Result<File, AuditError> {
    let file = OpenOptions::new()
        .append(true)
        .create_new(true)
        .mode(FILE_MODE)
        .custom_flags(flags())
        .open(path)
        .map_err(|e| {
            if e.kind() == ErrorKind::AlreadyExists {
                AuditError::Unsafe {
                    path: path.to_owned(),
                    reason: "it appeared while this brokerd holds the lock, so another \
                             process wrote it"
                        .into(),
                }
            } else {
                io_err(path, "create")(e)
            }
        })?;
    file.set_permissions(Permissions::from_mode(FILE_MODE))
        .map_err(io_err(path, "set the mode of"))?;
    Ok(file)
}

/// `YYYY-MM-DD.jsonl` for the UTC date of `time`. Names of one shape sort by date, so the
/// name order that readers walk is the chain order.
pub(super) fn day_name(time: Timestamp) -> String {
    let text = time.to_string();
    let date = text.split('T').next().unwrap_or(&text);
    format!("{date}{SUFFIX}")
}

/// What a directory entry is to the log: a day file, something else to ignore, or a
/// `*.jsonl` that brokerd did not name (refused: readers walk every `*.jsonl`).
pub(super) enum Entry {
    Day(String),
    Other,
    Foreign,
}

pub(super) fn classify(name: &std::ffi::OsStr) -> Entry {
    let Some(name) = name.to_str() else {
        return if name.as_encoded_bytes().ends_with(SUFFIX.as_bytes()) {
            Entry::Foreign
        } else {
            Entry::Other
        };
    };
    let Some(date) = name.strip_suffix(SUFFIX) else {
        return Entry::Other;
    };
    // Timestamp's strict parser checks the shape and that the date exists.
    if Timestamp::parse(&format!("{date}T00:00:00.000Z")).is_ok() {
        Entry::Day(name.to_owned())
    } else {
        Entry::Foreign
    }
}
