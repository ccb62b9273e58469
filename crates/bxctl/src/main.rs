//! bxctl's binary: parses the command line, runs it, and ends with the command's own status
//! or, on an error, `bxctl: error` on stderr and the status `daemon::exit::Status` of
//! `bxctl::Error` gives (2: bxctl could not do what was asked; 1: the server refused the
//! request).

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = bxctl::Cli::parse();
    daemon::exit::finish_command("bxctl", bxctl::run(cli, &mut std::io::stdout().lock()))
}
