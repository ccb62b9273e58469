//! The messages loopd composes itself (docs/decisions.md X1), beside `attest`, in the one
//! form brokerd recomputes to account for them: the system message (the pinned core
//! memory), the summary an epoch starts from, a tool message for each [`ToolResponse`]
//! brokerd returned (a result, a denial, a failure notice), the notices loopd writes in
//! place of a result it never got (an interrupted call, the per-turn cap, the owner's
//! cancel, an unwitnessed answer), a tool result cut short for the summary of an overflowed
//! history, and an answer replayed without the calls it withdrew. loopd builds these
//! messages with these functions only, so an honest session's messages match what brokerd
//! computes byte for byte.

use crate::attest::{Answer, ChatMessage};
use crate::{Hash32, ToolCall, ToolResponse};

pub mod streamed;

/// The core memory when the owner has written none (`memory/core.md` absent).
pub const DEFAULT_CORE: &str = "You are boxmaker, the owner's personal assistant. Use the \
tools when they help; every tool call is checked against the owner's grants and may be \
refused.";

/// How the summary an epoch starts from is introduced.
pub const SUMMARY_HEAD: &str = "Summary of the conversation so far:\n";

/// The summary when the model could not write one.
pub const NO_SUMMARY: &str = "(The earlier part of this conversation could not be \
summarised; ask the owner for anything needed from it.)";

/// The failure loopd writes for a call an earlier loopd sent but never logged the result of.
pub const INTERRUPTED: &str = "interrupted (loopd stopped before its result)";

/// The failure loopd writes for a call the owner's cancel stopped before it was sent.
pub const CANCELLED: &str = "not run: the owner cancelled the turn";

/// The request for a summary when the context is nearly full. The local model writes it:
/// it is the only one that has read the conversation, and nothing leaves the host.
pub const SUMMARY_PROMPT: &str = "The conversation is about to be cut short. Write a concise \
summary of everything above that you will need to continue: the owner's requests, facts \
learned, decisions taken and open tasks. Write only the summary, as plain text.";

/// The request when the first summary was cut by its cap.
pub const SHORT_PROMPT: &str = "The conversation is about to be cut short. In at most three \
short sentences, write what the owner asked for and what is still open. Write only that, \
as plain text.";

/// The failure loopd writes for a call of an answer inferproxy named no completion for
/// (brokerd would refuse it): unaccounted, as that answer is.
pub const UNWITNESSED: &str = "not run: inferproxy did not witness the answer";

/// How much of a tool result the summary of an overflowed history keeps.
pub const SUMMARY_RESULT_BYTES: usize = 2048;

/// The system message of an epoch: its pinned core memory.
pub fn system(core: &str) -> ChatMessage {
    ChatMessage::system(core)
}

/// The message after the system message of an epoch that starts from a summary: an
/// assistant message (the model wrote it; docs/decisions.md L18).
pub fn summary(text: &str) -> ChatMessage {
    ChatMessage::assistant(Some(format!("{SUMMARY_HEAD}{text}")), None, &[])
}

/// An owner's message, as the channel that received it registers it and loopd sends it.
pub fn owner(text: &str) -> ChatMessage {
    ChatMessage::user(text)
}

/// The user message that asks for a summary: [`SUMMARY_PROMPT`] or [`SHORT_PROMPT`] (loopd's
/// own words, the only user messages no channel registers).
pub fn instruction(text: &str) -> ChatMessage {
    ChatMessage::user(text)
}

/// The failure loopd writes for a call past `loop.max_tool_calls` (`cap`) in one turn.
pub fn over_cap(cap: u32) -> String {
    format!("not run: the limit of {cap} tool calls per turn was reached")
}

/// What the model reads of a tool's answer.
pub fn tool_text(r: &ToolResponse) -> String {
    match r {
        ToolResponse::Result { content, .. } => content.clone(),
        ToolResponse::Denied { reason, detail } => {
            let detail = detail
                .as_deref()
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            format!("denied by the owner's policy ({}){detail}", reason.as_str())
        }
        ToolResponse::Failed { message, .. } => format!("the tool failed: {message}"),
        ToolResponse::PendingApproval { .. } => "no answer".into(),
    }
}

/// The tool message of the call `tool_call_id` whose answer was `r`.
pub fn tool_message(tool_call_id: &str, r: &ToolResponse) -> ChatMessage {
    ChatMessage::tool(tool_call_id, tool_text(r))
}

/// A tool result's text as the summary of an overflowed history keeps it; `None` when it
/// is short enough to be kept whole.
pub fn trimmed(content: &str) -> Option<String> {
    if content.len() <= SUMMARY_RESULT_BYTES {
        return None;
    }
    let mut cut = SUMMARY_RESULT_BYTES;
    while !content.is_char_boundary(cut) {
        cut -= 1;
    }
    Some(format!("{} [cut for the summary]", &content[..cut]))
}

