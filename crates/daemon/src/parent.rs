//! A role started by `bxctl dev` ends with it, however bxctl dies (SIGKILL included): bxctl
//! names itself in [`PARENT_ENV`], and the role asks the kernel for SIGTERM when its
//! parent exits (PR_SET_PDEATHSIG, through nix's safe wrapper), so it drains and stops as
//! under systemd. Under systemd the variable is not set and nothing changes.

use nix::sys::signal::Signal;
use nix::unistd::Pid;

/// The variable `bxctl dev` sets to its own PID for each role it starts.
pub const PARENT_ENV: &str = "BOXMAKER_PARENT_PID";

/// Asks for SIGTERM when the parent named in [`PARENT_ENV`] exits. The kernel ties the
/// signal to the thread that forked the child; `bxctl dev` starts every role from its main
/// thread, which lives as long as bxctl. If that parent is already gone (it died between
/// the fork and this call, so the signal would never come), the role stops now, by the
/// same SIGTERM. Call it first in `main`, before any signal handler is installed.
pub fn follow() {
    let Some(expected) = std::env::var(PARENT_ENV)
        .ok()
        .and_then(|v| v.parse::<i32>().ok())
    else {
        return;
    };
    if let Err(e) = nix::sys::prctl::set_pdeathsig(Signal::SIGTERM) {
        crate::log::warn(format_args!(
            "cannot ask to be stopped with bxctl (prctl): {e}"
        ));
    }
    if nix::unistd::getppid() != Pid::from_raw(expected) {
        // No handler is installed yet: the default action ends the process.
        let _ = nix::sys::signal::raise(Signal::SIGTERM);
        std::process::exit(0);
    }
}
