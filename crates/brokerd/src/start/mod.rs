//! Start-up, reload and shutdown, through `daemon::service`.
//!
//! The inherited sockets are taken before any thread starts; the configuration and the
//! grants are checked (`--check-config` stops there); the audit log is locked, verified and
//! what it holds rebuilt (`restore`); the session state, the notes, the context and the MCP
//! servers' pins opened;
//! every listening side bound (`sockets::listen`) and the link to gatewayd started; READY is
//! sent only once every side serves. SIGHUP reloads the grants; SIGTERM denies what waits
//! for the owner, drains the requests in flight and waits a little for gatewayd to show
//! their outcomes. What a new part needs at start is opened here.

use std::os::unix::fs::DirBuilderExt;
use std::sync::Arc;
use std::time::Duration;

use config::{Config, RunnerKind};
use daemon::listen::Inherited;
use daemon::service::{Halt, Service};
use daemon::{CommonArgs, log};

pub mod restore;

use crate::Error;
use crate::audit::AuditLog;
use crate::broker::Broker;
use crate::context::accounting::{self, Accounting};
use crate::context::witness;
use crate::jobs;
use crate::notes::Notes;
use crate::run::programs::Programs;
use crate::run::runner::{DirectRunner, Runner, SystemdRunner};
use crate::sessions::Sessions;
use crate::sockets;
use grants::Snapshot;

#[derive(Debug, clap::Parser)]
#[command(name = "brokerd", version, about = "boxmaker's policy point")]
pub struct Args {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Print the transient unit a grant's tool runs get (for systemd-analyze security).
    #[arg(long, value_name = "GRANT_ID")]
    pub print_tool_unit: Option<String>,
    /// Print what the grants let a hostile model do without asking (docs/verify.md) and
    /// exit: reads the configuration and the grants, opens no socket.
    #[arg(long)]
    pub flows: bool,
    /// With `--flows`: one line of JSON (`flows_report`'s body) instead.
    #[arg(long, requires = "flows")]
    pub json: bool,
}

/// `--flows`: the analysis of the grants as they are on disk, at this moment.
fn flows(config: &Config, snapshot: &Snapshot, json: bool) -> Result<(), Error> {
    use crate::policy::flows;
    let setting = flows::Setting::of(config);
    let report =
        flows::report(snapshot, &setting, proto::Timestamp::now()).map_err(Error::Flows)?;
    let text = if json {
        let mut line = serde_json::to_string(&report).expect("a report always encodes");
        line.push('\n');
        line
    } else {
        flows::text(&report)
    };
    std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes()).map_err(Error::Stdout)
}

/// How long shutdown waits for requests in flight to finish their writes.
const DRAIN: Duration = Duration::from_secs(20);
/// How long shutdown then waits for gatewayd to show the outcomes queued for it.
const FLUSH: Duration = Duration::from_secs(5);

