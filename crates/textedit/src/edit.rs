//! The new text of each write: `create`, `replace` and `append`, and `edit_file`'s exact,
//! unique match.

use proto::tools::WriteMode;
use proto::tools::hands::MAX_FILE;
use proto::tools::stage::WriteCall;

/// How often `old` occurs in a text, for an edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Matches {
    None,
    /// Exactly one place, at this byte offset.
    One(usize),
    /// Several: the number of occurrences that do not overlap, and at least 2 (a single
    /// occurrence overlapping another, `aa` in `aaa`, names no one place either).
    Several(usize),
}

/// Where `old` occurs in `text`, byte for byte. `old` is not empty (the arguments' check).
pub fn matches(text: &str, old: &str) -> Matches {
    let mut found = text.match_indices(old).map(|(at, _)| at);
    let Some(first) = found.next() else {
        return Matches::None;
    };
    let more = found.count();
    if more > 0 {
        return Matches::Several(more + 1);
    }
    // A second occurrence starting inside the first: the next char boundary on.
    let next = text[first..]
        .char_indices()
        .nth(1)
        .map_or(text.len(), |(i, _)| first + i);
    if text[next..].contains(old) {
        return Matches::Several(2);
    }
    Matches::One(first)
}

/// Why a write cannot be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// `create` over a file that exists.
    #[error("the file exists (mode create writes only a new file)")]
    Exists,
    /// `replace` or `edit_file` of a file that does not exist.
    #[error("the file does not exist")]
    Missing,
    /// `edit_file`: `old` occurs nowhere.
    #[error("old occurs nowhere in the file")]
    NotFound,
    /// `edit_file`: `old` occurs this many times.
    #[error(
        "old occurs {0} times in the file; include more of the text around the change so \
         that it occurs once"
    )]
    Several(usize),
    /// The new text would be larger than [`MAX_FILE`].
    #[error("the file would be {size} bytes; a write leaves at most {MAX_FILE}")]
    TooLarge { size: u64 },
}

/// The text `call` leaves, given the file's text now (`None`: there is no file).
pub fn apply(old: Option<&str>, call: &WriteCall) -> Result<String, EditError> {
    let new = match (call, old) {
        (WriteCall::WriteFile(a), None) if a.mode == WriteMode::Replace => {
            return Err(EditError::Missing);
        }
        (WriteCall::WriteFile(a), None) => a.content.clone(),
        (WriteCall::WriteFile(a), Some(old)) => match a.mode {
            WriteMode::Create => return Err(EditError::Exists),
            WriteMode::Replace => a.content.clone(),
            WriteMode::Append => format!("{old}{}", a.content),
        },
        (WriteCall::EditFile(_), None) => return Err(EditError::Missing),
        (WriteCall::EditFile(a), Some(old)) => match matches(old, &a.old) {
            Matches::None => return Err(EditError::NotFound),
            Matches::Several(n) => return Err(EditError::Several(n)),
            Matches::One(at) => {
                let mut new = String::with_capacity(old.len() - a.old.len() + a.new.len());
                new.push_str(&old[..at]);
                new.push_str(&a.new);
                new.push_str(&old[at + a.old.len()..]);
                new
            }
        },
    };
    let size = new.len() as u64;
    if size > MAX_FILE {
        return Err(EditError::TooLarge { size });
    }
    Ok(new)
}
