//! inferproxy's tests: the real binary against a scripted upstream; one module per concern.

mod config;
mod exit_status;
mod failures;
mod forward;
mod quiet;
mod refuse;
mod support;
mod witness;
