//! What an MCP grant carries besides its decision (issue 26 point 3): its `secret` reaches
//! the server in the variable the server's `secret_env` names, through the runner's
//! credentials, and no other server or grant gets it; under `mode = "ask"` the owner's card
//! shows the canonical arguments, an answer bound to any other text is refused, and what
//! runs once approved is exactly what the card showed.

use std::process::Command;
use std::time::Duration;

use daemon::conn::Conn;
use proto::approval::{AnswerOutcome, ApprovalAnswer, Empty, Refusal, Verdict};
use proto::{AuditEvent, AuditLine, Envelope, Message, ToolResponse};
use serde_json::{Value, json};
use stack::mcp::{mcp_grant, starts};
use stack::{Daemon, Home, bin, response, tool};

fn script(tools: Vec<Value>) -> Value {
    json!({"server_info": {"name": "fake", "version": "1.0.0"}, "tools": tools})
}

fn content(r: &ToolResponse) -> &str {
    match r {
        ToolResponse::Result { content, .. } => content,
        other => panic!("not a result: {other:?}"),
    }
}

#[test]
fn a_grants_secret_reaches_the_server_in_its_secret_env_and_nowhere_else() {
    let home = Home::new("mcp-secret", "");
    // brokerd's own credentials, as systemd's LoadCredential= gives them to its unit.
    let creds = home.files("creds", &[("gh-token", "sk-mcp-7f3a")]);
    let token = |name: &str| {
        json!({"name": name, "description": "Says its API_TOKEN",
               "result": {"content": [{"env": "API_TOKEN"}]}})
    };
    home.mcp_server("vault", script(vec![token("token"), token("bare")]));
    // The [[mcp]] table just appended takes the grant's secret in API_TOKEN.
    home.append_config("secret_env = \"API_TOKEN\"\n");
    home.mcp_server("plain", script(vec![token("token")]));
    home.write_grant(
        "vault",
        &mcp_grant("mcp:vault/token", "secret = \"gh-token\""),
    );
    home.write_grant("bare", &mcp_grant("mcp:vault/bare", ""));
    home.write_grant(
        "plain",
        &mcp_grant("mcp:plain/token", "secret = \"gh-token\""),
    );
    let mut cmd = Command::new(bin("brokerd"));
    cmd.arg("--config")
        .arg(home.config())
        .env("CREDENTIALS_DIRECTORY", &creds);
    let _d = Daemon::spawn(cmd, &home.root);
    home.mcp_pinned("vault");
    home.mcp_pinned("plain");
    let call = |n, name| response(&tool(&home.loop_sock(), "s-1", n, name, "{}")).clone();
    let r = call(1, "mcp__vault__token");
    assert_eq!(
        content(&r),
        "sk-mcp-7f3a",
        "the grant's secret, in API_TOKEN"
    );
    let r = call(2, "mcp__vault__bare");
    assert_eq!(
        content(&r),
        "(unset)",
        "a grant without a secret gives none"
    );
    let r = call(3, "mcp__plain__token");
    assert_eq!(
        content(&r),
        "(unset)",
        "a server that names no secret_env gets no secret"
    );
    // The secret's content is read inside the run only: never in the configuration brokerd
    // hands the tool, nor in the audit's decisions.
    let audit = std::fs::read_dir(home.audit_dir())
        .expect("audit dir")
        .map(|e| std::fs::read_to_string(e.expect("entry").path()).unwrap_or_default())
        .collect::<String>();
    assert!(audit.contains("mcp__vault__token"), "the calls are audited");
    assert!(!audit.contains("sk-mcp-7f3a"), "the secret is not");
    home.assert_audit_good();
}

/// Sends `arguments` for `mcp__fake__echo` as call `n` of `s-1` in a thread; returns the
/// approval id once brokerd says the call waits, and the thread.
fn ask(home: &Home, n: u64, arguments: &str) -> (String, std::thread::JoinHandle<Vec<Envelope>>) {
    let sock = home.loop_sock();
    let witness = stack::witnessed(&home.witness_sock(), "mcp__fake__echo", arguments);
    let arguments = arguments.to_owned();
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = std::thread::spawn(move || {
        let mut conn = Conn::connect(&sock).expect("connect");
        let msg = Message::ToolRequest(proto::ToolRequest {
            session: proto::SessionId::new("s-1").expect("id"),
            call: proto::CallId(n),
            tool: "mcp__fake__echo".into(),
            arguments,
            witness: Some(witness),
        });
        let mut frames = Vec::new();
        let last = conn
            .call(n, msg, |e| {
                frames.push(e.clone());
                let _ = tx.send(e.clone());
            })
            .expect("answer");
        frames.push(last);
        frames
    });
    let pending = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("pending frame");
    let Message::ToolResponse(ToolResponse::PendingApproval { approval, .. }) = pending.msg else {
        panic!("{pending:?}")
    };
    (approval, handle)
}

