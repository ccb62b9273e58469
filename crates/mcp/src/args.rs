//! The model's arguments for an MCP tool: one JSON object of at most
//! [`proto::tools::MAX_ARGUMENTS`] bytes, parsed strictly (a duplicate key refuses it),
//! checked against the pinned schema, and put in canonical form for the constraints, the
//! approval binding, the audit and the server.

use serde_json::Value;

use crate::json::{canonical, parse_strict};
use crate::schema::{Schema, Violation};

/// Arguments that passed: the value and its canonical text.
#[derive(Debug, Clone, PartialEq)]
pub struct Arguments {
    pub value: Value,
    pub canonical: String,
}

/// Why the model's arguments were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgsError {
    #[error("the arguments are over {limit} bytes")]
    TooLarge { limit: usize },
    /// Not one JSON object, or a duplicate key.
    #[error("the arguments are not valid JSON: {detail}")]
    NotJson { detail: String },
    #[error("the arguments must be a JSON object")]
    NotObject,
    #[error("the arguments do not meet the tool's schema: {0}")]
    Schema(Violation),
}

/// Parses and checks the model's `arguments` text against `schema`.
pub fn parse(arguments: &str, schema: &Schema) -> Result<Arguments, ArgsError> {
    let limit = proto::tools::MAX_ARGUMENTS;
    if arguments.len() > limit {
        return Err(ArgsError::TooLarge { limit });
    }
    let value = parse_strict(arguments.as_bytes()).map_err(|e| ArgsError::NotJson {
        detail: e.to_string(),
    })?;
    if !value.is_object() {
        return Err(ArgsError::NotObject);
    }
    schema.validate(&value).map_err(ArgsError::Schema)?;
    Ok(Arguments {
        canonical: canonical(&value),
        value,
    })
}
