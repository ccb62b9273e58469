use std::fmt;
use std::io;
use std::path::PathBuf;

use proto::chain::ChainError;

use super::checkpoint::Problem;

/// Why the audit log could not be opened or a record could not be appended. Every variant
/// names what a person needs to act on: the path, and for a broken chain the file and line.
#[derive(Debug)]
pub enum AuditError {
    /// A file-system call failed. `op` says what brokerd was doing ("read", "fsync", …).
    Io {
        path: PathBuf,
        op: &'static str,
        source: io::Error,
    },
    /// Another process holds the lock: another brokerd writes this log.
    Locked { lock: PathBuf },
    /// Taking the lock failed for another reason than contention.
    Lock { lock: PathBuf, source: io::Error },
    /// A path in the audit directory is not what the writer makes: a symbolic link, not a
    /// regular file or directory, open to group or others, or a `*.jsonl` not named by a date.
    Unsafe { path: PathBuf, reason: String },
    /// The stored chain does not verify. brokerd must not start on a tampered or damaged log.
    Chain { dir: PathBuf, source: ChainError },
    /// The line the caller built does not carry the `seq`, `prev` or `time` it was handed.
    /// Nothing was written; this is a bug in the caller.
    Mismatch { seq: u64, field: &'static str },
    /// serde_json could not encode the line. Nothing was written.
    Encode { seq: u64, source: serde_json::Error },
    /// An earlier write or fsync failed, so what is on disk is unknown; the log takes no
    /// more records until brokerd restarts (and recovers it at start).
    Poisoned { dir: PathBuf, cause: String },
    /// The checkpoint cannot be read, or does not match the log's bytes. brokerd does not
    /// start on it (docs/decisions.md A8).
    Checkpoint { path: PathBuf, problem: Problem },
    /// A verification while serving ended because brokerd is stopping.
    Stopped,
}

impl fmt::Display for AuditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { path, op, source } => {
                write!(f, "audit log: cannot {op} {}: {source}", path.display())
            }
            Self::Locked { lock } => write!(
                f,
                "audit log: {} is locked by another process: another brokerd is already \
                 writing this audit log, and only one may",
                lock.display()
            ),
            Self::Lock { lock, source } => {
                write!(f, "audit log: cannot lock {}: {source}", lock.display())
            }
            Self::Unsafe { path, reason } => {
                write!(f, "audit log: refusing {}: {reason}", path.display())
            }
            Self::Chain { dir, source } => write!(
                f,
                "audit log: the chain is broken at {} line {}: {}. brokerd does not start on \
                 a tampered or damaged audit log; nothing was changed, inspect that line",
                dir.join(&source.file).display(),
                source.line,
                source.reason
            ),
            Self::Mismatch { seq, field } => write!(
                f,
                "audit log: the line built for seq {seq} carries another {field} than it was \
                 given; nothing was written"
            ),
            Self::Encode { seq, source } => {
                write!(
                    f,
                    "audit log: cannot encode the line for seq {seq}: {source}"
                )
            }
            Self::Poisoned { dir, cause } => write!(
                f,
                "audit log in {} takes no more records after a failed write or fsync ({cause}); \
                 restart brokerd, which checks and recovers the log at start",
                dir.display()
            ),
            Self::Checkpoint { path, problem } => {
                let (what, why) = match problem {
                    Problem::Unreadable(why) => ("cannot be read as brokerd writes it", why),
                    Problem::Mismatch(why) => ("does not match the audit log", why),
                };
                write!(
                    f,
                    "audit log: the checkpoint {} {what}: {why}. brokerd does not start on it; \
                     nothing was changed. Run `bxctl audit verify` to check the whole chain; if \
                     it is good, remove {} and brokerd verifies the whole log at its next start \
                     and writes a new checkpoint",
                    path.display(),
                    path.display()
                )
            }
            Self::Stopped => {
                f.write_str("audit log: the verification stopped: brokerd is stopping")
            }
        }
    }
}

impl std::error::Error for AuditError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } | Self::Lock { source, .. } => Some(source),
            Self::Chain { source, .. } => Some(source),
            Self::Encode { source, .. } => Some(source),
            Self::Locked { .. }
            | Self::Unsafe { .. }
            | Self::Mismatch { .. }
            | Self::Poisoned { .. }
            | Self::Checkpoint { .. }
            | Self::Stopped => None,
        }
    }
}
