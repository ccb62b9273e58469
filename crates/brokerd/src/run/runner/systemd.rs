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

use grants::constraints::is_under;

use super::child::{self, Job};
use super::spec::{CheckError, RunOutcome, RunSpec, UNIT_PREFIX, check_common};
use super::{check_granted_path, check_unit_path};

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
}

impl SystemdRunner {
    pub fn new(tool: impl Into<PathBuf>, root: impl Into<PathBuf>, binds: Vec<String>) -> Self {
        Self {
            tool: tool.into(),
            root: root.into(),
            binds,
            systemd_run: PathBuf::from("systemd-run"),
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

    /// The empty read-only tmpfs over the top directory of each path bound for the call
    /// (see `properties`), as `TemporaryFileSystem=` entries.
    fn cover(&self, spec: &RunSpec) -> Vec<String> {
        let tool = self.tool.display().to_string();
        let mut tops: Vec<String> = Vec::new();
        for bind in spec.read_binds().chain(spec.write_bind.iter()) {
            let Some(top) = bind.target.split('/').find(|c| !c.is_empty()) else {
                continue;
            };
            let top = format!("/{top}");
            // A bind at a top directory itself leaves only that one name behind.
            if bind.target.trim_end_matches('/') == top {
                continue;
            }
            let ours = self
                .binds
                .iter()
                .chain(spec.mcp.iter().flat_map(|m| &m.closure))
                .map(|b| bind_destination(b))
                .chain(std::iter::once(tool.as_str()))
                .any(|d| is_under(d, &top));
            let special = ["/home", "/root", "/run", "/tmp", "/dev", "/proc", "/sys"];
            if !ours && !special.contains(&top.as_str()) && !tops.contains(&top) {
                tops.push(top);
            }
        }
        tops.into_iter().map(|t| format!("{t}:ro")).collect()
    }

    /// The unit's properties, in order; see the comment on each for why.
    pub fn properties(&self, spec: &RunSpec) -> Vec<(String, String)> {
        let mut p = Props::default();
        // Identity: a fresh user allocated for this run and released after it, so no file
        // a tool creates, and no process it leaves, belongs to anyone else (RemoveIPC too).
        p.set("DynamicUser", "yes");

        // File system: an empty root with only what the tool needs bound into it
        // read-only (BRIEF decision 1). Not TemporaryFileSystem=/ (systemd#18999).
        p.set("RootDirectory", self.root.display());
        // The unit's mounts never propagate back to the host.
        p.set("PrivateMounts", "yes");
        for bind in &self.binds {
            p.set("BindReadOnlyPaths", bind);
        }
        // An MCP server's own files outside the runner's binds (a virtualenv, node_modules),
        // read-only; `-`: one that is gone fails the server's start, not the unit's.
        for bind in spec.mcp.iter().flat_map(|m| &m.closure) {
            p.set(
                "BindReadOnlyPaths",
                format!("-{}", bind.trim_start_matches('-')),
            );
        }
        let tool = self.tool.display().to_string();
        if !self
            .binds
            .iter()
            .any(|b| is_under(&tool, bind_destination(b)))
        {
            p.set("BindReadOnlyPaths", &tool);
        }
        // Only the path the call covers, never the grant's whole roots: a sibling the call
        // does not name is not there to be read (brokerd labels the result by what is bound).
        // `-`: a path that is gone by now is absent for the tool (which then reports not
        // found) instead of failing the unit's start.
        for bind in spec.read_binds() {
            if bind.source == bind.target {
                p.set("BindReadOnlyPaths", format!("-{}", bind.target));
            } else {
                p.set(
                    "BindReadOnlyPaths",
                    format!("-{}:{}", bind.source, bind.target),
                );
            }
        }
        // A note write's one writable place: its own empty per-call directory, which brokerd
        // checks after the run; no note is bound at all, so no other can be touched.
        if let Some(bind) = &spec.write_bind {
            p.set("BindPaths", format!("{}:{}", bind.source, bind.target));
        }
        // Read-only everywhere (DynamicUser implies it; stated for the reader and scorer).
        p.set("ProtectSystem", "strict");
        // No home directory. But `yes` puts an inaccessible /home over granted paths under
        // it (measured), so a grant there gets `tmpfs`: an empty read-only /home, /root and
        // /run/user holding only the granted directories.
        let in_home = spec.bind.as_ref().is_some_and(|b| {
            ["/home", "/root"]
                .iter()
                .any(|home| is_under(&b.target, home))
        });
        p.set("ProtectHome", if in_home { "tmpfs" } else { "yes" });
        // Own /tmp and /var/tmp (DynamicUser implies it), made read-only below.
        p.set("PrivateTmp", "yes");
        // No writable directory at all: a compromised tool cannot drop a program to run
        // (the way around MemoryDenyWriteExecute) or leave data for another run. /dev/shm
        // in particular would be the host's, shared, bound in by PrivateDevices. (Measured
        // on systemd 252: NoExecPaths= and ReadOnlyPaths= name host paths and do nothing
        // inside RootDirectory=; TemporaryFileSystem= applies inside it.)
        // And the top directory of the call's bound path (`/srv` for `/srv/notes/todo.md`)
        // an empty read-only tmpfs of the unit's own: systemd makes the bind's mount points
        // there, not in the root every tool unit shares, where they stayed behind and named
        // the path for every later unit to list (measured in the container tier, scenario
        // (h)). Not for /home and /root (ProtectHome=tmpfs does the same) nor for a top the
        // runner binds itself (it would hide the tool's libraries).
        let mut tmpfs = self.cover(spec);
        tmpfs.extend(["/tmp:ro", "/var/tmp:ro", "/dev/shm:ro"].map(String::from));
        p.set("TemporaryFileSystem", tmpfs.join(" "));
        // Own minimal /dev, no device but the pseudo devices.
        p.set("PrivateDevices", "yes");
        p.set("DevicePolicy", "closed");
        // Files the tool creates are its own only.
        p.set("UMask", "0077");
        // /proc shows only the tool's own processes and no kernel files.
        p.set("ProtectProc", "invisible");
        p.set("ProcSubset", "pid");
        // The kernel, cgroups, clock and host name are not the tool's to change or read.
        p.set("ProtectKernelTunables", "yes");
        p.set("ProtectKernelModules", "yes");
        p.set("ProtectKernelLogs", "yes");
        p.set("ProtectControlGroups", "yes");
        p.set("ProtectClock", "yes");
        p.set("ProtectHostname", "yes");
        // No other user is visible, no System V or POSIX IPC is shared, no keys are shared,
        // and no namespace can be made to get around any of this.
        p.set("PrivateUsers", "yes");
        p.set("PrivateIPC", "yes");
        p.set("KeyringMode", "private");
        p.set("RestrictNamespaces", "yes");

        // Privileges: none, and no way to gain any.
        p.set("NoNewPrivileges", "yes");
        p.set("CapabilityBoundingSet", "");
        p.set("AmbientCapabilities", "");
        p.set("RestrictSUIDSGID", "yes");
        p.set("RestrictRealtime", "yes");
        p.set("LockPersonality", "yes");
        // The tool is plain Rust: no JIT, so no writable and executable memory. An MCP
        // server is not: Node's V8 compiles to writable and executable memory, and CPython
        // extensions may (libffi's closures), so an MCP unit goes without.
        if spec.mcp.is_none() {
            p.set("MemoryDenyWriteExecute", "yes");
        }

        // System calls: what an ordinary service uses, minus privileged and resource calls;
        // a refused call fails with EPERM so the tool reports it instead of dying unseen.
        p.set("SystemCallArchitectures", "native");
        p.set("SystemCallFilter", "@system-service");
        p.set("SystemCallFilter", "~@privileged @resources");
        p.set("SystemCallErrorNumber", "EPERM");

        // Network: none at all unless the grant has hosts; then only the addresses brokerd
        // resolved, and only IP sockets of their families. Never AF_UNIX, so even a socket
        // file that were visible (D-Bus, systemd) could not be connected to.
        if spec.addresses.is_empty() {
            p.set("PrivateNetwork", "yes");
            // No socket family at all. `RestrictAddressFamilies=none` is refused over D-Bus
            // by systemd 252 ("Invalid argument") and an empty value means "no restriction"
            // in a unit file, but "deny all" from systemd-run; an allow list emptied by a
            // second, deny-list assignment means the same everywhere (measured).
            p.set("RestrictAddressFamilies", "AF_UNIX");
            p.set("RestrictAddressFamilies", "~AF_UNIX");
        } else {
            let mut families = Vec::new();
            if spec.addresses.iter().any(|a| a.is_ipv4()) {
                families.push("AF_INET");
            }
            if spec.addresses.iter().any(|a| a.is_ipv6()) {
                families.push("AF_INET6");
            }
            p.set("RestrictAddressFamilies", families.join(" "));
        }
        // Deny every address; with PrivateNetwork= too, as a second wall that costs nothing.
        p.set("IPAddressDeny", "any");
        if !spec.addresses.is_empty() {
            // An IPv4-mapped IPv6 address travels as IPv4 on the wire, which is what the
            // filter sees: allow its IPv4 form too (the socket family stays AF_INET6).
            let mut allow: Vec<String> = Vec::new();
            for address in &spec.addresses {
                for form in [*address, address.to_canonical()] {
                    let form = form.to_string();
                    if !allow.contains(&form) {
                        allow.push(form);
                    }
                }
            }
            p.set("IPAddressAllow", allow.join(" "));
        }

        // Limits: systemd's own clock ends the run even if brokerd is gone.
        let limits = &spec.limits;
        p.set("RuntimeMaxSec", limits.runtime_max_sec());
        p.set("MemoryMax", limits.memory_max_bytes);
        p.set("TasksMax", limits.tasks_max);
        // No core dump, which could hold the secret or the data read.
        p.set("LimitCORE", "0");

        // The grant's secret, copied by systemd into the unit's private, non-swappable
        // credentials directory; it never appears in arguments or the environment.
        if let Some(secret) = &spec.secret {
            p.set(
                "LoadCredential",
                format!("{}:{}", secret.name, secret.source.display()),
            );
        }
        p.0
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
        // The mode is in the command line (`Self::command`).
        let (_, input) = match spec.input() {
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

/// The property list being built.
#[derive(Default)]
struct Props(Vec<(String, String)>);

impl Props {
    fn set(&mut self, key: &str, value: impl ToString) {
        self.0.push((key.to_owned(), value.to_string()));
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

/// Where a bind entry appears inside the root.
fn bind_destination(bind: &str) -> &str {
    let entry = bind.strip_prefix('-').unwrap_or(bind);
    entry.split_once(':').map_or(entry, |(_, dst)| dst)
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
