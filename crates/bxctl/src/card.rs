//! An approval card as the owner reads it, the same in `bxctl approvals`, `bxctl approve`
//! and the chat: the arguments as quoted data, never as prose, every field from brokerd one
//! inert line.

use inert::line;
use proto::approval::{ApprovalCard, Shows, WriteCard};

/// A card as the owner reads it: the arguments as quoted data, never as prose, and every
/// field from brokerd one inert line.
pub fn card(c: &ApprovalCard) -> String {
    let mut s = format!(
        "approval {}\n  tool:      {} (call {} of session {})\n  grant:     {}\n  \
         taint:     {}\n  arguments: {}\n",
        line(&c.approval),
        line(&c.tool),
        c.call.0,
        c.session,
        line(&c.grant),
        c.session_taint,
        line(&serde_json::to_string(&c.arguments).unwrap_or_default()),
    );
    if let Some(w) = &c.write {
        s.push_str(&write(w));
    }
    if c.untrusted {
        let by: Vec<String> = c.untrusted_by.iter().map(source).collect();
        s.push_str(&format!(
            "  UNTRUSTED: the session has read content that may steer the model, from {}\n",
            by.join(", ")
        ));
    }
    s.push_str(&format!("  expires:   {}\n", c.expires));
    s
}

/// What a write will do, as the owner approves it: the file, the content it replaces (its
/// hash and size, or that the file is new) and the content it leaves, then the diff (or the
/// new content, or the appended text) brokerd computed, each line inert and set apart.
fn write(w: &WriteCard) -> String {
    let old = match (w.old_sha256, w.old_size) {
        (Some(h), Some(n)) => format!("{n} bytes, sha256 {h}"),
        _ => "a new file".to_owned(),
    };
    let cut = if w.truncated {
        format!(" (the first {} bytes)", w.text.len())
    } else {
        String::new()
    };
    format!(
        "  write:     {}
  over:      {old}
  leaves:    {} bytes, sha256 {}
  {}:{cut}
{}",
        line(&w.path),
        w.new_size,
        w.new_sha256,
        match w.shows {
            Shows::Diff => "diff     ",
            Shows::Content => "content  ",
            Shows::Appended => "appended ",
        },
        inert::block(&w.text)
    )
}

/// An untrusted call as bxctl shows it: the tool, the call (and its session, when another
/// session's result made the label untrusted) and what it read, each escaped to one line.
pub(crate) fn source(r: &proto::approval::CallRef) -> String {
    let call = match &r.session {
        Some(session) => format!("call {} of session {}", r.call.0, line(session.as_str())),
        None => format!("call {}", r.call.0),
    };
    match &r.read {
        Some(read) => format!("{} ({call}, read {})", line(&r.tool), line(read)),
        None => format!("{} ({call})", line(&r.tool)),
    }
}
