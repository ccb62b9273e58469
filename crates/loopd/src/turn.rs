//! One turn: the owner's message, then model and tools until the model answers without
//! tools or the per-turn cap is reached. Every record is on disk before the turn goes on.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use config::Config;
use daemon::keyed::KeyedLocks;
use daemon::lock;
use proto::chat::{ChatEvent, ChatReply, ChatSend, TurnEnd};
use proto::composed;
use proto::{
    CallId, DataClass, Epoch, LogRecord, SessionId, Timestamp, ToolCall, ToolResponse, Withdrawal,
};

use crate::cancel::Cancel;
use crate::error::TurnError;
use crate::llm::{self, LlmError, Props};
use crate::slots::{self, Usage, slot_of};
use crate::store::{Session, Store, StoreError};
use crate::{broker, compact, core_memory, prompt};

#[derive(Debug)]
pub struct Looper {
    pub config: Config,
    store: Store,
    props: Mutex<Option<Props>>,
    /// Per session, from its last answer: the tokens the context held (for compaction), the
    /// tokens the server could keep cached for the next request (for CacheLoss), and the
    /// number of its last request on its slot.
    used: Mutex<HashMap<SessionId, Usage>>,
    /// The requests sent to each slot, so a CacheLoss says whether another session's
    /// request came between (`slots::shared`).
    sent: slots::Sent,
    locks: KeyedLocks<SessionId>,
    /// The tools brokerd last said a request offers (docs/decisions.md P14).
    offered: broker::Offered,
}

