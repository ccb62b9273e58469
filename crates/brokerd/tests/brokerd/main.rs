//! brokerd's integration tests, one binary with a module per concern: the binary on its
//! own, and each public part of the library through its public API.

mod accounting;
mod approvals;
mod audit;
mod bind;
mod check_config;
mod denials;
mod exit_code;
mod flows;
mod flows_text;
mod jobs;
mod notes;
mod policy;
mod restore;
mod runner;
mod sessions;
mod witness;
