//! Representative calls: from the grants' own constraints, calls of each granted tool that a
//! model could make. The analysis never decides whether one is allowed: `decide_in` does, as
//! it would for the model. So a value here is only a guess that the policy then judges, and
//! a guess that no grant covers simply comes out denied.
//!
//! The values of a tool are gathered from every grant of that tool (so a call one grant
//! allows is tried against the grants that overlap it: a deny below it, a higher label on a
//! subtree) and, for the tools that take paths, from every grant that names paths.

use std::collections::{BTreeMap, BTreeSet};

use proto::tools::{
    ConsultArgs, EditFileArgs, HttpFetchArgs, ListDirArgs, NoteListArgs, NoteMode, NoteReadArgs,
    NoteSearchArgs, NoteWriteArgs, ReadFileArgs, RunArgs, SessionSearchArgs, ToolArgs,
    WriteFileArgs, WriteMode,
};

use grants::Snapshot;
use grants::constraints::mcp;
use proto::mcp::McpArgs;

/// What stands for a value no constraint names: a note's name, a prompt, a query, the
/// label of a host below a `*.` entry.
const SAMPLE: &str = "x";

/// How a program's name is told from other values of a tool (a name is never a path).
const RUN: &str = "run:";

/// A grant whose tool this analysis cannot make a call of.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("grant {grant}: the flow analysis cannot make a call of tool {tool}")]
pub struct UnknownTool {
    pub grant: String,
    pub tool: String,
}

/// The calls to try, per tool, in a stable order.
pub fn candidates(snapshot: &Snapshot) -> Result<Vec<ToolArgs>, UnknownTool> {
    let paths: BTreeSet<String> = snapshot
        .iter()
        .flat_map(|(_, g)| g.constraints.paths.iter().cloned())
        .collect();
    let mut values: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let mut calls = Vec::new();
    // A write in `create` alone while no write grant names `modes` (every grant then allows
    // every mode alike); in each mode once one does, since a grant allowing only some, or
    // denying or asking for some, decides the modes apart.
    let write_modes: &[WriteMode] = if snapshot
        .for_tool("write_file")
        .any(|(_, g)| !g.constraints.modes.is_empty())
    {
        &[WriteMode::Create, WriteMode::Replace, WriteMode::Append]
    } else {
        &[WriteMode::Create]
    };
    for (_, grant) in snapshot.iter() {
        let c = &grant.constraints;
        // An MCP grant names its own tool; its call is made from its `args`.
        if let Some(name) = mcp::split(&grant.tool) {
            if let Ok((server, tool)) = name {
                calls.push(mcp_call(server, tool, &c.args));
            }
            continue;
        }
        let set = values.entry(grant.tool.as_str()).or_default();
        set.insert(SAMPLE.to_owned());
        set.extend(c.hosts.iter().map(|h| url_of(h)));
        set.extend(c.patterns.iter().map(|p| instance(p)));
        // A pattern matches the whole path: one like `*.md` is tried below each granted path.
        for pattern in &c.patterns {
            let tail = instance(pattern);
            if !tail.starts_with('/') {
                set.extend(c.paths.iter().map(|p| format!("{p}/{tail}")));
            }
        }
        if !c.paths.is_empty() {
            set.extend(paths.iter().cloned());
            // The hands write a file below a granted directory.
            if matches!(grant.tool.as_str(), "write_file" | "edit_file") {
                set.extend(paths.iter().map(|p| format!("{p}/{SAMPLE}")));
            }
        }
        set.extend(c.programs.iter().map(|p| format!("{RUN}{p}")));
    }
    for (tool, set) in values {
        for value in set {
            match build(tool, &value) {
                // A write in each of `write_modes`: a grant allowing only `append` is tried
                // as the model would have to call it.
                Some(Ok(ToolArgs::WriteFile(w))) => {
                    calls.extend(write_modes.iter().map(|mode| {
                        ToolArgs::WriteFile(WriteFileArgs {
                            mode: *mode,
                            ..w.clone()
                        })
                    }));
                }
                Some(Ok(call)) => calls.push(call),
                Some(Err(())) => {}
                None => {
                    let grant = snapshot.for_tool(tool).next().map_or("", |(id, _)| id);
                    return Err(UnknownTool {
                        grant: grant.to_owned(),
                        tool: tool.to_owned(),
                    });
                }
            }
        }
    }
    Ok(calls)
}

