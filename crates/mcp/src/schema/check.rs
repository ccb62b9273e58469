//! A value against compiled [`Node`]s. Keywords about one JSON type say nothing about values
//! of another (`minLength` on a number), as JSON Schema has it; `integer` is a number
//! written without a fraction or exponent, so `1.0` is not one (no coercion).

use std::cmp::Ordering;

use serde_json::{Number, Value};

use super::tree::{Node, Rules, Type, Violation};
use crate::json::escape_token;

pub(super) fn node(node: &Node, value: &Value, at: &mut String) -> Result<(), Violation> {
    match node {
        Node::Any => Ok(()),
        Node::Nothing => Err(violation(at, "no value is allowed here")),
        Node::Rules(rules) => rules_check(rules, value, at),
    }
}

fn violation(at: &str, detail: impl Into<String>) -> Violation {
    Violation {
        at: at.to_owned(),
        detail: detail.into(),
    }
}

fn rules_check(rules: &Rules, value: &Value, at: &mut String) -> Result<(), Violation> {
    if let Some(types) = &rules.types
        && !types.iter().any(|t| is_type(*t, value))
    {
        let names: Vec<&str> = types.iter().map(|t| type_name(*t)).collect();
        return Err(violation(
            at,
            format!("expected {}, found {}", names.join(" or "), kind(value)),
        ));
    }
    if let Some(options) = &rules.enumeration
        && !options.iter().any(|o| same(o, value))
    {
        return Err(violation(
            at,
            "not one of the values the schema lists (enum)",
        ));
    }
    if let Some(constant) = &rules.constant
        && !same(constant, value)
    {
        return Err(violation(at, "not the value the schema requires (const)"));
    }
    match value {
        Value::Number(n) => numeric(rules, n, at)?,
        Value::String(s) => {
            let len = s.chars().count() as u64;
            if rules.min_length.is_some_and(|min| len < min) {
                return Err(violation(
                    at,
                    format!("shorter than {} characters", rules.min_length.unwrap_or(0)),
                ));
            }
            if rules.max_length.is_some_and(|max| len > max) {
                return Err(violation(
                    at,
                    format!("longer than {} characters", rules.max_length.unwrap_or(0)),
                ));
            }
        }
        Value::Array(items) => array(rules, items, at)?,
        Value::Object(members) => object(rules, members, at)?,
        Value::Null | Value::Bool(_) => {}
    }
    if !rules.any_of.is_empty()
        && !rules
            .any_of
            .iter()
            .any(|n| node(n, value, &mut at.clone()).is_ok())
    {
        return Err(violation(at, "matches none of the schemas in anyOf"));
    }
    if !rules.one_of.is_empty() {
        let matching = rules
            .one_of
            .iter()
            .filter(|n| node(n, value, &mut at.clone()).is_ok())
            .count();
        if matching != 1 {
            return Err(violation(
                at,
                format!("matches {matching} of the schemas in oneOf, not exactly one"),
            ));
        }
    }
    Ok(())
}

fn numeric(rules: &Rules, n: &Number, at: &str) -> Result<(), Violation> {
    let below = |bound: &Option<Number>, strict: bool| {
        bound.as_ref().is_some_and(|b| match compare(n, b) {
            Some(Ordering::Less) => true,
            Some(Ordering::Equal) => strict,
            _ => false,
        })
    };
    let above = |bound: &Option<Number>, strict: bool| {
        bound.as_ref().is_some_and(|b| match compare(n, b) {
            Some(Ordering::Greater) => true,
            Some(Ordering::Equal) => strict,
            _ => false,
        })
    };
    let show = |b: &Option<Number>| b.as_ref().map(Number::to_string).unwrap_or_default();
    if below(&rules.minimum, false) {
        return Err(violation(
            at,
            format!("less than the minimum {}", show(&rules.minimum)),
        ));
    }
    if below(&rules.exclusive_minimum, true) {
        return Err(violation(
            at,
            format!("not more than {}", show(&rules.exclusive_minimum)),
        ));
    }
    if above(&rules.maximum, false) {
        return Err(violation(
            at,
            format!("more than the maximum {}", show(&rules.maximum)),
        ));
    }
    if above(&rules.exclusive_maximum, true) {
        return Err(violation(
            at,
            format!("not less than {}", show(&rules.exclusive_maximum)),
        ));
    }
    Ok(())
}

fn array(rules: &Rules, items: &[Value], at: &mut String) -> Result<(), Violation> {
    let len = items.len() as u64;
    if let Some(min) = rules.min_items.filter(|min| len < *min) {
        return Err(violation(at, format!("fewer than {min} items")));
    }
    if let Some(max) = rules.max_items.filter(|max| len > *max) {
        return Err(violation(at, format!("more than {max} items")));
    }
    if let Some(item) = &rules.items {
        for (i, value) in items.iter().enumerate() {
            let mark = at.len();
            at.push_str(&format!("/{i}"));
            node(item, value, at)?;
            at.truncate(mark);
        }
    }
    Ok(())
}

fn object(
    rules: &Rules,
    members: &serde_json::Map<String, Value>,
    at: &mut String,
) -> Result<(), Violation> {
    for name in &rules.required {
        if !members.contains_key(name) {
            return Err(violation(at, format!("the member {name:?} is required")));
        }
    }
    for (name, value) in members {
        let declared = rules
            .properties
            .iter()
            .find(|(p, _)| p == name)
            .map(|(_, n)| n);
        let schema = match (declared, &rules.additional) {
            (Some(n), _) => n,
            (None, Some(n)) => n,
            (None, None) if rules.closed => {
                return Err(violation(
                    at,
                    format!("the member {name:?} is not declared by the schema"),
                ));
            }
            (None, None) => continue,
        };
        let mark = at.len();
        at.push('/');
        at.push_str(&escape_token(name));
        node(schema, value, at)?;
        at.truncate(mark);
    }
    Ok(())
}

fn is_type(t: Type, value: &Value) -> bool {
    match (t, value) {
        (Type::Null, Value::Null)
        | (Type::Boolean, Value::Bool(_))
        | (Type::Number, Value::Number(_))
        | (Type::String, Value::String(_))
        | (Type::Array, Value::Array(_))
        | (Type::Object, Value::Object(_)) => true,
        (Type::Integer, Value::Number(n)) => n.is_i64() || n.is_u64(),
        _ => false,
    }
}

fn type_name(t: Type) -> &'static str {
    match t {
        Type::Null => "null",
        Type::Boolean => "boolean",
        Type::Integer => "integer",
        Type::Number => "number",
        Type::String => "string",
        Type::Array => "array",
        Type::Object => "object",
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "a number with a fraction or exponent",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Numbers by value: exactly when both are integers, else as f64.
fn compare(a: &Number, b: &Number) -> Option<Ordering> {
    let int = |n: &Number| n.as_i64().map(i128::from).or(n.as_u64().map(i128::from));
    if let (Some(x), Some(y)) = (int(a), int(b)) {
        return Some(x.cmp(&y));
    }
    a.as_f64()?.partial_cmp(&b.as_f64()?)
}

/// JSON equality, numbers by value (`1` and `1.0` are the same number).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare(x, y) == Some(Ordering::Equal),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}