pub fn run(args: Args) -> Result<(), Error> {
    // First, before any thread exists: listenfd clears LISTEN_FDS as it reads them.
    let inherited = Inherited::from_env().map_err(Error::Inherit)?;
    let config = Config::load(&args.common.config).map_err(Error::Config)?;
    let snapshot = Snapshot::load(&config.grants).map_err(Error::Grants)?;
    jobs::check(&config, &snapshot).map_err(Error::JobGrants)?;
    // A consult URL the tool unit would refuse fails the start, not every consult; and the
    // flows analysis then never reports a consult brokerd cannot make (docs/decisions.md V36).
    if let Some(c) = &config.broker.consult {
        grants::constraints::normalize_url(&c.url).map_err(Error::ConsultUrl)?;
    }
    if args.flows {
        return flows(&config, &snapshot, args.json);
    }
    // The programs run grants name, and what every write must keep (H11, H13).
    let programs = Programs::open(&config).map_err(Error::Hands)?;
    programs.check(&config, &snapshot).map_err(Error::Hands)?;
    if config.peers.infer.is_none() {
        return Err(Error::NoInferPeer);
    }
    // Every pin the configuration's servers have: one that does not read refuses the start.
    let pins = crate::pins::Pins::load(&config).map_err(Error::Pins)?;
    if args.common.check_config {
        let mut out = std::io::stdout().lock();
        let line = format!(
            "{}: good; {} grants ({}), snapshot {}\n",
            args.common.config.display(),
            snapshot.ids().len(),
            snapshot.ids().join(", "),
            snapshot.hash()
        );
        return std::io::Write::write_all(&mut out, line.as_bytes()).map_err(Error::Stdout);
    }
    let runner = runner(&config);
    if let Some(id) = &args.print_tool_unit {
        let unit = crate::run::tool_spec::print_unit(&config, &runner, &snapshot, id)
            .map_err(Error::ToolUnit)?;
        return std::io::Write::write_all(&mut std::io::stdout().lock(), unit.as_bytes())
            .map_err(Error::Stdout);
    }

    // The audit log's lock first: a second brokerd stops there, before it opens anything.
    let locked = AuditLog::lock(&config.audit_dir()).map_err(Error::AuditOpen)?;
    let (store, opened) =
        witness::Store::open(&config.witness_dir(), config.broker.max_witness_records)
            .map_err(Error::Witness)?;
    // The log verified from its checkpoint; the calls used marked again from the
    // checkpoint and the decisions' audit lines past it (W9), the denials of the kept
    // reports' calls accounted again (X8), and a new checkpoint written (A8).
    let restored = restore::restore(
        locked,
        Box::new(proto::Timestamp::now),
        store,
        opened.kept,
        || open_accounting(&config),
    )?;
    restored.log(opened.torn);
    let restore::Restored {
        audit,
        store,
        accounting,
        ..
    } = restored;
    let sessions = Sessions::open(&config.broker_state_dir(), &config.session_labels_dir())
        .map_err(Error::Sessions)?;
    let notes = Notes::open(
        config.notes_dir(),
        &config.note_state_dir(),
        &config.index_dir(),
    )
    .map_err(Error::Notes)?;
    let witness = witness::Witness::new(store, config.broker.witness_wait);
    let core_file = config.core_memory_path();
    let broker = Arc::new(Broker::new(
        config,
        snapshot,
        audit,
        sessions,
        runner,
        notes,
        crate::context::Attested::new(witness, accounting, core_file),
        pins,
        programs,
    ));
    broker
        .audit_first_snapshot()
        .map_err(Error::FirstSnapshot)?;

    let mut service = Service::new("brokerd", inherited);
    // A thread whose durable state fails stops brokerd through this; `main` exits 70.
    let halt = service.halt();
    // Every listening side the configuration has, bound before READY.
    sockets::listen(&mut service, &broker, &halt)?;
    // The link to gatewayd, when one is configured: brokerd is its client.
    if let Some(outbox) = broker.outbox.take() {
        let (b, halt) = (broker.clone(), halt.clone());
        service.thread("gateway", move || sockets::gateway::run(&b, &outbox, &halt));
    }
    // Pinged while the audit writer, the heart of the broker, and the witness store every
    // call goes through can be reached.
    let b = broker.clone();
    service.watchdog(move || b.audit_alive() && b.context.alive());
    let b = broker.clone();
    service.reload(move || reload(&b, &halt));
    service.drain(DRAIN);
    let (b, after) = (broker.clone(), broker.clone());
    service.around_drain(
        move || {
            // No call is left waiting on an owner who can no longer answer (new
            // connections are refused from now on): each is denied, audited and answered
            // before the drain ends.
            let denied = b.stop_approvals();
            log::info(format_args!(
                "stopping: {denied} calls waiting for the owner denied; waiting for requests in flight"
            ));
        },
        move || {
            let left = after.outbox.flush(FLUSH);
            if left > 0 {
                log::warn(format_args!(
                    "stopping: {left} outcomes not shown on Mattermost (gatewayd did not take them)"
                ));
            }
        },
    );
    Ok(service.run(&crate::broker::status::serving(&broker.snapshot()))?)
}

/// The accounting in `accounting/records.jsonl` (the directory made 0700 if missing).
fn open_accounting(config: &Config) -> Result<Accounting, Error> {
    let dir = config.accounting_dir();
    let made = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir);
    made.map_err(|source| {
        Error::Accounting(accounting::LogError::Io {
            path: dir.clone(),
            error: source,
        })
    })?;
    let a = Accounting::open(
        &dir.join("records.jsonl"),
        accounting::DEFAULT_MAX_RECORDS,
        config.r#loop.max_tool_calls,
    )
    .map_err(Error::Accounting)?;
    log::info(format_args!(
        "accounting: {}, the highest label sent {}",
        a.path().display(),
        accounting::show(a.sent())
    ));
    Ok(a)
}

fn runner(config: &Config) -> Runner {
    let b = &config.broker;
    match b.runner {
        RunnerKind::Direct => Runner::Direct(DirectRunner::new(b.tool.clone())),
        RunnerKind::Systemd => Runner::Systemd(SystemdRunner {
            hands_user: b.hands_user.clone(),
            systemd_version: b.systemd_version,
            ..SystemdRunner::new(
                b.tool.clone(),
                b.sandbox_root.clone(),
                b.sandbox_binds.clone(),
            )
        }),
    }
}

/// SIGHUP: a new snapshot for later calls (`Broker::reload`); a reload that cannot be
/// audited stops brokerd (B10).
fn reload(broker: &Broker, halt: &Halt) {
    if let Err(fatal) = broker.reload() {
        halt.stop("the grants reload", fatal);
    }
}
