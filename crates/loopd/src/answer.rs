//! What becomes of one answer of the model: the records it adds to the log, the tool calls
//! that run, and whether the turn ends with it. Only an answer that ended normally
//! (`finish_reason` `stop` or `tool_calls`) has its tool calls run; those of a cut answer
//! (`length`: `max_tokens` cut it, mid-arguments) are never sent to brokerd, and no call
//! whose arguments are not JSON is ever logged where the server would have to render it
//! (it answers HTTP 500 for the whole history then).

use proto::attest::AnswerWitness;
use proto::chat::TurnEnd;
use proto::{LogRecord, Timestamp, ToolCall, Withdrawal};

use crate::llm::Completion;

/// One answer, sorted.
#[derive(Debug)]
pub struct Sorted {
    /// The `assistant` record, with only the calls that run.
    pub assistant: LogRecord,
    /// The `withdrawn` record of the calls that do not, if any.
    pub withdrawn: Option<LogRecord>,
    /// The calls to send to brokerd, in order.
    pub run: Vec<ToolCall>,
    /// The completion inferproxy witnessed, and the index in it of each call of `run`.
    pub witness: Option<AnswerWitness>,
    /// How the turn ends with this answer; `None` when it goes on with the calls' results.
    pub end: Option<TurnEnd>,
    /// The answer's text.
    pub text: String,
}

/// Calls with their index in the answer.
type Indexed = Vec<(u32, ToolCall)>;

