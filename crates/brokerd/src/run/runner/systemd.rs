//! The systemd runner: each call is its own transient service unit (BRIEF decision 1),
//! started with `systemd-run --pipe --wait`, so the tool is forked by PID 1 with the unit's
//! confinement and never by brokerd with brokerd's rights.
//!
//! [`SystemdRunner::properties`] is the one property list; [`SystemdRunner::command`] passes
//! it as `-p` options and [`SystemdRunner::unit_file`] prints it as a unit file for
//! `brokerd --print-tool-unit` and `systemd-analyze security --offline`, so what is scored
//! is what runs.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::child::{self, Job};
use super::spec::{CheckError, RunOutcome, RunSpec, UNIT_PREFIX, check_common};
use super::stage::sent;
use super::unit_props::{self, Base};
use super::{check_granted_path, check_unit_path};
use crate::run::hands::{StageUnit, TARGET, WORK};
use crate::run::programs::PRIVATE_PIDS;

/// How much longer than the time limit brokerd waits for `systemd-run` itself: the unit's
/// RuntimeMaxSec= counts from its start, which follows a D-Bus round trip and the namespace
/// set-up. systemd is the limit that normally fires; brokerd's is the backstop.
const START_GRACE: Duration = Duration::from_secs(5);

/// How long a best-effort `systemctl kill`/`stop` may take before brokerd stops waiting.
const STOP_WAIT: Duration = Duration::from_secs(5);

/// Runs each tool call in a transient, confined service unit.
#[derive(Debug, Clone)]
pub struct SystemdRunner {
    /// The `boxmaker-tool` binary, an absolute path that exists inside the root through
    /// `binds` (on NixOS it is in /nix/store); if no bind covers it, it is bound itself.
    pub tool: PathBuf,
    /// An empty, root-owned directory used as `RootDirectory=`. systemd creates the mount
    /// points for the binds in it, so it must be writable by PID 1 (not /var/empty).
    pub root: PathBuf,
    /// What every tool needs, bound read-only: `SRC` or `SRC:DST`, optionally prefixed with
    /// `-` (skip if missing). On NixOS `/nix/store`; on Debian `/usr`, `-/lib`, `-/lib64`.
    pub binds: Vec<String>,
    /// `systemd-run`; `systemctl` is looked up next to it.
    pub systemd_run: PathBuf,
    /// Who the write units run as (`broker.hands_user`); `None`: no write unit may start.
    pub hands_user: Option<String>,
    /// The target's systemd major version (`broker.systemd_version`): `PrivatePIDs=` from 257.
    pub systemd_version: u32,
}

impl SystemdRunner {
    pub fn new(tool: impl Into<PathBuf>, root: impl Into<PathBuf>, binds: Vec<String>) -> Self {
        Self {
            tool: tool.into(),
            root: root.into(),
            binds,
            systemd_run: PathBuf::from("systemd-run"),
            hands_user: None,
            systemd_version: PRIVATE_PIDS,
        }
    }

    /// Everything [`Self::execute`] refuses before starting a unit, as a message: a unit
    /// name outside `boxmaker-tool-[a-z0-9-]+`, a path systemd would not read literally, a
    /// granted path in an API file system, a limit of zero, a bad credential name.
    pub fn check(&self, spec: &RunSpec) -> Result<(), CheckError> {
        check_common(spec)?;
        let suffix = spec.unit.strip_prefix(UNIT_PREFIX).unwrap_or_default();
        if suffix.is_empty()
            || spec.unit.len() > 200
            || !suffix
                .bytes()
                .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-'))
        {
            return Err(CheckError::UnitName(spec.unit.clone()));
        }
        unit_path(path_str(&self.tool)?)?;
        unit_path(path_str(&self.root)?)?;
        for bind in self
            .binds
            .iter()
            .chain(spec.mcp.iter().flat_map(|m| &m.closure))
        {
            check_bind(bind)?;
        }
        for bind in spec.read_binds().chain(spec.write_bind.iter()) {
            for path in [&bind.source, &bind.target] {
                check_granted_path(path).map_err(|e| CheckError::Path(e.to_string()))?;
            }
        }
        if let Some(secret) = &spec.secret {
            unit_path(path_str(&secret.source)?)?;
        }
        if let Some(stage) = &spec.stage {
            self.check_stage(&stage.unit)?;
        }
        if let Some(bad) = spec
            .addresses
            .iter()
            .find(|a| a.is_unspecified() || a.is_multicast())
        {
            // 0.0.0.0 is what DNS sinkholes answer and means this host to connect().
            return Err(CheckError::Address(*bad));
        }
        Ok(())
    }

    /// A hands unit's places are granted paths (never an API file system), its program and
    /// closure paths systemd reads literally, and a unit that writes the owner's files has
    /// the hands user to run as.
    fn check_stage(&self, unit: &StageUnit) -> Result<(), CheckError> {
        let granted = |p: &str| check_granted_path(p).map_err(|e| CheckError::Path(e.to_string()));
        match unit {
            StageUnit::Write { root, .. } => granted(root)?,
            StageUnit::Run {
                program,
                closure,
                paths,
                workdir,
            } => {
                unit_path(path_str(program)?)?;
                for p in closure.iter().flatten() {
                    unit_path(p)?;
                }
                for p in paths.iter().chain(workdir.iter()) {
                    granted(p)?;
                }
            }
        }
        if unit.as_hands_user() && self.hands_user.is_none() {
            return Err(CheckError::NoHandsUser);
        }
        Ok(())
    }

    /// The unit's properties, in order (`unit_props`, where each says why).
    pub fn properties(&self, spec: &RunSpec) -> Vec<(String, String)> {
        unit_props::properties(
            &Base {
                tool: &self.tool,
                root: &self.root,
                binds: &self.binds,
                hands_user: self.hands_user.as_deref(),
                systemd_version: self.systemd_version,
            },
            spec,
        )
    }

