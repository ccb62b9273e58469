//! `boxmaker-tool mcp-call` and `mcp-pin`: one session with one MCP server, inside the
//! call's unit. brokerd has already checked the arguments against the pinned schema and
//! decided the policy; this module checks nothing of the call but the pin.
//!
//! A call: start the server ([`server`]), `initialize`, `notifications/initialized`,
//! `tools/list` (every page), and only when the list's hash is the pin's, `tools/call` with
//! the arguments as given; then stop the server. A pin: the same up to `tools/list`, and
//! the list is the answer. Every request the server makes is refused and reported; the
//! whole session has the invocation's deadline.

mod link;
mod server;

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use mcp::{Client, ClientInfo, Declared, Limits, McpError, Report, ServerRequest};
use proto::Hash32;
use proto::mcp::{
    McpCallInvocation, McpCallOutput, McpFailure, McpPinInvocation, McpPinOutput, McpRefused,
    McpReport, McpServer,
};
use proto::toolrun::cap_str;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{MAX_INPUT, RunError};
use link::Link;

pub use server::{STOP_WAIT, WATCHDOG_GRACE};

/// A failure and its words.
type Failed = (McpFailure, String);

/// `mcp-call`: reads the invocation from `input`, answers one line on `output`.
pub fn serve_call(input: impl Read, output: impl Write) -> Result<(), RunError> {
    let answer = match read_invocation::<McpCallInvocation>(input)? {
        Ok(inv) => call(&inv, credentials().as_deref()),
        Err(message) => McpCallOutput::Failed {
            failure: McpFailure::Invocation,
            message,
            report: McpReport::default(),
        },
    };
    write_line(output, &answer)
}

/// `mcp-pin`: reads the invocation from `input`, answers one line on `output`.
pub fn serve_pin(input: impl Read, output: impl Write) -> Result<(), RunError> {
    let answer = match read_invocation::<McpPinInvocation>(input)? {
        Ok(inv) => pin(&inv, credentials().as_deref()),
        Err(message) => McpPinOutput::Failed {
            failure: McpFailure::Invocation,
            message,
            report: McpReport::default(),
        },
    };
    write_line(output, &answer)
}

fn credentials() -> Option<std::path::PathBuf> {
    std::env::var_os("CREDENTIALS_DIRECTORY").map(Into::into)
}

/// The invocation, or the words of why it is not one. `Err` only when stdin fails.
fn read_invocation<T: DeserializeOwned>(input: impl Read) -> Result<Result<T, String>, RunError> {
    let mut bytes = Vec::new();
    input
        .take(MAX_INPUT + 1)
        .read_to_end(&mut bytes)
        .map_err(RunError::Stdin)?;
    if bytes.len() as u64 > MAX_INPUT {
        return Ok(Err(format!(
            "the invocation is larger than {MAX_INPUT} bytes"
        )));
    }
    Ok(serde_json::from_slice(&bytes).map_err(|e| format!("invalid invocation: {e}")))
}

fn write_line(mut output: impl Write, answer: &impl Serialize) -> Result<(), RunError> {
    // Enums of strings, numbers and hashes: serialising cannot fail.
    let line = serde_json::to_string(answer).unwrap_or_else(|_| {
        r#"{"status":"failed","failure":{"kind":"invocation"},"message":"cannot serialise the answer","report":{}}"#.into()
    });
    writeln!(output, "{line}")
        .and_then(|()| output.flush())
        .map_err(RunError::Stdout)
}

/// One call of one pinned tool.
pub fn call(inv: &McpCallInvocation, credentials: Option<&Path>) -> McpCallOutput {
    let max = usize::try_from(inv.max_bytes).unwrap_or(usize::MAX);
    let arguments = match mcp::json::parse_strict(inv.arguments.as_bytes()) {
        Ok(value) if value.is_object() => value,
        _ => {
            return McpCallOutput::Failed {
                failure: McpFailure::Invocation,
                message: "the invocation's arguments are not a JSON object".into(),
                report: McpReport::default(),
            };
        }
    };
    let (outcome, report) = session(&inv.server, inv.timeout_ms, credentials, |client| {
        let tools = client.list_tools().map_err(failed)?;
        let found = mcp::tools_hash(&tools);
        if found != inv.pin {
            return Err(changed(inv, inv.pin, found));
        }
        client.call_tool(&inv.tool, &arguments).map_err(failed)
    });
    let report = to_report(&report);
    match outcome.map(|(_, result)| result) {
        Ok(result) => {
            let (content, truncated) = cap_str(result.text, max);
            if result.is_error {
                McpCallOutput::Failed {
                    failure: McpFailure::ToolError,
                    message: content,
                    report,
                }
            } else {
                McpCallOutput::Ok {
                    content,
                    truncated,
                    report,
                }
            }
        }
        Err((failure, message)) => McpCallOutput::Failed {
            failure,
            message,
            report,
        },
    }
}

