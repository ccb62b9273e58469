//! grants: the owner's grant files and what they mean. One purpose: turning
//! `grants/<id>.toml` into a checked, hashed snapshot and saying which calls each grant
//! covers, so that brokerd decides and `bxctl grants check` reports by exactly the same
//! rules. Pure over strings and the grant directory: nothing here decides or runs anything
//! (that is brokerd's policy), and no decision depends on what the file system looks like.
//!
//! - [`Snapshot`]: every grant file, parsed by `proto`, validated, hashed;
//! - [`constraints`]: what `paths`, `hosts` and `patterns` mean for each tool, and where a
//!   host name may lead;
//! - [`unitpath`]: which paths systemd may be given in a tool unit's properties;
//! - [`writes`]: what the grants reaching a place say of it, and the rule a write there
//!   obeys (no write down, integrity).

pub mod constraints;
mod snapshot;
pub mod unitpath;
pub mod writes;

pub use snapshot::{GrantsError, Snapshot};
