//! boxmaker-indexer's binary (docs/memory.md, "Search"):
//!
//! | status | when |
//! |---|---|
//! | 0 | indexed what had changed (or, `--watch`, stopped by a signal); or `--check-config` found the configuration good |
//! | 1 | the configuration, or the index could not be read or written (a full disk): nothing is lost, the next run goes on |
//! | 2 | the command line is not understood (clap) |

use std::process::ExitCode;

use clap::Parser;
use indexer::Error;

fn main() -> ExitCode {
    daemon::parent::follow();
    match indexer::run(&indexer::Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            daemon::log::error(format_args!("boxmaker-indexer: {e}"));
            status(&e)
        }
    }
}

/// Every variant is listed, so a new one is given its status on purpose.
fn status(e: &Error) -> ExitCode {
    match e {
        Error::Config(_) | Error::Io { .. } | Error::Index(_) => ExitCode::FAILURE,
    }
}
