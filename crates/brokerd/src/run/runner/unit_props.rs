//! The one property list of a tool unit (BRIEF decision 1), each line with why, and what a
//! hands unit changes in it (docs/decisions.md H1, H3, H11): the hands user instead of a
//! dynamic one where it writes the owner's files, `PrivatePIDs=` and no key rings then, the
//! granted root at `/target`, a program's closure instead of the runner's binds, its paths
//! read-only, a writable `/tmp` and `/work` it cannot execute from. `SystemdRunner` passes
//! the list to `systemd-run` and prints it as a unit file, so what is scored is what runs.

use std::path::Path;

use grants::constraints::is_under;

use super::spec::RunSpec;
use crate::run::hands::{StageUnit, TARGET, WORK};
use crate::run::programs::PRIVATE_PIDS;

/// What every unit of one runner shares.
pub(super) struct Base<'a> {
    /// The `boxmaker-tool` binary.
    pub tool: &'a Path,
    /// The empty `RootDirectory=`.
    pub root: &'a Path,
    /// What every tool needs, bound read-only (`SystemdRunner::binds`).
    pub binds: &'a [String],
    /// Who the write units run as (`broker.hands_user`).
    pub hands_user: Option<&'a str>,
    /// The target's systemd major version (`broker.systemd_version`).
    pub systemd_version: u32,
}

/// What the unit needs to run at all, bound read-only: the runner's binds (for a program
/// with a listed closure, that closure instead), the tool, and a run's program when no bind
/// holds them.
fn runtime(base: &Base<'_>, stage: Option<&StageUnit>) -> Vec<String> {
    let mut binds: Vec<String> = match stage {
        Some(StageUnit::Run {
            closure: Some(closure),
            ..
        }) => closure.clone(),
        _ => base.binds.to_vec(),
    };
    let mut needed = vec![base.tool.display().to_string()];
    if let Some(StageUnit::Run { program, .. }) = stage {
        needed.push(program.display().to_string());
    }
    for file in needed {
        if !binds.iter().any(|b| is_under(&file, bind_destination(b))) {
            binds.push(file);
        }
    }
    binds
}

/// A hands unit's own places: (read-only, read-write) bind entries. `-`: a place gone by
/// now is absent for the tool, which then says so, instead of failing the unit's start.
fn stage_binds(stage: Option<&StageUnit>) -> (Vec<String>, Vec<String>) {
    match stage {
        Some(StageUnit::Write { root, writable }) => {
            let bind = format!("-{root}:{TARGET}");
            if *writable {
                (Vec::new(), vec![bind])
            } else {
                (vec![bind], Vec::new())
            }
        }
        Some(StageUnit::Run { paths, workdir, .. }) => (
            paths.iter().map(|p| format!("-{p}")).collect(),
            workdir.iter().map(|w| format!("-{w}:{WORK}")).collect(),
        ),
        None => (Vec::new(), Vec::new()),
    }
}

/// Where each path bound for the call appears inside the root.
fn targets(spec: &RunSpec) -> Vec<String> {
    let mut out: Vec<String> = spec
        .read_binds()
        .chain(spec.write_bind.iter())
        .map(|b| b.target.clone())
        .collect();
    if let Some(StageUnit::Run { paths, .. }) = spec.stage.as_ref().map(|s| &s.unit) {
        out.extend(paths.iter().cloned());
    }
    out
}

