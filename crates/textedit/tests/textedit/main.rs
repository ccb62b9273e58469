//! textedit's tests: the new text of each write mode and edit, and the card's diff (which,
//! applied to the old text, gives the new, within its size and time bounds).

mod diff;
mod edit;
