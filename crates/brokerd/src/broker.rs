//! The broker's shared state and the life of one tool request: validate, decide, audit,
//! maybe ask the owner, run, raise the session, answer. Every decision is on disk before
//! its answer leaves.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use daemon::config::Config;
use daemon::keyed::KeyedLocks;
use daemon::lock;
use proto::approval::{ApprovalCard, CallRef, Verdict};
use proto::gateway::{ApprovalUpdate, Update};
use proto::tools::ToolArgs;
use proto::{
    AuditEvent, AuditLine, AuditRecord, DecisionRecord, DenyReason, Envelope, Message, SessionId,
    Timestamp, ToolRequest, ToolResponse,
};

use crate::approvals::{self, Answer, Approvals, NotRegistered, Wake};
use crate::audit::AuditLog;
use crate::bind;
use crate::gateway::Outgoing;
use crate::outbox::Outbox;
use crate::policy::{self, Decision, Labels, Outcome};
use crate::runner::{RunOutcome, Runner};
use crate::sessions::{SessionState, Sessions};
use crate::tool_spec;
use grants::Snapshot;

#[derive(Debug)]
pub struct Broker {
    pub config: Config,
    snapshot: RwLock<Installed>,
    audit: Mutex<AuditLog>,
    sessions: Mutex<Sessions>,
    pub(crate) approvals: Mutex<Approvals>,
    runner: Runner,
    /// One lock per session: a session's calls are decided and run one at a time, so a
    /// call is never decided on a taint that a concurrent call of the same session is
    /// about to raise.
    session_locks: KeyedLocks<SessionId>,
    /// To gatewayd, when `[gateway]` is configured: cards to post, outcomes to show.
    pub(crate) outbox: Outbox,
}

/// The snapshot in force, and the seq of the `grants_loaded` line that recorded it (none
/// until the first is written at start).
#[derive(Debug)]
struct Installed {
    snapshot: Arc<Snapshot>,
    line: Option<u64>,
}

/// Why the broker must stop serving (its durable state can no longer be trusted).
#[derive(Debug)]
pub struct Fatal(pub String);

impl Broker {
    pub fn new(
        config: Config,
        snapshot: Snapshot,
        audit: AuditLog,
        sessions: Sessions,
        runner: Runner,
    ) -> Self {
        let cap = config.broker.max_pending_approvals;
        let outbox = Outbox::new(config.gateway.is_some());
        Self {
            config,
            snapshot: RwLock::new(Installed {
                snapshot: Arc::new(snapshot),
                line: None,
            }),
            audit: Mutex::new(audit),
            sessions: Mutex::new(sessions),
            approvals: Mutex::new(Approvals::new(cap)),
            runner,
            session_locks: KeyedLocks::default(),
            outbox,
        }
    }

    /// Every approval waiting for the owner.
    pub(crate) fn pending_cards(&self) -> Vec<ApprovalCard> {
        lock(&self.approvals).list()
    }

