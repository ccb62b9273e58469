//! The model-and-tools loop of one turn: each request to the model server on the session's
//! slot, its answer logged, each tool call decided by brokerd and run, until the model
//! answers without tools or the per-turn cap is reached.

use daemon::lock;
use proto::chat::{ChatEvent, ChatReply, TurnEnd};
use proto::composed;
use proto::{CallId, LogRecord, Timestamp, ToolRequest, ToolResponse};

use super::{Looper, ended};
use crate::cancel::Cancel;
use crate::error::TurnError;
use crate::llm::{self, Delta};
use crate::slots::{self, Usage};
use crate::store::Session;
use crate::tools::for_model;
use crate::{answer, broker, prompt, tools};

impl Looper {
    /// The turn's requests and tool calls in `session`, each request on the session's slot
    /// alone (`slots::Sent::take`), until an answer without tools, the per-turn cap, the
    /// owner's cancel or an error of the model server.
    pub(super) fn run(
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
                return Ok(ended(session.id, TurnEnd::Cancelled));
            }
            // What the previous answer of this session left cacheable (its prompt and answer).
            let previous = lock(&self.used).get(&session.id).copied();
            let messages = prompt::messages(
                &session.system(),
                session.summary.as_deref(),
                &session.records,
            );
            // What brokerd offers now (a pin takes effect at the next request).
            let tools = self.offered.get(&self.broker_sock());
            let body = prompt::body(messages, slot, self.config.r#loop.max_tokens, &tools);
            // Counted before it is sent, the slot this request's alone until its answer is
            // in (`slots::Sent::take`). Whatever becomes of it, it is the session's last
            // request on the slot (`seq`); a loss after another session's is `shared`.
            let on_slot = match self.take_slot(&session.id, slot, &|| cancel.is_cancelled()) {
                Ok(on_slot) => on_slot,
                Err(slots::Waited::Cancelled) => return Ok(ended(session.id, TurnEnd::Cancelled)),
                Err(slots::Waited::TimedOut) => {
                    let detail = format!(
                        "the model server's slot {slot} stayed busy with another session's \
                         request for longer than a request may take ({} s)",
                        self.timeout().as_secs()
                    );
                    return Ok(ended(session.id, TurnEnd::ModelError { detail }));
                }
            };
            let seq = on_slot.seq;
            let shared = previous.is_some_and(|u| slots::shared(u.seq, seq));
            let completion = llm::complete(
                &self.infer_sock(),
                self.timeout(),
                &body,
                Some(cancel),
                |d| match d {
                    Delta::Text(t) => emit(ChatEvent::Text {
                        delta: t.to_owned(),
                    }),
                    Delta::Reasoning(t) => emit(ChatEvent::Reasoning {
                        delta: t.to_owned(),
                    }),
                },
            );
            cancel.streaming(None);
            drop(on_slot);
            let completion = match completion {
                Ok(c) => c,
                // Cut by the owner's cancel: nothing of it is logged, as for a broken stream.
                Err(_) if cancel.is_cancelled() => {
                    return Ok(ended(session.id, TurnEnd::Cancelled));
                }
                Err(e) => {
                    if e.context_full() || e.unrenderable() {
                        // The history no longer fits, or the server refuses to render it
                        // though loopd found nothing to withdraw: the next turn starts a
                        // new epoch.
                        lock(&self.used).insert(
                            session.id.clone(),
                            Usage {
                                filled: u64::MAX / 200,
                                cacheable: 0,
                                seq,
                            },
                        );
                    }
                    return Ok(ended(
                        session.id,
                        TurnEnd::ModelError {
                            detail: e.to_string(),
                        },
                    ));
                }
            };
            if let Some(t) = completion.answer.timings {
                if let Some(expected) = previous.map(|u| u.cacheable)
                    && t.cache_n < expected
                {
                    self.append(
                        &mut session,
                        LogRecord::CacheLoss {
                            time: Timestamp::now(),
                            expected,
                            got: t.cache_n,
                            shared,
                        },
                    )?;
                }
                lock(&self.used).insert(session.id.clone(), Usage::after(&t, seq));
            }
            let sorted = answer::sort(completion, Timestamp::now());
            self.append(&mut session, sorted.assistant)?;
            if let Some(w) = sorted.withdrawn {
                self.append(&mut session, w)?;
            }
            if let Some(end) = sorted.end {
                return Ok(ChatReply {
                    session: session.id,
                    text: sorted.text,
                    end,
                });
            }
            for (i, tc) in sorted.run.iter().enumerate() {
                session.last_call += 1;
                let call = CallId(session.last_call);
                calls += 1;
                let response = if calls > cap {
                    ToolResponse::failed(composed::over_cap(cap))
                } else if cancel.is_cancelled() {
                    // Every call the model asked for gets its result, so the log stays whole.
                    ToolResponse::failed(composed::CANCELLED)
                } else if let Some(witness) = sorted.witness.as_ref().and_then(|w| w.of_call(i)) {
                    emit(ChatEvent::ToolCall {
                        call,
                        tool: tc.name.clone(),
                        arguments: tc.arguments.clone(),
                    });
                    let request = ToolRequest {
                        session: session.id.clone(),
                        call,
                        tool: tc.name.clone(),
                        arguments: tc.arguments.clone(),
                        witness: Some(witness),
                    };
                    broker::call(&self.broker_sock(), request, cancel, |p| {
                        emit(ChatEvent::ToolResponse { call, response: p });
                    })
                } else {
                    ToolResponse::failed(composed::UNWITNESSED)
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
                return Ok(ended(session.id, TurnEnd::ToolCap { calls: cap }));
            }
        }
    }
}