fn changed(inv: &McpCallInvocation, pinned: Hash32, found: Hash32) -> Failed {
    (
        McpFailure::McpChanged { pinned, found },
        format!(
            "the MCP server {:?} lists other tools than were pinned: not called (the owner \
             must pin it again)",
            inv.server.name
        ),
    )
}

/// The server's tools for the owner to pin.
pub fn pin(inv: &McpPinInvocation, credentials: Option<&Path>) -> McpPinOutput {
    let (outcome, report) = session(&inv.server, inv.timeout_ms, credentials, |client| {
        client.list_tools().map_err(failed)
    });
    let report = to_report(&report);
    match outcome {
        Ok((info, tools)) => McpPinOutput::Ok {
            protocol_version: info.protocol_version,
            server_name: info.name,
            server_version: info.version,
            tools: mcp::canonical_tools(&tools),
            hash: mcp::tools_hash(&tools),
            report,
        },
        Err((failure, message)) => McpPinOutput::Failed {
            failure,
            message,
            report,
        },
    }
}

/// The session's client, over the transport its server takes.
type LinkClient = Client<Link>;

/// Starts the server (or reaches the remote one), initializes, runs `work`, stops the
/// server: what `initialize` said and `work`'s outcome, and what the server did besides
/// answering.
fn session<T>(
    server: &McpServer,
    timeout_ms: u64,
    credentials: Option<&Path>,
    work: impl FnOnce(&mut LinkClient) -> Result<T, Failed>,
) -> (Result<(mcp::ServerInfo, T), Failed>, Report) {
    let timeout = Duration::from_millis(timeout_ms);
    let deadline = Instant::now() + timeout;
    let limits = Limits::default();
    let (link, process) = match Link::open(server, credentials, deadline, limits.max_message) {
        Ok(opened) => opened,
        Err(message) => return (Err((McpFailure::Start, message)), Report::default()),
    };
    let mut client = Client::new(link, limits, timeout);
    let outcome = client
        .initialize(&ClientInfo::default(), Declared::default())
        .map_err(failed)
        .and_then(|info| work(&mut client).map(|t| (info, t)));
    let (link, report) = client.into_parts();
    // Closing the server's stdin is the first way of asking it to stop; a remote server's
    // connections are each closed already (one per message).
    drop(link);
    if let Some(process) = process {
        process.stop();
    }
    (outcome, report)
}

fn failed(e: McpError) -> Failed {
    let failure = match &e {
        McpError::Closed { .. } | McpError::Io { .. } => McpFailure::Closed,
        McpError::Timeout { .. } => McpFailure::Timeout,
        McpError::MessageTooLarge { .. } | McpError::OutputTooLarge { .. } => McpFailure::TooLarge,
        McpError::Version { .. } => McpFailure::Version,
        McpError::Server { code, .. } => McpFailure::ServerError { code: *code },
        McpError::Protocol { .. }
        | McpError::TooManyTools { .. }
        | McpError::TooManyPages { .. }
        | McpError::TooManyRequests { .. } => McpFailure::Protocol,
    };
    (failure, e.to_string())
}

fn to_report(report: &Report) -> McpReport {
    McpReport {
        refused: report
            .refused
            .iter()
            .map(|r| match r {
                ServerRequest::Sampling => McpRefused::Sampling,
                ServerRequest::Elicitation => McpRefused::Elicitation,
                ServerRequest::Roots => McpRefused::Roots,
                ServerRequest::Ping => McpRefused::Ping,
                ServerRequest::Other { method } => McpRefused::Other {
                    name: method.clone(),
                },
            })
            .collect(),
        notifications: report.notifications,
    }
}
