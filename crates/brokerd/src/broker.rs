//! The broker: the parts it owns (the grants in force, the audit writer, each session's
//! state, the approval desk, the runner, the outbox to gatewayd), and the life of one tool
//! request through them: validate, decide, audit, maybe ask the owner, run, raise the
//! session, answer. Every decision is on disk before its answer leaves. The sockets
//! (`server`, `admin`) and the link to gatewayd (`gateway`) reach it from outside.

use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use daemon::config::Config;
use daemon::keyed::KeyedLocks;
use daemon::lock;
use proto::approval::{AnswerOutcome, ApprovalAnswer, ApprovalCard, CallRef, Refusal, Verdict};
use proto::tools::ToolArgs;
use proto::{
    AuditLine, AuditRecord, DenyReason, Envelope, Message, SessionId, Timestamp, ToolRequest,
    ToolResponse,
};

use crate::Fatal;
use crate::approvals::{self, Answer, NotRegistered, Wake};
use crate::attested::Attested;
use crate::audit::AuditLog;
use crate::bind;
use crate::desk::{self, Desk, Heard};
use crate::grants_in_force::GrantsInForce;
use crate::jobs::{Runs, Scope};
use crate::notes::{Notes, Prep};
use crate::outbox::Outbox;
use crate::policy::{self, Decision, Labels, Outcome};
use crate::runner::{RunOutcome, Runner};
use crate::sessions::{SessionState, Sessions};
use crate::tool_spec;
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
    /// The last reload and the link to gatewayd, for `bxctl status`.
    pub(crate) board: crate::board::Board,
    /// The notes brokerd owns, and their labels.
    pub(crate) notes: Notes,
    /// The job runs in progress, each with the session brokerd minted for it.
    pub(crate) runs: Runs,
    /// What inferproxy witnessed (only those calls run, each once) and the labels of what
    /// loopd may send the model.
    pub(crate) witness: Attested,
}

impl Broker {
    pub fn new(
        config: Config,
        snapshot: Snapshot,
        audit: AuditLog,
        sessions: Sessions,
        runner: Runner,
        notes: Notes,
        witness: Attested,
    ) -> Self {
        let desk = Desk::new(config.broker.max_pending_approvals);
        let outbox = Outbox::new(config.gateway.is_some());
        let board = crate::board::Board::new(config.gateway.is_some());
        Self {
            config,
            grants: GrantsInForce::new(snapshot),
            audit: Mutex::new(audit),
            sessions: Mutex::new(sessions),
            desk,
            runner,
            session_locks: KeyedLocks::default(),
            outbox,
            board,
            notes,
            runs: Runs::default(),
            witness,
        }
    }

