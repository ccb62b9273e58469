//! The JSON Schema subset MCP tools' input schemas use, compiled once (at pin time) and
//! checked against every call's arguments before anything runs.
//!
//! Supported, from what the reference servers (time, fetch, git, filesystem, everything)
//! send: `type` (a name or a list of names), `properties`, `required`,
//! `additionalProperties`, `items` (one schema), `minItems`, `maxItems`, `enum`, `const`,
//! `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum` (numbers, as since
//! draft 6), `minLength`, `maxLength`, `anyOf`, `oneOf`; the annotations `title`,
//! `description`, `default`, `examples`, `format` (never checked), `$comment`; `$schema` at
//! the root, naming draft-07, 2019-09 or 2020-12. Any other keyword refuses the schema,
//! so nothing is offered that is not validated (`$ref`, `pattern`, `allOf`, ...).
//!
//! One rule is stricter than JSON Schema: in an object schema (one whose `type` names
//! object, or that has `properties`), a member not declared in `properties` is refused
//! unless `additionalProperties` says what it may be (true, or a schema); JSON Schema would
//! let it through to the server unchecked.

mod check;
mod compile;
mod tree;

use serde_json::Value;

pub use compile::{MAX_DEPTH, MAX_NODES};
use tree::Node;
pub use tree::{SchemaError, Violation};

/// A compiled input schema. Its root is an object schema (`"type": "object"`).
#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    root: Node,
}

impl Schema {
    /// Compiles an input schema, refusing any keyword outside the subset, a malformed
    /// value of one, a root that is not an object schema, more than [`MAX_DEPTH`] levels
    /// or more than [`MAX_NODES`] schemas in all.
    pub fn compile(schema: &Value) -> Result<Self, SchemaError> {
        compile::root(schema).map(|root| Self { root })
    }

    /// Checks `value` against the schema; the first violation found.
    pub fn validate(&self, value: &Value) -> Result<(), Violation> {
        check::node(&self.root, value, &mut String::new())
    }
}
