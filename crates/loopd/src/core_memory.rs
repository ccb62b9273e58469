//! Core memory, pinned per epoch. `memory/core.md` is the owner's; an epoch starts from the
//! bytes it held then, which loopd keeps beside the epoch's log (`sessions/<id>/<epoch>.core`)
//! before the epoch's first record is written. Every request of the epoch, and a replay
//! after a restart, uses the pinned bytes: an edit of `core.md` reaches the next epoch only,
//! so the running epoch keeps its prompt cache and its `SessionStart.baseline` stays the
//! hash of what its requests really start from. The pin itself is the store's
//! (`Store::pin_core`, `Store::core_of_epoch`).

use std::path::Path;

/// What the model is told when no `memory/core.md` exists (proto's: brokerd accounts for
/// the system message it makes).
pub use proto::composed::DEFAULT_CORE;

/// The largest `core.md` loopd takes: it is in every request, so it must leave the context
/// room. A larger one is refused (logged) and the default used.
pub const MAX_CORE: u64 = 256 * 1024;

/// The owner's core memory as it is now: `memory/core.md`, or the default when there is none
/// (or it cannot be taken: too large, not UTF-8, unreadable; each logged).
pub fn current(home: &Path) -> String {
    let path = home.join("memory/core.md");
    match std::fs::metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return DEFAULT_CORE.to_owned(),
        Ok(m) if m.len() > MAX_CORE => {
            daemon::log::warn(format_args!(
                "{}: {} bytes, over the {MAX_CORE} loopd takes; the default core memory is used",
                path.display(),
                m.len()
            ));
            return DEFAULT_CORE.to_owned();
        }
        _ => {}
    }
    std::fs::read_to_string(&path).unwrap_or_else(|e| {
        daemon::log::warn(format_args!(
            "{}: {e}; the default core memory is used",
            path.display()
        ));
        DEFAULT_CORE.to_owned()
    })
}

/// The hash an epoch's `SessionStart.baseline` holds: of what its requests start from, the
/// system message (its pinned core memory) and the summary's own message, as sent.
pub fn baseline(core: &str, summary: Option<&str>) -> proto::Hash32 {
    let start = crate::prompt::start(core, summary);
    proto::Hash32::digest(serde_json::Value::Array(start).to_string().as_bytes())
}
