//! The real `boxmaker-tool` binary, one invocation on stdin per test case, against files in
//! temporary directories and tiny HTTP servers on 127.0.0.1 (no other network traffic).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use proto::toolrun::{ConsultTarget, ToolInvocation, ToolOutput};
use proto::tools::{ConsultArgs, HttpFetchArgs, ListDirArgs, ReadFileArgs, ToolArgs};

/// A temporary directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("toolkit-it-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        // The real path, so roots compare equal however $TMPDIR is spelled.
        Self(std::fs::canonicalize(&dir).expect("canonical temp dir"))
    }
    fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }
    fn s(&self, rel: &str) -> String {
        self.path(rel).to_string_lossy().into_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn invocation(call: ToolArgs) -> ToolInvocation {
    ToolInvocation {
        call,
        max_bytes: 4096,
        roots: vec![],
        addresses: vec![],
        consult: None,
        timeout_ms: 5000,
    }
}

fn read_file(path: String, roots: Vec<String>) -> ToolInvocation {
    let mut inv = invocation(ToolArgs::ReadFile(ReadFileArgs { path }));
    inv.roots = roots;
    inv
}

fn list_dir(path: String, roots: Vec<String>) -> ToolInvocation {
    let mut inv = invocation(ToolArgs::ListDir(ListDirArgs { path }));
    inv.roots = roots;
    inv
}

fn fetch(url: String, addresses: Vec<String>) -> ToolInvocation {
    let mut inv = invocation(ToolArgs::HttpFetch(HttpFetchArgs { url }));
    inv.addresses = addresses;
    inv
}

/// Runs the binary on raw stdin; returns its parsed answer. Proxy variables point at a
/// closed port to prove the tool ignores them.
fn run_raw(stdin: &[u8], credentials: Option<&Path>) -> ToolOutput {
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

fn run(inv: &ToolInvocation, credentials: Option<&Path>) -> ToolOutput {
    run_raw(&serde_json::to_vec(inv).expect("encode"), credentials)
}

fn ok(out: ToolOutput) -> (String, bool) {
    match out {
        ToolOutput::Ok { content, truncated } => (content, truncated),
        ToolOutput::Failed { message } => panic!("expected ok, got failed: {message}"),
    }
}

fn failed(out: ToolOutput, words: &str) -> String {
    match out {
        ToolOutput::Failed { message } => {
            assert!(message.contains(words), "{message:?} lacks {words:?}");
            message
        }
        ToolOutput::Ok { content, .. } => panic!("expected failed, got ok: {content}"),
    }
}

// ---- files -------------------------------------------------------------------------------

#[test]
fn read_file_inside_the_root_returns_the_text() {
    let t = TempDir::new();
    std::fs::create_dir(t.path("notes")).expect("mkdir");
    std::fs::write(t.path("notes/a.txt"), "hello\n").expect("write");
    let out = run(&read_file(t.s("notes/a.txt"), vec![t.s("notes")]), None);
    assert_eq!(ok(out), ("hello\n".into(), false));
}

#[test]
fn read_file_outside_the_root_is_refused() {
    let t = TempDir::new();
    std::fs::create_dir(t.path("notes")).expect("mkdir");
    std::fs::write(t.path("notes2"), "secret").expect("write");
    let out = run(&read_file(t.s("notes2"), vec![t.s("notes")]), None);
    failed(out, "outside the granted paths");
}

#[test]
fn read_file_never_follows_a_symlink_below_the_root() {
    let t = TempDir::new();
    std::fs::create_dir(t.path("notes")).expect("mkdir");
    std::fs::write(t.path("secret"), "secret").expect("write");
    std::fs::write(t.path("notes/inside.txt"), "fine").expect("write");
    std::os::unix::fs::symlink(t.path("secret"), t.path("notes/escape")).expect("symlink");
    std::os::unix::fs::symlink("inside.txt", t.path("notes/alias")).expect("symlink");
    let roots = vec![t.s("notes")];
    let msg = failed(
        run(&read_file(t.s("notes/escape"), roots.clone()), None),
        "links are not followed",
    );
    // The message does not say where the link leads.
    assert!(!msg.contains(&t.s("secret")), "{msg}");
    // Not even a link that stays inside the root: deny grants and patterns were matched on
    // the path as written, and a link could lead to what they refuse.
    failed(
        run(&read_file(t.s("notes/alias"), roots.clone()), None),
        "links are not followed",
    );
    // A link in the root's own prefix is the owner's layout, and fine.
    std::os::unix::fs::symlink(t.path("notes"), t.path("notes-link")).expect("symlink");
    assert_eq!(
        ok(run(
            &read_file(t.s("notes-link/inside.txt"), vec![t.s("notes-link")]),
            None
        )),
        ("fine".into(), false)
    );
}

#[test]
fn read_file_truncates_at_max_bytes() {
    let t = TempDir::new();
    std::fs::write(t.path("big.txt"), "0123456789").expect("write");
    let mut inv = read_file(t.s("big.txt"), vec![t.s("")]);
    inv.max_bytes = 4;
    assert_eq!(ok(run(&inv, None)), ("0123".into(), true));
    inv.max_bytes = 10;
    assert_eq!(ok(run(&inv, None)), ("0123456789".into(), false));
}

#[test]
fn read_file_on_a_directory_points_to_list_dir() {
    let t = TempDir::new();
    std::fs::create_dir(t.path("d")).expect("mkdir");
    failed(
        run(&read_file(t.s("d"), vec![t.s("")]), None),
        "is a directory, use list_dir",
    );
}

#[test]
fn read_file_refuses_binary_content() {
    let t = TempDir::new();
    std::fs::write(t.path("bin"), b"\x7fELF\0\0\x01").expect("write");
    failed(
        run(&read_file(t.s("bin"), vec![t.s("")]), None),
        "not UTF-8 text",
    );
    std::fs::write(t.path("latin1"), b"caf\xe9").expect("write");
    let (text, _) = ok(run(&read_file(t.s("latin1"), vec![t.s("")]), None));
    assert_eq!(text, "caf\u{FFFD}");
}

#[test]
fn list_dir_sorts_marks_directories_and_shows_links_unfollowed() {
    let t = TempDir::new();
    std::fs::create_dir_all(t.path("d/sub")).expect("mkdir");
    std::fs::write(t.path("d/b.txt"), "x").expect("write");
    std::os::unix::fs::symlink("/etc", t.path("d/c")).expect("symlink");
    let out = run(&list_dir(t.s("d"), vec![t.s("d")]), None);
    assert_eq!(ok(out), ("b.txt\nc -> /etc\nsub/\n".into(), false));
    let mut small = list_dir(t.s("d"), vec![t.s("d")]);
    small.max_bytes = 8;
    assert_eq!(ok(run(&small, None)), ("b.txt\n".into(), true));
    // Listing through the link is refused.
    failed(
        run(&list_dir(t.s("d/c"), vec![t.s("d")]), None),
        "links are not followed",
    );
    failed(
        run(&list_dir(t.s("d/b.txt"), vec![t.s("d")]), None),
        "not a directory",
    );
}

#[test]
fn garbage_on_stdin_is_a_failed_answer_with_exit_zero() {
    failed(run_raw(b"{\"call\":", None), "invalid invocation");
}

// ---- http_fetch --------------------------------------------------------------------------

/// Reads one HTTP/1.1 request (head and Content-Length body) from `stream`.
fn read_request(stream: &TcpStream) -> String {
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

fn response(status: &str, extra: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A server on 127.0.0.1 that answers one request with `answer(request)`; the handle
/// returns the request it saw.
fn serve_once(answer: impl FnOnce(&str) -> Vec<u8> + Send + 'static) -> (u16, JoinHandle<String>) {
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

fn local(port: u16) -> Vec<String> {
    vec![format!("127.0.0.1:{port}")]
}

#[test]
fn http_fetch_connects_to_the_granted_address_without_dns() {
    let (port, server) = serve_once(|_| response("200 OK", "", "the body"));
    // example.test cannot resolve: only the granted address can have been used.
    let out = run(
        &fetch(format!("http://example.test:{port}/x?q=1"), local(port)),
        None,
    );
    assert_eq!(ok(out), ("the body".into(), false));
    let request = server.join().expect("server");
    assert!(request.starts_with("GET /x?q=1 HTTP/1.1\r\n"), "{request}");
    assert!(
        request
            .to_ascii_lowercase()
            .contains(&format!("host: example.test:{port}\r\n")),
        "{request}"
    );
}

#[test]
fn http_fetch_reports_a_redirect_without_following_it() {
    let (port, server) = serve_once(|_| response("302 Found", "Location: /elsewhere\r\n", ""));
    let out = run(
        &fetch(format!("http://example.test:{port}/x"), local(port)),
        None,
    );
    let (text, truncated) = ok(out);
    assert!(
        text.starts_with(&format!(
            "redirect (302 Found) to http://example.test:{port}/elsewhere\n"
        )),
        "{text}"
    );
    assert!(!truncated);
    server.join().expect("server");
}

#[test]
fn http_fetch_fails_on_404() {
    let (port, server) = serve_once(|_| response("404 Not Found", "", "no such page"));
    let out = run(
        &fetch(format!("http://example.test:{port}/x"), local(port)),
        None,
    );
    failed(out, "HTTP 404 Not Found");
    server.join().expect("server");
}

#[test]
fn http_fetch_truncates_an_oversized_body() {
    let body = "x".repeat(100_000);
    let (port, server) = serve_once(move |_| response("200 OK", "", &body));
    let mut inv = fetch(format!("http://example.test:{port}/big"), local(port));
    inv.max_bytes = 10;
    assert_eq!(ok(run(&inv, None)), ("x".repeat(10), true));
    server.join().expect("server");
}

#[test]
fn http_fetch_gives_up_at_the_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    // Accepts, reads the request, never answers; ends when the tool hangs up.
    let server = thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        let mut sink = Vec::new();
        let _ = stream.read_to_end(&mut sink);
    });
    let mut inv = fetch(format!("http://example.test:{port}/slow"), local(port));
    inv.timeout_ms = 300;
    let start = Instant::now();
    failed(run(&inv, None), "timed out after 300 ms");
    assert!(start.elapsed() < Duration::from_secs(5));
    server.join().expect("server");
}

#[test]
fn http_fetch_reaches_nothing_but_the_granted_addresses() {
    // A port with nothing listening: the connection is refused.
    let closed = TcpListener::bind("127.0.0.1:0").expect("bind");
    let closed_port = closed.local_addr().expect("addr").port();
    drop(closed);
    let out = run(
        &fetch(
            format!("http://example.test:{closed_port}/"),
            local(closed_port),
        ),
        None,
    );
    failed(out, "connection refused");
    // A server that is up but not granted is never contacted.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let out = run(
        &fetch(format!("http://example.test:{port}/"), local(closed_port)),
        None,
    );
    failed(out, &format!("on port {port}"));
    listener.set_nonblocking(true).expect("nonblocking");
    assert!(listener.accept().is_err(), "the server was contacted");
    failed(
        run(&fetch("file:///etc/passwd".into(), local(port)), None),
        "only http",
    );
}

#[test]
fn https_speaks_tls_and_fails_cleanly_against_a_plain_server() {
    // No certificate can be made here without a new dependency; this proves the https path
    // goes through rustls (a TLS handshake, not plain text) and fails as an answer.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server = thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        let mut hello = [0u8; 5];
        stream.read_exact(&mut hello).expect("read");
        let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
        hello
    });
    let out = run(
        &fetch(format!("https://example.test:{port}/"), local(port)),
        None,
    );
    failed(out, &format!("https://example.test:{port}/"));
    // 0x16: a TLS handshake record.
    assert_eq!(server.join().expect("server")[0], 0x16);
}

