//! The broker: the parts it owns, and what a request does with them.
//!
//! The parts: the grants in force (`in_force`), the audit writer, each session's state, the
//! approval desk, the runner, the outbox to gatewayd and the status board (`board`), the
//! notes, the job runs, the context (`context::Attested`). The life of one tool request
//! through them: validate, decide, audit, maybe ask the owner (`ask`), run (`run`), raise
//! the session (`label`), answer; every decision is on disk before its answer leaves. And
//! what the other requests do across the parts: a job's note (`job_note`), the reload and
//! the status (`status`), the full verification of the audit log (`audit_verify`), a failed
//! verification's alert (`verify_alert`). The
//! sockets (`crate::sockets`) reach it from outside. A new tool changes nothing here but its
//! arguments' labels; a new kind of request is a method in a file of its own here.

use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use config::Config;
use daemon::keyed::KeyedLocks;
use daemon::lock;
use proto::approval::{ApprovalCard, CallRef};
use proto::tools::ToolArgs;
use proto::{
    AuditLine, AuditRecord, Envelope, Message, SessionId, Timestamp, ToolRequest, ToolResponse,
};

mod ask;
pub mod audit_verify;
pub mod board;
mod hands;
pub mod in_force;
mod job_note;
mod label;
mod mcp;
mod mcp_owner;
mod run;
pub mod status;
mod verify_alert;

use crate::Fatal;
use crate::ask::desk::Desk;
use crate::ask::outbox::Outbox;
use crate::audit::AuditLog;
use crate::broker::in_force::GrantsInForce;
use crate::context::Attested;
use crate::jobs::{Runs, Scope};
use crate::notes::Notes;
use crate::policy::{self, Labels, Outcome};
use crate::run::programs::Programs;
use crate::run::runner::Runner;
use crate::sessions::{SessionState, Sessions};
use grants::Snapshot;

#[derive(Debug)]
pub struct Broker {
    pub config: Config,
    grants: GrantsInForce,
    pub(crate) audit: Mutex<AuditLog>,
    sessions: Mutex<Sessions>,
    desk: Desk,
    runner: Runner,
    /// One lock per session: a session's calls are decided and run one at a time, so a
    /// call is never decided on a taint that a concurrent call of the same session is
    /// about to raise.
    pub(crate) session_locks: KeyedLocks<SessionId>,
    /// To gatewayd, when `[gateway]` is configured: cards to post, outcomes to show.
    pub(crate) outbox: Outbox,
    /// The failed verification's alert that waits for gatewayd, and when the last went.
    pub(crate) verify_slot: crate::ask::verify_slot::VerifySlot,
    /// The last reload and the link to gatewayd, for `bxctl status`.
    pub(crate) board: board::Board,
    /// The notes brokerd owns, and their labels.
    pub(crate) notes: Notes,
    /// The job runs in progress, each with the session brokerd minted for it.
    pub(crate) runs: Runs,
    /// What brokerd knows of the context a call came from: what inferproxy witnessed (only
    /// those calls run, each once) and the labels of what loopd may send the model.
    pub(crate) context: Attested,
    /// The MCP servers, their pins and what the model is offered.
    pub(crate) pins: crate::pins::Pins,
    /// The programs `run` grants name (`broker.programs`).
    pub(crate) programs: Programs,
}

