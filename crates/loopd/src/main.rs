//! loopd's binary: parses the arguments, runs [`loopd::run`], prints its error once and
//! maps it to an exit status (docs/architecture.md, "Exit statuses"):
//!
//! | status | when |
//! |---|---|
//! | 0 | stopped by SIGTERM or SIGINT, or `--check-config` found the configuration good |
//! | 1 | did not start: the configuration (unreadable, invalid, no `peers.chat`), the session store, a socket, or the start of serving; or `--check-config` could not write |
//! | 2 | the command line is not understood (clap) |
//!
//! A turn that cannot run never ends the process: it is answered on its connection.

use std::process::ExitCode;

use clap::Parser;
use loopd::Error;

fn main() -> ExitCode {
    daemon::parent::follow();
    match loopd::run(loopd::Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            daemon::log::error(format_args!("loopd: {e}"));
            status(&e)
        }
    }
}

/// Every variant is listed, so a new one is given its status on purpose.
fn status(e: &Error) -> ExitCode {
    match e {
        Error::Inherit(_)
        | Error::Config(_)
        | Error::NoChatPeer { .. }
        | Error::Output(_)
        | Error::Store(_)
        | Error::Listen(_)
        | Error::Start(_) => ExitCode::FAILURE,
    }
}
