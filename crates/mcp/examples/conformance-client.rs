//! The client under the official conformance suite (`@modelcontextprotocol/conformance`):
//! `conformance client --command "conformance-client" --scenario NAME` starts it with the
//! test server's URL as its last argument and the scenario's name in
//! `MCP_CONFORMANCE_SCENARIO`. It speaks Streamable HTTP (`mcp::http`), declares no
//! capability, refuses every server request, and does what the scenario asks:
//!
//! - `initialize`: initialize, then list the tools;
//! - `tools_call`: initialize, list and pin the tools (every schema through the validator),
//!   check `add_numbers`' arguments against its pinned schema and call it;
//! - any other scenario: initialize, list, pin, and call each tool whose schema takes `{}`
//!   (what a scenario that asks more of a client, elicitation say, finds refused).
//!
//! Exit status 0 when every step succeeded, 1 otherwise (the error on stderr).

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use mcp::http::StreamableHttp;
use mcp::{Client, ClientInfo, Declared, Limits, Pin};

fn main() -> ExitCode {
    let url = std::env::args().next_back().unwrap_or_default();
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    match run(&url, &scenario) {
        Ok(said) => {
            let _ = writeln!(std::io::stdout(), "{said}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "conformance-client ({scenario}): {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(url: &str, scenario: &str) -> Result<String, Box<dyn std::error::Error>> {
    let limits = Limits::default();
    let transport = StreamableHttp::new(url, limits.max_message)?;
    let mut client = Client::new(transport, limits, Duration::from_secs(10));
    let info = client.initialize(&ClientInfo::default(), Declared::default())?;
    let tools = client.list_tools()?;
    if scenario == "initialize" {
        return Ok(format!(
            "initialized {} {}: {} tools",
            info.name,
            info.version,
            tools.len()
        ));
    }
    let pin = Pin::new("conformance", &info, &tools)?;
    let mut said = Vec::new();
    for tool in &pin.tools {
        let arguments = match (scenario, tool.name.as_str()) {
            ("tools_call", "add_numbers") => r#"{"a":5,"b":3}"#,
            ("tools_call", _) => continue,
            _ => "{}",
        };
        let Ok(checked) = mcp::args::parse(arguments, &tool.schema) else {
            continue;
        };
        let result = client.call_tool(&tool.name, &checked.value)?;
        said.push(format!(
            "{}: {}{}",
            tool.name,
            if result.is_error { "error: " } else { "" },
            result.text
        ));
    }
    if said.is_empty() {
        return Err(format!("no tool of {} could be called", info.name).into());
    }
    let refused: Vec<&str> = client.report().refused.iter().map(|r| r.method()).collect();
    said.push(format!("refused: {refused:?}"));
    Ok(said.join("\n"))
}
