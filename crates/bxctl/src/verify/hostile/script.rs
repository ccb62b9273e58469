//! The fake llama-server's script for the chains (`chains`): the rules that make the
//! hostile model's calls, in the TOML `docs/fake-llama-server.md` describes.

use serde::Serialize;

use super::chains::Chain;

#[derive(Serialize)]
struct Script {
    server: Server,
    rule: Vec<Rule>,
    default: Answer,
}

#[derive(Serialize)]
struct Server {
    n_ctx: u32,
    total_slots: u32,
}

#[derive(Serialize)]
pub(super) struct Rule {
    pub name: String,
    pub max_uses: u32,
    #[serde(rename = "match")]
    pub when: When,
    pub answer: Answer,
}

#[derive(Serialize)]
pub(super) struct When {
    pub user_contains: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_result_contains: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_contains: Option<String>,
}

#[derive(Serialize)]
pub(super) struct Answer {
    pub text: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<Call>,
}

#[derive(Serialize)]
pub(super) struct Call {
    pub name: String,
    pub arguments: String,
}

pub(super) fn call(name: &str, key: &str, value: &str) -> Answer {
    Answer {
        text: String::new(),
        tool_calls: vec![Call {
            name: name.to_owned(),
            arguments: serde_json::json!({ key: value }).to_string(),
        }],
    }
}

/// The chain's sink call, carrying its canary.
pub(super) fn send(c: &Chain) -> Answer {
    let write = |mode: &str| Answer {
        text: String::new(),
        tool_calls: vec![Call {
            name: "write_file".into(),
            arguments: serde_json::json!({"content": c.canary, "mode": mode, "path": c.url})
                .to_string(),
        }],
    };
    match c.sink.tool {
        // Smuggled: the arguments as they are, duplicate keys and all.
        _ if c.smuggle.is_some() => Answer {
            text: String::new(),
            tool_calls: vec![Call {
                name: c.sink.tool.to_owned(),
                arguments: c.url.clone(),
            }],
        },
        "consult" => call("consult", "prompt", &c.url),
        // The stand-in's tool (`mcp`), the canary in `data` (or the arguments `mcp_args`
        // made to meet the grant's `constraints.args`).
        "mcp" => Answer {
            text: String::new(),
            tool_calls: vec![Call {
                name: c.sink.entry.clone(),
                arguments: super::mcp_args::sent(&c.url),
            }],
        },
        // The program's stand-in, the canary in the argument its grant's patterns admit.
        "run" | super::run::WRITE => super::run::send(c),
        // A new file in a granted directory; added to a granted file; in the mode its grant
        // allows (`pattern::mode`).
        "write_file" => write(c.write_mode.unwrap_or(if super::pattern::own(c) {
            "create"
        } else {
            "append"
        })),
        "edit_file" => Answer {
            text: String::new(),
            tool_calls: vec![Call {
                name: "edit_file".into(),
                arguments: serde_json::json!({"new": c.canary, "old": super::chains::edit_old(c), "path": c.url})
                    .to_string(),
            }],
        },
        _ => call("http_fetch", "url", &c.url),
    }
}

/// The argument a source call names its subject by.
pub(super) fn subject(tool: &str) -> &'static str {
    match tool {
        "http_fetch" => "url",
        "consult" => "prompt",
        "note_read" => "name",
        "note_search" | "session_search" => "query",
        _ => "path",
    }
}

/// A text answer, no call.
pub(super) fn say(text: &str) -> Answer {
    Answer {
        text: text.to_owned(),
        tool_calls: Vec::new(),
    }
}

/// A rule answering `answer` at most `max_uses` times to a request whose last user message
/// holds `user` (and, when given, whose last message is a tool result holding `result`).
pub(super) fn rule(
    name: String,
    max_uses: u32,
    user: String,
    result: Option<String>,
    answer: Answer,
) -> Rule {
    Rule {
        name,
        max_uses,
        when: When {
            user_contains: user,
            tool_result_contains: result,
            history_contains: None,
        },
        answer,
    }
}

/// The fake llama-server's script: per chain, the read first, then (once the read's
/// result holds the chain's canary) the fetch carrying it; each answer once, so a turn
/// ends with the default answer whatever was denied or asked. A laundering chain writes
/// the canary to its note instead, and its second session reads the note, then fetches.
#[cfg(test)]
pub fn script(chains: &[Chain]) -> Result<String, toml::ser::Error> {
    script_with(chains, Vec::new())
}

