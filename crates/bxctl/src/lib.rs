//! bxctl: the owner's command line. It talks to brokerd's admin socket (approvals,
//! queries) and reads the audit log and grant files directly, with the same code brokerd
//! uses (`proto`'s chain verifier, the grant loader).
//!
//! Text from the model, tools and peers never reaches the terminal raw: it is shown by
//! `inert`'s rule (single-line fields escaped, multi-line text set apart as a
//! block whose every line starts with `| `), the rule gatewayd shows Mattermost by.
//!
//! Exit codes ([`EXIT_CODES`], shown by `bxctl --help`): 0 done; 1 a check failed or a
//! request was refused; 2 bxctl could not do what was asked (usage, I/O, no socket).

mod admin;
mod approval;
mod audit;
mod card;
mod chat;
mod check;
mod dev;
mod deverror;
mod error;
mod gateway;
mod hint;
mod history;
mod inline;
mod jobs;
mod loopconn;
mod mm;
mod mmview;
mod notes;
mod output;
mod owner;
mod policy;
mod sessions;
mod signals;
mod slash;
mod spinner;
mod status;
mod verify;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use config::Config;
use proto::SessionId;
use proto::approval::Verdict;

/// The exit codes, the same for every subcommand.
pub const EXIT_CODES: &str = "Exit codes:\n  \
    0  done\n  \
    1  a check failed (a broken audit chain, a bad grant, a stack not all up) or a request \
    was refused (an approval answer, an ambiguous approval prefix)\n  \
    2  bxctl could not do what was asked (usage, I/O, a socket it cannot reach)\n  \
    129, 130, 143  `bxctl dev` or `bxctl chat` stopped by SIGHUP, SIGINT or SIGTERM (128 + \
    the signal), after stopping the stack";

