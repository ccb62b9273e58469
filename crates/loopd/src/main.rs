use clap::Parser;

fn main() -> std::process::ExitCode {
    match loopd::run(loopd::Args::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            daemon::log::error(format_args!("loopd: {e}"));
            std::process::ExitCode::FAILURE
        }
    }
}
