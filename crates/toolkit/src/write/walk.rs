//! Opening a path below a directory without following a link or crossing a mount: one
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)`
//! where the kernel and the unit's system call filter have it, and where the filter answers
//! it with ENOSYS (systemd 252's, measured in the container tier) the same walk by hand: one
//! component at a time, each opened with `O_NOFOLLOW` relative to the directory opened
//! before it, refused when it is on another device than the start (docs/decisions.md H4,
//! H19). Either way no path string is resolved twice, so nothing can be swapped in between
//! a check and its use.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, OpenHow, ResolveFlag, openat, openat2};
use nix::sys::stat::{Mode, SFlag, fstat, fstatat};

/// `path` (relative, no empty, `.` or `..` component) below `dir`, opened with `flags`
/// (and `mode`, for `O_CREAT`): ELOOP for a link anywhere on the way, EXDEV for a mount.
pub fn open_beneath(dir: &OwnedFd, path: &str, flags: OFlag, mode: Mode) -> Result<OwnedFd, Errno> {
    let how = OpenHow::new()
        .flags(flags | OFlag::O_CLOEXEC)
        .mode(mode)
        .resolve(
            ResolveFlag::RESOLVE_BENEATH
                | ResolveFlag::RESOLVE_NO_SYMLINKS
                | ResolveFlag::RESOLVE_NO_MAGICLINKS
                | ResolveFlag::RESOLVE_NO_XDEV,
        );
    match openat2(dir, path, how) {
        Err(Errno::ENOSYS) => walk(dir.as_fd(), path, flags, mode),
        other => other,
    }
}

/// The walk by hand: every component `O_NOFOLLOW`, every directory on the start's device.
fn walk(dir: BorrowedFd<'_>, path: &str, flags: OFlag, mode: Mode) -> Result<OwnedFd, Errno> {
    let parts: Vec<&str> = path.split('/').collect();
    if parts.iter().any(|p| matches!(*p, "" | "." | "..")) {
        return Err(Errno::EXDEV);
    }
    let device = fstat(dir)?.st_dev;
    let (last, ways) = parts.split_last().ok_or(Errno::ENOENT)?;
    let mut held: Option<OwnedFd> = None;
    for part in ways {
        let at = held.as_ref().map_or(dir, AsFd::as_fd);
        let next = openat(
            at,
            *part,
            OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| link_or(at, part, e))?;
        if fstat(&next)?.st_dev != device {
            return Err(Errno::EXDEV);
        }
        held = Some(next);
    }
    let at = held.as_ref().map_or(dir, AsFd::as_fd);
    let fd = openat(
        at,
        *last,
        flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        mode,
    )?;
    if fstat(&fd)?.st_dev != device {
        return Err(Errno::EXDEV);
    }
    Ok(fd)
}

/// A directory step refused as not a directory is a link when the name is one (the error
/// only; nothing is opened by that look).
fn link_or(at: BorrowedFd<'_>, part: &str, e: Errno) -> Errno {
    let link = e == Errno::ENOTDIR
        && fstatat(at, part, AtFlags::AT_SYMLINK_NOFOLLOW).is_ok_and(|st| {
            SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFLNK
        });
    if link { Errno::ELOOP } else { e }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("wt-hands-walk-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("a/b")).expect("dirs");
        std::fs::write(d.join("a/b/f"), "x").expect("file");
        d
    }

    fn root(d: &std::path::Path) -> OwnedFd {
        nix::fcntl::open(d, OFlag::O_DIRECTORY | OFlag::O_RDONLY, Mode::empty()).expect("root")
    }

    #[test]
    fn the_hand_walk_opens_below_and_refuses_a_link_on_the_way_or_at_the_end() {
        let d = scratch("links");
        let r = root(&d);
        assert!(walk(r.as_fd(), "a/b/f", OFlag::O_RDONLY, Mode::empty()).is_ok());
        std::os::unix::fs::symlink(d.join("a/b"), d.join("a/l")).expect("link");
        std::os::unix::fs::symlink(d.join("a/b/f"), d.join("a/b/g")).expect("link");
        for through in ["a/l/f", "a/b/g"] {
            assert_eq!(
                walk(r.as_fd(), through, OFlag::O_RDONLY, Mode::empty()).err(),
                Some(Errno::ELOOP),
                "{through}"
            );
        }
        assert_eq!(
            walk(r.as_fd(), "a/../a/b/f", OFlag::O_RDONLY, Mode::empty()).err(),
            Some(Errno::EXDEV)
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn the_hand_walk_creates_only_a_new_name() {
        let d = scratch("create");
        let r = root(&d);
        let create = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL;
        assert!(
            walk(
                r.as_fd(),
                "a/b/new",
                create,
                Mode::from_bits_truncate(0o600)
            )
            .is_ok()
        );
        assert_eq!(
            walk(r.as_fd(), "a/b/f", create, Mode::from_bits_truncate(0o600)).err(),
            Some(Errno::EEXIST)
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}
