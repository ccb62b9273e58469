//! Driving one tool process (the tool itself, or `systemd-run --pipe` standing in for it).
//!
//! stdin, stdout and stderr each get their own thread, so a tool that writes a lot of
//! stderr, or never reads its stdin, cannot block brokerd on a full pipe. The calling thread
//! only waits: for the exit status and the complete stdout, or for the deadline, or for the
//! stdout cap to be crossed, whichever comes first.

use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

use proto::ToolFailure;
use proto::toolrun::{ToolOutput, cap_str};
use proto::tools::stage::StageOutput;

use super::spec::{Limits, RunOutcome};

/// How much of the tool's stderr a failure message quotes (its end, where the cause is).
pub(super) const STDERR_TAIL: usize = 2048;

/// How long to wait for the rest of stderr once the process is gone.
const STDERR_GRACE: Duration = Duration::from_millis(300);

/// One process to drive.
pub(super) struct Job<'a> {
    /// Who the process is, for messages: "tool" or "tool unit X".
    pub label: &'a str,
    /// The request JSON written to stdin.
    pub input: Vec<u8>,
    pub limits: &'a Limits,
    /// brokerd's own deadline from the spawn (the systemd runner adds a start-up grace to
    /// the time limit, since systemd's RuntimeMaxSec= is the first to fire there).
    pub deadline: Duration,
    /// Called after brokerd killed the process early (deadline, output cap): the systemd
    /// runner stops the unit, which killing its `systemd-run` client does not do.
    pub abort: &'a dyn Fn(),
    /// Describes an exit status that is not a success (given the label and the stderr).
    pub explain_exit: fn(&str, ExitStatus, &str) -> Explained,
    /// Reads the tool's stdout: [`tool_output`] for boxmaker's own tools, the MCP modes'
    /// readers for an MCP session (`super::mcp`).
    pub decode: &'a dyn Fn(&[u8]) -> Result<ToolOutput, String>,
    /// Whether the process answers a hands stage (`StageOutput`) rather than a tool call.
    pub stage: bool,
}

/// The plain tool's answer, parsed strictly.
pub(super) fn tool_output(stdout: &[u8]) -> Result<ToolOutput, String> {
    serde_json::from_slice::<ToolOutput>(stdout).map_err(|e| e.to_string())
}

/// Why a process ended badly: the message's head, the typed failure when known, and the
/// stderr to quote (the tool's own, without a runner's lines).
pub(super) struct Explained {
    pub what: String,
    pub failure: Option<ToolFailure>,
    pub stderr: String,
}

/// The stdout cap: the content limit with room for JSON escaping (at worst six bytes per
/// content byte, `\u001f`) and the envelope, so a tool that respected `max_bytes` is never
/// refused, while a runaway tool cannot make brokerd buffer without bound.
pub(super) fn stdout_cap(max_result_bytes: u64) -> usize {
    let cap = max_result_bytes.saturating_mul(6).saturating_add(4096);
    usize::try_from(cap).unwrap_or(usize::MAX)
}

enum Msg {
    Stdout(Result<Vec<u8>, std::io::Error>),
    StdoutOverCap,
    Stderr(Vec<u8>),
}

/// Starts `command` with piped stdio and drives it to an outcome.
pub(super) fn run(mut command: Command, mut job: Job<'_>) -> RunOutcome {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so that a kill reaches anything it started.
        .process_group(0);
    let started = Instant::now();
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return RunOutcome::failed(format!("could not start the {}: {e}", job.label)),
    };
    // `tx` stays alive here, so `recv_timeout` waits instead of reporting a disconnect.
    let (tx, rx) = mpsc::channel();
    spawn_io(
        &mut child,
        std::mem::take(&mut job.input),
        stdout_cap(job.limits.max_result_bytes),
        &tx,
    );
    let job = &job;

    let deadline = started + job.deadline;
    let mut stdout = None;
    let mut stderr = None;
    let mut status = None;
    loop {
        let now = Instant::now();
        let wait = if stdout.is_some() {
            // Output complete; the exit follows at once, poll for it briefly.
            Duration::from_millis(1)
        } else {
            Duration::from_millis(10)
        };
        match rx.recv_timeout(wait.min(deadline.saturating_duration_since(now))) {
            Ok(Msg::Stdout(Ok(bytes))) => stdout = Some(bytes),
            Ok(Msg::Stdout(Err(e))) => {
                kill(&mut child, job);
                return RunOutcome::failed(format!("reading the {}'s output: {e}", job.label));
            }
            Ok(Msg::StdoutOverCap) => {
                kill(&mut child, job);
                return RunOutcome::failed(format!(
                    "output over the limit: the {} wrote more than {} bytes",
                    job.label,
                    stdout_cap(job.limits.max_result_bytes)
                ));
            }
            Ok(Msg::Stderr(bytes)) => stderr = Some(bytes),
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {}
        }
        if status.is_none() {
            match child.try_wait() {
                Ok(s) => status = s,
                Err(e) => {
                    kill(&mut child, job);
                    return RunOutcome::failed(format!("waiting for the {}: {e}", job.label));
                }
            }
        }
        if let (Some(status), Some(stdout)) = (status, stdout.as_ref()) {
            return finish(job, status, stdout, stderr, &rx, started.elapsed());
        }
        if Instant::now() >= deadline {
            kill(&mut child, job);
            return timed_out(job.limits);
        }
    }
}

