//! What `systemd-run --wait` says about the unit's end, read from its stderr.
//!
//! Without `--quiet`, `systemd-run --wait` logs to stderr `Running as unit: NAME` (some
//! versions add `; invocation ID: …`) once the unit started and, after it stopped, a summary:
//! `Finished with result: RESULT`, `Main processes terminated with: code=CODE, status=N/NAME`
//! (older: `code=CODE/status=N`), then runtime, CPU, memory, IP and IO lines (systemd's
//! src/run/run.c; the VM tier prints 257's, unit_result/tests.rs holds it). RESULT
//! is the service's `Result` property: `success`, `exit-code`, `signal`, `core-dump`,
//! `timeout`, `oom-kill`, `resources`, `protocol`, `watchdog`, `start-limit-hit`, ….
//! Its exit status cannot tell these apart: 1 stands for `oom-kill`, `timeout` and a tool
//! that exits 1 alike.
//!
//! `--pipe` gives the tool the same stderr, so a tool can print lines like these too. The
//! summary is written after the unit is inactive, when no process of the tool is left: the
//! real one is the *last* `Finished with result:` line, and what follows it is systemd-run's.

use proto::ToolFailure;

/// The end of a unit, as systemd-run reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct UnitEnd {
    /// systemd's result word, as printed.
    pub result: String,
    /// `status=` of the main process line: an exit status or a signal number.
    pub status: Option<i32>,
}

impl UnitEnd {
    /// The typed failure; `None` for `success`.
    pub fn failure(&self) -> Option<ToolFailure> {
        Some(match self.result.as_str() {
            "success" => return None,
            "oom-kill" => ToolFailure::OutOfMemory,
            "timeout" => ToolFailure::TimeLimit,
            "signal" | "core-dump" => ToolFailure::Signal {
                signal: self.status.and_then(signal_name),
            },
            "exit-code" => match self.status {
                Some(status) => ToolFailure::Exited { status },
                None => ToolFailure::Unit {
                    result: self.result.clone(),
                },
            },
            other => ToolFailure::Unit {
                result: other.to_owned(),
            },
        })
    }
}

const RESULT: &str = "Finished with result: ";
const MAIN: &str = "Main processes terminated with: ";
const RUNNING: &str = "Running as unit: ";

/// Splits systemd-run's stderr into the unit's end (when it reported one) and the tool's
/// own stderr, without systemd-run's lines.
pub(super) fn parse(stderr: &str) -> (Option<UnitEnd>, String) {
    let lines: Vec<&str> = stderr.lines().collect();
    let Some(at) = lines.iter().rposition(|l| l.starts_with(RESULT)) else {
        return (None, strip_running(&lines).join("\n"));
    };
    let result = lines[at][RESULT.len()..].trim();
    let status = lines[at + 1..]
        .iter()
        .find_map(|l| l.strip_prefix(MAIN))
        .and_then(main_status);
    let end = (!result.is_empty()).then(|| UnitEnd {
        result: result.to_owned(),
        status,
    });
    (end, strip_running(&lines[..at]).join("\n"))
}

/// The tool's lines: without systemd-run's first line (`Running as unit: …`).
fn strip_running<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    match lines.split_first() {
        Some((first, rest)) if first.starts_with(RUNNING) => rest.to_vec(),
        _ => lines.to_vec(),
    }
}

/// `N` of `code=killed, status=9/KILL` (257) or `code=exited/status=3` (252).
fn main_status(text: &str) -> Option<i32> {
    let (_, after) = text.split_once("status=")?;
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// `SIGKILL` for 9; `None` for a number that is no signal here.
fn signal_name(number: i32) -> Option<String> {
    nix::sys::signal::Signal::try_from(number)
        .ok()
        .map(|s| s.as_str().to_owned())
}

#[cfg(test)]
mod tests;