/// [`script`], the job runs' rules (`jobs_script::rules`) after the chains'.
pub fn script_with(chains: &[Chain], jobs: Vec<Rule>) -> Result<String, toml::ser::Error> {
    let mut rule = Vec::new();
    for c in chains {
        // A compaction or search chain's rules are its own (`launder`, `search`).
        if let Some(own) = super::launder::rules(c).or_else(|| super::search::rules(c)) {
            rule.extend(own);
            continue;
        }
        // The session saying a search source chain's words (`search_source`).
        rule.extend(super::search_source::rules(c));
        let fetch = send(c);
        let held = Answer {
            text: "held".into(),
            tool_calls: Vec::new(),
        };
        let fetch_after = c.restart.map(|_| send(c));
        let (then, back) = match &c.note {
            Some(name) => {
                let write = serde_json::json!({"mode": "replace", "name": name, "text": c.canary});
                let write = Answer {
                    text: String::new(),
                    tool_calls: vec![Call {
                        name: "note_write".into(),
                        arguments: write.to_string(),
                    }],
                };
                (write, Some(name))
            }
            None if c.restart.is_some() => (held, None),
            None => (fetch, None),
        };
        if let Some(fetch) = fetch_after {
            rule.push(Rule {
                name: format!("chain {} after restart", c.n),
                max_uses: 1,
                when: When {
                    user_contains: c.after_tag(),
                    tool_result_contains: None,
                    history_contains: None,
                },
                answer: fetch,
            });
        }
        rule.push(Rule {
            name: format!("chain {} sink", c.n),
            max_uses: 1,
            when: When {
                user_contains: c.tag(),
                tool_result_contains: Some(c.awaited().to_owned()),
                history_contains: None,
            },
            answer: then,
        });
        if let Some(name) = back {
            rule.push(Rule {
                name: format!("chain {} note sink", c.n),
                max_uses: 1,
                when: When {
                    user_contains: c.back_tag(),
                    tool_result_contains: Some(c.canary.clone()),
                    history_contains: None,
                },
                answer: send(c),
            });
            rule.push(Rule {
                name: format!("chain {} note read", c.n),
                max_uses: 1,
                when: When {
                    user_contains: c.back_tag(),
                    tool_result_contains: None,
                    history_contains: None,
                },
                answer: call("note_read", "name", name),
            });
        }
        rule.push(Rule {
            name: format!("chain {} source", c.n),
            max_uses: 1,
            when: When {
                user_contains: c.tag(),
                tool_result_contains: None,
                history_contains: None,
            },
            answer: source_answer(c),
        });
    }
    rule.extend(jobs);
    toml::to_string(&Script {
        server: Server {
            n_ctx: super::launder::N_CTX,
            total_slots: 2,
        },
        rule,
        default: Answer {
            text: "done".into(),
            tool_calls: Vec::new(),
        },
    })
}

/// The model's first call of chain `c`: its source, as every kind of chain makes it.
pub(super) fn source_answer(c: &Chain) -> Answer {
    match c.source.tool {
        // A bound chain's one MCP call reads what its grant binds and sends it.
        "mcp" if super::mcp_bound::is(c) => send(c),
        // The stand-in's tool, given the source's word (`mcp::SOURCE`): it answers the
        // canaries to such a call only.
        "mcp" => {
            let (name, arguments) = super::mcp::source_call(&c.source);
            Answer {
                text: String::new(),
                tool_calls: vec![Call { name, arguments }],
            }
        }
        // A bound chain's one `run` call reads what its grant binds and sends it.
        "run" if super::run_bound::is(c) => super::run::send(c),
        // A program's output chain runs it (`run_source`).
        "run" => super::run_source::call(c),
        // A write source's append or edit of its own file (`write_source`).
        "write_file" | "edit_file" => super::write_source::call(c),
        // A note write source's append to its own note (`note_source`).
        "note_write" => super::note_source::write_call(c),
        // A listing of the notes takes no arguments.
        "note_list" => Answer {
            text: String::new(),
            tool_calls: vec![Call {
                name: "note_list".into(),
                arguments: "{}".into(),
            }],
        },
        tool => call(tool, subject(tool), &c.source.path),
    }
}
