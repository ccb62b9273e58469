//! One chain played: the owner's message to loopd in a new session, every call the fake
//! model makes and brokerd's answer, each approval brokerd asks declined at once (the
//! self-test is the shadow's owner); then, from the shadow's audit log, the grant that
//! decided each call.

use std::collections::BTreeMap;
use std::path::Path;

use config::Config;
use proto::approval::Verdict;
use proto::chat::{ChatEvent, ChatSend};
use proto::{AuditRecord, CallId, DecisionRecord, Message, SessionId, ToolResponse};

use crate::Error;
use crate::error::{answered, call_failed, unexpected};

/// One call of a chain's session, as the chat showed it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub call: CallId,
    pub tool: String,
    /// brokerd asked the owner (and the self-test declined).
    pub asked: bool,
    /// The final answer: a result, a failure or a denial.
    pub response: Option<ToolResponse>,
}

/// A chain's session.
#[derive(Debug, Clone, Default)]
pub struct Played {
    pub session: Option<SessionId>,
    pub calls: Vec<Seen>,
}

/// Sends `text` in a new session and plays the turn out, declining every approval.
pub fn play(config: &Config, text: &str) -> Result<Played, Error> {
    play_in(config, None, text)
}

/// [`play`] in `session`, or a new one.
pub fn play_in(config: &Config, session: Option<SessionId>, text: &str) -> Result<Played, Error> {
    crate::owner::register(
        &config.sockets.chat_broker_sock(),
        text,
        &mut std::io::sink(),
    )?;
    let mut conn = crate::loopconn::connect(config)?;
    let msg = Message::ChatSend(ChatSend {
        session,
        text: text.to_owned(),
        cancel_on_hangup: false,
    });
    let mut played = Played::default();
    let mut failed = None;
    let last = conn.call(1, msg, |env| {
        let Message::ChatEvent(ev) = &env.msg else {
            return;
        };
        match ev {
            ChatEvent::Started { session, .. } => played.session = Some(session.clone()),
            ChatEvent::ToolCall { call, tool, .. } => played.calls.push(Seen {
                call: *call,
                tool: tool.clone(),
                asked: false,
                response: None,
            }),
            ChatEvent::ToolResponse { call, response } => {
                let Some(seen) = played.calls.iter_mut().find(|s| s.call == *call) else {
                    return;
                };
                if let ToolResponse::PendingApproval { approval, .. } = response {
                    seen.asked = true;
                    if let Err(e) = decline(config, approval) {
                        failed = Some(e);
                    }
                } else {
                    seen.response = Some(response.clone());
                }
            }
            _ => {}
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    let last = last.map_err(call_failed("loopd", "chat"))?;
    match answered("loopd", last.msg)? {
        Message::ChatReply(_) => Ok(played),
        other => Err(unexpected(&other)),
    }
}

/// Denies approval `id`, as the owner would.
fn decline(config: &Config, id: &str) -> Result<(), Error> {
    let cards = crate::admin::listing(config)?;
    let binding = cards
        .iter()
        .find(|c| c.approval == id)
        .map_or(proto::Hash32::ZERO, |c| c.binding);
    crate::approval::send(config, id, binding, Verdict::Deny).map(|_| ())
}

/// The grant that decided each call, from the audit log in `dir`.
pub fn deciders(dir: &Path) -> Result<BTreeMap<(SessionId, CallId), String>, Error> {
    let mut out = BTreeMap::new();
    crate::audit::read::lines(dir, |_, _, bytes| {
        if let Ok(r) = serde_json::from_slice::<AuditRecord>(bytes) {
            let grant = match r.decision {
                DecisionRecord::Allowed { grant } | DecisionRecord::Approved { grant, .. } => {
                    Some(grant)
                }
                DecisionRecord::Denied { grant, .. } => grant,
                _ => None,
            };
            if let Some(g) = grant {
                out.insert((r.session, r.call), g);
            }
        }
        Ok(())
    })?;
    Ok(out)
}
