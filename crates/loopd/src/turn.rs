//! One turn: the owner's message, then model and tools until the model answers without
//! tools or the per-turn cap is reached. Every record is on disk before the turn goes on.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use daemon::config::Config;
use daemon::keyed::KeyedLocks;
use daemon::lock;
use proto::chat::{ChatEvent, ChatReply, ChatSend, TurnEnd};
use proto::{CallId, DataClass, Epoch, Hash32, LogRecord, SessionId, Timestamp, ToolResponse};
use serde_json::json;

use crate::cancel::Cancel;
use crate::llm::{self, Delta, LlmError, Props};
use crate::store::{Session, Store, StoreError};
use crate::tools::{self, for_model};
use crate::{broker, compact};

/// What the model is told when no `memory/core.md` exists.
const DEFAULT_CORE: &str = "You are boxmaker, the owner's personal assistant. Use the tools \
when they help; every tool call is checked against the owner's grants and may be refused.";

#[derive(Debug)]
pub struct Looper {
    pub config: Config,
    store: Store,
    props: Mutex<Option<Props>>,
    /// Per session, from its last answer: the tokens the context held (for compaction) and
    /// the prompt tokens the server could keep cached for the next request (for CacheLoss).
    used: Mutex<HashMap<SessionId, Usage>>,
    locks: KeyedLocks<SessionId>,
}

#[derive(Debug, Clone, Copy)]
struct Usage {
    filled: u64,
    cacheable: u64,
}

/// Why a turn could not run at all (not a model error: those end the turn in its reply).
/// The owner's client gets only "see loopd's log"; the log gets this text.
#[derive(Debug)]
pub enum TurnError {
    /// `chat_send` named a session that is not on disk.
    NoSession(SessionId),
    /// The session log could not be read or written.
    Store(StoreError),
}

impl std::fmt::Display for TurnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoSession(id) => write!(f, "no session {id}"),
            Self::Store(e) => write!(f, "session log: {e}"),
        }
    }
}

impl std::error::Error for TurnError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::NoSession(_) => None,
            Self::Store(e) => Some(e),
        }
    }
}

impl From<StoreError> for TurnError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

