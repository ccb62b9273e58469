//! `fake-llama-server`: see the `fake_llama_server` crate docs and docs/fake-llama-server.md.

use clap::Parser;
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = fake_llama_server::Cli::parse();
    match fake_llama_server::run(&cli, &mut std::io::stdout().lock()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "fake-llama-server: {e}");
            ExitCode::from(2)
        }
    }
}