/// Whether a tool call's arguments are JSON text (any value: the server renders `"s"` and
/// `[1]`; it refuses only what does not parse).
pub fn is_json(arguments: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(arguments).is_ok()
}

/// Whether a call of an answer runs (and stays in the history): the answer ended normally
/// and the call's arguments are JSON. The others are withdrawn.
pub fn kept(runnable: bool, call: &ToolCall) -> bool {
    runnable && is_json(&call.arguments)
}

/// The assistant message an answer is replayed as once the calls loopd withdrew are left
/// out; `None` when nothing of it is left to send (an answer left empty by its withdrawn
/// calls is not sent at all).
pub fn replay(
    content: Option<String>,
    reasoning: Option<String>,
    calls: &[&ToolCall],
    withdrew: bool,
) -> Option<ChatMessage> {
    let empty = calls.is_empty() && content.as_deref().is_none_or(str::is_empty);
    if withdrew && empty && reasoning.is_none() {
        return None;
    }
    Some(ChatMessage::assistant(content, reasoning, calls))
}

/// Every digest an honest loopd may send `answer` as, besides [`Answer::message`] itself:
/// its replay without the calls it withdraws, and the summary message an epoch starts from
/// when the answer is a summary (`summary`: its prompt asked for one, [`asks_summary`]; it
/// ended with `stop` and has text). brokerd accounts each at the label of the prompt that
/// produced the answer. inferproxy computes the same digests as the answer streams
/// ([`streamed::AnswerDigests`]).
pub fn answer_forms(answer: &Answer, summary: bool) -> Vec<Hash32> {
    let text = answer.content.as_deref();
    let (whole, others) = forms(answer, summary);
    let whole = whole.digest(text);
    distinct(whole, others.iter().map(|f| f.digest(text)))
}

/// Whether a prompt (its messages' digests) asks for a summary: its last message is loopd's
/// instruction to write one ([`SUMMARY_PROMPT`], [`SHORT_PROMPT`]). Only the answer to such
/// a prompt has a summary form: an epoch an honest loopd starts from any other answer's
/// text is not accounted for (fail closed).
pub fn asks_summary(prompt: &[Hash32]) -> bool {
    static ASKS: std::sync::OnceLock<[Hash32; 2]> = std::sync::OnceLock::new();
    let asks =
        ASKS.get_or_init(|| [SUMMARY_PROMPT, SHORT_PROMPT].map(|text| instruction(text).digest()));
    prompt.last().is_some_and(|last| asks.contains(last))
}

/// One message an answer may be sent as, its text left out: its content is `head` and the
/// answer's text (`None`: the answer has no text, and the message's content is null).
#[derive(Debug)]
struct Form {
    head: &'static str,
    /// The message with an empty content where the text goes.
    message: ChatMessage,
}

impl Form {
    fn of(message: ChatMessage) -> Self {
        Self { head: "", message }
    }

    /// The digest of this form for the answer's `text`.
    fn digest(&self, text: Option<&str>) -> Hash32 {
        let content = text.map(|t| format!("{}{t}", self.head));
        ChatMessage {
            content,
            ..self.message.clone()
        }
        .digest()
    }
}

/// The answer's own message and its other forms, each without the answer's text (the one
/// list of forms both [`answer_forms`] and [`streamed::AnswerDigests`] digest).
fn forms(answer: &Answer, summary_asked: bool) -> (Form, Vec<Form>) {
    let text = answer.content.as_deref();
    let left_out = text.map(|_| String::new());
    let every: Vec<&ToolCall> = answer.tool_calls.iter().collect();
    let reasoning = answer.reasoning.clone();
    let whole = Form::of(ChatMessage::assistant(
        left_out.clone(),
        reasoning.clone(),
        &every,
    ));
    let runnable = answer.runnable();
    let calls: Vec<&ToolCall> = answer
        .tool_calls
        .iter()
        .filter(|c| kept(runnable, c))
        .collect();
    let withdrew = calls.len() < answer.tool_calls.len();
    let mut others = Vec::new();
    // Whether the replay is left out depends on whether the text is empty, not on the text.
    let emptiness = text.map(|t| if t.is_empty() { "" } else { "text" }.to_owned());
    if replay(emptiness, reasoning.clone(), &calls, withdrew).is_some() {
        others.push(Form::of(ChatMessage::assistant(
            left_out, reasoning, &calls,
        )));
    }
    let written = answer.finish.as_deref() == Some("stop");
    if summary_asked && written && text.is_some_and(|t| !t.trim().is_empty()) {
        others.push(Form {
            head: SUMMARY_HEAD,
            message: ChatMessage {
                content: Some(String::new()),
                ..summary("")
            },
        });
    }
    (whole, others)
}

