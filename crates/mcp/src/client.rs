//! The client side of one MCP session: `initialize` (this crate's protocol version only),
//! `notifications/initialized`, `tools/list` page by page, `tools/call`.
//!
//! While an answer is due, every request the server makes of the client (sampling,
//! elicitation, roots, ping, anything) is answered with a JSON-RPC error and kept in the
//! [`Report`], so the caller can audit it; a server never reaches the model or the owner
//! through this client. Notifications are counted and otherwise ignored. Everything is
//! bounded: each message ([`Limits::max_message`], in the transport), all the server sends
//! in the session, the tools, the pages, the server's requests, and the time: every receive
//! waits only until the session's deadline.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::PROTOCOL_VERSION;
use crate::content::{CallResult, call_result};
use crate::error::McpError;
use crate::jsonrpc::{
    Id, Incoming, METHOD_NOT_FOUND, error_response, notification, parse_incoming, request,
};
use crate::transport::Transport;

/// The bounds of one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The longest single message from the server (the transport enforces it).
    pub max_message: usize,
    /// Everything the server may send in the session, all messages together.
    pub max_output: u64,
    /// The most tools `tools/list` may give, over all pages.
    pub max_tools: usize,
    /// The most pages of `tools/list`.
    pub max_pages: usize,
    /// The most requests the server may make of the client (each is refused anyway).
    pub max_requests: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_message: 4 << 20,
            max_output: 16 << 20,
            max_tools: 256,
            max_pages: 16,
            max_requests: 16,
        }
    }
}

/// How the client names itself in `initialize`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInfo {
    pub name: String,
    pub version: String,
}

impl Default for ClientInfo {
    fn default() -> Self {
        Self {
            name: "boxmaker".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// The capabilities the client declares in `initialize`. boxmaker declares none: a
/// server that follows the protocol then never asks. Declaring one does not make the
/// client answer it (every request is refused all the same); the real-peer tests declare
/// them to lure a reference server into asking, which is how the refusal is shown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Declared {
    pub sampling: bool,
    pub elicitation: bool,
    pub roots: bool,
}

/// What `initialize` told of the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    pub name: String,
    pub version: String,
    pub protocol_version: String,
    /// Whether the server declared the tools capability (without it, it has no tools).
    pub tools: bool,
}

/// A server's request to the client, which was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerRequest {
    /// `sampling/createMessage`: the server wanted the model.
    Sampling,
    /// `elicitation/create`: the server wanted to ask the user.
    Elicitation,
    /// `roots/list`: the server wanted the client's roots.
    Roots,
    /// `ping`.
    Ping,
    /// Any other method, named when it is at most 64 characters of visible ASCII.
    Other { method: String },
}

impl ServerRequest {
    fn of(method: &str) -> Self {
        match method {
            "sampling/createMessage" => Self::Sampling,
            "elicitation/create" => Self::Elicitation,
            "roots/list" => Self::Roots,
            "ping" => Self::Ping,
            other => Self::Other {
                method: if other.len() <= 64 && other.bytes().all(|b| b.is_ascii_graphic()) {
                    other.to_owned()
                } else {
                    "(not shown)".into()
                },
            },
        }
    }

    pub fn method(&self) -> &str {
        match self {
            Self::Sampling => "sampling/createMessage",
            Self::Elicitation => "elicitation/create",
            Self::Roots => "roots/list",
            Self::Ping => "ping",
            Self::Other { method } => method,
        }
    }
}

/// What the server did besides answering: for the audit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Each request the server made, in order; every one was answered with an error.
    pub refused: Vec<ServerRequest>,
    /// How many notifications the server sent (none was acted on).
    pub notifications: u64,
}

/// One tool of `tools/list`, as the server gave it: the members boxmaker uses.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedTool {
    pub name: String,
    pub description: Option<String>,
    /// The input schema, as sent (parsed strictly; not yet checked by [`crate::schema`]).
    pub input_schema: Value,
}

