//! The hands' arguments: `write_file`, `edit_file` and `run` (docs/tools.md,
//! docs/decisions.md H1-H12). Parsed as strictly as every tool's (unknown fields, duplicate
//! keys, wrong types refused), then checked here for what no grant should ever have to
//! consider: a NUL byte in text or in an argument, an edit that names no change, a program
//! name that is a path. Fields are declared in sorted order, so serialising gives the
//! canonical form.

use serde::{Deserialize, Serialize};

/// The largest file a write reads or leaves: the old text of a `replace`, `append` or
/// `edit_file`, and the new text of any write. A note's limit too (`notes::MAX_NOTE`).
pub const MAX_FILE: u64 = 256 * 1024;

/// The most arguments a `run` call passes to its program.
pub const MAX_RUN_ARGS: usize = 1024;

/// The longest program name (`[A-Za-z0-9][A-Za-z0-9._+-]*`).
pub const MAX_PROGRAM_NAME: usize = 64;

/// How `write_file` writes its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteMode {
    /// A new file: the call fails if the name exists.
    Create,
    /// An existing file's whole text becomes `content`.
    Replace,
    /// `content` is added at the end (the file is created when absent).
    Append,
}

impl WriteMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Replace => "replace",
            Self::Append => "append",
        }
    }
}

/// `write_file`: an absolute path below a granted directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    pub content: String,
    pub mode: WriteMode,
    pub path: String,
}

/// `edit_file`: the one place where `old` occurs becomes `new`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditFileArgs {
    pub new: String,
    pub old: String,
    pub path: String,
}

/// `run`: a granted program by name, its argument vector, and optionally its standard input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunArgs {
    pub args: Vec<String>,
    pub program: String,
    /// Absent means no input; `null` is refused (it is not a string).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub stdin: Option<String>,
}

/// An optional string that, when given, must be a string: serde would read `null` as absent.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    String::deserialize(d).map(Some)
}

/// Why the hands' arguments are refused after they parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandsArgsError {
    /// A NUL byte in `field`: files are text, and no argument vector can carry one.
    #[error("{field} contains a NUL byte")]
    Nul { field: &'static str },
    /// `edit_file` with an empty `old`: it would name no place.
    #[error("old is empty: name the exact text to replace")]
    EmptyOld,
    /// `edit_file` whose `new` is its `old`: it would change nothing.
    #[error("new is the same as old: the edit changes nothing")]
    NoChange,
    /// A program name that is not `[A-Za-z0-9][A-Za-z0-9._+-]*` of at most
    /// [`MAX_PROGRAM_NAME`] bytes (a path, a command line, an empty name).
    #[error(
        "program {name:?} is not a program's name (letters, digits, '.', '_', '+' and '-', \
         at most {MAX_PROGRAM_NAME}, no path): name a granted program"
    )]
    ProgramName { name: String },
    #[error("{count} arguments; a run passes at most {MAX_RUN_ARGS}")]
    TooManyArgs { count: usize },
}

fn no_nul(field: &'static str, text: &str) -> Result<(), HandsArgsError> {
    if text.contains('\0') {
        return Err(HandsArgsError::Nul { field });
    }
    Ok(())
}

impl WriteFileArgs {
    pub fn check(&self) -> Result<(), HandsArgsError> {
        no_nul("path", &self.path)?;
        no_nul("content", &self.content)
    }
}

impl EditFileArgs {
    pub fn check(&self) -> Result<(), HandsArgsError> {
        no_nul("path", &self.path)?;
        no_nul("old", &self.old)?;
        no_nul("new", &self.new)?;
        if self.old.is_empty() {
            return Err(HandsArgsError::EmptyOld);
        }
        if self.old == self.new {
            return Err(HandsArgsError::NoChange);
        }
        Ok(())
    }
}

impl RunArgs {
    pub fn check(&self) -> Result<(), HandsArgsError> {
        check_program_name(&self.program)?;
        if self.args.len() > MAX_RUN_ARGS {
            return Err(HandsArgsError::TooManyArgs {
                count: self.args.len(),
            });
        }
        for arg in &self.args {
            no_nul("an argument", arg)?;
        }
        Ok(())
    }
}

/// A program's name as grants and calls write it: `[A-Za-z0-9][A-Za-z0-9._+-]*`, at most
/// [`MAX_PROGRAM_NAME`] bytes. Never a path: which file it is, is brokerd's configuration.
pub fn check_program_name(name: &str) -> Result<(), HandsArgsError> {
    let fine = name.len() <= MAX_PROGRAM_NAME
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'+' | b'-'));
    if fine {
        Ok(())
    } else {
        Err(HandsArgsError::ProgramName {
            name: name.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_names_are_names_not_paths() {
        for good in ["python3", "g++", "x86_64-linux-gnu-gcc", "a.b_c", "7z"] {
            assert_eq!(check_program_name(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "/usr/bin/python3",
            "../sh",
            ".hidden",
            "-rf",
            "sh -c",
            "a/b",
            "é",
            &"p".repeat(MAX_PROGRAM_NAME + 1),
        ] {
            assert!(check_program_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(check_program_name(&"p".repeat(MAX_PROGRAM_NAME)), Ok(()));
    }
}
