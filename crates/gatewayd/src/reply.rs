//! One owner post answered: sent to loopd as a chat message, the turn streamed into a reply
//! in the post's thread by editing it at a bounded rate, split within the post limit.

use std::time::{Duration, Instant};

use daemon::conn::{CallError, Conn};
use daemon::log;
use proto::chat::{ChatEvent, ChatSend, TurnEnd};
use proto::{ErrorCode, Message, SessionId, ToolResponse};

use crate::mm::Client;
use crate::render::{POST_LIMIT, code, inert, permalink, split};

enum Part {
    Model(String),
    Note(String),
}

/// The reply being streamed: its parts and the posts that show them.
struct Stream<'a> {
    turn: &'a Turn<'a>,
    parts: Vec<Part>,
    posts: Vec<(String, String)>,
    last: Option<Instant>,
}

impl Stream<'_> {
    fn text(&mut self, delta: &str) {
        if let Some(Part::Model(t)) = self.parts.last_mut() {
            t.push_str(delta);
        } else {
            self.parts.push(Part::Model(delta.to_owned()));
        }
    }

    fn note(&mut self, line: String) {
        self.parts.push(Part::Note(format!("\n{line}\n")));
    }

    fn body(&self) -> String {
        let body: String = self
            .parts
            .iter()
            .map(|p| match p {
                Part::Model(t) => inert(t),
                Part::Note(n) => n.clone(),
            })
            .collect();
        let body = body.trim().to_owned();
        if body.is_empty() { "…".into() } else { body }
    }

    /// Shows the reply as it stands, unless the last edit was too recent (`force` at the end).
    fn flush(&mut self, force: bool) {
        if !force && self.last.is_some_and(|t| t.elapsed() < self.turn.interval) {
            return;
        }
        self.last = Some(Instant::now());
        for (i, chunk) in split(&self.body(), POST_LIMIT).into_iter().enumerate() {
            let result = match self.posts.get_mut(i) {
                Some((_, shown)) if *shown == chunk => Ok(()),
                Some((id, shown)) => self.turn.client.edit(id, &chunk).map(|()| *shown = chunk),
                None => self
                    .turn
                    .client
                    .create(self.turn.channel, self.turn.root, &chunk)
                    .map(|id| self.posts.push((id, chunk))),
            };
            if let Err(e) = result {
                log::warn(format_args!("showing a reply: {e}"));
            }
        }
    }
}