impl Looper {
    pub fn new(config: Config) -> Result<Self, StoreError> {
        let store = Store::open(&config.home)?;
        Ok(Self {
            config,
            store,
            props: Mutex::new(None),
            used: Mutex::new(HashMap::new()),
            sent: slots::Sent::default(),
            locks: KeyedLocks::default(),
            offered: broker::Offered::default(),
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
            .run(&id, || self.locked_turn(&id, send, false, cancel, emit))
    }

    /// A job run's one turn, in the session brokerd minted for the run (`id`), which loopd
    /// starts here: the jobs side of loop.sock (`crate::jobs`) is the only caller.
    pub fn job_turn(
        &self,
        id: &SessionId,
        send: &ChatSend,
        emit: &mut dyn FnMut(ChatEvent),
    ) -> Result<ChatReply, TurnError> {
        self.locks.run(id, || {
            self.locked_turn(id, send, true, &Cancel::default(), emit)
        })
    }

    /// `new`: the session may not exist yet (a job run's), and starts here if so. `cancel`
    /// stops it (the owner's client hung up).
    fn locked_turn(
        &self,
        id: &SessionId,
        send: &ChatSend,
        new: bool,
        cancel: &Cancel,
        emit: &mut dyn FnMut(ChatEvent),
    ) -> Result<ChatReply, TurnError> {
        let id = id.clone();
        // Under the session's lock no append is under way, so a torn last line is one that
        // died with an earlier loopd.
        self.store.repair(&id)?;
        let mut session = match self.store.load(&id)? {
            Some(s) => self.finish_interrupted(self.with_core(s)?)?,
            None if send.session.is_some() && !new => {
                return Err(TurnError::NoSession(id));
            }
            None => self.start_epoch(&id, Epoch(0), None, 0)?,
        };
        self.withdraw_unrenderable(&mut session)?;
        if let Some(n_ctx) = self.near_full(&id) {
            session = self.compact(session, n_ctx, emit)?;
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
        let missing: Vec<ToolCall> = tool_calls.iter().skip(done).cloned().collect();
        let first = session.last_call + 1 - u64::try_from(missing.len()).unwrap_or(0);
        for (i, tc) in missing.into_iter().enumerate() {
            self.append(
                &mut session,
                LogRecord::ToolResult {
                    time: Timestamp::now(),
                    call: CallId(first + u64::try_from(i).unwrap_or(0)),
                    tool_call_id: tc.id,
                    content: composed::tool_text(&ToolResponse::failed(composed::INTERRUPTED)),
                    class: DataClass::Private,
                    untrusted: true,
                    truncated: false,
                    outcome: Some(proto::CallOutcome::Failed),
                },
            )?;
        }
        Ok(session)
    }

    /// The loaded epoch with the core memory it started from (`Store::core_of_epoch`).
    fn with_core(&self, mut session: Session) -> Result<Session, TurnError> {
        if session.core.is_none() {
            session.core = Some(
                self.store
                    .core_of_epoch(&self.config.core_memory_path(), &session)?,
            );
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
        // Pinned before the epoch's first record, so replay starts from the same bytes.
        let core = self
            .store
            .pin_current_core(&self.config.core_memory_path(), id, epoch)?;
        let mut session = Session {
            id: id.clone(),
            epoch,
            records: Vec::new(),
            summary,
            last_call,
            core: Some(core),
        };
        let baseline = core_memory::baseline(&session.system(), session.summary.as_deref());
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

    /// Takes `slot` for one request of session `id` (`slots::Sent::take`, within a request's
    /// time limit, unless `cancelled`) and records its number there as the session's last
    /// request on the slot.
    fn take_slot(
        &self,
        id: &SessionId,
        slot: u32,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<slots::OnSlot<'_>, slots::Waited> {
        let on_slot = self.sent.take(slot, self.timeout(), cancelled)?;
        if let Some(u) = lock(&self.used).get_mut(id) {
            u.seq = on_slot.seq;
        }
        Ok(on_slot)
    }

    /// Ends the epoch with a summary the model writes, and starts the next from it. The
    /// session id stays, so brokerd's taint and untrusted flag carry over unchanged.
    fn compact(
        &self,
        mut session: Session,
        n_ctx: u64,
        emit: &mut dyn FnMut(ChatEvent),
    ) -> Result<Session, TurnError> {
        let max_tokens = self.config.r#loop.max_tokens;
        let system = session.system();
        let sock = self.infer_sock();
        // The tools the epoch's requests offered, so the summary continues their cache.
        let tools = self.offered.get(&self.broker_sock());
        // Each of its requests is the session's own: its next is not counted as following
        // another session's.
        let slot = session.slot().unwrap_or(0);
        let counted = || self.take_slot(&session.id, slot, &|| false).ok();
        let server = compact::Server {
            sock: &sock,
            timeout: self.timeout(),
            counted: &counted,
        };
        let Some(summary) = compact::summary(&server, &system, &session, n_ctx, max_tokens, &tools)
        else {
            // The model cannot be reached now: the epoch goes on, a later turn compacts.
            return Ok(session);
        };
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

    /// Repairs a log the server would refuse to render (tool calls whose arguments are not
    /// JSON, as loopd logged cut calls before it checked the finish reason): a `withdrawn`
    /// record leaves them and their results out of every later request. The log itself is
    /// never rewritten.
    fn withdraw_unrenderable(&self, session: &mut Session) -> Result<(), TurnError> {
        let calls = prompt::unrenderable(&session.records);
        if calls.is_empty() {
            return Ok(());
        }
        daemon::log::warn(format_args!(
            "session {}: {} tool calls whose arguments are not JSON are withdrawn from the \
             history (the server cannot render them)",
            session.id,
            calls.len()
        ));
        self.append(
            session,
            LogRecord::Withdrawn {
                time: Timestamp::now(),
                cause: Withdrawal::Unrenderable,
                detail: "the arguments are not JSON".into(),
                calls,
            },
        )
    }

    /// The server's context size when the session's last answer filled
    /// `loop.compact_percent` of it: time to compact.
    fn near_full(&self, id: &SessionId) -> Option<u64> {
        let used = lock(&self.used).get(id).map_or(0, |u| u.filled);
        if used == 0 {
            return None;
        }
        let props = self.props().ok()?;
        (used * 100 >= props.n_ctx * u64::from(self.config.r#loop.compact_percent))
            .then_some(props.n_ctx)
    }
}

/// The reply of a turn that ended without an answer's text.
pub(super) fn ended(session: SessionId, end: TurnEnd) -> ChatReply {
    ChatReply {
        session,
        text: String::new(),
        end,
    }
}

mod run;
#[cfg(test)]
mod tests;
