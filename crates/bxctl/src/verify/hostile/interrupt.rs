//! The self-test's scratch directory, and what an interrupt (SIGINT, SIGTERM, SIGHUP) does
//! to it: the shadow's processes stopped, then the directory removed (canaries and all),
//! before bxctl exits.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::dev::stack::Stack;

/// Set by the signal's thread when the self-test is interrupted.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// A scratch directory of this run's, never the owner's state: under the system's
/// temporary directory, made here and only here (an existing one is an error, not reused)
/// and readable by this user alone; removed at the end (canaries and all).
pub fn scratch() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir = std::env::temp_dir().join(format!(
        "boxmaker-hostile-{}-{nanos:08x}",
        std::process::id()
    ));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}

/// Watches for the signals that end the self-test: then it stops `stack` (the shadow's
/// processes) and removes `dir`, and the process exits (`signals::watch`).
pub fn watch(dir: &Path, stack: Arc<Stack>) -> std::io::Result<()> {
    let removal = dir.to_owned();
    crate::signals::watch(Arc::default(), move || {
        // First, so that the run, failing as its files go, ends in no verdict of its own.
        INTERRUPTED.store(true, Ordering::Release);
        stack.stop();
        // A role that was coming up is killed as it does (`Stack`): until then it may still
        // write there, so the removal is tried again for a moment.
        let mut left = None;
        for _ in 0..40 {
            match std::fs::remove_dir_all(&removal) {
                Err(e) if removal.exists() => left = Some(e),
                _ => {
                    left = None;
                    break;
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let shown = inert::line(&removal.display().to_string());
        let _ = match left {
            None => writeln!(
                std::io::stderr(),
                "verify: hostile: interrupted; removed {shown}"
            ),
            Some(e) => writeln!(
                std::io::stderr(),
                "verify: hostile: interrupted; could not remove {shown}: {e}; it holds \
                 canaries only: remove it by hand"
            ),
        };
    })
}
