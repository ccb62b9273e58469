//! `bxctl mcp`: the MCP servers brokerd knows (list), one server's pin (show), and the
//! owner's pin of a server (pin): brokerd starts the server in a unit of its own with no
//! network and lists its tools; every tool's name, description and input schema is shown
//! here, inert (the server wrote them: a description may be an injection aimed at the model,
//! and the owner is the one who decides to offer it); the owner pins what was shown, by its
//! hash, and brokerd writes the pin (audited). `--out FILE` writes the pin to a file instead,
//! for a configuration that names its pins (the NixOS module's `pin`).

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::ExitCode;

use config::Config;
use inert::{block, line};
use proto::Message;
use proto::mcp::{McpPin, McpPinOutput, McpProbe, McpProbed, McpQuery, McpServerState};
use serde_json::Value;

use crate::Error;
use crate::admin::call;
use crate::error::unexpected;
use crate::output::print_json;

fn query(config: &Config, server: Option<String>) -> Result<Vec<McpServerState>, Error> {
    match call(config, Message::McpQuery(McpQuery { server }))? {
        Message::McpListing(l) => Ok(l.servers),
        other => Err(unexpected(&other)),
    }
}

fn state(s: &McpServerState) -> String {
    let pin = match (&s.hash, &s.changed) {
        (None, _) => format!("not pinned: `bxctl mcp pin {}`", s.name),
        (Some(h), None) => format!("pinned {h}, {} tools", s.tools.len()),
        (Some(h), Some(found)) => format!(
            "pinned {h}, but a call found its tools changed ({found}): its calls are refused \
             until you pin it again"
        ),
    };
    format!("{}  {pin}", s.name)
}