    /// `systemd-run --pipe --wait --collect --no-ask-password --service-type=exec
    /// --unit=NAME -p K=V ... -- TOOL`.
    pub fn command(&self, spec: &RunSpec) -> Command {
        let mut command = Command::new(&self.systemd_run);
        command.args([
            // The tool's stdin and stdout are brokerd's pipes.
            "--pipe",
            // Return when the unit is done, with the tool's exit status.
            "--wait",
            // Unload the unit even when it failed, so its name can never block a later run.
            "--collect",
            // No --quiet: systemd-run's summary after the unit stopped ("Finished with
            // result: oom-kill") is how brokerd learns why (unit_result.rs).
            // brokerd is a daemon: polkit decides from its rules, never by asking.
            "--no-ask-password",
            // Started means exec'd: a missing tool binary fails the start, not later.
            "--service-type=exec",
        ]);
        command.arg(format!("--unit={}", spec.unit));
        for (key, value) in self.properties(spec) {
            command.arg("-p").arg(format!("{key}={value}"));
        }
        command.arg("--").arg(&self.tool);
        if let Some(m) = &spec.mcp {
            command.arg(m.input.mode());
        }
        // Only PATH of brokerd's environment (to find a bare `systemd-run`); the unit's
        // environment is systemd's, this only keeps brokerd's own variables to itself.
        command.env_clear();
        if let Some(path) = std::env::var_os("PATH") {
            command.env("PATH", path);
        }
        command
    }

    /// The same unit as a unit file, for `brokerd --print-tool-unit` and
    /// `systemd-analyze security --offline` (save it as `<unit>.service`).
    pub fn unit_file(&self, spec: &RunSpec) -> String {
        let mut out = format!(
            "# The transient unit brokerd starts for one tool call, as a file.\n\
             # brokerd passes the same settings to systemd-run; --collect is CollectMode=.\n\
             [Unit]\n\
             Description=boxmaker tool run {}\n\
             CollectMode=inactive-or-failed\n\
             \n\
             [Service]\n\
             Type=exec\n\
             ExecStart={}{}\n",
            spec.unit,
            self.tool.display(),
            spec.mcp
                .as_ref()
                .map_or(String::new(), |m| format!(" {}", m.input.mode()))
        );
        for (key, value) in self.properties(spec) {
            out.push_str(&key);
            out.push('=');
            out.push_str(&value);
            out.push('\n');
        }
        out
    }

    pub(super) fn execute(
        &self,
        spec: &RunSpec,
        decode: &dyn Fn(&[u8]) -> Result<proto::toolrun::ToolOutput, String>,
    ) -> RunOutcome {
        if let Err(e) = self.check(spec) {
            return RunOutcome::failed(format!("tool run refused: {e}"));
        }
        // A hands unit finds the granted root and its working directory at fixed places;
        // an MCP session's mode is in the command line (`Self::command`).
        let encoded = match &spec.stage {
            Some(stage) => serde_json::to_vec(&sent(stage, TARGET, WORK)),
            None => spec.input().map(|(_, input)| input),
        };
        let input = match encoded {
            Ok(input) => input,
            Err(e) => return RunOutcome::failed(format!("encoding the tool request: {e}")),
        };
        let label = format!("tool unit {}", spec.unit);
        let systemctl = self.systemctl();
        let service = format!("{}.service", spec.unit);
        child::run(
            self.command(spec),
            Job {
                label: &label,
                input,
                limits: &spec.limits,
                deadline: spec.limits.time_limit.saturating_add(START_GRACE),
                // Killing systemd-run leaves the unit running (until RuntimeMaxSec=): stop
                // it. Kill first, since a stop would wait for a polite exit.
                abort: &|| {
                    best_effort(&systemctl, &["kill", "--signal=SIGKILL", &service]);
                    best_effort(&systemctl, &["stop", "--no-block", &service]);
                },
                explain_exit: super::explain::explain_systemd_run_exit,
                decode,
                stage: spec.stage.is_some(),
            },
        )
    }

    /// `systemctl` from the same directory as `systemd-run`, or from PATH.
    fn systemctl(&self) -> PathBuf {
        match self.systemd_run.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.join("systemctl"),
            _ => PathBuf::from("systemctl"),
        }
    }
}

/// A bind entry: `[-]SRC[:DST]`, both parts unit paths.
fn check_bind(bind: &str) -> Result<(), CheckError> {
    let entry = bind.strip_prefix('-').unwrap_or(bind);
    match entry.split_once(':') {
        Some((src, dst)) => check_unit_path(src).and_then(|()| check_unit_path(dst)),
        None => check_unit_path(entry),
    }
    .map_err(|e| CheckError::Bind {
        bind: bind.to_owned(),
        reason: e.to_string(),
    })
}

/// A path systemd reads literally in a unit file.
fn unit_path(path: &str) -> Result<(), CheckError> {
    check_unit_path(path).map_err(|e| CheckError::Path(e.to_string()))
}

fn path_str(path: &Path) -> Result<&str, CheckError> {
    path.to_str()
        .ok_or_else(|| CheckError::NotUtf8(path.to_path_buf()))
}

/// Runs a `systemctl` clean-up command, waiting at most [`STOP_WAIT`] for it.
fn best_effort(program: &Path, args: &[&str]) {
    let started = Instant::now();
    let Ok(mut child) = Command::new(program)
        .arg("--no-ask-password")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    else {
        return;
    };
    while started.elapsed() < STOP_WAIT {
        match child.try_wait() {
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Ok(Some(_)) | Err(_) => return,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}