/// One session with one server.
#[derive(Debug)]
pub struct Client<T: Transport> {
    transport: T,
    limits: Limits,
    deadline: Instant,
    timeout: Duration,
    next_id: i64,
    received: u64,
    report: Report,
    tools_declared: bool,
}

impl<T: Transport> Client<T> {
    /// A session that must be done within `timeout` from now.
    pub fn new(transport: T, limits: Limits, timeout: Duration) -> Self {
        Self {
            transport,
            limits,
            deadline: Instant::now() + timeout,
            timeout,
            next_id: 1,
            received: 0,
            report: Report::default(),
            tools_declared: false,
        }
    }

    /// `initialize` with [`PROTOCOL_VERSION`], then `notifications/initialized`. A server
    /// that answers with another version is refused.
    pub fn initialize(
        &mut self,
        info: &ClientInfo,
        declared: Declared,
    ) -> Result<ServerInfo, McpError> {
        let mut capabilities = Map::new();
        if declared.sampling {
            capabilities.insert("sampling".into(), json!({}));
        }
        if declared.elicitation {
            capabilities.insert("elicitation".into(), json!({}));
        }
        if declared.roots {
            capabilities.insert("roots".into(), json!({}));
        }
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": capabilities,
            "clientInfo": {"name": info.name, "version": info.version},
        });
        let result = self.round_trip("initialize", params)?;
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| McpError::protocol("initialize: no protocolVersion"))?;
        if version != PROTOCOL_VERSION {
            return Err(McpError::Version {
                offered: version.chars().take(64).collect(),
            });
        }
        let server = result
            .get("serverInfo")
            .and_then(Value::as_object)
            .ok_or_else(|| McpError::protocol("initialize: no serverInfo"))?;
        let field = |name: &str| {
            server
                .get(name)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| McpError::protocol(format!("initialize: serverInfo has no {name}")))
        };
        let tools = match result
            .get("capabilities")
            .and_then(Value::as_object)
            .ok_or_else(|| McpError::protocol("initialize: no capabilities"))?
            .get("tools")
        {
            None => false,
            Some(Value::Object(_)) => true,
            Some(_) => return Err(McpError::protocol("initialize: tools is not an object")),
        };
        let info = ServerInfo {
            name: field("name")?,
            version: field("version")?,
            protocol_version: version.to_owned(),
            tools,
        };
        self.tools_declared = tools;
        self.transport
            .send_notice(&notification("notifications/initialized"), self.deadline)?;
        Ok(info)
    }

    /// Every tool, over all pages (`nextCursor`), in the server's order. A name listed twice
    /// is refused. A server that did not declare tools has none (and is not asked).
    pub fn list_tools(&mut self) -> Result<Vec<ListedTool>, McpError> {
        let mut tools: Vec<ListedTool> = Vec::new();
        if !self.tools_declared {
            return Ok(tools);
        }
        let mut cursor: Option<String> = None;
        for _ in 0..self.limits.max_pages {
            let params = match &cursor {
                Some(c) => json!({ "cursor": c }),
                None => json!({}),
            };
            let result = self.round_trip("tools/list", params)?;
            let page = match result.get("tools") {
                Some(Value::Array(page)) => page,
                _ => return Err(McpError::protocol("tools/list: tools is not an array")),
            };
            if tools.len() + page.len() > self.limits.max_tools {
                return Err(McpError::TooManyTools {
                    limit: self.limits.max_tools,
                });
            }
            for tool in page {
                let tool = listed_tool(tool)?;
                if tools.iter().any(|t| t.name == tool.name) {
                    return Err(McpError::protocol(format!(
                        "tools/list names the tool {:?} twice",
                        tool.name
                    )));
                }
                tools.push(tool);
            }
            match result.get("nextCursor") {
                None => return Ok(tools),
                Some(Value::String(next)) => cursor = Some(next.clone()),
                Some(_) => {
                    return Err(McpError::protocol("tools/list: nextCursor is not a string"));
                }
            }
        }
        Err(McpError::TooManyPages {
            limit: self.limits.max_pages,
        })
    }

    /// `tools/call` of `name` with `arguments` (a JSON object).
    pub fn call_tool(&mut self, name: &str, arguments: &Value) -> Result<CallResult, McpError> {
        let result =
            self.round_trip("tools/call", json!({"name": name, "arguments": arguments}))?;
        call_result(&result)
    }

    /// What the server did besides answering, so far.
    pub fn report(&self) -> &Report {
        &self.report
    }

    /// Ends the session and gives the transport back.
    pub fn into_parts(self) -> (T, Report) {
        (self.transport, self.report)
    }

    /// Sends one request and waits for its answer, refusing the server's requests and
    /// counting its notifications meanwhile.
    fn round_trip(&mut self, method: &str, params: Value) -> Result<Map<String, Value>, McpError> {
        let id = self.next_id;
        self.next_id += 1;
        self.transport
            .send(&request(id, method, params), self.deadline)?;
        loop {
            let bytes = self
                .transport
                .receive(self.deadline, method)
                .map_err(|e| match e {
                    McpError::Timeout { waiting_for, .. } => McpError::Timeout {
                        waiting_for,
                        after: self.timeout,
                    },
                    other => other,
                })?;
            self.received += bytes.len() as u64;
            if self.received > self.limits.max_output {
                return Err(McpError::OutputTooLarge {
                    limit: self.limits.max_output,
                });
            }
            match parse_incoming(&bytes)? {
                Incoming::Response {
                    id: Id::Number(n),
                    result,
                } if n == id => return Ok(result),
                Incoming::Error {
                    id: Some(Id::Number(n)),
                    code,
                    message,
                } if n == id => return Err(McpError::server(method, code, &message)),
                // The server could not tell which request it failed: the one outstanding.
                Incoming::Error {
                    id: None,
                    code,
                    message,
                } => return Err(McpError::server(method, code, &message)),
                Incoming::Response { id: other, .. }
                | Incoming::Error {
                    id: Some(other), ..
                } => {
                    return Err(McpError::protocol(format!(
                        "an answer to request {other}, which the client did not make"
                    )));
                }
                Incoming::Request { id: asked, method } => self.refuse(&asked, &method)?,
                Incoming::Notification { .. } => self.report.notifications += 1,
            }
        }
    }

    fn refuse(&mut self, id: &Id, method: &str) -> Result<(), McpError> {
        let request = ServerRequest::of(method);
        let answer = error_response(
            id,
            METHOD_NOT_FOUND,
            &format!(
                "boxmaker does not answer {} (server requests are refused)",
                request.method()
            ),
        );
        self.report.refused.push(request);
        if self.report.refused.len() > self.limits.max_requests {
            return Err(McpError::TooManyRequests {
                limit: self.limits.max_requests,
            });
        }
        self.transport.send_notice(&answer, self.deadline)
    }
}

fn listed_tool(tool: &Value) -> Result<ListedTool, McpError> {
    let Value::Object(tool) = tool else {
        return Err(McpError::protocol(
            "tools/list: a tool that is not an object",
        ));
    };
    let name = tool
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| McpError::protocol("tools/list: a tool without a name"))?;
    let description = match tool.get("description") {
        None => None,
        Some(Value::String(d)) => Some(d.clone()),
        Some(_) => {
            return Err(McpError::protocol(format!(
                "tools/list: the description of {name:?} is not a string"
            )));
        }
    };
    let input_schema = match tool.get("inputSchema") {
        Some(schema @ Value::Object(_)) => schema.clone(),
        _ => {
            return Err(McpError::protocol(format!(
                "tools/list: {name:?} has no inputSchema object"
            )));
        }
    };
    Ok(ListedTool {
        name: name.to_owned(),
        description,
        input_schema,
    })
}
