//! bxctl: the owner's command line. It talks to brokerd's admin socket (approvals,
//! queries) and reads the audit log and grant files directly, with the same code brokerd
//! uses (`proto`'s chain verifier, the grant loader).
//!
//! Text from the model, tools and peers never reaches the terminal raw: it is shown by
//! `inert`'s rule (single-line fields escaped, multi-line text set apart as a
//! block whose every line starts with `| `), the rule gatewayd shows Mattermost by.
//!
//! Exit codes: 0 success; 1 the thing checked is bad (a broken chain, a bad grant, a
//! refused answer); 2 bxctl could not do what was asked (no config, no socket).

mod admin;
mod audit;
mod chat;
mod dev;
mod error;
mod hint;
mod policy;
mod signals;
mod spinner;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use daemon::config::{Config, DEFAULT_PATH};
use proto::SessionId;

#[derive(Debug, clap::Parser)]
#[command(name = "bxctl", version, about = "boxmaker's owner command line")]
pub struct Cli {
    /// The configuration file (for the socket and state paths).
    #[arg(
        long,
        global = true,
        value_name = "PATH",
        env = "BOXMAKER_CONFIG",
        default_value = DEFAULT_PATH
    )]
    pub config: PathBuf,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Grant files.
    #[command(subcommand)]
    Grants(GrantsCmd),
    /// List the approvals waiting for you.
    Approvals,
    /// Approve one waiting tool call.
    Approve { approval: String },
    /// Deny one waiting tool call.
    Deny { approval: String },
    /// Show what brokerd knows of a session: its taint and untrusted flag.
    Session { session: String },
    /// The audit log.
    #[command(subcommand)]
    Audit(AuditCmd),
    /// Chat with the agent: a prompt, or one message with -m.
    Chat {
        /// Send this one message, print the reply, and exit.
        #[arg(short, long)]
        message: Option<String>,
        /// Continue this session (default: a new one).
        #[arg(long)]
        session: Option<String>,
    },
    /// List the sessions, or show one.
    Sessions { session: Option<String> },
    /// Start the whole stack under .state/ (no root, no systemd) and chat with it.
    Dev(dev::DevArgs),
}

#[derive(Debug, clap::Subcommand)]
pub enum GrantsCmd {
    /// Check a grants directory with brokerd's own loader, without starting anything.
    Check {
        /// Default: the directory the configuration names.
        dir: Option<PathBuf>,
    },
    /// Show the grant snapshot brokerd is using.
    Show,
}

#[derive(Debug, clap::Subcommand)]
pub enum AuditCmd {
    /// Check the whole hash chain from the stored bytes; name the first bad file and line.
    Verify {
        /// Default: `audit/` under the configured home.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Print the audit records for a person.
    Show {
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Print the stored lines as they are.
        #[arg(long, conflicts_with = "policy_at")]
        json: bool,
        /// Print instead the grants in force when record SEQ was written, each as the
        /// canonical text the audit recorded.
        #[arg(long, value_name = "SEQ")]
        policy_at: Option<u64>,
    },
}

pub use crate::error::{DevError, Error};

pub fn run(cli: Cli, out: &mut dyn Write) -> Result<ExitCode, Error> {
    let config = || {
        if !cli.config.exists() {
            return Err(Error::NoConfig {
                path: cli.config.clone(),
                from: hint::config_source(&cli.config),
            });
        }
        Config::load(&cli.config).map_err(Error::Config)
    };
    // How to call bxctl again for this same stack, for the hints bxctl prints.
    let bxctl = hint::bxctl(&cli.config);
    match cli.command {
        Command::Grants(GrantsCmd::Check { dir }) => {
            let dir = match dir {
                Some(d) => d,
                None => config()?.grants,
            };
            match grants::Snapshot::load(&dir) {
                Ok(s) => {
                    writeln!(
                        out,
                        "{}: {} grants good ({}), snapshot {}",
                        dir.display(),
                        s.ids().len(),
                        s.ids().join(", "),
                        s.hash()
                    )
                    .map_err(Error::Output)?;
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) => {
                    writeln!(out, "{e}").map_err(Error::Output)?;
                    Ok(ExitCode::from(1))
                }
            }
        }
        Command::Grants(GrantsCmd::Show) => admin::grants(&config()?, out),
        Command::Approvals => admin::approvals(&config()?, &bxctl, out),
        Command::Approve { approval } => admin::answer(&config()?, &approval, true, out),
        Command::Deny { approval } => admin::answer(&config()?, &approval, false, out),
        Command::Session { session } => admin::session(&config()?, &session, out),
        Command::Audit(AuditCmd::Verify { dir }) => {
            let dir = match dir {
                Some(d) => d,
                None => config()?.audit_dir(),
            };
            audit::verify(&dir, out)
        }
        Command::Chat { message, session } => {
            let session = session
                .map(SessionId::new)
                .transpose()
                .map_err(Error::SessionId)?;
            let config = config()?;
            let interrupt = std::sync::Arc::new(signals::Interrupt::default());
            signals::watch(interrupt.clone(), || {}).map_err(DevError::Signals)?;
            match message {
                Some(text) => chat::once(&config, &bxctl, session, &text, &interrupt, out),
                None => chat::interactive(&config, &bxctl, session, &interrupt, out),
            }
        }
        Command::Dev(args) => dev::run(&args, out),
        Command::Sessions { session } => {
            let session = session
                .map(SessionId::new)
                .transpose()
                .map_err(Error::SessionId)?;
            chat::sessions(&config()?, session, out)
        }
        Command::Audit(AuditCmd::Show {
            dir,
            json,
            policy_at,
        }) => {
            let dir = match dir {
                Some(d) => d,
                None => config()?.audit_dir(),
            };
            match policy_at {
                Some(seq) => policy::show_at(&dir, seq, out),
                None => audit::show(&dir, json, out),
            }
        }
    }
}
