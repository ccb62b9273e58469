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

use std::fmt;

use serde_json::{Number, Value};

pub use compile::{MAX_DEPTH, MAX_NODES};

/// A compiled input schema. Its root is an object schema (`"type": "object"`).
#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    root: Node,
}

/// One schema position: a boolean schema, or the rules of an object schema.
#[derive(Debug, Clone, PartialEq)]
enum Node {
    /// `true`, or an object schema with no validation keyword: anything.
    Any,
    /// `false`: nothing.
    Nothing,
    Rules(Box<Rules>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Type {
    Null,
    Boolean,
    Integer,
    Number,
    String,
    Array,
    Object,
}

/// The validation keywords of one object schema.
#[derive(Debug, Clone, Default, PartialEq)]
struct Rules {
    types: Option<Vec<Type>>,
    properties: Vec<(String, Node)>,
    required: Vec<String>,
    additional: Option<Node>,
    /// An object schema (`type` names object, or `properties` are given) without
    /// `additionalProperties`: undeclared members are refused (see the module's note).
    closed: bool,
    items: Option<Node>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    enumeration: Option<Vec<Value>>,
    constant: Option<Value>,
    minimum: Option<Number>,
    maximum: Option<Number>,
    exclusive_minimum: Option<Number>,
    exclusive_maximum: Option<Number>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    any_of: Vec<Node>,
    one_of: Vec<Node>,
}

/// Why a schema was refused: where in it (a JSON pointer) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    pub at: String,
    pub detail: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.at.is_empty() { "/" } else { &self.at };
        write!(f, "input schema at {at}: {}", self.detail)
    }
}

impl std::error::Error for SchemaError {}

/// Why arguments do not meet a schema: where in them (a JSON pointer) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub at: String,
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.at.is_empty() {
            f.write_str(&self.detail)
        } else {
            write!(f, "at {}: {}", self.at, self.detail)
        }
    }
}

impl std::error::Error for Violation {}

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