impl Looper {
    pub fn new(config: Config) -> Result<Self, StoreError> {
        let store = Store::open(&config.home)?;
        Ok(Self {
            config,
            store,
            props: Mutex::new(None),
            used: Mutex::new(HashMap::new()),
            locks: KeyedLocks::default(),
        })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub(crate) fn infer_sock(&self) -> PathBuf {
        self.config.sockets.loop_infer_sock()
    }

    fn broker_sock(&self) -> PathBuf {
        self.config.sockets.loop_broker_sock()
    }

    fn timeout(&self) -> Duration {
        self.config.r#loop.request_timeout
    }

    /// The server's context size and slots, asked once it answers.
    fn props(&self) -> Result<Props, LlmError> {
        if let Some(p) = *lock(&self.props) {
            return Ok(p);
        }
        let p = llm::props(&self.infer_sock(), self.timeout())?;
        *lock(&self.props) = Some(p);
        Ok(p)
    }

    fn core(&self) -> String {
        std::fs::read_to_string(self.config.home.join("memory/core.md"))
            .unwrap_or_else(|_| DEFAULT_CORE.to_owned())
    }

    fn system(&self, summary: Option<&str>) -> String {
        let mut s = self.core();
        if let Some(summary) = summary {
            s.push_str("\n\nSummary of the conversation so far:\n");
            s.push_str(summary);
        }
        s
    }

    /// Runs one turn, streaming its events to `emit`, until it ends or `cancel` stops it.
    pub fn turn(
        &self,
        send: &ChatSend,
        cancel: &Cancel,
        emit: &mut dyn FnMut(ChatEvent),
    ) -> Result<ChatReply, TurnError> {
        let id = match &send.session {
            Some(id) => id.clone(),
            None => Store::new_id(Timestamp::now())?,
        };
        self.locks
            .run(&id, || self.locked_turn(&id, send, cancel, emit))
    }

    fn locked_turn(
        &self,
        id: &SessionId,
        send: &ChatSend,
        cancel: &Cancel,
        emit: &mut dyn FnMut(ChatEvent),
    ) -> Result<ChatReply, TurnError> {
        let id = id.clone();
        // Under the session's lock no append is under way, so a torn last line is one that
        // died with an earlier loopd.
        self.store.repair(&id)?;
        let mut session = match self.store.load(&id)? {
            Some(s) => self.finish_interrupted(s)?,
            None if send.session.is_some() => {
                return Err(TurnError::NoSession(id));
            }
            None => self.start_epoch(&id, Epoch(0), None, 0)?,
        };
        if self.near_full(&id) {
            session = self.compact(session, emit)?;
        }
        self.append(
            &mut session,
            LogRecord::User {
                time: Timestamp::now(),
                content: send.text.clone(),
            },
        )?;
        // Only now is the owner's message on disk.
        emit(ChatEvent::Started {
            session: id.clone(),
            epoch: session.epoch,
        });
        self.run(session, cancel, emit)
    }

    /// Completes what an earlier loopd left half done: an epoch ended but the next not yet
    /// begun, or tool calls without their results (each gets a `failed` result, so the log
    /// replays as a whole conversation).
    fn finish_interrupted(&self, mut session: Session) -> Result<Session, TurnError> {
        if let Some(LogRecord::EpochEnd { next, summary, .. }) = session.records.last() {
            let (next, summary) = (*next, summary.clone());
            return self.start_epoch(&session.id, next, Some(summary), session.last_call);
        }
        let Some(pos) = session
            .records
            .iter()
            .rposition(|r| matches!(r, LogRecord::Assistant { .. }))
        else {
            return Ok(session);
        };
        let LogRecord::Assistant { tool_calls, .. } = &session.records[pos] else {
            return Ok(session);
        };
        let done = session.records[pos..]
            .iter()
            .filter(|r| matches!(r, LogRecord::ToolResult { .. }))
            .count();
        let missing: Vec<proto::ToolCall> = tool_calls.iter().skip(done).cloned().collect();
        let first = session.last_call + 1 - u64::try_from(missing.len()).unwrap_or(0);
        for (i, tc) in missing.into_iter().enumerate() {
            self.append(
                &mut session,
                LogRecord::ToolResult {
                    time: Timestamp::now(),
                    call: CallId(first + u64::try_from(i).unwrap_or(0)),
                    tool_call_id: tc.id,
                    content: "the tool failed: interrupted (loopd stopped before its result)"
                        .into(),
                    class: DataClass::Private,
                    untrusted: true,
                    truncated: false,
                    outcome: Some(proto::CallOutcome::Failed),
                },
            )?;
        }
        Ok(session)
    }

    fn append(&self, session: &mut Session, record: LogRecord) -> Result<(), TurnError> {
        self.store.append(&session.id, session.epoch, &record)?;
        session.records.push(record);
        Ok(())
    }

    /// Writes the first record of an epoch: its slot and the hash of what it starts from.
    fn start_epoch(
        &self,
        id: &SessionId,
        epoch: Epoch,
        summary: Option<String>,
        last_call: u64,
    ) -> Result<Session, TurnError> {
        let slots = self.props().map(|p| p.total_slots).unwrap_or(1);
        let slot = slot_of(id, slots);
        let baseline = Hash32::digest(self.system(summary.as_deref()).as_bytes());
        let mut session = Session {
            id: id.clone(),
            epoch,
            records: Vec::new(),
            summary,
            last_call,
        };
        self.append(
            &mut session,
            LogRecord::SessionStart {
                time: Timestamp::now(),
                session: id.clone(),
                epoch,
                slot,
                baseline,
            },
        )?;
        Ok(session)
    }

    /// Ends the epoch with a summary the model writes, and starts the next from it. The
    /// session id stays, so brokerd's taint and untrusted flag carry over unchanged.
    fn compact(
        &self,
        mut session: Session,
        emit: &mut dyn FnMut(ChatEvent),
    ) -> Result<Session, TurnError> {
        let system = self.system(session.summary.as_deref());
        let summary = compact::summary(&self.infer_sock(), self.timeout(), &system, &session);
        let next = Epoch(session.epoch.0 + 1);
        self.append(
            &mut session,
            LogRecord::EpochEnd {
                time: Timestamp::now(),
                next,
                summary: summary.clone(),
            },
        )?;
        lock(&self.used).remove(&session.id);
        emit(ChatEvent::Compacted { next });
        self.start_epoch(&session.id, next, Some(summary), session.last_call)
    }

    fn near_full(&self, id: &SessionId) -> bool {
        let used = lock(&self.used).get(id).map_or(0, |u| u.filled);
        if used == 0 {
            return false;
        }
        let Ok(props) = self.props() else {
            return false;
        };
        used * 100 >= props.n_ctx * u64::from(self.config.r#loop.compact_percent)
    }

    fn run(
        &self,
        mut session: Session,
        cancel: &Cancel,
        emit: &mut dyn FnMut(ChatEvent),
    ) -> Result<ChatReply, TurnError> {
        let cap = self.config.r#loop.max_tool_calls;
        let slot = session.slot().unwrap_or(0);
        let mut calls = 0u32;
        loop {
            if cancel.is_cancelled() {
                return Ok(ChatReply {
                    session: session.id,
                    text: String::new(),
                    end: TurnEnd::Cancelled,
                });
            }
            // What the previous answer of this session made cacheable (its whole prompt).
            let cacheable = lock(&self.used).get(&session.id).map(|u| u.cacheable);
            let body = json!({
                "messages": llm::messages(&self.system(session.summary.as_deref()), &session.records),
                "tools": tools::definitions(),
                "stream": true,
                "stream_options": {"include_usage": true},
                "max_tokens": self.config.r#loop.max_tokens,
                "id_slot": slot,
                "cache_prompt": true,
            });
            let completion =
                llm::complete(&self.infer_sock(), self.timeout(), &body, |d| match d {
                    Delta::Text(t) => emit(ChatEvent::Text {
                        delta: t.to_owned(),
                    }),
                    Delta::Reasoning(t) => emit(ChatEvent::Reasoning {
                        delta: t.to_owned(),
                    }),
                });
            let completion = match completion {
                Ok(c) => c,
                Err(e) => {
                    if e.context_full() {
                        // The history no longer fits: the next turn starts a new epoch.
                        lock(&self.used).insert(
                            session.id.clone(),
                            Usage {
                                filled: u64::MAX / 200,
                                cacheable: 0,
                            },
                        );
                    }
                    return Ok(ChatReply {
                        session: session.id,
                        text: String::new(),
                        end: TurnEnd::ModelError {
                            detail: e.to_string(),
                        },
                    });
                }
            };
            if let Some(t) = completion.timings {
                if let Some(expected) = cacheable
                    && t.cache_n < expected
                {
                    self.append(
                        &mut session,
                        LogRecord::CacheLoss {
                            time: Timestamp::now(),
                            expected,
                            got: t.cache_n,
                        },
                    )?;
                }
                lock(&self.used).insert(
                    session.id.clone(),
                    Usage {
                        filled: t.cache_n + t.prompt_n + t.predicted_n,
                        cacheable: t.cache_n + t.prompt_n,
                    },
                );
            }
            self.append(
                &mut session,
                LogRecord::Assistant {
                    time: Timestamp::now(),
                    content: completion.content.clone(),
                    reasoning_content: completion.reasoning.clone(),
                    tool_calls: completion.tool_calls.clone(),
                },
            )?;
            if completion.tool_calls.is_empty() {
                return Ok(ChatReply {
                    session: session.id,
                    text: completion.content.unwrap_or_default(),
                    end: TurnEnd::Answered,
                });
            }
            for tc in &completion.tool_calls {
                session.last_call += 1;
                let call = CallId(session.last_call);
                calls += 1;
                let response = if calls > cap {
                    ToolResponse::Failed {
                        message: format!(
                            "not run: the limit of {cap} tool calls per turn was reached"
                        ),
                    }
                } else if cancel.is_cancelled() {
                    // Every call the model asked for gets its result, so the log stays whole.
                    ToolResponse::Failed {
                        message: "not run: the owner cancelled the turn".into(),
                    }
                } else {
                    emit(ChatEvent::ToolCall {
                        call,
                        tool: tc.name.clone(),
                        arguments: tc.arguments.clone(),
                    });
                    broker::call(
                        &self.broker_sock(),
                        &session.id,
                        call,
                        &tc.name,
                        &tc.arguments,
                        cancel,
                        |p| {
                            emit(ChatEvent::ToolResponse { call, response: p });
                        },
                    )
                };
                let (content, class, untrusted, truncated) = for_model(&response);
                self.append(
                    &mut session,
                    LogRecord::ToolResult {
                        time: Timestamp::now(),
                        call,
                        tool_call_id: tc.id.clone(),
                        content,
                        class,
                        untrusted,
                        truncated,
                        outcome: tools::outcome(&response),
                    },
                )?;
                emit(ChatEvent::ToolResponse { call, response });
            }
            if calls >= cap {
                return Ok(ChatReply {
                    session: session.id,
                    text: String::new(),
                    end: TurnEnd::ToolCap { calls: cap },
                });
            }
        }
    }
}

/// A session's server slot: stable for the session, spread over the slots.
fn slot_of(id: &SessionId, slots: u32) -> u32 {
    let h = Hash32::digest(id.as_str().as_bytes());
    let h = h.as_bytes();
    let n = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
    n % slots.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_in_a_session_not_on_disk_is_no_session_naming_it() {
        let home = std::env::temp_dir().join(format!("bx-turn-none-{}", std::process::id()));
        let text = format!(
            "home = {home:?}\n[sockets]\nloop_broker = \"/run/x/l\"\nadmin_broker = \"/run/x/a\"\n\
             [peers]\nloopd = {{ uid = 1 }}\nadmin = {{ uid = 2 }}\n"
        );
        let config = Config::parse(&home.join("config.toml"), &text).expect("config");
        let looper = Looper::new(config).expect("looper");
        let id = SessionId::new("s-gone").expect("id");
        let send = ChatSend {
            session: Some(id.clone()),
            text: "hello".into(),
            cancel_on_hangup: false,
        };
        match looper.turn(&send, &Cancel::default(), &mut |_| {}) {
            Err(e @ TurnError::NoSession(_)) => {
                assert!(matches!(&e, TurnError::NoSession(s) if *s == id));
                assert_eq!(e.to_string(), "no session s-gone");
            }
            other => panic!("not NoSession: {other:?}"),
        }
        assert!(
            looper.store().ids().expect("ids").is_empty(),
            "nothing written"
        );
        let _ = std::fs::remove_dir_all(&home);
    }
}
