//! From a schema's JSON to its [`Node`]s, refusing whatever the subset does not hold.

use serde_json::{Number, Value};

use super::tree::{Node, Rules, SchemaError, Type};
use crate::json::escape_token;

/// The deepest nesting of schemas within schemas.
pub const MAX_DEPTH: usize = 32;
/// The most schemas one input schema may hold, itself included.
pub const MAX_NODES: usize = 4096;

/// Keywords that say something about the value but are never checked.
const ANNOTATIONS: [&str; 6] = [
    "title",
    "description",
    "default",
    "examples",
    "format",
    "$comment",
];

/// The `$schema` values taken: drafts whose meaning of the supported keywords is the one
/// checked here (draft-04's boolean `exclusiveMinimum` is not).
const DIALECTS: [&str; 5] = [
    "http://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-07/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2020-12/schema#",
];

struct Compiler {
    nodes: usize,
}

fn error(at: &str, detail: impl Into<String>) -> SchemaError {
    SchemaError {
        at: at.to_owned(),
        detail: detail.into(),
    }
}

pub(super) fn root(schema: &Value) -> Result<Node, SchemaError> {
    let Value::Object(map) = schema else {
        return Err(error("", "the input schema is not an object"));
    };
    if map.get("type") != Some(&Value::String("object".into())) {
        return Err(error(
            "",
            "the input schema's root must say \"type\": \"object\"",
        ));
    }
    if let Some(dialect) = map.get("$schema")
        && !dialect.as_str().is_some_and(|d| DIALECTS.contains(&d))
    {
        return Err(error(
            "/$schema",
            format!(
                "the dialect {dialect} is not one this validator reads (draft-07, 2019-09, \
                 2020-12)"
            ),
        ));
    }
    let mut rest = map.clone();
    rest.remove("$schema");
    Compiler { nodes: 0 }.node(&Value::Object(rest), "", 0)
}

