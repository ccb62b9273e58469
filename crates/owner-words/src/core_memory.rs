//! The owner's core memory as it is now: the file `core_memory` names in the configuration
//! (`<home>/memory/core.md` unless it says otherwise; `/etc/boxmaker/core.md` under the NixOS
//! module, where no role can write it), or proto's default when there is none. loopd pins
//! what it reads per epoch; brokerd reads the same file to account for the system message
//! built from it (docs/decisions.md X5).

use std::path::Path;

use proto::composed::DEFAULT_CORE;

/// The largest core memory taken: it is in every request, so it must leave the context
/// room. A larger one is refused (logged) and the default used.
pub const MAX_CORE: u64 = 256 * 1024;

/// The core memory at `path`, or the default when there is none (or it cannot be taken:
/// too large, not UTF-8, unreadable; each logged with `who`).
pub fn read(path: &Path, who: &str) -> String {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return DEFAULT_CORE.to_owned(),
        Ok(m) if m.len() > MAX_CORE => {
            daemon::log::warn(format_args!(
                "{who}: {}: {} bytes, over the {MAX_CORE} taken; the default core memory is used",
                path.display(),
                m.len()
            ));
            return DEFAULT_CORE.to_owned();
        }
        _ => {}
    }
    std::fs::read_to_string(path).unwrap_or_else(|e| {
        daemon::log::warn(format_args!(
            "{who}: {}: {e}; the default core memory is used",
            path.display()
        ));
        DEFAULT_CORE.to_owned()
    })
}
