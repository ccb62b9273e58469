//! The script file: server settings, ordered rules and a default answer (format in the crate
//! docs and `docs/fake-llama-server.md`).

use serde::Deserialize;
use std::fmt;
use std::path::Path;

use crate::render::Msg;

/// A whole script, as read from TOML. Unknown keys anywhere are an error, so a typo in a test
/// fixture fails loudly instead of silently matching everything.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// What `/props` and `/slots` report and how the server behaves overall.
    #[serde(default)]
    pub server: ServerSettings,
    /// Ordered rules; the first one that matches answers.
    #[serde(default, rename = "rule")]
    pub rules: Vec<Rule>,
    /// The answer when no rule matches (a fixed text when absent).
    #[serde(default)]
    pub default: Option<Answer>,
}

/// The `[server]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerSettings {
    /// Context size of one slot, in (fake) tokens, as `/props` and `/slots` report it.
    pub n_ctx: usize,
    /// Number of slots (`total_slots` in `/props`).
    pub total_slots: usize,
    /// Model path, reported as `model` in completions and `model_path` in `/props`.
    pub model: String,
    /// `/health` (and every other endpoint) answers 503 for this long after start.
    pub loading_ms: u64,
    /// Whether the "template" has reasoning: only then may answers carry `reasoning`.
    pub reasoning: bool,
    /// Size, in characters, of the pieces a streamed text is split into when an answer gives
    /// no explicit `chunks`.
    pub chunk_chars: usize,
    /// `build_info` in `/props` and `system_fingerprint` in completions.
    pub build_info: String,
    /// Serve `/metrics` (llama-server's `--metrics`); without it `/metrics` answers 501.
    pub metrics: bool,
    /// What `/props` says of the template's tool support (`chat_template_caps`): `false`
    /// reports what llama-server says of a template without it (SmolLM2's own). Only the
    /// report changes; the fake renders and answers tools all the same.
    pub tools: bool,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            n_ctx: 4096,
            total_slots: 1,
            model: "/models/fake-llama-server.gguf".to_owned(),
            loading_ms: 0,
            reasoning: false,
            chunk_chars: 4,
            build_info: "b0-fake-llama-server".to_owned(),
            metrics: false,
            tools: true,
        }
    }
}

/// One `[[rule]]`: conditions (all must hold) and the answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// A label for the request log (`GET /fake/requests`).
    #[serde(default)]
    pub name: Option<String>,
    /// The rule answers at most this many requests, then is skipped.
    #[serde(default)]
    pub max_uses: Option<u64>,
    /// The conditions; an empty table matches every request.
    #[serde(default, rename = "match")]
    pub when: Match,
    /// What to answer.
    pub answer: Answer,
}

/// Conditions on the conversation in a request. Absent conditions are not checked.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Match {
    /// The number of `user` messages in the request.
    pub turn: Option<usize>,
    /// The last `user` message's text contains this.
    pub user_contains: Option<String>,
    /// The last `user` message's text has one of these words: a whole word, letters and
    /// digits between anything else, compared without case (`list` is not in `playlist`).
    pub user_words: Option<Vec<String>>,
    /// The last `user` message's text is exactly this.
    pub user_equals: Option<String>,
    /// The last message is a `tool` result whose content contains this (`""`: any result).
    pub tool_result_contains: Option<String>,
    /// The most recent tool call in the history (the last one of the last assistant message
    /// that has tool calls) is to this function.
    pub last_tool: Option<String>,
    /// Some message's text content (any role: the system prompt, a summary, a tool result)
    /// contains this.
    pub history_contains: Option<String>,
}

/// An answer: a reply (text, reasoning, tool calls), or an HTTP error, with optional delays
/// and stream faults.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    /// The reply's `content`. `{last_user}` is replaced with the last user message's text.
    pub text: Option<String>,
    /// An explicit split of the text into stream deltas (their concatenation is the text).
    pub chunks: Option<Vec<String>>,
    /// The reply's `reasoning_content` (needs `server.reasoning = true`).
    pub reasoning: Option<String>,
    /// Tool calls, in order.
    #[serde(default)]
    pub tool_calls: Vec<ToolCallSpec>,
    /// Overrides the finish reason (`stop`, `length` or `tool_calls` by default as fits).
    pub finish_reason: Option<String>,
    /// Wait this long before answering (holding the slot, as a busy model would).
    #[serde(default)]
    pub delay_ms: u64,
    /// Wait this long before each stream chunk after the first.
    #[serde(default)]
    pub chunk_delay_ms: u64,
    /// Answer with this HTTP error instead of a reply.
    pub error: Option<ErrorSpec>,
    /// After this many `data:` events, send one line that is not valid SSE JSON, then go on.
    pub malformed_after: Option<usize>,
    /// After this many `data:` events, close the connection (no `[DONE]`, no final chunk).
    pub truncate_after: Option<usize>,
    /// Generate the reply's token at this index (or the first longer than one character
    /// after it) as two tokens, a split the tokenizer would not make: replayed as text, the
    /// reply misses the cache from there (`tokens.rs`).
    pub split_token: Option<usize>,
}

/// One scripted tool call.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCallSpec {
    /// The function name.
    pub name: String,
    /// The arguments, a JSON text sent verbatim as the `arguments` string.
    pub arguments: String,
    /// The call id; a random 32-character id like the real server's when absent.
    pub id: Option<String>,
}

/// A scripted HTTP error, sent in llama-server's error shape.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorSpec {
    /// HTTP status, 400 to 599.
    pub status: u16,
    /// `error.message`.
    pub message: String,
    /// `error.type`; derived from the status as llama-server does when absent.
    #[serde(rename = "type")]
    pub kind: Option<String>,
}

/// Why a script cannot be used.
#[derive(Debug)]
pub struct ScriptError(String);

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ScriptError {}

