//! The card's diff: a unified diff of the old text and the new, computed by brokerd from
//! bytes it holds (docs/decisions.md H8), bounded in time and in size.

use std::time::Duration;

use proto::toolrun::cap_str;
use similar::{Algorithm, TextDiff};

/// The most bytes of a diff (or of a new file's content) a card shows.
pub const MAX_DIFF: usize = 16 * 1024;

/// How long the diff may search for a minimal answer; past it `similar` finishes with a
/// correct, less minimal one, so a crafted pair of texts cannot hold brokerd.
const DEADLINE: Duration = Duration::from_millis(100);

/// Text for a card: at most [`MAX_DIFF`] bytes, cut at a character boundary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    pub text: String,
    pub truncated: bool,
}

/// `text` as a card shows it (a new file's content, an append's text).
pub fn shown(text: &str) -> Shown {
    let (text, truncated) = cap_str(text.to_owned(), MAX_DIFF);
    Shown { text, truncated }
}

/// The unified diff from `old` to `new` of the file at `path`: `--- a<path>` and
/// `+++ b<path>` headers, hunks with 3 lines of context, `\ No newline at end of file`
/// where a side lacks its last newline. Empty when the texts are equal.
pub fn diff(path: &str, old: &str, new: &str) -> Shown {
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .timeout(DEADLINE)
        .diff_lines(old, new);
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header(&format!("a{path}"), &format!("b{path}"))
        .to_string();
    let (text, truncated) = cap_str(text, MAX_DIFF);
    Shown { text, truncated }
}
