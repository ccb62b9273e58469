//! loopd's binary: parses the arguments, runs [`loopd::run`], prints its error once and
//! exits with its status (`daemon::exit::Status` of `loopd::Error`; docs/architecture.md,
//! "Exit statuses"):
//!
//! | status | when |
//! |---|---|
//! | 0 | stopped by SIGTERM or SIGINT, or `--check-config` found the configuration good |
//! | 1 | did not start: the configuration (unreadable, invalid, no `peers.chat`), the session store, a socket, or the start of serving; or `--check-config` could not write |
//! | 2 | the command line is not understood (clap) |
//!
//! A turn that cannot run never ends the process: it is answered on its connection.

use clap::Parser;

fn main() -> std::process::ExitCode {
    daemon::parent::follow();
    daemon::exit::finish("loopd", loopd::run(loopd::Args::parse()))
}
