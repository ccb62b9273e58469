//! The label a call is decided at (docs/decisions.md X9): the session raised to it before
//! the decision, and the helpers that hand it on.

use proto::approval::CallRef;
use proto::{SessionId, ToolRequest};

use super::Broker;
use crate::Fatal;
use crate::context::accounting::Accounted;
use crate::policy::SessionView;
use crate::sessions::SessionState;
use daemon::lock;

impl Broker {
    /// Raises `req`'s session to the label its call is decided at (the session's own, raised
    /// by the labels of its prompt, `prompt`), durably, and returns the session so raised.
    /// A prompt untrusted for no call brokerd can name (its sources forgotten, or from
    /// before they were kept) names its own call's prompt as the source.
    pub(super) fn raise(
        &self,
        req: &ToolRequest,
        prompt: &Accounted,
    ) -> Result<SessionState, Fatal> {
        self.raise_for(&req.session, &req.tool, req.call, prompt)
    }

    /// Raises `session` to its own label joined with `prompt`'s (what a job's answer was
    /// produced at), durably: the label a job's delivery is decided at.
    pub(crate) fn raise_to(
        &self,
        session: &SessionId,
        prompt: &Accounted,
    ) -> Result<SessionState, Fatal> {
        self.raise_for(session, "job_note", proto::CallId(0), prompt)
    }

    fn raise_for(
        &self,
        session: &SessionId,
        tool: &str,
        call: proto::CallId,
        prompt: &Accounted,
    ) -> Result<SessionState, Fatal> {
        // The session's own calls are named without their session, as its state keeps them.
        let mut sources: Vec<CallRef> = (prompt.sources.iter())
            .map(|c| CallRef {
                session: c.session.clone().filter(|s| s != session),
                ..c.clone()
            })
            .collect();
        if prompt.label.untrusted && sources.is_empty() {
            sources.push(CallRef {
                tool: tool.to_owned(),
                call,
                read: Some(PROMPT_SOURCE.to_owned()),
                session: None,
            });
        }
        let view = SessionView {
            taint: prompt.label.class,
            untrusted: prompt.label.untrusted,
        };
        lock(&self.sessions)
            .raise(session, view, &sources)
            .map_err(Fatal::Sessions)
    }
}

/// What a prompt untrusted for no call brokerd can name is said to come from, on the card.
const PROMPT_SOURCE: &str = "its own prompt: content brokerd cannot trace to a call";
