//! The chat's input history, kept across runs: the lines you typed (Up and Ctrl-R find
//! them), in `$XDG_STATE_HOME/boxmaker/chat-history` (by default
//! `~/.local/state/boxmaker/chat-history`), the directory 0700 and the file 0600 since your
//! words may be private. Each line is appended as it is entered, so a chat that is killed
//! loses none. Without a home directory there is no history file, and the chat says so.

use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;

/// The most lines kept.
pub const MAX_LINES: usize = 1000;

/// Where the history is kept, or `None` when neither `XDG_STATE_HOME` nor `HOME` is set.
pub fn path() -> Option<PathBuf> {
    let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    let state = std::env::var_os("XDG_STATE_HOME")
        .and_then(absolute)
        .or_else(|| {
            std::env::var_os("HOME")
                .and_then(absolute)
                .map(|h| h.join(".local/state"))
        })?;
    Some(state.join("boxmaker/chat-history"))
}

/// The file, created empty (0600, in a 0700 directory) when it is not there: rustyline
/// writes it later through its own umask, which would otherwise decide.
pub fn prepare(path: &std::path::Path) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
        .map(drop)
}