#[test]
fn under_ask_the_card_shows_and_binds_the_canonical_arguments_and_they_run() {
    let home = Home::new("mcp-ask-card", "");
    let echo = json!({"name": "echo", "description": "Echoes",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"},
                        "n": {"type": "integer"}}, "required": ["text"]},
        "result": {"content": ["echo_arguments"]}});
    let log = home.mcp_server("fake", script(vec![echo]));
    home.write_grant(
        "echo",
        "tool = \"mcp:fake/echo\"\nmode = \"ask\"\nmax_taint = \"secret\"\n",
    );
    let _d = home.start();
    home.mcp_pinned("fake");
    // Whitespace, member order and an escape the model wrote: not what the owner is shown.
    let raw = r#"{ "text" : "h\u0069", "n" : 2 }"#;
    let canonical = r#"{"n":2,"text":"hi"}"#;
    let (approval, waiting) = ask(&home, 1, raw);
    assert_eq!(starts(&log), 1, "nothing runs before the owner answers");
    let mut admin = Conn::connect(&home.admin_sock()).expect("admin");
    let listing = admin
        .call(1, Message::ApprovalList(Empty {}), |_| {})
        .expect("list");
    let Message::ApprovalListing(listing) = listing.msg else {
        panic!("{listing:?}")
    };
    let card = listing.pending[0].clone();
    assert_eq!(card.approval, approval);
    assert_eq!(card.tool, "mcp__fake__echo");
    assert_eq!(
        card.arguments, canonical,
        "the card shows the canonical form"
    );
    assert_eq!(card.grant, "echo");
    assert_eq!(
        card.session_offer, None,
        "no allow-for-session for MCP (O14)"
    );
    assert_eq!(card.binding, card.bound());
    let shown = home.bxctl(&["approvals"]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("mcp__fake__echo"), "{shown}");
    // As a JSON string: the model's text shown inert.
    let quoted = serde_json::to_string(canonical).expect("quoted");
    assert!(
        shown.contains(&quoted),
        "bxctl shows the canonical form: {shown}"
    );
    // An answer bound to the text the model wrote, or to other arguments, is refused.
    for (id, other) in [(2, raw), (3, r#"{"n":3,"text":"hi"}"#)] {
        let mut changed = card.clone();
        changed.arguments = other.into();
        let reply = admin
            .call(
                id,
                Message::ApprovalAnswer(ApprovalAnswer {
                    approval: card.approval.clone(),
                    binding: changed.bound(),
                    verdict: Verdict::Approve,
                    post: None,
                    by: None,
                }),
                |_| {},
            )
            .expect("reply");
        assert_eq!(
            reply.msg,
            Message::ApprovalAnswered(AnswerOutcome::Refused {
                refusal: Refusal::Changed
            }),
            "an answer bound to {other} was taken"
        );
    }
    assert_eq!(starts(&log), 1, "a refused answer runs nothing");
    assert!(home.bxctl(&["approve", &approval]).status.success());
    let frames = waiting.join().expect("request thread");
    assert_eq!(
        content(response(&frames)),
        canonical,
        "the server received exactly what the card showed"
    );
    assert_eq!(starts(&log), 2, "one unit, once approved");
    let lines = home.audit_lines();
    let record = lines
        .iter()
        .find_map(|l| match l {
            AuditLine::Decision(r) if r.tool == "mcp__fake__echo" => Some(r),
            _ => None,
        })
        .expect("the call's decision");
    assert_eq!(
        record.arguments, raw,
        "the audit keeps what the model wrote"
    );
    assert_eq!(record.canonical.as_deref(), Some(canonical), "and what ran");
    assert!(lines.iter().any(|l| matches!(
        l,
        AuditLine::Event(AuditEvent::ApprovalRefused {
            refusal: Refusal::Changed,
            ..
        })
    )));
    home.assert_audit_good();
}
