//! daemon's integration tests, one binary with a module per concern, each through the
//! crate's public API. Unit tests stay in `src/` only where they need private items
//! (`keyed`, `service`, one in `serve`, and the config's).

mod accept;
mod conn;
mod durable;
mod listen;
mod peer;
mod serve;
