//! Core memory, pinned per epoch. The owner's file (`core_memory`, `memory/core.md` by
//! default) is the owner's; an epoch starts from the
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

/// The largest core memory loopd takes (daemon's, which brokerd reads by too).
pub use owner_words::core_memory::MAX_CORE;

/// The owner's core memory as it is now (`owner_words::core_memory::read`).
pub fn current(path: &Path) -> String {
    owner_words::core_memory::read(path, "loopd")
}

/// The hash an epoch's `SessionStart.baseline` holds: of what its requests start from, the
/// system message (its pinned core memory) and the summary's own message, as sent.
pub fn baseline(core: &str, summary: Option<&str>) -> proto::Hash32 {
    let start = crate::prompt::start(core, summary);
    proto::Hash32::digest(serde_json::Value::Array(start).to_string().as_bytes())
}
