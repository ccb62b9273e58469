//! Why a note was not written, read or relabelled. The text is what the model (a failed
//! result) or the owner (`bxctl notes`) reads; it names the note, never another file.

use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub enum NoteError {
    /// The notes directory or brokerd's own record of it failed (a full disk, say).
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    Name(proto::notes::NameError),
    /// No such note on disk.
    Missing {
        name: String,
    },
    /// Something is there, but not a note brokerd reads: a link, not a regular file, or
    /// larger than a note may be.
    Unreadable {
        name: String,
    },
    /// The write unit left something other than the one note its call names.
    Unexpected {
        name: String,
        what: String,
    },
    /// The text is not UTF-8, or holds a NUL byte.
    NotText {
        name: String,
    },
    /// The search index failed (a full disk), or refused the query (FTS5 syntax).
    Index(noteindex::IndexError),
    /// The note would grow past [`proto::notes::MAX_NOTE`].
    TooLarge {
        name: String,
        size: u64,
    },
}

impl NoteError {
    pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Self + '_ {
        move |source| Self::Io {
            path: path.to_owned(),
            source,
        }
    }
}

impl fmt::Display for NoteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // The path is brokerd's, not the model's: the model sees only "notes".
            Self::Io { source, .. } => write!(f, "the notes could not be written: {source}"),
            Self::Name(e) => e.fmt(f),
            Self::Index(e) => e.fmt(f),
            Self::Missing { name } => write!(f, "there is no note {name:?}"),
            Self::Unreadable { name } => write!(
                f,
                "{name}.md is not a note brokerd reads (a link, not a regular file, or over {} \
                 bytes)",
                proto::notes::MAX_NOTE
            ),
            Self::Unexpected { name, what } => write!(
                f,
                "the write unit for note {name:?} left {what}; nothing was written"
            ),
            Self::NotText { name } => {
                write!(
                    f,
                    "the text for note {name:?} is not UTF-8 text without NUL bytes"
                )
            }
            Self::TooLarge { name, size } => write!(
                f,
                "note {name:?} would be {size} bytes, over the {} a note may hold; nothing \
                 was written",
                proto::notes::MAX_NOTE
            ),
        }
    }
}

impl std::error::Error for NoteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::Name(e) => Some(e),
            Self::Index(e) => Some(e),
            _ => None,
        }
    }
}
