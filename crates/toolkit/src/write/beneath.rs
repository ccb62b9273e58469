//! Opening below a granted root without following a link (docs/decisions.md H4): the root
//! as given, then every step below it through `walk::open_beneath` (`openat2` with
//! `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV`, or the
//! same walk by hand where a unit's filter answers `openat2` with ENOSYS), so a link, a step
//! out and a mount crossed are refused in the very calls that resolve the path.

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::stat::{FileStat, Mode, SFlag, fstat};
use nix::unistd::geteuid;
use proto::tools::hands::MAX_FILE;
use proto::tools::stage::{StageFailure, Target};

use super::walk::open_beneath;
use crate::stage_error::StageError;

/// A failed system call on `path`, by kind.
pub fn sys(path: &str, e: Errno) -> StageError {
    use StageFailure as F;
    let (failure, why) = match e {
        Errno::ELOOP | Errno::EXDEV => (
            F::Link,
            "a link, a step out of the granted directory or a mount lies on the way; links \
             below the granted directory are never followed"
                .to_owned(),
        ),
        Errno::ENOENT => (F::NotFound, "no such file or directory".to_owned()),
        Errno::ENOTDIR => (
            F::NotRegular,
            "a part of the path is not a directory".to_owned(),
        ),
        // openat2 with RESOLVE_BENEATH answers EAGAIN when a rename raced the walk.
        Errno::EAGAIN => (
            F::Changed,
            "the directory changed during the walk".to_owned(),
        ),
        other => (F::Io, other.desc().to_owned()),
    };
    StageError::new(failure, format!("{path}: {why}"))
}

/// The target's directory, opened beneath the root, and the target's own name.
pub fn open_parent(target: &Target) -> Result<(OwnedFd, &str), StageError> {
    let bad = |why: &str| {
        StageError::new(
            StageFailure::Invocation,
            format!("target path {:?}: {why}", target.path),
        )
    };
    if target.path.is_empty() || target.path.starts_with('/') {
        return Err(bad("must be relative to the granted root"));
    }
    if target.path.split('/').any(|c| matches!(c, "" | "." | "..")) {
        return Err(bad("has an empty, `.` or `..` component"));
    }
    // The root is the owner's word (its own prefix may hold links); all below it is walked.
    let root = nix::fcntl::open(
        target.root.as_str(),
        OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| sys(&target.root, e))?;
    let (dir, name) = match target.path.rsplit_once('/') {
        Some((dir, name)) => {
            let fd = open_beneath(
                &root,
                dir,
                OFlag::O_DIRECTORY | OFlag::O_RDONLY,
                Mode::empty(),
            )
            .map_err(|e| sys(&target.path, e))?;
            (fd, name)
        }
        None => (root, target.path.as_str()),
    };
    Ok((dir, name))
}

/// The directory's status, refused unless it belongs to the uid this process runs as: what
/// the unit creates there is then the directory owner's (H6).
pub fn owned_dir(dir: &OwnedFd, path: &str) -> Result<FileStat, StageError> {
    let st = fstat(dir).map_err(|e| sys(path, e))?;
    let me = geteuid().as_raw();
    if st.st_uid != me {
        return Err(StageError::new(
            StageFailure::Owner,
            format!(
                "{path}: its directory belongs to uid {}, not to uid {me} that writes: a write \
                 runs as the directory's owner",
                st.st_uid
            ),
        ));
    }
    Ok(st)
}

/// Opens `name` in `dir` for reading, beneath and without following a link; `None` when
/// there is no such name. Not blocking on a FIFO: what is not a regular file is refused.
pub fn open_file(
    dir: &OwnedFd,
    name: &str,
    path: &str,
) -> Result<Option<(File, FileStat)>, StageError> {
    let fd = match open_beneath(
        dir,
        name,
        OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::ENOENT) => return Ok(None),
        Err(e) => return Err(sys(path, e)),
    };
    let st = fstat(fd.as_fd()).map_err(|e| sys(path, e))?;
    if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT != SFlag::S_IFREG {
        return Err(StageError::new(
            StageFailure::NotRegular,
            format!("{path}: not a regular file"),
        ));
    }
    Ok(Some((File::from(fd), st)))
}

/// A file a write may replace: one link, the writer's uid, no set-uid or set-gid bit, at
/// most [`MAX_FILE`] bytes (H5).
pub fn replaceable(st: &FileStat, path: &str) -> Result<(), StageError> {
    let refuse = |failure, why: String| Err(StageError::new(failure, format!("{path}: {why}")));
    let me = geteuid().as_raw();
    if st.st_nlink > 1 {
        return refuse(
            StageFailure::Linked,
            format!(
                "it has {} hard links; a write by rename would leave the others with the old \
                 text",
                st.st_nlink
            ),
        );
    }
    if st.st_uid != me {
        return refuse(
            StageFailure::Owner,
            format!(
                "it belongs to uid {}, not to uid {me} that writes: its owner could not be kept",
                st.st_uid
            ),
        );
    }
    if st.st_mode & (Mode::S_ISUID | Mode::S_ISGID).bits() != 0 {
        return refuse(
            StageFailure::SetId,
            "it has a set-uid or set-gid bit, which a write could not keep".to_owned(),
        );
    }
    if u64::try_from(st.st_size).unwrap_or(u64::MAX) > MAX_FILE {
        return refuse(
            StageFailure::TooLarge,
            format!("it is larger than {MAX_FILE} bytes"),
        );
    }
    Ok(())
}

/// Reads a whole text file: at most [`MAX_FILE`] bytes of UTF-8 without NUL.
pub fn read_text(mut file: impl Read, path: &str) -> Result<String, StageError> {
    let mut bytes = Vec::new();
    file.by_ref()
        .take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| StageError::new(StageFailure::Io, format!("{path}: {e}")))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(StageError::new(
            StageFailure::TooLarge,
            format!("{path}: larger than {MAX_FILE} bytes"),
        ));
    }
    if bytes.contains(&0) {
        return Err(StageError::new(
            StageFailure::NotText,
            format!("{path}: not text (it holds a NUL byte)"),
        ));
    }
    String::from_utf8(bytes).map_err(|_| {
        StageError::new(
            StageFailure::NotText,
            format!("{path}: not text (it is not UTF-8)"),
        )
    })
}

/// Creates `name` in `dir`, new (`O_EXCL`), beneath and not through a link, mode 0600 until
/// the commit sets the file's own.
pub fn create_beneath(dir: &OwnedFd, name: &str, path: &str) -> Result<File, StageError> {
    open_beneath(
        dir,
        name,
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW,
        Mode::from_bits_truncate(0o600),
    )
    .map(File::from)
    .map_err(|e| sys(path, e).during("creating the new file"))
}
