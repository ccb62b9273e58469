//! The stack's processes: every role (and the fake llama-server) in one process group of
//! their own, so the terminal's Ctrl-C and hang-up reach bxctl alone and bxctl decides; each
//! role told to stop with bxctl (`daemon::parent`), the fake through its standard input;
//! stopped together within a bounded time.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use std::sync::Mutex;

use daemon::lock;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use supervise::NotReady;

use crate::dev::lock::StateLock;
use crate::error::DevError;

/// How long the roles get to stop on SIGTERM (brokerd denies what waits, loopd and
/// inferproxy end their streams) before the group is killed.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// How long a role may take to say READY=1.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// The children, and the process group they share (the first child's PID). Shared with
/// the signal thread, which may stop it at any moment: the lock is held only briefly, never
/// while a role starts. Once stopped it stays so: a role asked to start after is not, and
/// one that was starting (the first is in a group no one has recorded yet) is killed as it
/// comes up.
#[derive(Debug, Default)]
pub struct Stack {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    children: Vec<(&'static str, Child)>,
    group: Option<Pid>,
    /// [`Stack::stop`] ran: nothing starts any more.
    stopped: bool,
    /// The fake llama-server's standard input: it exits when this closes.
    fake_stdin: Option<ChildStdin>,
}

impl Stack {
    /// Puts `cmd` in the stack's process group and names bxctl as the parent to stop with.
    fn prepare(&self, name: &'static str, cmd: &mut Command) -> Result<(), DevError> {
        let inner = lock(&self.inner);
        if inner.stopped {
            return Err(DevError::Stopping(name));
        }
        cmd.process_group(inner.group.map_or(0, Pid::as_raw))
            .env(daemon::parent::PARENT_ENV, std::process::id().to_string());
        Ok(())
    }

    fn add(
        &self,
        name: &'static str,
        mut child: Child,
        state: &mut StateLock,
    ) -> Result<(), DevError> {
        let pid = child.id();
        let mut inner = lock(&self.inner);
        if inner.stopped {
            drop(inner);
            // The first role leads a group of its own: what it started goes with it.
            if let Ok(leader) = i32::try_from(pid) {
                let _ = killpg(Pid::from_raw(leader), Signal::SIGKILL);
            }
            let _ = child.kill();
            let _ = child.wait();
            return Err(DevError::Stopping(name));
        }
        if inner.group.is_none() {
            inner.group = i32::try_from(pid).ok().map(Pid::from_raw);
        }
        inner.children.push((name, child));
        drop(inner);
        state.record(name, pid)
    }

    /// Stops every child: SIGTERM to the group, then SIGKILL to what is left after
    /// [`STOP_GRACE`] (tool runs a role started are in the group too). Safe to call twice.
    pub fn stop(&self) {
        let mut inner = lock(&self.inner);
        inner.stopped = true;
        let Some(group) = inner.group.take() else {
            return;
        };
        inner.fake_stdin = None;
        let _ = killpg(group, Signal::SIGTERM);
        let deadline = Instant::now() + STOP_GRACE;
        for (_, child) in &mut inner.children {
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = killpg(group, Signal::SIGKILL);
        for (_, child) in &mut inner.children {
            let _ = child.wait();
        }
    }

    /// Starts role `name` with a NOTIFY_SOCKET and waits for READY=1; its stderr is
    /// appended to its log.
    pub fn start(
        &self,
        name: &'static str,
        mut cmd: Command,
        state: &Path,
        held: &mut StateLock,
    ) -> Result<(), DevError> {
        let notify = state.join(format!("run/{name}.notify"));
        let log = state.join(format!("logs/{name}.log"));
        self.prepare(name, &mut cmd)?;
        let (from, log_file) = open_log(&log)?;
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file);
        match supervise::spawn_ready(&mut cmd, &notify, READY_WITHIN) {
            Ok((child, _)) => self.add(name, child, held),
            Err(NotReady::Exited(status)) => Err(DevError::Exited {
                name,
                status,
                log: read_from(&log, from),
            }),
            Err(NotReady::Timeout(_)) => Err(DevError::Silent { name, log }),
            Err(NotReady::Spawn(source)) => Err(DevError::Spawn {
                name,
                error: source,
            }),
            Err(source) => Err(DevError::NotReady {
                name,
                error: source,
                log,
            }),
        }
    }

    /// Starts `cmd`, a program that knows nothing of READY=1 (llama-server), as role
    /// `name` of the stack, its stdout and stderr appended to `log`; returns where this
    /// run's part of the log begins.
    pub fn start_plain(
        &self,
        name: &'static str,
        mut cmd: Command,
        log: &Path,
        held: &mut StateLock,
    ) -> Result<u64, DevError> {
        self.prepare(name, &mut cmd)?;
        let (from, file) = open_log(log)?;
        let err = file.try_clone().map_err(|source| DevError::Write {
            path: log.to_owned(),
            error: source,
        })?;
        let child = cmd
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err)
            .spawn()
            .map_err(|source| DevError::Spawn {
                name,
                error: source,
            })?;
        self.add(name, child, held)?;
        Ok(from)
    }

