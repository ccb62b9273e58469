//! inferproxy's binary: parses the arguments, runs [`inferproxy::run`], prints its error
//! once and exits with its status (`daemon::exit::Status` of `inferproxy::Error`;
//! docs/architecture.md, "Exit statuses"):
//!
//! | status | when |
//! |---|---|
//! | 0 | stopped by SIGTERM or SIGINT, or `--check-config` found the configuration good |
//! | 1 | did not start: the configuration, infer.sock (inherited or bound), or the start of serving; or `--check-config` could not write |
//! | 2 | the command line is not understood (clap) |
//!
//! A request that fails never ends the process: it is answered (or cut) on its connection.

use clap::Parser;

fn main() -> std::process::ExitCode {
    daemon::parent::follow();
    daemon::exit::finish("inferproxy", inferproxy::run(inferproxy::Args::parse()))
}
