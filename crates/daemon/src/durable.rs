//! Replacing a state file so that a crash leaves the old contents or the new, never a mix:
//! temp file, fsync, rename, directory fsync. brokerd's session files and gatewayd's state
//! file are written this way.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;

/// The step of a replacement that failed: the file it was acting on, and why.
#[derive(Debug)]
pub struct ReplaceError {
    /// The temp file, the target (for the rename) or its directory (for the fsync).
    pub path: PathBuf,
    pub source: io::Error,
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn replaces_whole_with_the_mode_asked_for_and_leaves_no_temp_file() {
        let dir = std::env::temp_dir().join(format!("daemon-durable-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let (path, tmp) = (dir.join("state.json"), dir.join(".state.json.tmp"));
        std::fs::write(&tmp, b"stale").expect("stale temp file");
        replace_file(&path, &tmp, b"first", 0o600).expect("first");
        replace_file(&path, &tmp, b"second", 0o600).expect("second");
        assert_eq!(std::fs::read(&path).expect("read"), b"second");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(!tmp.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
