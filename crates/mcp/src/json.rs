//! JSON as MCP needs it here: parsed strictly (a duplicate key anywhere is refused, where
//! `serde_json::Value` would keep the last one silently), written canonically (keys sorted
//! by their UTF-8 bytes, no whitespace), and looked into with JSON pointers (RFC 6901).

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Why a JSON text was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct JsonError(pub String);

/// Parses one JSON text into a [`Value`], refusing a duplicate key in any object and
/// anything after the value but whitespace. Nesting is bounded by serde_json's own limit
/// (128 levels).
pub fn parse_strict(text: &[u8]) -> Result<Value, JsonError> {
    let mut de = serde_json::Deserializer::from_slice(text);
    let value = de
        .deserialize_any(StrictVisitor)
        .map_err(|e| JsonError(e.to_string()))?;
    de.end().map_err(|e| JsonError(e.to_string()))?;
    Ok(value)
}

/// Builds a `Value` like serde_json's own, but an object with the same key twice is an error.
struct StrictVisitor;

/// The same rule for each element and member.
struct Strict(Value);

impl<'de> de::Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("a number that is not finite"))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if members.contains_key(&key) {
                return Err(de::Error::custom(format_args!("duplicate key {key:?}")));
            }
            let Strict(value) = map.next_value()?;
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }
}

/// The canonical text of `value`: object keys sorted by their UTF-8 bytes, no whitespace,
/// strings and numbers as serde_json writes them. Constraints match it, approvals bind to
/// it, the audit keeps it, pin hashes are taken over it.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&quoted(key));
                out.push(':');
                if let Some(member) = map.get(key) {
                    write_canonical(member, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        // A scalar's text is serde_json's (escapes, shortest round-trip floats).
        scalar => out.push_str(&scalar.to_string()),
    }
}

fn quoted(key: &str) -> String {
    Value::String(key.to_owned()).to_string()
}

/// Why a JSON pointer could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PointerError {
    /// Not empty and not starting with `/`.
    #[error("the JSON pointer {0:?} must be empty or start with /")]
    NoLeadingSlash(String),
    /// A `~` not followed by `0` or `1`.
    #[error("the JSON pointer {0:?} has a ~ that is not ~0 (for ~) or ~1 (for /)")]
    BadEscape(String),
}

/// Checks a JSON pointer's syntax and returns its reference tokens, unescaped.
pub fn pointer_tokens(pointer: &str) -> Result<Vec<String>, PointerError> {
    if pointer.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err(PointerError::NoLeadingSlash(pointer.to_owned()));
    };
    rest.split('/')
        .map(|token| {
            let mut out = String::with_capacity(token.len());
            let mut chars = token.chars();
            while let Some(c) = chars.next() {
                if c != '~' {
                    out.push(c);
                    continue;
                }
                match chars.next() {
                    Some('0') => out.push('~'),
                    Some('1') => out.push('/'),
                    _ => return Err(PointerError::BadEscape(pointer.to_owned())),
                }
            }
            Ok(out)
        })
        .collect()
}

/// The value `pointer` names in `value`, `None` when nothing is there. An array index is
/// decimal digits without a leading zero (`-`, the end of the array, names nothing).
pub fn lookup<'v>(value: &'v Value, pointer: &str) -> Result<Option<&'v Value>, PointerError> {
    let mut here = value;
    for token in pointer_tokens(pointer)? {
        let next = match here {
            Value::Object(map) => map.get(&token),
            Value::Array(items) => array_index(&token).and_then(|i| items.get(i)),
            _ => None,
        };
        match next {
            Some(v) => here = v,
            None => return Ok(None),
        }
    }
    Ok(Some(here))
}

fn array_index(token: &str) -> Option<usize> {
    let digits = !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit());
    if !digits || (token.len() > 1 && token.starts_with('0')) {
        return None;
    }
    token.parse().ok()
}

/// `token` escaped for a pointer (`~` as `~0`, `/` as `~1`), for naming where a schema
/// violation is.
pub fn escape_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}