/// The forms' digests other than the whole message's, each once.
fn distinct(whole: Hash32, others: impl Iterator<Item = Hash32>) -> Vec<Hash32> {
    let mut out: Vec<Hash32> = others.filter(|d| *d != whole).collect();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DenyReason;

    pub(super) fn call(id: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "http_fetch".into(),
            arguments: arguments.into(),
        }
    }

    fn answer(finish: &str, content: Option<&str>, calls: Vec<ToolCall>) -> Answer {
        let mut a = Answer::default();
        a.finish = Some(finish.into());
        a.content = content.map(str::to_owned);
        a.tool_calls = calls;
        a
    }

    #[test]
    fn the_notices_loopd_writes_have_one_form_each() {
        let denied = ToolResponse::Denied {
            reason: DenyReason::TaintTooHigh,
            detail: Some("secret".into()),
        };
        assert_eq!(
            String::from_utf8(tool_message("c1", &denied).canonical()).expect("utf-8"),
            "{\"content\":\"denied by the owner's policy (taint_too_high): secret\",\
             \"role\":\"tool\",\"tool_call_id\":\"c1\"}"
        );
        assert_eq!(
            tool_text(&ToolResponse::failed(INTERRUPTED)),
            "the tool failed: interrupted (loopd stopped before its result)"
        );
        assert_eq!(
            tool_text(&ToolResponse::failed(over_cap(8))),
            "the tool failed: not run: the limit of 8 tool calls per turn was reached"
        );
        assert_eq!(
            String::from_utf8(summary("tea").canonical()).expect("utf-8"),
            "{\"content\":\"Summary of the conversation so far:\\ntea\",\"role\":\"assistant\"}"
        );
        assert_eq!(system("core").to_value()["role"], "system");
    }

    #[test]
    fn a_result_is_cut_for_the_summary_on_a_char_boundary_and_only_when_long() {
        assert_eq!(trimmed(&"a".repeat(SUMMARY_RESULT_BYTES)), None);
        let long = format!("{}é", "a".repeat(SUMMARY_RESULT_BYTES - 1));
        let cut = trimmed(&long).expect("cut");
        assert_eq!(
            cut,
            format!(
                "{} [cut for the summary]",
                "a".repeat(SUMMARY_RESULT_BYTES - 1)
            )
        );
    }

    #[test]
    fn an_answer_has_a_form_for_each_way_loopd_may_send_it() {
        // Whole and runnable: the answer itself is the only form.
        let whole = answer("tool_calls", None, vec![call("a", "{}")]);
        assert!(answer_forms(&whole, false).is_empty());
        // Cut: replayed without its call, or not at all when nothing else is left.
        let cut = answer("length", Some("Fetching."), vec![call("a", "{\"url\": ")]);
        let want = ChatMessage::assistant(Some("Fetching.".into()), None, &[]).digest();
        assert_eq!(answer_forms(&cut, false), vec![want]);
        let bare = answer("length", None, vec![call("a", "{\"url\": ")]);
        assert!(answer_forms(&bare, false).is_empty());
        // One call not JSON in a normal answer: the rest stays.
        let good = call("g", "{}");
        let mixed = answer("tool_calls", None, vec![good.clone(), call("b", "{")]);
        let want = ChatMessage::assistant(None, None, &[&good]).digest();
        assert_eq!(answer_forms(&mixed, false), vec![want]);
        // A summary: the message the next epoch starts from, for an answer to loopd's ask.
        let s = answer("stop", Some("the owner likes tea"), vec![]);
        assert_eq!(
            answer_forms(&s, true),
            vec![summary("the owner likes tea").digest()]
        );
        assert!(
            answer_forms(&s, false).is_empty(),
            "no summary was asked for"
        );
        assert!(answer_forms(&answer("stop", Some("  "), vec![]), true).is_empty());
        assert!(answer_forms(&answer("length", Some("t"), vec![]), true).is_empty());
    }

    #[test]
    fn a_prompt_asks_for_a_summary_when_it_ends_with_loopds_instruction() {
        let asked = |last: ChatMessage| asks_summary(&[system("core").digest(), last.digest()]);
        assert!(asked(instruction(SUMMARY_PROMPT)));
        assert!(asked(instruction(SHORT_PROMPT)));
        assert!(!asked(owner(SUMMARY_PROMPT.trim_end_matches('.'))));
        assert!(!asked(ChatMessage::system(SUMMARY_PROMPT)));
        assert!(!asks_summary(&[]));
    }
}