pub fn list(config: &Config, json: bool, out: &mut dyn Write) -> Result<ExitCode, Error> {
    let servers = query(config, None)?;
    if json {
        return print_json(&proto::mcp::McpListing { servers }, out);
    }
    if servers.is_empty() {
        writeln!(out, "no MCP server is configured ([[mcp]], docs/mcp.md)")
            .map_err(Error::Output)?;
    }
    for s in &servers {
        writeln!(out, "{}", state(s)).map_err(Error::Output)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn show(
    config: &Config,
    name: &str,
    json: bool,
    out: &mut dyn Write,
) -> Result<ExitCode, Error> {
    let servers = query(config, Some(name.to_owned()))?;
    if json {
        return print_json(&proto::mcp::McpListing { servers }, out);
    }
    let Some(s) = servers.first() else {
        writeln!(out, "no MCP server is named {} ([[mcp]])", line(name)).map_err(Error::Output)?;
        return Ok(ExitCode::from(1));
    };
    writeln!(out, "{}", state(s)).map_err(Error::Output)?;
    match &s.url {
        Some(url) => writeln!(out, "  url:      {}", line(url)),
        None => writeln!(out, "  command:  {}", line(&s.command.join(" "))),
    }
    .map_err(Error::Output)?;
    writeln!(out, "  pin file: {}", line(&s.pin_file)).map_err(Error::Output)?;
    if let Some(pin) = &s.pin {
        let tools = serde_json::from_str::<Value>(pin)
            .ok()
            .and_then(|v| v.get("tools").cloned());
        show_tools(&s.name, tools.as_ref(), "input_schema", out)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Each tool as the model would be offered it: its name, description and schema, inert.
fn show_tools(
    server: &str,
    tools: Option<&Value>,
    schema_key: &str,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let tools = tools.and_then(Value::as_array).cloned().unwrap_or_default();
    for t in &tools {
        let name = t.get("name").and_then(Value::as_str).unwrap_or_default();
        writeln!(out, "\ntool mcp__{server}__{}", line(name)).map_err(Error::Output)?;
        match t.get("description").and_then(Value::as_str) {
            Some(d) => {
                writeln!(
                    out,
                    "  description (the server's words, shown to the model):"
                )
                .map_err(Error::Output)?;
                write!(out, "{}", indent(&block(d))).map_err(Error::Output)?;
            }
            None => writeln!(out, "  no description").map_err(Error::Output)?,
        }
        let schema = t
            .get(schema_key)
            .map(|s| serde_json::to_string_pretty(s).unwrap_or_default())
            .unwrap_or_default();
        writeln!(out, "  input schema:").map_err(Error::Output)?;
        write!(out, "{}", indent(&block(&schema))).map_err(Error::Output)?;
    }
    Ok(())
}

fn indent(text: &str) -> String {
    let mut s: String = text.lines().map(|l| format!("    {l}\n")).collect();
    if s.is_empty() {
        s.push_str("    \n");
    }
    s
}

/// `bxctl mcp pin NAME [--yes] [--out FILE]`.
pub fn pin(
    config: &Config,
    name: &str,
    yes: bool,
    out_file: Option<&Path>,
    json: bool,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Result<ExitCode, Error> {
    let probe = McpProbe {
        server: name.to_owned(),
    };
    let probed: McpProbed = match call(config, Message::McpProbe(probe))? {
        Message::McpProbed(p) => p,
        other => return Err(unexpected(&other)),
    };
    if json && (out_file.is_none() && !yes) {
        return print_json(&probed, out);
    }
    let (hash, count) = match &probed.output {
        McpPinOutput::Ok {
            server_name,
            server_version,
            tools,
            hash,
            report,
            ..
        } => {
            // A remote server (`[[mcp]] url`) is reached from the probe's unit, which
            // admits its URL's host alone.
            let how = match config
                .mcp
                .iter()
                .find(|s| s.name == name)
                .and_then(|s| s.url.as_deref())
            {
                Some(url) => format!("reached at {} from a unit of its own", line(url)),
                None => "run in a unit of its own, no network".to_owned(),
            };
            writeln!(
                out,
                "server {}: {} {} ({how})",
                line(name),
                line(server_name),
                line(server_version)
            )
            .map_err(Error::Output)?;
            if !report.refused.is_empty() {
                writeln!(
                    out,
                    "  it asked the client {} times (refused: a server never reaches the model \
                     or you)",
                    report.refused.len()
                )
                .map_err(Error::Output)?;
            }
            let list = serde_json::from_str::<Value>(tools).ok();
            show_tools(name, list.as_ref(), "inputSchema", out)?;
            let count = list.as_ref().and_then(Value::as_array).map_or(0, Vec::len);
            (*hash, count)
        }
        McpPinOutput::Failed {
            failure, message, ..
        } => {
            writeln!(
                out,
                "server {} could not be listed ({}): {}",
                line(name),
                failure.kind(),
                line(message)
            )
            .map_err(Error::Output)?;
            return Ok(ExitCode::from(1));
        }
    };
    if let Some(why) = &probed.refused {
        writeln!(out, "\ncannot be pinned: {}", line(why)).map_err(Error::Output)?;
        return Ok(ExitCode::from(1));
    }
    if let Some(file) = out_file {
        let text = probed.pin.unwrap_or_default();
        std::fs::write(file, text).map_err(|error| Error::File {
            path: file.to_owned(),
            error,
        })?;
        writeln!(
            out,
            "\npin {hash} of {count} tools written to {} (name it in the configuration: \
             [[mcp]] pin, or services.boxmaker.mcp.{name}.pin)",
            file.display()
        )
        .map_err(Error::Output)?;
        return Ok(ExitCode::SUCCESS);
    }
    if !yes {
        write!(out, "\npin these {count} tools (hash {hash})? [y/N] ").map_err(Error::Output)?;
        out.flush().map_err(Error::Output)?;
        let mut answer = String::new();
        input.read_line(&mut answer).map_err(Error::Output)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            writeln!(out, "not pinned").map_err(Error::Output)?;
            return Ok(ExitCode::from(1));
        }
    }
    let pin = McpPin {
        server: name.to_owned(),
        hash,
    };
    match call(config, Message::McpPin(pin))? {
        Message::McpPinned(p) if json => print_json(&p, out),
        Message::McpPinned(p) => {
            writeln!(
                out,
                "pinned {}: {} ({count} tools offered from the next request; audited)",
                line(&p.server),
                p.hash
            )
            .map_err(Error::Output)?;
            Ok(ExitCode::SUCCESS)
        }
        other => Err(unexpected(&other)),
    }
}
