use std::fmt;

use serde::Deserializer;
use serde::de::{self, Visitor};

/// A value that does not satisfy its type's rules: what was wrong, for a person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what}: {reason}")]
pub struct InvalidValue {
    what: &'static str,
    reason: String,
}

impl InvalidValue {
    pub(crate) fn new(what: &'static str, reason: impl Into<String>) -> Self {
        Self {
            what,
            reason: reason.into(),
        }
    }
}

/// Deserialises a string through `parse`, its type's validating constructor, without an
/// owned copy of the text first (the audit verifier reads several such fields a line).
pub(crate) fn deserialize_str<'de, D, T>(
    d: D,
    parse: fn(&str) -> Result<T, InvalidValue>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    struct Text<T>(fn(&str) -> Result<T, InvalidValue>);

    impl<T> Visitor<'_> for Text<T> {
        type Value = T;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            // What serde says for `String`, which these fields were read as before.
            f.write_str("a string")
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
            (self.0)(v).map_err(E::custom)
        }
    }

    d.deserialize_str(Text(parse))
}
