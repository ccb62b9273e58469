//! A compromised loopd (this test, speaking loopd's sockets itself) can run only the calls
//! the model made, exactly as it made them, each once: every case drives a real completion
//! through inferproxy against the fake model, then sends brokerd tool requests as it likes.

use std::os::unix::net::UnixStream;

use daemon::conn::Conn;
use proto::attest::{Answer, ChatMessage, CompletionId, WitnessRef};
use proto::{AuditLine, DecisionRecord, DenyReason, ToolResponse};
use serde_json::json;
use stack::{Agent, Home, read_grant, request_as, response};

const SCRIPT: &str = r#"
[[rule]]
[rule.match]
user_contains = "read"
[[rule.answer.tool_calls]]
name = "read_file"
arguments = '{"path":"NOTES/n.md"}'

[[rule]]
[rule.match]
user_contains = "list"
[[rule.answer.tool_calls]]
name = "list_dir"
arguments = '{"path":"NOTES"}'

[default]
text = "Hello."
"#;

/// A home with a note, a grant that reads and lists it without asking, and the whole stack;
/// `broker` is extra `[broker]` settings.
fn stack(name: &str, broker: &str) -> (Home, Agent, String) {
    let home = Home::new(name, &format!("witness_wait = \"300ms\"\n{broker}"));
    let notes = home.files("notes", &[("n.md", "the note")]);
    home.write_grant("read", &read_grant("auto", &notes, ""));
    let list = read_grant("auto", &notes, "").replace("read_file", "list_dir");
    home.write_grant("list", &list);
    let notes = notes.display().to_string();
    let agent = home.start_agent(&SCRIPT.replace("NOTES", &notes), "");
    (home, agent, notes)
}

fn infer_sock(home: &Home) -> std::path::PathBuf {
    home.root.join("run/loop-infer/infer.sock")
}

fn prompt(user: &str) -> [ChatMessage; 2] {
    [ChatMessage::system("sys"), ChatMessage::user(user)]
}

/// A chat request as loopd builds it, with `extra` fields merged in.
fn body(user: &str, extra: serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&stack::chat_body(&prompt(user), extra)).expect("body")
}

/// One completion through inferproxy: the id it was witnessed as, and the answer.
fn complete(home: &Home, user: &str, extra: serde_json::Value) -> (CompletionId, Answer) {
    stack::complete(home, &prompt(user), extra)
}

fn ask(home: &Home, call: u64, tool: &str, args: &str, witness: WitnessRef) -> ToolResponse {
    let mut conn = Conn::connect(&home.loop_sock()).expect("broker.sock");
    response(&request_as(&mut conn, "s-evil", call, tool, args, witness)).clone()
}

fn denied(r: &ToolResponse) -> Option<DenyReason> {
    match r {
        ToolResponse::Denied { reason, .. } => Some(*reason),
        _ => None,
    }
}

