//! owner-words: the owner's words as the roles take them, and nothing else. The owner's core
//! memory file, read as loopd puts it in every prompt and as brokerd accounts for it
//! (`core_memory`, docs/decisions.md X5), and the registration of each message a channel
//! hands to loopd as the owner's, on brokerd's chat side (`register`, X4), so brokerd can
//! tell the owner's words in a prompt from loopd's. It decides nothing: brokerd's accounting
//! is brokerd's, the wire types are `proto`'s, the framed connection `daemon`'s.

pub mod core_memory;
mod registration;

pub use registration::{RegisterError, register};