// ---- consult -----------------------------------------------------------------------------

fn consult(port: u16, credential: &str) -> ToolInvocation {
    let mut inv = invocation(ToolArgs::Consult(ConsultArgs {
        prompt: "What is 2+2?".into(),
    }));
    inv.addresses = local(port);
    inv.consult = Some(ConsultTarget {
        url: format!("http://api.example.test:{port}/v1/"),
        model: "remote-model".into(),
        credential: credential.into(),
    });
    inv
}

const COMPLETION: &str = r#"{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"4"},"finish_reason":"stop"}],"usage":{"total_tokens":3}}"#;

#[test]
fn consult_sends_the_key_and_returns_the_answer() {
    let creds = TempDir::new();
    std::fs::write(creds.path("remote-key"), "sk-test-123\n").expect("write key");
    let (port, server) = serve_once(|request| {
        if request.contains("\r\nauthorization: Bearer sk-test-123\r\n")
            || request.contains("\r\nAuthorization: Bearer sk-test-123\r\n")
        {
            response("200 OK", "Content-Type: application/json\r\n", COMPLETION)
        } else {
            response("401 Unauthorized", "", r#"{"error":{"message":"bad key"}}"#)
        }
    });
    let out = run(&consult(port, "remote-key"), Some(&creds.0));
    assert_eq!(ok(out), ("4".into(), false));
    let request = server.join().expect("server");
    assert!(
        request.starts_with("POST /v1/chat/completions HTTP/1.1\r\n"),
        "{request}"
    );
    let body = request.split("\r\n\r\n").nth(1).expect("body");
    assert_eq!(
        body,
        r#"{"model":"remote-model","messages":[{"role":"user","content":"What is 2+2?"}]}"#
    );
}

#[test]
fn consult_without_the_credential_fails_clearly() {
    let creds = TempDir::new();
    let out = run(&consult(9, "remote-key"), Some(&creds.0));
    failed(out, "cannot read the credential \"remote-key\"");
    let out = run(&consult(9, "remote-key"), None);
    failed(out, "$CREDENTIALS_DIRECTORY is not set");
}

#[test]
fn consult_api_errors_never_echo_the_key() {
    let creds = TempDir::new();
    std::fs::write(creds.path("k"), "sk-wrong").expect("write key");
    let (port, server) = serve_once(|_| {
        response(
            "401 Unauthorized",
            "",
            r#"{"error":{"message":"Incorrect API key provided: sk-wrong"}}"#,
        )
    });
    let msg = failed(
        run(&consult(port, "k"), Some(&creds.0)),
        "HTTP 401 Unauthorized",
    );
    assert!(
        msg.contains("[credential]") && !msg.contains("sk-wrong"),
        "{msg}"
    );
    server.join().expect("server");
}
