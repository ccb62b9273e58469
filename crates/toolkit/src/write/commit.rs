//! The commit: a compare-and-swap write of one name in the target's directory (H5, H6).

use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{FileExt, MetadataExt};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, RenameFlags, renameat2};
use nix::sys::stat::{FileStat, Mode, fchmod, fstatat};
use nix::unistd::{Gid, UnlinkatFlags, fchown, fsync, unlinkat};
use proto::Hash32;
use proto::tools::WriteMode;
use proto::tools::hands::MAX_FILE;
use proto::tools::stage::{Commit, Found, StageFailure, StageOutput, WriteCall};
use textedit::EditError;

use super::beneath::{self, sys};
use crate::stage_error::StageError;

/// Where the commit is, for a test that changes the file system between two steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// The old file was read and checked, the new text computed.
    Checked,
    /// The temporary file is written and synced, not yet renamed.
    Written,
    /// The names were exchanged, not yet verified.
    Exchanged,
}

pub fn commit(c: &Commit) -> Result<StageOutput, StageError> {
    commit_with(c, &mut |_| {})
}

/// The old file as found: its open file (kept to hash it again), status and hash.
struct Old {
    file: File,
    st: FileStat,
    hash: Hash32,
}

pub(crate) fn commit_with(
    c: &Commit,
    pause: &mut dyn FnMut(Step),
) -> Result<StageOutput, StageError> {
    let path = c.target.path.as_str();
    let fail = |failure, why: &str| StageError::new(failure, format!("{path}: {why}"));
    let (dir, name) = beneath::open_parent(&c.target)?;
    let dir_st = beneath::owned_dir(&dir, path)?;
    let found = beneath::open_file(&dir, name, path)?;
    let creates = matches!(&c.call, WriteCall::WriteFile(a) if a.mode == WriteMode::Create);
    let old = match (c.old, found) {
        (Found::Absent, None) => None,
        (Found::Absent, Some(_)) if creates => {
            return Err(fail(StageFailure::Exists, "the file exists"));
        }
        (Found::Absent, Some(_)) => {
            return Err(fail(
                StageFailure::Changed,
                "the file appeared since it was shown",
            ));
        }
        (Found::Sha256(_), None) => {
            return Err(fail(
                StageFailure::Changed,
                "the file is gone since it was shown",
            ));
        }
        (Found::Sha256(want), Some((file, st))) => {
            beneath::replaceable(&st, path)?;
            let text = beneath::read_text(&file, path)?;
            let hash = Hash32::digest(text.as_bytes());
            if hash != want {
                return Err(fail(
                    StageFailure::Changed,
                    "the file changed since it was shown",
                ));
            }
            Some((Old { file, st, hash }, text))
        }
    };
    let new = textedit::apply(old.as_ref().map(|(_, t)| t.as_str()), &c.call).map_err(|e| {
        let failure = match e {
            EditError::Exists => StageFailure::Exists,
            EditError::TooLarge { .. } => StageFailure::TooLarge,
            _ => StageFailure::Edit,
        };
        fail(failure, &e.to_string())
    })?;
    let new_hash = Hash32::digest(new.as_bytes());
    if new_hash != c.new {
        return Err(fail(
            StageFailure::Disagree,
            "the new text does not hash to what brokerd computed",
        ));
    }
    pause(Step::Checked);
    let tmp = temp_name(name);
    let written = write_temp(
        &dir,
        &tmp,
        path,
        &new,
        old.as_ref().map(|(o, _)| &o.st),
        &dir_st,
    );
    if let Err(e) = written {
        let _ = unlinkat(&dir, tmp.as_str(), UnlinkatFlags::NoRemoveDir);
        return Err(e);
    }
    pause(Step::Written);
    // Each removes the temporary name itself when it holds only the new text.
    match &old {
        None => place_new(&dir, &tmp, name, path, creates)?,
        Some((o, _)) => exchange(&dir, &tmp, name, path, o, pause)?,
    }
    fsync(&dir).map_err(|e| sys(path, e).during("syncing the directory"))?;
    Ok(StageOutput::Committed {
        old: old.map_or(Found::Absent, |(o, _)| Found::Sha256(o.hash)),
        new: new_hash,
        size: new.len() as u64,
    })
}

/// `.<name>.<16 hex>.bxtmp`, the name cut so the whole stays within 255 bytes.
fn temp_name(name: &str) -> String {
    let mut end = name.len().min(200);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    let mut bits = [0u8; 8];
    // Without randomness the name is still unique enough to try: O_EXCL refuses a clash.
    let _ = getrandom::fill(&mut bits);
    format!(".{}.{}.bxtmp", &name[..end], proto::hex(&bits))
}

