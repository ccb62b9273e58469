//! Why a tool unit ended badly, from `systemd-run`'s exit status and its summary of the
//! unit's end ([`super::unit_result`]).

use std::process::ExitStatus;

use proto::ToolFailure;

use super::child::{self, Explained};
use super::unit_result;

/// The unit's end from systemd-run's summary on stderr ([`unit_result`]). Without one (the
/// unit never started: polkit refused, a bad property), only systemd-run's exit status is
/// known: the tool's own for an exit code, 255 when it died of a signal, 1 for the rest.
pub(super) fn explain_systemd_run_exit(label: &str, status: ExitStatus, stderr: &str) -> Explained {
    let (end, tool_stderr) = unit_result::parse(stderr);
    let Some(end) = end else {
        let (what, failure) = match status.code() {
            Some(255) => (
                format!("the {label} was killed by a signal (systemd-run exit status 255)"),
                Some(ToolFailure::Signal { signal: None }),
            ),
            Some(code) => (
                format!("the {label} failed (systemd-run exit status {code})"),
                None,
            ),
            None => {
                let label = format!("systemd-run for the {label}");
                return child::explain_tool_exit(&label, status, stderr);
            }
        };
        return Explained {
            what,
            failure,
            stderr: tool_stderr,
        };
    };
    let failure = end.failure();
    let what = match &failure {
        Some(ToolFailure::OutOfMemory) => {
            format!("the {label} ran out of memory (stopped at its MemoryMax=)")
        }
        Some(ToolFailure::TimeLimit) => format!("the {label} ran out of time"),
        Some(ToolFailure::Signal { signal: Some(s) }) => {
            format!("the {label} was killed by signal {s}")
        }
        Some(ToolFailure::Signal { signal: None }) => format!("the {label} was killed by a signal"),
        Some(ToolFailure::Exited { status }) => format!("the {label} exited with status {status}"),
        Some(ToolFailure::Unit { result }) => format!("the {label} failed (unit result {result})"),
        // systemd never says this: it is `mcp-call`'s own answer.
        Some(ToolFailure::Mcp { failure }) => {
            format!("the {label} failed (MCP {})", failure.kind())
        }
        // systemd never says this either; only brokerd's write stages do.
        Some(f @ ToolFailure::Write { .. }) => format!("the {label} ended: {f}"),
        // systemd says success but systemd-run did not: its own failure after the run.
        None => format!("the {label} ended with result success but systemd-run failed ({status})"),
    };
    Explained {
        what,
        failure,
        stderr: tool_stderr,
    }
}
