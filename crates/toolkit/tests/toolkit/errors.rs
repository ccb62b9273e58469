//! Every kind of failure, called in-process: its exact text (what the model reads, what
//! brokerd, the stack and the container tier's checks look for) and its variant with context.

use std::io::{self, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::thread;

use proto::toolrun::{ConsultTarget, ToolInvocation};
use proto::tools::{ConsultArgs, ToolArgs};
use toolkit::{ConsultError, Failure, FileError, NetError, ToolError};

use crate::support::{
    TempDir, fetch, invocation, list_dir, local, read_file, response, serve_once,
};

/// The error of an in-process call.
fn fail(inv: &ToolInvocation, credentials: Option<&Path>) -> ToolError {
    toolkit::execute(inv, credentials).expect_err("a failure")
}

/// What `tool` failed on.
fn failure<'a>(err: &'a ToolError, tool: &str) -> &'a Failure {
    match err {
        ToolError::Tool { tool: t, source } if *t == tool => source,
        other => panic!("expected a failure of {tool}, got {other:?}"),
    }
}

fn file_error<'a>(err: &'a ToolError, tool: &str) -> &'a FileError {
    match failure(err, tool) {
        Failure::File(e) => e,
        other => panic!("expected a file error, got {other:?}"),
    }
}

fn net_error<'a>(err: &'a ToolError, tool: &str) -> &'a NetError {
    match failure(err, tool) {
        Failure::Net(e) => e,
        other => panic!("expected a network error, got {other:?}"),
    }
}

fn consult_error(err: &ToolError) -> &ConsultError {
    match failure(err, "consult") {
        Failure::Consult(e) => e,
        other => panic!("expected a consult error, got {other:?}"),
    }
}

#[test]
fn input_failures_have_exact_texts() {
    let big = vec![b' '; (toolkit::MAX_INPUT + 1) as usize];
    let err = toolkit::run(&big[..])
        .expect("readable")
        .expect_err("too large");
    assert_eq!(
        err.to_string(),
        "the invocation is larger than 1048576 bytes"
    );
    assert!(
        matches!(err, ToolError::TooLarge { limit: 1048576 }),
        "{err:?}"
    );
    let parse = serde_json::from_slice::<ToolInvocation>(b"{\"call\":").expect_err("bad");
    let err = toolkit::run_bytes(b"{\"call\":").expect_err("invalid");
    assert_eq!(err.to_string(), format!("invalid invocation: {parse}"));
    assert!(matches!(err, ToolError::Invocation(_)), "{err:?}");
}