    pub(crate) fn is_pending(&self, approval: &str) -> bool {
        lock(&self.approvals).is_pending(approval)
    }

    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .snapshot
            .clone()
    }

    /// Makes `snapshot` the policy for later calls, after auditing it. The swap happens
    /// under the same write lock as the audit line: no call decides on the old snapshot
    /// once the line is on disk, and none on the new one before.
    pub fn install(&self, snapshot: Snapshot) -> Result<(), Fatal> {
        let mut current = self
            .snapshot
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let line = match current.line {
            Some(since) => self.audit_snapshot(
                &snapshot,
                snapshot.changed_since(&current.snapshot),
                Some(since),
            )?,
            None => self.audit_snapshot(&snapshot, snapshot.texts().clone(), None)?,
        };
        *current = Installed {
            snapshot: Arc::new(snapshot),
            line: Some(line),
        };
        Ok(())
    }

    /// Audits the snapshot brokerd started with, with the text of every grant: a start
    /// does not read the policy back from the audit, so each run's first line is whole.
    pub fn audit_first_snapshot(&self) -> Result<(), Fatal> {
        let mut current = self
            .snapshot
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let texts = current.snapshot.texts().clone();
        current.line = Some(self.audit_snapshot(&current.snapshot, texts, None)?);
        Ok(())
    }

    fn audit_snapshot(
        &self,
        snapshot: &Snapshot,
        texts: BTreeMap<String, String>,
        since: Option<u64>,
    ) -> Result<u64, Fatal> {
        self.append_line(|seq, time, prev| {
            AuditLine::Event(AuditEvent::GrantsLoaded {
                seq,
                time,
                prev,
                snapshot: snapshot.hash(),
                grants: snapshot.ids(),
                texts,
                since,
            })
        })
    }

    /// Audits a reload that did not load (`reason`): the snapshot in force stays.
    pub fn refuse_reload(&self, reason: &str) -> Result<(), Fatal> {
        let kept = self.snapshot().hash();
        self.append(|seq, time, prev| {
            AuditLine::Event(AuditEvent::GrantsRefused {
                seq,
                time,
                prev,
                kept,
                reason: reason.to_owned(),
            })
        })
    }

    pub fn append(
        &self,
        build: impl FnOnce(u64, Timestamp, proto::Hash32) -> AuditLine,
    ) -> Result<(), Fatal> {
        self.append_line(build).map(|_| ())
    }

    /// As `append`, returning the seq the line got.
    fn append_line(
        &self,
        build: impl FnOnce(u64, Timestamp, proto::Hash32) -> AuditLine,
    ) -> Result<u64, Fatal> {
        lock(&self.audit)
            .append(build)
            .map(|a| a.seq)
            .map_err(|e| Fatal(format!("audit log: {e}")))
    }

    /// Whether the audit writer can be reached: free, or freed within a second (a write
    /// and its fsync). A writer stuck longer means the broker is wedged.
    pub fn audit_alive(&self) -> bool {
        daemon::reachable(&self.audit, Duration::from_secs(1))
    }

    pub fn session_state(&self, session: &SessionId) -> SessionState {
        lock(&self.sessions).get(session)
    }

    /// Serves one tool request from loopd. `send` writes one frame to the peer.
    pub fn tool_request(
        &self,
        id: u64,
        req: &ToolRequest,
        send: &mut dyn FnMut(Envelope),
    ) -> Result<(), Fatal> {
        // Held through the owner's answer too: the session cannot change under a pending
        // approval, so what the owner sees is what runs.
        self.session_locks
            .run(&req.session, || self.serve_call(id, req, send))
    }

    fn serve_call(
        &self,
        id: u64,
        req: &ToolRequest,
        send: &mut dyn FnMut(Envelope),
    ) -> Result<(), Fatal> {
        let snapshot = self.snapshot();
        // Read once: only this call, under its session's lock, can change it.
        let state = self.session_state(&req.session);
        let taint = state.taint;
        let parsed = ToolArgs::parse(&req.tool, &req.arguments);
        let now = Timestamp::now();
        let mut decision = match &parsed {
            Ok(args) => policy::decide(&snapshot, args, state.view(), now),
            Err(e) => policy::invalid(e),
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
            decision = self.ask(id, req, decision, canonical, state, send)?;
        }
        self.append(|seq, time, prev| {
            AuditLine::Decision(AuditRecord {
                seq,
                time,
                prev,
                session: req.session.clone(),
                call: req.call,
                tool: req.tool.clone(),
                arguments: req.arguments.clone(),
                session_taint: taint,
                decision: decision_record(&decision),
                canonical,
            })
        })?;
        let response = match (decision.outcome(), effective) {
            (Outcome::Allow { .. }, Some(args)) => self.run(req, args, decision, &snapshot)?,
            (Outcome::Deny { reason, detail, .. }, _) => ToolResponse::Denied {
                reason,
                detail: Some(detail.to_owned()),
            },
            // An allow without parsed arguments, or an ask left unanswered, cannot happen;
            // answer as a denial rather than run anything.
            _ => ToolResponse::Denied {
                reason: DenyReason::ApprovalRefused,
                detail: None,
            },
        };
        send(Envelope::last(id, Message::ToolResponse(response)));
        Ok(())
    }

    /// Puts an `ask` to the owner and waits for the answer or the expiry. `state` is the
    /// session's, as the call was decided on.
    fn ask(
        &self,
        id: u64,
        req: &ToolRequest,
        decision: Decision,
        canonical: &str,
        state: SessionState,
        send: &mut dyn FnMut(Envelope),
    ) -> Result<Decision, Fatal> {
        let grant_id = match decision.outcome() {
            Outcome::Ask { grant_id } => grant_id.to_owned(),
            _ => return Ok(decision),
        };
        let now = Timestamp::now();
        let expires = now.saturating_add(self.config.broker.approval_ttl);
        let approval = approvals::new_id().map_err(|e| Fatal(format!("OS RNG: {e}")))?;
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
        let binding = card.binding;
        let (tx, rx) = mpsc::channel();
        if let Some(why) = lock(&self.approvals).refuses() {
            return Ok(self.not_asked(decision, why));
        }
        self.append(|seq, time, prev| {
            AuditLine::Event(AuditEvent::ApprovalRequested {
                seq,
                time,
                prev,
                approval: approval.clone(),
                binding,
                session: req.session.clone(),
                call: req.call,
                tool: req.tool.clone(),
                grant: grant_id,
                expires,
            })
        })?;
        // Only once the request is on disk can an answer to it be taken. Connections are
        // served one request at a time per session, so the count cannot have filled up
        // for this session since the check above; another session may have (or brokerd
        // began to stop), and then this request is refused rather than left waiting.
        if let Err(why) = lock(&self.approvals).register(card.clone(), tx) {
            return Ok(self.not_asked(decision, why));
        }
        self.outbox.tell(Outgoing::Post(card));
        send(Envelope::partial(
            id,
            Message::ToolResponse(ToolResponse::PendingApproval {
                approval: approval.clone(),
                expires,
            }),
        ));
        let wait = Duration::from_millis(expires.as_millis().saturating_sub(now.as_millis()));
        let wake = match rx.recv_timeout(wait) {
            Ok(w) => Some(w),
            Err(_) => {
                if lock(&self.approvals).withdraw(&approval) {
                    None
                } else {
                    // Answered (or stopped) in the instant before the withdrawal.
                    rx.try_recv().ok()
                }
            }
        };
        self.outbox.tell(Outgoing::Update(ApprovalUpdate {
            approval,
            update: match &wake {
                Some(Wake::Answered(a)) => Update::Decided {
                    verdict: a.verdict,
                    by: a.by.clone(),
                },
                Some(Wake::Stopping) => Update::Stopped,
                None => Update::Expired,
            },
        }));
        Ok(match wake {
            Some(Wake::Answered(Answer {
                verdict: Verdict::Approve,
                by,
                post,
            })) => policy::approve(decision, policy::Approval { approver: by, post }),
            Some(Wake::Stopping) => policy::refuse(
                decision,
                DenyReason::ShuttingDown,
                "brokerd stopped before the owner answered",
            ),
            Some(Wake::Answered(Answer { by, post, .. })) => policy::refuse(
                decision,
                DenyReason::ApprovalRefused,
                match post {
                    Some(post) => format!("{by} refused on Mattermost post {post}"),
                    None => format!("{by} refused"),
                },
            ),
            None => policy::refuse(
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
        lock(&self.approvals).stop()
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
    ) -> Result<ToolResponse, Fatal> {
        let Some(labels) = decision.labels() else {
            return Ok(ToolResponse::Failed {
                message: "internal: no grant".into(),
            });
        };
        let subtree = matches!(args, ToolArgs::ListDir(_));
        let read = args.reads();
        let (labels, outcome) = match tool_spec::build(&self.config, req, args, &decision) {
            Ok(spec) => {
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
                (labels, self.runner.run(decision, &spec))
            }
            Err(message) => (labels, RunOutcome::Failed { message }),
        };
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
            .map_err(|e| Fatal(format!("session state: {e}")))?;
        Ok(match outcome {
            RunOutcome::Ok { content, truncated } => ToolResponse::Result {
                content,
                class,
                untrusted,
                truncated,
            },
            RunOutcome::Failed { message } => ToolResponse::Failed { message },
        })
    }
}

fn decision_record(decision: &Decision) -> DecisionRecord {
    match decision.outcome() {
        Outcome::Allow {
            grant_id,
            approval: None,
        } => DecisionRecord::Allowed {
            grant: grant_id.to_owned(),
        },
        Outcome::Allow {
            grant_id,
            approval: Some(a),
        } => DecisionRecord::Approved {
            grant: grant_id.to_owned(),
            approver: a.approver.clone(),
            post: a.post.clone(),
        },
        Outcome::Ask { grant_id } => DecisionRecord::Denied {
            reason: DenyReason::ApprovalRefused,
            grant: Some(grant_id.to_owned()),
            detail: Some("an ask without an answer".into()),
        },
        Outcome::Deny {
            reason,
            grant_id,
            detail,
        } => DecisionRecord::Denied {
            reason,
            grant: grant_id.map(str::to_owned),
            detail: Some(detail.to_owned()),
        },
    }
}
