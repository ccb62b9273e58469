//! What brokerd knows of the context a call came from.

pub mod accounting;
mod attested;
pub mod witness;

pub use attested::{Attested, Claimed, Rebuilt};