/// The unit's properties, in order; see the comment on each for why.
pub(super) fn properties(base: &Base<'_>, spec: &RunSpec) -> Vec<(String, String)> {
    let mut p = Props::default();
    let stage = spec.stage.as_ref().map(|s| &s.unit);
    let hands_user = stage.is_some_and(StageUnit::as_hands_user);
    match (hands_user, base.hands_user) {
        // A write's unit (and a run with a working directory) runs as the hands user, the
        // owner of the files it writes (docs/decisions.md H1): not DynamicUser, which could
        // not write them; every other line of this block stays. Never RemoveIPC=, which
        // would remove that user's own IPC objects.
        (true, Some(user)) => p.set("User", user),
        // Identity: a fresh user allocated for this run and released after it, so no file
        // a tool creates, and no process it leaves, belongs to anyone else (RemoveIPC too).
        _ => p.set("DynamicUser", "yes"),
    }

    // File system: an empty root with only what the tool needs bound into it
    // read-only (BRIEF decision 1). Not TemporaryFileSystem=/ (systemd#18999).
    p.set("RootDirectory", base.root.display());
    // The unit's mounts never propagate back to the host.
    p.set("PrivateMounts", "yes");
    for bind in runtime(base, stage) {
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
    // A hands unit's places (`stage_binds`): the granted root at /target, a run's paths
    // and its working directory.
    let (read, write) = stage_binds(stage);
    for bind in read {
        p.set("BindReadOnlyPaths", bind);
    }
    for bind in write {
        p.set("BindPaths", bind);
    }
    // Read-only everywhere (DynamicUser implies it; stated for the reader and scorer).
    p.set("ProtectSystem", "strict");
    // No home directory. But `yes` puts an inaccessible /home over granted paths under
    // it (measured), so a grant there gets `tmpfs`: an empty read-only /home, /root and
    // /run/user holding only the granted directories.
    let in_home = targets(spec)
        .iter()
        .any(|t| ["/home", "/root"].iter().any(|home| is_under(t, home)));
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
    let mut tmpfs = cover(base, spec);
    match stage {
        // A program needs a writable /tmp and working directory: each a tmpfs of the
        // unit's own, gone with it, from which nothing can be executed.
        Some(StageUnit::Run { workdir, .. }) => {
            tmpfs.push("/tmp:mode=1777,noexec".into());
            if workdir.is_none() {
                tmpfs.push(format!("{WORK}:mode=1777,noexec"));
            }
            tmpfs.extend(["/var/tmp:ro", "/dev/shm:ro"].map(String::from));
        }
        _ => tmpfs.extend(["/tmp:ro", "/var/tmp:ro", "/dev/shm:ro"].map(String::from)),
    }
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
    if hands_user && base.systemd_version >= PRIVATE_PIDS {
        // The hands user's other processes are not there to be signalled (kill(-1)) or
        // read through /proc: the unit's own PID namespace (systemd 257, H1).
        p.set("PrivatePIDs", "yes");
    }

    // Privileges: none, and no way to gain any.
    p.set("NoNewPrivileges", "yes");
    p.set("CapabilityBoundingSet", "");
    p.set("AmbientCapabilities", "");
    p.set("RestrictSUIDSGID", "yes");
    p.set("RestrictRealtime", "yes");
    p.set("LockPersonality", "yes");
    // The tool is plain Rust: no JIT, so no writable and executable memory (nor for a
    // program `run` starts: one that needs it fails, docs/tools.md). An MCP server is not:
    // Node's V8 compiles to writable and executable memory, and CPython extensions may
    // (libffi's closures), so an MCP unit goes without.
    if spec.mcp.is_none() {
        p.set("MemoryDenyWriteExecute", "yes");
    }

    // System calls: what an ordinary service uses, minus privileged and resource calls;
    // a refused call fails with EPERM so the tool reports it instead of dying unseen.
    p.set("SystemCallArchitectures", "native");
    p.set("SystemCallFilter", "@system-service");
    p.set("SystemCallFilter", "~@privileged @resources");
    if hands_user {
        // Not the hands user's key rings either (H1).
        p.set("SystemCallFilter", "~@keyring");
    }
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

/// The empty read-only tmpfs over the top directory of each path bound for the call
/// (see `properties`), as `TemporaryFileSystem=` entries.
fn cover(base: &Base<'_>, spec: &RunSpec) -> Vec<String> {
    let tool = base.tool.display().to_string();
    let mut tops: Vec<String> = Vec::new();
    for target in targets(spec) {
        let Some(top) = target.split('/').find(|c| !c.is_empty()) else {
            continue;
        };
        let top = format!("/{top}");
        // A bind at a top directory itself leaves only that one name behind.
        if target.trim_end_matches('/') == top {
            continue;
        }
        let ours = base
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

/// The property list being built.
#[derive(Default)]
struct Props(Vec<(String, String)>);

impl Props {
    fn set(&mut self, key: &str, value: impl ToString) {
        self.0.push((key.to_owned(), value.to_string()));
    }
}

/// Where a bind entry appears inside the root.
fn bind_destination(bind: &str) -> &str {
    let entry = bind.strip_prefix('-').unwrap_or(bind);
    entry.split_once(':').map_or(entry, |(_, dst)| dst)
}
