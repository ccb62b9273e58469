//! boxmaker-indexer's binary (docs/memory.md, "Search"): its error printed once, and the
//! status `daemon::exit::Status` of `indexer::Error` gives:
//!
//! | status | when |
//! |---|---|
//! | 0 | indexed what had changed (or, `--watch`, stopped by a signal); or `--check-config` found the configuration good |
//! | 1 | the configuration, or the index could not be read or written (a full disk): nothing is lost, the next run goes on |
//! | 2 | the command line is not understood (clap) |

use clap::Parser;

fn main() -> std::process::ExitCode {
    daemon::parent::follow();
    daemon::exit::finish("boxmaker-indexer", indexer::run(&indexer::Args::parse()))
}
