//! boxmaker-job's binary: one run of one job (docs/jobs.md). Its status is the unit's, so
//! a failed run is a failed unit (`systemctl --failed`), its journal saying why:
//!
//! | status | when |
//! |---|---|
//! | 0 | the run answered, and its result was delivered; or `--check-config` found the job |
//! | 1 | the run failed (brokerd refused it, the model was unreachable, a call was denied or not approved, the time limit was reached) or its result could not be delivered |
//! | 2 | nothing ran: the command line, the configuration, or no such job |

use std::process::ExitCode;

use clap::Parser;
use jobrunner::{Error, Finished};

fn main() -> ExitCode {
    match jobrunner::run(&jobrunner::Args::parse()) {
        Ok(Finished::Done) => ExitCode::SUCCESS,
        Ok(Finished::Failed) => ExitCode::FAILURE,
        Err(e) => {
            daemon::log::error(format_args!("boxmaker-job: {e}"));
            status(&e)
        }
    }
}

/// Every variant is listed, so a new one is given its status on purpose.
fn status(e: &Error) -> ExitCode {
    match e {
        Error::Config(_) | Error::NoJob { .. } => ExitCode::from(2),
    }
}
