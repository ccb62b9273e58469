//! The context a call came from: what inferproxy witnessed, and each message's label.
//!
//! `witness` keeps inferproxy's reports (a call runs only if witnessed, once); `accounting`
//! keeps the label of each message brokerd can account for; [`Attested`] holds both, so a
//! report is accounted before it is acknowledged and a call is decided at the label of the
//! prompt that produced it; [`Rebuilt`] is what a pass over the audit log gives back. A new
//! source of labels for what the model reads (another channel of the owner's words, a tool
//! message of a new tool) is accounted here; the labels a result carries are `policy`'s.

pub mod accounting;
mod attested;
mod rebuilt;
pub mod witness;

pub use attested::{Attested, Claimed};
pub use rebuilt::Rebuilt;
