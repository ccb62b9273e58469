//! Notes: the agent's Markdown files in `memory/notes/`, and what brokerd knows of each. A
//! note's name is validated like a path (one file name, never a way elsewhere); each note's
//! label (class and untrusted flag) is computed and kept by brokerd, never by a tool. The
//! owner's channel lists and relabels them (`notes_query`, `note_relabel`).

use serde::{Deserialize, Serialize};

use crate::approval::CallRef;
use crate::{DataClass, Hash32, SessionId, Timestamp};

/// The longest note name, in bytes.
pub const MAX_NAME: usize = 100;

/// The largest note on disk. A larger file in `memory/notes/` is never read whole: it reads
/// as secret and untrusted, as a note brokerd did not write.
pub const MAX_NOTE: u64 = 256 * 1024;

/// What starts every line of the header brokerd writes above text an untrusted session
/// wrote. A body line that would read the same way is escaped with a backslash
/// (`brokerd::notes::escape_body`).
pub const HEADER_MARK: &str = "> [boxmaker]";

/// Why a note name is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("a note name cannot be empty")]
    Empty,
    #[error("a note name is at most {MAX_NAME} bytes, not {len}")]
    TooLong { len: usize },
    /// A byte other than `A-Z a-z 0-9 . _ -` (which excludes `/`, NUL and spaces).
    #[error("a note name holds only letters, digits, '.', '_' and '-', not byte 0x{byte:02x}")]
    Char { byte: u8 },
    /// A leading `.` (hidden and temporary files) or `..` anywhere.
    #[error("a note name cannot start with '.' or contain '..'")]
    Dots,
}

/// Checks a note name: 1 to [`MAX_NAME`] bytes of `A-Z a-z 0-9 . _ -`, no leading `.`, no
/// `..`. The note is the file `<name>.md`.
pub fn check_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.len() > MAX_NAME {
        return Err(NameError::TooLong { len: name.len() });
    }
    if let Some(&byte) = name
        .as_bytes()
        .iter()
        .find(|b| !matches!(b, b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.' | b'_' | b'-'))
    {
        return Err(NameError::Char { byte });
    }
    if name.starts_with('.') || name.contains("..") {
        return Err(NameError::Dots);
    }
    Ok(())
}

/// The note's file name in `memory/notes/`.
pub fn file_name(name: &str) -> String {
    format!("{name}.md")
}

/// The note a file name in `memory/notes/` holds, when it is one.
pub fn name_of_file(file: &str) -> Option<&str> {
    let name = file.strip_suffix(".md")?;
    check_name(name).ok().map(|()| name)
}

/// What brokerd recorded of a note: the hash of the bytes it wrote and their label.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoteRecord {
    pub name: String,
    pub hash: Hash32,
    pub class: DataClass,
    pub untrusted: bool,
    /// The untrusted sources its writers had read (as many as brokerd remembers).
    pub untrusted_by: Vec<CallRef>,
    /// The last write (or relabel): when, and the session (absent for a relabel).
    pub time: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionId>,
}

/// Owner channel: every note with its label, or one note with its text too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotesQuery {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// One note as brokerd sees it now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoteInfo {
    /// The file name in `memory/notes/` (a file that is no valid note is listed too).
    pub file: String,
    /// The label a read takes: the recorded one, or secret and untrusted when the bytes do
    /// not match (`matches: false`).
    pub class: DataClass,
    pub untrusted: bool,
    pub matches: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<NoteRecord>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotesListing {
    pub notes: Vec<NoteInfo>,
    /// With a name asked: the note's text (at most [`MAX_NOTE`] bytes, lossy UTF-8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// Owner channel: give a note the label the owner says, bound to the bytes it has now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoteRelabel {
    pub name: String,
    pub class: DataClass,
    pub untrusted: bool,
}

/// What a relabel did, as audited (`note_relabelled`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoteRelabelled {
    pub name: String,
    pub hash: Hash32,
    pub old_class: DataClass,
    pub old_untrusted: bool,
    pub class: DataClass,
    pub untrusted: bool,
}

/// Owner channel: a full-text search over every note and session log (`bxctl search`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotesSearch {
    pub query: String,
}

/// What a search hit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HitKind {
    Note,
    /// A record of a session log (what the owner said, the model's text, a tool result).
    Session,
}

/// One document a search found, with the label of the index partition it was found in: a
/// note (`name`) or a session log record (`session`, `epoch`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoteHit {
    pub kind: HitKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<u64>,
    /// Words around the match, the matched terms in `[`…`]` (the model's, or loopd's log).
    pub snippet: String,
    pub class: DataClass,
    pub untrusted: bool,
}

/// A session's label as brokerd exports it for the indexer, in
/// `session-labels/<session>.json` (temp file, fsync, rename; 0644) each time it changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionLabel {
    pub class: DataClass,
    pub untrusted: bool,
}

/// The hits of a search, best first (at most 20).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotesFound {
    pub hits: Vec<NoteHit>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_one_plain_file_name() {
        assert_eq!(check_name("groceries-2026.v1_x"), Ok(()));
        assert_eq!(check_name(""), Err(NameError::Empty));
        assert_eq!(check_name("a/b"), Err(NameError::Char { byte: b'/' }));
        assert_eq!(check_name("a\0b"), Err(NameError::Char { byte: 0 }));
        assert_eq!(check_name(".hidden"), Err(NameError::Dots));
        assert_eq!(check_name("a..b"), Err(NameError::Dots));
        assert_eq!(
            check_name(&"x".repeat(101)),
            Err(NameError::TooLong { len: 101 })
        );
        assert_eq!(name_of_file("a.md"), Some("a"));
        assert_eq!(name_of_file(".a.md.tmp"), None);
    }
}