#[test]
fn path_failures_name_the_path() {
    let t = TempDir::new();
    std::fs::create_dir(t.path("notes")).expect("mkdir");
    std::fs::write(t.path("notes/a.txt"), "a").expect("write");
    std::fs::write(t.path("secret"), "s").expect("write");
    std::os::unix::fs::symlink(t.path("secret"), t.path("notes/escape")).expect("symlink");
    let roots = vec![t.s("notes")];
    let read = |path: String| fail(&read_file(path, roots.clone()), None);

    let err = read("notes/a.txt".into());
    assert_eq!(
        err.to_string(),
        "read_file: notes/a.txt is not an absolute path"
    );
    assert!(
        matches!(file_error(&err, "read_file"), FileError::NotAbsolute { path } if path == "notes/a.txt")
    );

    let dotted = t.s("notes/../secret");
    let err = read(dotted.clone());
    assert_eq!(
        err.to_string(),
        format!("read_file: {dotted} has a .. component")
    );
    assert!(
        matches!(file_error(&err, "read_file"), FileError::ParentDir { path } if *path == dotted)
    );

    let err = read(t.s("secret"));
    assert_eq!(
        err.to_string(),
        format!("read_file: {} is outside the granted paths", t.s("secret"))
    );
    assert!(
        matches!(file_error(&err, "read_file"), FileError::Outside { path } if *path == t.s("secret"))
    );

    let err = read(t.s("notes/none"));
    assert_eq!(
        err.to_string(),
        format!("read_file: {} does not exist", t.s("notes/none"))
    );
    assert!(
        matches!(file_error(&err, "read_file"), FileError::Io { path, source }
        if *path == t.path("notes/none") && source.kind() == io::ErrorKind::NotFound)
    );

    let err = read(t.s("notes/a.txt/x"));
    assert_eq!(
        err.to_string(),
        format!(
            "read_file: {}: Not a directory (os error 20)",
            t.s("notes/a.txt/x")
        )
    );
    assert!(
        matches!(file_error(&err, "read_file"), FileError::Io { path, source }
        if *path == t.path("notes/a.txt/x") && source.raw_os_error() == Some(20))
    );

    let err = read(t.s("notes/escape"));
    assert_eq!(
        err.to_string(),
        format!(
            "read_file: {} goes through a symlink below the granted directory; links are not \
             followed",
            t.s("notes/escape")
        )
    );
    assert!(
        matches!(file_error(&err, "read_file"), FileError::Symlink { path } if *path == t.path("notes/escape"))
    );

    let err = read(t.s("notes"));
    assert_eq!(
        err.to_string(),
        format!("read_file: {} is a directory, use list_dir", t.s("notes"))
    );
    assert!(
        matches!(file_error(&err, "read_file"), FileError::IsDirectory { path } if *path == t.path("notes"))
    );

    let err = fail(&read_file("/dev/null".into(), vec!["/dev".into()]), None);
    assert_eq!(
        err.to_string(),
        "read_file: /dev/null is not a regular file"
    );
    assert!(
        matches!(file_error(&err, "read_file"), FileError::NotRegular { path } if path == Path::new("/dev/null"))
    );

    let err = fail(&list_dir(t.s("notes/a.txt"), roots.clone()), None);
    assert_eq!(
        err.to_string(),
        format!(
            "list_dir: {} is not a directory, use read_file",
            t.s("notes/a.txt")
        )
    );
    assert!(
        matches!(file_error(&err, "list_dir"), FileError::NotDirectory { path } if *path == t.path("notes/a.txt"))
    );

    let err = fail(&list_dir(t.s("notes/none"), roots.clone()), None);
    assert_eq!(
        err.to_string(),
        format!("list_dir: {} does not exist", t.s("notes/none"))
    );
    assert!(
        matches!(file_error(&err, "list_dir"), FileError::Io { path, .. } if *path == t.path("notes/none"))
    );

    std::fs::write(t.path("notes/bin"), b"\0").expect("write");
    let err = read(t.s("notes/bin"));
    assert_eq!(
        err.to_string(),
        "read_file: not UTF-8 text (a NUL byte in the first 8 KiB: binary content)"
    );
    assert!(
        matches!(failure(&err, "read_file"), Failure::Binary),
        "{err:?}"
    );
}

#[test]
fn io_failures_the_tests_cannot_cause_read_the_same() {
    // Root reads everything and no race is staged here: these texts are built directly.
    let path = PathBuf::from("/a/notes/x");
    let denied = FileError::Io {
        path: path.clone(),
        source: io::Error::from(io::ErrorKind::PermissionDenied),
    };
    assert_eq!(denied.to_string(), "/a/notes/x: permission denied");
    let changed = FileError::Changed { path };
    assert_eq!(
        changed.to_string(),
        "/a/notes/x changed while it was opened"
    );
}

