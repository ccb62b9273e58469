//! loopd's integration tests, one binary with a module per concern: the binary on its own,
//! and the session log through its public API.

mod check_config;
mod store;
