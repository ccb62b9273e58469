//! consult: the key is sent, never echoed, and its absence fails clearly; every failure's
//! exact text and variant.

use proto::toolrun::{ConsultTarget, ToolInvocation};
use proto::tools::{ConsultArgs, ToolArgs};

use std::io;

use toolkit::{ConsultError, NetError};

use crate::errors::{Is, check, consult_error, net};
use crate::support::{TempDir, failed, invocation, local, ok, response, run, serve_once};

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

#[test]
fn credential_failures_name_the_credential_never_its_value() {
    let creds = TempDir::new();
    std::fs::create_dir(creds.path("dir")).expect("mkdir");
    std::fs::write(creds.path("big"), "k".repeat(16 * 1024 + 1)).expect("write");
    std::fs::write(creds.path("latin1"), b"sk-secret\xe9").expect("write");
    std::fs::write(creds.path("empty"), "\r\n").expect("write");
    std::fs::write(creds.path("ctl"), "sk-\u{7}secret").expect("write");
    let mut no_target = consult(9, "k");
    no_target.consult = None;
    check(
        &no_target,
        Some(&creds.0),
        "consult: the invocation names no remote model (consult target missing)",
        &consult_error(|e| matches!(e, ConsultError::NoTarget)),
    );
    check(
        &consult(9, "k"),
        None,
        "consult: $CREDENTIALS_DIRECTORY is not set: the unit was started without the \
         credential \"k\" (LoadCredential)",
        &consult_error(|e| matches!(e, ConsultError::NoCredentials { name } if name == "k")),
    );
    let cases: [(&str, &str, Is); 7] = [
        (
            "../k",
            "the credential name \"../k\" is not a plain file name",
            consult_error(|e| matches!(e, ConsultError::CredentialName { name } if name == "../k")),
        ),
        (
            "none",
            "cannot read the credential \"none\" from $CREDENTIALS_DIRECTORY: No such file or \
             directory (os error 2)",
            consult_error(|e| {
                matches!(e, ConsultError::CredentialOpen { name, error: source }
                if name == "none" && source.kind() == io::ErrorKind::NotFound)
            }),
        ),
        (
            "dir",
            "cannot read the credential \"dir\": Is a directory (os error 21)",
            consult_error(|e| {
                matches!(e, ConsultError::CredentialRead { name, error: source }
                if name == "dir" && source.raw_os_error() == Some(21))
            }),
        ),
        (
            "big",
            "the credential \"big\" is larger than 16384 bytes",
            consult_error(|e| {
                matches!(e, ConsultError::CredentialTooLarge { name, limit: 16384 }
                if name == "big")
            }),
        ),
        (
            "latin1",
            "the credential \"latin1\" is not UTF-8 text",
            consult_error(|e| {
                matches!(e, ConsultError::CredentialNotUtf8 { name, error: source }
                if name == "latin1" && source.valid_up_to() == 9)
            }),
        ),
        (
            "empty",
            "the credential \"empty\" is empty",
            consult_error(
                |e| matches!(e, ConsultError::CredentialEmpty { name } if name == "empty"),
            ),
        ),
        (
            "ctl",
            "the credential \"ctl\" holds characters an HTTP header cannot carry",
            consult_error(
                |e| matches!(e, ConsultError::CredentialNotHeader { name } if name == "ctl"),
            ),
        ),
    ];
    for (name, text, is) in &cases {
        check(
            &consult(9, name),
            Some(&creds.0),
            &format!("consult: {text}"),
            is,
        );
    }
}

#[test]
fn completion_failures_name_the_endpoint() {
    let creds = TempDir::new();
    std::fs::write(creds.path("k"), "sk-secret").expect("write");
    let status = |code: u16, text: Option<&'static str>| {
        net("consult", move |e| {
            matches!(e, NetError::Status { status, detail, .. }
                if status.as_u16() == code && detail.as_deref() == text)
        })
    };
    let endpoint = |e: &ConsultError, ok: fn(&ConsultError) -> Option<&url::Url>| {
        ok(e).is_some_and(|u| u.path() == "/v1/chat/completions")
    };
    let cases: [(&str, &str, &str, Is); 5] = [
        (
            "401 Unauthorized",
            r#"{"error":{"message":"bad key sk-secret"}}"#,
            "HTTP 401 Unauthorized: bad key [credential]",
            status(401, Some("bad key [credential]")),
        ),
        (
            "500 Internal Server Error",
            "<html>",
            "HTTP 500 Internal Server Error",
            status(500, None),
        ),
        (
            "200 OK",
            "<html>",
            "not a chat completion: expected value at line 1 column 1",
            consult_error(move |e| {
                endpoint(e, |e| match e {
                    ConsultError::NotCompletion { url, .. } => Some(url),
                    _ => None,
                })
            }),
        ),
        (
            "200 OK",
            r#"{"choices":[]}"#,
            "the completion has no choices",
            consult_error(move |e| {
                endpoint(e, |e| match e {
                    ConsultError::NoChoices { url } => Some(url),
                    _ => None,
                })
            }),
        ),
        (
            "200 OK",
            r#"{"choices":[{"message":{"content":null}}]}"#,
            "the completion's message has no content",
            consult_error(move |e| {
                endpoint(e, |e| match e {
                    ConsultError::NoContent { url } => Some(url),
                    _ => None,
                })
            }),
        ),
    ];
    for (code, body, text, is) in cases {
        let (port, server) = serve_once(move |_| response(code, "", body));
        let endpoint = format!("http://api.example.test:{port}/v1/chat/completions");
        check(
            &consult(port, "k"),
            Some(&creds.0),
            &format!("consult: {endpoint}: {text}"),
            &is,
        );
        server.join().expect("server");
    }
}