/// Writes the new text into a new temporary file with the old file's group and permission
/// bits (or, for a new file, the directory's read and write bits), and syncs it.
fn write_temp(
    dir: &OwnedFd,
    tmp: &str,
    path: &str,
    new: &str,
    old: Option<&FileStat>,
    dir_st: &FileStat,
) -> Result<(), StageError> {
    let io = |e: std::io::Error| StageError::new(StageFailure::Io, format!("{path}: {e}"));
    let mut file = beneath::create_beneath(dir, tmp, path)?;
    file.write_all(new.as_bytes())
        .map_err(|e| io(e).during("writing the new file"))?;
    let mode = match old {
        Some(st) => {
            let gid = file.metadata().map_err(io)?.gid();
            if gid != st.st_gid {
                fchown(file.as_fd(), None, Some(Gid::from_raw(st.st_gid))).map_err(|e| {
                    StageError::new(
                        StageFailure::Owner,
                        format!(
                            "{path}: its group {} cannot be kept ({})",
                            st.st_gid,
                            e.desc()
                        ),
                    )
                })?;
            }
            st.st_mode & 0o777
        }
        None => dir_st.st_mode & 0o664,
    };
    fchmod(file.as_fd(), Mode::from_bits_truncate(mode))
        .map_err(|e| sys(path, e).during("setting the new file's mode"))?;
    file.sync_all()
        .map_err(|e| io(e).during("syncing the new file"))
}

/// A new file takes its name only if the name is still free.
fn place_new(
    dir: &OwnedFd,
    tmp: &str,
    name: &str,
    path: &str,
    creates: bool,
) -> Result<(), StageError> {
    let placed = renameat2(dir, tmp, dir, name, RenameFlags::RENAME_NOREPLACE);
    if placed.is_err() {
        let _ = unlinkat(dir, tmp, UnlinkatFlags::NoRemoveDir);
    }
    match placed {
        Ok(()) => Ok(()),
        Err(Errno::EEXIST) if creates => Err(StageError::new(
            StageFailure::Exists,
            format!("{path}: the file exists"),
        )),
        Err(Errno::EEXIST) => Err(StageError::new(
            StageFailure::Changed,
            format!("{path}: the file appeared since it was shown"),
        )),
        Err(e) => Err(sys(path, e).during("renaming the new file into place")),
    }
}

/// Exchanges the names, then checks that what came out is the file that was read, with the
/// bytes that were hashed; if not, exchanges back. On success the temporary name holds the
/// old file, which is unlinked.
fn exchange(
    dir: &OwnedFd,
    tmp: &str,
    name: &str,
    path: &str,
    old: &Old,
    pause: &mut dyn FnMut(Step),
) -> Result<(), StageError> {
    let swapped = renameat2(dir, tmp, dir, name, RenameFlags::RENAME_EXCHANGE);
    if swapped.is_err() {
        let _ = unlinkat(dir, tmp, UnlinkatFlags::NoRemoveDir);
    }
    match swapped {
        Ok(()) => {}
        Err(Errno::EINVAL) => {
            return Err(StageError::new(
                StageFailure::NoExchange,
                format!(
                    "{path}: the file system cannot exchange two names atomically \
                     (renameat2 RENAME_EXCHANGE), which a write here needs"
                ),
            ));
        }
        Err(Errno::ENOENT) => {
            return Err(StageError::new(
                StageFailure::Changed,
                format!("{path}: the file is gone since it was read"),
            ));
        }
        Err(e) => return Err(sys(path, e).during("exchanging the new file with the old")),
    }
    pause(Step::Exchanged);
    let out = fstatat(dir, tmp, AtFlags::AT_SYMLINK_NOFOLLOW).map_err(|e| sys(path, e));
    let same = out
        .as_ref()
        .is_ok_and(|st| (st.st_dev, st.st_ino) == (old.st.st_dev, old.st.st_ino) && unchanged(old));
    if !same {
        // Put back what was there; the temporary name then holds the new text again. Should
        // that fail, the temporary name holds what was there, and is kept.
        renameat2(dir, tmp, dir, name, RenameFlags::RENAME_EXCHANGE).map_err(|e| {
            StageError::new(
                StageFailure::Io,
                format!(
                    "{path}: the file changed while it was written, and putting it back failed                      ({}): what was there is kept as {tmp}",
                    e.desc()
                ),
            )
        })?;
        let _ = unlinkat(dir, tmp, UnlinkatFlags::NoRemoveDir);
        return Err(StageError::new(
            StageFailure::Changed,
            format!("{path}: the file changed while it was written; it is left as it was"),
        ));
    }
    unlinkat(dir, tmp, UnlinkatFlags::NoRemoveDir)
        .map_err(|e| sys(path, e).during("removing the old file"))
}

/// Whether the old file's bytes still hash as they did when read.
fn unchanged(old: &Old) -> bool {
    let limit = usize::try_from(MAX_FILE + 1).unwrap_or(usize::MAX);
    let mut bytes = vec![0; limit];
    let mut len = 0;
    while len < limit {
        match old.file.read_at(&mut bytes[len..], len as u64) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(_) => return false,
        }
    }
    Hash32::digest(&bytes[..len]) == old.hash
}
