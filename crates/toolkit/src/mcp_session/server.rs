//! The MCP server as the tool's child: started in a process group of its own with piped
//! stdin and stdout (stderr goes where the tool's goes: brokerd keeps its tail), killed by a
//! watchdog when the session's deadline and a grace have passed, and stopped at the end:
//! stdin closed, then SIGTERM to the group, then SIGKILL, each after a bounded wait.

use std::io;
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use proto::mcp::{McpEnv, McpServer};

/// How long the server may take to exit after its stdin is closed, and again after SIGTERM.
pub const STOP_WAIT: Duration = Duration::from_secs(2);
/// How long past the session's deadline the watchdog waits before it kills the group.
pub const WATCHDOG_GRACE: Duration = Duration::from_millis(500);

/// Why the server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("the server's command is empty")]
    NoCommand,
    /// An environment variable (or a remote server's header) names a credential that
    /// cannot be read.
    #[error("{name}: {detail}")]
    Credential { name: String, detail: String },
    #[error("cannot start {program:?}: {error}")]
    Spawn { program: String, error: io::Error },
}

/// A running server and its watchdog.
#[derive(Debug)]
pub struct Server {
    child: Child,
    pgid: Pid,
    stop_watchdog: Option<Sender<()>>,
    watchdog: Option<JoinHandle<()>>,
}

impl Server {
    /// Starts `server` with `PATH` and its own environment only; the watchdog kills its
    /// process group at `deadline` plus [`WATCHDOG_GRACE`].
    pub fn start(
        server: &McpServer,
        credentials: Option<&Path>,
        deadline: Instant,
    ) -> Result<(Self, ChildStdin, ChildStdout), StartError> {
        let (program, args) = server.command.split_first().ok_or(StartError::NoCommand)?;
        let mut command = Command::new(program);
        command.args(args).env_clear();
        if let Some(path) = std::env::var_os("PATH") {
            command.env("PATH", path);
        }
        for var in &server.env {
            match var {
                McpEnv::Value { name, value } => command.env(name, value),
                McpEnv::Credential { name, credential } => {
                    command.env(name, read_credential(name, credential, credentials)?)
                }
            };
        }
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command.spawn().map_err(|source| StartError::Spawn {
            program: program.clone(),
            error: source,
        })?;
        let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
        let pgid = Pid::from_raw(pid);
        let (stdin, stdout) = match (child.stdin.take(), child.stdout.take()) {
            (Some(i), Some(o)) => (i, o),
            // Both were asked for as pipes; std always gives them.
            _ => {
                let _ = killpg(pgid, Signal::SIGKILL);
                let _ = child.wait();
                return Err(StartError::Spawn {
                    program: program.clone(),
                    error: io::Error::other("no pipes to the child"),
                });
            }
        };
        let (tx, rx) = mpsc::channel::<()>();
        let watchdog = std::thread::spawn(move || {
            let wait = (deadline + WATCHDOG_GRACE).saturating_duration_since(Instant::now());
            if let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(wait) {
                let _ = killpg(pgid, Signal::SIGKILL);
            }
        });
        Ok((
            Self {
                child,
                pgid,
                stop_watchdog: Some(tx),
                watchdog: Some(watchdog),
            },
            stdin,
            stdout,
        ))
    }

    /// Stops the server: its stdin must already be closed (the caller dropped it); waits
    /// [`STOP_WAIT`], then SIGTERM to the group, waits again, then SIGKILL. The group is
    /// killed at the end in any case, so nothing the server started outlives the call.
    pub fn stop(mut self) {
        let exited = self.wait_for(STOP_WAIT) || {
            let _ = killpg(self.pgid, Signal::SIGTERM);
            self.wait_for(STOP_WAIT)
        };
        let _ = killpg(self.pgid, Signal::SIGKILL);
        if !exited {
            let _ = self.child.wait();
        }
        if let Some(tx) = self.stop_watchdog.take() {
            let _ = tx.send(());
        }
        if let Some(handle) = self.watchdog.take() {
            let _ = handle.join();
        }
    }

    /// Whether the server exited within `wait` (polling its status).
    fn wait_for(&mut self, wait: Duration) -> bool {
        let end = Instant::now() + wait;
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => return true,
                Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(10)),
                Ok(None) => return false,
                Err(_) => return false,
            }
        }
    }
}

/// The most bytes of a credential passed in an environment variable or a header.
const MAX_CREDENTIAL: u64 = 64 * 1024;

pub(super) fn read_credential(
    name: &str,
    credential: &str,
    credentials: Option<&Path>,
) -> Result<String, StartError> {
    let fail = |detail: String| StartError::Credential {
        name: name.to_owned(),
        detail,
    };
    let plain = !credential.is_empty()
        && !credential.contains('/')
        && credential != "."
        && credential != "..";
    if !plain {
        return Err(fail(format!(
            "the credential name {credential:?} is not a plain file name"
        )));
    }
    let dir = credentials.ok_or_else(|| {
        fail(format!(
            "$CREDENTIALS_DIRECTORY is not set: the unit was started without the credential \
             {credential:?}"
        ))
    })?;
    let mut text = String::new();
    let file = std::fs::File::open(dir.join(credential))
        .map_err(|e| fail(format!("cannot read the credential {credential:?}: {e}")))?;
    io::Read::read_to_string(&mut io::Read::take(file, MAX_CREDENTIAL + 1), &mut text)
        .map_err(|e| fail(format!("cannot read the credential {credential:?}: {e}")))?;
    if text.len() as u64 > MAX_CREDENTIAL {
        return Err(fail(format!(
            "the credential {credential:?} is over {MAX_CREDENTIAL} bytes"
        )));
    }
    Ok(text.trim_end_matches(['\n', '\r']).to_owned())
}
