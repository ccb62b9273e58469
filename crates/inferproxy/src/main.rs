use clap::Parser;

/// Exit status: 0 after SIGTERM or SIGINT (or a good `--check-config`), 1 when the
/// configuration, the socket or the start failed (the reason is on stderr).
fn main() -> std::process::ExitCode {
    match inferproxy::run(inferproxy::Args::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            daemon::log::error(format_args!("inferproxy: {e}"));
            std::process::ExitCode::FAILURE
        }
    }
}