/// A call of `tool` with `value` where its subject goes. `None`: a tool this analysis does
/// not know (a test keeps every tool of [`proto::tools::TOOL_NAMES`] known); `Some(Err)`:
/// a value that is no call of the tool (a URL that is no path), left out.
pub fn build(tool: &str, value: &str) -> Option<Result<ToolArgs, ()>> {
    let v = value.to_owned();
    let path = || {
        if v.starts_with('/') {
            Ok(v.clone())
        } else {
            Err(())
        }
    };
    let url = || {
        if v.starts_with("https://") || v.starts_with("http://") {
            Ok(v.clone())
        } else {
            Err(())
        }
    };
    let word = || {
        if v.starts_with('/') || v.contains("://") {
            Err(())
        } else {
            Ok(v.clone())
        }
    };
    Some(match tool {
        "read_file" => path().map(|path| ToolArgs::ReadFile(ReadFileArgs { path })),
        "list_dir" => path().map(|path| ToolArgs::ListDir(ListDirArgs { path })),
        "http_fetch" => url().map(|url| ToolArgs::HttpFetch(HttpFetchArgs { url })),
        "consult" => word().map(|prompt| ToolArgs::Consult(ConsultArgs { prompt })),
        "note_write" => word().map(|name| {
            ToolArgs::NoteWrite(NoteWriteArgs {
                mode: NoteMode::Replace,
                name,
                text: SAMPLE.to_owned(),
            })
        }),
        "note_read" => word().map(|name| ToolArgs::NoteRead(NoteReadArgs { name })),
        "note_list" => Ok(ToolArgs::NoteList(NoteListArgs {})),
        "note_search" => word().map(|query| ToolArgs::NoteSearch(NoteSearchArgs { query })),
        "session_search" => {
            word().map(|query| ToolArgs::SessionSearch(SessionSearchArgs { query }))
        }
        "write_file" => path().map(|path| {
            ToolArgs::WriteFile(WriteFileArgs {
                content: SAMPLE.to_owned(),
                mode: WriteMode::Create,
                path,
            })
        }),
        "edit_file" => path().map(|path| {
            ToolArgs::EditFile(EditFileArgs {
                new: format!("{SAMPLE}{SAMPLE}"),
                old: SAMPLE.to_owned(),
                path,
            })
        }),
        // A program with no arguments: an allowing grant's patterns hold every argument.
        "run" => v.strip_prefix(RUN).ok_or(()).map(|program| {
            ToolArgs::Run(RunArgs {
                args: Vec::new(),
                program: program.to_owned(),
                stdin: None,
            })
        }),
        _ => return None,
    })
}

/// A call of an MCP grant's tool (`*`: a sample tool of the server) whose arguments hold, at
/// each pointer of `constraints.args`, a value its first pattern matches.
fn mcp_call(server: &str, tool: &str, args: &BTreeMap<String, Vec<String>>) -> ToolArgs {
    let mut value = serde_json::Value::Object(serde_json::Map::new());
    for (pointer, patterns) in args {
        let text = patterns
            .first()
            .map_or_else(|| SAMPLE.to_owned(), |p| instance(p));
        put(&mut value, pointer, serde_json::Value::String(text));
    }
    ToolArgs::Mcp(McpArgs {
        arguments: value.to_string(),
        server: server.to_owned(),
        tool: if tool == "*" { SAMPLE } else { tool }.to_owned(),
    })
}

/// Sets the value at a JSON pointer, making the objects on the way.
fn put(root: &mut serde_json::Value, pointer: &str, leaf: serde_json::Value) {
    let mut at = root;
    let keys: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|k| k.replace("~1", "/").replace("~0", "~"))
        .collect();
    if keys.is_empty() {
        *at = leaf;
        return;
    }
    for (i, key) in keys.iter().enumerate() {
        if !at.is_object() {
            *at = serde_json::Value::Object(serde_json::Map::new());
        }
        let map = at.as_object_mut().expect("an object, made above");
        if i + 1 == keys.len() {
            map.insert(key.clone(), leaf);
            return;
        }
        at = map
            .entry(key.clone())
            .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
    }
}

/// A URL on a `hosts` entry: the name itself, a name below a `*.` entry, an IP literal.
fn url_of(entry: &str) -> String {
    let host = match entry.strip_prefix("*.") {
        Some(suffix) => format!("{SAMPLE}.{suffix}"),
        None if entry.parse::<std::net::Ipv6Addr>().is_ok() => format!("[{entry}]"),
        None => entry.to_owned(),
    };
    format!("https://{host}/")
}

/// A value a pattern matches: each `*` and `?` one sample character, escapes undone.
fn instance(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '*' | '?' => out.push_str(SAMPLE),
            '\\' => out.extend(chars.next()),
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_boxmaker_knows_has_a_call() {
        for tool in proto::tools::TOOL_NAMES {
            let value = match tool {
                "read_file" | "list_dir" | "write_file" | "edit_file" => "/srv/x",
                "run" => "run:python3",
                "http_fetch" => "https://example.org/",
                _ => SAMPLE,
            };
            let call = build(tool, value)
                .unwrap_or_else(|| panic!("{tool}: no call"))
                .unwrap_or_else(|()| panic!("{tool}: {value} refused"));
            assert_eq!(call.tool(), tool);
        }
        assert!(build("no_such_tool", SAMPLE).is_none());
    }

    #[test]
    fn values_from_entries_and_patterns() {
        assert_eq!(url_of("*.example.org"), "https://x.example.org/");
        assert_eq!(url_of("::1"), "https://[::1]/");
        assert_eq!(url_of("10.0.0.1"), "https://10.0.0.1/");
        assert_eq!(instance("/srv/*.md"), "/srv/x.md");
        assert_eq!(instance("a\\*b?"), "a*bx");
    }

    #[test]
    fn an_mcp_call_holds_a_value_at_each_pointer() {
        let args = BTreeMap::from([
            ("/repo_path".to_owned(), vec!["/srv/git/*".to_owned()]),
            ("/opts/a~1b".to_owned(), vec!["yes".to_owned()]),
        ]);
        let ToolArgs::Mcp(call) = mcp_call("git", "*", &args) else {
            panic!("not an MCP call");
        };
        assert_eq!(call.tool, "x");
        assert_eq!(
            call.arguments,
            r#"{"opts":{"a/b":"yes"},"repo_path":"/srv/git/x"}"#
        );
    }
}
