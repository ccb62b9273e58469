//! How a role's `main` ends: its error printed once, at error level, and the exit status the
//! error maps to. Each role's error type says its status ([`Status`]); the statuses are
//! documented in the role's `main.rs` (docs/decisions.md F16).

use std::process::ExitCode;

/// An error that knows the exit status it ends its role with.
pub trait Status: std::fmt::Display {
    fn exit_code(&self) -> u8;
}

/// What `main` returns for `result`: success, or `role: error` logged once and the error's
/// status.
pub fn finish<E: Status>(role: &str, result: Result<(), E>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            crate::log::error(format_args!("{role}: {e}"));
            ExitCode::from(e.exit_code())
        }
    }
}
