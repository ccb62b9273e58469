//! What brokerd and `boxmaker-tool` exchange for the hands (docs/decisions.md H2, H11,
//! H12): one [`StageInvocation`] on the tool's stdin (told from a
//! [`ToolInvocation`](crate::toolrun::ToolInvocation) by its `stage` key) and one
//! [`StageOutput`] on its stdout.
//!
//! - `look`: the target's bytes and metadata, read through the granted root (read-only);
//! - `commit`: the compare-and-swap write (the granted root read-write);
//! - `run`: a granted program, its output captured and capped.

use serde::{Deserialize, Serialize};

use super::hands::{EditFileArgs, WriteFileArgs};
pub use crate::tool::StageFailure;
use crate::{Hash32, ToolFailure};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "stage", rename_all = "snake_case", deny_unknown_fields)]
pub enum StageInvocation {
    Look(Look),
    Commit(Commit),
    Run(RunStage),
}

/// Where a write's target is as the unit sees it: the granted root (bound at a fixed place
/// under systemd, its real path with the direct runner) and the target's path below it,
/// relative and normalised (no `.`, `..`, empty or leading `/` component).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    pub root: String,
    pub path: String,
}

/// Read the target's bytes (or learn that it is absent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Look {
    pub target: Target,
}

/// A write's arguments as the model gave them (the commit recomputes the new bytes from
/// them and the old bytes it finds).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "tool",
    content = "arguments",
    rename_all = "snake_case",
    deny_unknown_fields
)]
pub enum WriteCall {
    WriteFile(WriteFileArgs),
    EditFile(EditFileArgs),
}

/// What a file's name holds, as expected or as found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Found {
    Absent,
    Sha256(Hash32),
}

/// Write `call`'s result over exactly `old`, and only if it hashes to `new`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Commit {
    pub target: Target,
    pub call: WriteCall,
    pub old: Found,
    pub new: Hash32,
}

/// Run `program` (an absolute path) with `args` in `workdir`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunStage {
    pub program: String,
    pub args: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
    pub workdir: String,
    /// The executor's own deadline; the unit's `RuntimeMaxSec=` is a little later.
    pub timeout_ms: u64,
    /// The most bytes kept of stdout, and of stderr, each.
    pub max_output: u64,
}

/// A text file as the look found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OldFile {
    pub text: String,
    pub sha256: Hash32,
    pub size: u64,
    pub uid: u32,
    pub gid: u32,
    /// The permission bits (`mode & 0o7777`).
    pub mode: u32,
}

/// How a program's run ended, as the executor saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum RunEnd {
    Exited {
        status: i32,
    },
    /// Killed by a signal other than the executor's own at the deadline (`SIGKILL`).
    Signal {
        signal: String,
    },
    /// The executor killed it at its deadline.
    TimeLimit,
}

/// One captured stream: at most `max_output` bytes, lossy UTF-8; `bytes` is how much the
/// program wrote in all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Captured {
    pub text: String,
    pub bytes: u64,
    pub truncated: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunReport {
    pub end: RunEnd,
    pub stdout: Captured,
    pub stderr: Captured,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case", deny_unknown_fields)]
pub enum StageOutput {
    Looked {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        file: Option<OldFile>,
    },
    Committed {
        old: Found,
        new: Hash32,
        size: u64,
    },
    Ran {
        report: RunReport,
    },
    Failed {
        failure: StageFailure,
        message: String,
    },
}

impl RunReport {
    /// The text the model reads, and the typed failure of a run that did not exit 0:
    /// how it ended, then each stream with its size and, when cut, how much is shown.
    pub fn render(&self) -> (String, Option<ToolFailure>) {
        let (head, failure) = match &self.end {
            RunEnd::Exited { status: 0 } => ("exited with status 0".to_owned(), None),
            RunEnd::Exited { status } => (
                format!("exited with status {status}"),
                Some(ToolFailure::Exited { status: *status }),
            ),
            RunEnd::Signal { signal } => (
                format!("killed by signal {signal}"),
                Some(ToolFailure::Signal {
                    signal: Some(signal.clone()),
                }),
            ),
            RunEnd::TimeLimit => (
                "stopped at its time limit".to_owned(),
                Some(ToolFailure::TimeLimit),
            ),
        };
        let mut text = head;
        for (name, s) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            text.push('\n');
            if s.truncated {
                text.push_str(&format!(
                    "{name} (the first {} of {} bytes):\n",
                    s.text.len(),
                    s.bytes
                ));
            } else {
                text.push_str(&format!("{name} ({} bytes):\n", s.bytes));
            }
            text.push_str(&s.text);
        }
        (text, failure)
    }
}
