//! The stdio loop: one JSON-RPC message per line in, one per line out.

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::script::{Block, Reply, Script, Step, Tool};

/// A 1x1 PNG, base64: what an image block carries.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// Serves `script` until `reader` ends (or a step exits); the exit status.
pub fn run(script: &Script, reader: impl BufRead, writer: impl Write) -> u8 {
    if script.ignore_sigterm {
        // A flag nobody reads: SIGTERM no longer ends the process.
        let _ = signal_hook::flag::register(
            signal_hook::consts::SIGTERM,
            Arc::new(AtomicBool::new(false)),
        );
    }
    let tools = script.tools_for_this_run().to_vec();
    log(script, &format!("pid {}", std::process::id()));
    let mut fake = Fake {
        script,
        tools,
        reader,
        writer,
        next_ask: 0,
        held: std::collections::VecDeque::new(),
    };
    let status = fake.serve();
    if script.ignore_stdin_close {
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    status
}

struct Fake<'s, R, W> {
    script: &'s Script,
    tools: Vec<Tool>,
    reader: R,
    writer: W,
    next_ask: u64,
    /// Messages that came while an answer to the fake's own request was awaited: served
    /// after it, in order, as the SDKs' concurrent servers would.
    held: std::collections::VecDeque<Map<String, Value>>,
}

/// How a step ended the call.
enum Flow {
    Go,
    /// A request was refused: the call's result is this error text.
    Refused(String),
    Exit(u8),
    /// stdin ended while an answer was due.
    Ended,
}

impl<R: BufRead, W: Write> Fake<'_, R, W> {
    fn serve(&mut self) -> u8 {
        while let Some(message) = self.next_message() {
            let id = message.get("id").cloned();
            let Some(method) = message.get("method").and_then(Value::as_str) else {
                continue; // a stray answer
            };
            log(self.script, method);
            let params = message.get("params").cloned().unwrap_or(json!({}));
            if method == "tools/call" {
                record(self.script, &params);
            }
            let Some(id) = id else {
                if method == "notifications/initialized" {
                    for step in self.script.on_initialized.clone() {
                        match self.step(&step) {
                            Flow::Exit(code) => return code,
                            Flow::Ended => return 0,
                            Flow::Go | Flow::Refused(_) => {}
                        }
                    }
                }
                continue;
            };
            let answer = match method {
                "initialize" => Ok(self.initialize(&params)),
                "tools/list" => self.list(&params),
                "tools/call" => match self.call(&params) {
                    CallEnd::Answer(a) => a,
                    CallEnd::Exit(code) => return code,
                    CallEnd::Ended => return 0,
                },
                "ping" => Ok(json!({})),
                _ => Err((-32601, "Method not found".to_owned())),
            };
            let line = match answer {
                Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                Err((code, message)) => json!({
                    "jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}
                }),
            };
            self.write(&line.to_string());
            if method == "tools/list" {
                for step in self.script.on_listed.clone() {
                    match self.step(&step) {
                        Flow::Exit(code) => return code,
                        Flow::Ended => return 0,
                        Flow::Go | Flow::Refused(_) => {}
                    }
                }
            }
        }
        0
    }

    /// The next JSON message; `None` at the end of stdin. Lines that are not JSON are
    /// skipped (and said on stderr).
    fn next_message(&mut self) -> Option<Map<String, Value>> {
        if let Some(message) = self.held.pop_front() {
            return Some(message);
        }
        self.read_message()
    }

    fn read_message(&mut self) -> Option<Map<String, Value>> {
        loop {
            let mut line = String::new();
            match self.reader.read_line(&mut line) {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
            match serde_json::from_str::<Value>(&line) {
                Ok(Value::Object(map)) => return Some(map),
                _ => {
                    let _ = writeln!(
                        std::io::stderr(),
                        "fake-mcp-server: not a message: {}",
                        line.trim_end()
                    );
                }
            }
        }
    }

    fn write(&mut self, line: &str) {
        let _ = writeln!(self.writer, "{line}").and_then(|()| self.writer.flush());
    }

    fn initialize(&self, params: &Value) -> Value {
        let asked = params.get("protocolVersion").and_then(Value::as_str);
        let version = self
            .script
            .protocol_version
            .as_deref()
            .or(asked)
            .unwrap_or("2025-11-25");
        let capabilities = if self.script.no_tools_capability {
            json!({})
        } else {
            json!({"tools": {"listChanged": false}})
        };
        json!({
            "capabilities": capabilities,
            "protocolVersion": version,
            "serverInfo": {"name": self.script.server_info.name, "version": self.script.server_info.version},
        })
    }

    fn list(&self, params: &Value) -> Result<Value, (i64, String)> {
        let start = match params.get("cursor") {
            None => 0,
            Some(c) => c
                .as_str()
                .and_then(|c| c.parse::<usize>().ok())
                .filter(|n| *n <= self.tools.len())
                .ok_or((-32602, "Invalid cursor".to_owned()))?,
        };
        let size = match self.script.page_size {
            0 => self.tools.len(),
            n => n,
        };
        let end = (start + size).min(self.tools.len());
        let tools: Vec<Value> = self.tools[start..end]
            .iter()
            .map(|t| {
                let mut tool = json!({"name": t.name, "inputSchema": t.input_schema});
                if let Some(d) = &t.description {
                    tool["description"] = json!(d);
                }
                tool
            })
            .collect();
        let mut result = json!({ "tools": tools });
        if end < self.tools.len() {
            result["nextCursor"] = json!(end.to_string());
        }
        Ok(result)
    }

    fn call(&mut self, params: &Value) -> CallEnd {
        let name = params.get("name").and_then(Value::as_str).unwrap_or("");
        let Some(tool) = self.tools.iter().find(|t| t.name == name).cloned() else {
            return CallEnd::Answer(Err((-32602, format!("Unknown tool: {name}"))));
        };
        let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
        // What it reads it sends in this call, before any step or its result (`send`).
        crate::send::read_and_send(self.script, &tool, &arguments);
        for step in &tool.steps {
            match self.step(step) {
                Flow::Go => {}
                Flow::Refused(text) => {
                    return CallEnd::Answer(Ok(json!({
                        "content": [{"type": "text", "text": text}],
                        "isError": true,
                    })));
                }
                Flow::Exit(code) => return CallEnd::Exit(code),
                Flow::Ended => return CallEnd::Ended,
            }
        }
        CallEnd::Answer(reply(&tool.result, &arguments))
    }

    fn step(&mut self, step: &Step) -> Flow {
        match step {
            Step::Ask(method) => self.ask(method),
            Step::Notify(method) => {
                let mut note = json!({"jsonrpc": "2.0", "method": method});
                if method == "notifications/message" {
                    note["params"] =
                        json!({"level": "info", "logger": "fake", "data": "a log line"});
                }
                self.write(&note.to_string());
                Flow::Go
            }
            Step::SleepMs(ms) => {
                std::thread::sleep(Duration::from_millis(*ms));
                Flow::Go
            }
            Step::Raw(line) => {
                let line = line.clone();
                self.write(&line);
                Flow::Go
            }
            Step::Exit(code) => Flow::Exit(*code),
        }
    }

    /// Sends a request shaped as server-everything sends it and waits for its answer.
    fn ask(&mut self, method: &str) -> Flow {
        let id = self.next_ask;
        self.next_ask += 1;
        let mut request = json!({"method": method, "jsonrpc": "2.0", "id": id});
        match method {
            "sampling/createMessage" => {
                request["params"] = json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": "Resource trigger-sampling-request context: hi"}}],
                    "systemPrompt": "You are a helpful test server.",
                    "maxTokens": 100,
                    "temperature": 0.7,
                });
            }
            "elicitation/create" => {
                request["params"] = json!({
                    "message": "Please provide inputs for the following fields:",
                    "requestedSchema": {"type": "object", "properties": {"name": {"title": "String", "type": "string", "description": "Your full, legal name"}}, "required": ["name"]},
                });
            }
            _ => {}
        }
        self.write(&request.to_string());
        while let Some(message) = self.read_message() {
            if message.get("method").is_some() || message.get("id") != Some(&json!(id)) {
                self.held.push_back(message);
                continue;
            }
            if let Some(error) = message.get("error") {
                let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
                let text = error.get("message").and_then(Value::as_str).unwrap_or("");
                return Flow::Refused(format!("MCP error {code}: {text}"));
            }
            return Flow::Go;
        }
        Flow::Ended
    }
}

