//! gatewayd's exit statuses (docs/gateway.md): 0 when it stopped on SIGTERM or SIGINT, or
//! `--check-config` found the configuration good; 1 when it could not start or serve (the
//! configuration, the bot token, the durable state, the sockets; the reason is logged once);
//! 2 for a bad command line (clap's).

use clap::Parser;

fn main() -> std::process::ExitCode {
    match gatewayd::run(gatewayd::Args::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            daemon::log::error(format_args!("gatewayd: {e}"));
            std::process::ExitCode::from(e.exit_code())
        }
    }
}
