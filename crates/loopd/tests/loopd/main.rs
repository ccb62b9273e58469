//! loopd's integration tests, one binary with a module per concern: the binary on its own,
//! its exit statuses, and the session log through its public API.

mod check_config;
mod exit_status;
mod store;