fn audited_denials(home: &Home) -> Vec<DenyReason> {
    home.audit_lines()
        .iter()
        .filter_map(|l| match l {
            AuditLine::Decision(r) => match &r.decision {
                DecisionRecord::Denied { reason, .. } => Some(*reason),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[test]
fn a_compromised_loopd_runs_only_the_models_calls_exactly_and_once() {
    let (home, _agent, notes) = stack("witness-evil", "");
    let (id, answer) = complete(&home, "read my note", json!({}));
    let call = &answer.tool_calls[0];
    assert_eq!(call.name, "read_file");
    let at = |index| WitnessRef {
        completion: id.clone(),
        index,
    };
    let args = call.arguments.clone();
    // A call the model never made: no such completion (after the wait), or no such index.
    let invented = WitnessRef {
        completion: stack::fresh_completion(),
        index: 0,
    };
    let passwd = r#"{"path":"/etc/passwd"}"#;
    let started = std::time::Instant::now();
    assert_eq!(
        denied(&ask(&home, 1, "read_file", passwd, invented)),
        Some(DenyReason::NotWitnessed)
    );
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(250),
        "it waited"
    );
    assert_eq!(
        denied(&ask(&home, 2, "read_file", &args, at(1))),
        Some(DenyReason::NotWitnessed)
    );
    // The witnessed call with other arguments, or as another tool.
    let other = format!(r#"{{"path":"{notes}/../../etc/passwd"}}"#);
    assert_eq!(
        denied(&ask(&home, 3, "read_file", &other, at(0))),
        Some(DenyReason::WitnessMismatch)
    );
    assert_eq!(
        denied(&ask(&home, 4, "list_dir", &args, at(0))),
        Some(DenyReason::WitnessMismatch)
    );
    // Exactly as the model made it: it runs, once.
    let ran = ask(&home, 5, "read_file", &args, at(0));
    assert!(
        matches!(&ran, ToolResponse::Result { content, .. } if content.contains("the note")),
        "{ran:?}"
    );
    assert_eq!(
        denied(&ask(&home, 6, "read_file", &args, at(0))),
        Some(DenyReason::AlreadyRun)
    );
    // Every denial is audited with its reason.
    assert_eq!(
        audited_denials(&home),
        [
            DenyReason::NotWitnessed,
            DenyReason::NotWitnessed,
            DenyReason::WitnessMismatch,
            DenyReason::WitnessMismatch,
            DenyReason::AlreadyRun
        ]
    );
    // Only the call that passed the witness check names it: that line is its use.
    let named: Vec<Option<WitnessRef>> = home
        .audit_lines()
        .into_iter()
        .filter_map(|l| match l {
            AuditLine::Decision(r) => Some(r.witness),
            _ => None,
        })
        .collect();
    assert_eq!(named, [None, None, None, None, Some(at(0)), None]);
    home.assert_audit_good();
}

#[test]
fn a_call_of_a_cut_answer_never_runs_and_a_forcing_request_is_never_forwarded() {
    let (home, agent, _) = stack("witness-cut", "");
    let (id, answer) = complete(&home, "list my notes", json!({"max_tokens": 15}));
    assert_eq!(answer.finish.as_deref(), Some("length"));
    let call = answer.tool_calls.first().expect("a cut call");
    let w = WitnessRef {
        completion: id,
        index: 0,
    };
    let got = ask(&home, 1, "list_dir", &call.arguments, w);
    assert_eq!(denied(&got), Some(DenyReason::WitnessNotRunnable));
    // Fields that could force the call: refused by inferproxy, the model never asked.
    let before = agent.requests().as_array().map_or(0, Vec::len);
    for extra in [
        json!({"grammar": "root ::= \"x\""}),
        json!({"response_format": {"type": "json_object"}}),
        json!({"json_schema": {"type": "object"}}),
        json!({"logit_bias": [[1, 100]]}),
    ] {
        let stream = UnixStream::connect(infer_sock(&home)).expect("infer.sock");
        let resp = strict_http::request(
            stream,
            "POST",
            "/v1/chat/completions",
            &[],
            &body("read my note", extra.clone()),
        )
        .expect("request");
        assert_eq!(resp.status, 400, "{extra}");
        let text = resp.read_body(1 << 16).expect("body");
        let err: serde_json::Value = serde_json::from_slice(&text).expect("json");
        assert_eq!(err["error"]["type"], "unwitnessable_request", "{extra}");
    }
    let mut prefilled: serde_json::Value =
        serde_json::from_slice(&body("read my note", json!({}))).expect("json");
    let prefill = ChatMessage::assistant(Some("<tool_call>".into()), None, &[]);
    prefilled["messages"]
        .as_array_mut()
        .expect("array")
        .push(prefill.to_value());
    let stream = UnixStream::connect(infer_sock(&home)).expect("infer.sock");
    let bytes = serde_json::to_vec(&prefilled).expect("body");
    let resp =
        strict_http::request(stream, "POST", "/v1/chat/completions", &[], &bytes).expect("request");
    assert_eq!(resp.status, 400, "a prefill");
    let after = agent.requests().as_array().map_or(0, Vec::len);
    assert_eq!(before, after, "nothing reached the model");
}

#[test]
fn witness_records_survive_a_restart_and_a_call_naming_a_lost_one_is_denied() {
    let (home, mut agent, _) = stack("witness-restart", "max_witness_records = 2");
    let calls: Vec<(CompletionId, String)> = (0..3)
        .map(|_| {
            let (id, a) = complete(&home, "read my note", json!({}));
            (id, a.tool_calls[0].arguments.clone())
        })
        .collect();
    let at = |i: usize| WitnessRef {
        completion: calls[i].0.clone(),
        index: 0,
    };
    assert!(matches!(
        ask(&home, 1, "read_file", &calls[2].1, at(2)),
        ToolResponse::Result { .. }
    ));
    // A line after the use's (the chain check judges a line when the next one comes).
    let none = WitnessRef {
        completion: calls[1].0.clone(),
        index: 1,
    };
    assert_eq!(
        denied(&ask(&home, 6, "read_file", &calls[1].1, none)),
        Some(DenyReason::NotWitnessed)
    );
    // brokerd stops hard and starts again.
    agent.daemons[1].kill();
    // The use is in the audit log alone: the witness store holds no use line.
    let store = std::fs::read_to_string(home.root.join("home/witness/witness.jsonl"))
        .expect("the witness store");
    assert!(!store.contains(r#""used""#), "{store}");
    // And in an audit file that is not the newest any more: the day file is renamed to an
    // earlier day, so the restarted brokerd writes to a new one.
    let days = day_files(&home);
    let [today] = &days[..] else {
        panic!("one audit file: {days:?}")
    };
    let older = home.audit_dir().join("2000-01-01.jsonl");
    std::fs::rename(home.audit_dir().join(today), &older).expect("rename");
    let mut brokerd = home.start();
    assert_eq!(day_files(&home), ["2000-01-01.jsonl", today.as_str()]);
    // Once more, so that the start reads the use from a file before the newest.
    brokerd.kill();
    let _brokerd = home.start();
    let old = std::fs::read_to_string(&older).expect("the older file");
    assert!(old.contains(calls[2].0.as_str()), "the use is there: {old}");
    // A record from before the restart still runs, once; a used one stays used.
    assert!(matches!(
        ask(&home, 2, "read_file", &calls[1].1, at(1)),
        ToolResponse::Result { .. }
    ));
    assert_eq!(
        denied(&ask(&home, 3, "read_file", &calls[1].1, at(1))),
        Some(DenyReason::AlreadyRun)
    );
    assert_eq!(
        denied(&ask(&home, 4, "read_file", &calls[2].1, at(2))),
        Some(DenyReason::AlreadyRun)
    );
    // The oldest was forgotten past max_witness_records: its call is not witnessed.
    assert_eq!(
        denied(&ask(&home, 5, "read_file", &calls[0].1, at(0))),
        Some(DenyReason::NotWitnessed)
    );
    home.assert_audit_good();
}

#[test]
fn an_audit_log_moved_aside_takes_the_uses_with_it_so_the_kept_records_are_forgotten() {
    let (home, mut agent, _) = stack("witness-new-audit", "");
    let (id, a) = complete(&home, "read my note", json!({}));
    let args = a.tool_calls[0].arguments.clone();
    let w = WitnessRef {
        completion: id,
        index: 0,
    };
    assert!(matches!(
        ask(&home, 1, "read_file", &args, w.clone()),
        ToolResponse::Result { .. }
    ));
    // The owner moves the audit log aside (as for a broken chain, decisions.md A3).
    agent.daemons[1].kill();
    let aside = home.root.join("home/audit-aside");
    std::fs::rename(home.audit_dir(), &aside).expect("move aside");
    let _brokerd = home.start();
    assert_eq!(
        denied(&ask(&home, 2, "read_file", &args, w)),
        Some(DenyReason::NotWitnessed),
        "the call does not run again"
    );
    let store = std::fs::read_to_string(home.root.join("home/witness/witness.jsonl"))
        .expect("the witness store");
    assert_eq!(store, "", "forgotten on disk");
}

/// The audit log's day files, sorted.
fn day_files(home: &Home) -> Vec<String> {
    let mut days: Vec<String> = std::fs::read_dir(home.audit_dir())
        .expect("audit dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".jsonl"))
        .collect();
    days.sort();
    days
}

#[test]
fn of_requests_for_one_witnessed_call_at_once_from_two_sessions_exactly_one_runs() {
    let (home, _agent, _) = stack("witness-race", "");
    for round in 0..8u64 {
        let (id, answer) = complete(&home, "read my note", json!({}));
        let args = answer.tool_calls[0].arguments.clone();
        let w = WitnessRef {
            completion: id,
            index: 0,
        };
        // Two sessions, so the two requests do not wait on one session's lock.
        let start = std::sync::Arc::new(std::sync::Barrier::new(2));
        let asks: Vec<_> = ["s-a", "s-b"]
            .into_iter()
            .map(|session| {
                let (sock, args, w) = (home.loop_sock(), args.clone(), w.clone());
                let start = std::sync::Arc::clone(&start);
                std::thread::spawn(move || {
                    let mut conn = Conn::connect(&sock).expect("broker.sock");
                    start.wait();
                    let frames = request_as(&mut conn, session, round, "read_file", &args, w);
                    response(&frames).clone()
                })
            })
            .collect();
        let got: Vec<ToolResponse> = asks.into_iter().map(|t| t.join().expect("ask")).collect();
        let ran = got
            .iter()
            .filter(|r| matches!(r, ToolResponse::Result { .. }))
            .count();
        assert_eq!(ran, 1, "round {round}: {got:?}");
        assert!(
            got.iter()
                .any(|r| denied(r) == Some(DenyReason::AlreadyRun)),
            "{got:?}"
        );
        let uses = home
            .audit_lines()
            .iter()
            .filter(|l| matches!(l, AuditLine::Decision(r) if r.witness.as_ref() == Some(&w)))
            .count();
        assert_eq!(uses, 1, "one decision line names the use");
    }
}

#[test]
fn witness_sock_takes_only_reports_and_a_bad_one_gets_a_typed_error_and_brokerd_serves_on() {
    let home = Home::new("witness-sock", "witness_wait = \"300ms\"");
    let notes = home.files("notes", &[("n.md", "the note")]);
    home.write_grant("read", &read_grant("auto", &notes, ""));
    let _brokerd = home.start();
    let sock = home.witness_sock();
    // Not a report: refused by the socket's kind.
    let mut conn = Conn::connect(&sock).expect("witness.sock");
    let got = conn
        .call(
            1,
            proto::Message::StatusQuery(proto::approval::Empty {}),
            |_| {},
        )
        .expect("answer");
    assert!(
        matches!(&got.msg, proto::Message::Error(e) if e.code == proto::ErrorCode::ForbiddenKind),
        "{got:?}"
    );
    // A malformed report (a bad completion id): a typed error.
    let mut raw = UnixStream::connect(&sock).expect("witness.sock");
    let body = br#"{"v":1,"id":2,"final":true,"msg":{"kind":"witness_report","body":{"completion":"c-NOT","prompt":[],"answer":"00","calls":[],"finish":"stop","runnable":true}}}"#;
    proto::write_frame(&mut raw, body).expect("frame");
    let got = proto::read_envelope(&mut raw).expect("answer");
    assert!(
        matches!(&got.msg, proto::Message::Error(e) if e.code == proto::ErrorCode::BadMessage),
        "{got:?}"
    );
    // A completion reported twice: the second is refused, the first stands.
    let args = format!(r#"{{"path":"{}/n.md"}}"#, notes.display());
    let w = stack::witnessed(&sock, "read_file", &args);
    let call = proto::ToolCall {
        id: "call-0".into(),
        name: "read_file".into(),
        arguments: r#"{"path":"/etc/passwd"}"#.into(),
    };
    let again = proto::attest::WitnessReport {
        completion: w.completion.clone(),
        prompt: Vec::new(),
        answer: ChatMessage::assistant(None, None, &[&call]).digest(),
        calls: vec![call],
        finish: "tool_calls".into(),
        runnable: true,
        forms: Vec::new(),
    };
    let mut conn = Conn::connect(&sock).expect("witness.sock");
    let got = conn
        .call(3, proto::Message::WitnessReport(again), |_| {})
        .expect("answer");
    assert!(
        matches!(&got.msg, proto::Message::Error(e) if e.code == proto::ErrorCode::BadMessage),
        "{got:?}"
    );
    // brokerd serves on: the first report's call runs.
    let ran = ask(&home, 1, "read_file", &args, w);
    assert!(matches!(ran, ToolResponse::Result { .. }), "{ran:?}");
}
