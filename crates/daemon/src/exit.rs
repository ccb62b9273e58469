//! How a role's `main` ends: its error printed once and the exit status the error maps to.
//! Each role's error type says its status ([`Status`]); the statuses are documented in the
//! role's `main.rs` and in docs/architecture.md (docs/decisions.md F16). A daemon logs the
//! error ([`finish`]); a command a person or brokerd runs (bxctl, boxmaker-tool) writes it
//! to stderr as it is, where it is read as text ([`finish_command`]).

use std::io::Write;
use std::process::{ExitCode, Termination};

/// An error that knows the exit status it ends its role with.
pub trait Status: std::fmt::Display {
    fn exit_code(&self) -> u8;
}

/// What a daemon's `main` returns for `result`: what the success reports (`()` is 0), or
/// `role: error` logged once and the error's status.
pub fn finish<T: Termination, E: Status>(role: &str, result: Result<T, E>) -> ExitCode {
    match result {
        Ok(done) => done.report(),
        Err(e) => {
            crate::log::error(format_args!("{role}: {e}"));
            ExitCode::from(e.exit_code())
        }
    }
}

/// What a command's `main` returns for `result`: what the success reports, or `program:
/// error` written once to stderr, without a log level (a person reads it on a terminal,
/// brokerd in a failed tool's output), and the error's status.
pub fn finish_command<T: Termination, E: Status>(program: &str, result: Result<T, E>) -> ExitCode {
    match result {
        Ok(done) => done.report(),
        Err(e) => {
            // Nowhere else to say it if stderr is gone; the status still tells.
            let _ = std::io::stderr()
                .lock()
                .write_all(format!("{program}: {e}\n").as_bytes());
            ExitCode::from(e.exit_code())
        }
    }
}
