//! The self-test's scratch directory, and what an interrupt (SIGINT, SIGTERM, SIGHUP) does
//! to it: the shadow's processes stopped, then the directory removed (canaries and all),
//! before bxctl exits.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

use crate::dev::stack::Stack;

/// Set by the signal's thread when the self-test is interrupted.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Set by the signal handler itself, before anything else runs: a call of the run's that
/// the signal cut short (`EINTR`) may end the run before the signal's thread sets
/// [`INTERRUPTED`].
static SIGNALLED: LazyLock<Arc<AtomicBool>> = LazyLock::new(Arc::default);

/// Whether the self-test was interrupted: the signal's thread then stops the shadow, removes
/// the scratch directory and exits the process, and the run ends in no verdict of its own.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Acquire) || SIGNALLED.load(Ordering::Acquire)
}

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
    })?;
    // After the signal's thread is there to act on it (a signal marked only here would
    // leave the run parked with no exit coming).
    for signal in [SIGINT, SIGTERM, SIGHUP] {
        signal_hook::flag::register(signal, Arc::clone(&SIGNALLED))?;
    }
    Ok(())
}
