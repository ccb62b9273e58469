//! Which chat requests inferproxy witnesses (docs/decisions.md W3): only those whose every
//! top-level field is on a fixed list, which streams, offers exactly proto's tools, lets
//! the model choose (`tool_choice` `auto` or `none`), has every message in canonical form
//! and does not end with an assistant message (a prefill). A grammar, a JSON schema, a
//! response format, a logit bias, a template override, an unknown field, other tools or a
//! prefill can force what the model emits: a request carrying any of them is refused.

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor, value::MapAccessDeserializer};
use serde_json::{Number, Value};

use super::canonical::{ChatMessage, ChatRole, canonical_json};
use crate::Hash32;

/// The top-level fields a witnessable request may carry.
pub const WITNESSABLE_FIELDS: [&str; 16] = [
    "messages",
    "tools",
    "stream",
    "stream_options",
    "max_tokens",
    "id_slot",
    "cache_prompt",
    "tool_choice",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "seed",
    "repeat_penalty",
    "presence_penalty",
    "frequency_penalty",
];

/// The most of a field's name a refusal repeats.
const MAX_NAMED: usize = 64;

/// Why a request is not witnessable. `Display` is the refusal's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unwitnessable {
    /// The body is not a JSON object.
    #[error("the request is not a JSON object")]
    NotAnObject,
    /// A top-level field not on [`WITNESSABLE_FIELDS`] (its name, cut to 64 characters).
    #[error(
        "the field {0:?} is not one inferproxy can witness (it may force what the model emits)"
    )]
    Field(String),
    /// A listed field (or a message) in a shape the list does not allow, or given twice.
    #[error("a field has a shape inferproxy cannot witness: {0}")]
    Shape(String),
    /// `stream` is not `true`.
    #[error("the field \"stream\" must be true")]
    NotStreamed,
    /// `tools` is absent or not exactly proto's tool definitions.
    #[error("the field \"tools\" must be exactly boxmaker's tool definitions")]
    Tools,
    /// A message with a key its role does not allow.
    #[error("message {index} has the key {key:?}, which its role does not allow")]
    Message { index: usize, key: &'static str },
    /// No messages at all.
    #[error("the field \"messages\" is empty")]
    NoMessages,
    /// The last message is the assistant's: the model would continue it.
    #[error("the last message is the assistant's (a prefill forces how the answer starts)")]
    Prefill,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // read by the typed parse only: what it refuses is the point
struct Request {
    messages: Vec<Object<ChatMessage>>,
    tools: Value,
    stream: bool,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
    #[serde(default)]
    max_tokens: Option<u64>,
    #[serde(default)]
    id_slot: Option<i64>,
    #[serde(default)]
    cache_prompt: Option<bool>,
    #[serde(default)]
    tool_choice: Option<ToolChoice>,
    #[serde(default)]
    temperature: Option<Number>,
    #[serde(default)]
    top_p: Option<Number>,
    #[serde(default)]
    top_k: Option<Number>,
    #[serde(default)]
    min_p: Option<Number>,
    #[serde(default)]
    seed: Option<Number>,
    #[serde(default)]
    repeat_penalty: Option<Number>,
    #[serde(default)]
    presence_penalty: Option<Number>,
    #[serde(default)]
    frequency_penalty: Option<Number>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct StreamOptions {
    #[serde(default)]
    include_usage: Option<bool>,
}

/// `auto` and `none` only: `required` or a named function forces a call.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum ToolChoice {
    Auto,
    None,
}

/// `T` parsed from a JSON object only: serde's derived structs also take an array of their
/// fields in order, which llama-server would read otherwise (or refuse), so the witness
/// refuses it.
struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Only<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Only<T> {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(Only(PhantomData)).map(Object)
    }
}

/// Why the typed parse refused `body`: not an object, the first field off the list, or the
/// parse's own word (a shape, a field given twice).
fn refused(body: &[u8], typed: &serde_json::Error) -> Unwitnessable {
    let Ok(Value::Object(top)) = serde_json::from_slice::<Value>(body) else {
        return Unwitnessable::NotAnObject;
    };
    match top
        .keys()
        .find(|k| !WITNESSABLE_FIELDS.contains(&k.as_str()))
    {
        Some(name) => Unwitnessable::Field(name.chars().take(MAX_NAMED).collect()),
        None => Unwitnessable::Shape(typed.to_string()),
    }
}

/// Checks a chat request's body; `Ok` holds the digest of each of its messages, in order.
pub fn witnessable(body: &[u8]) -> Result<Vec<Hash32>, Unwitnessable> {
    // The typed parse refuses an unknown field and a field given twice; only a refused body
    // is parsed again, to say which field it was.
    let Object(request): Object<Request> =
        serde_json::from_slice(body).map_err(|e| refused(body, &e))?;
    let messages: Vec<&ChatMessage> = request.messages.iter().map(|Object(m)| m).collect();
    if !request.stream {
        return Err(Unwitnessable::NotStreamed);
    }
    if Hash32::digest(&canonical_json(&request.tools)) != super::tools_hash() {
        return Err(Unwitnessable::Tools);
    }
    for (index, m) in messages.iter().enumerate() {
        m.check()
            .map_err(|key| Unwitnessable::Message { index, key })?;
    }
    match messages.last() {
        None => return Err(Unwitnessable::NoMessages),
        Some(m) if m.role == ChatRole::Assistant => return Err(Unwitnessable::Prefill),
        Some(_) => {}
    }
    Ok(messages.iter().map(|m| m.digest()).collect())
}
