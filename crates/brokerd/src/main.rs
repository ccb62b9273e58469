//! brokerd's entry point: parses the arguments, runs, prints an error once and exits with
//! its status (`daemon::exit::Status` of `brokerd::Error`):
//!
//! | status | when |
//! |---|---|
//! | 0  | stopped on SIGTERM or SIGINT after the drain; `--check-config` found it good; `--flows` printed the flows (whatever they are); `--print-tool-unit` printed the unit |
//! | 1  | could not start: the configuration, a grant file, the audit log (a broken chain, a lock held by another brokerd), the session state, the notes directory or its record, a socket, or the first snapshot's audit line; `--check-config` found it bad (`--flows` too, before any flow); `--print-tool-unit` had no unit to print |
//! | 2  | the arguments are not brokerd's (clap's usage error) |
//! | 70 | the audit log or the session state failed while serving (docs/decisions.md B10): nothing more is answered, systemd restarts brokerd and the start recovers the log |

use clap::Parser;

fn main() -> std::process::ExitCode {
    daemon::parent::follow();
    daemon::exit::finish("brokerd", brokerd::run(brokerd::Args::parse()))
}