impl Compiler {
    fn node(&mut self, schema: &Value, at: &str, depth: usize) -> Result<Node, SchemaError> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(error(at, format!("more than {MAX_NODES} schemas in all")));
        }
        if depth > MAX_DEPTH {
            return Err(error(
                at,
                format!("nested more than {MAX_DEPTH} levels deep"),
            ));
        }
        let map = match schema {
            Value::Bool(true) => return Ok(Node::Any),
            Value::Bool(false) => return Ok(Node::Nothing),
            Value::Object(map) => map,
            _ => return Err(error(at, "a schema must be an object or a boolean")),
        };
        let mut rules = Rules::default();
        let mut checks = 0;
        for (keyword, value) in map {
            let here = format!("{at}/{}", escape_token(keyword));
            if ANNOTATIONS.contains(&keyword.as_str()) {
                continue;
            }
            checks += 1;
            self.keyword(&mut rules, keyword, value, &here, depth)?;
        }
        rules.closed = rules.additional.is_none()
            && (!rules.properties.is_empty()
                || rules
                    .types
                    .as_ref()
                    .is_some_and(|t| t.contains(&Type::Object)));
        if let Some(required) = rules
            .required
            .iter()
            .find(|r| rules.closed && !rules.properties.iter().any(|(name, _)| name == *r))
        {
            return Err(error(
                at,
                format!("{required:?} is required but not declared in properties"),
            ));
        }
        Ok(if checks == 0 {
            Node::Any
        } else {
            Node::Rules(Box::new(rules))
        })
    }

    fn keyword(
        &mut self,
        rules: &mut Rules,
        keyword: &str,
        value: &Value,
        at: &str,
        depth: usize,
    ) -> Result<(), SchemaError> {
        match keyword {
            "type" => rules.types = Some(types(value, at)?),
            "properties" => {
                let Value::Object(props) = value else {
                    return Err(error(at, "properties must be an object"));
                };
                for (name, sub) in props {
                    let here = format!("{at}/{}", escape_token(name));
                    let node = self.node(sub, &here, depth + 1)?;
                    rules.properties.push((name.clone(), node));
                }
            }
            "required" => rules.required = required(value, at)?,
            "additionalProperties" => {
                rules.additional = Some(self.node(value, at, depth + 1)?);
            }
            "items" => {
                if value.is_array() {
                    return Err(error(at, "items as a list (tuples) is not supported"));
                }
                rules.items = Some(self.node(value, at, depth + 1)?);
            }
            "minItems" => rules.min_items = Some(count(value, at)?),
            "maxItems" => rules.max_items = Some(count(value, at)?),
            "minLength" => rules.min_length = Some(count(value, at)?),
            "maxLength" => rules.max_length = Some(count(value, at)?),
            "minimum" => rules.minimum = Some(number(value, at)?),
            "maximum" => rules.maximum = Some(number(value, at)?),
            "exclusiveMinimum" => rules.exclusive_minimum = Some(number(value, at)?),
            "exclusiveMaximum" => rules.exclusive_maximum = Some(number(value, at)?),
            "enum" => match value {
                Value::Array(options) if !options.is_empty() => {
                    rules.enumeration = Some(options.clone());
                }
                _ => return Err(error(at, "enum must be a list of at least one value")),
            },
            "const" => rules.constant = Some(value.clone()),
            "anyOf" | "oneOf" => {
                let Value::Array(options) = value else {
                    return Err(error(at, format!("{keyword} must be a list of schemas")));
                };
                if options.is_empty() {
                    return Err(error(
                        at,
                        format!("{keyword} must hold at least one schema"),
                    ));
                }
                let mut nodes = Vec::with_capacity(options.len());
                for (i, option) in options.iter().enumerate() {
                    nodes.push(self.node(option, &format!("{at}/{i}"), depth + 1)?);
                }
                if keyword == "anyOf" {
                    rules.any_of = nodes;
                } else {
                    rules.one_of = nodes;
                }
            }
            "$schema" => return Err(error(at, "$schema is taken at the root only")),
            other => {
                return Err(error(
                    at,
                    format!("the keyword {other:?} is not supported by boxmaker's validator"),
                ));
            }
        }
        Ok(())
    }
}

fn types(value: &Value, at: &str) -> Result<Vec<Type>, SchemaError> {
    let one = |v: &Value| -> Result<Type, SchemaError> {
        Ok(match v.as_str() {
            Some("null") => Type::Null,
            Some("boolean") => Type::Boolean,
            Some("integer") => Type::Integer,
            Some("number") => Type::Number,
            Some("string") => Type::String,
            Some("array") => Type::Array,
            Some("object") => Type::Object,
            _ => return Err(error(at, format!("{v} is not a JSON Schema type"))),
        })
    };
    let list = match value {
        Value::Array(list) if !list.is_empty() => {
            list.iter().map(one).collect::<Result<Vec<_>, _>>()?
        }
        Value::Array(_) => return Err(error(at, "type must name at least one type")),
        single => vec![one(single)?],
    };
    if (1..list.len()).any(|i| list[..i].contains(&list[i])) {
        return Err(error(at, "type names a type twice"));
    }
    Ok(list)
}

fn required(value: &Value, at: &str) -> Result<Vec<String>, SchemaError> {
    let Value::Array(names) = value else {
        return Err(error(at, "required must be a list of names"));
    };
    let mut out: Vec<String> = Vec::with_capacity(names.len());
    for name in names {
        let Value::String(name) = name else {
            return Err(error(at, "required must be a list of names"));
        };
        if out.contains(name) {
            return Err(error(at, format!("required names {name:?} twice")));
        }
        out.push(name.clone());
    }
    Ok(out)
}

fn count(value: &Value, at: &str) -> Result<u64, SchemaError> {
    value
        .as_u64()
        .ok_or_else(|| error(at, "must be a non-negative integer"))
}

fn number(value: &Value, at: &str) -> Result<Number, SchemaError> {
    match value {
        Value::Number(n) => Ok(n.clone()),
        _ => Err(error(at, "must be a number")),
    }
}
