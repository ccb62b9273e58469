//! daemon: the runtime every boxmaker role process shares. One purpose: running as a
//! systemd service and talking framed JSON over Unix sockets, written once. The one start-up
//! (`service`: the systemd socket handoff, readiness, the watchdog, reload and drain),
//! SO_PEERCRED peer checks, the one accept loop (`accept`) and framed connections with
//! deadlines, log lines journald files at the right priority, how a role's `main` ends on
//! an error (`exit`), per-key locks, durable state files, and a role that ends with the
//! `bxctl dev` that started it (`parent`: the role's half of development's supervision,
//! nothing under systemd). Not a role: it decides nothing (the configuration's schema is the
//! `config` crate's, the grant files `grants`', HTTP `strict-http`'s, the owner's words
//! `owner-words`', starting a role as systemd does `supervise`'s, the display rule for
//! foreign text `inert`'s).

pub mod accept;
pub mod conn;
pub mod durable;
pub mod exit;
pub mod hangup;
pub mod keyed;
pub mod listen;
pub mod log;
pub mod notify;
pub mod parent;
pub mod peer;
pub mod serve;
pub mod service;

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

/// Locks `m`. A poisoned mutex means a thread panicked while holding it; the data is still
/// the best there is (every write to disk was already complete or failed), so it is used.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether `m` can be locked now or within `within`: false when a thread holds it that
/// long (stuck in a write and its fsync, say), or panicked holding it. For the watchdog.
pub fn reachable<T>(m: &Mutex<T>, within: std::time::Duration) -> bool {
    let start = std::time::Instant::now();
    loop {
        match m.try_lock() {
            Ok(_) => return true,
            Err(std::sync::TryLockError::Poisoned(_)) => return false,
            Err(std::sync::TryLockError::WouldBlock) if start.elapsed() < within => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(std::sync::TryLockError::WouldBlock) => return false,
        }
    }
}

/// The arguments every role binary takes.
#[derive(Debug, Clone, clap::Args)]
pub struct CommonArgs {
    /// The configuration file (`BOXMAKER_CONFIG` when not given, as for bxctl).
    #[arg(long, value_name = "PATH", env = "BOXMAKER_CONFIG", default_value = config::DEFAULT_PATH)]
    pub config: PathBuf,
    /// Check the configuration (and for brokerd the grants) and exit: 0 when good.
    #[arg(long)]
    pub check_config: bool,
}
