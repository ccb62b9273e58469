//! Why the audit log could not be opened or a record could not be appended. Every variant
//! names what a person needs to act on: the path, and for a broken chain the file and line.
//! Each text is whole: it prints what it wraps (docs/decisions.md F16).

use std::io;
use std::path::{Path, PathBuf};

use proto::chain::ChainError;

use super::checkpoint::Problem;

#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// A file-system call failed. `op` says what brokerd was doing ("read", "fsync", …).
    #[error("audit log: cannot {op} {}: {error}", path.display())]
    Io {
        path: PathBuf,
        op: &'static str,
        error: io::Error,
    },
    /// Another process holds the lock: another brokerd writes this log.
    #[error(
        "audit log: {} is locked by another process: another brokerd is already writing \
         this audit log, and only one may",
        lock.display()
    )]
    Locked { lock: PathBuf },
    /// Taking the lock failed for another reason than contention.
    #[error("audit log: cannot lock {}: {error}", lock.display())]
    Lock { lock: PathBuf, error: io::Error },
    /// A path in the audit directory is not what the writer makes: a symbolic link, not a
    /// regular file or directory, open to group or others, or a `*.jsonl` not named by a date.
    #[error("audit log: refusing {}: {reason}", path.display())]
    Unsafe { path: PathBuf, reason: String },
    /// The stored chain does not verify. brokerd must not start on a tampered or damaged log.
    #[error(
        "audit log: the chain is broken at {} line {}: {}. brokerd does not start on a \
         tampered or damaged audit log; nothing was changed, inspect that line",
        dir.join(&chain.file).display(),
        chain.line,
        chain.reason
    )]
    Chain { dir: PathBuf, chain: ChainError },
    /// The line the caller built does not carry the `seq`, `prev` or `time` it was handed.
    /// Nothing was written; this is a bug in the caller.
    #[error(
        "audit log: the line built for seq {seq} carries another {field} than it was given; \
         nothing was written"
    )]
    Mismatch { seq: u64, field: &'static str },
    /// serde_json could not encode the line. Nothing was written.
    #[error("audit log: cannot encode the line for seq {seq}: {error}")]
    Encode { seq: u64, error: serde_json::Error },
    /// An earlier write or fsync failed, so what is on disk is unknown; the log takes no
    /// more records until brokerd restarts (and recovers it at start).
    #[error(
        "audit log in {} takes no more records after a failed write or fsync ({cause}); \
         restart brokerd, which checks and recovers the log at start",
        dir.display()
    )]
    Poisoned { dir: PathBuf, cause: String },
    /// The checkpoint cannot be read, or does not match the log's bytes. brokerd does not
    /// start on it (docs/decisions.md A8).
    #[error("{}", checkpoint_refused(path, problem))]
    Checkpoint { path: PathBuf, problem: Problem },
    /// A verification while serving ended because brokerd is stopping.
    #[error("audit log: the verification stopped: brokerd is stopping")]
    Stopped,
}

/// What a start refused on a checkpoint says, and how the owner recovers.
fn checkpoint_refused(path: &Path, problem: &Problem) -> String {
    let (what, why) = match problem {
        Problem::Unreadable(why) => ("cannot be read as brokerd writes it", why),
        Problem::Mismatch(why) => ("does not match the audit log", why),
    };
    format!(
        "audit log: the checkpoint {} {what}: {why}. brokerd does not start on it; nothing \
         was changed. Run `bxctl audit verify` to check the whole chain; if it is good, \
         remove {} and brokerd verifies the whole log at its next start and writes a new \
         checkpoint",
        path.display(),
        path.display()
    )
}
