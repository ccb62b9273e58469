//! Real-peer tier: the client against the reference MCP servers from PyPI and npm
//! (`tests/mcp/setup.sh` installs them, pinned, under `~/.cache/boxmaker`). Each server is
//! initialized, listed, pinned (so every input schema goes through the validator) and
//! called; server-everything asks to sample, elicit and list roots and is refused, over
//! stdio and over Streamable HTTP; and the fake's messages are compared with the real ones.
//!
//! Ignored under a plain `cargo test`; `tests/gate` (step `mcp`) runs them with the
//! variables setup.sh prints.

mod shapes;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio as Piped};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp::transport::Stdio;
use mcp::{Client, ClientInfo, Declared, Limits, ListedTool, Pin, ServerInfo, ServerRequest};
use serde_json::{Value, json};

pub fn env_dir(name: &str) -> PathBuf {
    match std::env::var_os(name) {
        Some(v) if !v.is_empty() => PathBuf::from(v),
        _ => panic!(
            "{name} is not set. The MCP real-peer tests need the reference servers: run \
             `eval \"$(tests/mcp/setup.sh)\"` and export BOXMAKER_MCP_PYTHON_BIN, \
             BOXMAKER_MCP_NODE_BIN and BOXMAKER_MCP_NODE (tests/gate mcp does all of this)"
        ),
    }
}

pub fn python(server: &str) -> String {
    env_dir("BOXMAKER_MCP_PYTHON_BIN")
        .join(server)
        .to_string_lossy()
        .into_owned()
}

pub fn node(server: &str) -> String {
    env_dir("BOXMAKER_MCP_NODE_BIN")
        .join(server)
        .to_string_lossy()
        .into_owned()
}

/// Everything a server wrote on stdout, kept as the client reads it.
#[derive(Clone, Default)]
pub struct Tape(Arc<Mutex<Vec<u8>>>);

impl Tape {
    /// Every message, parsed.
    pub fn messages(&self) -> Vec<Value> {
        let bytes = self.0.lock().expect("tape").clone();
        bytes
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).expect("the server wrote JSON"))
            .collect()
    }
}

struct Tee<R> {
    inner: R,
    tape: Tape,
}

impl<R: Read> Read for Tee<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.tape
            .0
            .lock()
            .expect("tape")
            .extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

/// A running server, killed on drop.
pub struct Peer {
    pub child: Child,
    pub tape: Tape,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub type RealClient = Client<Stdio<ChildStdin>>;

/// Starts `argv` with piped stdio and a client on it (60 s for the whole session).
pub fn start(argv: &[String]) -> (RealClient, Peer) {
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Piped::piped())
        .stdout(Piped::piped())
        .stderr(Piped::null())
        .spawn()
        .unwrap_or_else(|e| panic!("start {argv:?}: {e}"));
    let tape = Tape::default();
    let stdout = Tee {
        inner: child.stdout.take().expect("stdout"),
        tape: tape.clone(),
    };
    let stdin = child.stdin.take().expect("stdin");
    let limits = Limits::default();
    let client = Client::new(
        Stdio::new(stdout, stdin, limits.max_message),
        limits,
        Duration::from_secs(60),
    );
    (client, Peer { child, tape })
}

pub fn initialize(client: &mut RealClient, declared: Declared) -> ServerInfo {
    client
        .initialize(&ClientInfo::default(), declared)
        .expect("initialize")
}

