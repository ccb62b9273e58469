//! Every kind of failure, called in-process: its exact text (what the model reads, what
//! brokerd, the stack and the container tier's checks look for) and its variant with context.
//! (consult's own failures are in `consult`, with these helpers.)

use std::io::{self, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::thread;

use proto::toolrun::ToolInvocation;
use toolkit::{ConsultError, Failure, FileError, NetError, ToolError};

use crate::support::{TempDir, fetch, list_dir, local, read_file, response, serve_once};

/// Whether an error is the expected variant with the expected context.
pub type Is = Box<dyn Fn(&ToolError) -> bool>;

/// Runs `inv` in-process and checks that it fails with exactly `text`, as `is` expects.
pub fn check(inv: &ToolInvocation, credentials: Option<&Path>, text: &str, is: &Is) {
    let err = toolkit::execute(inv, credentials).expect_err("a failure");
    assert_eq!(err.to_string(), text);
    assert!(is(&err), "{text}: wrong variant or context: {err:?}");
    // No credential's value is in any failure, not even in its Debug form.
    assert!(!format!("{err:?}").contains("secret"), "{err:?}");
}

/// What `tool` failed on.
fn failure<'a>(err: &'a ToolError, tool: &str) -> Option<&'a Failure> {
    match err {
        ToolError::Tool {
            tool: t,
            error: source,
        } if *t == tool => Some(source),
        _ => None,
    }
}

/// A file error of `tool` that `f` accepts.
fn file(tool: &'static str, f: impl Fn(&FileError) -> bool + 'static) -> Is {
    Box::new(move |e| matches!(failure(e, tool), Some(Failure::File(x)) if f(x)))
}

/// A network error of `tool` that `f` accepts.
pub fn net(tool: &'static str, f: impl Fn(&NetError) -> bool + 'static) -> Is {
    Box::new(move |e| matches!(failure(e, tool), Some(Failure::Net(x)) if f(x)))
}

/// A consult error that `f` accepts.
pub fn consult_error(f: impl Fn(&ConsultError) -> bool + 'static) -> Is {
    Box::new(move |e| matches!(failure(e, "consult"), Some(Failure::Consult(x)) if f(x)))
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
    std::fs::write(t.path("notes/bin"), b"\0").expect("write");
    std::fs::write(t.path("private"), "s").expect("write");
    std::os::unix::fs::symlink(t.path("private"), t.path("notes/escape")).expect("symlink");
    let roots = vec![t.s("notes")];
    let read = |rel: &str| read_file(t.s(rel), roots.clone());
    let at = |rel: &str| t.path(rel);
    let (dotted, outside) = (t.s("notes/../private"), t.s("private"));
    let cases: Vec<(ToolInvocation, String, Is)> = vec![
        (
            read_file("notes/a.txt".into(), roots.clone()),
            "read_file: notes/a.txt is not an absolute path".into(),
            file(
                "read_file",
                |e| matches!(e, FileError::NotAbsolute { path } if path == "notes/a.txt"),
            ),
        ),
        (
            read("notes/../private"),
            format!("read_file: {dotted} has a .. component"),
            file(
                "read_file",
                move |e| matches!(e, FileError::ParentDir { path } if *path == dotted),
            ),
        ),
        (
            read("private"),
            format!("read_file: {outside} is outside the granted paths"),
            file(
                "read_file",
                move |e| matches!(e, FileError::Outside { path } if *path == outside),
            ),
        ),
        (
            read("notes/none"),
            format!("read_file: {} does not exist", t.s("notes/none")),
            io_error("read_file", at("notes/none"), |s| {
                s.kind() == io::ErrorKind::NotFound
            }),
        ),
        (
            read("notes/a.txt/x"),
            format!(
                "read_file: {}: Not a directory (os error 20)",
                t.s("notes/a.txt/x")
            ),
            io_error("read_file", at("notes/a.txt/x"), |s| {
                s.raw_os_error() == Some(20)
            }),
        ),
        (
            read("notes/escape"),
            format!(
                "read_file: {} goes through a symlink below the granted directory; links are \
                 not followed",
                t.s("notes/escape")
            ),
            path_is("read_file", at("notes/escape"), |e| match e {
                FileError::Symlink { path } => Some(path),
                _ => None,
            }),
        ),
        (
            read("notes"),
            format!("read_file: {} is a directory, use list_dir", t.s("notes")),
            path_is("read_file", at("notes"), |e| match e {
                FileError::IsDirectory { path } => Some(path),
                _ => None,
            }),
        ),
        (
            read_file("/dev/null".into(), vec!["/dev".into()]),
            "read_file: /dev/null is not a regular file".into(),
            path_is("read_file", "/dev/null".into(), |e| match e {
                FileError::NotRegular { path } => Some(path),
                _ => None,
            }),
        ),
        (
            list_dir(t.s("notes/a.txt"), roots.clone()),
            format!(
                "list_dir: {} is not a directory, use read_file",
                t.s("notes/a.txt")
            ),
            path_is("list_dir", at("notes/a.txt"), |e| match e {
                FileError::NotDirectory { path } => Some(path),
                _ => None,
            }),
        ),
        (
            list_dir(t.s("notes/none"), roots.clone()),
            format!("list_dir: {} does not exist", t.s("notes/none")),
            io_error("list_dir", at("notes/none"), |s| {
                s.kind() == io::ErrorKind::NotFound
            }),
        ),
        (
            read("notes/bin"),
            "read_file: not UTF-8 text (a NUL byte in the first 8 KiB: binary content)".into(),
            Box::new(|e| matches!(failure(e, "read_file"), Some(Failure::Binary))),
        ),
    ];
    for (inv, text, is) in &cases {
        check(inv, None, text, is);
    }
}

