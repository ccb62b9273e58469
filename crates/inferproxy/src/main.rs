//! inferproxy's binary: parses the arguments, runs [`inferproxy::run`], prints its error
//! once and maps it to an exit status (docs/architecture.md, "Exit statuses"):
//!
//! | status | when |
//! |---|---|
//! | 0 | stopped by SIGTERM or SIGINT, or `--check-config` found the configuration good |
//! | 1 | did not start: the configuration, infer.sock (inherited or bound), or the start of serving; or `--check-config` could not write |
//! | 2 | the command line is not understood (clap) |
//!
//! A request that fails never ends the process: it is answered (or cut) on its connection.

use std::process::ExitCode;

use clap::Parser;
use inferproxy::Error;

fn main() -> ExitCode {
    daemon::parent::follow();
    match inferproxy::run(inferproxy::Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            daemon::log::error(format_args!("inferproxy: {e}"));
            status(&e)
        }
    }
}

/// Every variant is listed, so a new one is given its status on purpose.
fn status(e: &Error) -> ExitCode {
    match e {
        Error::Config(_) | Error::Listen(_) | Error::Start(_) | Error::Output(_) => {
            ExitCode::FAILURE
        }
    }
}