#[derive(Debug, clap::Parser)]
#[command(
    name = "bxctl",
    version,
    about = "boxmaker's owner command line",
    after_help = EXIT_CODES
)]
pub struct Cli {
    /// The configuration file (for the socket and state paths). Without it (or
    /// BOXMAKER_CONFIG): the first `.state/config.toml` in this directory or one above it
    /// (what `bxctl dev` writes), else /etc/boxmaker/config.toml.
    #[arg(long, global = true, value_name = "PATH", env = "BOXMAKER_CONFIG")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Grant files.
    #[command(subcommand)]
    Grants(GrantsCmd),
    /// List the approvals waiting for you.
    Approvals {
        #[arg(long)]
        json: bool,
    },
    /// Approve one waiting tool call: its id, or a unique prefix of at least 6 characters.
    Approve { approval: String },
    /// Deny one waiting tool call: its id, or a unique prefix of at least 6 characters.
    Deny { approval: String },
    /// Show what brokerd knows of a session: its taint and untrusted flag.
    Session {
        session: String,
        #[arg(long)]
        json: bool,
    },
    /// Each role's state, the model's health, waiting approvals, the audit head, the grants.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// The audit log.
    #[command(subcommand)]
    Audit(AuditCmd),
    /// Chat with the agent: a prompt, or one message with -m.
    Chat {
        /// Send this one message, print the reply, and exit.
        #[arg(short, long)]
        message: Option<String>,
        /// Continue this session, showing its last turns (default: a new one).
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Continue the most recently active session, showing its last turns.
        #[arg(long = "continue", short = 'c', conflicts_with = "session")]
        resume: bool,
    },
    /// List the sessions, or show one.
    Sessions {
        session: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// The scheduled jobs: schedule, last run and outcome, next run (exit 1 if a last run failed).
    Jobs {
        /// Print JSON instead.
        #[arg(long)]
        json: bool,
    },
    /// One scheduled job.
    #[command(subcommand)]
    Job(JobCmd),
    /// Start the whole stack under .state/ (no root, no systemd) and chat with it.
    Dev(dev::DevArgs),
    /// Mattermost for gatewayd.
    #[command(subcommand)]
    Gateway(GatewayCmd),
    /// Print shell completions for bxctl, generated from this command line.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print bxctl's man page (roff), generated from this command line; with --dir, write
    /// bxctl.1 and a page per subcommand (bxctl-dev.1, ...) there instead.
    Man {
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// `bxctl dev`'s own: runs PROGRAM as a child that stops when its bxctl does.
    #[command(name = "dev-exec", hide = true)]
    DevExec {
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        program: Vec<std::ffi::OsString>,
    },
    /// The agent's notes and the labels brokerd keeps for them.
    #[command(subcommand)]
    Notes(NotesCmd),
    /// Check the live deployment: the model server, the units, the audit log, grants and
    /// approvals (docs/verify.md). Exit 1 when a check failed, 2 when some could not be made.
    Verify(verify::VerifyArgs),
    /// Search every note (full-text, FTS5 query syntax), each hit with its label.
    Search {
        query: String,
        /// Print JSON instead: `{"hits": [{"name", "snippet", "class", "untrusted"}]}`.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, clap::Subcommand)]
pub enum NotesCmd {
    /// Every file in the notes directory with the label a read of it takes.
    List {
        #[arg(long)]
        json: bool,
    },
    /// One note's label, where it came from, and its text.
    Show {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Give a note the label you say, bound to the bytes it holds now (audited).
    Relabel {
        name: String,
        /// public, private or secret.
        #[arg(long, value_parser = parse_class)]
        class: proto::DataClass,
        /// Keep the note flagged untrusted (it may steer the model).
        #[arg(long)]
        untrusted: bool,
        #[arg(long)]
        json: bool,
    },
}

fn parse_class(text: &str) -> Result<proto::DataClass, String> {
    serde_json::from_value(serde_json::Value::String(text.to_owned()))
        .map_err(|_| format!("{text:?} is not public, private or secret"))
}

#[derive(Debug, clap::Subcommand)]
pub enum GrantsCmd {
    /// Check a grants directory with brokerd's own loader, without starting anything.
    Check {
        /// Default: the directory the configuration names.
        dir: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Show the grant snapshot brokerd is using.
    Show {
        #[arg(long)]
        json: bool,
    },
    /// Ask brokerd to load the grants directory again, and say what came of it.
    Reload {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, clap::Subcommand)]
pub enum GatewayCmd {
    /// Find the ids gatewayd needs by their names (the bot's token, the owner's user name,
    /// TEAM/CHANNEL) and print the NixOS module's `services.boxmaker.gateway`.
    Setup(gateway::SetupArgs),
}

#[derive(Debug, clap::Subcommand)]
pub enum JobCmd {
    /// Run the job now and wait for it: starts its unit (under `bxctl dev`, its runner).
    Run {
        name: String,
        /// Print JSON instead: `{"job", "outcome"}` (`done`, `failed`, `not_started`).
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, clap::Subcommand)]
pub enum AuditCmd {
    /// Check the whole hash chain from the stored bytes, and brokerd's checkpoint against
    /// them; name the first bad file and line.
    Verify {
        /// Default: `audit/` under the configured home.
        #[arg(long, conflicts_with = "brokerd")]
        dir: Option<PathBuf>,
        /// Ask brokerd to verify its whole chain instead, and to write its checkpoint at the
        /// end (the daily timer's check; a failure is also in brokerd's journal and, with
        /// the gateway on, posted on Mattermost).
        #[arg(long)]
        brokerd: bool,
        #[arg(long)]
        json: bool,
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

/// The session a chat starts from: `--session ID`, `--continue`, or a new one.
pub(crate) fn chat_start(session: Option<String>, resume: bool) -> Result<chat::Start, Error> {
    Ok(match session {
        Some(id) => chat::Start::Session(SessionId::new(id).map_err(Error::SessionId)?),
        None if resume => chat::Start::Latest,
        None => chat::Start::New,
    })
}

pub fn run(cli: Cli, out: &mut dyn Write) -> Result<ExitCode, Error> {
    let (config_path, from) = hint::find_config(cli.config.clone());
    let config = || {
        if !config_path.exists() {
            return Err(Error::NoConfig {
                path: config_path.clone(),
                from,
            });
        }
        Config::load(&config_path).map_err(Error::Config)
    };
    // How to call bxctl again for this same stack, for the hints bxctl prints.
    let bxctl = hint::bxctl(&config_path);
    match cli.command {
        Command::Grants(GrantsCmd::Check { dir, json }) => {
            let (dir, from) = match dir {
                Some(d) => (d, "given"),
                None => (config()?.grants, "the configuration's `grants`"),
            };
            check::grants(&dir, from, json, out)
        }
        Command::Grants(GrantsCmd::Show { json }) => admin::grants(&config()?, json, out),
        Command::Grants(GrantsCmd::Reload { json }) => status::reload(&config()?, json, out),
        Command::Approvals { json } => admin::approvals(&config()?, &bxctl, json, out),
        // A prefix too short is said before anything else is looked at.
        Command::Approve { approval } => approval::long_enough(&approval)
            .and_then(|()| approval::answer(&config()?, &approval, Verdict::Approve, out)),
        Command::Deny { approval } => approval::long_enough(&approval)
            .and_then(|()| approval::answer(&config()?, &approval, Verdict::Deny, out)),
        Command::Session { session, json } => admin::session(&config()?, &session, json, out),
        Command::Status { json } => status::status(&config()?, json, out),
        Command::Audit(AuditCmd::Verify {
            brokerd: true,
            json,
            ..
        }) => audit::verify_by_brokerd(&config()?, json, out),
        Command::Audit(AuditCmd::Verify { dir, json, .. }) => {
            let dir = match dir {
                Some(d) => d,
                None => config()?.audit_dir(),
            };
            audit::verify(&dir, json, out)
        }
        Command::Chat {
            message,
            session,
            resume,
        } => {
            let start = chat_start(session, resume)?;
            let config = config()?;
            let interrupt = std::sync::Arc::new(signals::Interrupt::default());
            signals::watch(interrupt.clone(), || {}).map_err(DevError::Signals)?;
            match message {
                Some(text) => chat::once(&config, &bxctl, start, &text, &interrupt, out),
                None => {
                    let resume = format!("{bxctl}chat --session ");
                    chat::interactive(&config, &bxctl, &resume, start, &interrupt, out)
                }
            }
        }
        Command::Dev(args) => dev::run(&args, out),
        Command::DevExec { program } => dev::exec(&program),
        Command::Gateway(GatewayCmd::Setup(args)) => {
            let text = gateway::setup(&args).map_err(|e| Error::Setup(Box::new(e)))?;
            out.write_all(text.as_bytes()).map_err(Error::Output)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            // Into memory first: the generator panics on a write error (a closed pipe).
            let mut text = Vec::new();
            clap_complete::generate(shell, &mut cmd, "bxctl", &mut text);
            out.write_all(&text).map_err(Error::Output)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { dir } => {
            let cmd = <Cli as clap::CommandFactory>::command();
            match dir {
                Some(dir) => clap_mangen::generate_to(cmd, &dir).map_err(|source| Error::File {
                    path: dir,
                    error: source,
                })?,
                None => clap_mangen::Man::new(cmd)
                    .render(out)
                    .map_err(Error::Output)?,
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Notes(NotesCmd::List { json }) => notes::list(&config()?, json, out),
        Command::Notes(NotesCmd::Show { name, json }) => notes::show(&config()?, &name, json, out),
        Command::Notes(NotesCmd::Relabel {
            name,
            class,
            untrusted,
            json,
        }) => notes::relabel(&config()?, &name, class, untrusted, json, out),
        Command::Verify(args) => match &args.probe_infer {
            Some(sock) => verify::probe(sock, out),
            None => verify::run(&config()?, &config_path, &args, out),
        },
        Command::Search { query, json } => notes::search(&config()?, &query, json, out),
        Command::Jobs { json } => jobs::list(&config()?, json, out),
        Command::Job(JobCmd::Run { name, json }) => {
            jobs::run(&config()?, &config_path, &name, json, out)
        }
        Command::Sessions { session, json } => {
            let session = session
                .map(SessionId::new)
                .transpose()
                .map_err(Error::SessionId)?;
            sessions::sessions(&config()?, session, json, out)
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
