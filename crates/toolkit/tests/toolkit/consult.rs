//! consult: the key is sent, never echoed, and its absence fails clearly.

use proto::toolrun::{ConsultTarget, ToolInvocation};
use proto::tools::{ConsultArgs, ToolArgs};

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