impl Script {
    /// Reads and checks a script file.
    pub fn load(path: &Path) -> Result<Self, ScriptError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ScriptError(format!("cannot read script {}: {e}", path.display())))?;
        Self::parse(&text).map_err(|e| ScriptError(format!("script {}: {e}", path.display())))
    }

    /// Parses and checks a script's text.
    pub fn parse(text: &str) -> Result<Self, ScriptError> {
        let script: Self = toml::from_str(text).map_err(|e| ScriptError(e.to_string()))?;
        script.check()?;
        Ok(script)
    }

    fn check(&self) -> Result<(), ScriptError> {
        let s = &self.server;
        if s.total_slots == 0 || s.total_slots > 64 {
            return Err(ScriptError("server.total_slots must be 1 to 64".into()));
        }
        if s.n_ctx < 16 {
            return Err(ScriptError("server.n_ctx must be at least 16".into()));
        }
        if s.chunk_chars == 0 {
            return Err(ScriptError("server.chunk_chars must be at least 1".into()));
        }
        for (i, rule) in self.rules.iter().enumerate() {
            let label = rule
                .name
                .clone()
                .unwrap_or_else(|| format!("rule {}", i + 1));
            rule.answer
                .check(s.reasoning)
                .map_err(|e| ScriptError(format!("{label}: {e}")))?;
            rule.when
                .check()
                .map_err(|e| ScriptError(format!("{label}: {e}")))?;
        }
        if let Some(answer) = &self.default {
            answer
                .check(s.reasoning)
                .map_err(|e| ScriptError(format!("default: {e}")))?;
        }
        Ok(())
    }

    /// The first rule that matches `messages` and still has uses left (`uses[i]` counts the
    /// answers rule `i` gave), or `None` for the default answer.
    pub fn pick(&self, messages: &[Msg], uses: &[u64]) -> Option<usize> {
        self.rules.iter().enumerate().position(|(i, rule)| {
            let used = uses.get(i).copied().unwrap_or(0);
            rule.max_uses.is_none_or(|max| used < max) && rule.when.matches(messages)
        })
    }
}

impl Answer {
    fn check(&self, reasoning_on: bool) -> Result<(), String> {
        if let Some(error) = &self.error
            && !(400..=599).contains(&error.status)
        {
            return Err(format!("error.status {} is not 400 to 599", error.status));
        }
        if self.reasoning.is_some() && !reasoning_on {
            return Err(
                "`reasoning` needs `server.reasoning = true` (a template with \
                        reasoning), as llama-server only splits reasoning out then"
                    .into(),
            );
        }
        if let (Some(text), Some(chunks)) = (&self.text, &self.chunks)
            && chunks.concat() != *text
        {
            return Err("`chunks` do not add up to `text`".into());
        }
        for call in &self.tool_calls {
            if call.name.is_empty() {
                return Err("a tool call has an empty name".into());
            }
            if let Err(e) = serde_json::from_str::<serde_json::Value>(&call.arguments) {
                return Err(format!(
                    "tool call `{}`: arguments are not JSON ({e}); llama-server only ever \
                     sends parsed arguments",
                    call.name
                ));
            }
        }
        if let Some(reason) = &self.finish_reason
            && !["stop", "length", "tool_calls"].contains(&reason.as_str())
        {
            return Err(format!(
                "finish_reason `{reason}` is not stop, length or tool_calls"
            ));
        }
        Ok(())
    }

    /// The answer when no rule matches and the script has no `[default]`.
    pub fn builtin_default() -> Self {
        Self {
            text: Some("This is fake-llama-server. No rule matched this conversation.".into()),
            ..Self::default()
        }
    }
}

/// The words of `text`: runs of letters and digits, lower-cased.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

impl Match {
    fn check(&self) -> Result<(), String> {
        for word in self.user_words.iter().flatten() {
            if word.is_empty() || !word.chars().all(char::is_alphanumeric) {
                return Err(format!(
                    "user_words entry {word:?} is not one word (letters and digits only)"
                ));
            }
        }
        if self.user_words.as_ref().is_some_and(Vec::is_empty) {
            return Err("user_words is empty: give at least one word".into());
        }
        Ok(())
    }

    /// Whether every condition given holds for `messages`.
    pub fn matches(&self, messages: &[Msg]) -> bool {
        let user_text = messages
            .iter()
            .rev()
            .find(|m| m.role == "user")
            .map(|m| m.content.as_str());
        let turns = messages.iter().filter(|m| m.role == "user").count();
        let last_call = messages.iter().rev().find_map(|m| {
            (m.role == "assistant")
                .then(|| m.tool_calls.last())
                .flatten()
        });
        let tool_result = messages
            .last()
            .filter(|m| m.role == "tool")
            .map(|m| m.content.as_str());
        self.turn.is_none_or(|turn| turn == turns)
            && self
                .user_contains
                .as_ref()
                .is_none_or(|needle| user_text.is_some_and(|t| t.contains(needle.as_str())))
            && self.user_words.as_ref().is_none_or(|wanted| {
                user_text
                    .is_some_and(|t| words(t).any(|w| wanted.iter().any(|x| x.to_lowercase() == w)))
            })
            && self
                .user_equals
                .as_ref()
                .is_none_or(|exact| user_text == Some(exact.as_str()))
            && self
                .tool_result_contains
                .as_ref()
                .is_none_or(|needle| tool_result.is_some_and(|t| t.contains(needle.as_str())))
            && self
                .last_tool
                .as_ref()
                .is_none_or(|name| last_call.is_some_and(|c| c.name == *name))
            && self
                .history_contains
                .as_ref()
                .is_none_or(|needle| messages.iter().any(|m| m.content.contains(needle.as_str())))
    }
}