impl Broker {
    // Each argument is a part brokerd's start opened on its own, with its own error.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        config: Config,
        snapshot: Snapshot,
        audit: AuditLog,
        sessions: Sessions,
        runner: Runner,
        notes: Notes,
        context: Attested,
        pins: crate::pins::Pins,
        programs: Programs,
    ) -> Self {
        let desk = Desk::new(config.broker.max_pending_approvals);
        let outbox = Outbox::new(config.gateway.is_some());
        let board = board::Board::new(config.gateway.is_some());
        Self {
            config,
            grants: GrantsInForce::new(snapshot),
            audit: Mutex::new(audit),
            sessions: Mutex::new(sessions),
            desk,
            runner,
            session_locks: KeyedLocks::default(),
            outbox,
            verify_slot: crate::ask::verify_slot::VerifySlot::default(),
            board,
            notes,
            runs: Runs::default(),
            context,
            pins,
            programs,
        }
    }

    /// The owner's `note_relabel` (`Notes::relabel`), asked by `by`. `Ok(Err)`: refused.
    pub(crate) fn relabel_note(
        &self,
        r: &proto::notes::NoteRelabel,
        by: &str,
    ) -> Result<Result<proto::notes::NoteRelabelled, crate::notes::NoteError>, Fatal> {
        Ok(self.notes.relabel(r, by, &self.audit)?)
    }

    /// A channel handed loopd the owner's message of `digest` (`ChatMessage::user`'s): it
    /// is on disk, private and trusted, before the channel is told.
    pub(crate) fn register_owner(&self, digest: proto::Hash32) -> Result<(), Fatal> {
        self.context.owner(digest).map_err(Fatal::Accounting)
    }

    /// Appends one audit line (a job run's start or end, say), fsynced.
    pub(crate) fn audit_event(
        &self,
        build: impl FnOnce(u64, Timestamp, proto::Hash32) -> AuditLine,
    ) -> Result<(), Fatal> {
        lock(&self.audit).append(build)?;
        Ok(())
    }

    /// Every approval waiting for the owner.
    pub(crate) fn pending_cards(&self) -> Vec<ApprovalCard> {
        self.desk.list()
    }

    pub(crate) fn is_pending(&self, approval: &str) -> bool {
        self.desk.is_pending(approval)
    }

    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.grants.current()
    }

    /// Makes `snapshot` the policy for later calls, after auditing it (`GrantsInForce::install`).
    pub fn install(&self, snapshot: Snapshot) -> Result<(), Fatal> {
        self.grants.install(snapshot, &self.audit)
    }

    /// Audits the snapshot brokerd started with, the text of every grant in full.
    pub fn audit_first_snapshot(&self) -> Result<(), Fatal> {
        self.grants.audit_first(&self.audit)
    }

    /// Audits a reload that did not load (`reason`): the snapshot in force stays.
    pub fn refuse_reload(&self, reason: &str) -> Result<(), Fatal> {
        self.grants.refuse(reason, &self.audit)
    }

    /// The seq and hash the next audit line takes.
    pub fn audit_head(&self) -> proto::chain::ChainHead {
        lock(&self.audit).head()
    }

    /// Whether the audit writer can be reached: free, or freed within a second (a write
    /// and its fsync). A writer stuck longer means the broker is wedged.
    pub fn audit_alive(&self) -> bool {
        daemon::reachable(&self.audit, Duration::from_secs(1))
    }

    pub fn session_state(&self, session: &SessionId) -> SessionState {
        lock(&self.sessions).get(session)
    }

    /// Serves one tool request from loopd. `send` writes one frame to the peer;
    /// `requester` is the peer's connection, watched for a hang-up while an approval waits.
    pub fn tool_request(
        &self,
        id: u64,
        req: &ToolRequest,
        requester: Option<&UnixStream>,
        send: &mut dyn FnMut(Envelope),
    ) -> Result<(), Fatal> {
        // Held through the owner's answer too: the session cannot change under a pending
        // approval, so what the owner sees is what runs.
        self.session_locks
            .run(&req.session, || self.serve_call(id, req, requester, send))
    }

    fn serve_call(
        &self,
        id: u64,
        req: &ToolRequest,
        requester: Option<&UnixStream>,
        send: &mut dyn FnMut(Envelope),
    ) -> Result<(), Fatal> {
        let snapshot = self.snapshot();
        // An MCP tool's arguments against its pin, boxmaker's own tools' against their types.
        let parsed = policy::mcp::parse(&self.pins.current(), &req.tool, &req.arguments)
            .unwrap_or_else(|| ToolArgs::parse(&req.tool, &req.arguments));
        // Before any grant: the model made this call, exactly so, and it never ran.
        // The use is marked here and made durable by the decision's audit line below.
        let witnessed = (self.context).claim(req.witness.as_ref(), &req.tool, &req.arguments);
        let claimed = witnessed.as_ref().ok().cloned();
        // The label the call is decided at: the session's own, raised by the labels of the
        // prompt that produced it. The session is raised to it first, on disk, so that
        // everything attached after the decision (the card, the audit line, the result, a
        // note, the session's export for the index) takes this one label (X9).
        let decided = match &claimed {
            Some(c) => self.raise(req, &c.prompt)?,
            None => self.session_state(&req.session),
        };
        let view = decided.view();
        let now = Timestamp::now();
        let mut decision = match (witnessed, &parsed, self.runs.scope(&req.session)) {
            (Err((reason, detail)), _, _) => policy::unwitnessed(reason, detail),
            (Ok(_), _, Scope::NotRunning) => policy::job_not_running(),
            (Ok(_), Ok(args), Scope::Ordinary) => policy::decide(&snapshot, args, view, now),
            (Ok(_), Ok(args), Scope::Job(job)) => {
                policy::decide_in(&snapshot, args, view, Some(&job), now)
            }
            (Ok(_), Err(e), _) => policy::invalid(e),
        };
        // A write's look and the content it leaves, after the policy and before the owner is
        // asked (H2): a write that cannot be made fails here, asking nobody.
        let plan = if decision.may_look() {
            match self.plan(req, &decision) {
                Ok(plan) => Some(plan),
                Err((failure, detail)) => {
                    decision = policy::write_failed(decision, failure, detail);
                    None
                }
            }
        } else {
            None
        };
        // The arguments as the grant covered them (what an allow authorises and runs), else
        // as they parsed.
        let canonical = match (decision.args(), &parsed) {
            (Some(args), _) | (None, Ok(args)) => Some(args.canonical()),
            (None, Err(_)) => None,
        };
        if matches!(decision.outcome(), Outcome::Ask { .. }) {
            let canonical = canonical.as_deref().unwrap_or_default();
            let requester = requester.and_then(|s| s.try_clone().ok());
            let mut pending = |approval, expires| {
                send(Envelope::partial(
                    id,
                    Message::ToolResponse(ToolResponse::PendingApproval { approval, expires }),
                ));
            };
            let write = plan.as_ref().map(|p| p.card.clone());
            let asked = (canonical, write);
            decision = self.ask(req, decision, asked, &decided, requester, &mut pending)?;
        }
        // The answer of a denial is made from this record (`policy::denied`), so the audit
        // line says exactly what loopd is told (X8).
        let record = policy::record(&decision);
        lock(&self.audit).append(|seq, time, prev| {
            AuditLine::Decision(AuditRecord {
                seq,
                time,
                prev,
                session: req.session.clone(),
                call: req.call,
                tool: req.tool.clone(),
                arguments: req.arguments.clone(),
                session_taint: decided.taint,
                decision: record.clone(),
                canonical,
                witness: claimed.as_ref().and(req.witness.clone()),
                untrusted: decided.untrusted,
                write: plan.as_ref().map(|p| p.record.clone()),
            })
        })?;
        // What the session's untrusted label comes from, each call named with its session
        // for the accounting (a record outlives the session it came from).
        let mut sources = decided.sources_named();
        let this = CallRef {
            tool: req.tool.clone(),
            call: req.call,
            read: decision.args().and_then(ToolArgs::reads),
            session: Some(req.session.clone()),
        };
        let (response, ran) = match (policy::denied(&record), policy::failed(&record)) {
            (Some(denied), _) => (denied, None),
            // A write that failed before it was asked says something of the target's
            // content: labelled like a read of it (H9), from its decision.
            (None, Some(failed)) => {
                let labels = decision.labels().unwrap_or(Labels::NONE);
                let labels = labels.join(decided.labels());
                self.raise_by(req, labels, this.read.clone())?;
                (failed, Some(labels))
            }
            (None, None) => {
                let (r, labels) = self.run(req, decision, &snapshot, &decided, plan.as_ref())?;
                (r, Some(labels))
            }
        };
        if ran.is_some_and(|l| l.untrusted) && !sources.contains(&this) {
            sources.insert(0, this);
        }
        (self.context)
            .returned(claimed.as_ref(), &response, ran, decided.labels(), &sources)
            .map_err(Fatal::Accounting)?;
        send(Envelope::last(id, Message::ToolResponse(response)));
        Ok(())
    }
}
