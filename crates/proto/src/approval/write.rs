//! What a write's approval card shows and binds (docs/decisions.md H8, H10): the path, the
//! old content's hash and size (absent for a new file), the new content's, and the text the
//! owner reads: the unified diff of a replace or an edit, the content of a new file, the
//! text an append adds, each capped, with the full sizes beside it.

use serde::{Deserialize, Serialize};

use crate::Hash32;

/// What [`WriteCard::text`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shows {
    /// A unified diff from the old content to the new (replace, edit).
    Diff,
    /// The whole new content (a new file).
    Content,
    /// The text an append adds at the end.
    Appended,
}

impl Shows {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Diff => "diff",
            Self::Content => "content",
            Self::Appended => "appended",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteCard {
    /// The file, as the grant covered it (normalised).
    pub path: String,
    /// The content the write replaces (the look's): the commit writes only over it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_sha256: Option<Hash32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_size: Option<u64>,
    pub new_sha256: Hash32,
    pub new_size: u64,
    pub shows: Shows,
    /// Computed by brokerd from bytes it holds, never taken from a unit; at most
    /// `textedit::MAX_DIFF` bytes, cut at a character boundary. Shown inert.
    pub text: String,
    /// Whether `text` was cut.
    pub truncated: bool,
}

impl WriteCard {
    /// The parts the card's binding takes from this write, each length-prefixed by the
    /// caller's hash, an absent hash or size distinct from any present one.
    pub fn parts(&self) -> Vec<Vec<u8>> {
        let opt_hash = |h: Option<Hash32>| match h {
            Some(h) => [b"h".as_slice(), h.as_bytes()].concat(),
            None => b"-".to_vec(),
        };
        let opt_size = |s: Option<u64>| match s {
            Some(s) => [b"n".as_slice(), &s.to_be_bytes()].concat(),
            None => b"-".to_vec(),
        };
        vec![
            b"write".to_vec(),
            self.path.as_bytes().to_vec(),
            opt_hash(self.old_sha256),
            opt_size(self.old_size),
            self.new_sha256.as_bytes().to_vec(),
            self.new_size.to_be_bytes().to_vec(),
            self.shows.as_str().as_bytes().to_vec(),
            self.text.as_bytes().to_vec(),
            vec![u8::from(self.truncated)],
        ]
    }
}
