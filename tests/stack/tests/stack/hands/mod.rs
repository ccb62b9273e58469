//! The hands through brokerd (issue 25), on the direct runner: `write_file`, `edit_file`
//! and `run` decided by the grants and the labels of where they write (the write rule),
//! the look before the owner is asked, the card's diff and the commit over the content
//! shown, each refusal typed and audited.

mod cards;
mod edit;
mod links;
mod rules;
mod run;
mod start;
mod write;

use std::path::Path;
use std::time::Duration;

use daemon::conn::Conn;
use proto::{AuditLine, AuditRecord, CallId, Envelope, Message, ToolResponse};
use stack::Home;

/// A grant for `tool` under `dir`, in `mode`, with `extra` lines before `[constraints]`
/// and `constraints` lines after `paths`.
pub(crate) fn grant(tool: &str, mode: &str, dir: &Path, extra: &str, constraints: &str) -> String {
    format!(
        "tool = \"{tool}\"\nmode = \"{mode}\"\nmax_taint = \"secret\"\n{extra}\n\
         [constraints]\npaths = [\"{}\"]\n{constraints}\n",
        dir.display()
    )
}

/// JSON of a `write_file` call.
pub(crate) fn write_args(path: &Path, mode: &str, content: &str) -> String {
    serde_json::json!({ "path": path, "mode": mode, "content": content }).to_string()
}

/// JSON of an `edit_file` call.
pub(crate) fn edit_args(path: &Path, old: &str, new: &str) -> String {
    serde_json::json!({ "path": path, "old": old, "new": new }).to_string()
}

/// One call in `session`, answered.
pub(crate) fn call(home: &Home, session: &str, n: u64, tool: &str, args: &str) -> ToolResponse {
    let frames = stack::tool(&home.loop_sock(), session, n, tool, args);
    stack::response(&frames).clone()
}

/// A call that waits for the owner: its approval id and the thread holding the request.
pub(crate) fn pending(
    home: &Home,
    session: &str,
    n: u64,
    tool: &str,
    args: &str,
) -> (String, std::thread::JoinHandle<Vec<Envelope>>) {
    let sock = home.loop_sock();
    let witness = stack::witnessed(&home.witness_sock(), tool, args);
    let (session, tool, args) = (session.to_owned(), tool.to_owned(), args.to_owned());
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = std::thread::spawn(move || {
        let mut conn = Conn::connect(&sock).expect("connect");
        let msg = Message::ToolRequest(proto::ToolRequest {
            session: proto::SessionId::new(&session).expect("id"),
            call: CallId(n),
            tool,
            arguments: args,
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
        let _ = tx.send(frames.last().expect("last").clone());
        frames
    });
    let first = rx.recv_timeout(Duration::from_secs(20)).expect("a frame");
    let Message::ToolResponse(ToolResponse::PendingApproval { approval, .. }) = first.msg else {
        panic!("not asked: {first:?}")
    };
    (approval, handle)
}

/// The final answer of a pending call.
pub(crate) fn answer(handle: std::thread::JoinHandle<Vec<Envelope>>) -> ToolResponse {
    stack::response(&handle.join().expect("request thread")).clone()
}

/// The decision line of `call` in `session`.
pub(crate) fn decision(home: &Home, session: &str, call: u64) -> AuditRecord {
    home.audit_lines()
        .into_iter()
        .find_map(|l| match l {
            AuditLine::Decision(r) if r.session.as_str() == session && r.call.0 == call => Some(r),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no decision line for {session} call {call}"))
}

/// The `tool_failed` lines' failures for `call` in `session`.
pub(crate) fn tool_failed(home: &Home, session: &str, call: u64) -> Vec<proto::ToolFailure> {
    home.audit_lines()
        .into_iter()
        .filter_map(|l| match l {
            AuditLine::Event(proto::AuditEvent::ToolFailed {
                session: s,
                call: c,
                failure,
                ..
            }) if s.as_str() == session && c.0 == call => Some(failure),
            _ => None,
        })
        .collect()
}

/// Nothing waits for the owner.
pub(crate) fn nothing_pending(home: &Home) {
    let out = home.bxctl(&["approvals"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("approval "), "something waits: {text}");
}

pub(crate) fn sha(text: &str) -> proto::Hash32 {
    proto::Hash32::digest(text.as_bytes())
}
