//! `run`'s executor (docs/decisions.md H11): the program with its argument vector (no
//! shell), optional standard input, in its working directory with a small fixed
//! environment, in a process group of its own; stdout and stderr read to their caps and
//! drained past them (so a chatty program is never blocked), and how it ended reported as
//! a typed [`RunEnd`]. The executor's own deadline kills the whole group; under systemd the
//! unit's limits stand behind it.

use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use proto::toolrun::cap_str;
use proto::tools::stage::{Captured, RunEnd, RunReport, RunStage, StageFailure, StageOutput};

use crate::stage_error::StageError;

/// What a stream's reader has so far: the kept bytes and how many were written in all.
#[derive(Default)]
struct Stream {
    kept: Vec<u8>,
    bytes: u64,
}

pub fn run(stage: &RunStage) -> Result<StageOutput, StageError> {
    let program = Path::new(&stage.program);
    let mut cmd = Command::new(program);
    cmd.args(&stage.args)
        .current_dir(&stage.workdir)
        .env_clear()
        // The program's own directory first, so a package's sibling programs are found.
        .env(
            "PATH",
            program
                .parent()
                .map_or_else(|| "/".into(), |p| p.display().to_string()),
        )
        .env("HOME", &stage.workdir)
        .env("TMPDIR", "/tmp")
        .env("LANG", "C.UTF-8")
        .stdin(if stage.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd.spawn().map_err(|e| {
        StageError::new(
            StageFailure::Spawn,
            format!("cannot start {}: {e}", stage.program),
        )
    })?;
    let group = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    let deadline = Instant::now() + Duration::from_millis(stage.timeout_ms);
    let max = usize::try_from(stage.max_output).unwrap_or(usize::MAX);
    let (done_tx, done_rx) = mpsc::channel();
    let mut streams = Vec::new();
    for pipe in [
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    ] {
        let stream = Arc::new(Mutex::new(Stream::default()));
        if let Some(pipe) = pipe {
            let (stream, done) = (Arc::clone(&stream), done_tx.clone());
            thread::spawn(move || {
                drain(pipe, &stream, max);
                let _ = done.send(());
            });
        }
        streams.push(stream);
    }
    if let (Some(mut pipe), Some(text)) = (child.stdin.take(), stage.stdin.clone()) {
        // A program that does not read its input must not block the run: written on the
        // side, and a broken pipe is the program's choice.
        thread::spawn(move || {
            let _ = pipe.write_all(text.as_bytes());
        });
    }
    let (exit_tx, exit_rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = exit_tx.send(child.wait());
    });
    let left = || deadline.saturating_duration_since(Instant::now());
    let end = match exit_rx.recv_timeout(left()) {
        Ok(Ok(status)) => ended(status),
        Ok(Err(e)) => {
            return Err(StageError::new(
                StageFailure::Io,
                format!("waiting for {}: {e}", stage.program),
            ));
        }
        Err(_) => {
            let _ = killpg(group, Signal::SIGKILL);
            let _ = exit_rx.recv();
            RunEnd::TimeLimit
        }
    };
    // What the program left running in its group would hold the pipes open.
    let _ = killpg(group, Signal::SIGKILL);
    for _ in 0..2 {
        if done_rx.recv_timeout(left()).is_err() {
            break;
        }
    }
    let [stdout, stderr] = [0, 1].map(|i| captured(&streams[i], max));
    Ok(StageOutput::Ran {
        report: RunReport {
            end,
            stdout,
            stderr,
        },
    })
}

fn ended(status: ExitStatus) -> RunEnd {
    match (status.code(), status.signal()) {
        (Some(status), _) => RunEnd::Exited { status },
        (None, Some(sig)) => RunEnd::Signal {
            signal: Signal::try_from(sig)
                .map_or_else(|_| format!("signal {sig}"), |s| s.as_str().to_owned()),
        },
        (None, None) => RunEnd::Exited { status: -1 },
    }
}

/// Reads `pipe` to its end, keeping the first `max` bytes and counting all.
fn drain(mut pipe: impl Read, stream: &Mutex<Stream>, max: usize) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match pipe.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let mut s = stream.lock().unwrap_or_else(|p| p.into_inner());
                let room = max.saturating_sub(s.kept.len()).min(n);
                s.kept.extend_from_slice(&buf[..room]);
                s.bytes += n as u64;
            }
        }
    }
}

/// A stream as the report gives it: lossy UTF-8 within `max` bytes, the cut marked.
fn captured(stream: &Mutex<Stream>, max: usize) -> Captured {
    let s = stream.lock().unwrap_or_else(|p| p.into_inner());
    let text = String::from_utf8_lossy(&s.kept).into_owned();
    // U+FFFD takes three bytes where an invalid byte took one.
    let (text, cut) = cap_str(text, max);
    Captured {
        text,
        bytes: s.bytes,
        truncated: cut || s.bytes > s.kept.len() as u64,
    }
}