pub fn sort(Completion { answer: c, witness }: Completion, now: Timestamp) -> Sorted {
    let normal = c.runnable();
    let (run, withdrawn): (Indexed, Indexed) = (0u32..)
        .zip(c.tool_calls)
        .partition(|(_, call)| proto::composed::kept(normal, call));
    let witness = witness.map(|completion| AnswerWitness {
        completion,
        calls: run.iter().map(|(i, _)| *i).collect(),
    });
    let run: Vec<ToolCall> = run.into_iter().map(|(_, c)| c).collect();
    let withdrawn: Vec<ToolCall> = withdrawn.into_iter().map(|(_, c)| c).collect();
    let finish = c.finish.unwrap_or_else(|| "none".into());
    let n_withdrawn = u32::try_from(withdrawn.len()).unwrap_or(u32::MAX);
    let (cause, detail) = if normal {
        (
            Withdrawal::Unrenderable,
            "the arguments are not JSON".into(),
        )
    } else {
        (Withdrawal::Cut, format!("finish_reason {finish}"))
    };
    let withdrawn = (!withdrawn.is_empty()).then_some(LogRecord::Withdrawn {
        time: now,
        cause,
        detail,
        calls: withdrawn,
    });
    let end = if !normal {
        Some(TurnEnd::Cut {
            finish,
            withdrawn: n_withdrawn,
        })
    } else if run.is_empty() {
        Some(TurnEnd::Answered)
    } else {
        None
    };
    Sorted {
        assistant: LogRecord::Assistant {
            time: now,
            content: c.content.clone(),
            reasoning_content: c.reasoning,
            tool_calls: run.clone(),
            witness: witness.clone(),
        },
        withdrawn,
        run,
        witness,
        end,
        text: c.content.unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(arguments: &str) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: "list_dir".into(),
            arguments: arguments.into(),
        }
    }

    fn completion(finish: Option<&str>, calls: Vec<ToolCall>) -> Completion {
        let mut answer = proto::attest::Answer::default();
        answer.content = Some("Listing.".into());
        answer.tool_calls = calls;
        answer.finish = finish.map(str::to_owned);
        Completion {
            answer,
            witness: None,
        }
    }

    fn now() -> Timestamp {
        Timestamp::from_millis(0).expect("time")
    }

    #[test]
    fn a_cut_answer_runs_no_call_logs_none_and_ends_the_turn_saying_so() {
        // What llama-server streamed when max_tokens cut a call mid-string.
        let cut = call("{\"path\": \"/home/owner/no");
        for finish in [Some("length"), None, Some("content_filter")] {
            let s = sort(completion(finish, vec![cut.clone()]), now());
            assert!(s.run.is_empty(), "{finish:?}");
            assert!(
                matches!(&s.assistant, LogRecord::Assistant { tool_calls, content, .. }
                    if tool_calls.is_empty() && content.as_deref() == Some("Listing.")),
                "{:?}",
                s.assistant
            );
            assert!(matches!(
                &s.withdrawn,
                Some(LogRecord::Withdrawn { cause: Withdrawal::Cut, calls, .. }) if *calls == [cut.clone()]
            ));
            let want = finish.unwrap_or("none").to_owned();
            assert_eq!(
                s.end,
                Some(TurnEnd::Cut {
                    finish: want,
                    withdrawn: 1
                })
            );
            assert_eq!(s.text, "Listing.");
        }
        // A cut answer whose call happens to be whole JSON is not run either.
        let s = sort(completion(Some("length"), vec![call("{}")]), now());
        assert!(s.run.is_empty());
    }

    /// What brokerd accounts an answer as (its message and `composed::answer_forms`) holds
    /// the message loopd replays it as, byte for byte, whatever becomes of its calls.
    #[test]
    fn an_answer_is_replayed_as_one_of_the_forms_brokerd_accounts_for() {
        let cases = [
            (Some("tool_calls"), vec![call("{\"path\": \"/n\"}")]),
            (Some("tool_calls"), vec![call("{}"), call("{\"a\":")]),
            (Some("length"), vec![call("{\"path\": \"/no")]),
            (Some("stop"), vec![]),
        ];
        for (finish, calls) in cases {
            let c = completion(finish, calls);
            let a = c.answer.clone();
            let mut known = proto::composed::answer_forms(&a, false);
            known.push(a.message().digest());
            let s = sort(c, now());
            let mut records = vec![s.assistant];
            records.extend(s.withdrawn);
            let sent = crate::prompt::messages("sys", None, &records);
            let replayed: proto::attest::ChatMessage =
                serde_json::from_value(sent[1].clone()).expect("a message");
            assert!(
                known.contains(&replayed.digest()),
                "{finish:?}: {replayed:?}"
            );
        }
    }

    #[test]
    fn a_cut_text_answer_is_kept_and_the_turn_says_it_was_cut() {
        let s = sort(completion(Some("length"), vec![]), now());
        assert!(s.withdrawn.is_none());
        assert_eq!(
            s.end,
            Some(TurnEnd::Cut {
                finish: "length".into(),
                withdrawn: 0
            })
        );
    }

    #[test]
    fn a_normal_answer_runs_its_json_calls_and_withdraws_the_rest() {
        let good = call("{\"path\": \"/n\"}");
        let bad = call("{\"path\": ");
        let mut c = completion(Some("tool_calls"), vec![bad.clone(), good.clone()]);
        let id = proto::attest::CompletionId::from_random([7; 16]);
        c.witness = Some(id.clone());
        let s = sort(c, now());
        assert_eq!(s.run, std::slice::from_ref(&good));
        // The call that runs is named by its index in the answer the model gave.
        let w = s.witness.clone().expect("witnessed");
        assert_eq!((w.completion, w.calls), (id, vec![1]));
        assert_eq!(s.end, None, "the turn goes on with the results");
        assert!(
            matches!(&s.assistant, LogRecord::Assistant { tool_calls, .. } if *tool_calls == [good.clone()])
        );
        assert!(matches!(
            &s.withdrawn,
            Some(LogRecord::Withdrawn { cause: Withdrawal::Unrenderable, calls, .. }) if *calls == [bad]
        ));
        let s = sort(completion(Some("stop"), vec![]), now());
        assert_eq!(s.end, Some(TurnEnd::Answered));
        assert!(s.withdrawn.is_none());
    }
}
