//! `bxctl verify`: the live deployment checked against what the tests assumed (issue 27
//! point 1, docs/verify.md). Three parts, each a list of checks:
//!
//! - `model`: llama-server as loopd reaches it through inferproxy, its `/props`, inferproxy's
//!   refusal of `/slots*`, and a short replay through the whole stack measuring the prefill
//!   each request wastes (`model`, `slots`, `replay`);
//! - `units`: under systemd, every boxmaker unit's `systemd-analyze security` exposure within
//!   its limit and its effective properties (`systemctl show`) equal to what the module
//!   generated (`units.json` beside the configuration) (`units`);
//! - `state`: the audit chain and its checkpoint, the grants on disk against the grants
//!   loaded, the approvals waiting (`state`);
//! - `flows`: what the grants let a hostile model do without asking, as brokerd's policy
//!   computes it (`flows`).
//!
//! Each check is one line, `ok`, `warn` or `FAIL`, with what to do; whatever a peer or a
//! unit file said is shown inert. A part is a function from what it needs to its checks, so
//! another part (the flows of issue 27 point 2) joins by adding itself to [`Part`] and
//! [`run`]'s list.

mod access;
mod alert;
mod flows;
mod hostile;
mod model;
mod normal;
mod props;
mod replay;
mod report;
mod slots;
mod state;
mod systemd;
mod units;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use config::Config;

use crate::Error;
pub use report::Part;

/// `bxctl verify`'s arguments.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// Verify only these parts (`bxctl verify flows`); the same as `--only`.
    #[arg(value_name = "PART")]
    pub parts: Vec<Part>,
    /// Print one line of JSON instead: `{"good", "ok", "warn", "fail", "checks": [...]}`.
    #[arg(long)]
    pub json: bool,
    /// Verify only these parts (comma-separated; default: all).
    #[arg(long, value_delimiter = ',', value_name = "PART")]
    pub only: Vec<Part>,
    /// What the module generated: each unit's exposure limit and properties (default:
    /// `units.json` beside the configuration file).
    #[arg(long, value_name = "PATH")]
    pub units: Option<PathBuf>,
    /// Leave out the replay through the stack (it sends the model a few short turns, in a
    /// session of its own).
    #[arg(long)]
    pub no_replay: bool,
    /// With a FAIL, hand the FAIL lines to brokerd, which audits them and, with the
    /// gateway on, posts them in the owner's channel (the NixOS timer passes it).
    #[arg(long)]
    pub alert: bool,
    /// Run the live hostile self-test instead of the other parts: a shadow stack in a
    /// scratch directory plays a hostile model against your grants moved onto canaries,
    /// its egress led to a local sink, and compares what leaked with the flows analysis.
    #[arg(long, conflicts_with_all = ["parts", "only", "units", "no_replay", "alert"])]
    pub hostile: bool,
    /// With --hostile: compare with this flows report (`brokerd --flows --json`) instead of
    /// the shadow brokerd's own analysis (a test plants a mistake here).
    #[arg(long, value_name = "FILE", requires = "hostile")]
    pub analysis: Option<PathBuf>,
    /// Ask inferproxy at SOCK for `/slots*` and print its answers as JSON (what the
    /// transient unit root starts as loopd's user runs).
    #[arg(long, hide = true, value_name = "SOCK", exclusive = true)]
    pub probe_infer: Option<PathBuf>,
}

/// `bxctl verify --probe-infer SOCK` (`slots.rs`).
pub fn probe(sock: &Path, out: &mut dyn Write) -> Result<ExitCode, Error> {
    slots::probe_main(sock, out).map_err(Error::Output)?;
    Ok(ExitCode::SUCCESS)
}

/// Runs the parts asked for and prints their checks. Exit 0 when nothing failed, 1 when a
/// check failed, 2 when nothing failed but some checks could not be made by this user
/// (a socket closed to it): it verified less than was asked.
pub fn run(
    config: &Config,
    config_path: &Path,
    args: &VerifyArgs,
    out: &mut dyn Write,
) -> Result<ExitCode, Error> {
    // The hostile self-test runs alone: it starts a stack of its own.
    let wanted = |p: Part| {
        !args.hostile
            && (args.only.is_empty() && args.parts.is_empty()
                || args.only.contains(&p)
                || args.parts.contains(&p))
    };
    let mut checks = Vec::new();
    if args.hostile {
        checks.extend(hostile::checks(config, args.analysis.as_deref()));
    }
    if wanted(Part::Model) {
        checks.extend(model::checks(config, !args.no_replay));
    }
    if wanted(Part::Units) {
        let expected = args
            .units
            .clone()
            .unwrap_or_else(|| units::beside(config_path));
        checks.extend(units::checks(config, &expected));
    }
    if wanted(Part::State) {
        checks.extend(state::checks(config));
    }
    if wanted(Part::Flows) {
        checks.extend(flows::checks(config));
    }
    report::print(&checks, args.json, out)?;
    if args.alert {
        alert::send(config, &checks);
    }
    Ok(ExitCode::from(report::exit_code(&checks)))
}