/// Appends a call's `params` to the script's calls file, if it has one.
fn record(script: &Script, params: &Value) {
    append(script.calls_file.as_deref(), &params.to_string());
}

/// Appends `line` to the script's log file, if it has one.
fn log(script: &Script, line: &str) {
    append(script.log_file.as_deref(), line);
}

fn append(file: Option<&std::path::Path>, line: &str) {
    if let Some(path) = file {
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| writeln!(f, "{line}"));
        if appended.is_err() {
            let _ = writeln!(
                std::io::stderr(),
                "fake-mcp-server: cannot log to {}",
                path.display()
            );
        }
    }
}

enum CallEnd {
    Answer(Result<Value, (i64, String)>),
    Exit(u8),
    Ended,
}

pub(crate) fn reply(reply: &Reply, arguments: &Value) -> Result<Value, (i64, String)> {
    if let Some((code, message)) = &reply.error {
        return Err((*code, message.clone()));
    }
    let content: Vec<Value> = reply
        .content
        .iter()
        .filter(|block| match block {
            Block::TextIfArguments(needle, _) => arguments.to_string().contains(needle.as_str()),
            _ => true,
        })
        .map(|block| match block {
            Block::Text(t) | Block::TextIfArguments(_, t) => json!({"type": "text", "text": t}),
            Block::Repeat(t, n) => json!({"type": "text", "text": t.repeat(*n)}),
            Block::Image(mime) => json!({"type": "image", "data": PNG, "mimeType": mime}),
            Block::Audio(mime) => json!({"type": "audio", "data": PNG, "mimeType": mime}),
            Block::ResourceLink(uri) => json!({
                "name": "Text Resource 1", "uri": uri, "description": "a resource",
                "mimeType": "text/plain", "type": "resource_link",
            }),
            Block::Resource(uri, text) => json!({
                "type": "resource", "resource": {"uri": uri, "mimeType": "text/plain", "text": text},
            }),
            Block::EchoArguments => json!({"type": "text", "text": arguments.to_string()}),
            Block::Env(name) => json!({
                "type": "text",
                "text": std::env::var(name).unwrap_or_else(|_| "(unset)".into()),
            }),
        })
        .collect();
    // server-everything writes isError only when it is true (the Python servers always).
    let mut result = json!({ "content": content });
    if reply.is_error {
        result["isError"] = json!(true);
    }
    Ok(result)
}