#[test]
fn url_and_address_failures_name_the_url_or_host() {
    let err = fail(&fetch("not a url".into(), vec![]), None);
    assert_eq!(
        err.to_string(),
        "http_fetch: invalid URL \"not a url\": relative URL without a base"
    );
    assert!(
        matches!(net_error(&err, "http_fetch"), NetError::InvalidUrl { text, .. } if text == "not a url")
    );

    let err = fail(&fetch("file:///etc/passwd".into(), vec![]), None);
    assert_eq!(
        err.to_string(),
        "http_fetch: file:///etc/passwd: only http and https URLs are fetched"
    );
    assert!(
        matches!(net_error(&err, "http_fetch"), NetError::Scheme { text } if text == "file:///etc/passwd")
    );

    let err = fail(
        &fetch("http://example.test/".into(), vec!["example.com:80".into()]),
        None,
    );
    assert_eq!(
        err.to_string(),
        "http_fetch: the granted address \"example.com:80\" is not a socket address"
    );
    assert!(
        matches!(net_error(&err, "http_fetch"), NetError::BadAddress { text, .. } if text == "example.com:80")
    );

    let err = fail(&fetch("http://example.test/".into(), vec![]), None);
    assert_eq!(
        err.to_string(),
        "http_fetch: no addresses were granted for example.test"
    );
    assert!(
        matches!(net_error(&err, "http_fetch"), NetError::NoAddresses { host } if host == "example.test")
    );

    let err = fail(&fetch("http://example.test/".into(), local(443)), None);
    assert_eq!(
        err.to_string(),
        "http_fetch: none of the granted addresses for example.test is on port 80"
    );
    assert!(
        matches!(net_error(&err, "http_fetch"), NetError::WrongPort { host, port: 80 } if host == "example.test")
    );
}

