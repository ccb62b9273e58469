//! An allowed call's run, and the labels its result takes.

use proto::approval::CallRef;
use proto::tools::ToolArgs;
use proto::{ToolRequest, ToolResponse};

use super::Broker;
use super::hands::Plan;
use crate::Fatal;
use crate::notes::run::Prep;
use crate::policy::{self, Decision, Labels};
use crate::run::bind;
use crate::run::runner::RunOutcome;
use crate::run::tool_spec;
use crate::sessions::SessionState;
use daemon::lock;
use grants::Snapshot;

impl Broker {
    /// Runs an allowed call (the arguments its decision authorises) and raises the session
    /// by the result's labels before the result leaves: those of every grant that covers the
    /// call, joined with those of every grant that reaches what the tool unit had bound, and
    /// with `decided`, the label the call was decided at (its arguments came from a prompt
    /// at that label, and a result can echo them: X9). A failure's message reaches the
    /// model too, so it raises alike. A note the call writes takes `decided` too.
    pub(super) fn run(
        &self,
        req: &ToolRequest,
        decision: Decision,
        snapshot: &Snapshot,
        decided: &SessionState,
        plan: Option<&Plan>,
    ) -> Result<(ToolResponse, Labels), Fatal> {
        let (Some(labels), Some(args)) = (decision.labels(), decision.args()) else {
            return Ok((ToolResponse::failed("internal: no grant"), Labels::NONE));
        };
        // The hands' units are `hands`' (a write's commit over what was looked at, a run).
        match (args, plan) {
            (ToolArgs::WriteFile(_) | ToolArgs::EditFile(_), Some(plan)) => {
                return self.commit(req, decision, plan, decided);
            }
            (ToolArgs::Run(_), _) => return self.run_program(req, decision, decided),
            _ => {}
        }
        let subtree = matches!(args, ToolArgs::ListDir(_));
        let read = args.reads();
        let note = Prep::of(args);
        // The session logs are loopd's word: what a search of them finds is labelled as
        // high as anything loopd was ever sent (docs/decisions.md X7).
        let of_logs = matches!(args, ToolArgs::SessionSearch(_));
        // A search reaches the index partitions up to its deciding grant's `max_class`.
        let reach = decision
            .grant()
            .and_then(|(g, _)| g.constraints.max_class)
            .unwrap_or(proto::DataClass::Secret);
        let (labels, outcome) = if let ToolArgs::Mcp(call) = args {
            let call = call.clone();
            self.run_mcp(req, decision, snapshot, labels, &call)?
        } else {
            match tool_spec::build(&self.config, req, &decision) {
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
                            let (bound, outcome) = bound.finish(&self.notes, outcome, decided);
                            (labels.join(bound), outcome)
                        }
                        Err(e) => (labels, RunOutcome::failed(e.to_string())),
                    }
                }
                Err(e) => (labels, RunOutcome::failed(e.to_string())),
            }
        };
        let labels = labels
            .join(self.context.for_logs(of_logs))
            .join(decided.labels());
        self.settle(req, labels, read, outcome)
    }

    /// Raises the session by a result's `labels` (what the call `read` named) and makes
    /// the answer: a typed failure is audited (`tool_failed`), a result carries the labels.
    pub(super) fn settle(
        &self,
        req: &ToolRequest,
        labels: Labels,
        read: Option<String>,
        outcome: RunOutcome,
    ) -> Result<(ToolResponse, Labels), Fatal> {
        self.raise_by(req, labels, read)?;
        let Labels { class, untrusted } = labels;
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
            // A hands unit's answer is read by `hands`, never passed on as it came.
            RunOutcome::Staged(_) => ToolResponse::failed("internal: an unread hands answer"),
        };
        Ok((response, labels))
    }

    /// Raises `req`'s session by `labels`, durably, naming the call (and what it `read`).
    pub(super) fn raise_by(
        &self,
        req: &ToolRequest,
        labels: Labels,
        read: Option<String>,
    ) -> Result<(), Fatal> {
        lock(&self.sessions)
            .record(
                &req.session,
                labels.class,
                labels.untrusted,
                CallRef {
                    tool: req.tool.clone(),
                    call: req.call,
                    read,
                    session: None,
                },
            )
            .map_err(Fatal::Sessions)
    }
}