    /// Starts `cmd`, a peer that prints `listening on ADDR` first on its stdout (the fake
    /// Mattermost), as role `name`, its stderr appended to `log`; returns ADDR. A peer that
    /// prints anything else exited or was stopped, and its log says why.
    pub fn start_listening(
        &self,
        name: &'static str,
        mut cmd: Command,
        log: &Path,
        held: &mut StateLock,
    ) -> Result<String, DevError> {
        self.prepare(name, &mut cmd)?;
        let (from, file) = open_log(log)?;
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(file)
            .spawn()
            .map_err(|source| DevError::Spawn {
                name,
                error: source,
            })?;
        let out = child.stdout.take();
        let mut first = String::new();
        if let Some(out) = out {
            BufReader::new(out)
                .read_line(&mut first)
                .map_err(DevError::FakeRead)?;
        }
        let Some(addr) = first
            .trim()
            .strip_prefix("listening on ")
            .map(str::to_owned)
        else {
            let status = wait_exit(&mut child, FAKE_EXIT_WITHIN);
            return Err(match status {
                Some(status) => DevError::Exited {
                    name,
                    status,
                    log: read_from(log, from),
                },
                None => DevError::Silent {
                    name,
                    log: log.to_owned(),
                },
            });
        };
        self.add(name, child, held)?;
        Ok(addr)
    }

    /// Stops role `name` alone, as [`Stack::stop`] stops them all (SIGTERM, then SIGKILL
    /// after [`STOP_GRACE`]), and forgets it: the hostile self-test restarts loopd.
    pub fn stop_one(&self, name: &str) {
        let mut inner = lock(&self.inner);
        let Some(i) = inner.children.iter().position(|(n, _)| *n == name) else {
            return;
        };
        let (_, mut child) = inner.children.remove(i);
        drop(inner);
        if let Ok(pid) = i32::try_from(child.id()) {
            let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
        if wait_exit(&mut child, STOP_GRACE).is_none() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// How role `name` exited, if it has.
    pub fn exited(&self, name: &str) -> Option<std::process::ExitStatus> {
        let mut inner = lock(&self.inner);
        let (_, child) = inner.children.iter_mut().find(|(n, _)| *n == name)?;
        child.try_wait().ok().flatten()
    }

    /// Starts the fake llama-server playing `script` on a free loopback port; returns its
    /// URL.
    pub fn start_fake(
        &self,
        fake: &Path,
        script: &Path,
        state: &Path,
        held: &mut StateLock,
    ) -> Result<String, DevError> {
        let mut cmd = Command::new(fake);
        cmd.args(["--listen", "127.0.0.1:0", "--exit-on-eof", "--script"])
            .arg(script);
        self.prepare("fake-llama-server", &mut cmd)?;
        let log_path = state.join("logs/fake-llama-server.log");
        let (from, log) = open_log(&log_path)?;
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .map_err(|source| DevError::Spawn {
                name: "fake-llama-server",
                error: source,
            })?;
        let stdin = child.stdin.take();
        let out = child.stdout.take();
        let mut first = String::new();
        if let Some(out) = out {
            BufReader::new(out)
                .read_line(&mut first)
                .map_err(DevError::FakeRead)?;
        }
        let Some(addr) = first.trim().strip_prefix("listening on ") else {
            // It said nothing on stdout: it refused the script (or its address), and said
            // why on stderr, in its log.
            let status = wait_exit(&mut child, FAKE_EXIT_WITHIN);
            return Err(DevError::FakeRefused {
                fake: fake.to_owned(),
                script: script.to_owned(),
                status,
                log: read_from(&log_path, from),
            });
        };
        let addr = addr.to_owned();
        lock(&self.inner).fake_stdin = stdin;
        self.add("fake-llama-server", child, held)?;
        Ok(format!("http://{addr}"))
    }
}

/// How long a fake-llama-server that printed no address is given to exit and say why.
const FAKE_EXIT_WITHIN: Duration = Duration::from_secs(5);

/// Waits up to `within` for `child` to exit; kills it past that. Its status, when it exited
/// by itself.
pub fn wait_exit(child: &mut Child, within: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// A child's log, opened to append: a line marks where this run begins. Returns the
/// offset of this run's part and the file.
fn open_log(path: &Path) -> Result<(u64, std::fs::File), DevError> {
    let err = |source| DevError::Write {
        path: path.to_owned(),
        error: source,
    };
    let mut file = std::fs::File::options()
        .create(true)
        .append(true)
        .open(path)
        .map_err(err)?;
    writeln!(
        file,
        "--- bxctl dev (PID {}) starts this at {} ---",
        std::process::id(),
        proto::Timestamp::now()
    )
    .map_err(err)?;
    let from = file.metadata().map_err(err)?.len();
    Ok((from, file))
}

/// What a log holds from `from` on (this run's part).
pub fn read_from(path: &Path, from: u64) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let from = usize::try_from(from).unwrap_or(0).min(text.len());
    String::from_utf8_lossy(&text[from..]).into_owned()
}
