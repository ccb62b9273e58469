//! Why a note was not written, read or relabelled. The text is what the model (a failed
//! result) or the owner (`bxctl notes`) reads; it names the note, never another file.

use std::path::{Path, PathBuf};

/// Each text is whole: it prints what it wraps (docs/decisions.md F16).
#[derive(Debug, thiserror::Error)]
pub enum NoteError {
    /// The notes directory or brokerd's own record of it failed (a full disk, say).
    // The path is brokerd's, not the model's: the model sees only "notes".
    #[error("the notes could not be written: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{0}")]
    Name(proto::notes::NameError),
    /// No such note on disk.
    #[error("there is no note {name:?}")]
    Missing { name: String },
    /// Something is there, but not a note brokerd reads: a link, not a regular file, or
    /// larger than a note may be.
    #[error(
        "{name}.md is not a note brokerd reads (a link, not a regular file, or over {} bytes)",
        proto::notes::MAX_NOTE
    )]
    Unreadable { name: String },
    /// The write unit left something other than the one note its call names.
    #[error("the write unit for note {name:?} left {what}; nothing was written")]
    Unexpected { name: String, what: String },
    /// The text is not UTF-8, or holds a NUL byte.
    #[error("the text for note {name:?} is not UTF-8 text without NUL bytes")]
    NotText { name: String },
    /// The search index failed (a full disk), or refused the query (FTS5 syntax).
    #[error("{0}")]
    Index(noteindex::IndexError),
    /// The note would grow past [`proto::notes::MAX_NOTE`].
    #[error(
        "note {name:?} would be {size} bytes, over the {} a note may hold; nothing was written",
        proto::notes::MAX_NOTE
    )]
    TooLarge { name: String, size: u64 },
}

impl NoteError {
    pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Self + '_ {
        move |error| Self::Io {
            path: path.to_owned(),
            error,
        }
    }

    /// The text for the owner's journal (a start that cannot make the notes ready): an I/O
    /// failure names brokerd's path, which the model's text leaves out.
    pub fn for_owner(&self) -> String {
        match self {
            Self::Io { path, error } => format!("{}: {error}", path.display()),
            other => other.to_string(),
        }
    }
}
