//! textedit: the text of a write. One purpose: computing what a `write_file` or `edit_file`
//! leaves in its file, the same way in brokerd (for the card, the audit and the hash the
//! commit must produce) and in the commit unit (which recomputes it from the file it finds),
//! and the unified diff the owner approves (docs/decisions.md H2, H7, H8). Pure over
//! strings: no file is touched here.

mod diff;
mod edit;

pub use diff::{MAX_DIFF, Shown, diff, shown};
pub use edit::{EditError, Matches, apply, matches};