/// A `FileError::Io` of `tool` on `expected` whose source `source` accepts.
fn io_error(tool: &'static str, expected: PathBuf, source: fn(&io::Error) -> bool) -> Is {
    file(
        tool,
        move |e| matches!(e, FileError::Io { path, error: s } if *path == expected && source(s)),
    )
}

/// A file error of `tool` that `pick` recognises, about `expected`.
fn path_is(tool: &'static str, expected: PathBuf, pick: fn(&FileError) -> Option<&PathBuf>) -> Is {
    file(tool, move |e| pick(e) == Some(&expected))
}

#[test]
fn io_failures_the_tests_cannot_cause_read_the_same() {
    // Root reads everything and no race is staged here: these texts are built directly.
    let path = PathBuf::from("/a/notes/x");
    let denied = FileError::Io {
        path: path.clone(),
        error: io::Error::from(io::ErrorKind::PermissionDenied),
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
    let cases: [(&str, Vec<String>, &str, Is); 5] = [
        (
            "not a url",
            vec![],
            "invalid URL \"not a url\": relative URL without a base",
            net(
                "http_fetch",
                |e| matches!(e, NetError::InvalidUrl { text, .. } if text == "not a url"),
            ),
        ),
        (
            "file:///etc/passwd",
            vec![],
            "file:///etc/passwd: only http and https URLs are fetched",
            net(
                "http_fetch",
                |e| matches!(e, NetError::Scheme { text } if text == "file:///etc/passwd"),
            ),
        ),
        (
            "http://example.test/",
            vec!["example.com:80".into()],
            "the granted address \"example.com:80\" is not a socket address",
            net(
                "http_fetch",
                |e| matches!(e, NetError::BadAddress { text, .. } if text == "example.com:80"),
            ),
        ),
        (
            "http://example.test/",
            vec![],
            "no addresses were granted for example.test",
            net(
                "http_fetch",
                |e| matches!(e, NetError::NoAddresses { host } if host == "example.test"),
            ),
        ),
        (
            "http://example.test/",
            local(443),
            "none of the granted addresses for example.test is on port 80",
            net(
                "http_fetch",
                |e| matches!(e, NetError::WrongPort { host, port: 80 } if host == "example.test"),
            ),
        ),
    ];
    for (url, addresses, text, is) in &cases {
        check(
            &fetch((*url).into(), addresses.clone()),
            None,
            &format!("http_fetch: {text}"),
            is,
        );
    }
}

/// A `NetError` of `http_fetch` about `expected` that `f` accepts.
fn fetch_error(expected: String, f: fn(&NetError) -> Option<&url::Url>) -> Is {
    net("http_fetch", move |e| {
        f(e).is_some_and(|u| u.as_str() == expected)
    })
}

#[test]
fn transport_and_status_failures_name_the_url() {
    let closed = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let url = format!("http://example.test:{port}/");
    let is = fetch_error(url.clone(), |e| match e {
        NetError::Request {
            url,
            timeout_ms: 5000,
            ..
        } => Some(url),
        _ => None,
    });
    check(
        &fetch(url.clone(), local(port)),
        None,
        &format!("http_fetch: {url}: connection refused"),
        &is,
    );

    let (port, server) = serve_once(|_| response("404 Not Found", "", "gone"));
    let url = format!("http://example.test:{port}/x");
    let is = fetch_error(url.clone(), |e| match e {
        NetError::Status {
            url,
            status,
            detail: None,
        } if status.as_u16() == 404 => Some(url),
        _ => None,
    });
    check(
        &fetch(url.clone(), local(port)),
        None,
        &format!("http_fetch: {url}: HTTP 404 Not Found"),
        &is,
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
    let is = fetch_error(url.clone(), |e| match e {
        NetError::Body {
            url,
            timeout_ms: 300,
            ..
        } => Some(url),
        _ => None,
    });
    check(
        &inv,
        None,
        &format!("http_fetch: {url}: timeout: global"),
        &is,
    );
    server.join().expect("server");
}