/// The approval's root post, once gatewayd made it (brokerd sends the card a moment after
/// loopd hears of the approval). Only gatewayd's own record is linked, never loopd's words.
fn wait_for_post(turn: &Turn<'_>, approval: &str) -> Option<String> {
    for _ in 0..30 {
        if let Some(post) = (turn.approval_post)(approval) {
            return Some(post);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

fn event(stream: &mut Stream<'_>, ev: &ChatEvent) {
    match ev {
        ChatEvent::Text { delta } => stream.text(delta),
        ChatEvent::ToolCall {
            tool, arguments, ..
        } => {
            let args: String = arguments.chars().take(200).collect();
            stream.note(format!("> tool {} {}", code(tool), code(&args)));
        }
        ChatEvent::ToolResponse { response, .. } => stream.note(match response {
            ToolResponse::Result { content, class, .. } => {
                format!("> → {} bytes ({class})", content.len())
            }
            ToolResponse::PendingApproval { approval, expires } => {
                match wait_for_post(stream.turn, approval) {
                    Some(post) => format!(
                        "> → waits for your approval until {expires}: [the request]({})",
                        permalink(stream.turn.server, &post)
                    ),
                    None => format!(
                        "> → waits for the owner's approval {} until {expires}",
                        code(approval)
                    ),
                }
            }
            ToolResponse::Denied { reason, .. } => {
                format!("> → denied ({})", code(reason.as_str()))
            }
            ToolResponse::Failed { message, .. } => format!("> → failed: {}", code(message)),
        }),
        ChatEvent::Started { .. } | ChatEvent::Reasoning { .. } | ChatEvent::Compacted { .. } => {
            return;
        }
    }
    stream.flush(false);
}

pub struct Turn<'a> {
    pub client: &'a Client,
    pub bot: &'a str,
    pub channel: &'a str,
    pub root: &'a str,
    pub interval: Duration,
    /// How often the typing indicator is renewed while the turn runs.
    pub typing: Duration,
    pub loop_sock: &'a std::path::Path,
    /// brokerd's chat side (`owner_words::register`).
    pub broker_sock: &'a std::path::Path,
    /// The Mattermost base URL, for links.
    pub server: &'a str,
    /// The root post of an approval, by id, when gatewayd made one.
    pub approval_post: &'a (dyn Fn(&str) -> Option<String> + Sync),
}

/// Answers `text`; `started` hears the session as soon as loopd names it.
pub fn answer(
    t: &Turn<'_>,
    session: Option<SessionId>,
    text: &str,
    started: &mut dyn FnMut(&SessionId),
) {
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|scope| {
        // Mattermost shows "typing" for a few seconds per call: renewed while the turn runs.
        scope.spawn(move || {
            loop {
                if let Err(e) = t.client.typing(t.bot, t.channel, t.root) {
                    log::warn(format_args!("typing indicator: {e}"));
                }
                if stopped.recv_timeout(t.typing) != Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                {
                    return;
                }
            }
        });
        turn(t, session, text, started);
        drop(stop);
    });
}

fn turn(t: &Turn<'_>, session: Option<SessionId>, text: &str, started: &mut dyn FnMut(&SessionId)) {
    let mut stream = Stream {
        turn: t,
        parts: Vec::new(),
        posts: Vec::new(),
        last: None,
    };
    // The owner's words are brokerd's to account before loopd has them; a message brokerd
    // could not take is loopd's word to it, and the turn's calls are labelled high (safe).
    if let Err(e) = owner_words::register(t.broker_sock, text) {
        log::warn(format_args!(
            "brokerd did not register the owner's message ({e}); the turn's tool calls are \
             labelled as the highest label loopd was ever sent"
        ));
    }
    let msg = Message::ChatSend(ChatSend {
        session,
        text: text.to_owned(),
        // A turn goes on while gatewayd restarts: what it waits for may be answered on
        // Mattermost meanwhile.
        cancel_on_hangup: false,
    });
    let outcome = Conn::connect(t.loop_sock)
        .map_err(|e| format!("boxmaker's agent is not reachable ({e})"))
        .and_then(|mut conn| {
            conn.call(1, msg, |env| {
                if let Message::ChatEvent(ev) = &env.msg {
                    if let ChatEvent::Started { session, .. } = ev {
                        started(session);
                    }
                    event(&mut stream, ev);
                }
            })
            .map_err(|e| match e {
                // Who loop.sock admits is the host's business, not the chat's: logged here.
                CallError::Refused(ref r) => {
                    log::warn(format_args!("loopd refused the connection: {e}"));
                    match r.code {
                        ErrorCode::Unavailable => {
                            "boxmaker's agent cannot take messages now; write again in a moment"
                        }
                        _ => "boxmaker's agent refused gatewayd's connection (see gatewayd's log)",
                    }
                    .to_owned()
                }
                _ => format!("the connection to boxmaker's agent broke ({e})"),
            })
        });
    match outcome.map(|env| env.msg) {
        Ok(Message::ChatReply(reply)) => match reply.end {
            TurnEnd::Answered => {}
            TurnEnd::ToolCap { calls } => {
                stream.note(format!("_The turn stopped after {calls} tool calls._"));
            }
            TurnEnd::ModelError { detail } => stream.note(format!(
                "**The model could not answer:** {}. Your message is kept: write again to retry.",
                code(&detail)
            )),
            // Only a client that hung up gets this end, and gatewayd has not hung up.
            TurnEnd::Cancelled => stream.note("_The turn was cancelled._".to_owned()),
            TurnEnd::Cut { finish, withdrawn } => stream.note(format!(
                "_The answer {}._",
                TurnEnd::cut_words(&code(&finish), withdrawn)
            )),
        },
        Ok(Message::Error(e)) => stream.note(format!(
            "**boxmaker refused the message:** {}",
            code(&format!("{:?}: {}", e.code, e.detail))
        )),
        Ok(other) => stream.note(format!(
            "**Unexpected answer from boxmaker:** {}",
            other.kind()
        )),
        Err(e) => stream.note(format!("**Sorry:** {}", inert(&e))),
    }
    stream.flush(true);
}