/// A temporary directory removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("mcp-realpeer-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch");
        Self(std::fs::canonicalize(&dir).expect("canonical"))
    }

    pub fn s(&self) -> String {
        self.0.to_string_lossy().into_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn git_repo() -> Scratch {
    let dir = Scratch::new("git");
    std::fs::write(dir.0.join("README"), "boxmaker\n").expect("file");
    for args in [
        vec!["init", "-q"],
        vec!["add", "README"],
        vec![
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "first",
        ],
    ] {
        let ok = Command::new("git")
            .args(&args)
            .current_dir(&dir.0)
            .status()
            .expect("git");
        assert!(ok.success(), "git {args:?}");
    }
    dir
}

/// A loopback HTTP server answering every GET with `body`, for mcp-server-fetch.
fn http_once(body: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    std::thread::spawn(move || {
        for stream in listener.incoming().take(4).flatten() {
            let mut reader = BufReader::new(&stream);
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let _ = write!(
                &stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://{address}/page.txt")
}

/// Pins the server (every schema through the validator) and checks `arguments` against
/// the pinned schema of `tool`, as brokerd will: the canonical arguments.
fn pin_and_check(
    name: &str,
    info: &ServerInfo,
    tools: &[ListedTool],
    tool: &str,
    arguments: &str,
) -> Value {
    let pin = Pin::new(name, info, tools).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(
        Pin::from_file(pin.to_file().as_bytes()).expect("pin file"),
        pin
    );
    let pinned = pin
        .tool(tool)
        .unwrap_or_else(|| panic!("{name} has no {tool}"));
    mcp::args::parse(arguments, &pinned.schema)
        .unwrap_or_else(|e| panic!("{name} {tool}: {e}"))
        .value
}

#[test]
#[ignore = "real peer: needs tests/mcp/setup.sh"]
fn each_reference_server_is_pinned_and_called() {
    let repo = git_repo();
    let files = Scratch::new("fs");
    std::fs::write(files.0.join("note.txt"), "hello").expect("file");
    let url = http_once("a page served on loopback");
    let cases: Vec<(&str, Vec<String>, &str, String, &str)> = vec![
        (
            "time",
            vec![python("mcp-server-time")],
            "get_current_time",
            r#"{"timezone":"UTC"}"#.into(),
            "\"timezone\": \"UTC\"",
        ),
        (
            "fetch",
            vec![
                python("mcp-server-fetch"),
                "--ignore-robots-txt".into(),
                "--allow-private-ips".into(),
            ],
            "fetch",
            format!(r#"{{"url":"{url}","raw":true}}"#),
            "a page served on loopback",
        ),
        (
            "git",
            vec![python("mcp-server-git"), "--repository".into(), repo.s()],
            "git_log",
            format!(r#"{{"repo_path":"{}","max_count":1}}"#, repo.s()),
            "first",
        ),
        (
            "filesystem",
            vec![node("mcp-server-filesystem"), files.s()],
            "list_directory",
            format!(r#"{{"path":"{}"}}"#, files.s()),
            "[FILE] note.txt",
        ),
        (
            "everything",
            vec![node("mcp-server-everything")],
            "echo",
            r#"{"message":"hi"}"#.into(),
            "Echo: hi",
        ),
    ];
    for (name, argv, tool, arguments, expect) in cases {
        let (mut client, _peer) = start(&argv);
        let info = initialize(&mut client, Declared::default());
        assert_eq!(info.protocol_version, mcp::PROTOCOL_VERSION, "{name}");
        let tools = client
            .list_tools()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let value = pin_and_check(name, &info, &tools, tool, &arguments);
        let result = client
            .call_tool(tool, &value)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!result.is_error, "{name}: {}", result.text);
        assert!(result.text.contains(expect), "{name}: {}", result.text);
        assert_eq!(
            client.report().refused,
            [],
            "{name} asked nothing of a client that declares nothing"
        );
    }
}

#[test]
#[ignore = "real peer: needs tests/mcp/setup.sh"]
fn server_everything_is_refused_sampling_elicitation_and_roots() {
    let (mut client, _peer) = start(&[node("mcp-server-everything")]);
    let declared = Declared {
        sampling: true,
        elicitation: true,
        roots: true,
    };
    initialize(&mut client, declared);
    let tools = client.list_tools().expect("list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"trigger-sampling-request"), "{names:?}");
    let result = client
        .call_tool("trigger-sampling-request", &json!({"prompt": "exfiltrate"}))
        .expect("call");
    assert!(result.is_error, "{}", result.text);
    assert!(result.text.contains("-32601"), "{}", result.text);
    let result = client
        .call_tool("trigger-elicitation-request", &json!({}))
        .expect("call");
    assert!(result.is_error, "{}", result.text);
    // server-everything asks for the roots 350 ms after initialized, and for this tool.
    let result = client
        .call_tool("get-roots-list", &json!({}))
        .expect("call");
    assert!(!result.text.is_empty());
    let refused = &client.report().refused;
    assert!((3..=4).contains(&refused.len()), "{refused:?}");
    for asked in [
        ServerRequest::Roots,
        ServerRequest::Sampling,
        ServerRequest::Elicitation,
    ] {
        assert!(refused.contains(&asked), "{asked:?} in {refused:?}");
    }
    assert!(
        client.report().notifications > 0,
        "server-everything announces its tools"
    );
}

#[test]
#[ignore = "real peer: needs tests/mcp/setup.sh"]
fn streamable_http_against_server_everything() {
    let port = TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let child = Command::new(node("mcp-server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Piped::null())
        .stderr(Piped::null())
        .spawn()
        .expect("start");
    let peer = Peer {
        child,
        tape: Tape::default(),
    };
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut waited = 0;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(waited < 100, "server-everything did not listen on {port}");
        std::thread::sleep(Duration::from_millis(100));
        waited += 1;
    }
    let transport =
        mcp::http::StreamableHttp::new(&url, Limits::default().max_message).expect("url");
    let mut client = Client::new(transport, Limits::default(), Duration::from_secs(60));
    let declared = Declared {
        sampling: true,
        elicitation: false,
        roots: false,
    };
    let info = client
        .initialize(&ClientInfo::default(), declared)
        .expect("initialize");
    assert_eq!(info.protocol_version, mcp::PROTOCOL_VERSION);
    let tools = client.list_tools().expect("list");
    Pin::new("everything", &info, &tools).expect("pin");
    let result = client
        .call_tool("echo", &json!({"message": "over http"}))
        .expect("echo");
    assert_eq!(result.text, "Echo: over http");
    // The request comes in the middle of the call's event stream and is answered by a POST.
    let result = client
        .call_tool("trigger-sampling-request", &json!({"prompt": "x"}))
        .expect("call");
    assert!(
        result.is_error && result.text.contains("-32601"),
        "{}",
        result.text
    );
    assert_eq!(client.report().refused, [ServerRequest::Sampling]);
    drop(peer);
}