    /// A channel handed loopd the owner's message of `digest` (`ChatMessage::user`'s): it
    /// is on disk, private and trusted, before the channel is told.
    pub(crate) fn register_owner(&self, digest: proto::Hash32) -> Result<(), Fatal> {
        self.witness.owner(digest).map_err(Fatal::Accounting)
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
        // Read once: only this call, under its session's lock, can change it.
        let state = self.session_state(&req.session);
        let taint = state.taint;
        let parsed = ToolArgs::parse(&req.tool, &req.arguments);
        // Before any grant: the model made this call, exactly so, and it never ran.
        // The use is marked here and made durable by the decision's audit line below.
        let witnessed = (self.witness).claim(&req.witness, &req.tool, &req.arguments);
        let now = Timestamp::now();
        // Decided on the session's taint raised by the labels of the call's prompt.
        let claimed = witnessed.as_ref().ok().cloned();
        let view = claimed
            .as_ref()
            .map_or(state.view(), |c| state.view().raised(c.prompt));
        let mut decision = match (witnessed, &parsed, self.runs.scope(&req.session)) {
            (Err((reason, detail)), _, _) => policy::unwitnessed(reason, detail),
            (Ok(_), _, Scope::NotRunning) => policy::job_not_running(),
            (Ok(_), Ok(args), Scope::Ordinary) => policy::decide(&snapshot, args, view, now),
            (Ok(_), Ok(args), Scope::Job(job)) => {
                policy::decide_in(&snapshot, args, view, Some(&job), now)
            }
            (Ok(_), Err(e), _) => policy::invalid(e),
        };
        // The arguments as the grant covered them, which is also what runs.
        let effective = match (&parsed, decision.grant()) {
            (Ok(args), Some((_, covered))) => Some(tool_spec::effective(args, covered)),
            _ => None,
        };
        let canonical = match (&effective, &parsed) {
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
            // The card shows the labels the call is decided at (its prompt's raise them).
            let shown = state.at(view);
            decision = self.ask(req, decision, canonical, shown, requester, &mut pending)?;
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
                session_taint: taint,
                decision: record.clone(),
                canonical,
                witness: claimed.is_some().then(|| req.witness.clone()),
            })
        })?;
        let (response, ran) = match (policy::denied(&record), effective) {
            (Some(denied), _) => (denied, None),
            (None, Some(args)) => {
                let (r, labels) = self.run(req, args, decision, &snapshot)?;
                (r, Some(labels))
            }
            // An allow without parsed arguments cannot happen (an allow needs a grant that
            // covered them); nothing runs.
            (None, None) => (
                ToolResponse::failed("internal: an allow without arguments"),
                None,
            ),
        };
        (self.witness)
            .returned(claimed.as_ref(), &response, ran)
            .map_err(Fatal::Accounting)?;
        send(Envelope::last(id, Message::ToolResponse(response)));
        Ok(())
    }

    /// Puts an `ask` to the owner and waits for the answer, the expiry or the requester's
    /// hang-up. `state` is the session's, as the call was decided on; `pending` tells the
    /// requester the approval's id and expiry once it waits.
    fn ask(
        &self,
        req: &ToolRequest,
        decision: Decision,
        canonical: &str,
        state: SessionState,
        requester: Option<UnixStream>,
        pending: &mut dyn FnMut(String, Timestamp),
    ) -> Result<Decision, Fatal> {
        let grant_id = match decision.outcome() {
            Outcome::Ask { grant_id } => grant_id.to_owned(),
            _ => return Ok(decision),
        };
        let now = Timestamp::now();
        let expires = now.saturating_add(self.config.broker.approval_ttl);
        let approval = approvals::new_id().map_err(Fatal::Rng)?;
        let mut card = ApprovalCard {
            approval: approval.clone(),
            binding: proto::Hash32::ZERO,
            session: req.session.clone(),
            call: req.call,
            tool: req.tool.clone(),
            arguments: canonical.to_owned(),
            grant: grant_id.clone(),
            session_taint: state.taint,
            untrusted: state.untrusted,
            untrusted_by: state.untrusted_by,
            expires,
        };
        card.binding = card.bound();
        let heard = self
            .desk
            .put(card, now, &self.audit, &self.outbox, requester, || {
                pending(approval, expires);
            })?;
        Ok(match heard {
            Heard::NotAsked(why) => self.not_asked(decision, why),
            Heard::Woke(Wake::Answered(Answer {
                verdict: Verdict::Approve,
                by,
                post,
            })) => policy::approve(decision, policy::Approval { approver: by, post }),
            Heard::Woke(Wake::Stopping) => policy::refuse(
                decision,
                DenyReason::ShuttingDown,
                "brokerd stopped before the owner answered",
            ),
            Heard::Woke(Wake::Withdrawn) => policy::refuse(
                decision,
                DenyReason::ApprovalRefused,
                "loopd withdrew the request: its turn was cancelled (or loopd stopped)",
            ),
            Heard::Woke(Wake::Answered(Answer { by, post, .. })) => policy::refuse(
                decision,
                DenyReason::ApprovalRefused,
                match post {
                    Some(post) => format!("{by} refused on Mattermost post {post}"),
                    None => format!("{by} refused"),
                },
            ),
            Heard::Expired => policy::refuse(
                decision,
                DenyReason::ApprovalExpired,
                "the owner did not answer in time",
            ),
        })
    }

    /// An `ask` that cannot be put to the owner, decided at once.
    fn not_asked(&self, asked: Decision, why: NotRegistered) -> Decision {
        match why {
            NotRegistered::Full => {
                policy::too_many_pending(asked, self.config.broker.max_pending_approvals)
            }
            NotRegistered::Stopping => policy::refuse(
                asked,
                DenyReason::ShuttingDown,
                "brokerd is stopping and asks the owner nothing more",
            ),
        }
    }

    /// brokerd is stopping: every call waiting for the owner is denied now (each waiting
    /// request audits its decision and answers loopd, then the drain sees it finish), and
    /// no call asks from now on.
    pub fn stop_approvals(&self) -> usize {
        self.desk.stop()
    }

    /// Applies an owner's answer at the desk, bound to the card as it would be shown now: a
    /// session that moved on no longer matches what the owner saw.
    pub fn answer(
        &self,
        answer: &ApprovalAnswer,
        by: String,
        post: Option<String>,
    ) -> Result<AnswerOutcome, Fatal> {
        let current = |card: &ApprovalCard| {
            let now = self.session_state(&card.session);
            let mut card = card.clone();
            card.session_taint = now.taint;
            card.untrusted = now.untrusted;
            card.untrusted_by = now.untrusted_by;
            card.bound()
        };
        self.desk.answer(answer, by, post, current, &self.audit)
    }

    /// Audits an answer refused before it reached the desk (not an owner's) and says so.
    pub(crate) fn refuse_answer(
        &self,
        approval: &str,
        by: String,
        post: Option<String>,
        refusal: Refusal,
    ) -> Result<AnswerOutcome, Fatal> {
        desk::refuse_answer(approval, by, post, refusal, &self.audit)
    }

    /// Runs an allowed call (`args` as the grant covered them) and raises the session by
    /// the result's labels before the result leaves: those of every grant that covers the
    /// call, joined with those of every grant that reaches what the tool unit had bound. A
    /// failure's message reaches the model too, so it raises alike.
    fn run(
        &self,
        req: &ToolRequest,
        args: ToolArgs,
        decision: Decision,
        snapshot: &Snapshot,
    ) -> Result<(ToolResponse, Labels), Fatal> {
        let Some(labels) = decision.labels() else {
            return Ok((ToolResponse::failed("internal: no grant"), Labels::NONE));
        };
        let subtree = matches!(args, ToolArgs::ListDir(_));
        let read = args.reads();
        let note = Prep::of(&args);
        // The session logs are loopd's word: what a search of them finds is labelled as
        // high as anything loopd was ever sent (docs/decisions.md X7).
        let of_logs = matches!(args, ToolArgs::SessionSearch(_));
        // A search reaches the index partitions up to its deciding grant's `max_class`.
        let reach = decision
            .grant()
            .and_then(|(g, _)| g.constraints.max_class)
            .unwrap_or(proto::DataClass::Secret);
        let (labels, outcome) = match tool_spec::build(&self.config, req, args, &decision) {
            Ok(mut spec) => {
                let labels = match &spec.bind {
                    Some(b) => {
                        let granted = snapshot
                            .iter()
                            .flat_map(|(_, g)| g.constraints.paths.iter().map(String::as_str));
                        let names = bind::names(b, granted);
                        let names: Vec<&str> = names.iter().map(String::as_str).collect();
                        labels.join(policy::bound_labels(snapshot, &names, subtree))
                    }
                    None => labels,
                };
                // A note call's unit binds notes; their labels are brokerd's record's.
                match note.bind(&self.notes, &mut spec, self.runner.binds(), reach) {
                    Ok(bound) => {
                        let outcome = self.runner.run(decision, &spec);
                        let writer = self.session_state(&req.session);
                        let (bound, outcome) = bound.finish(&self.notes, outcome, &writer);
                        (labels.join(bound), outcome)
                    }
                    Err(e) => (labels, RunOutcome::failed(e.to_string())),
                }
            }
            Err(e) => (labels, RunOutcome::failed(e.to_string())),
        };
        let labels = labels.join(self.witness.for_logs(of_logs));
        let Labels { class, untrusted } = labels;
        lock(&self.sessions)
            .record(
                &req.session,
                class,
                untrusted,
                CallRef {
                    tool: req.tool.clone(),
                    call: req.call,
                    read,
                },
            )
            .map_err(Fatal::Sessions)?;
        if let RunOutcome::Failed {
            failure: Some(failure),
            ..
        } = &outcome
        {
            lock(&self.audit).tool_failed(req, failure)?;
        }
        let response = match outcome {
            RunOutcome::Ok { content, truncated } => ToolResponse::Result {
                content,
                class,
                untrusted,
                truncated,
            },
            RunOutcome::Failed { message, failure } => ToolResponse::Failed { message, failure },
        };
        Ok((response, labels))
    }
}

impl Broker {
    /// The owner's `note_relabel`, audited with the old label, the new one and the hash
    /// before it takes effect. `Ok(Err)`: refused (no such note, a bad name, a full disk).
    pub(crate) fn relabel_note(
        &self,
        r: &proto::notes::NoteRelabel,
        by: &str,
    ) -> Result<Result<proto::notes::NoteRelabelled, crate::notes::NoteError>, Fatal> {
        let audit = |done: &proto::notes::NoteRelabelled| {
            lock(&self.audit)
                .append(|seq, time, prev| {
                    AuditLine::Event(proto::AuditEvent::NoteRelabelled {
                        seq,
                        time,
                        prev,
                        by: by.to_owned(),
                        name: done.name.clone(),
                        hash: done.hash,
                        old_class: done.old_class,
                        old_untrusted: done.old_untrusted,
                        class: done.class,
                        untrusted: done.untrusted,
                    })
                })
                .map(|_| ())
        };
        match self.notes.relabel(&r.name, r.class, r.untrusted, audit) {
            Ok(Ok(done)) => Ok(Ok(done)),
            Ok(Err(fatal)) => Err(fatal.into()),
            Err(refused) => Ok(Err(refused)),
        }
    }
}
