use clap::Parser;

fn main() -> std::process::ExitCode {
    match gatewayd::run(gatewayd::Args::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            daemon::log::error(format_args!("gatewayd: {e}"));
            std::process::ExitCode::FAILURE
        }
    }
}
