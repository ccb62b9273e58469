//! What a test needs of how systemd runs a role: the watchdog's environment, and root for
//! a test that runs a client as another uid.

use std::os::unix::net::UnixDatagram;
use std::process::Command;

use crate::{Daemon, Home, bin};

/// Whether this process runs as root, which a test of another uid's view needs. In the
/// gate (BOXMAKER_GATE=1, whose `test` step runs as root) its absence is a failure, never a
/// silent skip.
pub fn root() -> bool {
    let root = nix::unistd::geteuid().is_root();
    if !root {
        assert!(
            std::env::var_os("BOXMAKER_GATE").is_none(),
            "this test needs root, and the gate runs it: run the gate's test step as root"
        );
        let _ =
            std::io::Write::write_all(&mut std::io::stderr(), b"skipping: this test needs root\n");
    }
    root
}

impl Home {
    /// Starts the role daemon `name` as systemd starts it with `WatchdogSec=`: WATCHDOG_USEC
    /// is `usec`, WATCHDOG_PID its own pid. Returns it and its notify socket.
    pub fn watched(&self, name: &str, usec: u64) -> (Daemon, UnixDatagram) {
        let mut cmd = Command::new("sh");
        // The shell's pid is the role's: exec keeps it.
        cmd.args(["-c", "export WATCHDOG_PID=$$; exec \"$0\" --config \"$1\""])
            .arg(bin(name))
            .arg(self.config())
            .env("WATCHDOG_USEC", usec.to_string());
        Daemon::spawn_notified(cmd, &self.root)
    }
}
