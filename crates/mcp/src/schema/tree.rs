//! What a compiled schema is made of, and the two errors: shared by the compiler and the
//! checker, so neither takes them from the module that uses both.

use serde_json::{Number, Value};

/// One schema position: a boolean schema, or the rules of an object schema.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Node {
    /// `true`, or an object schema with no validation keyword: anything.
    Any,
    /// `false`: nothing.
    Nothing,
    Rules(Box<Rules>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Type {
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
pub(super) struct Rules {
    pub(super) types: Option<Vec<Type>>,
    pub(super) properties: Vec<(String, Node)>,
    pub(super) required: Vec<String>,
    pub(super) additional: Option<Node>,
    /// An object schema (`type` names object, or `properties` are given) without
    /// `additionalProperties`: undeclared members are refused (see the module's note).
    pub(super) closed: bool,
    pub(super) items: Option<Node>,
    pub(super) min_items: Option<u64>,
    pub(super) max_items: Option<u64>,
    pub(super) enumeration: Option<Vec<Value>>,
    pub(super) constant: Option<Value>,
    pub(super) minimum: Option<Number>,
    pub(super) maximum: Option<Number>,
    pub(super) exclusive_minimum: Option<Number>,
    pub(super) exclusive_maximum: Option<Number>,
    pub(super) min_length: Option<u64>,
    pub(super) max_length: Option<u64>,
    pub(super) any_of: Vec<Node>,
    pub(super) one_of: Vec<Node>,
}

/// Why a schema was refused: where in it (a JSON pointer) and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("input schema at {}: {detail}", if at.is_empty() { "/" } else { at })]
pub struct SchemaError {
    pub at: String,
    pub detail: String,
}

/// Why arguments do not meet a schema: where in them (a JSON pointer) and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", if at.is_empty() { detail.clone() } else { format!("at {at}: {detail}") })]
pub struct Violation {
    pub at: String,
    pub detail: String,
}
