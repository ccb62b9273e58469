//! Every kind of failure, called in-process: its exact text (what the model reads, what
//! brokerd, the stack and the container tier's checks look for) and its variant with context.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::thread;

use proto::toolrun::{ConsultTarget, ToolInvocation, ToolOutput};
use proto::tools::{ConsultArgs, ToolArgs};

use crate::support::{TempDir, fetch, invocation, list_dir, local, read_file, response, serve_once};

/// The failure text of an in-process call.
fn fail(inv: &ToolInvocation, credentials: Option<&Path>) -> String {
    match toolkit::execute(inv, credentials) {
        ToolOutput::Failed { message } => message,
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[test]
fn input_failures_have_exact_texts() {
    let big = vec![b' '; (toolkit::MAX_INPUT + 1) as usize];
    match toolkit::run(&big[..]).expect("readable") {
        ToolOutput::Failed { message } => {
            assert_eq!(message, "the invocation is larger than 1048576 bytes");
        }
        other => panic!("{other:?}"),
    }
    let parse = serde_json::from_slice::<ToolInvocation>(b"{\"call\":").expect_err("bad");
    match toolkit::run_bytes(b"{\"call\":") {
        ToolOutput::Failed { message } => {
            assert_eq!(message, format!("invalid invocation: {parse}"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn path_failures_name_the_path() {
    let t = TempDir::new();
    std::fs::create_dir(t.path("notes")).expect("mkdir");
    std::fs::write(t.path("notes/a.txt"), "a").expect("write");
    std::fs::write(t.path("secret"), "s").expect("write");
    std::os::unix::fs::symlink(t.path("secret"), t.path("notes/escape")).expect("symlink");
    let roots = vec![t.s("notes")];
    let cases = [
        ("notes/a.txt".to_owned(), "notes/a.txt is not an absolute path".to_owned()),
        (
            t.s("notes/../secret"),
            format!("{} has a .. component", t.s("notes/../secret")),
        ),
        (t.s("secret"), format!("{} is outside the granted paths", t.s("secret"))),
        (t.s("notes/none"), format!("{} does not exist", t.s("notes/none"))),
        (
            t.s("notes/a.txt/x"),
            format!("{}: Not a directory (os error 20)", t.s("notes/a.txt/x")),
        ),
        (
            t.s("notes/escape"),
            format!(
                "{} goes through a symlink below the granted directory; links are not followed",
                t.s("notes/escape")
            ),
        ),
        (t.s("notes"), format!("{} is a directory, use list_dir", t.s("notes"))),
    ];
    for (path, text) in cases {
        let message = fail(&read_file(path, roots.clone()), None);
        assert_eq!(message, format!("read_file: {text}"));
    }
    assert_eq!(
        fail(&read_file("/dev/null".into(), vec!["/dev".into()]), None),
        "read_file: /dev/null is not a regular file"
    );
    assert_eq!(
        fail(&list_dir(t.s("notes/a.txt"), roots.clone()), None),
        format!("list_dir: {} is not a directory, use read_file", t.s("notes/a.txt"))
    );
    assert_eq!(
        fail(&list_dir(t.s("notes/none"), roots), None),
        format!("list_dir: {} does not exist", t.s("notes/none"))
    );
    std::fs::write(t.path("notes/bin"), b"\0").expect("write");
    assert_eq!(
        fail(&read_file(t.s("notes/bin"), vec![t.s("notes")]), None),
        "read_file: not UTF-8 text (a NUL byte in the first 8 KiB: binary content)"
    );
}

#[test]
fn url_and_address_failures_name_the_url_or_host() {
    let cases = [
        ("not a url", vec![], "invalid URL \"not a url\": relative URL without a base"),
        (
            "file:///etc/passwd",
            vec![],
            "file:///etc/passwd: only http and https URLs are fetched",
        ),
        (
            "http://example.test/",
            vec!["example.com:80".to_owned()],
            "the granted address \"example.com:80\" is not a socket address",
        ),
        ("http://example.test/", vec![], "no addresses were granted for example.test"),
        (
            "http://example.test/",
            local(443),
            "none of the granted addresses for example.test is on port 80",
        ),
    ];
    for (url, addresses, text) in cases {
        let message = fail(&fetch(url.into(), addresses), None);
        assert_eq!(message, format!("http_fetch: {text}"));
    }
}

#[test]
fn transport_and_status_failures_name_the_url() {
    let closed = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let url = format!("http://example.test:{port}/");
    assert_eq!(
        fail(&fetch(url.clone(), local(port)), None),
        format!("http_fetch: {url}: connection refused")
    );
    let (port, server) = serve_once(|_| response("404 Not Found", "", "gone"));
    let url = format!("http://example.test:{port}/x");
    assert_eq!(
        fail(&fetch(url.clone(), local(port)), None),
        format!("http_fetch: {url}: HTTP 404 Not Found")
    );
    server.join().expect("server");
    // The head arrives, the body never does: the read times out. (ureq wraps its timeout in
    // an io::Error of another kind, so this one reads as ureq words it, not "timed out after".)
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server = thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        let mut buf = [0u8; 1024];
        let _ = stream.read(&mut buf);
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nab");
        let mut sink = Vec::new();
        let _ = stream.read_to_end(&mut sink);
    });
    let url = format!("http://example.test:{port}/slow");
    let mut inv = fetch(url.clone(), local(port));
    inv.timeout_ms = 300;
    assert_eq!(
        fail(&inv, None),
        format!("http_fetch: {url}: timeout: global")
    );
    server.join().expect("server");
}

fn consult(port: u16, credential: &str) -> ToolInvocation {
    let mut inv = invocation(ToolArgs::Consult(ConsultArgs {
        prompt: "hi".into(),
    }));
    inv.addresses = local(port);
    inv.consult = Some(ConsultTarget {
        url: format!("http://api.example.test:{port}/v1"),
        model: "m".into(),
        credential: credential.into(),
    });
    inv
}

#[test]
fn credential_failures_name_the_credential_never_its_value() {
    let creds = TempDir::new();
    let mut no_target = consult(9, "k");
    no_target.consult = None;
    assert_eq!(
        fail(&no_target, Some(&creds.0)),
        "consult: the invocation names no remote model (consult target missing)"
    );
    std::fs::create_dir(creds.path("dir")).expect("mkdir");
    std::fs::write(creds.path("big"), "k".repeat(16 * 1024 + 1)).expect("write");
    std::fs::write(creds.path("latin1"), b"sk-\xe9").expect("write");
    std::fs::write(creds.path("empty"), "\r\n").expect("write");
    std::fs::write(creds.path("ctl"), "sk-\u{7}secret").expect("write");
    let cases = [
        ("../k", "the credential name \"../k\" is not a plain file name"),
        (
            "none",
            "cannot read the credential \"none\" from $CREDENTIALS_DIRECTORY: No such file or \
             directory (os error 2)",
        ),
        ("dir", "cannot read the credential \"dir\": Is a directory (os error 21)"),
        ("big", "the credential \"big\" is larger than 16384 bytes"),
        ("latin1", "the credential \"latin1\" is not UTF-8 text"),
        ("empty", "the credential \"empty\" is empty"),
        ("ctl", "the credential \"ctl\" holds characters an HTTP header cannot carry"),
    ];
    for (name, text) in cases {
        assert_eq!(
            fail(&consult(9, name), Some(&creds.0)),
            format!("consult: {text}")
        );
    }
    assert_eq!(
        fail(&consult(9, "k"), None),
        "consult: $CREDENTIALS_DIRECTORY is not set: the unit was started without the \
         credential \"k\" (LoadCredential)"
    );
}

#[test]
fn completion_failures_name_the_endpoint() {
    let creds = TempDir::new();
    std::fs::write(creds.path("k"), "sk-1").expect("write");
    let cases = [
        (
            "401 Unauthorized",
            r#"{"error":{"message":"bad key sk-1"}}"#,
            "HTTP 401 Unauthorized: bad key [credential]",
        ),
        ("500 Internal Server Error", "<html>", "HTTP 500 Internal Server Error"),
        ("200 OK", "<html>", "not a chat completion: expected value at line 1 column 1"),
        ("200 OK", r#"{"choices":[]}"#, "the completion has no choices"),
        (
            "200 OK",
            r#"{"choices":[{"message":{"content":null}}]}"#,
            "the completion's message has no content",
        ),
    ];
    for (status, body, text) in cases {
        let (port, server) = serve_once(move |_| response(status, "", body));
        let endpoint = format!("http://api.example.test:{port}/v1/chat/completions");
        assert_eq!(
            fail(&consult(port, "k"), Some(&creds.0)),
            format!("consult: {endpoint}: {text}")
        );
        server.join().expect("server");
    }
}
