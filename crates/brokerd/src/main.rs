use clap::Parser;

fn main() -> std::process::ExitCode {
    match brokerd::run(brokerd::Args::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            daemon::log::error(format_args!("brokerd: {e}"));
            std::process::ExitCode::FAILURE
        }
    }
}