#[test]
fn transport_and_status_failures_name_the_url() {
    let closed = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let url = format!("http://example.test:{port}/");
    let err = fail(&fetch(url.clone(), local(port)), None);
    assert_eq!(
        err.to_string(),
        format!("http_fetch: {url}: connection refused")
    );
    assert!(
        matches!(net_error(&err, "http_fetch"), NetError::Request { url: u, timeout_ms: 5000, .. } if u.as_str() == url)
    );

    let (port, server) = serve_once(|_| response("404 Not Found", "", "gone"));
    let url = format!("http://example.test:{port}/x");
    let err = fail(&fetch(url.clone(), local(port)), None);
    assert_eq!(
        err.to_string(),
        format!("http_fetch: {url}: HTTP 404 Not Found")
    );
    assert!(
        matches!(net_error(&err, "http_fetch"), NetError::Status { url: u, status, detail: None }
        if u.as_str() == url && status.as_u16() == 404)
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
    let err = fail(&inv, None);
    assert_eq!(
        err.to_string(),
        format!("http_fetch: {url}: timeout: global")
    );
    assert!(
        matches!(net_error(&err, "http_fetch"), NetError::Body { url: u, timeout_ms: 300, .. } if u.as_str() == url)
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
    let err = fail(&no_target, Some(&creds.0));
    assert_eq!(
        err.to_string(),
        "consult: the invocation names no remote model (consult target missing)"
    );
    assert!(matches!(consult_error(&err), ConsultError::NoTarget));

    std::fs::create_dir(creds.path("dir")).expect("mkdir");
    std::fs::write(creds.path("big"), "k".repeat(16 * 1024 + 1)).expect("write");
    std::fs::write(creds.path("latin1"), b"sk-\xe9").expect("write");
    std::fs::write(creds.path("empty"), "\r\n").expect("write");
    std::fs::write(creds.path("ctl"), "sk-\u{7}secret").expect("write");
    let cases: [(&str, &str, fn(&ConsultError) -> bool); 7] = [
        (
            "../k",
            "the credential name \"../k\" is not a plain file name",
            |e| matches!(e, ConsultError::CredentialName { name } if name == "../k"),
        ),
        (
            "none",
            "cannot read the credential \"none\" from $CREDENTIALS_DIRECTORY: No such file or \
             directory (os error 2)",
            |e| {
                matches!(e, ConsultError::CredentialOpen { name, source }
                if name == "none" && source.kind() == io::ErrorKind::NotFound)
            },
        ),
        (
            "dir",
            "cannot read the credential \"dir\": Is a directory (os error 21)",
            |e| {
                matches!(e, ConsultError::CredentialRead { name, source }
                if name == "dir" && source.raw_os_error() == Some(21))
            },
        ),
        (
            "big",
            "the credential \"big\" is larger than 16384 bytes",
            |e| matches!(e, ConsultError::CredentialTooLarge { name, limit: 16384 } if name == "big"),
        ),
        (
            "latin1",
            "the credential \"latin1\" is not UTF-8 text",
            |e| {
                matches!(e, ConsultError::CredentialNotUtf8 { name, source }
                if name == "latin1" && source.valid_up_to() == 3)
            },
        ),
        (
            "empty",
            "the credential \"empty\" is empty",
            |e| matches!(e, ConsultError::CredentialEmpty { name } if name == "empty"),
        ),
        (
            "ctl",
            "the credential \"ctl\" holds characters an HTTP header cannot carry",
            |e| matches!(e, ConsultError::CredentialNotHeader { name } if name == "ctl"),
        ),
    ];
    for (name, text, variant) in cases {
        let err = fail(&consult(9, name), Some(&creds.0));
        assert_eq!(err.to_string(), format!("consult: {text}"));
        assert!(variant(consult_error(&err)), "{name}: {err:?}");
        assert!(!format!("{err:?}").contains("secret"), "{err:?}");
    }
    let err = fail(&consult(9, "k"), None);
    assert_eq!(
        err.to_string(),
        "consult: $CREDENTIALS_DIRECTORY is not set: the unit was started without the \
         credential \"k\" (LoadCredential)"
    );
    assert!(matches!(consult_error(&err), ConsultError::NoCredentials { name } if name == "k"));
}

#[test]
fn completion_failures_name_the_endpoint() {
    let creds = TempDir::new();
    std::fs::write(creds.path("k"), "sk-1").expect("write");
    let status = |e: &ToolError, code: u16, text: Option<&str>| match net_error(e, "consult") {
        NetError::Status { status, detail, .. } => {
            status.as_u16() == code && detail.as_deref() == text
        }
        _ => false,
    };
    let consult_is = |e: &ToolError, f: fn(&ConsultError) -> bool| f(consult_error(e));
    let cases: [(&str, &str, &str, Box<dyn Fn(&ToolError) -> bool>); 5] = [
        (
            "401 Unauthorized",
            r#"{"error":{"message":"bad key sk-1"}}"#,
            "HTTP 401 Unauthorized: bad key [credential]",
            Box::new(move |e| status(e, 401, Some("bad key [credential]"))),
        ),
        (
            "500 Internal Server Error",
            "<html>",
            "HTTP 500 Internal Server Error",
            Box::new(move |e| status(e, 500, None)),
        ),
        (
            "200 OK",
            "<html>",
            "not a chat completion: expected value at line 1 column 1",
            Box::new(move |e| consult_is(e, |c| matches!(c, ConsultError::NotCompletion { .. }))),
        ),
        (
            "200 OK",
            r#"{"choices":[]}"#,
            "the completion has no choices",
            Box::new(move |e| consult_is(e, |c| matches!(c, ConsultError::NoChoices { .. }))),
        ),
        (
            "200 OK",
            r#"{"choices":[{"message":{"content":null}}]}"#,
            "the completion's message has no content",
            Box::new(move |e| consult_is(e, |c| matches!(c, ConsultError::NoContent { .. }))),
        ),
    ];
    for (code, body, text, variant) in cases {
        let (port, server) = serve_once(move |_| response(code, "", body));
        let endpoint = format!("http://api.example.test:{port}/v1/chat/completions");
        let err = fail(&consult(port, "k"), Some(&creds.0));
        assert_eq!(err.to_string(), format!("consult: {endpoint}: {text}"));
        assert!(variant(&err), "{err:?}");
        server.join().expect("server");
    }
}
