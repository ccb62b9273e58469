//! The arguments an MCP stand-in's call carries when its grant names `[constraints.args]`
//! (docs/verify.md, decisions V40): each JSON pointer is given a value its first pattern
//! that yields one admits (a pattern's `*` becomes `bxhostile`, `?` an `x`, an escaped
//! character itself, as `run::fill` fills a `run` grant's patterns), and the canary (or the
//! source call's word) goes in a field no pointer starts with. The result is checked with
//! brokerd's own check ([`grants::constraints::check`]); a grant whose constraints no call
//! meets is said, and its server's grants are left out. A path a pattern names is the
//! owner's (`/srv/git/*`): the shadow moves a path tool's patterns, not an MCP tool's, and the stand-in
//! reads nothing its arguments name, so a filled path that does not exist is as good as any.

use proto::Grant;
use proto::mcp::McpArgs;
use proto::tools::ToolArgs;
use serde_json::{Map, Value};

use super::chains::Chain;

/// What a pattern's `*` becomes.
const FILL: &str = "bxhostile";

/// A canary's shape, for the check (the real ones differ only in letters and digits).
const SAMPLE: &str = "BXCANARY-0000-0-";

/// `pattern` with each `*` as [`FILL`], each `?` as `x`, an escaped character itself.
fn fill(pattern: &str) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            '*' => out.push_str(FILL),
            '?' => out.push('x'),
            other => out.push(other),
        }
    }
    out
}

/// `pointer`'s tokens (`~1` is `/`, `~0` is `~`).
fn tokens(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect()
}

/// `value` set at `pointer` in `into`, objects made on the way; `false`: a value already
/// there is in the way.
fn set(into: &mut Map<String, Value>, pointer: &str, value: Value) -> bool {
    let tokens = tokens(pointer);
    let Some((last, path)) = tokens.split_last() else {
        return false;
    };
    let mut at = into;
    for t in path {
        let next = at
            .entry(t.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        match next {
            Value::Object(m) => at = m,
            _ => return false,
        }
    }
    if at.contains_key(last) {
        return false;
    }
    at.insert(last.clone(), value);
    true
}

/// The field that carries the canary: `data`, or the first `bxhostile_dataN` none of the
/// `pinned` arguments is.
pub fn carrier(pinned: &Map<String, Value>) -> String {
    std::iter::once("data".to_owned())
        .chain((0..).map(|i| format!("bxhostile_data{i}")))
        .find(|k| !pinned.contains_key(k))
        .unwrap_or_default()
}

/// The arguments `g`'s constraints pin, checked with brokerd's check (a call of `tool`, the
/// stand-in's tool name, carrying a canary in their [`carrier`]); `Err`: why no call meets them.
/// No `args`: no field pinned.
pub fn pinned(g: &Grant, tool: &str) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    if g.constraints.args.is_empty() {
        return Ok(out);
    }
    let server = grants::constraints::mcp::split(&g.tool)
        .and_then(Result::ok)
        .map(|(s, _)| s.to_owned())
        .unwrap_or_default();
    let checked = |g: &Grant, args: &Map<String, Value>| {
        let call = ToolArgs::Mcp(McpArgs {
            arguments: with(args, &carrier(args), SAMPLE),
            server: server.clone(),
            tool: tool.to_owned(),
        });
        grants::constraints::check(g, &call)
    };
    for (pointer, patterns) in &g.constraints.args {
        // The first pattern whose filled value brokerd admits at this pointer alone.
        let mut alone = g.clone();
        alone.constraints.args = [(pointer.clone(), patterns.clone())].into();
        let value = patterns.iter().map(|p| fill(p)).find(|v| {
            let mut one = Map::new();
            set(&mut one, pointer, Value::String(v.clone())) && checked(&alone, &one).is_ok()
        });
        let Some(value) = value else {
            return Err(format!(
                "no value its patterns for {pointer} ({}) admit was found",
                patterns.join(", ")
            ));
        };
        if !set(&mut out, pointer, Value::String(value)) {
            return Err(format!(
                "its args constraints' pointers overlap ({pointer}): no one call meets them"
            ));
        }
    }
    checked(g, &out)
        .map(|_| out)
        .map_err(|e| format!("the call made to meet its args constraints is refused: {e}"))
}

/// `pinned` with `text` in `key`, as the call's arguments (JSON).
pub fn with(pinned: &Map<String, Value>, key: &str, text: &str) -> String {
    let mut args = pinned.clone();
    args.insert(key.to_owned(), Value::String(text.to_owned()));
    Value::Object(args).to_string()
}

/// The chains' MCP sends given their grant's pinned arguments: the chain's `url` becomes
/// the call's arguments (JSON), the canary's text in the [`carrier`] field.
pub fn carry<'a>(r: &super::rewrite::Rewritten, chains: impl IntoIterator<Item = &'a mut Chain>) {
    for c in chains
        .into_iter()
        .filter(|c| c.sink.tool == "mcp" && c.smuggle.is_none())
    {
        let Some(g) = r.grant(&c.sink.grant) else {
            continue;
        };
        if g.constraints.args.is_empty() {
            continue;
        }
        let tool = super::mcp::tool_of(&g.tool).unwrap_or_default();
        if let Ok(p) = pinned(g, tool) {
            c.url = with(&p, &carrier(&p), &c.url);
        }
    }
}

/// The arguments of a chain's MCP send: its `url` as it is when [`carry`] made it the
/// arguments, else the canary's text in `data`.
pub fn sent(url: &str) -> String {
    if serde_json::from_str::<Map<String, Value>>(url).is_ok() {
        url.to_owned()
    } else {
        serde_json::json!({ "data": url }).to_string()
    }
}
