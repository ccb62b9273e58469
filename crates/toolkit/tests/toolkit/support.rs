//! What every case shares: a temporary directory, the invocation builders, the binary run
//! on stdin, and a one-request HTTP server on 127.0.0.1.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use proto::toolrun::{ToolInvocation, ToolOutput};
use proto::tools::{HttpFetchArgs, ListDirArgs, ReadFileArgs, ToolArgs};

/// A temporary directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new() -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("toolkit-it-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        // The real path, so roots compare equal however $TMPDIR is spelled.
        Self(std::fs::canonicalize(&dir).expect("canonical temp dir"))
    }
    pub fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }
    pub fn s(&self, rel: &str) -> String {
        self.path(rel).to_string_lossy().into_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn invocation(call: ToolArgs) -> ToolInvocation {
    ToolInvocation {
        call,
        max_bytes: 4096,
        roots: vec![],
        addresses: vec![],
        consult: None,
        timeout_ms: 5000,
        notes: None,
        index: Vec::new(),
    }
}

pub fn read_file(path: String, roots: Vec<String>) -> ToolInvocation {
    let mut inv = invocation(ToolArgs::ReadFile(ReadFileArgs { path }));
    inv.roots = roots;
    inv
}

pub fn list_dir(path: String, roots: Vec<String>) -> ToolInvocation {
    let mut inv = invocation(ToolArgs::ListDir(ListDirArgs { path }));
    inv.roots = roots;
    inv
}

pub fn fetch(url: String, addresses: Vec<String>) -> ToolInvocation {
    let mut inv = invocation(ToolArgs::HttpFetch(HttpFetchArgs { url }));
    inv.addresses = addresses;
    inv
}

/// Runs the binary on raw stdin; returns its parsed answer. Proxy variables point at a
/// closed port to prove the tool ignores them.
pub fn run_raw(stdin: &[u8], credentials: Option<&Path>) -> ToolOutput {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_boxmaker-tool"));
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("CREDENTIALS_DIRECTORY");
    for var in [
        "http_proxy",
        "HTTP_PROXY",
        "https_proxy",
        "HTTPS_PROXY",
        "ALL_PROXY",
    ] {
        cmd.env(var, "http://127.0.0.1:9");
    }
    if let Some(dir) = credentials {
        cmd.env("CREDENTIALS_DIRECTORY", dir);
    }
    let mut child = cmd.spawn().expect("spawn boxmaker-tool");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin)
        .expect("write stdin");
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "exit {:?}, stderr {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is one ToolOutput")
}

pub fn run(inv: &ToolInvocation, credentials: Option<&Path>) -> ToolOutput {
    run_raw(&serde_json::to_vec(inv).expect("encode"), credentials)
}

pub fn ok(out: ToolOutput) -> (String, bool) {
    match out {
        ToolOutput::Ok { content, truncated } => (content, truncated),
        ToolOutput::Failed { message } => panic!("expected ok, got failed: {message}"),
    }
}

pub fn failed(out: ToolOutput, words: &str) -> String {
    match out {
        ToolOutput::Failed { message } => {
            assert!(message.contains(words), "{message:?} lacks {words:?}");
            message
        }
        ToolOutput::Ok { content, .. } => panic!("expected failed, got ok: {content}"),
    }
}

/// Reads one HTTP/1.1 request (head and Content-Length body) from `stream`.
pub fn read_request(stream: &TcpStream) -> String {
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).expect("read request") == 0 {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().expect("content-length");
        }
        head.push_str(&line);
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).expect("read body");
    head + &String::from_utf8_lossy(&body)
}

pub fn response(status: &str, extra: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A server on 127.0.0.1 that answers one request with `answer(request)`; the handle
/// returns the request it saw.
pub fn serve_once(
    answer: impl FnOnce(&str) -> Vec<u8> + Send + 'static,
) -> (u16, JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let handle = thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let request = read_request(&stream);
        // The tool may hang up early (a capped body); that is not the server's failure.
        let _ = stream.write_all(&answer(&request));
        request
    });
    (port, handle)
}

pub fn local(port: u16) -> Vec<String> {
    vec![format!("127.0.0.1:{port}")]
}