/// The time limit ran out.
fn timed_out(limits: &Limits) -> RunOutcome {
    RunOutcome::Failed {
        message: format!("timed out after {}", seconds(limits.time_limit)),
        failure: Some(ToolFailure::TimeLimit),
    }
}

/// Feeds stdin and drains stdout and stderr, each in its own thread.
fn spawn_io(child: &mut Child, input: Vec<u8>, cap: usize, tx: &Sender<Msg>) {
    if let Some(mut stdin) = child.stdin.take() {
        // A tool that exits without reading gets EPIPE here (Rust ignores SIGPIPE); its
        // outcome is decided by what it printed and its exit status, not by this write.
        thread::spawn(move || {
            let _ = stdin.write_all(&input);
            // Dropping `stdin` closes it: the tool reads to end of file.
        });
    }
    if let Some(mut stdout) = child.stdout.take() {
        let tx = tx.clone();
        thread::spawn(move || {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 16 * 1024];
            let msg = loop {
                match stdout.read(&mut chunk) {
                    Ok(0) => break Msg::Stdout(Ok(buf)),
                    Ok(n) => {
                        buf.extend_from_slice(&chunk[..n]);
                        if buf.len() > cap {
                            // Stop reading: the tool is killed, whatever it wrote is dropped.
                            break Msg::StdoutOverCap;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => break Msg::Stdout(Err(e)),
                }
            };
            let _ = tx.send(msg);
        });
    }
    if let Some(mut stderr) = child.stderr.take() {
        let tx = tx.clone();
        thread::spawn(move || {
            // Keep only the end: enough for a message, bounded whatever the tool writes.
            let mut tail = Vec::new();
            let mut chunk = [0u8; 4096];
            loop {
                match stderr.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => {
                        tail.extend_from_slice(&chunk[..n]);
                        if tail.len() > 2 * STDERR_TAIL {
                            tail.drain(..tail.len() - STDERR_TAIL);
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = tx.send(Msg::Stderr(tail));
        });
    }
}

/// Kills the process group and reaps the leader, then runs the job's abort hook.
fn kill(child: &mut Child, job: &Job<'_>) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // The leader is not reaped yet, so its pid (the group id) cannot have been reused.
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let _ = child.kill();
    let _ = child.wait();
    (job.abort)();
}

/// The process has exited and its stdout is complete.
fn finish(
    job: &Job<'_>,
    status: ExitStatus,
    stdout: &[u8],
    stderr: Option<Vec<u8>>,
    rx: &Receiver<Msg>,
    elapsed: Duration,
) -> RunOutcome {
    if job.stage {
        return finish_stage(job, status, stdout, stderr, rx, elapsed);
    }
    let parsed = (job.decode)(stdout);
    if status.success() {
        return match parsed {
            Ok(output) => bounded(output, job.limits.max_result_bytes),
            Err(e) => {
                let stderr = collect_stderr(stderr, rx);
                RunOutcome::failed(quote(
                    format!("the {} printed no valid result ({e})", job.label),
                    &stderr,
                ))
            }
        };
    }
    // A tool may report its own failure and exit non-zero; that message is the best one.
    // A success claim with a failing exit status is not believed.
    if let Ok(output @ ToolOutput::Failed { .. }) = parsed {
        return bounded(output, job.limits.max_result_bytes);
    }
    let stderr = collect_stderr(stderr, rx);
    let explained = (job.explain_exit)(job.label, status, &stderr);
    match explained.failure {
        Some(ToolFailure::TimeLimit) => timed_out(job.limits),
        // Only the systemd runner gets here without a failure: RuntimeMaxSec= stopped the
        // unit before brokerd's own (later) deadline, and systemd-run said nothing of it.
        None if elapsed >= job.limits.time_limit => timed_out(job.limits),
        failure => RunOutcome::Failed {
            message: quote(explained.what, &explained.stderr),
            failure,
        },
    }
}

/// A hands unit's end: its answer as it gave it, unless systemd says the unit ran out of
/// memory or time, which wins over anything the executor reported (docs/decisions.md H11).
fn finish_stage(
    job: &Job<'_>,
    status: ExitStatus,
    stdout: &[u8],
    stderr: Option<Vec<u8>>,
    rx: &Receiver<Msg>,
    elapsed: Duration,
) -> RunOutcome {
    let parsed = serde_json::from_slice::<StageOutput>(stdout);
    if status.success() {
        return match parsed {
            Ok(output) => RunOutcome::Staged(output),
            Err(e) => {
                let stderr = collect_stderr(stderr, rx);
                RunOutcome::failed(quote(
                    format!("the {} printed no valid answer ({e})", job.label),
                    &stderr,
                ))
            }
        };
    }
    let stderr = collect_stderr(stderr, rx);
    let explained = (job.explain_exit)(job.label, status, &stderr);
    match (explained.failure, parsed) {
        (Some(ToolFailure::TimeLimit), _) => timed_out(job.limits),
        (Some(ToolFailure::OutOfMemory), _) => RunOutcome::Failed {
            message: quote(explained.what, &explained.stderr),
            failure: Some(ToolFailure::OutOfMemory),
        },
        (_, Ok(output)) => RunOutcome::Staged(output),
        (None, Err(_)) if elapsed >= job.limits.time_limit => timed_out(job.limits),
        (failure, Err(_)) => RunOutcome::Failed {
            message: quote(explained.what, &explained.stderr),
            failure,
        },
    }
}

/// The plain description of an exit status, for the direct runner.
pub(super) fn explain_tool_exit(label: &str, status: ExitStatus, stderr: &str) -> Explained {
    let (what, failure) = match (status.code(), status.signal()) {
        (Some(code), _) => (
            format!("the {label} exited with status {code}"),
            Some(ToolFailure::Exited { status: code }),
        ),
        (None, Some(signal)) => {
            let name = nix::sys::signal::Signal::try_from(signal)
                .map_or_else(|_| signal.to_string(), |s| s.as_str().to_owned());
            (
                format!("the {label} was killed by signal {name}"),
                Some(ToolFailure::Signal { signal: Some(name) }),
            )
        }
        (None, None) => (format!("the {label} ended with {status}"), None),
    };
    Explained {
        what,
        failure,
        stderr: stderr.to_owned(),
    }
}

/// The tool's answer, cut to the limit whatever the tool claimed.
fn bounded(output: ToolOutput, max: u64) -> RunOutcome {
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    match output {
        ToolOutput::Ok { content, truncated } => {
            let (content, cut) = cap_str(content, max);
            RunOutcome::Ok {
                content,
                truncated: truncated || cut,
            }
        }
        ToolOutput::Failed { message } => RunOutcome::failed(cap_str(message, max).0),
    }
}

/// The tool's stderr tail: what its reader sent, or what arrives within the grace.
fn collect_stderr(stderr: Option<Vec<u8>>, rx: &Receiver<Msg>) -> String {
    let stderr = stderr.or_else(|| {
        let until = Instant::now() + STDERR_GRACE;
        loop {
            match rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
                Ok(Msg::Stderr(bytes)) => break Some(bytes),
                Ok(_) => {}
                Err(_) => break None,
            }
        }
    });
    String::from_utf8_lossy(stderr.as_deref().unwrap_or_default()).into_owned()
}

/// `what`, followed by the tail of the tool's stderr when there is any.
fn quote(what: String, stderr: &str) -> String {
    let text = stderr.trim();
    if text.is_empty() {
        return format!("{what} (no stderr)");
    }
    let mut start = text.len().saturating_sub(STDERR_TAIL);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let ellipsis = if start > 0 { "…" } else { "" };
    format!("{what}; stderr: {ellipsis}{}", &text[start..])
}

/// A duration for a person: `30 s`, `1.5 s`.
fn seconds(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{} s", d.as_secs_f64())
    }
}
