//! The hands' part of `[broker]` (docs/decisions.md H1, H11): the account the write units
//! run as, and the programs `run` grants may name, each an absolute path (on NixOS a store
//! path, with the file listing its closure, which is all of the store its unit sees).

use std::collections::BTreeMap;
use std::path::PathBuf;

/// Why the hands' settings cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandsInvalid {
    /// `broker.hands_user` is empty, `root`, or not a plain user name.
    #[error(
        "broker.hands_user {user:?} must name the account whose files the agent may write \
         (never root)"
    )]
    HandsUser { user: String },
    /// A key of `broker.programs` that is not a program's name.
    #[error(
        "broker.programs.{name:?}: a program's name is letters, digits, '.', '_', '+' and \
         '-' (no path), as a run grant names it"
    )]
    ProgramName { name: String },
    /// A program's path, or a closure file, that is not absolute.
    #[error(
        "broker.programs.{name} (or its closure) must be an absolute path, not {}",
        path.display()
    )]
    NotAbsolute { name: String, path: PathBuf },
    /// A closure for a program `broker.programs` does not name.
    #[error("broker.program_closures.{name} names no program of broker.programs")]
    ClosureWithoutProgram { name: String },
}

/// `broker.hands_user`, `broker.programs` and `broker.program_closures`, checked.
pub(super) fn validate(
    hands_user: Option<&String>,
    programs: &BTreeMap<String, PathBuf>,
    closures: &BTreeMap<String, PathBuf>,
) -> Result<(), HandsInvalid> {
    if let Some(user) = hands_user {
        let plain = !user.is_empty()
            && user.len() <= 32
            && user
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
            && !user.starts_with('-');
        if !plain || user == "root" {
            return Err(HandsInvalid::HandsUser { user: user.clone() });
        }
    }
    for (name, path) in programs {
        if proto::tools::hands::check_program_name(name).is_err() {
            return Err(HandsInvalid::ProgramName { name: name.clone() });
        }
        if !path.is_absolute() {
            return Err(HandsInvalid::NotAbsolute {
                name: name.clone(),
                path: path.clone(),
            });
        }
    }
    for (name, path) in closures {
        if !programs.contains_key(name) {
            return Err(HandsInvalid::ClosureWithoutProgram { name: name.clone() });
        }
        if !path.is_absolute() {
            return Err(HandsInvalid::NotAbsolute {
                name: name.clone(),
                path: path.clone(),
            });
        }
    }
    Ok(())
}
