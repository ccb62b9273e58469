//! `run`'s programs: which names are shells, or launchers that run a program named in their
//! arguments (docs/decisions.md H11). A grant naming one must say `constraints.shell = true`;
//! brokerd applies the same test to the file its configuration maps a name to.

/// Shells, and programs whose purpose is to run another program named in their arguments
/// (how `sh -c` comes back in: `env sh -c …`, `xargs sh -c …`, `busybox sh`).
#[rustfmt::skip]
pub const LAUNCHERS: &[&str] = &[
    // Shells.
    "sh", "ash", "bash", "dash", "ksh", "mksh", "oksh", "pdksh", "loksh", "zsh", "fish", "csh",
    "tcsh", "yash", "posh", "rc", "es", "elvish", "nu", "nushell", "xonsh", "pwsh", "osh", "ysh",
    // Multi-call binaries that hold a shell.
    "busybox", "toybox",
    // Programs that run the program named in their arguments.
    "env", "xargs", "nohup", "nice", "ionice", "timeout", "setsid", "stdbuf", "chrt", "taskset",
    "flock", "time", "watch", "script", "parallel", "sudo", "doas", "su", "runuser", "pkexec",
    "setpriv", "chroot", "unshare", "nsenter", "systemd-run", "strace", "ltrace", "gdb",
    "expect", "find", "ssh", "exec",
];

/// Whether `name` (a program's name, or the file name of its path) is one of
/// [`LAUNCHERS`], also with a version or variant suffix (`bash5`, `bash-5.2`, `sh.static`).
pub fn is_launcher(name: &str) -> bool {
    LAUNCHERS.iter().any(|l| {
        name.strip_prefix(l).is_some_and(|rest| {
            rest.is_empty()
                || rest
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_digit() || matches!(c, '.' | '-'))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shells_and_launchers_are_known_with_their_suffixes() {
        for name in [
            "sh",
            "bash",
            "bash5",
            "bash-5.2",
            "sh.static",
            "env",
            "busybox",
            "xargs",
        ] {
            assert!(is_launcher(name), "{name}");
        }
        for name in [
            "python3",
            "shellcheck",
            "shasum",
            "environ",
            "findutils",
            "git",
            "cat",
        ] {
            assert!(!is_launcher(name), "{name}");
        }
    }
}
