//! gatewayd's binary: parses the arguments, runs [`gatewayd::run`], prints its error once
//! and exits with its status (`daemon::exit::Status` of `gatewayd::Error`;
//! docs/architecture.md, "Exit statuses", and docs/gateway.md):
//!
//! | status | when |
//! |---|---|
//! | 0 | stopped by SIGTERM or SIGINT, or `--check-config` found the configuration good |
//! | 1 | did not start or serve: the configuration (no `[gateway]`, no `peers.broker`), the bot token, the durable state, the sockets, or the start of serving; or `--check-config` could not write |
//! | 2 | the command line is not understood (clap) |

use clap::Parser;

fn main() -> std::process::ExitCode {
    // Under `bxctl dev --mattermost` and the hostile self-test's shadow: stopped with bxctl.
    daemon::parent::follow();
    daemon::exit::finish("gatewayd", gatewayd::run(gatewayd::Args::parse()))
}
