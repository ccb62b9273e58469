//! boxmaker-job's binary: one run of one job (docs/jobs.md). Its status is the unit's, so
//! a failed run is a failed unit (`systemctl --failed`), its journal saying why (a run's
//! end is `jobrunner::Finished`, an error before it `daemon::exit::Status` of
//! `jobrunner::Error`):
//!
//! | status | when |
//! |---|---|
//! | 0 | the run answered, and its result was delivered; or `--check-config` found the job |
//! | 1 | the run failed (brokerd refused it, the model was unreachable, a call was denied or not approved, the time limit was reached) or its result could not be delivered |
//! | 2 | nothing ran: the command line, the configuration, or no such job |

use clap::Parser;

fn main() -> std::process::ExitCode {
    daemon::exit::finish("boxmaker-job", jobrunner::run(&jobrunner::Args::parse()))
}
